//! How long a producer or consumer waits before its next reconnect attempt.
//!
//! Both follow the Java client's backoff (100 ms doubling, jittered), with one exception
//! measured on the two-broker cluster (`benches/cluster_recovery.py`): when the broker that
//! owns the topic is killed, every lookup keeps naming it (and connecting to it fails) until
//! the cluster's metadata session of that broker expires and another broker takes the topic
//! — 6 s in the suite's cluster, 30 s by Pulsar's default. With plain doubling the attempts
//! land at 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 12.7, 25.5, 51 s…, so the producer comes back at the
//! first of those after the takeover: 12.7 s instead of ~6.5 s in the suite (the official
//! client measured 7.0–7.3 s there, by the luck of its own schedule), and 51 s instead of
//! ~31 s with the default session timeout. A connection failure therefore waits at most
//! [`OWNER_GONE_CAP`]: one cheap lookup a second per producer while the owner is gone, and a
//! recovery within a second of the takeover. Other failures (a broker refusing the producer,
//! throttled lookups) keep the full doubling, so a struggling cluster is not pressed harder.
//!
//! A second exception, measured the same way (`--faults unload`): a broker unloading a topic
//! closes its producers and consumers first and finishes the unload tens of milliseconds
//! later; an attempt in between is answered `ServiceNotReady` ("Topic is temporarily
//! unavailable": the topic is fenced). Waiting the full 100 ms after that answer put the
//! recovery 10–25 ms behind the official client, which simply waits 100 ms before its first
//! attempt. So the first [`QUICK_NOT_READY`] answers of this kind in a row are retried after
//! 10, 20 and 40 ms ([`Retries`]): a topic that is being moved is usually ready by then, and
//! a broker that stays not ready sees three cheap extra requests before the usual doubling.
//!
//! Creating a producer retries the same failures, and a broker's transient errors, until the
//! operation timeout (as the official clients retry a lookup within it), so a producer created
//! during a failover waits for the takeover instead of failing at once; it then raises the
//! last failure.

use std::time::Duration;

use streamwire_core::backoff::Backoff;
use streamwire_core::error::{Error, ErrorKind};

use crate::server_error::code;

/// The longest wait after a failure to reach a broker (before jitter).
pub const OWNER_GONE_CAP: Duration = Duration::from_secs(1);

/// The quick waits after the first `ServiceNotReady` answers in a row (see the module note).
pub const QUICK_NOT_READY: [Duration; 3] = [
    Duration::from_millis(10),
    Duration::from_millis(20),
    Duration::from_millis(40),
];

/// The reconnect schedule of one producer or consumer: [`retry_delay`]'s backoff, after the
/// quick retries of a topic that is not ready yet.
#[derive(Debug)]
pub struct Retries {
    /// The backoff, also for waits that are not after a failed attempt (a dropped connection).
    pub backoff: Backoff,
    quick_used: usize,
}

impl Retries {
    /// A schedule on `backoff`, nothing used yet.
    pub fn new(backoff: Backoff) -> Self {
        Retries {
            backoff,
            quick_used: 0,
        }
    }

    /// The wait before the next attempt after `failure`.
    pub fn delay(&mut self, failure: &Error) -> Duration {
        if failure.server_code() == Some(code::SERVICE_NOT_READY) {
            if let Some(quick) = QUICK_NOT_READY.get(self.quick_used) {
                self.quick_used += 1;
                return *quick;
            }
        }
        retry_delay(&mut self.backoff, failure)
    }

    /// Connected again: the next failure starts the schedule over.
    pub fn reset(&mut self) {
        self.backoff.reset();
        self.quick_used = 0;
    }
}

/// The wait before the next attempt after `failure`.
pub fn retry_delay(backoff: &mut Backoff, failure: &Error) -> Duration {
    if owner_unreachable(failure) {
        backoff.next_delay_at_most(OWNER_GONE_CAP)
    } else {
        backoff.next_delay()
    }
}

/// A failure to reach the broker a lookup named (refused, reset, timed out on connect), or
/// `ServiceNotReady` — what a Pulsar proxy answers a lookup or a connection with while the
/// owner it forwards to refuses connections (measured through the suite's proxy) — as
/// opposed to a live broker's refusal. A connect error marked not retriable (a TLS
/// certificate the client refuses) is a refusal too: dialling again meets the same one.
pub fn owner_unreachable(failure: &Error) -> bool {
    (matches!(failure.kind(), ErrorKind::Connect | ErrorKind::Disconnected)
        && failure.is_retriable())
        || failure.server_code() == Some(code::SERVICE_NOT_READY)
}

/// Whether creating a producer should try again after `failure` (until the operation
/// timeout): the owner is unreachable, or a broker answered with a transient error —
/// `ServiceNotReady`, `TooManyRequests`, `MetadataError`, `PersistenceError`, `UnknownError`
/// (what a broker whose metadata session was lost answers under load: seen on the suite's
/// cluster as a ZooKeeper `ConnectionLoss`) — as the Java client's `isRetriableError` has it.
/// A busy producer name fails at once: another producer holds it, and will go on holding it.
pub fn retry_creation(failure: &Error) -> bool {
    owner_unreachable(failure)
        || (failure.is_retriable() && failure.kind() != ErrorKind::ProducerBusy)
}

