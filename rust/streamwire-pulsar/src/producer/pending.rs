//! The producer's in-flight queue: entries sent (or to be re-sent) and not yet acknowledged.
//!
//! Pure: receipts are matched to the head of the queue in order, as the broker acknowledges
//! a producer's entries in the order it received them; expiry takes the prefix whose send
//! timeout passed (entries queued later expire later). No sockets, no clock reads.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::OwnedSemaphorePermit;

use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, Result};

use super::bulk::{BulkSlot, IdRange};
use super::completion::{Completion, Group};
use crate::message_id::MessageId;
use crate::protocol::pb;

/// One entry on the wire: a batch or a single message.
#[derive(Debug)]
pub struct InFlight {
    pub sequence_id: u64,
    pub highest_sequence_id: u64,
    pub num_messages: u32,
    /// Whether the entry is a batch (its messages get batch indexes).
    pub batched: bool,
    pub metadata: pb::MessageMetadata,
    /// The payload as sent (compressed if compression is on). It goes to the socket from
    /// this buffer (shared with the connection's write queue), never copied into a frame.
    pub payload: Bytes,
    /// The SEND frame's head (sizes, command, checksum, metadata) as last written; a re-send
    /// after a reconnect re-encodes only the command in it.
    pub frame: Option<Bytes>,
    /// One per message, in batch order.
    pub completions: Vec<Completion>,
    pub deadline: Instant,
    pub enqueued_at: Instant,
    /// Uncompressed payload bytes, for stats.
    pub bytes: usize,
    /// Memory-budget bytes and pending-queue slots, released when this entry is dropped.
    pub reservation: Option<Reservation>,
    pub permits: Option<OwnedSemaphorePermit>,
    /// Set when the entry is one chunk of a chunked message (only the last chunk holds the
    /// message's completion and holdings).
    pub chunk: Option<ChunkPos>,
    /// Set when the entry holds a run of one bulk send's messages (then `completions` is
    /// empty): they are settled in its group as one range.
    pub bulk: Option<BulkSlot>,
}

/// Where a chunk sits in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPos {
    pub chunk_id: u32,
    pub last: bool,
}

impl InFlight {
    /// Application messages this entry completes (0 for all chunks but the last).
    pub fn messages(&self) -> u32 {
        match self.chunk {
            Some(c) if !c.last => 0,
            _ => self.num_messages,
        }
    }

    /// Complete the last chunk of a chunked message: its id carries the first chunk's.
    pub fn complete_chunked(mut self, id: MessageId) {
        drop(self.permits.take());
        drop(self.reservation.take());
        for c in self.completions {
            c.complete(Ok(id));
        }
    }

    /// Report every message's id from the entry id the broker assigned.
    pub fn complete(mut self, ledger_id: i64, entry_id: i64, partition: i32) {
        // Free the queue slots and memory first: a caller woken by a completion may send
        // again at once (with block_if_queue_full=False) and must find the room.
        drop(self.permits.take());
        drop(self.reservation.take());
        let n = self.num_messages as i32;
        if let Some(b) = self.bulk.take() {
            b.group.acknowledged(IdRange {
                start: b.start,
                count: self.num_messages,
                ledger_id,
                entry_id,
                partition,
                batch_start: if self.batched { 0 } else { -1 },
                batch_size: if self.batched { n } else { 0 },
            });
        }
        // Runs of one bulk send's messages are reported to its group in one step (one lock,
        // one count update); anything else completes alone, in order.
        let mut group: Option<Arc<Group>> = None;
        let mut run: Vec<(usize, Result<MessageId>)> = Vec::new();
        for (i, c) in self.completions.into_iter().enumerate() {
            let id = if self.batched {
                MessageId::new(ledger_id, entry_id, partition, i as i32, n)
            } else {
                MessageId::new(ledger_id, entry_id, partition, -1, 0)
            };
            match c {
                Completion::Group(g, k) => {
                    if group.as_ref().is_some_and(|cur| !Arc::ptr_eq(cur, &g)) {
                        flush_run(&mut group, &mut run);
                    }
                    if group.is_none() {
                        run.reserve(n.max(1) as usize);
                        group = Some(g);
                    }
                    run.push((k, Ok(id)));
                }
                other => {
                    flush_run(&mut group, &mut run);
                    other.complete(Ok(id));
                }
            }
        }
        flush_run(&mut group, &mut run);
    }

