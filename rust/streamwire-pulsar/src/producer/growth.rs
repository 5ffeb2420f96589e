//! A partitioned producer following its topic's partition count, as Java's
//! `PartitionedProducerImpl` does with `autoUpdatePartitions`: every interval one metadata
//! lookup for the topic (not one per partition); partitions it gained get producers (at once,
//! or at their first send with lazy start) and only then join the routing, so no message is
//! routed to a partition without a producer. Existing partition producers are untouched:
//! their sends neither fail nor reorder while partitions are added. A smaller answer is
//! ignored (Pulsar cannot take partitions away; a deleted topic answers 0).

use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use streamwire_core::error::Result;
use streamwire_core::log::{event, Level};
use streamwire_core::periodic;

use super::partitioned::Shared;
use super::Producer;

/// The partition indices to add when the producer has `have` and the topic now has `count`
/// (None: nothing to add, a shrinking or zero answer included).
pub(super) fn added(have: u32, count: u32) -> Option<Range<u32>> {
    (count > have).then_some(have..count)
}

/// Check every `period` (first after one period) until the producer is dropped or closed.
pub(super) fn watch(shared: Weak<Shared>, period: Duration) {
    periodic::every(shared, period, |s| async move {
        if s.closed.load(Ordering::Acquire) {
            return false;
        }
        let topic = || vec![("topic", s.topic.to_string())];
        match s.grow().await {
            Ok(0) => {}
            Ok(n) => event(Level::Info, "pulsar.producer", || {
                (format!("producer writes to {n} new partition(s)"), topic())
            }),
            // A failed round (broker away, a partition refused) is tried again next tick;
            // the producer keeps writing to the partitions it has.
            Err(e) => event(Level::Warning, "pulsar.producer", || {
                (
                    format!("checking for new partitions failed ({e}); again later"),
                    topic(),
                )
            }),
        }
        true
    });
}

impl Shared {
    /// One round: look the partition count up, create producers for the new partitions,
    /// then publish them (the router sees the new count from then on). The number added.
    pub(super) async fn grow(&self) -> Result<usize> {
        let _m = self.membership.lock().await;
        if self.closed.load(Ordering::Acquire) {
            return Ok(0);
        }
        let have = self.snapshot().len() as u32;
        let count = self.client.partitions(&self.topic).await?;
        let Some(new) = added(have, count) else {
            return Ok(0);
        };
        let mut made: Vec<Producer> = Vec::with_capacity(new.len());
        for i in new {
            let topic = self.topic.partition(i);
            let config = Arc::clone(&self.config);
            let budget = self.budget.clone();
            if self.config.lazy_start {
                made.push(Producer::create_lazy(
                    self.client.clone(),
                    topic,
                    config,
                    budget,
                ));
                continue;
            }
            match Producer::create(self.client.clone(), topic, config, budget).await {
                Ok(p) => made.push(p),
                Err(e) => {
                    // All or nothing, as Java: the next round tries every new one again.
                    for p in &made {
                        let _ = p.close().await;
                    }
                    return Err(e);
                }
            }
        }
        if self.closed.load(Ordering::Acquire) {
            for p in &made {
                let _ = p.close().await;
            }
            return Ok(0);
        }
        let n = made.len();
        let mut w = self.parts.write().unwrap_or_else(|p| p.into_inner());
        let mut all = Vec::clone(&w);
        all.extend(made);
        *w = Arc::new(all);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::added;

    #[test]
    fn only_growth_adds() {
        assert_eq!(added(2, 4), Some(2..4));
        assert_eq!(added(4, 4), None);
        // Pulsar cannot shrink a topic; a deleted one answers 0: both change nothing.
        assert_eq!(added(4, 2), None);
        assert_eq!(added(4, 0), None);
    }
}
