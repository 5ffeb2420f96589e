//! Producer counters and a small latency reservoir (pure, lock-light).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Latencies kept for percentiles: the most recent ones, in a ring.
const RESERVOIR: usize = 4096;

#[derive(Default)]
pub struct Stats {
    sent: AtomicU64,
    failed: AtomicU64,
    bytes: AtomicU64,
    entries: AtomicU64,
    reconnects: AtomicU64,
    latencies_us: Mutex<Ring>,
}

#[derive(Default)]
struct Ring {
    buf: Vec<u32>,
    next: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StatsSnapshot {
    pub sent: u64,
    pub failed: u64,
    pub bytes: u64,
    pub entries: u64,
    pub reconnects: u64,
    pub pending: usize,
    /// Publish latency percentiles in milliseconds (p50, p95, p99, max) over recent sends.
    pub latency_ms: [f64; 4],
}

impl Stats {
    pub fn on_acked(&self, messages: u64, bytes: u64, latency: Duration) {
        self.sent.fetch_add(messages, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.entries.fetch_add(1, Ordering::Relaxed);
        let us = latency.as_micros().min(u32::MAX as u128) as u32;
        let mut r = self.latencies_us.lock().unwrap_or_else(|p| p.into_inner());
        if r.buf.len() < RESERVOIR {
            r.buf.push(us);
        } else {
            let i = r.next;
            r.buf[i] = us;
        }
        r.next = (r.next + 1) % RESERVOIR;
    }

    pub fn on_failed(&self, messages: u64) {
        self.failed.fetch_add(messages, Ordering::Relaxed);
    }

    pub fn on_reconnect(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self, pending: usize) -> StatsSnapshot {
        let mut v = self
            .latencies_us
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .buf
            .clone();
        v.sort_unstable();
        let pct = |p: f64| -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            let i = ((v.len() as f64 - 1.0) * p).round() as usize;
            v[i] as f64 / 1000.0
        };
        StatsSnapshot {
            sent: self.sent.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            entries: self.entries.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
            pending,
            latency_ms: [pct(0.5), pct(0.95), pct(0.99), pct(1.0)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_over_recent_latencies() {
        let s = Stats::default();
        for ms in 1..=100u64 {
            s.on_acked(10, 100, Duration::from_millis(ms));
        }
        s.on_failed(3);
        let snap = s.snapshot(5);
        assert_eq!(snap.sent, 1000);
        assert_eq!(snap.failed, 3);
        assert_eq!(snap.entries, 100);
        assert_eq!(snap.pending, 5);
        assert!((snap.latency_ms[0] - 50.0).abs() <= 1.0, "{snap:?}");
        assert_eq!(snap.latency_ms[3], 100.0);
    }
}
