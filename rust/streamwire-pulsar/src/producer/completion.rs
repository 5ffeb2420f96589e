//! How a send reports back: one waiter, a group of waiters (bulk sends), or a callback.
//!
//! Completions are plain Rust (no Python): the binding decides what a callback does, e.g.
//! hand the result to a dispatcher thread so no Python code ever runs on an I/O thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, Notify};

use streamwire_core::error::Result;

use crate::message_id::MessageId;

pub type Callback = Box<dyn FnOnce(Result<MessageId>) + Send>;

pub enum Completion {
    /// Nobody waits (fire and forget); failures are still counted in stats.
    None,
    Once(oneshot::Sender<Result<MessageId>>),
    Group(Arc<Group>, usize),
    Callback(Callback),
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Completion::None => "Completion::None",
            Completion::Once(_) => "Completion::Once",
            Completion::Group(..) => "Completion::Group",
            Completion::Callback(_) => "Completion::Callback",
        })
    }
}

impl Completion {
    pub fn complete(self, res: Result<MessageId>) {
        match self {
            Completion::None => {}
            Completion::Once(tx) => {
                let _ = tx.send(res);
            }
            Completion::Group(g, i) => g.set(i, res),
            Completion::Callback(cb) => cb(res),
        }
    }
}

/// Results of a bulk send, filled in as receipts arrive (in any order across partitions).
pub struct Group {
    results: Mutex<Vec<Option<Result<MessageId>>>>,
    remaining: AtomicUsize,
    done: Notify,
}

impl Group {
    pub fn new(n: usize) -> Arc<Group> {
        Arc::new(Group {
            results: Mutex::new((0..n).map(|_| None).collect()),
            remaining: AtomicUsize::new(n),
            done: Notify::new(),
        })
    }

    fn set(&self, i: usize, res: Result<MessageId>) {
        {
            let mut r = self.results.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(slot) = r.get_mut(i) {
                if slot.is_none() {
                    *slot = Some(res);
                } else {
                    return;
                }
            }
        }
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            // `notify_one` stores a permit, so a waiter that arrives later still wakes.
            self.done.notify_one();
        }
    }

    /// Set many slots under one lock and one count update: the receipts of one batch of a
    /// bulk send (a thousand messages of one `send_many`) arrive together.
    pub(super) fn set_many(&self, results: impl IntoIterator<Item = (usize, Result<MessageId>)>) {
        let mut filled = 0;
        {
            let mut r = self.results.lock().unwrap_or_else(|p| p.into_inner());
            for (i, res) in results {
                if let Some(slot) = r.get_mut(i) {
                    if slot.is_none() {
                        *slot = Some(res);
                        filled += 1;
                    }
                }
            }
        }
        if filled > 0 && self.remaining.fetch_sub(filled, Ordering::AcqRel) == filled {
            self.done.notify_one();
        }
    }

    /// Fail every slot not filled yet (used when a bulk send is abandoned half-way).
    pub fn fail_unfilled(&self, err: &streamwire_core::error::Error) {
        let n = self.results.lock().unwrap_or_else(|p| p.into_inner()).len();
        for i in 0..n {
            self.set(i, Err(err.clone()));
        }
    }

    pub fn remaining(&self) -> usize {
        self.remaining.load(Ordering::Acquire)
    }

    /// Wait until every message has a result, then take them in order.
    pub async fn wait(&self) -> Vec<Result<MessageId>> {
        while self.remaining() > 0 {
            self.done.notified().await;
        }
        let mut r = self.results.lock().unwrap_or_else(|p| p.into_inner());
        r.drain(..)
            .map(|x| {
                x.unwrap_or_else(|| {
                    Err(streamwire_core::error::Error::new(
                        streamwire_core::error::ErrorKind::Closed,
                        "send abandoned",
                    ))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_core::error::{Error, ErrorKind};

    #[tokio::test]
    async fn group_collects_out_of_order() {
        let g = Group::new(3);
        let id = |e| MessageId::new(1, e, -1, -1, 0);
        Completion::Group(g.clone(), 2).complete(Ok(id(2)));
        Completion::Group(g.clone(), 0).complete(Ok(id(0)));
        assert_eq!(g.remaining(), 1);
        Completion::Group(g.clone(), 1).complete(Err(Error::timeout("send")));
        // A second result for the same slot is ignored.
        Completion::Group(g.clone(), 1).complete(Ok(id(9)));
        let r = g.wait().await;
        assert_eq!(r[0].as_ref().unwrap(), &id(0));
        assert_eq!(r[1].as_ref().unwrap_err().kind(), ErrorKind::Timeout);
        assert_eq!(r[2].as_ref().unwrap(), &id(2));
    }

    #[tokio::test]
    async fn set_many_fills_once_and_wakes_at_the_last() {
        let g = Group::new(4);
        let id = |e| MessageId::new(1, e, -1, -1, 0);
        g.set_many([(1, Ok(id(1))), (3, Ok(id(3)))]);
        assert_eq!(g.remaining(), 2);
        // Slots filled already and slots out of range change nothing.
        g.set_many([(1, Ok(id(9))), (7, Ok(id(7)))]);
        assert_eq!(g.remaining(), 2);
        g.set_many([(0, Ok(id(0))), (2, Err(Error::timeout("send")))]);
        let r = g.wait().await;
        assert_eq!(r[1].as_ref().unwrap(), &id(1));
        assert_eq!(r[2].as_ref().unwrap_err().kind(), ErrorKind::Timeout);
        assert_eq!(r[3].as_ref().unwrap(), &id(3));
    }

    #[tokio::test]
    async fn fail_unfilled_completes_the_group() {
        let g = Group::new(2);
        Completion::Group(g.clone(), 0).complete(Ok(MessageId::new(1, 1, -1, -1, 0)));
        g.fail_unfilled(&Error::closed("producer"));
        let r = g.wait().await;
        assert!(r[0].is_ok());
        assert_eq!(r[1].as_ref().unwrap_err().kind(), ErrorKind::Closed);
    }
}
