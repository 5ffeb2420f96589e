//! The client-side life of a transaction, as a pure state machine (no clock reads, no I/O).
//!
//! ```text
//! Open ──commit──▶ Committing ──ok──▶ Committed
//!   │                   └──error──▶ Error / TimedOut
//!   └───abort───▶ Aborting ──ok──▶ Aborted
//!                      └──error──▶ Error / TimedOut
//! Open ──(deadline passes)──▶ TimedOut
//! ```
//!
//! Sends and acks are allowed only while `Open` and before the deadline. A second `abort` of
//! an aborted (or aborting, or timed-out) transaction is a no-op, so a context manager can
//! abort after the body already did; every other call on a finished transaction fails with
//! `InvalidTransactionState`.

use std::time::Instant;

use streamwire_core::error::{Error, ErrorKind};

/// Where a transaction stands, as the Java client's `Transaction.State`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnState {
    Open,
    Committing,
    Aborting,
    Committed,
    Aborted,
    /// Ending it failed for a reason other than its timeout.
    Error,
    /// Its timeout passed (the coordinator aborts it on its own).
    TimedOut,
}

impl TxnState {
    /// The name Python sees (`Transaction.state`).
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Open => "OPEN",
            TxnState::Committing => "COMMITTING",
            TxnState::Aborting => "ABORTING",
            TxnState::Committed => "COMMITTED",
            TxnState::Aborted => "ABORTED",
            TxnState::Error => "ERROR",
            TxnState::TimedOut => "TIMED_OUT",
        }
    }
}

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndAction {
    Commit,
    Abort,
}

/// What `begin_end` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndStep {
    /// Ask the coordinator.
    Send,
    /// Already in the asked-for end state (an abort after an abort): nothing to do.
    AlreadyDone,
}

/// The state plus the deadline it is checked against.
#[derive(Debug, Clone)]
pub struct StateMachine {
    state: TxnState,
    deadline: Instant,
}

fn not_open(state: TxnState, what: &str) -> Error {
    let kind = if state == TxnState::TimedOut {
        ErrorKind::TransactionTimeout
    } else {
        ErrorKind::InvalidTransactionState
    };
    Error::new(
        kind,
        format!("cannot {what}: the transaction is {}", state.name()),
    )
}

impl StateMachine {
    pub fn new(deadline: Instant) -> Self {
        StateMachine {
            state: TxnState::Open,
            deadline,
        }
    }

    /// The state as of `now` (an open transaction past its deadline has timed out).
    pub fn state(&mut self, now: Instant) -> TxnState {
        if self.state == TxnState::Open && now >= self.deadline {
            self.state = TxnState::TimedOut;
        }
        self.state
    }

    /// Check that a send or an ack may join the transaction now.
    pub fn check_open(&mut self, now: Instant, what: &str) -> Result<(), Error> {
        match self.state(now) {
            TxnState::Open => Ok(()),
            s => Err(not_open(s, what)),
        }
    }

    /// Start committing or aborting.
    pub fn begin_end(&mut self, action: EndAction, now: Instant) -> Result<EndStep, Error> {
        let s = self.state(now);
        match (action, s) {
            (EndAction::Commit, TxnState::Open) => {
                self.state = TxnState::Committing;
                Ok(EndStep::Send)
            }
            (EndAction::Abort, TxnState::Open) => {
                self.state = TxnState::Aborting;
                Ok(EndStep::Send)
            }
            // The coordinator aborts a timed-out transaction itself; asking it again is
            // harmless and makes sure, so an abort is still sent.
            (EndAction::Abort, TxnState::TimedOut) => {
                self.state = TxnState::Aborting;
                Ok(EndStep::Send)
            }
            (EndAction::Abort, TxnState::Aborted) => Ok(EndStep::AlreadyDone),
            (EndAction::Commit, _) => Err(not_open(s, "commit")),
            (EndAction::Abort, _) => Err(not_open(s, "abort")),
        }
    }

    /// Record the coordinator's answer to an end request. `timed_out` says whether the
    /// deadline had passed when the answer came (an unknown-transaction answer then means
    /// the coordinator already aborted it).
    pub fn finish(&mut self, action: EndAction, ok: bool, timed_out: bool) -> TxnState {
        self.state = match (action, ok) {
            (EndAction::Commit, true) => TxnState::Committed,
            (EndAction::Abort, true) => TxnState::Aborted,
            (_, false) if timed_out => TxnState::TimedOut,
            (EndAction::Abort, false) => TxnState::Error,
            (EndAction::Commit, false) => TxnState::Error,
        };
        self.state
    }

