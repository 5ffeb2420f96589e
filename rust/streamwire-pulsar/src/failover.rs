//! Automatic cluster failover: which of several service URLs (a primary and its secondaries)
//! the client should use, decided from periodic reachability probes.
//!
//! The rules are those of the official clients' `AutoClusterFailover` (C++ and Python 3.11+):
//! every `check_interval` each URL is probed; the client starts on the primary; once the URL
//! in use has failed `failover_threshold` probes in a row, it moves to the primary if that one
//! is reachable (leaving a dead secondary), else to the first reachable secondary in the order
//! given; while on a secondary, once the primary has passed `switch_back_threshold` probes in
//! a row it moves back. One good probe resets a failure count and one bad probe resets a
//! recovery count, so a flapping cluster is not switched to and fro.
//!
//! This module is pure (probe results in, decisions out). The probing task that feeds it, and
//! the switch itself (new lookups go to the new URL, every connection is closed so producers
//! and consumers reconnect there), live in [`crate::client`].

use std::time::Duration;

/// When to move between clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailoverPolicy {
    /// How often every URL is probed.
    pub check_interval: Duration,
    /// Failed probes in a row of the URL in use before moving away from it (at least 1).
    pub failover_threshold: u32,
    /// Successful probes in a row of the primary before moving back to it (at least 1).
    pub switch_back_threshold: u32,
}

/// Where the client is and what the probes have shown so far. Index 0 is the primary,
/// `1..` the secondaries in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FailoverState {
    current: usize,
    /// Probes in a row the URL in use has failed.
    failed: u32,
    /// Probes in a row the primary has passed (counted on a secondary only).
    recovered: u32,
}

impl FailoverState {
    /// On the primary, nothing observed yet.
    pub fn new() -> Self {
        FailoverState::default()
    }

    /// The URL in use (0: the primary).
    pub fn current(&self) -> usize {
        self.current
    }

    /// One round of probes (`up[i]`: URL `i` accepted a connection). Returns the URL to move
    /// to, if the client should move; the state already points at it.
    pub fn observe(&mut self, up: &[bool], policy: &FailoverPolicy) -> Option<usize> {
        let is_up = |i: usize| up.get(i).copied().unwrap_or(false);
        if is_up(self.current) {
            self.failed = 0;
        } else {
            self.failed = self.failed.saturating_add(1);
            if self.failed >= policy.failover_threshold.max(1) {
                // (0..) puts the primary first: a dead secondary is left for it at once.
                let target = (0..up.len()).find(|&i| i != self.current && is_up(i));
                if let Some(t) = target {
                    return Some(self.move_to(t));
                }
            }
        }
        if self.current != 0 {
            if is_up(0) {
                self.recovered = self.recovered.saturating_add(1);
                if self.recovered >= policy.switch_back_threshold.max(1) {
                    return Some(self.move_to(0));
                }
            } else {
                self.recovered = 0;
            }
        }
        None
    }

    fn move_to(&mut self, target: usize) -> usize {
        self.current = target;
        self.failed = 0;
        self.recovered = 0;
        target
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn policy(failover: u32, back: u32) -> FailoverPolicy {
        FailoverPolicy {
            check_interval: Duration::from_secs(1),
            failover_threshold: failover,
            switch_back_threshold: back,
        }
    }

    #[test]
    fn moves_to_a_reachable_secondary_after_the_failover_threshold() {
        let p = policy(3, 5);
        let mut st = FailoverState::new();
        assert_eq!(st.observe(&[false, true], &p), None);
        assert_eq!(st.observe(&[false, true], &p), None);
        assert_eq!(st.observe(&[false, true], &p), Some(1));
        assert_eq!(st.current(), 1);
    }

    #[test]
    fn one_good_probe_resets_the_failure_count() {
        let p = policy(3, 5);
        let mut st = FailoverState::new();
        st.observe(&[false, true], &p);
        st.observe(&[false, true], &p);
        st.observe(&[true, true], &p);
        assert_eq!(st.observe(&[false, true], &p), None);
        assert_eq!(st.observe(&[false, true], &p), None);
        assert_eq!(st.observe(&[false, true], &p), Some(1));
    }

    #[test]
    fn stays_when_no_other_url_is_reachable() {
        let p = policy(1, 1);
        let mut st = FailoverState::new();
        for _ in 0..10 {
            assert_eq!(st.observe(&[false, false, false], &p), None);
        }
        assert_eq!(st.current(), 0);
        // The first reachable one, in the order given.
        assert_eq!(st.observe(&[false, false, true], &p), Some(2));
    }

    #[test]
    fn switches_back_once_the_primary_passed_enough_probes_in_a_row() {
        let p = policy(1, 3);
        let mut st = FailoverState::new();
        assert_eq!(st.observe(&[false, true], &p), Some(1));
        assert_eq!(st.observe(&[true, true], &p), None);
        // A bad probe of the primary restarts its count.
        assert_eq!(st.observe(&[false, true], &p), None);
        assert_eq!(st.observe(&[true, true], &p), None);
        assert_eq!(st.observe(&[true, true], &p), None);
        assert_eq!(st.observe(&[true, true], &p), Some(0));
        assert_eq!(st.current(), 0);
    }

    #[test]
    fn a_dead_secondary_is_left_for_the_primary_at_once() {
        let p = policy(1, 100);
        let mut st = FailoverState::new();
        assert_eq!(st.observe(&[false, true, true], &p), Some(1));
        assert_eq!(st.observe(&[true, false, true], &p), Some(0));
    }

    #[test]
    fn a_zero_threshold_counts_as_one() {
        let p = policy(0, 0);
        let mut st = FailoverState::new();
        assert_eq!(st.observe(&[true, true], &p), None);
        assert_eq!(st.observe(&[false, true], &p), Some(1));
        assert_eq!(st.observe(&[true, true], &p), Some(0));
    }

    proptest! {
        /// Whatever the probes say, the client only ever moves to a URL that was up in that
        /// round, never "moves" to where it already is, and never leaves a URL that is up
        /// except to go back to the primary.
        #[test]
        fn moves_only_to_reachable_urls(
            rounds in prop::collection::vec(prop::collection::vec(any::<bool>(), 3), 1..60),
            failover in 0u32..4, back in 0u32..4,
        ) {
            let p = policy(failover, back);
            let mut st = FailoverState::new();
            for up in &rounds {
                let before = st.current();
                if let Some(t) = st.observe(up, &p) {
                    prop_assert!(up[t]);
                    prop_assert_ne!(t, before);
                    prop_assert!(!up[before] || t == 0);
                    prop_assert_eq!(st.current(), t);
                } else {
                    prop_assert_eq!(st.current(), before);
                }
            }
        }
    }
}