/// Whether a broker (or a proxy) answered with a transient error: a retriable server code
/// (`ServiceNotReady`, `TooManyRequests`, `MetadataError`, `PersistenceError`, `UnknownError`
/// — a proxy whose broker died under a forwarded request answers `UnknownError: Disconnected
/// from server`). Lookups ask again within the operation timeout on these, as the Java client's
/// lookups do; a refused connection is not one (the caller learns at once that the service URL
/// is wrong or down).
pub fn transient_answer(failure: &Error) -> bool {
    failure.server_code().is_some()
        && failure.is_retriable()
        && !matches!(
            failure.kind(),
            ErrorKind::ProducerBusy | ErrorKind::ConsumerBusy
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_core::backoff::{BackoffConfig, FixedJitter};

    fn backoff() -> Backoff {
        Backoff::with_jitter(BackoffConfig::default(), FixedJitter(0.0))
    }

    #[test]
    fn creation_retries_transient_broker_errors_but_not_refusals() {
        use crate::server_error::server_error;
        for c in [
            code::UNKNOWN_ERROR,
            code::METADATA_ERROR,
            code::PERSISTENCE_ERROR,
            code::SERVICE_NOT_READY,
            code::TOO_MANY_REQUESTS,
        ] {
            assert!(retry_creation(&server_error(c, "x")), "{c}");
        }
        for c in [
            code::PRODUCER_BUSY,
            code::AUTHORIZATION_ERROR,
            code::AUTHENTICATION_ERROR,
            code::TOPIC_NOT_FOUND,
            code::INCOMPATIBLE_SCHEMA,
            code::TOPIC_TERMINATED_ERROR,
            code::PRODUCER_FENCED,
            code::NOT_ALLOWED_ERROR,
        ] {
            assert!(!retry_creation(&server_error(c, "x")), "{c}");
        }
        assert!(retry_creation(&Error::new(ErrorKind::Connect, "refused")));
        let cert = Error::new(ErrorKind::Connect, "certificate").with_retriable(false);
        assert!(!retry_creation(&cert));
    }

    #[test]
    fn lookups_retry_transient_answers_but_not_refused_connections() {
        use crate::server_error::server_error;
        assert!(transient_answer(&server_error(
            code::UNKNOWN_ERROR,
            "Disconnected from server at 127.0.0.1/127.0.0.1:57203"
        )));
        assert!(transient_answer(&server_error(code::SERVICE_NOT_READY, "")));
        assert!(!transient_answer(&server_error(code::TOPIC_NOT_FOUND, "")));
        assert!(!transient_answer(&server_error(code::CONSUMER_BUSY, "")));
        assert!(!transient_answer(&Error::new(
            ErrorKind::Connect,
            "refused"
        )));
        assert!(!transient_answer(&Error::timeout("lookup")));
    }

    #[test]
    fn a_refused_certificate_is_not_an_unreachable_owner() {
        assert!(owner_unreachable(&Error::new(
            ErrorKind::Connect,
            "refused"
        )));
        let cert = Error::new(ErrorKind::Connect, "certificate not trusted").with_retriable(false);
        assert!(!owner_unreachable(&cert));
    }

    #[test]
    fn an_unreachable_owner_is_retried_at_least_every_second() {
        let mut b = backoff();
        let refused = Error::new(ErrorKind::Connect, "connection refused");
        let waits: Vec<_> = (0..12).map(|_| retry_delay(&mut b, &refused)).collect();
        assert!(waits.iter().all(|w| *w <= OWNER_GONE_CAP));
        assert_eq!(waits[0], Duration::from_millis(100));
        // Past the cap, every attempt is a second apart: the takeover at 6 s is seen by ~7 s.
        let at: Vec<f64> = waits
            .iter()
            .scan(0.0, |t, w| {
                *t += w.as_secs_f64();
                Some(*t)
            })
            .collect();
        assert!(at.iter().any(|t| (6.0..7.0).contains(t)), "{at:?}");
    }

    #[test]
    fn a_proxy_without_its_owner_counts_as_unreachable() {
        let mut b = backoff();
        let not_ready = crate::server_error::server_error(code::SERVICE_NOT_READY, "refused");
        let waits: Vec<_> = (0..8).map(|_| retry_delay(&mut b, &not_ready)).collect();
        assert_eq!(waits[7], OWNER_GONE_CAP);
    }

    #[test]
    fn a_topic_not_ready_is_tried_again_quickly_three_times_then_as_before() {
        let not_ready = crate::server_error::server_error(
            code::SERVICE_NOT_READY,
            "TopicFencedException: Topic is temporarily unavailable",
        );
        let mut r = Retries::new(backoff());
        let waits: Vec<_> = (0..8).map(|_| r.delay(&not_ready)).collect();
        assert_eq!(&waits[..3], &QUICK_NOT_READY);
        assert_eq!(waits[3], Duration::from_millis(100));
        assert_eq!(waits[7], OWNER_GONE_CAP);
        // Another failure kind never takes the quick path.
        let mut r = Retries::new(backoff());
        let busy = crate::server_error::server_error(code::TOO_MANY_REQUESTS, "x");
        assert_eq!(r.delay(&busy), Duration::from_millis(100));
        // After a reconnect the quick retries are there again.
        let mut r = Retries::new(backoff());
        for _ in 0..5 {
            r.delay(&not_ready);
        }
        r.reset();
        assert_eq!(r.delay(&not_ready), QUICK_NOT_READY[0]);
        assert_eq!(r.delay(&busy), Duration::from_millis(100));
    }

    #[test]
    fn a_broker_answer_keeps_the_full_doubling() {
        let mut b = backoff();
        let busy = crate::server_error::server_error(code::TOO_MANY_REQUESTS, "too many lookups");
        let waits: Vec<_> = (0..6).map(|_| retry_delay(&mut b, &busy)).collect();
        assert_eq!(waits[5], Duration::from_millis(3200));
    }
}
