//! Consumer flow-control permits.
//!
//! Pulsar's broker pushes messages only while the consumer has granted it permits (one per
//! message; a batch entry costs as many permits as it holds messages). The consumer grants
//! its whole receiver queue size at subscribe time and then, like the Java client, gives
//! permits back in chunks once the application has taken at least half of the queue
//! ("refill at half"). Why chunks: one `Flow` command per message would double the command
//! traffic; granting only at half keeps the queue between half and fully stocked.
//!
//! Accounting (all in messages):
//! * `outstanding` — permits the broker still holds. It can go negative: the broker sends a
//!   whole batch entry as long as it holds *any* permit, so a batch may overshoot.
//! * `queued` — received, not yet taken by the application (or discarded).
//! * `pending` — taken by the application, not yet granted back.
//!
//! Invariant: `outstanding + queued + pending == queue_size` at all times, hence the broker
//! is never owed more than `queue_size - queued`, and never more than `queue_size`.
//!
//! Unlike the Java client, a grant that would leave `outstanding` at or below zero is held
//! back (and sent whole later): a per-message broker could not use it anyway, and a broker
//! that counts permits per entry (pulsar-lite) would otherwise keep over-sending.

use std::fmt;

/// The broker's behaviour made our books inconsistent (a protocol violation or a bug).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermitError {
    /// The application took (or the consumer discarded) more messages than were queued.
    MoreTakenThanQueued {
        /// Messages taken.
        taken: u32,
        /// Messages that were queued.
        queued: u32,
    },
    /// Counters would overflow (more than `u32::MAX` queued messages).
    Overflow,
}

impl fmt::Display for PermitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MoreTakenThanQueued { taken, queued } => write!(
                f,
                "flow permits: {taken} messages taken but only {queued} queued"
            ),
            Self::Overflow => f.write_str("flow permits: counter overflow"),
        }
    }
}

impl std::error::Error for PermitError {}

/// Flow-permit bookkeeping for one consumer on one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowPermits {
    queue_size: u32,
    refill_threshold: u32,
    outstanding: i64,
    queued: u32,
    pending: u32,
}

impl FlowPermits {
    /// Permits for a receiver queue of `receiver_queue_size` messages.
    ///
    /// A size of 0 (Java's "zero queue" consumer, which asks for one message per receive) is
    /// not modelled here and is treated as 1.
    pub fn new(receiver_queue_size: u32) -> Self {
        let queue_size = receiver_queue_size.max(1);
        Self {
            queue_size,
            refill_threshold: (queue_size / 2).max(1),
            outstanding: i64::from(queue_size),
            queued: 0,
            pending: 0,
        }
    }

    /// The receiver queue size.
    pub fn queue_size(&self) -> u32 {
        self.queue_size
    }

    /// Permits to send in the first `Flow` after subscribing: the whole queue.
    pub fn initial_grant(&self) -> u32 {
        self.queue_size
    }

    /// Permits the broker still holds (negative after a batch overshoot).
    pub fn outstanding(&self) -> i64 {
        self.outstanding
    }

    /// Messages received and not yet taken by the application.
    pub fn queued(&self) -> u32 {
        self.queued
    }

    /// Messages taken by the application whose permits are not granted back yet.
    pub fn pending(&self) -> u32 {
        self.pending
    }

    /// The broker delivered `n` messages (a batch entry counts its `num_messages_in_batch`).
    pub fn on_messages_received(&mut self, n: u32) -> Result<(), PermitError> {
        let queued = self.queued.checked_add(n).ok_or(PermitError::Overflow)?;
        self.outstanding = self
            .outstanding
            .checked_sub(i64::from(n))
            .ok_or(PermitError::Overflow)?;
        self.queued = queued;
        Ok(())
    }

    /// The application took `n` queued messages. Returns the permits to grant now, if the
    /// returned-but-not-granted count reached half the queue.
    pub fn on_message_delivered_to_app(&mut self, n: u32) -> Result<Option<u32>, PermitError> {
        self.release(n)
    }

