//! The producer callers use: one [`Producer`] per partition (or one for a plain topic) and
//! the router that picks a partition per message, as the Java client does.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::{Error, Result};

use super::completion::{Completion, Group};
use streamwire_core::metrics::Snapshot;

use super::{EntryOptions, Producer, ProducerConfig, StatsSnapshot};
use crate::client::PulsarClient;
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
    partitions: Vec<Producer>,
    router: Mutex<Router>,
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
    let config = match config.producer_name {
        Some(_) => Arc::clone(config),
        None => Arc::new(ProducerConfig {
            producer_name: Some(eager.name()),
            ..(**config).clone()
        }),
    };
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
        if config.lazy_start && n > 1 {
            partitions = lazy_partitions(&client, &topic, &config, &budget, &mut router, n).await?;
        } else if n == 0 {
            partitions
                .push(Producer::create(client, topic.clone(), Arc::clone(&config), budget).await?);
        } else {
            // As Java's PartitionedProducerImpl: partition 0 first, then the others under the
            // name it got (given, or assigned by the broker), so every partition's messages
            // carry the same producer name.
            let mut shared_config = Arc::clone(&config);
            for i in 0..n {
                let p = Producer::create(
                    client.clone(),
                    topic.partition(i),
                    Arc::clone(&shared_config),
                    budget.clone(),
                )
                .await;
                if let (0, Ok(first)) = (i, &p) {
                    if config.producer_name.is_none() {
                        let mut c = (*config).clone();
                        c.producer_name = Some(first.name());
                        shared_config = Arc::new(c);
                    }
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
        Ok(TopicProducer {
            topic,
            partitions,
            router: Mutex::new(router),
        })
    }

    pub fn topic(&self) -> &TopicName {
        &self.topic
    }

    pub fn num_partitions(&self) -> usize {
        self.partitions.len()
    }

    pub fn partition_producers(&self) -> &[Producer] {
        &self.partitions
    }

    /// The partition a message goes to.
    pub fn route(&self, key: Option<&str>) -> usize {
        let n = self.partitions.len() as u32;
        if n == 1 {
            return 0;
        }
        let mut r = self.router.lock().unwrap_or_else(|p| p.into_inner());
        pick(&mut r, key, n) as usize
    }

    pub fn producer_for(&self, key: Option<&str>) -> &Producer {
        &self.partitions[self.route(key)]
    }

    /// The producer of the partition `msg` goes to: the one its caller's router chose, if
    /// any (checked against the partition count where it ran), else by its key.
    pub fn producer_for_msg(&self, msg: &OutgoingMessage) -> &Producer {
        match msg.partition {
            Some(p) if (p as usize) < self.partitions.len() => &self.partitions[p as usize],
            _ => self.producer_for(msg.key.as_deref()),
        }
    }

    pub async fn send(
        &self,
        msg: OutgoingMessage,
        user_sequence_id: bool,
        entry: EntryOptions,
        completion: Completion,
    ) -> Result<()> {
        let p = self.producer_for_msg(&msg);
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
        let p = self.producer_for_msg(&msg);
        p.send(msg, user_sequence_id, entry, completion).await?;
        p.trigger_flush();
        Ok(())
    }

    /// Send every partition's open batch now (after a [`send_many`](Self::send_many) whose
    /// caller waits for the receipts).
    pub fn trigger_flush(&self) {
        for p in &self.partitions {
            p.trigger_flush();
        }
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
        let n = self.partitions.len();
        if n == 1 {
            let idx = (0..msgs.len()).collect();
            return self.partitions[0]
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
                self.route(m.key.as_deref())
            };
            per[p].0.push(m);
            per[p].1.push(i);
        }
        for (p, (m, idx)) in per.into_iter().enumerate() {
            if !m.is_empty() {
                self.partitions[p]
                    .send_many(m, group, idx, user_sequence_ids, v)
                    .await?;
            }
        }
        Ok(())
    }

    pub async fn flush(&self) -> Result<()> {
        for p in &self.partitions {
            p.flush().await?;
        }
        Ok(())
    }

    pub async fn close(&self) -> Result<()> {
        let mut first: Option<Error> = None;
        for p in &self.partitions {
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
        self.partitions.iter().map(|p| p.pending()).sum()
    }

    pub fn is_closed(&self) -> bool {
        self.partitions.iter().all(|p| p.is_closed())
    }

    /// Every partition's producer open and on a live connection (a lazily started one that
    /// has not sent yet is not on the broker by design, and does not count).
    pub fn is_connected(&self) -> bool {
        self.partitions
            .iter()
            .all(|p| p.is_connected() || (p.is_idle() && !p.is_closed()))
    }

    pub fn name(&self) -> String {
        self.partitions[0].name()
    }

    /// The registry's version of the producer's schema (None: no schema).
    pub fn schema_version(&self) -> Option<Vec<u8>> {
        // The first partition producer created on the broker (with lazy start, maybe not 0).
        self.partitions.iter().find_map(|p| p.schema_version())
    }

    pub fn last_sequence_id(&self) -> i64 {
        self.partitions
            .iter()
            .map(|p| p.last_sequence_id())
            .max()
            .unwrap_or(-1)
    }

    /// The metrics of every partition producer, summed (labels of the first partition).
    pub fn metrics(&self) -> Snapshot {
        Snapshot::merged(self.partitions.iter().map(|p| p.metrics().snapshot()))
            .expect("a topic producer has at least one partition")
    }

    pub fn stats(&self) -> StatsSnapshot {
        let snaps: Vec<StatsSnapshot> = self.partitions.iter().map(|p| p.stats()).collect();
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
