//! A bulk send's hand-over to the producer actor and its results, settled as ranges.
//!
//! A bulk send of plain values ([`Producer::send_bulk`](super::Producer::send_bulk)) crosses
//! into the actor as one [`BulkChunk`] per reservation chunk (a buffer shared by the whole
//! call, a range of its messages, the chunk's memory and pending-slot holdings), not as one
//! item per message; the actor cuts batches straight from the buffer, and each batch entry
//! settles its messages in the call's [`BulkGroup`] as one range when its receipt comes (or
//! fails them as one range). No per-message completion, no per-message `MessageId` unless
//! the caller asks for the ids.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{Notify, OwnedSemaphorePermit};

use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, Result};

use crate::engine::bulk::Packed;
use crate::message_id::MessageId;

/// Consecutive messages of a bulk send that one entry holds: they share ledger, entry and
/// partition, their batch indexes run from `batch_start` (-1: one unbatched message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRange {
    /// The input position of the first message.
    pub start: usize,
    pub count: u32,
    pub ledger_id: i64,
    pub entry_id: i64,
    pub partition: i32,
    pub batch_start: i32,
    pub batch_size: i32,
}

impl IdRange {
    /// The id of the range's `k`-th message.
    pub fn id(&self, k: u32) -> MessageId {
        let index = if self.batch_start < 0 {
            -1
        } else {
            self.batch_start + k as i32
        };
        MessageId::new(
            self.ledger_id,
            self.entry_id,
            self.partition,
            index,
            self.batch_size,
        )
    }

    /// The ranges of ids given one by one, in input order (for the per-message path, so both
    /// paths answer alike): a run of the same entry with consecutive batch indexes is one.
    pub fn compress(ids: &[MessageId]) -> Vec<IdRange> {
        let mut out: Vec<IdRange> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            if let Some(last) = out.last_mut() {
                let same_entry = last.ledger_id == id.ledger_id
                    && last.entry_id == id.entry_id
                    && last.partition == id.partition
                    && last.batch_size == id.batch_size;
                if same_entry
                    && last.batch_start >= 0
                    && id.batch_index == last.batch_start + last.count as i32
                {
                    last.count += 1;
                    continue;
                }
            }
            out.push(IdRange {
                start: i,
                count: 1,
                ledger_id: id.ledger_id,
                entry_id: id.entry_id,
                partition: id.partition,
                batch_start: id.batch_index,
                batch_size: id.batch_size,
            });
        }
        out
    }
}

#[derive(Default)]
struct Outcome {
    ranges: Vec<IdRange>,
    failed: usize,
    first_err: Option<Error>,
}

/// The results of one bulk send: filled one entry (range) at a time as receipts arrive.
pub struct BulkGroup {
    n: usize,
    outcome: Mutex<Outcome>,
    remaining: AtomicUsize,
    done: Notify,
}

/// What a bulk send came to: the ranges acknowledged, in input order, or the first error
/// with how many messages were not sent.
#[derive(Debug)]
pub struct BulkResult {
    pub ranges: Vec<IdRange>,
    pub failed: usize,
    pub first_err: Option<Error>,
}

impl BulkResult {
    /// The ranges if every message was acknowledged, else the first error noting how many
    /// of the call's `n` messages were not sent (the contract of `send_many` today).
    pub fn all_sent(self, n: usize) -> Result<Vec<IdRange>> {
        match self.first_err {
            Some(e) => Err(e.context(format!("{} of {n} messages were not sent", self.failed))),
            None => Ok(self.ranges),
        }
    }
}

impl BulkGroup {
    pub fn new(n: usize) -> Arc<BulkGroup> {
        Arc::new(BulkGroup {
            n,
            outcome: Mutex::new(Outcome::default()),
            remaining: AtomicUsize::new(n),
            done: Notify::new(),
        })
    }

    fn settled(&self, count: usize) {
        if count > 0 && self.remaining.fetch_sub(count, Ordering::AcqRel) == count {
            // `notify_one` stores a permit, so a waiter that arrives later still wakes.
            self.done.notify_one();
        }
    }

