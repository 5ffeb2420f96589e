//! A consumer (or reader) of partitioned topics following their partition counts, as Java's
//! `MultiTopicsConsumerImpl` does with `autoUpdatePartitions`: every interval one metadata
//! lookup per partitioned topic subscribed by name; partitions a topic gained are subscribed
//! with the consumer's options, from their earliest message (see
//! `ConsumerConfig::for_grown_partitions`). Pattern subscriptions find new partitions at
//! each rediscovery instead (`pattern.rs`), and a table view runs its own check.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use streamwire_core::log::{event, Level};
use streamwire_core::periodic;

use super::Consumer;
use crate::topic::TopicName;

impl Consumer {
    /// The partition consumers it has now, over every topic (1 for one topic without
    /// partitions); it grows with the partitions its topics gain.
    pub fn num_partitions(&self) -> usize {
        self.slots()
            .iter()
            .filter(|s| !s.removed.load(Ordering::Acquire))
            .count()
    }

    /// Check `topics` (the partitioned ones subscribed) every `period` (zero: never), until
    /// the consumer is dropped or closed.
    pub(super) fn follow_growth(&self, topics: Vec<TopicName>, period: Duration) {
        if topics.is_empty() || period.is_zero() {
            return;
        }
        let topics = Arc::new(topics);
        periodic::every(Arc::downgrade(&self.inner), period, move |inner| {
            let topics = Arc::clone(&topics);
            async move {
                let c = Consumer { inner };
                for t in topics.iter() {
                    if c.is_closed() {
                        return false;
                    }
                    let topic = || vec![("topic", t.to_string())];
                    match c.add_grown_partitions(t).await {
                        Ok(0) => {}
                        Ok(n) => event(Level::Info, "pulsar.consumer", || {
                            (format!("consumer reads {n} new partition(s)"), topic())
                        }),
                        // Tried again next tick; the partitions subscribed keep delivering.
                        Err(_) if c.is_closed() => return false,
                        Err(e) => event(Level::Warning, "pulsar.consumer", || {
                            (
                                format!("checking for new partitions failed ({e}); again later"),
                                topic(),
                            )
                        }),
                    }
                }
                true
            }
        });
    }
}
