//! The receiver queue between a partition's actor and the application, and the fair merge
//! across partitions.
//!
//! The actor pushes whole entries; the application pops many messages under one lock. The
//! popper counts what it took so the actor can hand the permits back to the broker (it is
//! woken once half a queue's worth was taken, not per message). On reconnect the actor clears
//! the queue under the same lock, so every message is either handed out once or discarded.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use tokio::sync::Notify;

use super::entry::ReceivedMessage;
use crate::message_id::MessageId;

#[derive(Debug, Default)]
struct QState {
    items: VecDeque<ReceivedMessage>,
    /// Messages taken by the app and not yet reported to the actor.
    delivered: u32,
    /// The last message handed to the app (where a non-durable subscription resumes).
    last_delivered: Option<MessageId>,
}

/// One partition's queue.
#[derive(Debug)]
pub struct PartitionQueue {
    state: Mutex<QState>,
    /// Wakes the actor: permits to return, acks to flush.
    pub wake_actor: Notify,
    refill_at: u32,
}

impl PartitionQueue {
    pub fn new(receiver_queue_size: u32) -> Self {
        PartitionQueue {
            state: Mutex::new(QState::default()),
            wake_actor: Notify::new(),
            refill_at: (receiver_queue_size / 2).max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, QState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn push(&self, msgs: impl IntoIterator<Item = ReceivedMessage>) {
        self.lock().items.extend(msgs);
    }

    pub fn len(&self) -> usize {
        self.lock().items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Move up to `max` messages to `out`, within `budget`; returns how many.
    pub fn pop_into(
        &self,
        out: &mut Vec<ReceivedMessage>,
        max: usize,
        budget: &mut ByteBudget,
    ) -> usize {
        let mut st = self.lock();
        let n = budget.fit(st.items.iter(), max);
        if n == 0 {
            return 0;
        }
        out.extend(st.items.drain(..n));
        st.delivered += n as u32;
        st.last_delivered = out.last().map(|m| m.id);
        let wake = st.delivered >= self.refill_at;
        drop(st);
        if wake {
            self.wake_actor.notify_one();
        }
        n
    }

    /// Permits to return: messages the app took since the last call.
    pub fn take_delivered(&self) -> u32 {
        std::mem::take(&mut self.lock().delivered)
    }

    /// Drop every queued message; returns (discarded, taken-but-unreported).
    pub fn clear(&self) -> (u32, u32) {
        let mut st = self.lock();
        let n = st.items.len() as u32;
        st.items.clear();
        (n, std::mem::take(&mut st.delivered))
    }

    pub fn last_delivered(&self) -> Option<MessageId> {
        self.lock().last_delivered
    }

    pub fn set_last_delivered(&self, id: Option<MessageId>) {
        self.lock().last_delivered = id;
    }
}

/// The payload bytes one receive may take (Java's `BatchReceivePolicy.maxNumBytes`): the
/// first message always goes, so a receive never comes back empty because one message is
/// large; a later one goes only while the total stays within the limit, and the first that
/// does not fit ends the receive (it stays queued, first in line for the next one). Past a
/// message larger than the limit nothing fits, not even an empty one: a receive of several
/// messages never holds more than the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteBudget {
    /// None: no limit (the count alone decides).
    max: Option<usize>,
    /// Payload bytes taken so far.
    taken: usize,
    took_any: bool,
    /// A message did not fit: take nothing more.
    full: bool,
}

impl ByteBudget {
    /// No byte limit.
    pub const UNLIMITED: ByteBudget = ByteBudget {
        max: None,
        taken: 0,
        took_any: false,
        full: false,
    };

    /// At most `max_bytes` of payload (but always one message); None: no limit.
    pub fn new(max_bytes: Option<usize>) -> ByteBudget {
        ByteBudget {
            max: max_bytes,
            ..ByteBudget::UNLIMITED
        }
    }

    pub fn is_full(&self) -> bool {
        self.full
    }

    /// How many of the first `max` of `items` fit, counted against the budget.
    pub fn fit<'a>(
        &mut self,
        items: impl ExactSizeIterator<Item = &'a ReceivedMessage>,
        max: usize,
    ) -> usize {
        let Some(limit) = self.max else {
            // Unlimited: the count alone, without looking at the messages.
            return max.min(items.len());
        };
        if self.full {
            return 0;
        }
        let mut n = 0;
        for m in items.take(max) {
            let total = self.taken.saturating_add(m.payload.len());
            if self.took_any && total > limit {
                self.full = true;
                break;
            }
            self.taken = total;
            self.took_any = true;
            n += 1;
        }
        n
    }
}

/// Fill `out` with up to `max` messages (within `budget`) taken from `queues` in turn,
/// starting at `*next` (which advances so successive calls start with the next queue). Each
/// round takes an equal share from every queue, so a busy partition cannot starve the others.
pub fn drain_fair<Q: AsRef<PartitionQueue>>(
    queues: &[Q],
    next: &mut usize,
    max: usize,
    budget: &mut ByteBudget,
    out: &mut Vec<ReceivedMessage>,
) -> usize {
    let n = queues.len();
    if n == 0 || max == 0 {
        return 0;
    }
    if n == 1 {
        return queues[0].as_ref().pop_into(out, max, budget);
    }
    let mut total = 0;
    loop {
        let left = max - total;
        if left == 0 {
            break;
        }
        let share = left.div_ceil(n).max(1);
        let mut round = 0;
        for _ in 0..n {
            let q = &queues[*next % n];
            *next = (*next + 1) % n;
            let want = share.min(max - total - round);
            if want == 0 || budget.is_full() {
                break;
            }
            round += q.as_ref().pop_into(out, want, budget);
        }
        total += round;
        if round == 0 || budget.is_full() {
            break;
        }
    }
    total
}

/// One receive waiting for messages, counted for as long as it exists.
pub struct WaitingGuard<'a>(&'a AtomicUsize);

