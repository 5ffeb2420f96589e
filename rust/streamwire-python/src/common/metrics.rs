//! Metrics for Python: one snapshot as a dict with stable keys, the whole registry as a list
//! of such dicts (for `streamwire.metrics` and its OpenTelemetry bridge), and the Prometheus
//! text rendered by the engine.
//!
//! Why here: every protocol's `metrics()` method returns the same dict shape, so the mapping
//! from engine snapshots to keys is written once. The key list is documented in README.md
//! ("Metrics") and in `python/streamwire/metrics.py`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use streamwire_core::metrics::{self, EntityMetrics, Kind, Snapshot, G};

/// The dict of one snapshot: labels, then the counters, gauges and latency of its kind.
pub fn snapshot_dict<'py>(py: Python<'py>, s: &Snapshot) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let kind = s.labels.kind;
    d.set_item("protocol", s.labels.protocol)?;
    d.set_item("kind", kind.as_str())?;
    d.set_item("client_id", s.labels.client)?;
    if kind != Kind::Client {
        d.set_item("topic", &s.labels.topic)?;
        d.set_item("name", &s.labels.name)?;
    }
    for c in kind.counters() {
        d.set_item(c.as_str(), s.counter(*c))?;
    }
    for g in kind.gauges() {
        d.set_item(g.as_str(), s.gauge(*g))?;
    }
    if kind.has_latency() {
        let l = &s.latency;
        d.set_item("send_latency_count", l.count())?;
        d.set_item("send_latency_sum_seconds", l.sum_us as f64 / 1e6)?;
        d.set_item("send_latency_p50_ms", l.quantile_us(0.5) / 1e3)?;
        d.set_item("send_latency_p95_ms", l.quantile_us(0.95) / 1e3)?;
        d.set_item("send_latency_p99_ms", l.quantile_us(0.99) / 1e3)?;
        d.set_item("send_latency_max_ms", l.max_us as f64 / 1e3)?;
    }
    Ok(d)
}

/// A client's dict: its own counters plus the totals of everything it created (closed
/// producers, consumers, writers and readers included).
pub fn client_dict<'py>(py: Python<'py>, client: &EntityMetrics) -> PyResult<Bound<'py, PyDict>> {
    snapshot_dict(py, &metrics::client_snapshot(client))
}

/// Install the client's scrape-time gauge: bytes held against its memory limit.
pub fn sample_budget(client: &EntityMetrics, budget: &streamwire_core::budget::MemoryBudget) {
    let b = budget.clone();
    client.set_sampler(Box::new(move |g| {
        g[G::PendingBytes as usize] = Some(i64::try_from(b.used()).unwrap_or(i64::MAX));
    }));
}

/// Every live client, producer, consumer, reader and writer of this process, as dicts.
#[pyfunction]
pub fn _metrics_snapshot(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for s in metrics::snapshot_all() {
        out.append(snapshot_dict(py, &s)?)?;
    }
    Ok(out)
}

/// The same, in Prometheus text exposition format 0.0.4.
#[pyfunction]
pub fn _metrics_prometheus_text(py: Python<'_>) -> String {
    py.detach(metrics::prometheus_text)
}
