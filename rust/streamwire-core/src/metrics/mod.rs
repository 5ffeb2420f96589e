//! Client metrics: counters, gauges and a latency histogram per client, producer, consumer,
//! reader and writer, in one process-wide registry read as snapshots and rendered as
//! Prometheus text.
//!
//! Why this shape: the hot path (a send, a receipt, a delivered batch) must pay one relaxed
//! `fetch_add` per event and nothing else — no lock, no allocation, no map lookup — so each
//! entity owns a fixed array of atomic cells indexed by [`C`] and [`G`], created once with the
//! entity. The registry is touched only when an entity is created, dropped or scraped, and it
//! holds `Weak` references so it never keeps a closed producer alive.
//!
//! What happens to a closed entity: its own series vanish from the exposition when it is
//! dropped (the usual Prometheus life of a short-lived label set), and its totals are folded
//! into its client's totals (`streamwire_client_*_total`, `client.metrics()`), so the
//! per-client counters never go backwards.
//!
//! Gauges that the entity already tracks elsewhere (pending messages, queue depth) are read
//! at scrape time through a sampler the entity installs, so they cost nothing per message.

pub mod histogram;
pub mod prometheus;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

pub use histogram::{Histogram, HistogramSnapshot};

/// A monotonically increasing count (relaxed atomic).
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Add `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down (relaxed atomic).
#[derive(Debug, Default)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// Set the value.
    #[inline]
    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }
    /// Add `d` (may be negative).
    #[inline]
    pub fn add(&self, d: i64) {
        self.0.fetch_add(d, Ordering::Relaxed);
    }
    /// The current value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What an entity is; decides which series it exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// A client (connections, lookups, and the totals of everything it created).
    Client,
    /// A Pulsar or TANK producer.
    Producer,
    /// A Pulsar or TANK consumer.
    Consumer,
    /// A Pravega reader.
    Reader,
    /// A Pravega writer.
    Writer,
}

impl Kind {
    /// The name used in metric names and dicts.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Client => "client",
            Kind::Producer => "producer",
            Kind::Consumer => "consumer",
            Kind::Reader => "reader",
            Kind::Writer => "writer",
        }
    }

    /// Every kind, in exposition order.
    pub const ALL: [Kind; 5] = [
        Kind::Client,
        Kind::Producer,
        Kind::Consumer,
        Kind::Reader,
        Kind::Writer,
    ];

    fn sends(self) -> bool {
        matches!(self, Kind::Producer | Kind::Writer)
    }

    /// The counters this kind exports, in order.
    pub fn counters(self) -> &'static [C] {
        match self {
            Kind::Client => &[
                C::Connections,
                C::Lookups,
                C::Reconnects,
                C::MessagesSent,
                C::BytesSent,
                C::MessagesReceived,
                C::BytesReceived,
            ],
            Kind::Producer | Kind::Writer => {
                &[C::Messages, C::Bytes, C::Batches, C::Errors, C::Reconnects]
            }
            Kind::Consumer => &[
                C::Messages,
                C::Bytes,
                C::Batches,
                C::Acks,
                C::Nacks,
                C::Redeliveries,
                C::DeadLettered,
                C::Reconnects,
            ],
            Kind::Reader => &[C::Messages, C::Bytes, C::Batches, C::Reconnects],
        }
    }

    /// The gauges this kind exports, in order.
    pub fn gauges(self) -> &'static [G] {
        match self {
            Kind::Client => &[G::PendingBytes],
            Kind::Producer | Kind::Writer => &[G::PendingMessages],
            Kind::Consumer | Kind::Reader => &[G::ReceiveQueue],
        }
    }

    /// Whether this kind exports the send-latency histogram.
    pub fn has_latency(self) -> bool {
        self.sends()
    }
}

/// Counter cells. Which ones an entity exports depends on its [`Kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum C {
    /// Messages sent and acknowledged by the broker (senders) or received (receivers).
    Messages,
    /// Payload bytes of those messages.
    Bytes,
    /// Batches / entries / appends / fetched frames carrying the messages.
    Batches,
    /// Messages whose send failed.
    Errors,
    /// Times the entity lost its connection and re-established it.
    Reconnects,
    /// Acknowledgements sent.
    Acks,
    /// Negative acknowledgements.
    Nacks,
    /// Redeliveries requested from the broker.
    Redeliveries,
    /// Messages moved to a dead-letter topic.
    DeadLettered,
    /// Topic lookups (client).
    Lookups,
    /// Connections opened (client).
    Connections,
    /// Totals over the client's senders, closed ones included (client).
    MessagesSent,
    /// Totals over the client's senders, closed ones included (client).
    BytesSent,
    /// Totals over the client's receivers, closed ones included (client).
    MessagesReceived,
    /// Totals over the client's receivers, closed ones included (client).
    BytesReceived,
}

