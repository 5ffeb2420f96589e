//! The producer callers use: one [`Producer`] per partition (or one for a plain topic) and
//! the router that picks a partition per message, as the Java client does.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::{Error, Result};

use super::completion::{Completion, Group};
use streamwire_core::metrics::Snapshot;

use super::{EntryOptions, Producer, ProducerConfig, StatsSnapshot};
use crate::client::PulsarClient;
use crate::engine::bulk::batch_runs;
use crate::engine::message::OutgoingMessage;
use crate::engine::routing::{
    HashingScheme, KeyHashRouter, RoundRobinRouter, SinglePartitionRouter,
    DEFAULT_PARTITION_SWITCH_FREQUENCY_BY_PUBLISH_DELAY,
};
use crate::topic::TopicName;
use bytes::Bytes;

/// How messages without a key are spread over partitions (keyed ones always go by hash).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routing {
    RoundRobin,
    Single,
    KeyHash,
}

enum Router {
    RoundRobin(RoundRobinRouter),
    Single(SinglePartitionRouter),
    KeyHash(KeyHashRouter),
}

pub struct TopicProducer {
    topic: TopicName,
    /// Shared with the partition watcher (which holds it weakly: it stops with the producer).
    shared: Arc<Shared>,
}

/// A topic producer's partitions and what adding more needs.
pub(super) struct Shared {
    /// One producer per partition, in partition order. Replaced whole (never changed in
    /// place) when partitions are added: a sender routes and sends on one snapshot, so the
    /// count its router used and the producers it indexes always agree.
    pub(super) parts: RwLock<Arc<Vec<Producer>>>,
    router: Mutex<Router>,
    pub(super) client: PulsarClient,
    pub(super) topic: TopicName,
    /// The configuration new partitions get: the producer's, with the name the first
    /// partition got (every partition's messages carry the same producer name).
    pub(super) config: Arc<ProducerConfig>,
    pub(super) budget: MemoryBudget,
    /// Serializes adding partitions with closing (see [`TopicProducer::close`]).
    pub(super) membership: tokio::sync::Mutex<()>,
    pub(super) closed: AtomicBool,
    /// The round robin of bulk sends over partitions: one batch per partition in turn
    /// (see [`TopicProducer::send_bulk`]), from a random start as the official clients.
    bulk_cursor: AtomicU32,
}

