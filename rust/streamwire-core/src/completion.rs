//! Completions of writes: how a protocol's producer task tells callers that the broker
//! acknowledged (or refused) what they sent, whatever the protocol.
//!
//! A completion fires once, on an engine thread, and never blocks it. A `send_many`-style
//! call shares one [`Group`] among all its messages, so a million-message batch costs one
//! allocation rather than one future per message.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// Completes when the broker acknowledged a message (or a group of messages).
pub enum Done {
    One(oneshot::Sender<Result<()>>),
    Group(Arc<Group>),
    /// A completion the caller owns (the binding's future: no task per message).
    Notify(Arc<dyn Completion>),
}

impl std::fmt::Debug for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Done::One(_) => "Done::One",
            Done::Group(_) => "Done::Group",
            Done::Notify(_) => "Done::Notify",
        })
    }
}

/// Receives a message's outcome, once, on an engine thread (must not block).
pub trait Completion: Send + Sync {
    fn complete(&self, result: Result<()>);
}

/// One completion shared by many messages (a `send_many` call): it fires once all are
/// acknowledged, or with the first failure.
#[derive(Debug)]
pub struct Group {
    /// Messages not settled yet.
    remaining: AtomicUsize,
    /// The first failure, and who is told when the last message settles.
    state: Mutex<(Option<Error>, Option<Settle>)>,
}

/// Who a group tells.
enum Settle {
    Send(oneshot::Sender<Result<()>>),
    /// Told on the engine thread that settles the last message: nothing runs between that
    /// and the caller's future being done (a flush that returns sees every group settled).
    Notify(Arc<dyn Completion>),
}

impl std::fmt::Debug for Settle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Settle::Send(_) => "Settle::Send",
            Settle::Notify(_) => "Settle::Notify",
        })
    }
}

impl Settle {
    fn fire(self, result: Result<()>) {
        match self {
            Settle::Send(tx) => {
                let _ = tx.send(result);
            }
            Settle::Notify(c) => c.complete(result),
        }
    }
}

impl Group {
    pub fn new(count: usize) -> (Arc<Group>, oneshot::Receiver<Result<()>>) {
        let (tx, rx) = oneshot::channel();
        (Group::settling(count, Settle::Send(tx)), rx)
    }

    /// A group that completes `target` directly (no receiver to await, no task).
    pub fn notifying(count: usize, target: Arc<dyn Completion>) -> Arc<Group> {
        Group::settling(count, Settle::Notify(target))
    }

    fn settling(count: usize, settle: Settle) -> Arc<Group> {
        let settle = if count == 0 {
            settle.fire(Ok(()));
            None
        } else {
            Some(settle)
        };
        Arc::new(Group {
            remaining: AtomicUsize::new(count),
            state: Mutex::new((None, settle)),
        })
    }

    /// `n` of the group's messages settled with `result`.
    pub fn finish(&self, result: Result<()>, n: usize) {
        let fire = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = result {
                if state.0.is_none() {
                    state.0 = Some(e);
                }
            }
            if self.remaining.fetch_sub(n, Ordering::AcqRel) == n {
                state.1.take().map(|s| {
                    let outcome = match state.0.take() {
                        Some(e) => Err(e),
                        None => Ok(()),
                    };
                    (s, outcome)
                })
            } else {
                None
            }
        };
        // Outside the lock: a notified completion may take locks of its own.
        if let Some((s, outcome)) = fire {
            s.fire(outcome);
        }
    }
}

/// A group dropped before all its messages settled (the writer went away with them): a
/// receiver sees its sender gone; a notified completion is told here, so no future waits
/// forever.
impl Drop for Group {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(Settle::Notify(c)) = state.1.take() {
            c.complete(Err(state
                .0
                .take()
                .unwrap_or_else(|| Error::closed("the writer"))));
        }
    }
}

impl Done {
    /// Another handle on the same completion, for part of its messages: only a group can be
    /// shared (a per-message completion settles one message).
    pub fn share(&self) -> Option<Done> {
        match self {
            Done::Group(g) => Some(Done::Group(g.clone())),
            _ => None,
        }
    }

    /// Settle the `n` messages this completion stands for (always 1 but for groups).
    pub fn complete(self, result: Result<()>, n: usize) {
        match self {
            Done::One(tx) => {
                let _ = tx.send(result);
            }
            Done::Group(g) => g.finish(result, n),
            Done::Notify(c) => c.complete(result),
        }
    }
}

/// The completions of one call: one per message, or one for all of them.
#[derive(Debug)]
pub enum Dones {
    Each(Vec<Done>),
    Group(Arc<Group>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Seen(Mutex<Vec<Result<()>>>);

    impl Completion for Seen {
        fn complete(&self, result: Result<()>) {
            self.0.lock().unwrap().push(result);
        }
    }

    #[test]
    fn a_notifying_group_fires_once_on_the_last_settlement_with_the_first_error() {
        let seen = Arc::new(Seen::default());
        let g = Group::notifying(3, seen.clone());
        g.finish(Ok(()), 1);
        g.finish(Err(Error::invalid("first")), 1);
        assert!(seen.0.lock().unwrap().is_empty());
        g.finish(Err(Error::invalid("second")), 1);
        drop(g);
        let got = seen.0.lock().unwrap();
        assert_eq!(got.len(), 1);
        assert!(got[0].as_ref().unwrap_err().to_string().contains("first"));
    }

    #[test]
    fn an_empty_group_fires_at_once_and_a_dropped_one_fails_its_target() {
        let seen = Arc::new(Seen::default());
        let _g = Group::notifying(0, seen.clone());
        assert!(matches!(seen.0.lock().unwrap()[..], [Ok(())]));
        let seen = Arc::new(Seen::default());
        let g = Group::notifying(2, seen.clone());
        g.finish(Ok(()), 1);
        drop(g);
        let got = seen.0.lock().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].as_ref().unwrap_err().kind(),
            crate::error::ErrorKind::Closed
        );
    }

    #[test]
    fn a_receiver_group_sends_the_outcome() {
        let (g, mut rx) = Group::new(2);
        g.finish(Ok(()), 2);
        assert!(matches!(rx.try_recv(), Ok(Ok(()))));
    }
}