/// Number of counter cells.
pub const NC: usize = 15;

impl C {
    /// The name used in dicts; Prometheus adds `_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            C::Messages => "messages",
            C::Bytes => "bytes",
            C::Batches => "batches",
            C::Errors => "errors",
            C::Reconnects => "reconnects",
            C::Acks => "acks",
            C::Nacks => "nacks",
            C::Redeliveries => "redeliveries",
            C::DeadLettered => "dead_lettered",
            C::Lookups => "lookups",
            C::Connections => "connections",
            C::MessagesSent => "messages_sent",
            C::BytesSent => "bytes_sent",
            C::MessagesReceived => "messages_received",
            C::BytesReceived => "bytes_received",
        }
    }

    /// The `# HELP` text.
    pub fn help(self) -> &'static str {
        match self {
            C::Messages => "Messages acknowledged by the broker (senders) or received (receivers).",
            C::Bytes => "Payload bytes of those messages.",
            C::Batches => "Batches, entries, appends or fetched chunks carrying the messages.",
            C::Errors => "Messages whose send failed.",
            C::Reconnects => "Times the connection was lost and re-established.",
            C::Acks => "Acknowledgements.",
            C::Nacks => "Negative acknowledgements.",
            C::Redeliveries => "Redeliveries requested from the broker.",
            C::DeadLettered => "Messages moved to the dead-letter topic.",
            C::Lookups => "Topic lookups.",
            C::Connections => "Connections opened.",
            C::MessagesSent => "Messages sent by this client's producers and writers, closed ones included.",
            C::BytesSent => "Payload bytes sent by this client's producers and writers, closed ones included.",
            C::MessagesReceived => "Messages received by this client's consumers and readers, closed ones included.",
            C::BytesReceived => "Payload bytes received by this client's consumers and readers, closed ones included.",
        }
    }
}

/// Gauge cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum G {
    /// Messages accepted and not yet acknowledged or failed.
    PendingMessages,
    /// Payload bytes of those messages.
    PendingBytes,
    /// Messages received and waiting for the application.
    ReceiveQueue,
}

/// Number of gauge cells.
pub const NG: usize = 3;

impl G {
    /// The name used in dicts and in Prometheus.
    pub fn as_str(self) -> &'static str {
        match self {
            G::PendingMessages => "pending_messages",
            G::PendingBytes => "pending_bytes",
            G::ReceiveQueue => "receive_queue",
        }
    }

    /// The `# HELP` text.
    pub fn help(self) -> &'static str {
        match self {
            G::PendingMessages => "Messages accepted and not yet acknowledged or failed.",
            G::PendingBytes => {
                "Payload bytes of pending messages held against the client's memory limit."
            }
            G::ReceiveQueue => "Messages received and not yet handed to the application.",
        }
    }
}

/// The labels of one entity's series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    /// `pulsar`, `tank` or `pravega`.
    pub protocol: &'static str,
    /// What the entity is.
    pub kind: Kind,
    /// The owning client's process-unique id ([`next_client_id`]).
    pub client: u64,
    /// Topic or stream (empty for a client).
    pub topic: String,
    /// Producer, consumer or reader name (may be set later, e.g. a broker-assigned name).
    pub name: String,
}

/// Gauge values an entity computes at scrape time (`None`: use the cell).
pub type Sampler = Box<dyn Fn(&mut [Option<i64>; NG]) + Send + Sync>;

/// One entity's metric cells.
pub struct EntityMetrics {
    protocol: &'static str,
    kind: Kind,
    client: u64,
    topic: String,
    name: Mutex<String>,
    counters: [Counter; NC],
    gauges: [Gauge; NG],
    latency: Histogram,
    sampler: OnceLock<Sampler>,
}

impl std::fmt::Debug for EntityMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntityMetrics")
            .field("kind", &self.kind)
            .field("topic", &self.topic)
            .finish()
    }
}

impl EntityMetrics {
    /// Create an entity's cells and register them (weakly) in the process registry.
    pub fn register(labels: Labels) -> Arc<EntityMetrics> {
        let m = Arc::new(EntityMetrics {
            protocol: labels.protocol,
            kind: labels.kind,
            client: labels.client,
            topic: labels.topic,
            name: Mutex::new(labels.name),
            counters: std::array::from_fn(|_| Counter::default()),
            gauges: std::array::from_fn(|_| Gauge::default()),
            latency: Histogram::default(),
            sampler: OnceLock::new(),
        });
        let mut r = registry();
        r.entities.retain(|w| w.strong_count() > 0);
        r.entities.push(Arc::downgrade(&m));
        m
    }

