//! Acknowledgement grouping (pure): what to send, and when, for the acks the app made.
//!
//! * Individual acks are collected and sent together when the group timer fires or when
//!   `max_pending` are waiting.
//! * Cumulative acks collapse to the highest id.
//! * A message inside a batch: without batch-index acks the entry is acknowledged once every
//!   index of it was acknowledged (the Java client's behaviour). With batch-index acks a
//!   partial entry is sent with an `ack_set` whose set bits are the indexes still unacked.
//! * A cumulative ack on a batch message that is not the last of its entry acknowledges up to
//!   the previous entry (without batch-index acks), or the entry with an `ack_set`.

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use crate::consumer::idhash::{IdMap, IdSet};
use crate::message_id::MessageId;
use crate::protocol::pb;

/// One ACK command to send.
#[derive(Debug, Clone, PartialEq)]
pub struct AckBatch {
    pub cumulative: bool,
    pub ids: Vec<pb::MessageIdData>,
}

#[derive(Debug, Clone)]
struct BatchState {
    size: u32,
    /// Bits set = still unacknowledged (Java `BitSet` words).
    unacked: Vec<i64>,
    remaining: u32,
    dirty: bool,
}

impl BatchState {
    fn new(size: u32) -> Self {
        let mut unacked = vec![0i64; size.div_ceil(64) as usize];
        for i in 0..size {
            set_bit(&mut unacked, i, true);
        }
        BatchState {
            size,
            unacked,
            remaining: size,
            dirty: false,
        }
    }
}

fn set_bit(words: &mut [i64], i: u32, on: bool) {
    let w = (i / 64) as usize;
    let mask = 1u64 << (i % 64);
    if let Some(word) = words.get_mut(w) {
        let mut v = *word as u64;
        if on {
            v |= mask;
        } else {
            v &= !mask;
        }
        *word = v as i64;
    }
}

type EntryKey = (i64, i64);

/// Grouping tracker for one topic-partition consumer.
#[derive(Debug)]
pub struct AckTracker {
    batch_index_ack: bool,
    max_pending: usize,
    /// Whole entries to acknowledge individually.
    individual: BTreeSet<MessageId>,
    batches: IdMap<EntryKey, BatchState>,
    cumulative: Option<(MessageId, Option<Vec<i64>>)>,
    /// Highest cumulative ack sent so far (acks at or below it are no-ops).
    cumulative_sent: Option<MessageId>,
    /// Entries acknowledged recently (bounded): a redelivery after a reconnect must not hand
    /// them out again, and their acks are sent again in case the old connection lost them.
    recent: IdSet<MessageId>,
    recent_order: VecDeque<(MessageId, Instant)>,
}

/// How many recently acknowledged entries are remembered at most ...
pub const RECENT_ACKS: usize = 100_000;
/// ... and for how long after their ack was sent. Acks older than this were processed by the
/// broker unless the connection was already dead; remembering everything up to the count
/// made every reconnect resend up to 100k acks and kept RSS climbing in a slow soak.
pub const RECENT_WINDOW: Duration = Duration::from_secs(10);

impl AckTracker {
    pub fn new(batch_index_ack: bool, max_pending: usize) -> Self {
        AckTracker {
            batch_index_ack,
            max_pending: max_pending.max(1),
            individual: BTreeSet::new(),
            batches: IdMap::default(),
            cumulative: None,
            cumulative_sent: None,
            recent: IdSet::default(),
            recent_order: VecDeque::new(),
        }
    }

    /// Number of acks waiting to be sent.
    pub fn pending(&self) -> usize {
        self.individual.len()
            + self.cumulative.is_some() as usize
            + self.batches.values().filter(|b| b.dirty).count()
    }

    /// Whether enough is pending to flush without waiting for the timer.
    pub fn should_flush(&self) -> bool {
        self.pending() >= self.max_pending
    }

