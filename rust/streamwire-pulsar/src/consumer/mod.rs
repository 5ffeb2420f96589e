//! Consumers and readers.
//!
//! A [`Consumer`] is one actor task per topic-partition ([`actor`]) feeding a per-partition
//! queue ([`queue`]); the handle drains those queues fairly. Pure logic lives apart and is
//! unit-tested without sockets: entry unpacking ([`entry`]), ack grouping ([`acks`]),
//! negative acks and ack timeouts ([`nacks`]), the fair merge ([`queue::drain_fair`]).
//!
//! A reader is a consumer on a non-durable exclusive subscription with a start position.
//!
//! Cancel safety: every async method may be dropped; a dropped `receive_many` takes nothing
//! from the queues, and a dropped control request is still carried out by the actor.

pub mod acks;
mod actor;
pub mod chunks;
mod config;
pub mod dlq;
pub mod entry;
mod growth;
pub mod idhash;
pub mod nacks;
pub mod pattern;
pub mod queue;
pub mod retry;
mod stats;
mod txn_ack;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, Notify};

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{EntityMetrics, Kind, Snapshot, C, G};

use crate::client::PulsarClient;
use crate::engine::permits::FlowPermits;
use crate::message_id::MessageId;
use crate::protocol::commands::SeekTarget;
use crate::protocol::pb;
use crate::topic::TopicName;

pub use acks::AckTracker;
pub use config::{ConsumerConfig, KeySharedPolicy};
pub use entry::{ReceivedMessage, StartFilter};
pub use pb::command_subscribe::{InitialPosition, SubType};
pub use stats::ConsumerStats;

use actor::{Actor, Control};
use nacks::{RedeliveryTracker, UnackedTracker};
use queue::PartitionQueue;

/// Counters of one partition consumer.
#[derive(Debug, Default)]
pub struct SlotStats {
    pub received: AtomicU64,
    pub acked: AtomicU64,
    pub nacked: AtomicU64,
    pub skipped: AtomicU64,
    pub invalid: AtomicU64,
    pub reconnects: AtomicU64,
    /// Failed attempts to re-subscribe after a lost connection (each is retried).
    pub reconnect_failures: AtomicU64,
    /// Why the current re-subscribe attempts fail (None once subscribed again).
    pub reconnect_error: std::sync::Mutex<Option<String>>,
    pub redelivery_requests: AtomicU64,
    pub dead_lettered: AtomicU64,
}

/// What the handle and one actor share.
pub(crate) struct Slot {
    topic: TopicName,
    topic_str: Arc<str>,
    partition: i32,
    queue: PartitionQueue,
    acks: Mutex<AckTracker>,
    nacks: Mutex<RedeliveryTracker>,
    unacked: Option<Mutex<UnackedTracker>>,
    ctl: mpsc::Sender<Control>,
    end_of_topic: AtomicBool,
    fatal: Mutex<Option<Error>>,
    app_notify: Arc<Notify>,
    stats: SlotStats,
    /// The partition consumer's exported metrics (the counters above that are exported, plus
    /// bytes and batches; the receive-queue gauge is sampled from `queue`).
    metrics: Arc<EntityMetrics>,
    /// After a reconnect, messages handed out are checked against the acks once more: a
    /// redelivered copy may have been queued before the app acknowledged the original.
    recheck_acks: AtomicU64,
    /// Subscribed on a live connection (false while re-subscribing).
    connected: std::sync::atomic::AtomicBool,
    /// Chunked messages delivered and not acknowledged: last chunk id -> every chunk's id.
    chunk_ids: Mutex<HashMap<MessageId, Vec<MessageId>>>,
    dead_letter: Option<dlq::DeadLetter>,
    /// Taken out of a pattern consumer (its topic was deleted): closed, skipped, kept so that
    /// slot indices stay valid.
    removed: AtomicBool,
    /// Why messages were held back (undecryptable under FAIL): each is raised by a receive.
    held_errors: Mutex<std::collections::VecDeque<Error>>,
}

