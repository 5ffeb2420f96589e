//! Jittered exponential backoff for reconnects and retried requests.
//!
//! Why this shape: the official Java client waits `initial` (100 ms) after the first failure,
//! doubles the wait after every further failure up to `max` (60 s for reconnects), and takes a
//! random 0–10 % off each wait so that many clients cut off by the same broker restart don't
//! all come back in the same millisecond. We do the same, with two changes that make it
//! testable and explicit:
//!
//! * the randomness is injectable ([`Jitter`]), so tests can pin the sequence exactly;
//! * the optional "mandatory stop" is a deadline measured from the first failure and passed
//!   in as `now`: [`Backoff::next_attempt`] never sleeps past it, and once it has passed it
//!   answers [`Attempt::GiveUp`] instead of another delay. Nothing here reads the clock.

use std::fmt;
use std::time::{Duration, Instant};

/// Source of jitter: each call returns a fraction in `[0.0, 1.0)`.
///
/// Why a trait: production uses a thread-local RNG, tests use a fixed value, and neither
/// should force a type parameter on every holder of a `Backoff`.
pub trait Jitter: Send {
    /// A fraction in `[0.0, 1.0)`; values outside are clamped.
    fn fraction(&mut self) -> f64;
}

/// Jitter from the `rand` thread-local generator (the default).
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomJitter;

impl Jitter for RandomJitter {
    fn fraction(&mut self) -> f64 {
        rand::random::<f64>()
    }
}

/// Always the same fraction: for deterministic tests, or `FixedJitter(0.0)` for no jitter.
#[derive(Debug, Clone, Copy)]
pub struct FixedJitter(pub f64);

impl Jitter for FixedJitter {
    fn fraction(&mut self) -> f64 {
        self.0
    }
}

/// Settings of a [`Backoff`]. `Default` is the Java client's reconnect policy.
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffConfig {
    /// First delay, and the floor of every jittered delay.
    pub initial: Duration,
    /// Ceiling of the un-jittered delay.
    pub max: Duration,
    /// Growth factor per failure (2 = doubling). Values below 1 are treated as 1.
    pub multiplier: u32,
    /// Largest fraction taken off a delay at random (0.1 = up to 10 % shorter).
    pub jitter_ratio: f64,
    /// Give up once this much time has passed since the first failure (`None` = never).
    pub mandatory_stop: Option<Duration>,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(60),
            multiplier: 2,
            jitter_ratio: 0.1,
            mandatory_stop: None,
        }
    }
}

/// What to do after a failure, from [`Backoff::next_attempt`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Sleep this long, then try again.
    Retry(Duration),
    /// The mandatory stop has passed: report the failure instead of retrying.
    GiveUp,
}

/// Exponential backoff state for one retried operation (one connection, one producer...).
pub struct Backoff {
    config: BackoffConfig,
    next: Duration,
    attempts: u32,
    first_failure: Option<Instant>,
    jitter: Box<dyn Jitter>,
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backoff")
            .field("config", &self.config)
            .field("next", &self.next)
            .field("attempts", &self.attempts)
            .field("first_failure", &self.first_failure)
            .finish_non_exhaustive()
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(BackoffConfig::default())
    }
}

impl Backoff {
    /// A backoff with random jitter.
    pub fn new(config: BackoffConfig) -> Self {
        Self::with_jitter(config, RandomJitter)
    }