    fn below_cumulative(&self, id: &MessageId) -> bool {
        self.cumulative_sent
            .is_some_and(|c| id.entry() <= c.entry() && !c.is_batch())
            || self
                .cumulative
                .as_ref()
                .is_some_and(|(c, set)| set.is_none() && id.entry() <= c.entry())
    }

    /// Record an individual ack. Returns true when a flush is due.
    pub fn individual(&mut self, id: MessageId) -> bool {
        if !(self.below_cumulative(&id) || self.recent.contains(&id.entry())) {
            self.record_individual(id);
        }
        self.should_flush()
    }

    /// Record an individual ack known not to be covered already.
    fn record_individual(&mut self, id: MessageId) {
        if id.is_batch() && id.batch_size > 1 {
            let key = (id.ledger_id, id.entry_id);
            let size = id.batch_size as u32;
            let st = self
                .batches
                .entry(key)
                .or_insert_with(|| BatchState::new(size));
            let i = id.batch_index as u32;
            if i < st.size && (st.unacked[(i / 64) as usize] as u64 >> (i % 64)) & 1 == 1 {
                set_bit(&mut st.unacked, i, false);
                st.remaining -= 1;
                st.dirty = self.batch_index_ack;
            }
            if st.remaining == 0 {
                self.batches.remove(&key);
                self.individual.insert(id.entry());
            }
        } else {
            self.individual.insert(id.entry());
        }
    }

    /// Record many individual acks (a list acknowledge); returns true when a flush is due.
    /// The same as `individual` for each id in turn, but the checks that depend only on
    /// the entry (below the cumulative ack, acknowledged recently) are made once per run of
    /// ids of one entry, and whether a flush is due once at the end: the pending count only
    /// grows while acks are recorded, so checking it last answers as checking it each time.
    pub fn individual_many(&mut self, ids: impl IntoIterator<Item = MessageId>) -> bool {
        let mut run: Option<(EntryKey, bool)> = None;
        for id in ids {
            let key = (id.ledger_id, id.entry_id);
            let skip = match run {
                Some((k, skip)) if k == key => skip,
                _ => {
                    let skip = self.below_cumulative(&id) || self.recent.contains(&id.entry());
                    run = Some((key, skip));
                    skip
                }
            };
            if !skip {
                self.record_individual(id);
            }
        }
        self.should_flush()
    }

    /// Record a cumulative ack. Returns true when a flush is due.
    pub fn cumulative(&mut self, id: MessageId) -> bool {
        let (target, set) = if id.is_batch() && id.batch_index + 1 < id.batch_size {
            if self.batch_index_ack {
                let mut words = BatchState::new(id.batch_size as u32).unacked;
                for i in 0..=id.batch_index as u32 {
                    set_bit(&mut words, i, false);
                }
                (id.entry(), Some(words))
            } else {
                // Everything before this entry is done; this entry is not finished.
                let prev = MessageId::new(id.ledger_id, id.entry_id - 1, id.partition, -1, 0);
                (prev, None)
            }
        } else {
            (id.entry(), None)
        };
        let newer = match &self.cumulative {
            None => true,
            Some((cur, cur_set)) => {
                target > *cur
                    || (target == *cur
                        && match (cur_set, &set) {
                            (Some(_), None) => true,
                            (Some(c), Some(s)) => popcount(s) < popcount(c),
                            _ => false,
                        })
            }
        };
        if newer && self.cumulative_sent.is_none_or(|c| target >= c) {
            self.cumulative = Some((target, set));
        }
        // Individual acks at or below a full cumulative ack are redundant.
        if let Some((c, None)) = &self.cumulative {
            let c = *c;
            self.individual.retain(|i| *i > c);
            self.batches
                .retain(|k, _| (k.0, k.1) > (c.ledger_id, c.entry_id));
        }
        self.should_flush()
    }

    /// Take everything pending as ACK commands (at most one cumulative, one individual).
    pub fn take(&mut self) -> Vec<AckBatch> {
        self.take_at(Instant::now())
    }

