//! Producer counters and send-latency percentiles, kept in the producer's metric cells.
//!
//! Why a thin wrapper: the cells live in `streamwire_core::metrics` (so they are exported as
//! Prometheus text and through `metrics()`), and `stats()` keeps its older dict on top of
//! them. Recording is lock-free; percentiles are estimated from the histogram's log-spaced
//! buckets (within a few percent), over every receipt since the producer started.

use std::sync::Arc;
use std::time::Duration;

use streamwire_core::metrics::{EntityMetrics, C};

pub struct Stats {
    metrics: Arc<EntityMetrics>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StatsSnapshot {
    pub sent: u64,
    pub failed: u64,
    pub bytes: u64,
    pub entries: u64,
    pub reconnects: u64,
    pub pending: usize,
    /// Publish latency in milliseconds (p50, p95, p99, max), estimated from the histogram.
    pub latency_ms: [f64; 4],
}

impl Stats {
    pub fn new(metrics: Arc<EntityMetrics>) -> Stats {
        Stats { metrics }
    }

    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.metrics
    }

    /// One receipt: `messages` messages of `bytes` payload bytes in one entry.
    pub fn on_acked(&self, messages: u64, bytes: u64, latency: Duration) {
        let m = &self.metrics;
        m.add(C::Messages, messages);
        m.add(C::Bytes, bytes);
        m.add(C::Batches, 1);
        m.record_latency(latency);
    }

    pub fn on_failed(&self, messages: u64) {
        self.metrics.add(C::Errors, messages);
    }

    pub fn on_reconnect(&self) {
        self.metrics.add(C::Reconnects, 1);
    }

    pub fn snapshot(&self, pending: usize) -> StatsSnapshot {
        let s = self.metrics.snapshot();
        let ms = |q: f64| s.latency.quantile_us(q) / 1000.0;
        StatsSnapshot {
            sent: s.counter(C::Messages),
            failed: s.counter(C::Errors),
            bytes: s.counter(C::Bytes),
            entries: s.counter(C::Batches),
            reconnects: s.counter(C::Reconnects),
            pending,
            latency_ms: [ms(0.5), ms(0.95), ms(0.99), ms(1.0)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streamwire_core::metrics::{next_client_id, Kind, Labels};

    #[test]
    fn percentiles_over_latencies() {
        let s = Stats::new(EntityMetrics::register(Labels {
            protocol: "pulsar",
            kind: Kind::Producer,
            client: next_client_id(),
            topic: "t".into(),
            name: String::new(),
        }));
        for ms in 1..=100u64 {
            s.on_acked(10, 100, Duration::from_millis(ms));
        }
        s.on_failed(3);
        let snap = s.snapshot(5);
        assert_eq!(snap.sent, 1000);
        assert_eq!(snap.failed, 3);
        assert_eq!(snap.entries, 100);
        assert_eq!(snap.pending, 5);
        assert!((snap.latency_ms[0] - 50.0).abs() <= 5.0, "{snap:?}");
        assert_eq!(snap.latency_ms[3], 100.0);
    }
}