    pub fn fail(mut self, err: &Error) {
        drop(self.permits.take());
        drop(self.reservation.take());
        if let Some(b) = self.bulk.take() {
            b.group.failed(self.num_messages as usize, err);
        }
        for c in self.completions {
            c.complete(Err(err.clone()));
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Receipt {
    /// The head entry was acknowledged and is returned to be completed.
    Matched,
    /// A receipt for an entry we already completed or failed (e.g. after a timeout): ignore.
    Stale,
    /// A receipt ahead of the head: the broker and we disagree; reconnect and re-send.
    Unexpected,
}

#[derive(Debug, Default)]
pub struct PendingQueue {
    q: VecDeque<InFlight>,
    messages: usize,
}

impl PendingQueue {
    pub fn push(&mut self, e: InFlight) {
        self.messages += e.messages() as usize;
        self.q.push_back(e);
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Entries in flight.
    pub fn entries(&self) -> usize {
        self.q.len()
    }

    /// Messages in flight.
    pub fn messages(&self) -> usize {
        self.messages
    }

    pub fn iter(&self) -> impl Iterator<Item = &InFlight> {
        self.q.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut InFlight> {
        self.q.iter_mut()
    }

    pub fn front_deadline(&self) -> Option<Instant> {
        self.q.front().map(|e| e.deadline)
    }

    /// Match a receipt for `sequence_id` against the head of the queue.
    pub fn on_receipt(&mut self, sequence_id: u64) -> (Receipt, Option<InFlight>) {
        match self.q.front() {
            None => (Receipt::Stale, None),
            Some(head) if sequence_id < head.sequence_id => (Receipt::Stale, None),
            Some(head) if sequence_id == head.sequence_id => {
                let e = self.q.pop_front();
                if let Some(e) = &e {
                    self.messages -= e.messages() as usize;
                }
                (Receipt::Matched, e)
            }
            Some(_) => (Receipt::Unexpected, None),
        }
    }

    /// Remove the entries whose deadline is at or before `now` (a prefix of the queue).
    pub fn take_expired(&mut self, now: Instant) -> Vec<InFlight> {
        let mut out = Vec::new();
        while self.q.front().is_some_and(|e| e.deadline <= now) {
            if let Some(e) = self.q.pop_front() {
                self.messages -= e.messages() as usize;
                out.push(e);
            }
        }
        out
    }

    pub fn drain(&mut self) -> Vec<InFlight> {
        self.messages = 0;
        self.q.drain(..).collect()
    }
}

/// Hand `run` to `group` (if any) and start afresh.
fn flush_run(group: &mut Option<Arc<Group>>, run: &mut Vec<(usize, Result<MessageId>)>) {
    if let Some(g) = group.take() {
        g.set_many(run.drain(..));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::sync::oneshot;

    fn entry(
        seq: u64,
        n: u32,
        deadline: Instant,
    ) -> (
        InFlight,
        Vec<oneshot::Receiver<streamwire_core::error::Result<MessageId>>>,
    ) {
        let mut comps = Vec::new();
        let mut rxs = Vec::new();
        for _ in 0..n {
            let (tx, rx) = oneshot::channel();
            comps.push(Completion::Once(tx));
            rxs.push(rx);
        }
        (
            InFlight {
                sequence_id: seq,
                highest_sequence_id: seq + n as u64 - 1,
                num_messages: n,
                batched: n > 1,
                metadata: pb::MessageMetadata::default(),
                payload: Bytes::new(),
                frame: None,
                completions: comps,
                deadline,
                enqueued_at: deadline,
                bytes: 0,
                reservation: None,
                permits: None,
                chunk: None,
                bulk: None,
            },
            rxs,
        )
    }

    #[test]
    fn receipts_match_in_order_and_assign_batch_indexes() {
        let t = Instant::now();
        let mut q = PendingQueue::default();
        let (a, mut ra) = entry(0, 3, t);
        let (b, mut rb) = entry(3, 1, t);
        q.push(a);
        q.push(b);
        assert_eq!(q.messages(), 4);
        assert_eq!(q.on_receipt(3).0, Receipt::Unexpected);
        let (r, e) = q.on_receipt(0);
        assert_eq!(r, Receipt::Matched);
        e.unwrap().complete(7, 8, 2);
        let ids: Vec<MessageId> = ra
            .iter_mut()
            .map(|rx| rx.try_recv().unwrap().unwrap())
            .collect();
        assert_eq!(ids[2], MessageId::new(7, 8, 2, 2, 3));
        assert_eq!(ids[0].batch_size, 3);
        assert_eq!(q.on_receipt(0).0, Receipt::Stale);
        let (_, e) = q.on_receipt(3);
        e.unwrap().complete(7, 9, 2);
        assert_eq!(
            rb[0].try_recv().unwrap().unwrap(),
            MessageId::new(7, 9, 2, -1, 0)
        );
        assert!(q.is_empty());
        assert_eq!(q.messages(), 0);
    }

    #[tokio::test]
    async fn mixed_completions_each_get_their_id() {
        // Two bulk sends and a single send share one batch: each group hears its own
        // messages' ids at their slots, the single send its own.
        let t = Instant::now();
        let (mut e, _) = entry(0, 5, t);
        let (g1, g2) = (Group::new(3), Group::new(1));
        let (tx, rx) = oneshot::channel();
        e.completions = vec![
            Completion::Group(g1.clone(), 2),
            Completion::Group(g1.clone(), 0),
            Completion::Once(tx),
            Completion::Group(g2.clone(), 0),
            Completion::Group(g1.clone(), 1),
        ];
        e.complete(4, 5, -1);
        let id = |i| MessageId::new(4, 5, -1, i, 5);
        let r1: Vec<MessageId> = g1.wait().await.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(r1, vec![id(1), id(4), id(0)]);
        assert_eq!(rx.await.unwrap().unwrap(), id(2));
        assert_eq!(g2.wait().await[0].as_ref().unwrap(), &id(3));
    }

    #[test]
    fn expiry_takes_exactly_the_expired_prefix() {
        let t = Instant::now();
        let mut q = PendingQueue::default();
        for i in 0..5u64 {
            q.push(entry(i, 1, t + Duration::from_millis(i * 10)).0);
        }
        let gone = q.take_expired(t + Duration::from_millis(25));
        assert_eq!(
            gone.iter().map(|e| e.sequence_id).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        assert_eq!(q.entries(), 2);
        assert_eq!(q.front_deadline(), Some(t + Duration::from_millis(30)));
        for e in gone {
            e.fail(&Error::timeout("send"));
        }
    }
}