    /// A backoff with the given jitter source (tests pass [`FixedJitter`]).
    pub fn with_jitter(mut config: BackoffConfig, jitter: impl Jitter + 'static) -> Self {
        // Normalise once so the arithmetic below needs no special cases.
        if config.max < config.initial {
            config.max = config.initial;
        }
        config.multiplier = config.multiplier.max(1);
        config.jitter_ratio = if config.jitter_ratio.is_finite() {
            config.jitter_ratio.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let next = config.initial;
        Self {
            config,
            next,
            attempts: 0,
            first_failure: None,
            jitter: Box::new(jitter),
        }
    }

    /// The settings in force.
    pub fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// How many delays were handed out since the last [`reset`](Self::reset).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The next delay, ignoring any mandatory stop: `initial`, then growing by `multiplier`
    /// up to `max`, each less a random share of up to `jitter_ratio`, never below `initial`.
    pub fn next_delay(&mut self) -> Duration {
        let current = self.advance();
        self.jittered(current)
    }

    /// The next delay, at most `cap` before jitter: for failures known to clear up on their
    /// own soon (a topic's owner that died and is being replaced), where waiting out the
    /// full doubled delay would only add to the outage. The backoff still advances, so a
    /// different failure afterwards waits as long as it would have.
    pub fn next_delay_at_most(&mut self, cap: Duration) -> Duration {
        let current = self.advance().min(cap.max(self.config.initial));
        self.jittered(current)
    }

    /// The next step after a failure observed at `now`, honouring the mandatory stop.
    ///
    /// The first call after a reset starts the mandatory-stop clock. A delay that would end
    /// past the stop is cut to end exactly at it, so one last attempt happens at the deadline;
    /// a call at or after the deadline answers [`Attempt::GiveUp`].
    pub fn next_attempt(&mut self, now: Instant) -> Attempt {
        let Some(stop) = self.config.mandatory_stop else {
            return Attempt::Retry(self.next_delay());
        };
        let first = *self.first_failure.get_or_insert(now);
        let elapsed = now.saturating_duration_since(first);
        if elapsed >= stop && self.attempts > 0 {
            return Attempt::GiveUp;
        }
        let remaining = stop.saturating_sub(elapsed);
        let delay = self.next_delay();
        Attempt::Retry(delay.min(remaining))
    }

    /// Start over after a success: the next delay is `initial` again.
    pub fn reset(&mut self) {
        self.next = self.config.initial;
        self.attempts = 0;
        self.first_failure = None;
    }

    /// Halve the next delay (not below `initial`), as the Java client does after a partial
    /// success, so a flapping peer is retried sooner than a dead one.
    pub fn reduce_to_half(&mut self) {
        self.next = (self.next / 2).max(self.config.initial);
    }

    /// Returns the un-jittered current delay and moves `next` one step up.
    fn advance(&mut self) -> Duration {
        let current = self.next;
        self.attempts = self.attempts.saturating_add(1);
        if current < self.config.max {
            self.next = current
                .checked_mul(self.config.multiplier)
                .map_or(self.config.max, |d| d.min(self.config.max));
        }
        current
    }

    fn jittered(&mut self, current: Duration) -> Duration {
        let fraction = self.jitter.fraction();
        let fraction = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let cut = current.mul_f64(fraction * self.config.jitter_ratio);
        current.saturating_sub(cut).max(self.config.initial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn no_jitter(initial: u64, max: u64) -> Backoff {
        Backoff::with_jitter(
            BackoffConfig {
                initial: ms(initial),
                max: ms(max),
                ..BackoffConfig::default()
            },
            FixedJitter(0.0),
        )
    }

    #[test]
    fn default_is_java_reconnect_policy() {
        let c = BackoffConfig::default();
        assert_eq!(c.initial, ms(100));
        assert_eq!(c.max, Duration::from_secs(60));
        assert_eq!(c.multiplier, 2);
    }

    #[test]
    fn capped_delay_stops_growing_at_the_cap_but_the_backoff_advances() {
        let mut b = no_jitter(100, 60_000);
        let got: Vec<_> = (0..6).map(|_| b.next_delay_at_most(ms(500))).collect();
        assert_eq!(got, [ms(100), ms(200), ms(400), ms(500), ms(500), ms(500)]);
        // An uncapped failure afterwards waits the doubled delay it had reached.
        assert_eq!(b.next_delay(), ms(6400));
        // A cap below `initial` still waits `initial`.
        assert_eq!(no_jitter(100, 1000).next_delay_at_most(ms(10)), ms(100));
    }

    #[test]
    fn doubles_up_to_max_without_jitter() {
        let mut b = no_jitter(100, 1000);
        let got: Vec<_> = (0..7).map(|_| b.next_delay()).collect();
        assert_eq!(
            got,
            vec![
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1000),
                ms(1000),
                ms(1000)
            ]
        );
        assert_eq!(b.attempts(), 7);
    }

    #[test]
    fn reset_starts_over() {
        let mut b = no_jitter(100, 1000);
        b.next_delay();
        b.next_delay();
        b.reset();
        assert_eq!(b.next_delay(), ms(100));
        assert_eq!(b.attempts(), 1);
    }

    #[test]
    fn jitter_takes_off_at_most_ten_percent_and_never_below_initial() {
        let cfg = BackoffConfig {
            initial: ms(100),
            max: ms(10_000),
            ..BackoffConfig::default()
        };
        let mut b = Backoff::with_jitter(cfg.clone(), FixedJitter(0.5));
        assert_eq!(b.next_delay(), ms(100)); // 95 would be below initial
        assert_eq!(b.next_delay(), ms(190)); // 200 - 5 %
        let mut b = Backoff::with_jitter(cfg, FixedJitter(0.999_999));
        b.next_delay();
        let d = b.next_delay();
        assert!(d >= ms(180) && d <= ms(200), "{d:?}");
    }

    #[test]
    fn reduce_to_half_not_below_initial() {
        let mut b = no_jitter(100, 10_000);
        for _ in 0..4 {
            b.next_delay();
        }
        b.reduce_to_half();
        assert_eq!(b.next_delay(), ms(800));
        let mut b = no_jitter(100, 10_000);
        b.reduce_to_half();
        assert_eq!(b.next_delay(), ms(100));
    }

    #[test]
    fn mandatory_stop_caps_last_delay_then_gives_up() {
        let mut b = Backoff::with_jitter(
            BackoffConfig {
                initial: ms(100),
                max: ms(10_000),
                mandatory_stop: Some(ms(500)),
                ..BackoffConfig::default()
            },
            FixedJitter(0.0),
        );
        let t0 = Instant::now();
        assert_eq!(b.next_attempt(t0), Attempt::Retry(ms(100)));
        assert_eq!(b.next_attempt(t0 + ms(100)), Attempt::Retry(ms(200)));
        // 300 ms elapsed, 400 ms due, only 200 ms left before the stop.
        assert_eq!(b.next_attempt(t0 + ms(300)), Attempt::Retry(ms(200)));
        assert_eq!(b.next_attempt(t0 + ms(500)), Attempt::GiveUp);
        b.reset();
        let t1 = t0 + ms(10_000);
        assert_eq!(b.next_attempt(t1), Attempt::Retry(ms(100)));
    }

    #[test]
    fn no_mandatory_stop_never_gives_up() {
        let mut b = no_jitter(100, 200);
        let t0 = Instant::now();
        for i in 0..100 {
            assert!(matches!(
                b.next_attempt(t0 + Duration::from_secs(i * 3600)),
                Attempt::Retry(_)
            ));
        }
    }

    #[test]
    fn odd_configs_are_normalised() {
        let mut b = Backoff::with_jitter(
            BackoffConfig {
                initial: ms(500),
                max: ms(10),
                multiplier: 0,
                jitter_ratio: f64::NAN,
                mandatory_stop: None,
            },
            FixedJitter(f64::INFINITY),
        );
        assert_eq!(b.next_delay(), ms(500));
        assert_eq!(b.next_delay(), ms(500));
        let mut huge = Backoff::with_jitter(
            BackoffConfig {
                initial: Duration::from_secs(u64::MAX / 2),
                max: Duration::MAX,
                ..BackoffConfig::default()
            },
            FixedJitter(0.0),
        );
        for _ in 0..5 {
            huge.next_delay(); // must not overflow/panic
        }
    }

    proptest! {
        #[test]
        fn delays_stay_in_bounds(
            initial in 1u64..5_000,
            extra in 0u64..100_000,
            mult in 1u32..5,
            fractions in proptest::collection::vec(0.0f64..1.0, 1..40),
        ) {
            let max = initial + extra;
            let mut prev_raw = Duration::ZERO;
            let mut raw = no_jitter(initial, max);
            raw.config.multiplier = mult;
            for f in fractions {
                let mut b = Backoff::with_jitter(
                    BackoffConfig { initial: ms(initial), max: ms(max), multiplier: mult,
                        ..BackoffConfig::default() },
                    FixedJitter(f),
                );
                b.next = raw.next;
                let jittered = b.next_delay();
                let r = raw.next_delay();
                prop_assert!(r >= prev_raw, "un-jittered delays never shrink");
                prop_assert!(r <= ms(max));
                prop_assert!(jittered <= r && jittered >= ms(initial));
                prop_assert!(jittered >= r.mul_f64(0.9).min(r).max(ms(initial)) - Duration::from_nanos(1));
                prev_raw = r;
            }
        }
    }
}
