//! A consumer's local counters, summed over its partition consumers (`Consumer::stats`).

use std::sync::atomic::Ordering;

use super::Consumer;

/// Local counters of a consumer, summed over its partitions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerStats {
    pub received: u64,
    pub acked: u64,
    pub nacked: u64,
    pub skipped: u64,
    pub invalid: u64,
    pub reconnects: u64,
    pub reconnect_failures: u64,
    /// The error of a partition still trying to re-subscribe, if any.
    pub reconnect_error: Option<String>,
    pub redelivery_requests: u64,
    pub dead_lettered: u64,
    pub queued: u64,
    pub partitions: u64,
}

impl Consumer {
    pub fn stats(&self) -> ConsumerStats {
        let mut st = ConsumerStats {
            partitions: self.live_slots().len() as u64,
            ..Default::default()
        };
        for s in &self.live_slots() {
            let c = &s.stats;
            st.received += c.received.load(Ordering::Relaxed);
            st.acked += c.acked.load(Ordering::Relaxed);
            st.nacked += c.nacked.load(Ordering::Relaxed);
            st.skipped += c.skipped.load(Ordering::Relaxed);
            st.invalid += c.invalid.load(Ordering::Relaxed);
            st.reconnects += c.reconnects.load(Ordering::Relaxed);
            st.reconnect_failures += c.reconnect_failures.load(Ordering::Relaxed);
            if let Some(e) = c
                .reconnect_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
            {
                st.reconnect_error.get_or_insert_with(|| e.clone());
            }
            st.redelivery_requests += c.redelivery_requests.load(Ordering::Relaxed);
            st.dead_lettered += c.dead_lettered.load(Ordering::Relaxed);
            st.queued += s.queue.len() as u64;
        }
        st
    }
}