impl<'a> WaitingGuard<'a> {
    pub fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        WaitingGuard(count)
    }
}

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::Arc;

    fn msg(slot: u32, e: i64) -> ReceivedMessage {
        ReceivedMessage {
            id: MessageId::new(1, e, slot as i32, -1, 0),
            payload: Bytes::new(),
            sequence_id: 0,
            entry: Arc::new(super::super::entry::EntryInfo {
                slot,
                topic: Arc::from("t"),
                publish_time: 0,
                producer_name: Arc::from("p"),
                redelivery_count: 0,
                schema_version: None,
            }),
            extras: None,
        }
    }

    #[test]
    fn pop_counts_delivered_and_clear_discards() {
        let q = PartitionQueue::new(4);
        q.push((0..5).map(|e| msg(0, e)));
        let mut out = vec![];
        let mut all = ByteBudget::UNLIMITED;
        assert_eq!(q.pop_into(&mut out, 3, &mut all), 3);
        assert_eq!(q.last_delivered(), Some(MessageId::new(1, 2, 0, -1, 0)));
        assert_eq!(q.take_delivered(), 3);
        assert_eq!(q.take_delivered(), 0);
        q.pop_into(&mut out, 1, &mut all);
        assert_eq!(q.clear(), (1, 1));
        assert!(q.is_empty());
    }

    #[test]
    fn fair_merge_round_robins() {
        let qs: Vec<Arc<PartitionQueue>> =
            (0..3).map(|_| Arc::new(PartitionQueue::new(100))).collect();
        qs[0].push((0..100).map(|e| msg(0, e)));
        qs[1].push((0..2).map(|e| msg(1, e)));
        qs[2].push((0..100).map(|e| msg(2, e)));
        let mut next = 0;
        let mut out = vec![];
        assert_eq!(
            drain_fair(&qs, &mut next, 30, &mut ByteBudget::new(None), &mut out),
            30
        );
        let count = |s| out.iter().filter(|m| m.slot() == s).count();
        assert_eq!(count(1), 2);
        assert_eq!(count(0) + count(2), 28);
        assert!(count(0) >= 10 && count(2) >= 10);
        // Single messages rotate over the queues.
        let mut out = vec![];
        for _ in 0..4 {
            drain_fair(&qs, &mut next, 1, &mut ByteBudget::new(None), &mut out);
        }
        let slots: std::collections::HashSet<u32> = out.iter().map(|m| m.slot()).collect();
        assert_eq!(slots.len(), 2, "the two non-empty queues alternate");
        // Everything drains in the end.
        let mut out = vec![];
        while drain_fair(&qs, &mut next, 50, &mut ByteBudget::new(None), &mut out) > 0 {}
        assert_eq!(out.len() + 34, 202);
    }

    fn sized(slot: u32, e: i64, len: usize) -> ReceivedMessage {
        let mut m = msg(slot, e);
        m.payload = Bytes::from(vec![b'x'; len]);
        m
    }

    #[test]
    fn byte_budget_takes_one_always_then_what_fits() {
        let q = PartitionQueue::new(100);
        q.push(
            [40, 40, 40, 0, 5, 5]
                .iter()
                .enumerate()
                .map(|(e, &n)| sized(0, e as i64, n)),
        );
        let mut out = vec![];
        // 100 bytes: two of 40 fit, the third (80 + 40 > 100) ends the receive.
        let mut b = ByteBudget::new(Some(100));
        assert_eq!(q.pop_into(&mut out, 10, &mut b), 2);
        assert!(b.is_full());
        assert_eq!(
            q.pop_into(&mut out, 10, &mut b),
            0,
            "a full budget takes nothing"
        );
        // A budget below one message still takes that message, alone: past it not even an
        // empty payload fits.
        let mut b = ByteBudget::new(Some(1));
        assert_eq!(q.pop_into(&mut out, 10, &mut b), 1);
        assert_eq!(out.len(), 3);
        // An empty payload fits in what is left; the count limit applies within the bytes.
        let mut b = ByteBudget::new(Some(5));
        assert_eq!(q.pop_into(&mut out, 10, &mut b), 2);
        let mut b = ByteBudget::new(Some(1000));
        assert_eq!(q.pop_into(&mut out, 0, &mut b), 0);
        assert_eq!(q.pop_into(&mut out, 1, &mut b), 1);
        assert!(q.is_empty());
    }

    #[test]
    fn byte_budget_spans_the_partitions() {
        let qs: Vec<Arc<PartitionQueue>> =
            (0..3).map(|_| Arc::new(PartitionQueue::new(100))).collect();
        for (s, q) in qs.iter().enumerate() {
            q.push((0..10).map(|e| sized(s as u32, e, 10)));
        }
        let mut next = 0;
        let mut out = vec![];
        let mut b = ByteBudget::new(Some(55));
        assert_eq!(drain_fair(&qs, &mut next, 100, &mut b, &mut out), 5);
        assert!(out.iter().map(|m| m.payload.len()).sum::<usize>() <= 55);
        let mut out = vec![];
        let mut b = ByteBudget::UNLIMITED;
        assert_eq!(drain_fair(&qs, &mut next, 100, &mut b, &mut out), 25);
    }
}