impl Shared {
    pub(super) fn snapshot(&self) -> Arc<Vec<Producer>> {
        self.parts.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The topic's partition count, retried as producer creation retries a dead owner (through a
/// proxy the metadata lookup itself answers `ServiceNotReady` until the takeover): until the
/// operation timeout, at most a second apart; then the last failure.
async fn partitions_retried(client: &PulsarClient, topic: &TopicName) -> Result<u32> {
    let deadline = std::time::Instant::now() + client.config().operation_timeout;
    let mut backoff = streamwire_core::backoff::Backoff::default();
    loop {
        match client.partitions(topic).await {
            Err(e) if crate::reconnect::retry_creation(&e) => {
                let delay = crate::reconnect::retry_delay(&mut backoff, &e);
                if std::time::Instant::now() + delay >= deadline {
                    return Err(e);
                }
                tokio::time::sleep(delay).await;
            }
            res => return res,
        }
    }
}

/// The router of a producer's `routing` over `n_parts` partitions.
fn new_router(config: &ProducerConfig, scheme: HashingScheme, n_parts: u32) -> Router {
    let mut rng = rand::rng();
    match config.routing {
        Routing::RoundRobin => Router::RoundRobin(RoundRobinRouter::for_batching(
            scheme,
            crate::engine::routing::random_start_index(n_parts, &mut rng),
            config.batching,
            config.batch.max_delay,
            DEFAULT_PARTITION_SWITCH_FREQUENCY_BY_PUBLISH_DELAY,
        )),
        Routing::Single => Router::Single(SinglePartitionRouter::random(scheme, n_parts, &mut rng)),
        Routing::KeyHash => Router::KeyHash(KeyHashRouter::new(scheme)),
    }
}

/// The partition `r` picks for a message with `key` among `n`.
fn pick(r: &mut Router, key: Option<&str>, n: u32) -> u32 {
    match r {
        Router::RoundRobin(rr) => rr.choose(key, n, now_ms()),
        Router::Single(s) => s.choose(key, n),
        Router::KeyHash(k) => k
            .choose(key, n)
            .unwrap_or_else(|| (now_ms() % n as u64) as u32),
    }
}

/// `config` with the name `first` got when it has none: the name every later partition
/// producer is created under.
fn named(config: &Arc<ProducerConfig>, first: &Producer) -> Arc<ProducerConfig> {
    match config.producer_name {
        Some(_) => Arc::clone(config),
        None => Arc::new(ProducerConfig {
            producer_name: Some(first.name()),
            ..(**config).clone()
        }),
    }
}

/// Lazily started partitions (as Java's `lazyStartPartitionedProducers`): the partition the
/// routing picks first for an unkeyed message is created now (so a bad topic, a refused
/// authorization or schema fails the creation, and it names the others), every other one at
/// its first send.
async fn lazy_partitions(
    client: &PulsarClient,
    topic: &TopicName,
    config: &Arc<ProducerConfig>,
    budget: &MemoryBudget,
    router: &mut Router,
    n: u32,
) -> Result<Vec<Producer>> {
    let first = pick(router, None, n);
    let eager = Producer::create(
        client.clone(),
        topic.partition(first),
        Arc::clone(config),
        budget.clone(),
    )
    .await?;
    let config = named(config, &eager);
    Ok((0..n)
        .map(|i| {
            if i == first {
                eager.clone()
            } else {
                Producer::create_lazy(
                    client.clone(),
                    topic.partition(i),
                    Arc::clone(&config),
                    budget.clone(),
                )
            }
        })
        .collect())
}

impl TopicProducer {
    pub async fn create(
        client: PulsarClient,
        topic: TopicName,
        config: ProducerConfig,
        budget: MemoryBudget,
    ) -> Result<TopicProducer> {
        let n = if topic.partition_index().is_some() {
            0
        } else {
            partitions_retried(&client, &topic).await?
        };
        let config = Arc::new(config);
        let scheme = HashingScheme::JavaStringHash;
        let mut router = new_router(&config, scheme, n.max(1));
        let mut partitions = Vec::new();
        let mut shared_config = Arc::clone(&config);
        if config.lazy_start && n > 1 {
            partitions = lazy_partitions(&client, &topic, &config, &budget, &mut router, n).await?;
            shared_config = named(&config, &partitions[0]);
        } else if n == 0 {
            partitions.push(
                Producer::create(
                    client.clone(),
                    topic.clone(),
                    Arc::clone(&config),
                    budget.clone(),
                )
                .await?,
            );
        } else {
            // As Java's PartitionedProducerImpl: partition 0 first, then the others under the
            // name it got (given, or assigned by the broker), so every partition's messages
            // carry the same producer name.
            for i in 0..n {
                let p = Producer::create(
                    client.clone(),
                    topic.partition(i),
                    Arc::clone(&shared_config),
                    budget.clone(),
                )
                .await;
                if let (0, Ok(first)) = (i, &p) {
                    shared_config = named(&config, first);
                }
                match p {
                    Ok(p) => partitions.push(p),
                    Err(e) => {
                        for p in &partitions {
                            let _ = p.close().await;
                        }
                        return Err(e);
                    }
                }
            }
        }
        let period = config.auto_update_partitions;
        let shared = Arc::new(Shared {
            parts: RwLock::new(Arc::new(partitions)),
            router: Mutex::new(router),
            client,
            topic: topic.clone(),
            config: shared_config,
            budget,
            membership: tokio::sync::Mutex::new(()),
            closed: AtomicBool::new(false),
            bulk_cursor: AtomicU32::new(crate::engine::routing::random_start_index(
                n.max(1),
                &mut rand::rng(),
            )),
        });
        // Only a partitioned topic can gain partitions (a plain topic never becomes one).
        if n > 0 && !period.is_zero() {
            super::growth::watch(Arc::downgrade(&shared), period);
        }
        Ok(TopicProducer { topic, shared })
    }

    /// Producers for the partitions the topic gained since this producer last looked (one
    /// metadata lookup); the number added. See [`super::growth`].
    pub async fn add_grown_partitions(&self) -> Result<usize> {
        self.shared.grow().await
    }

    pub fn topic(&self) -> &TopicName {
        &self.topic
    }

    /// The number of partition producers now (1 for a topic without partitions); it grows
    /// when the topic gains partitions.
    pub fn num_partitions(&self) -> usize {
        self.shared.snapshot().len()
    }

    /// The partition producers now, in partition order (a snapshot: partitions added later
    /// are not in it).
    pub fn partition_producers(&self) -> Arc<Vec<Producer>> {
        self.shared.snapshot()
    }

    /// The partition a message goes to, among `n`.
    fn route_in(&self, key: Option<&str>, n: usize) -> usize {
        if n == 1 {
            return 0;
        }
        let mut r = self.shared.router.lock().unwrap_or_else(|p| p.into_inner());
        pick(&mut r, key, n as u32) as usize
    }

    /// The partition a message goes to.
    pub fn route(&self, key: Option<&str>) -> usize {
        self.route_in(key, self.num_partitions())
    }

    /// The producer of the partition `msg` goes to: the one its caller's router chose, if
    /// any (checked against the partition count where it ran), else by its key.
    pub fn producer_for_msg(&self, msg: &OutgoingMessage) -> Producer {
        let parts = self.shared.snapshot();
        parts[self.index_for_msg(msg, parts.len())].clone()
    }

    /// The partition index `msg` goes to among `n` (see [`producer_for_msg`](Self::producer_for_msg)).
    fn index_for_msg(&self, msg: &OutgoingMessage, n: usize) -> usize {
        match msg.partition {
            Some(p) if (p as usize) < n => p as usize,
            _ => self.route_in(msg.key.as_deref(), n),
        }
    }

    pub async fn send(
        &self,
        msg: OutgoingMessage,
        user_sequence_id: bool,
        entry: EntryOptions,
        completion: Completion,
    ) -> Result<()> {
        let parts = self.shared.snapshot();
        let p = &parts[self.index_for_msg(&msg, parts.len())];
        p.send(msg, user_sequence_id, entry, completion).await
    }

    /// [`send`](Self::send), then send the partition's open batch at once: for a caller that
    /// waits on this message's receipt next (a blocking send, a one-message HTTP request).
    pub async fn send_now(
        &self,
        msg: OutgoingMessage,
        user_sequence_id: bool,
        entry: EntryOptions,
        completion: Completion,
    ) -> Result<()> {
        let parts = self.shared.snapshot();
        let p = &parts[self.index_for_msg(&msg, parts.len())];
        p.send(msg, user_sequence_id, entry, completion).await?;
        p.trigger_flush();
        Ok(())
    }

    /// Send every partition's open batch now (after a [`send_many`](Self::send_many) whose
    /// caller waits for the receipts).
    pub fn trigger_flush(&self) {
        for p in self.shared.snapshot().iter() {
            p.trigger_flush();
        }
    }

    /// Whether [`send_bulk`](Self::send_bulk) can take a plain bulk send: producers whose
    /// settings the bulk path handles and, for a partitioned topic, a routing it can follow
    /// batch by batch (round robin, or one partition); `key_hash` routing, which spreads
    /// unkeyed messages by the clock message by message, takes the per-message path.
    pub fn bulk_eligible(&self) -> bool {
        let parts = self.shared.snapshot();
        let routable = parts.len() == 1 || self.shared.config.routing != Routing::KeyHash;
        routable && parts.iter().all(|p| p.bulk_eligible())
    }

    /// Queue a plain bulk send (see [`Producer::send_bulk`]); callers check
    /// [`bulk_eligible`](Self::bulk_eligible) first. On a partitioned topic the payloads are
    /// split into runs of one batch each ([`batch_runs`]), handed to the partitions in turn
    /// (round robin) or all to the one partition of `single` routing: still one buffer and
    /// no per-message item, and each partition gets its messages in input order. A message
    /// above a partition's limit refuses the whole call before anything is queued; a
    /// partition that fails mid-way fails its run's rest and every later message of the call
    /// (as the non-partitioned path fails the rest), which is the error returned.
    pub async fn send_bulk(
        &self,
        packed: Arc<crate::engine::bulk::Packed>,
        group: &Arc<super::bulk::BulkGroup>,
    ) -> Result<()> {
        let parts = self.shared.snapshot();
        if parts.len() == 1 {
            return parts[0].send_bulk(packed, group).await;
        }
        let n = packed.len();
        let max_len = packed.max_len();
        if let Some(e) = parts.iter().find_map(|p| p.check_bulk(max_len).err()) {
            group.failed(n, &e);
            return Err(e);
        }
        let single = match &*self.shared.router.lock().unwrap_or_else(|p| p.into_inner()) {
            Router::Single(s) => Some(s.partition() as usize),
            _ => None,
        };
        let batch = &self.shared.config.batch;
        for (from, to) in batch_runs(&packed, batch.max_messages, batch.max_bytes) {
            let k = single.unwrap_or_else(|| {
                self.shared.bulk_cursor.fetch_add(1, Ordering::Relaxed) as usize
            }) % parts.len();
            if let Err(e) = parts[k].send_bulk_range(&packed, group, from, to).await {
                group.failed(n - to, &e);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Route and queue many messages; their results land in `group` by input position.
    ///
    /// With caller-given sequence ids, unkeyed messages go to partition `sequence_id % n`
    /// instead of round robin: a retried call then sends every message to the same partition
    /// as before, which broker deduplication needs to recognise the resends.
    pub async fn send_many(
        &self,
        msgs: Vec<OutgoingMessage>,
        group: &Arc<Group>,
        user_sequence_ids: bool,
    ) -> Result<()> {
        self.send_many_with_schema(msgs, group, user_sequence_ids, None)
            .await
    }

    /// [`send_many`](Self::send_many) of messages encoded with a schema other than the
    /// producer's: `schema_version` (its registry version, from GET_OR_CREATE_SCHEMA) goes
    /// on every message; they batch together, apart from messages of other versions.
    pub async fn send_many_with_schema(
        &self,
        msgs: Vec<OutgoingMessage>,
        group: &Arc<Group>,
        user_sequence_ids: bool,
        schema_version: Option<Bytes>,
    ) -> Result<()> {
        let v = schema_version.as_ref();
        let parts = self.shared.snapshot();
        let n = parts.len();
        if n == 1 {
            let idx = (0..msgs.len()).collect();
            return parts[0]
                .send_many(msgs, group, idx, user_sequence_ids, v)
                .await;
        }
        let mut per: Vec<(Vec<OutgoingMessage>, Vec<usize>)> =
            (0..n).map(|_| (Vec::new(), Vec::new())).collect();
        for (i, m) in msgs.into_iter().enumerate() {
            let p = if let Some(p) = m.partition.filter(|&p| (p as usize) < n) {
                p as usize
            } else if user_sequence_ids && m.key.is_none() {
                (m.sequence_id % n as u64) as usize
            } else {
                self.route_in(m.key.as_deref(), n)
            };
            per[p].0.push(m);
            per[p].1.push(i);
        }
        for (p, (m, idx)) in per.into_iter().enumerate() {
            if !m.is_empty() {
                parts[p]
                    .send_many(m, group, idx, user_sequence_ids, v)
                    .await?;
            }
        }
        Ok(())
    }

    pub async fn flush(&self) -> Result<()> {
        for p in self.shared.snapshot().iter() {
            p.flush().await?;
        }
        Ok(())
    }

    pub async fn close(&self) -> Result<()> {
        // Closed first, then the membership lock: a round adding partitions either finished
        // before (its producers are in the snapshot closed below) or sees the flag and closes
        // what it made itself.
        self.shared.closed.store(true, Ordering::Release);
        let _m = self.shared.membership.lock().await;
        let mut first: Option<Error> = None;
        for p in self.shared.snapshot().iter() {
            if let Err(e) = p.close().await {
                first.get_or_insert(e);
            }
        }
        streamwire_core::log::event(streamwire_core::log::Level::Info, "pulsar.producer", || {
            (
                "producer closed".to_owned(),
                vec![
                    ("topic", self.topic().to_string()),
                    ("producer", self.name()),
                ],
            )
        });
        first.map_or(Ok(()), Err)
    }

    pub fn pending(&self) -> usize {
        self.shared.snapshot().iter().map(|p| p.pending()).sum()
    }

    pub fn is_closed(&self) -> bool {
        self.shared.snapshot().iter().all(|p| p.is_closed())
    }

    /// Every partition's producer open and on a live connection (a lazily started one that
    /// has not sent yet is not on the broker by design, and does not count).
    pub fn is_connected(&self) -> bool {
        self.shared
            .snapshot()
            .iter()
            .all(|p| p.is_connected() || (p.is_idle() && !p.is_closed()))
    }

    pub fn name(&self) -> String {
        self.shared.snapshot()[0].name()
    }

    /// The registry's version of the producer's schema (None: no schema).
    pub fn schema_version(&self) -> Option<Vec<u8>> {
        // The first partition producer created on the broker (with lazy start, maybe not 0).
        self.shared
            .snapshot()
            .iter()
            .find_map(|p| p.schema_version())
    }

    pub fn last_sequence_id(&self) -> i64 {
        self.shared
            .snapshot()
            .iter()
            .map(|p| p.last_sequence_id())
            .max()
            .unwrap_or(-1)
    }

    /// The metrics of every partition producer, summed (labels of the first partition).
    pub fn metrics(&self) -> Snapshot {
        Snapshot::merged(
            self.shared
                .snapshot()
                .iter()
                .map(|p| p.metrics().snapshot()),
        )
        .expect("a topic producer has at least one partition")
    }

    pub fn stats(&self) -> StatsSnapshot {
        let snaps: Vec<StatsSnapshot> = self.shared.snapshot().iter().map(|p| p.stats()).collect();
        let mut total = snaps[0].clone();
        for s in &snaps[1..] {
            total.sent += s.sent;
            total.failed += s.failed;
            total.bytes += s.bytes;
            total.entries += s.entries;
            total.reconnects += s.reconnects;
            total.pending += s.pending;
            for i in 0..4 {
                total.latency_ms[i] = total.latency_ms[i].max(s.latency_ms[i]);
            }
        }
        total
    }
}