    /// An operation of the transaction failed, so it can no longer commit: it is aborted
    /// instead (the caller sends the abort).
    pub fn fail_to_aborting(&mut self) {
        if matches!(self.state, TxnState::Open | TxnState::Committing) {
            self.state = TxnState::Aborting;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn sm() -> (StateMachine, Instant) {
        let t0 = Instant::now();
        (StateMachine::new(t0 + Duration::from_secs(10)), t0)
    }

    #[test]
    fn commit_path() {
        let (mut m, t0) = sm();
        assert!(m.check_open(t0, "send").is_ok());
        assert_eq!(m.begin_end(EndAction::Commit, t0).unwrap(), EndStep::Send);
        assert_eq!(m.state(t0), TxnState::Committing);
        let e = m.check_open(t0, "send").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidTransactionState);
        assert!(e.message().contains("COMMITTING"), "{e}");
        assert_eq!(
            m.finish(EndAction::Commit, true, false),
            TxnState::Committed
        );
        let e = m.begin_end(EndAction::Commit, t0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidTransactionState);
        let e = m.begin_end(EndAction::Abort, t0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidTransactionState);
    }

    #[test]
    fn abort_is_idempotent_and_commit_after_abort_fails() {
        let (mut m, t0) = sm();
        assert_eq!(m.begin_end(EndAction::Abort, t0).unwrap(), EndStep::Send);
        assert_eq!(m.finish(EndAction::Abort, true, false), TxnState::Aborted);
        assert_eq!(
            m.begin_end(EndAction::Abort, t0).unwrap(),
            EndStep::AlreadyDone
        );
        let e = m.begin_end(EndAction::Commit, t0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidTransactionState);
        assert!(e.message().contains("ABORTED"), "{e}");
    }

    #[test]
    fn deadline_times_out_an_open_transaction() {
        let (mut m, t0) = sm();
        let late = t0 + Duration::from_secs(11);
        assert_eq!(m.state(late), TxnState::TimedOut);
        let e = m.check_open(late, "send").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TransactionTimeout);
        let e = m.begin_end(EndAction::Commit, late).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TransactionTimeout);
        // An abort is still sent (harmless), and ends it.
        assert_eq!(m.begin_end(EndAction::Abort, late).unwrap(), EndStep::Send);
        assert_eq!(m.finish(EndAction::Abort, true, true), TxnState::Aborted);
    }

    #[test]
    fn a_failed_end_past_the_deadline_is_a_timeout() {
        let (mut m, t0) = sm();
        m.begin_end(EndAction::Commit, t0).unwrap();
        assert_eq!(m.finish(EndAction::Commit, false, true), TxnState::TimedOut);
        let (mut m, t0) = sm();
        m.begin_end(EndAction::Commit, t0).unwrap();
        assert_eq!(m.finish(EndAction::Commit, false, false), TxnState::Error);
    }

    #[test]
    fn failed_operation_turns_to_aborting() {
        let (mut m, t0) = sm();
        m.fail_to_aborting();
        assert_eq!(m.state(t0), TxnState::Aborting);
        assert!(m.check_open(t0, "send").is_err());
    }

    #[derive(Debug, Clone)]
    enum Op {
        Check,
        Commit,
        Abort,
        Finish(bool, bool),
        Advance(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            Just(Op::Check),
            Just(Op::Commit),
            Just(Op::Abort),
            (any::<bool>(), any::<bool>()).prop_map(|(a, b)| Op::Finish(a, b)),
            (0u64..8).prop_map(Op::Advance),
        ]
    }

    proptest! {
        // Whatever the sequence: operations are accepted only while Open, a final state
        // (Committed/Aborted) is never left except by a no-op abort, and Committed is
        // reached only through Committing.
        #[test]
        fn invariants(ops in proptest::collection::vec(op(), 0..40)) {
            let t0 = Instant::now();
            let mut m = StateMachine::new(t0 + Duration::from_secs(10));
            let mut now = t0;
            let mut last = m.state(now);
            let mut last_action = None;
            for o in ops {
                match o {
                    Op::Check => {
                        let open = m.state(now) == TxnState::Open;
                        prop_assert_eq!(m.check_open(now, "x").is_ok(), open);
                    }
                    Op::Commit => {
                        let before = m.state(now);
                        let r = m.begin_end(EndAction::Commit, now);
                        prop_assert_eq!(r.is_ok(), before == TxnState::Open);
                        if r.is_ok() { last_action = Some(EndAction::Commit); }
                    }
                    Op::Abort => {
                        if let Ok(EndStep::Send) = m.begin_end(EndAction::Abort, now) {
                            last_action = Some(EndAction::Abort);
                        }
                    }
                    Op::Finish(ok, late) => {
                        let s = m.state(now);
                        if let (Some(a), TxnState::Committing | TxnState::Aborting) = (last_action, s) {
                            m.finish(a, ok, late);
                        }
                    }
                    Op::Advance(s) => now += Duration::from_secs(s),
                }
                let s = m.state(now);
                if matches!(last, TxnState::Committed) {
                    prop_assert_eq!(s, TxnState::Committed);
                }
                if matches!(last, TxnState::Aborted) {
                    prop_assert_eq!(s, TxnState::Aborted);
                }
                if s == TxnState::Committed && last != TxnState::Committed {
                    prop_assert_eq!(last, TxnState::Committing);
                }
                last = s;
            }
        }
    }
}