    /// [`take`](Self::take) at a given time (what `recent` forgets depends on it).
    pub fn take_at(&mut self, now: Instant) -> Vec<AckBatch> {
        let mut out = Vec::new();
        if let Some((id, set)) = self.cumulative.take() {
            let mut d = id.to_proto();
            if let Some(words) = set {
                d.ack_set = words;
                d.batch_size = Some(id.batch_size.max(0));
            }
            if d.ack_set.is_empty() {
                self.cumulative_sent = Some(id);
            }
            out.push(AckBatch {
                cumulative: true,
                ids: vec![d],
            });
        }
        let entries = std::mem::take(&mut self.individual);
        let mut ids: Vec<pb::MessageIdData> = Vec::with_capacity(entries.len());
        for id in entries {
            ids.push(id.to_proto());
            if self.recent.insert(id) {
                self.recent_order.push_back((id, now));
            }
        }
        self.forget_old(now);
        if self.batch_index_ack {
            for ((ledger, entry), st) in self.batches.iter_mut().filter(|(_, b)| b.dirty) {
                st.dirty = false;
                let mut d = MessageId::new(*ledger, *entry, -1, -1, 0).to_proto();
                d.ack_set = st.unacked.clone();
                d.batch_size = Some(st.size as i32);
                ids.push(d);
            }
        }
        if !ids.is_empty() {
            out.push(AckBatch {
                cumulative: false,
                ids,
            });
        }
        out
    }

    fn forget_old(&mut self, now: Instant) {
        while let Some(&(old, at)) = self.recent_order.front() {
            if self.recent_order.len() <= RECENT_ACKS && now.duration_since(at) <= RECENT_WINDOW {
                break;
            }
            self.recent_order.pop_front();
            self.recent.remove(&old);
        }
    }

    /// After a reconnect: send again what was sent on the old connection (it may have been
    /// lost with it; acking twice is harmless).
    pub fn resend_after_reconnect(&mut self) {
        self.individual
            .extend(self.recent_order.iter().map(|(id, _)| *id));
        if self.cumulative.is_none() {
            if let Some(c) = self.cumulative_sent {
                self.cumulative = Some((c, None));
            }
        }
        for st in self.batches.values_mut() {
            st.dirty = self.batch_index_ack;
        }
    }

    /// After a seek: what was acknowledged before it must be delivered again, so forget it
    /// (pending acks were flushed before the seek).
    pub fn reset_after_seek(&mut self) {
        self.individual.clear();
        self.batches.clear();
        self.cumulative = None;
        self.cumulative_sent = None;
        self.recent.clear();
        self.recent_order.clear();
    }

    /// Whether the app already acknowledged `id` (pending, a batch index, or cumulatively).
    pub fn is_acked(&self, id: &MessageId) -> bool {
        let e = id.entry();
        if self.below_cumulative(id) || self.individual.contains(&e) || self.recent.contains(&e) {
            return true;
        }
        if id.is_batch() {
            if let Some(st) = self.batches.get(&(id.ledger_id, id.entry_id)) {
                let i = id.batch_index as u32;
                return i < st.size && (st.unacked[(i / 64) as usize] as u64 >> (i % 64)) & 1 == 0;
            }
        }
        false
    }

    /// `id`, which the app already acknowledged, was delivered again: the broker lost or
    /// ignored the ack (pulsar-lite drops acks for messages it has not redelivered yet after
    /// a reconnect). Queue the ack again instead of only skipping the message, or the broker
    /// would redeliver it after every reconnect. Returns true when a flush is due.
    pub fn reack(&mut self, id: &MessageId) -> bool {
        let e = id.entry();
        if self.below_cumulative(id) {
            if self.cumulative.is_none() {
                if let Some(c) = self.cumulative_sent {
                    self.cumulative = Some((c, None));
                }
            }
        } else if self.recent.contains(&e) {
            self.individual.insert(e);
        } else if self.batch_index_ack {
            if let Some(st) = self.batches.get_mut(&(id.ledger_id, id.entry_id)) {
                st.dirty = true;
            }
        }
        self.should_flush()
    }