    /// A counter cell.
    #[inline]
    pub fn counter(&self, c: C) -> &Counter {
        &self.counters[c as usize]
    }

    /// Add `n` to a counter (the hot-path call).
    #[inline]
    pub fn add(&self, c: C, n: u64) {
        self.counters[c as usize].add(n);
    }

    /// A gauge cell.
    #[inline]
    pub fn gauge(&self, g: G) -> &Gauge {
        &self.gauges[g as usize]
    }

    /// Record one send latency (enqueue to receipt).
    #[inline]
    pub fn record_latency(&self, d: Duration) {
        self.latency.record(d);
    }

    /// Install the scrape-time gauge sampler (only the first call takes effect).
    pub fn set_sampler(&self, s: Sampler) {
        let _ = self.sampler.set(s);
    }

    /// Set the name label (e.g. once the broker assigned a producer name).
    pub fn set_name(&self, name: &str) {
        let mut n = self.name.lock().unwrap_or_else(|p| p.into_inner());
        if n.as_str() != name {
            *n = name.to_string();
        }
    }

    /// The owning client's id.
    pub fn client(&self) -> u64 {
        self.client
    }

    /// What the entity is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// A point-in-time copy of the cells (gauges sampled now).
    pub fn snapshot(&self) -> Snapshot {
        let mut sampled = [None; NG];
        if let Some(s) = self.sampler.get() {
            s(&mut sampled);
        }
        Snapshot {
            labels: Labels {
                protocol: self.protocol,
                kind: self.kind,
                client: self.client,
                topic: self.topic.clone(),
                name: self.name.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            },
            counters: std::array::from_fn(|i| self.counters[i].get()),
            gauges: std::array::from_fn(|i| sampled[i].unwrap_or_else(|| self.gauges[i].get())),
            latency: self.latency.snapshot(),
        }
    }
}

impl Drop for EntityMetrics {
    fn drop(&mut self) {
        // Fold this entity's totals into its client's retired totals (counters never go
        // backwards at the client level). Never called with the registry lock held: scrapes
        // upgrade under the lock but drop their `Arc`s after releasing it.
        let mut r = registry();
        if self.kind == Kind::Client {
            // The client is gone: so are the totals kept for it (bounded memory for
            // processes that create many clients).
            let (p, c) = (self.protocol, self.client);
            r.retired.retain(|k, _| (k.0, k.2) != (p, c));
            return;
        }
        let counters: [u64; NC] = std::array::from_fn(|i| self.counters[i].get());
        let latency = self.latency.snapshot();
        let t = r
            .retired
            .entry((self.protocol, self.kind, self.client))
            .or_default();
        for (a, b) in t.counters.iter_mut().zip(counters.iter()) {
            *a += b;
        }
        t.latency.merge(&latency);
    }
}

/// A point-in-time copy of one entity.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Its labels.
    pub labels: Labels,
    /// Every counter cell, indexed by `C as usize`.
    pub counters: [u64; NC],
    /// Every gauge cell, indexed by `G as usize`.
    pub gauges: [i64; NG],
    /// The send-latency histogram (empty for receivers).
    pub latency: HistogramSnapshot,
}

impl Snapshot {
    /// A counter's value.
    pub fn counter(&self, c: C) -> u64 {
        self.counters[c as usize]
    }
    /// A gauge's value.
    pub fn gauge(&self, g: G) -> i64 {
        self.gauges[g as usize]
    }

    /// Add another entity's values (e.g. the partitions of one producer); labels stay.
    pub fn merge(&mut self, other: &Snapshot) {
        for (a, b) in self.counters.iter_mut().zip(other.counters.iter()) {
            *a += b;
        }
        for (a, b) in self.gauges.iter_mut().zip(other.gauges.iter()) {
            *a += b;
        }
        self.latency.merge(&other.latency);
    }

    /// Merge snapshots of several entities (partitions) into one; `None` if empty.
    pub fn merged(snaps: impl IntoIterator<Item = Snapshot>) -> Option<Snapshot> {
        let mut it = snaps.into_iter();
        let mut first = it.next()?;
        for s in it {
            first.merge(&s);
        }
        Some(first)
    }
}

#[derive(Default)]
struct Retired {
    counters: [u64; NC],
    latency: HistogramSnapshot,
}

