//! The producer actor's key-based batching (`BatchingType::KeyBased`): sends wait in a
//! container grouped by key (`engine::key_batches`), and a flush numbers and batches them one
//! key after the other, through the same path as every other message (`enqueue`), so the
//! rules of `placement` (entry options, schema versions, possible duplicates) and the batch
//! limits still hold, and every batch entry holds one key. A child module of `actor`, as it
//! uses the actor's private state.

use std::time::Instant;

use streamwire_core::error::Error;

use super::super::Queued;
use super::{yield_to_writer, Actor, Joined};
use crate::engine::key_batches::GroupKey;

impl Actor {
    /// Messages handed over to a key-based producer.
    pub(super) async fn on_send_keyed(&mut self, items: Vec<Queued>, now: Instant) {
        for q in items {
            if let Some(err) = &self.terminal {
                let err = err.clone();
                self.fail_queued(q, err);
                continue;
            }
            if q.user_sequence_id {
                // A caller-given sequence id cannot be renumbered as the container's messages
                // are, so it is sent after everything waiting, in a batch only with the
                // same-key messages next to it (`enqueue` closes a batch on another key): ids
                // keep rising from entry to entry, as broker deduplication needs.
                self.drain_keyed().await;
                self.enqueue(q, now).await;
                continue;
            }
            let key = GroupKey::of(&q.msg);
            let len = q.msg.payload.len();
            let container = self.keyed.as_mut().expect("key-based producer");
            if container.add(key, len, q, now) {
                self.drain_keyed().await;
                yield_to_writer().await;
            }
        }
    }

    /// Send everything waiting: the key-based container's groups, then the open batch.
    pub(super) async fn flush_all(&mut self) {
        self.drain_keyed().await;
        self.flush_batch().await;
    }

    /// When the batch timer must fire: the earlier of the open batch's and the container's
    /// deadlines.
    pub(super) fn batch_deadline(&self) -> Option<Instant> {
        let open = self.batcher.as_ref().and_then(|b| b.deadline());
        let keyed = self.keyed.as_ref().and_then(|c| c.deadline());
        match (open, keyed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Batch and send the container's groups, oldest first. Each message gets its sequence id
    /// here, so ids rise across the entries sent; `enqueue` closes the open
    /// batch whenever the key changes, and the last group's batch is sent at the end. An
    /// empty container leaves the open batch alone (it may be a caller-numbered batch still
    /// collecting same-key messages).
    async fn drain_keyed(&mut self) {
        let groups = match self.keyed.as_mut() {
            Some(c) if !c.is_empty() => c.drain(),
            _ => return,
        };
        let now = Instant::now();
        for (key, items) in groups {
            if !self.batch_items.is_empty() && self.batch_key.as_ref() != Some(&key) {
                self.flush_batch().await;
            }
            for q in items {
                if self.batch_items.is_empty() {
                    // A batch the fast path opens is of this group's key.
                    self.batch_key = Some(key.clone());
                }
                // The common case without an await, as for default batching (`on_send`);
                // anything else (a full batch, entry options...) through `enqueue`, which
                // keeps the batch to one key as well.
                match self.join_open_batch(q, now) {
                    Joined::Added => {}
                    Joined::Full => {
                        self.flush_batch().await;
                        yield_to_writer().await;
                    }
                    Joined::Declined(q) => self.enqueue(q, now).await,
                }
            }
        }
        self.flush_batch().await;
    }

    /// Fail the messages waiting in the container (the producer is closing or failed).
    pub(super) fn fail_keyed(&mut self, err: &Error) {
        let Some(container) = self.keyed.as_mut() else {
            return;
        };
        for (_, items) in container.drain() {
            for q in items {
                self.fail_queued(q, err.clone());
            }
        }
    }
}
