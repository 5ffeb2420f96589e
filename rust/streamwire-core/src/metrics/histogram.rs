//! A fixed-bucket latency histogram recorded with relaxed atomics.
//!
//! Why fixed, log-spaced buckets: recording must cost a handful of relaxed `fetch_add`s and
//! never a lock or an allocation (it runs once per broker receipt), and log spacing keeps the
//! relative error of a quantile estimate bounded (bucket bounds grow by √2, so an estimate is
//! within about 20% of the truth, and linear interpolation inside the bucket does better).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Number of finite bucket bounds: `2^(k/2)` microseconds for `k` in `0..BOUNDS` (1 µs to
/// about 134 s). Observations above the last bound land in the overflow (`+Inf`) bucket.
pub const BOUNDS: usize = 55;

/// The upper bound (inclusive) of finite bucket `k`, in microseconds.
pub fn bound_us(k: usize) -> f64 {
    (2f64).powf(k as f64 / 2.0)
}

/// The bucket an observation of `us` microseconds falls in (`BOUNDS` is the overflow).
pub fn bucket_of(us: u64) -> usize {
    if us <= 1 {
        return 0;
    }
    // 2 log2(us), rounded up: the first k with 2^(k/2) >= us.
    let x = us as f64;
    let k = (2.0 * x.log2()).ceil() as usize;
    // Guard the float rounding at exact bounds (e.g. us = 2^n).
    let k = if k > 0 && bound_us(k - 1) >= x {
        k - 1
    } else {
        k
    };
    k.min(BOUNDS)
}

/// Latency histogram: per-bucket counts (not cumulative), a sum and a maximum.
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS + 1],
    sum_us: AtomicU64,
    max_us: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_us: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.snapshot().count())
            .finish()
    }
}

impl Histogram {
    /// Record one observation.
    pub fn record(&self, d: Duration) {
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        self.buckets[bucket_of(us)].fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    /// A copy of the counts (each cell read once; cells may be from slightly different
    /// instants, which only matters while observations are being recorded).
    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            sum_us: self.sum_us.load(Ordering::Relaxed),
            max_us: self.max_us.load(Ordering::Relaxed),
        }
    }
}

/// A point-in-time copy of a [`Histogram`]; also used to fold closed entities' totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Per-bucket counts; index `BOUNDS` is the overflow bucket.
    pub buckets: [u64; BOUNDS + 1],
    /// Sum of every observation, in microseconds.
    pub sum_us: u64,
    /// Largest observation, in microseconds.
    pub max_us: u64,
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        HistogramSnapshot {
            buckets: [0; BOUNDS + 1],
            sum_us: 0,
            max_us: 0,
        }
    }
}

impl HistogramSnapshot {
    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Add another snapshot's observations to this one.
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.sum_us += other.sum_us;
        self.max_us = self.max_us.max(other.max_us);
    }

    /// Observations at or below finite bound `k`, i.e. the cumulative count (`k == BOUNDS`
    /// gives the total, the `+Inf` bucket).
    pub fn cumulative(&self, k: usize) -> u64 {
        self.buckets[..=k.min(BOUNDS)].iter().sum()
    }

    /// Estimated `q`-quantile (0.0..=1.0) in microseconds: the bucket holding the rank, with
    /// linear interpolation inside it, never above the recorded maximum. 0 when empty.
    pub fn quantile_us(&self, q: f64) -> f64 {
        let total = self.count();
        if total == 0 {
            return 0.0;
        }
        let q = q.clamp(0.0, 1.0);
        if q >= 1.0 {
            return self.max_us as f64;
        }
        let rank = (q * total as f64).max(1.0);
        let mut below = 0u64;
        for (k, &n) in self.buckets.iter().enumerate() {
            if n > 0 && (below + n) as f64 >= rank {
                let lo = if k == 0 { 0.0 } else { bound_us(k - 1) };
                let hi = if k == BOUNDS {
                    self.max_us as f64
                } else {
                    bound_us(k)
                };
                let est = lo + (hi - lo) * ((rank - below as f64) / n as f64);
                return est.min(self.max_us as f64);
            }
            below += n;
        }
        self.max_us as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bucket_bounds_are_inclusive_upper_bounds() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 0);
        assert_eq!(bucket_of(2), 2); // 2^(2/2) = 2
        assert_eq!(bucket_of(3), 4); // 2^(3/2) = 2.83 < 3 <= 4
        assert_eq!(bucket_of(1024), 20);
        assert_eq!(bucket_of(1025), 21);
        assert_eq!(bucket_of(u64::MAX), BOUNDS);
    }

    #[test]
    fn quantiles_of_one_to_a_hundred_ms() {
        let h = Histogram::default();
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 100);
        assert_eq!(s.sum_us, 5050 * 1000);
        assert_eq!(s.max_us, 100_000);
        let p50 = s.quantile_us(0.5) / 1000.0;
        assert!((p50 - 50.0).abs() <= 5.0, "p50 {p50}");
        let p99 = s.quantile_us(0.99) / 1000.0;
        assert!((p99 - 99.0).abs() <= 10.0, "p99 {p99}");
        assert_eq!(s.quantile_us(1.0), 100_000.0);
        assert_eq!(HistogramSnapshot::default().quantile_us(0.5), 0.0);
    }

    proptest! {
        #[test]
        fn every_value_lands_in_its_bucket(us in 0u64..(1u64 << 40)) {
            let k = bucket_of(us);
            if k < BOUNDS {
                prop_assert!(us as f64 <= bound_us(k));
            }
            if k > 0 {
                prop_assert!(us as f64 > bound_us(k - 1));
            }
        }

        #[test]
        fn cumulative_counts_are_monotone_and_end_at_count(
            v in proptest::collection::vec(0u64..(1u64 << 38), 0..200)
        ) {
            let h = Histogram::default();
            for us in &v {
                h.record(Duration::from_micros(*us));
            }
            let s = h.snapshot();
            let mut prev = 0;
            for k in 0..=BOUNDS {
                let c = s.cumulative(k);
                prop_assert!(c >= prev);
                prev = c;
            }
            prop_assert_eq!(prev, v.len() as u64);
            let q = s.quantile_us(0.5);
            prop_assert!(q <= s.max_us as f64);
        }
    }
}