    /// An entry holding `range.count` of the messages was acknowledged.
    pub fn acknowledged(&self, range: IdRange) {
        self.outcome
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ranges
            .push(range);
        self.settled(range.count as usize);
    }

    /// `count` messages failed with `err` (or were never queued).
    pub fn failed(&self, count: usize, err: &Error) {
        if count == 0 {
            return;
        }
        {
            let mut o = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
            o.failed += count;
            o.first_err.get_or_insert_with(|| err.clone());
        }
        self.settled(count);
    }

    pub fn remaining(&self) -> usize {
        self.remaining.load(Ordering::Acquire)
    }

    /// Wait until every message is settled, then take the outcome (ranges in input order).
    pub async fn wait(&self) -> BulkResult {
        while self.remaining() > 0 {
            self.done.notified().await;
        }
        let o = std::mem::take(&mut *self.outcome.lock().unwrap_or_else(|p| p.into_inner()));
        let mut ranges = o.ranges;
        ranges.sort_unstable_by_key(|r| r.start);
        debug_assert!(ranges.iter().map(|r| r.count as usize).sum::<usize>() + o.failed == self.n);
        BulkResult {
            ranges,
            failed: o.failed,
            first_err: o.first_err,
        }
    }
}

/// Messages `from..to` of a bulk send, handed to the actor as one item, with what they hold
/// of the producer's limits.
pub(crate) struct BulkChunk {
    pub packed: Arc<Packed>,
    pub from: usize,
    pub to: usize,
    pub group: Arc<BulkGroup>,
    pub reservation: Reservation,
    pub permits: OwnedSemaphorePermit,
    pub enqueued_at: Instant,
}

impl BulkChunk {
    pub fn len(&self) -> usize {
        self.to - self.from
    }
}

/// Where an in-flight entry's messages sit in their bulk send: it settles them as a range.
#[derive(Clone)]
pub struct BulkSlot {
    pub group: Arc<BulkGroup>,
    pub start: usize,
}

impl std::fmt::Debug for BulkSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BulkSlot({})", self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_core::error::ErrorKind;

    fn range(start: usize, count: u32, entry: i64) -> IdRange {
        IdRange {
            start,
            count,
            ledger_id: 3,
            entry_id: entry,
            partition: -1,
            batch_start: 0,
            batch_size: count as i32,
        }
    }

    #[tokio::test]
    async fn ranges_come_back_in_input_order() {
        let g = BulkGroup::new(5);
        g.acknowledged(range(3, 2, 9));
        assert_eq!(g.remaining(), 3);
        g.acknowledged(range(0, 3, 8));
        let r = g.wait().await;
        assert_eq!(r.ranges, vec![range(0, 3, 8), range(3, 2, 9)]);
        assert_eq!(r.ranges[1].id(1), MessageId::new(3, 9, -1, 1, 2));
        assert_eq!(r.all_sent(5).unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_failure_reports_how_many_were_not_sent() {
        let g = BulkGroup::new(10);
        g.acknowledged(range(0, 4, 1));
        g.failed(6, &Error::timeout("send"));
        g.failed(0, &Error::closed("producer"));
        let e = g.wait().await.all_sent(10).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert!(
            e.to_string().contains("6 of 10 messages were not sent"),
            "{e}"
        );
    }

    #[test]
    fn ids_compress_into_runs_of_one_entry() {
        let ids = vec![
            MessageId::new(1, 1, 0, 0, 3),
            MessageId::new(1, 1, 0, 1, 3),
            MessageId::new(1, 1, 0, 2, 3),
            MessageId::new(1, 2, 0, -1, 0),
            MessageId::new(1, 3, 0, -1, 0),
            MessageId::new(1, 4, 1, 1, 2),
        ];
        let r = IdRange::compress(&ids);
        assert_eq!(r.len(), 4);
        let back: Vec<MessageId> = r
            .iter()
            .flat_map(|r| (0..r.count).map(move |k| r.id(k)))
            .collect();
        assert_eq!(back, ids);
        assert_eq!(r[3].start, 5);
    }
}
