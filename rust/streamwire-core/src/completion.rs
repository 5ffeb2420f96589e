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
    /// The first failure, and the sender fired when the last message settles.
    state: Mutex<GroupState>,
}

type GroupState = (Option<Error>, Option<oneshot::Sender<Result<()>>>);

impl Group {
    pub fn new(count: usize) -> (Arc<Group>, oneshot::Receiver<Result<()>>) {
        let (tx, rx) = oneshot::channel();
        if count == 0 {
            let _ = tx.send(Ok(()));
            return (
                Arc::new(Group {
                    remaining: AtomicUsize::new(0),
                    state: Mutex::new((None, None)),
                }),
                rx,
            );
        }
        (
            Arc::new(Group {
                remaining: AtomicUsize::new(count),
                state: Mutex::new((None, Some(tx))),
            }),
            rx,
        )
    }

    /// `n` of the group's messages settled with `result`.
    pub fn finish(&self, result: Result<()>, n: usize) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = result {
            if state.0.is_none() {
                state.0 = Some(e);
            }
        }
        if self.remaining.fetch_sub(n, Ordering::AcqRel) == n {
            if let Some(tx) = state.1.take() {
                let _ = tx.send(match state.0.take() {
                    Some(e) => Err(e),
                    None => Ok(()),
                });
            }
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