    /// `n` queued messages were dropped without reaching the application (e.g. already
    /// acknowledged batch indexes, a bad checksum, expired). Their permits come back too,
    /// otherwise the broker would slowly run out of permits and stall.
    pub fn on_messages_discarded(&mut self, n: u32) -> Result<Option<u32>, PermitError> {
        self.release(n)
    }

    /// After a reconnect the broker has forgotten our permits. The caller must have cleared
    /// its receive queue (those messages will be redelivered); this starts over and returns
    /// the full grant to send with the new subscription.
    pub fn on_reconnect(&mut self) -> u32 {
        *self = Self::new(self.queue_size);
        self.initial_grant()
    }

    fn release(&mut self, n: u32) -> Result<Option<u32>, PermitError> {
        let queued = self
            .queued
            .checked_sub(n)
            .ok_or(PermitError::MoreTakenThanQueued {
                taken: n,
                queued: self.queued,
            })?;
        // pending + queued <= queue_size + overshoot <= u32::MAX, so this cannot overflow
        // once the subtraction above succeeded; stay checked anyway.
        let pending = self.pending.checked_add(n).ok_or(PermitError::Overflow)?;
        self.queued = queued;
        self.pending = pending;
        // Withheld while the broker overshot by more than we could give back: a grant that
        // leaves its count at or below zero lets it send nothing on a per-message broker (the
        // sum is what counts there, so nothing is lost by waiting), while a broker that counts
        // permits per entry (pulsar-lite) would take it as leave to send whole entries more.
        if self.pending >= self.refill_threshold && self.outstanding + i64::from(self.pending) > 0 {
            let grant = self.pending;
            self.outstanding = self
                .outstanding
                .checked_add(i64::from(grant))
                .ok_or(PermitError::Overflow)?;
            self.pending = 0;
            Ok(Some(grant))
        } else {
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn invariant(p: &FlowPermits) {
        assert_eq!(
            p.outstanding + i64::from(p.queued) + i64::from(p.pending),
            i64::from(p.queue_size)
        );
    }

    #[test]
    fn initial_grant_is_queue_size() {
        let p = FlowPermits::new(1000);
        assert_eq!(p.initial_grant(), 1000);
        assert_eq!(p.outstanding(), 1000);
        invariant(&p);
    }

    #[test]
    fn refills_at_half() {
        let mut p = FlowPermits::new(10);
        p.on_messages_received(10).unwrap();
        for _ in 0..4 {
            assert_eq!(p.on_message_delivered_to_app(1).unwrap(), None);
            invariant(&p);
        }
        assert_eq!(p.on_message_delivered_to_app(1).unwrap(), Some(5));
        assert_eq!((p.outstanding(), p.queued(), p.pending()), (5, 5, 0));
        invariant(&p);
    }

    #[test]
    fn batch_counts_its_messages_and_may_overshoot() {
        let mut p = FlowPermits::new(4);
        p.on_messages_received(3).unwrap();
        // The broker still holds 1 permit and sends a batch of 10.
        p.on_messages_received(10).unwrap();
        assert_eq!(p.outstanding(), -9);
        invariant(&p);
        assert_eq!(p.on_message_delivered_to_app(13).unwrap(), Some(13));
        assert_eq!(p.outstanding(), 4);
        invariant(&p);
    }

    #[test]
    fn grants_are_withheld_while_the_broker_is_overshot() {
        let mut p = FlowPermits::new(10);
        // A broker counting per entry sends three entries of 10 on 10 permits.
        p.on_messages_received(30).unwrap();
        assert_eq!(p.outstanding(), -20);
        // Half a queue taken three times over: still nothing owed to the broker.
        for _ in 0..4 {
            assert_eq!(p.on_message_delivered_to_app(5).unwrap(), None);
            invariant(&p);
        }
        assert_eq!(p.pending(), 20);
        // The next half makes the broker's count positive: everything pending goes at once.
        assert_eq!(p.on_message_delivered_to_app(5).unwrap(), Some(25));
        assert_eq!((p.outstanding(), p.queued(), p.pending()), (5, 5, 0));
        invariant(&p);
    }

    #[test]
    fn queue_of_one_grants_every_message() {
        let mut p = FlowPermits::new(1);
        p.on_messages_received(1).unwrap();
        assert_eq!(p.on_message_delivered_to_app(1).unwrap(), Some(1));
        let mut z = FlowPermits::new(0);
        assert_eq!(z.initial_grant(), 1);
        z.on_messages_received(1).unwrap();
        assert_eq!(z.on_messages_discarded(1).unwrap(), Some(1));
    }

    #[test]
    fn taking_more_than_queued_is_an_error_and_changes_nothing() {
        let mut p = FlowPermits::new(10);
        p.on_messages_received(2).unwrap();
        let before = p.clone();
        assert_eq!(
            p.on_message_delivered_to_app(3),
            Err(PermitError::MoreTakenThanQueued {
                taken: 3,
                queued: 2
            })
        );
        assert_eq!(p, before);
        assert_eq!(p.on_messages_received(u32::MAX), Err(PermitError::Overflow));
        assert_eq!(p, before);
    }

    #[test]
    fn reconnect_resets() {
        let mut p = FlowPermits::new(100);
        p.on_messages_received(70).unwrap();
        p.on_message_delivered_to_app(10).unwrap();
        assert_eq!(p.on_reconnect(), 100);
        assert_eq!((p.outstanding(), p.queued(), p.pending()), (100, 0, 0));
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// The broker sends one entry of this many messages, if it holds a permit.
        BrokerSends(u32),
        /// The application takes up to this many queued messages.
        AppTakes(u32),
        /// The consumer discards up to this many queued messages.
        Discard(u32),
        Reconnect,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1u32..20).prop_map(Op::BrokerSends),
            4 => (1u32..20).prop_map(Op::AppTakes),
            1 => (1u32..5).prop_map(Op::Discard),
            1 => Just(Op::Reconnect),
        ]
    }