#[derive(Default)]
struct Registry {
    entities: Vec<Weak<EntityMetrics>>,
    retired: HashMap<(&'static str, Kind, u64), Retired>,
}

fn registry() -> MutexGuard<'static, Registry> {
    static R: OnceLock<Mutex<Registry>> = OnceLock::new();
    R.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// A process-unique client id (the `client` label).
pub fn next_client_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn live() -> Vec<Arc<EntityMetrics>> {
    let mut r = registry();
    r.entities.retain(|w| w.strong_count() > 0);
    r.entities.iter().filter_map(Weak::upgrade).collect()
    // The guard is released here, before the caller drops the `Arc`s (see `Drop`).
}

/// Fill a client snapshot's totals from the live entities and the retired totals.
fn fill_client_totals(client: &mut Snapshot, others: &[Snapshot]) {
    let key = (client.labels.protocol, client.labels.client);
    let mut add = |kind: Kind, counters: &[u64; NC]| {
        let (m, b) = if kind.sends() {
            (C::MessagesSent, C::BytesSent)
        } else {
            (C::MessagesReceived, C::BytesReceived)
        };
        client.counters[m as usize] += counters[C::Messages as usize];
        client.counters[b as usize] += counters[C::Bytes as usize];
        client.counters[C::Reconnects as usize] += counters[C::Reconnects as usize];
    };
    for s in others {
        if s.labels.kind != Kind::Client && (s.labels.protocol, s.labels.client) == key {
            add(s.labels.kind, &s.counters);
        }
    }
    let r = registry();
    for ((p, kind, c), t) in r.retired.iter() {
        if *kind != Kind::Client && (*p, *c) == key {
            add(*kind, &t.counters);
        }
    }
}

/// Snapshots of every live entity, clients first, with the clients' totals filled in.
pub fn snapshot_all() -> Vec<Snapshot> {
    let entities = live();
    let mut snaps: Vec<Snapshot> = entities.iter().map(|e| e.snapshot()).collect();
    drop(entities);
    let others: Vec<Snapshot> = snaps
        .iter()
        .filter(|s| s.labels.kind != Kind::Client)
        .cloned()
        .collect();
    for s in snaps.iter_mut().filter(|s| s.labels.kind == Kind::Client) {
        fill_client_totals(s, &others);
    }
    snaps.sort_by(|a, b| {
        (a.labels.kind, a.labels.client, &a.labels.topic).cmp(&(
            b.labels.kind,
            b.labels.client,
            &b.labels.topic,
        ))
    });
    snaps
}

/// The snapshot of one client entity with its totals (live and closed entities) filled in.
pub fn client_snapshot(client: &EntityMetrics) -> Snapshot {
    let mut s = client.snapshot();
    let entities = live();
    let others: Vec<Snapshot> = entities
        .iter()
        .filter(|e| e.kind != Kind::Client && e.client == client.client)
        .map(|e| e.snapshot())
        .collect();
    drop(entities);
    fill_client_totals(&mut s, &others);
    s
}

/// The whole registry in Prometheus text exposition format 0.0.4.
pub fn prometheus_text() -> String {
    prometheus::render(&snapshot_all())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kind: Kind, client: u64, topic: &str) -> Labels {
        Labels {
            protocol: "test",
            kind,
            client,
            topic: topic.into(),
            name: String::new(),
        }
    }

    #[test]
    fn closed_entities_fold_into_client_totals() {
        let id = next_client_id();
        let client = EntityMetrics::register(labels(Kind::Client, id, ""));
        let p = EntityMetrics::register(labels(Kind::Producer, id, "t"));
        p.add(C::Messages, 10);
        p.add(C::Bytes, 100);
        p.add(C::Reconnects, 1);
        let c = EntityMetrics::register(labels(Kind::Consumer, id, "t"));
        c.add(C::Messages, 7);
        let s = client_snapshot(&client);
        assert_eq!(s.counter(C::MessagesSent), 10);
        assert_eq!(s.counter(C::BytesSent), 100);
        assert_eq!(s.counter(C::MessagesReceived), 7);
        assert_eq!(s.counter(C::Reconnects), 1);
        drop(p);
        let s2 = client_snapshot(&client);
        assert_eq!(
            s2.counter(C::MessagesSent),
            10,
            "kept after the producer closed"
        );
        assert!(!snapshot_all()
            .iter()
            .any(|s| s.labels.client == id && s.labels.kind == Kind::Producer));
        assert!(snapshot_all()
            .iter()
            .any(|s| s.labels.client == id && s.labels.kind == Kind::Consumer));
        drop(c);
        drop(client);
        let r = registry();
        assert!(
            !r.retired.keys().any(|k| k.2 == id),
            "dropped with the client"
        );
    }

    #[test]
    fn sampler_overrides_gauge_cells() {
        let e = EntityMetrics::register(labels(Kind::Producer, next_client_id(), "t"));
        e.gauge(G::PendingBytes).set(5);
        e.set_sampler(Box::new(|g| g[G::PendingMessages as usize] = Some(42)));
        let s = e.snapshot();
        assert_eq!(s.gauge(G::PendingMessages), 42);
        assert_eq!(s.gauge(G::PendingBytes), 5);
    }
}