    /// Forget partially acknowledged batches (after a redelivery they come again whole).
    pub fn forget_batch(&mut self, id: &MessageId) {
        self.batches.remove(&(id.ledger_id, id.entry_id));
    }
}

fn popcount(words: &[i64]) -> u32 {
    words.iter().map(|w| (*w as u64).count_ones()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(l: i64, e: i64) -> MessageId {
        MessageId::new(l, e, -1, -1, 0)
    }

    fn bid(e: i64, i: i32, n: i32) -> MessageId {
        MessageId::new(1, e, -1, i, n)
    }

    #[test]
    fn recent_acks_are_forgotten_after_the_window() {
        let mut t = AckTracker::new(false, 1000);
        let t0 = Instant::now();
        t.individual(id(1, 1));
        t.take_at(t0);
        assert!(t.is_acked(&id(1, 1)));
        t.individual(id(1, 2));
        t.take_at(t0 + RECENT_WINDOW / 2);
        t.take_at(t0 + RECENT_WINDOW + Duration::from_millis(1));
        assert!(!t.is_acked(&id(1, 1)), "older than the window");
        assert!(t.is_acked(&id(1, 2)));
        // A reconnect resends only what is still remembered.
        t.resend_after_reconnect();
        let sent = t.take_at(t0 + RECENT_WINDOW + Duration::from_millis(2));
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].ids.len(), 1);
        assert_eq!(sent[0].ids[0].entry_id, 2);
    }

    #[test]
    fn reack_queues_an_acknowledged_entry_again() {
        let mut t = AckTracker::new(false, 1000);
        t.individual(id(1, 5));
        assert_eq!(t.take().len(), 1);
        assert_eq!(t.pending(), 0);
        // Redelivered although acknowledged: acknowledged again, once.
        t.reack(&id(1, 5));
        t.reack(&id(1, 5));
        let sent = t.take();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].ids.len(), 1);
        assert_eq!(sent[0].ids[0].entry_id, 5);
        // Never acknowledged: nothing to send.
        t.reack(&id(1, 6));
        assert!(t.take().is_empty());
    }

    #[test]
    fn reack_below_a_cumulative_ack_resends_the_cumulative() {
        let mut t = AckTracker::new(false, 1000);
        t.cumulative(id(1, 9));
        assert_eq!(t.take().len(), 1);
        t.reack(&id(1, 3));
        let sent = t.take();
        assert_eq!(sent.len(), 1);
        assert!(sent[0].cumulative);
        assert_eq!(sent[0].ids[0].entry_id, 9);
    }

    #[test]
    fn individual_acks_group_and_flush_at_max() {
        let mut t = AckTracker::new(false, 3);
        assert!(!t.individual(id(1, 1)));
        assert!(!t.individual(id(1, 2)));
        assert!(t.individual(id(1, 3)));
        let b = t.take();
        assert_eq!(b.len(), 1);
        assert!(!b[0].cumulative);
        assert_eq!(b[0].ids.len(), 3);
        assert!(t.take().is_empty());
    }

    #[test]
    fn batch_entry_acked_when_all_indexes_acked() {
        let mut t = AckTracker::new(false, 100);
        t.individual(bid(5, 0, 3));
        t.individual(bid(5, 2, 3));
        assert!(t.is_acked(&bid(5, 2, 3)) && !t.is_acked(&bid(5, 1, 3)));
        assert!(t.take().is_empty(), "partial batch must not be sent");
        assert!(t.is_acked(&bid(5, 0, 3)), "still remembered after a flush");
        t.individual(bid(5, 2, 3)); // a repeat changes nothing
        t.individual(bid(5, 1, 3));
        let b = t.take();
        assert_eq!(b[0].ids, vec![id(1, 5).to_proto()]);
        assert!(t.is_acked(&bid(5, 1, 3)), "a completed entry is remembered");
        t.individual(bid(5, 1, 3));
        assert!(t.take().is_empty(), "acking it again is a no-op");
        t.resend_after_reconnect();
        assert_eq!(
            t.take()[0].ids,
            vec![id(1, 5).to_proto()],
            "resent after reconnect"
        );
    }

    #[test]
    fn batch_index_ack_sends_ack_set() {
        let mut t = AckTracker::new(true, 100);
        t.individual(bid(5, 1, 3));
        let b = t.take();
        assert_eq!(b[0].ids[0].ack_set, vec![0b101]);
        assert_eq!(b[0].ids[0].batch_size, Some(3));
        assert!(t.take().is_empty(), "nothing new");
        t.individual(bid(5, 0, 3));
        t.individual(bid(5, 2, 3));
        let b = t.take();
        assert_eq!(b[0].ids, vec![id(1, 5).to_proto()]);
    }

    #[test]
    fn cumulative_collapses_to_highest_and_drops_lower_individual() {
        let mut t = AckTracker::new(false, 100);
        t.individual(id(1, 2));
        t.cumulative(id(1, 5));
        t.cumulative(id(1, 3));
        t.individual(id(1, 4));
        t.individual(id(1, 9));
        let b = t.take();
        assert_eq!(b.len(), 2);
        assert!(b[0].cumulative);
        assert_eq!(b[0].ids, vec![id(1, 5).to_proto()]);
        assert_eq!(b[1].ids, vec![id(1, 9).to_proto()]);
        // An older cumulative ack after a newer one was sent is dropped.
        t.cumulative(id(1, 4));
        assert!(t.take().is_empty());
    }

    #[test]
    fn cumulative_inside_a_batch() {
        let mut t = AckTracker::new(false, 100);
        t.cumulative(bid(7, 1, 4));
        assert_eq!(t.take()[0].ids, vec![id(1, 6).to_proto()]);
        t.cumulative(bid(7, 3, 4));
        assert_eq!(t.take()[0].ids, vec![id(1, 7).to_proto()]);

        let mut t = AckTracker::new(true, 100);
        t.cumulative(bid(7, 1, 4));
        let b = t.take();
        assert_eq!(b[0].ids[0].ack_set, vec![0b1100]);
        assert_eq!(b[0].ids[0].entry_id, 7);
    }

    proptest::proptest! {
        /// A list acknowledge records what acking its ids one by one records, and says a
        /// flush is due exactly when the last of the one-by-one calls does.
        #[test]
        fn individual_many_is_individual_in_turn(
            ids in proptest::collection::vec((0i64..4, -1i32..6, 0i32..6), 0..60),
            cumulative_at in proptest::option::of(0i64..4),
            batch_index_ack: bool,
            max_pending in 1usize..8,
        ) {
            let ids: Vec<MessageId> = ids
                .into_iter()
                .map(|(e, i, n)| if i < 0 { id(1, e) } else { bid(e, i.min(n.max(1) - 1), n.max(1)) })
                .collect();
            let mut one = AckTracker::new(batch_index_ack, max_pending);
            let mut many = AckTracker::new(batch_index_ack, max_pending);
            if let Some(e) = cumulative_at {
                one.cumulative(id(1, e));
                many.cumulative(id(1, e));
            }
            let mut due_one = false;
            for m in &ids {
                due_one = one.individual(*m);
            }
            let due_many = many.individual_many(ids.iter().copied());
            proptest::prop_assert_eq!(due_one || ids.is_empty() && one.should_flush(), due_many);
            proptest::prop_assert_eq!(one.pending(), many.pending());
            // Compared as sets: partial batches come out in hash-map order.
            let sorted = |mut b: Vec<AckBatch>| {
                for x in &mut b {
                    x.ids.sort_by_key(|d| (d.ledger_id, d.entry_id, d.ack_set.clone()));
                }
                b
            };
            let t0 = Instant::now();
            proptest::prop_assert_eq!(sorted(one.take_at(t0)), sorted(many.take_at(t0)));
        }
    }
}
