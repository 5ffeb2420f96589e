//! Negative acks and the ack timeout (pure): which messages to ask the broker to redeliver,
//! and when.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::message_id::MessageId;

/// Messages waiting for their redelivery time.
#[derive(Debug, Default)]
pub struct RedeliveryTracker {
    /// Entry (batch index dropped) → when to ask for redelivery.
    due: HashMap<MessageId, Instant>,
}

impl RedeliveryTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask for `id`'s entry to be redelivered at `at` (an earlier request wins).
    pub fn add(&mut self, id: MessageId, at: Instant) {
        let e = self.due.entry(id.entry()).or_insert(at);
        if at < *e {
            *e = at;
        }
    }

    pub fn remove(&mut self, id: &MessageId) {
        // Every acknowledgement comes through here; with no negative ack pending (the usual
        // case) there is nothing to hash.
        if !self.due.is_empty() {
            self.due.remove(&id.entry());
        }
    }

    pub fn len(&self) -> usize {
        self.due.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }

    /// Entries whose time has come, in id order.
    pub fn take_due(&mut self, now: Instant) -> Vec<MessageId> {
        let mut out: Vec<MessageId> = self
            .due
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in &out {
            self.due.remove(id);
        }
        out.sort();
        out
    }

    /// The earliest pending deadline.
    pub fn next_due(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }
}

/// Ack-timeout tracking: messages handed to the app and not acknowledged within `timeout`.
#[derive(Debug)]
pub struct UnackedTracker {
    timeout: Duration,
    by_id: HashMap<MessageId, Instant>,
    by_time: BTreeMap<(Instant, MessageId), ()>,
}

impl UnackedTracker {
    pub fn new(timeout: Duration) -> Self {
        UnackedTracker {
            timeout,
            by_id: HashMap::new(),
            by_time: BTreeMap::new(),
        }
    }

    pub fn delivered(&mut self, id: MessageId, now: Instant) {
        let at = now + self.timeout;
        if let Some(old) = self.by_id.insert(id, at) {
            self.by_time.remove(&(old, id));
        }
        self.by_time.insert((at, id), ());
    }

    pub fn acked(&mut self, id: &MessageId) {
        if let Some(at) = self.by_id.remove(id) {
            self.by_time.remove(&(at, *id));
        }
    }

    /// Everything acknowledged up to and including `id` (cumulative ack).
    pub fn acked_up_to(&mut self, id: &MessageId) {
        let gone: Vec<MessageId> = self.by_id.keys().filter(|k| *k <= id).copied().collect();
        for g in gone {
            self.acked(&g);
        }
    }

    pub fn clear(&mut self) {
        self.by_id.clear();
        self.by_time.clear();
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Messages whose ack timed out (they are forgotten; redelivery brings them back).
    pub fn take_expired(&mut self, now: Instant) -> Vec<MessageId> {
        let mut out = Vec::new();
        while let Some((&(at, id), _)) = self.by_time.first_key_value() {
            if at > now {
                break;
            }
            self.by_time.remove(&(at, id));
            self.by_id.remove(&id);
            out.push(id);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nacks_come_due_after_their_delay_once_per_entry() {
        let t0 = Instant::now();
        let mut r = RedeliveryTracker::new();
        r.add(
            MessageId::new(1, 2, -1, 0, 3),
            t0 + Duration::from_millis(10),
        );
        r.add(
            MessageId::new(1, 2, -1, 1, 3),
            t0 + Duration::from_millis(20),
        );
        r.add(
            MessageId::new(1, 1, -1, -1, 0),
            t0 + Duration::from_millis(30),
        );
        assert_eq!(r.len(), 2);
        assert!(r.take_due(t0).is_empty());
        assert_eq!(r.next_due(), Some(t0 + Duration::from_millis(10)));
        assert_eq!(
            r.take_due(t0 + Duration::from_millis(15)),
            vec![MessageId::new(1, 2, -1, -1, 0)]
        );
        r.remove(&MessageId::new(1, 1, -1, -1, 0));
        assert!(r.is_empty());
    }

    #[test]
    fn ack_timeout() {
        let t0 = Instant::now();
        let mut u = UnackedTracker::new(Duration::from_secs(1));
        for e in 0..5 {
            u.delivered(MessageId::new(1, e, -1, -1, 0), t0);
        }
        u.acked(&MessageId::new(1, 0, -1, -1, 0));
        u.acked_up_to(&MessageId::new(1, 2, -1, -1, 0));
        assert_eq!(u.len(), 2);
        assert!(u.take_expired(t0).is_empty());
        let exp = u.take_expired(t0 + Duration::from_secs(2));
        assert_eq!(exp.len(), 2);
        assert!(u.is_empty());
    }
}