    proptest! {
        /// A model broker that honours permits (sending a whole batch while it holds any)
        /// is never owed more than the queue size, agrees with our books, and never stalls
        /// once the queue has drained.
        #[test]
        fn broker_never_owed_more_than_queue_size(
            queue_size in 1u32..200,
            ops in proptest::collection::vec(op(), 1..300),
        ) {
            let mut p = FlowPermits::new(queue_size);
            let mut broker: i64 = i64::from(p.initial_grant());
            for op in ops {
                match op {
                    Op::BrokerSends(n) => {
                        if broker > 0 {
                            broker -= i64::from(n);
                            p.on_messages_received(n).unwrap();
                        }
                    }
                    Op::AppTakes(n) | Op::Discard(n) => {
                        let n = n.min(p.queued());
                        let grant = if matches!(op, Op::AppTakes(_)) {
                            p.on_message_delivered_to_app(n).unwrap()
                        } else {
                            p.on_messages_discarded(n).unwrap()
                        };
                        if let Some(g) = grant {
                            prop_assert!(g > 0);
                            broker += i64::from(g);
                        }
                    }
                    Op::Reconnect => {
                        broker = i64::from(p.on_reconnect());
                    }
                }
                prop_assert_eq!(broker, p.outstanding());
                prop_assert!(broker <= i64::from(queue_size));
                prop_assert!(broker + i64::from(p.queued()) <= i64::from(queue_size));
                prop_assert_eq!(
                    p.outstanding() + i64::from(p.queued()) + i64::from(p.pending()),
                    i64::from(queue_size)
                );
                if p.queued() == 0 {
                    prop_assert!(broker > 0, "drained queue but the broker holds no permit");
                }
            }
        }
    }
}