impl Slot {
    /// Tell the application, at its next receive, why a message was held back.
    fn hold_error(&self, e: Error) {
        let mut q = self.held_errors.lock().unwrap_or_else(|p| p.into_inner());
        // Bounded: a stream of undecryptable messages must not grow memory; the first ones
        // say what is wrong.
        if q.len() < 1024 {
            q.push_back(e);
        }
        drop(q);
        self.app_notify.notify_one();
    }

    fn take_held_error(&self) -> Option<Error> {
        self.held_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
    }

    fn has_held_error(&self) -> bool {
        !self
            .held_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// Count one entry's messages as received (one batch, their payload bytes).
    fn count_received(&self, msgs: &[ReceivedMessage]) {
        let n = msgs.len() as u64;
        self.stats.received.fetch_add(n, Ordering::Relaxed);
        let bytes: usize = msgs.iter().map(|m| m.payload.len()).sum();
        self.metrics.add(C::Messages, n);
        self.metrics.add(C::Bytes, bytes as u64);
        self.metrics.add(C::Batches, 1);
    }

    fn acks(&self) -> MutexGuard<'_, AckTracker> {
        self.acks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn nacks(&self) -> MutexGuard<'_, RedeliveryTracker> {
        self.nacks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn chunk_ids(&self) -> MutexGuard<'_, HashMap<MessageId, Vec<MessageId>>> {
        self.chunk_ids.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The entries to acknowledge or redeliver for `id`: every chunk of a chunked message.
    fn expand(&self, id: &MessageId, remove: bool) -> Option<Vec<MessageId>> {
        if id.batch_index >= 0 {
            return None;
        }
        let mut map = self.chunk_ids();
        if map.is_empty() {
            return None;
        }
        if remove {
            map.remove(id)
        } else {
            map.get(id).cloned()
        }
    }

    fn fatal(&self) -> Option<Error> {
        self.fatal.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl AsRef<PartitionQueue> for Arc<Slot> {
    fn as_ref(&self) -> &PartitionQueue {
        &self.queue
    }
}

struct Inner {
    /// Grows when a pattern consumer finds new topics; never shrinks (see `Slot::removed`).
    slots: RwLock<Arc<Vec<Arc<Slot>>>>,
    client: PulsarClient,
    consumer_name: String,
    /// Serializes adding and removing partition consumers.
    membership: tokio::sync::Mutex<()>,
    cfg: Arc<ConsumerConfig>,
    app_notify: Arc<Notify>,
    next: Mutex<usize>,
    closed: AtomicBool,
    topic_label: String,
    /// Whether any slot is a partition of a partitioned topic.
    created: Instant,
    waiting: AtomicUsize,
    /// The producers of `reconsume_later` (made on first use).
    retry: retry::RetryProducers,
}

/// A consumer (or reader) over one topic, its partitions, or a list of topics.
#[derive(Clone)]
pub struct Consumer {
    inner: Arc<Inner>,
}

/// See [`Consumer::slot_finder`].
pub struct SlotFinder(Arc<Vec<Arc<Slot>>>);

impl SlotFinder {
    /// Slot index of a message this consumer handed out. The message names its slot; it is
    /// taken when that slot has the very same topic name (pointer-equal: no string compare
    /// per message) and partition, else the slot is looked up by name (a message of another
    /// consumer, or slots that changed since).
    pub fn slot_of(&self, m: &ReceivedMessage) -> Option<u32> {
        match self.0.get(m.slot() as usize) {
            Some(s) if Arc::ptr_eq(&s.topic_str, m.topic()) && s.partition == m.id.partition => {
                Some(m.slot())
            }
            _ => self
                .0
                .iter()
                .position(|s| s.topic_str == *m.topic() && s.partition == m.id.partition)
                .map(|i| i as u32),
        }
    }
}

fn random_name() -> String {
    let n: u64 = rand::random();
    format!("streamwire-{:010x}", n & 0xff_ffff_ffff)
}

impl Consumer {
    /// Subscribe to `topics` (each expanded to its partitions).
    pub async fn subscribe(
        client: &PulsarClient,
        topics: &[TopicName],
        cfg: ConsumerConfig,
    ) -> Result<Consumer> {
        cfg.validate()?;
        if topics.is_empty() {
            return Err(Error::invalid("no topic to subscribe to"));
        }
        let mut cfg = cfg;
        let with_retry = retry::prepare(topics, &mut cfg)?;
        let topics = with_retry.as_deref().unwrap_or(topics);
        let (mut targets, mut partitioned) = (Vec::new(), Vec::new());
        for t in topics {
            if t.partition_index().is_some() {
                targets.push(t.clone());
                continue;
            }
            let n = client.partitions(t).await?;
            if n == 0 {
                targets.push(t.clone());
            } else {
                targets.extend((0..n).map(|i| t.partition(i)));
                partitioned.push(t.clone());
            }
        }
        let label = if topics.len() == 1 {
            topics[0].to_string()
        } else {
            topics
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let period = cfg.auto_update_partitions;
        let consumer = Self::start(client, targets, cfg, label).await?;
        consumer.follow_growth(partitioned, period);
        Ok(consumer)
    }

    async fn start(
        client: &PulsarClient,
        targets: Vec<TopicName>,
        mut cfg: ConsumerConfig,
        label: String,
    ) -> Result<Consumer> {
        let name = cfg.consumer_name.clone().unwrap_or_else(random_name);
        cfg.consumer_name = Some(name.clone());
        let consumer = Consumer {
            inner: Arc::new(Inner {
                slots: RwLock::new(Arc::new(Vec::new())),
                client: client.clone(),
                consumer_name: name,
                membership: tokio::sync::Mutex::new(()),
                cfg: Arc::new(cfg),
                app_notify: Arc::new(Notify::new()),
                next: Mutex::new(0),
                closed: AtomicBool::new(false),
                topic_label: label,
                created: Instant::now(),
                waiting: AtomicUsize::new(0),
                retry: retry::RetryProducers::default(),
            }),
        };
        let cfg = Arc::clone(&consumer.inner.cfg);
        if let Err(e) = consumer.add_partitions(targets, &cfg).await {
            let _ = consumer.close().await;
            return Err(e);
        }
        Ok(consumer)
    }

    /// Every partition consumer, removed ones included (indices are slot numbers).
    fn slots(&self) -> Arc<Vec<Arc<Slot>>> {
        self.inner
            .slots
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Start a partition consumer for each of `targets` (configured by `cfg`: the consumer's,
    /// or that of partitions added later) and wait until each is subscribed. On a failure
    /// every new one is taken out again and the first error returned.
    pub(crate) async fn add_partitions(
        &self,
        targets: Vec<TopicName>,
        cfg: &Arc<ConsumerConfig>,
    ) -> Result<()> {
        let _m = self.inner.membership.lock().await;
        self.check_open()?;
        let mut new = Vec::with_capacity(targets.len());
        let mut waits = Vec::with_capacity(targets.len());
        let first = self.slots().len();
        for (k, topic) in targets.into_iter().enumerate() {
            let partition = topic.partition_index().map_or(-1, |p| p as i32);
            let topic_str: Arc<str> = Arc::from(topic.to_string());
            let (ctl_tx, ctl_rx) = mpsc::channel(64);
            let slot = Arc::new(Slot {
                topic,
                topic_str: topic_str.clone(),
                partition,
                queue: PartitionQueue::new(cfg.receiver_queue_size),
                acks: Mutex::new(AckTracker::new(cfg.batch_index_ack, cfg.ack_group_max)),
                nacks: Mutex::new(RedeliveryTracker::new()),
                unacked: cfg.ack_timeout.map(|t| Mutex::new(UnackedTracker::new(t))),
                ctl: ctl_tx,
                end_of_topic: AtomicBool::new(false),
                fatal: Mutex::new(None),
                app_notify: self.inner.app_notify.clone(),
                stats: SlotStats::default(),
                metrics: EntityMetrics::register(self.inner.client.entity_labels(
                    Kind::Consumer,
                    topic_str.to_string(),
                    self.inner.consumer_name.to_string(),
                )),
                recheck_acks: AtomicU64::new(0),
                connected: std::sync::atomic::AtomicBool::new(false),
                chunk_ids: Mutex::new(HashMap::new()),
                dead_letter: cfg
                    .dead_letter
                    .as_ref()
                    .map(|p| dlq::DeadLetter::new(p, &topic_str, &cfg.subscription)),
                removed: AtomicBool::new(false),
                held_errors: Mutex::default(),
            });
            let weak = Arc::downgrade(&slot);
            slot.metrics.set_sampler(Box::new(move |g| {
                g[G::ReceiveQueue as usize] = weak.upgrade().map(|s| s.queue.len() as i64);
            }));
            let start = cfg.start.map(|mut f| {
                f.id.partition = partition;
                f
            });
            let actor = Actor {
                client: self.inner.client.clone(),
                slot: slot.clone(),
                cfg: cfg.clone(),
                ctl: ctl_rx,
                permits: FlowPermits::new(cfg.receiver_queue_size),
                ctx: entry::EntryContext {
                    topic: topic_str,
                    partition,
                    slot: (first + k) as u32,
                    crypto: cfg.crypto.clone(),
                },
                start,
                resume_cursor: false,
                consumer_name: self.inner.consumer_name.clone(),
                cluster_epoch: self.inner.client.cluster_epoch(),
                chunks: chunks::ChunkAssembler::new(
                    cfg.max_pending_chunked_messages,
                    cfg.expire_incomplete_chunked,
                ),
            };
            let (ready_tx, ready_rx) = oneshot::channel();
            tokio::spawn(actor.run(ready_tx));
            new.push(slot);
            waits.push(ready_rx);
        }
        {
            let mut w = self.inner.slots.write().unwrap_or_else(|p| p.into_inner());
            let mut all = Vec::clone(&w);
            all.extend(new.iter().cloned());
            *w = Arc::new(all);
        }
        let mut failed = None;
        for w in waits {
            let res = w.await.unwrap_or_else(|_| {
                Err(Error::new(ErrorKind::Disconnected, "consumer task ended"))
            });
            if let Err(e) = res {
                failed.get_or_insert(e);
            }
        }
        match failed {
            None => Ok(()),
            Some(e) => {
                for s in &new {
                    Self::retire(s).await;
                }
                Err(e)
            }
        }
    }

    /// Take one partition consumer out: close it (flushing its acks) and drop what it queued.
    async fn retire(s: &Slot) {
        if s.removed.swap(true, Ordering::AcqRel) {
            return;
        }
        let (tx, rx) = oneshot::channel();
        if s.ctl.send(Control::Close(tx)).await.is_ok() {
            let _ = rx.await;
        }
        if let Some(dl) = &s.dead_letter {
            dl.close().await;
        }
        s.queue.clear();
    }

    pub fn topic(&self) -> &str {
        &self.inner.topic_label
    }

    pub fn subscription(&self) -> &str {
        &self.inner.cfg.subscription
    }

    pub fn config(&self) -> &ConsumerConfig {
        &self.inner.cfg
    }

    /// Topic of every partition consumer, by slot (a removed one keeps its place).
    pub fn partition_topics(&self) -> Vec<String> {
        self.slots()
            .iter()
            .map(|s| s.topic_str.to_string())
            .collect()
    }

    /// The partition consumers not taken out.
    fn live_slots(&self) -> Vec<Arc<Slot>> {
        self.slots()
            .iter()
            .filter(|s| !s.removed.load(Ordering::Acquire))
            .cloned()
            .collect()
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Open, and every partition subscribed on a live connection (the Java `isConnected`).
    pub fn is_connected(&self) -> bool {
        !self.is_closed()
            && self
                .live_slots()
                .iter()
                .all(|s| s.connected.load(Ordering::Acquire))
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::closed("consumer"));
        }
        Ok(())
    }

    /// Whether every partition reached the end of a terminated topic.
    pub fn has_reached_end_of_topic(&self) -> bool {
        let live = self.live_slots();
        !live.is_empty() && live.iter().all(|s| s.end_of_topic.load(Ordering::Acquire))
    }

    /// Number of messages waiting in the receiver queues.
    pub fn queued(&self) -> usize {
        self.slots().iter().map(|s| s.queue.len()).sum()
    }

    /// Take up to `max` queued messages without waiting. Errors when closed, when a partition
    /// failed for good, or (queue empty) when the end of the topic was reached.
    pub fn try_receive_many(&self, max: usize) -> Result<Vec<ReceivedMessage>> {
        self.try_receive_up_to(max, None)
    }

    /// [`Self::try_receive_many`] that also stops at `max_bytes` of payload (at least one
    /// message is taken; see [`queue::ByteBudget`]). None: no byte limit.
    pub fn try_receive_up_to(
        &self,
        max: usize,
        max_bytes: Option<usize>,
    ) -> Result<Vec<ReceivedMessage>> {
        self.check_open()?;
        let slots = self.slots();
        // A message held back (undecryptable, FAIL) is reported before more are handed out.
        for s in slots.iter() {
            if let Some(e) = s.take_held_error() {
                return Err(e);
            }
        }
        let mut out = Vec::with_capacity(max.min(1024));
        loop {
            let took = {
                let mut next = self.inner.next.lock().unwrap_or_else(|p| p.into_inner());
                // Fresh each round: a round only repeats when all it took was dropped.
                let mut budget = queue::ByteBudget::new(max_bytes);
                queue::drain_fair(&slots, &mut next, max, &mut budget, &mut out)
            };
            if took == 0 {
                break;
            }
            self.drop_acked(&slots, &mut out);
            if !out.is_empty() {
                break;
            }
        }
        if out.is_empty() {
            for s in slots.iter().filter(|s| !s.removed.load(Ordering::Acquire)) {
                if let Some(e) = s.fatal() {
                    return Err(e);
                }
            }
            if self.has_reached_end_of_topic() {
                return Err(Error::new(
                    ErrorKind::TopicTerminated,
                    format!("{} reached the end of the topic", self.inner.topic_label),
                ));
            }
        } else {
            self.after_delivery(&slots, &out);
        }
        Ok(out)
    }

    fn drop_acked(&self, slots: &[Arc<Slot>], out: &mut Vec<ReceivedMessage>) {
        if slots
            .iter()
            .all(|s| s.recheck_acks.load(Ordering::Relaxed) == 0)
        {
            return;
        }
        out.retain(|m| {
            let s = &slots[m.slot() as usize];
            if s.recheck_acks.load(Ordering::Relaxed) == 0 {
                return true;
            }
            let _ = s
                .recheck_acks
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1));
            let mut acks = s.acks();
            let dup = acks.is_acked(&m.id);
            if dup {
                // Acknowledged before the reconnect: acknowledge again (see `reack`).
                acks.reack(&m.id);
                s.stats.skipped.fetch_add(1, Ordering::Relaxed);
            }
            !dup
        });
    }

    fn after_delivery(&self, slots: &[Arc<Slot>], out: &[ReceivedMessage]) {
        if self.inner.cfg.ack_timeout.is_some() {
            let now = Instant::now();
            for m in out {
                if let Some(u) = &slots[m.slot() as usize].unacked {
                    u.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .delivered(m.id, now);
                }
            }
        }
        if self.queued() > 0 && self.inner.waiting.load(Ordering::Relaxed) > 0 {
            self.inner.app_notify.notify_one();
        }
    }

    /// Wait until at least one message is queued, then take up to `max`.
    ///
    /// Cancel safety: nothing is taken unless the future completes.
    pub async fn receive_many(&self, max: usize) -> Result<Vec<ReceivedMessage>> {
        self.receive_up_to(max, None).await
    }

    /// [`Self::receive_many`] within `max_bytes` of payload (see [`Self::try_receive_up_to`]).
    ///
    /// Cancel safety: nothing is taken unless the future completes.
    pub async fn receive_up_to(
        &self,
        max: usize,
        max_bytes: Option<usize>,
    ) -> Result<Vec<ReceivedMessage>> {
        loop {
            let notified = self.inner.app_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let got = self.try_receive_up_to(max, max_bytes)?;
            if !got.is_empty() {
                return Ok(got);
            }
            // Counted while waiting, also when the future is dropped mid-wait (a timeout or a
            // cancelled await): a guard undoes the count.
            let _waiting = queue::WaitingGuard::new(&self.inner.waiting);
            notified.await;
        }
    }

    /// Whether a receive would not wait: messages are queued, the consumer is closed, or a
    /// partition failed for good (the receive then raises). The end of a terminated topic
    /// with an empty queue is not "ready": nothing will come, so a listener thread must not
    /// be woken for it again and again.
    pub fn is_ready(&self) -> bool {
        self.is_closed()
            || self.queued() > 0
            || self.slots().iter().any(|s| {
                !s.removed.load(Ordering::Acquire) && (s.fatal().is_some() || s.has_held_error())
            })
    }

    /// Wait until [`is_ready`](Self::is_ready), taking nothing: a listener thread waits on
    /// several consumers at once with this and then takes from the ready ones.
    ///
    /// Cancel safety: it only waits on the consumer's notification, so it may be dropped.
    pub async fn wait_ready(&self) {
        loop {
            let notified = self.inner.app_notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_ready() {
                return;
            }
            let _waiting = queue::WaitingGuard::new(&self.inner.waiting);
            notified.await;
        }
    }

    fn slot_for(&self, slot: Option<u32>, id: &MessageId) -> Result<Arc<Slot>> {
        let slots = self.slots();
        Ok(slots[slot_index(&slots, slot, id)?].clone())
    }

    /// A snapshot of the consumer's partitions that names the slot of each message handed
    /// out: take one per acknowledge call, not one per message (the snapshot is a lock and a
    /// reference count; at millions of acks a second that was 11% of the loop).
    pub fn slot_finder(&self) -> SlotFinder {
        SlotFinder(self.slots())
    }

    fn wake_if(&self, s: &Slot, due: bool) {
        if due || self.inner.cfg.ack_group_time.is_zero() {
            s.queue.wake_actor.notify_one();
        }
    }

    /// Acknowledge one message (grouped; sent within `ack_group_time`).
    pub fn acknowledge(&self, slot: Option<u32>, id: MessageId) -> Result<()> {
        self.check_open()?;
        let s = self.slot_for(slot, &id)?;
        self.ack_in_slot(&s, std::iter::once(id));
        Ok(())
    }

    /// Acknowledge many messages, taking each tracker's lock once per run of messages from the
    /// same partition. Every id is resolved first: one that belongs to no partition of this
    /// consumer fails the call before anything is acknowledged.
    pub fn acknowledge_many(&self, ids: &[(Option<u32>, MessageId)]) -> Result<()> {
        self.check_open()?;
        let slots = self.slots();
        let mut resolved = Vec::with_capacity(ids.len());
        for (slot, id) in ids {
            resolved.push((slot_index(&slots, *slot, id)?, *id));
        }
        for run in resolved.chunk_by(|a, b| a.0 == b.0) {
            self.ack_in_slot(&slots[run[0].0], run.iter().map(|(_, id)| *id));
        }
        Ok(())
    }

    /// Record the acks of `ids` (all of partition `s`), each tracker locked once.
    fn ack_in_slot(&self, s: &Slot, ids: impl Iterator<Item = MessageId> + Clone) {
        if let Some(u) = &s.unacked {
            let mut u = u.lock().unwrap_or_else(|p| p.into_inner());
            ids.clone().for_each(|id| u.acked(&id));
        }
        {
            let mut nacks = s.nacks();
            ids.clone().for_each(|id| nacks.remove(&id));
        }
        if let Some(dl) = &s.dead_letter {
            ids.clone().for_each(|id| dl.acked(&id));
        }
        // A chunked message stands for every chunk's entry (its own id is the last of them);
        // no allocation unless there is one.
        let mut chunks = Vec::new();
        for id in ids.clone() {
            if let Some(all) = s.expand(&id, true) {
                chunks.extend(all);
            }
        }
        let n = ids.clone().count() as u64;
        s.stats.acked.fetch_add(n, Ordering::Relaxed);
        s.metrics.add(C::Acks, n);
        let due = s.acks().individual_many(ids.chain(chunks));
        self.wake_if(s, due);
    }

    /// Acknowledge everything up to and including `id` on its partition.
    pub fn acknowledge_cumulative(&self, slot: Option<u32>, id: MessageId) -> Result<()> {
        self.check_open()?;
        if matches!(
            self.inner.cfg.sub_type,
            SubType::Shared | SubType::KeyShared
        ) {
            return Err(Error::invalid(
                "cumulative acknowledgement is not allowed on shared or key_shared subscriptions",
            ));
        }
        let s = self.slot_for(slot, &id)?;
        if let Some(u) = &s.unacked {
            u.lock().unwrap_or_else(|p| p.into_inner()).acked_up_to(&id);
        }
        if id.batch_index < 0 {
            s.chunk_ids().retain(|last, _| *last > id);
        }
        let due = s.acks().cumulative(id);
        s.stats.acked.fetch_add(1, Ordering::Relaxed);
        s.metrics.add(C::Acks, 1);
        self.wake_if(&s, due);
        Ok(())
    }

    /// Ask for `id` to be redelivered after the negative-ack delay.
    pub fn negative_acknowledge(&self, slot: Option<u32>, id: MessageId) -> Result<()> {
        self.check_open()?;
        let s = self.slot_for(slot, &id)?;
        if let Some(u) = &s.unacked {
            u.lock().unwrap_or_else(|p| p.into_inner()).acked(&id);
        }
        s.nacks()
            .add(id, Instant::now() + self.inner.cfg.nack_delay);
        s.stats.nacked.fetch_add(1, Ordering::Relaxed);
        s.metrics.add(C::Nacks, 1);
        Ok(())
    }

    async fn ask<T>(
        &self,
        slot: &Slot,
        make: impl FnOnce(oneshot::Sender<Result<T>>) -> Control,
    ) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        slot.ctl
            .send(make(tx))
            .await
            .map_err(|_| Error::closed("consumer"))?;
        rx.await.unwrap_or_else(|_| Err(Error::closed("consumer")))
    }

    /// Redeliver every message not acknowledged yet.
    pub async fn redeliver_unacknowledged(&self) -> Result<()> {
        self.check_open()?;
        for s in &self.live_slots() {
            self.ask(s, Control::RedeliverAll).await?;
        }
        Ok(())
    }

    /// Move the subscription (every partition) to a message id or a publish time.
    pub async fn seek(&self, target: SeekTarget) -> Result<()> {
        self.check_open()?;
        let live = self.live_slots();
        let slots: Vec<Arc<Slot>> = match &target {
            SeekTarget::MessageId(d) if live.len() > 1 => {
                let id = MessageId::from_proto(d);
                if id == MessageId::EARLIEST || id == MessageId::LATEST {
                    live
                } else {
                    vec![self.slot_for(None, &id)?]
                }
            }
            _ => live,
        };
        for s in slots {
            let t = target.clone();
            self.ask(&s, |tx| Control::Seek(t, tx)).await?;
            s.end_of_topic.store(false, Ordering::Release);
        }
        Ok(())
    }

    /// The id of the last message written to the topic (per partition: the highest).
    pub async fn get_last_message_ids(&self) -> Result<Vec<MessageId>> {
        self.check_open()?;
        let live = self.live_slots();
        let mut out = Vec::with_capacity(live.len());
        for s in &live {
            out.push(self.ask(s, Control::LastMessageId).await?);
        }
        Ok(out)
    }

    /// Whether a reader has messages it has not read yet.
    pub async fn has_message_available(&self) -> Result<bool> {
        self.check_open()?;
        if self.queued() > 0 {
            return Ok(true);
        }
        for s in &self.live_slots() {
            let last = self.ask(s, Control::LastMessageId).await?;
            if last.entry_id < 0 || last.ledger_id < 0 {
                continue;
            }
            let after = match s.queue.last_delivered() {
                Some(d) => StartFilter {
                    id: d,
                    inclusive: false,
                },
                None => match self.inner.cfg.start {
                    Some(f) if f.id == MessageId::EARLIEST => return Ok(true),
                    Some(f) if f.id == MessageId::LATEST => continue,
                    Some(f) => f,
                    None => match self.inner.cfg.initial_position {
                        InitialPosition::Earliest => return Ok(true),
                        InitialPosition::Latest => continue,
                    },
                },
            };
            let last_pos = (last.ledger_id, last.entry_id, last.batch_index.max(-1));
            let start_pos = (after.id.ledger_id, after.id.entry_id, after.id.batch_index);
            let newer =
                if last.batch_index < 0 && last_pos.0 == start_pos.0 && last_pos.1 == start_pos.1 {
                    // The broker did not say which message of the entry is last.
                    start_pos.2 >= 0 && start_pos.2 + 1 < after.id.batch_size
                        || (after.inclusive && start_pos.2 < 0)
                } else {
                    last_pos > start_pos || (after.inclusive && last_pos == start_pos)
                };
            if newer {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Broker-side statistics of every partition consumer.
    pub async fn broker_stats(&self) -> Result<Vec<pb::CommandConsumerStatsResponse>> {
        self.check_open()?;
        let mut out = Vec::new();
        for s in &self.live_slots() {
            out.push(self.ask(s, Control::Stats).await?);
        }
        Ok(out)
    }

    /// The metrics of every live partition consumer, summed (None once closed).
    pub fn metrics(&self) -> Option<Snapshot> {
        Snapshot::merged(self.live_slots().iter().map(|s| s.metrics.snapshot()))
    }

    /// Delete the subscription, then close.
    pub async fn unsubscribe(&self) -> Result<()> {
        self.check_open()?;
        for s in &self.live_slots() {
            self.ask(s, Control::Unsubscribe).await?;
        }
        self.inner.closed.store(true, Ordering::Release);
        self.inner.app_notify.notify_waiters();
        Ok(())
    }

    /// Flush pending acks and close every partition consumer. Idempotent.
    pub async fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.app_notify.notify_waiters();
        // A pattern consumer's discovery may be adding partition consumers: let it finish.
        let _m = self.inner.membership.lock().await;
        for s in &self.live_slots() {
            let (tx, rx) = oneshot::channel();
            if s.ctl.send(Control::Close(tx)).await.is_ok() {
                let _ = rx.await;
            }
            if let Some(dl) = &s.dead_letter {
                dl.close().await;
            }
        }
        self.close_retry().await;
        streamwire_core::log::event(streamwire_core::log::Level::Info, "pulsar.consumer", || {
            (
                "consumer closed".to_owned(),
                vec![
                    ("topic", self.topic().to_owned()),
                    ("subscription", self.subscription().to_owned()),
                ],
            )
        });
        Ok(())
    }

    /// How long this consumer has existed (diagnostics).
    pub fn age(&self) -> Duration {
        self.inner.created.elapsed()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropping the control senders ends the actors, which flush acks and close.
    }
}

/// Which of `slots` an acknowledgement goes to: the given index, else the one live partition
/// with the id's partition number.
fn slot_index(slots: &[Arc<Slot>], slot: Option<u32>, id: &MessageId) -> Result<usize> {
    if let Some(s) = slot.filter(|s| (*s as usize) < slots.len()) {
        return Ok(s as usize);
    }
    let mut found = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.partition == id.partition && !s.removed.load(Ordering::Acquire));
    match (found.next(), found.next()) {
        (Some((i, _)), None) => Ok(i),
        (None, _) => Err(Error::invalid(format!(
            "message id {id} does not belong to this consumer"
        ))),
        (Some(_), Some(_)) => Err(Error::invalid(
            "this consumer reads several topics: acknowledge the Message, not its bare MessageId",
        )),
    }
}
