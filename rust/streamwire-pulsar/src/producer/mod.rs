//! Producers: one actor task per topic partition, and a partitioned front that routes.
//!
//! A send travels: caller → (memory budget + pending-slot reservation, waiting or failing
//! fast as configured) → bounded channel → actor (sequence id, batching, compression,
//! framing) → connection writer. The receipt travels back: connection reader → actor
//! (matches the head of the in-flight queue) → the message's completion. The actor survives
//! lost connections and broker-initiated closes: it looks the topic up again, re-creates the
//! producer under the same name and re-sends everything unacknowledged, in order.

mod actor;
pub mod bulk;
pub mod completion;
mod frames;
mod growth;
mod partitioned;
pub mod pending;
pub mod placement;
mod stats;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use streamwire_core::budget::{MemoryBudget, Reservation};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{EntityMetrics, Kind, G};

pub use completion::{Callback, Completion, Group};
pub use partitioned::{Routing, TopicProducer};
pub use stats::StatsSnapshot;

use crate::client::PulsarClient;
use crate::engine::batcher::BatchConfig;
use crate::engine::compression::Codec;
pub use crate::engine::key_batches::BatchingType;
use crate::engine::message::OutgoingMessage;
use crate::protocol::pb;
use crate::topic::TopicName;

/// Producer settings. `Default` follows the Java client where it has a default.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    pub producer_name: Option<String>,
    pub batching: bool,
    pub batch: BatchConfig,
    /// How batches are formed: in send order, or one key per batch (for Key_Shared).
    pub batching_type: BatchingType,
    pub compression: Codec,
    /// Messages in flight per partition before a send waits or fails.
    pub max_pending_messages: usize,
    pub block_if_queue_full: bool,
    /// Zero means no timeout.
    pub send_timeout: Duration,
    pub initial_sequence_id: Option<i64>,
    pub access_mode: pb::ProducerAccessMode,
    pub properties: Vec<(String, String)>,
    pub routing: Routing,
    /// Split messages above the broker's maximum size into chunks (Java's
    /// `enableChunking`); such messages always go unbatched.
    pub chunking: bool,
    /// Partitioned topics: create each partition's producer on the broker at its first send
    /// (Java's `lazyStartPartitionedProducers`), but for the one the routing picks first.
    pub lazy_start: bool,
    /// The schema registered for (and checked against) the topic; `None`: BYTES.
    pub schema: Option<pb::Schema>,
    /// A subscription the broker creates (at the earliest position) if the topic does not
    /// have it, so what this producer writes is kept for a later reader of it even where
    /// retention is off (the dead-letter producer's `initialSubscriptionName`).
    pub initial_subscription_name: Option<String>,
    /// End-to-end encryption: the recipients' key names and where their keys come from.
    pub encryption: Option<EncryptionConfig>,
    /// Partitioned topics: how often to ask whether the topic gained partitions, which then
    /// get producers and take part in the routing (Java's `autoUpdatePartitionsInterval`,
    /// 60 s by default); zero: never (Java's `autoUpdatePartitions(false)`).
    pub auto_update_partitions: Duration,
}

/// A producer's encryption settings (the official `encryption_keys` + `crypto_key_reader`).
#[derive(Debug, Clone)]
pub struct EncryptionConfig {
    pub key_names: Vec<String>,
    pub reader: Arc<dyn crate::crypto::KeyReader>,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            producer_name: None,
            batching: true,
            batch: BatchConfig::default(),
            batching_type: BatchingType::Default,
            compression: Codec::None,
            max_pending_messages: 10_000,
            block_if_queue_full: true,
            send_timeout: Duration::from_secs(30),
            initial_sequence_id: None,
            access_mode: pb::ProducerAccessMode::Shared,
            properties: Vec::new(),
            routing: Routing::RoundRobin,
            chunking: false,
            lazy_start: false,
            schema: None,
            initial_subscription_name: None,
            encryption: None,
            auto_update_partitions: Duration::from_secs(60),
        }
    }
}

/// Per-message options that live in the entry's metadata: such messages go unbatched, but
/// for `schema_version`, which batches with messages of the same version (see `placement`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryOptions {
    pub deliver_at: Option<i64>,
    pub replicate_to: Vec<String>,
    pub disable_replication: bool,
    /// The transaction the message belongs to (a batch belongs to one transaction: messages
    /// of the same transaction batch together, see `placement`).
    pub txn: Option<crate::transaction::TxnId>,
    /// The registry version of this message's schema when it is not the producer's own
    /// (from GET_OR_CREATE_SCHEMA; a batch carries one version, so such a message closes an
    /// open batch of another version first).
    pub schema_version: Option<bytes::Bytes>,
}

impl EntryOptions {
    pub fn is_default(&self) -> bool {
        self.deliver_at.is_none()
            && self.replicate_to.is_empty()
            && !self.disable_replication
            && self.txn.is_none()
            && self.schema_version.is_none()
    }

    /// Whether a message with these options may go in a batch: nothing but a schema
    /// version or a transaction (which the whole batch then carries) is set.
    pub fn batchable(&self) -> bool {
        self.deliver_at.is_none() && self.replicate_to.is_empty() && !self.disable_replication
    }
}

/// A message on its way to the actor, with what it holds of the producer's limits.
pub(crate) struct Queued {
    pub msg: OutgoingMessage,
    pub user_sequence_id: bool,
    pub entry: EntryOptions,
    pub completion: Completion,
    pub reservation: Option<Reservation>,
    pub permits: Option<OwnedSemaphorePermit>,
    pub enqueued_at: Instant,
}

pub(crate) enum Command {
    Send(Vec<Queued>),
    /// A run of one bulk send's messages (see `bulk`): one item, however many messages.
    Bulk(bulk::BulkChunk),
    Flush(oneshot::Sender<()>),
    /// Send what is batched now, without waiting for the receipts (a blocking `send` whose
    /// caller waits on this message: it should not also wait for the batching delay).
    Trigger,
    Close(oneshot::Sender<Result<()>>),
}

/// What the handle and the actor share.
pub(crate) struct Shared {
    pub topic: TopicName,
    pub partition: i32,
    pub name: Mutex<String>,
    pub last_sequence_id: AtomicI64,
    pub pending_messages: AtomicUsize,
    pub closed: AtomicBool,
    /// Registered on a live connection (false while the actor reconnects).
    pub connected: AtomicBool,
    /// A lazily started producer that has not been asked to send yet (so not on the broker).
    pub idle: AtomicBool,
    pub stats: stats::Stats,
    pub max_message_size: AtomicUsize,
    /// The registry's version of the producer's schema (from ProducerSuccess).
    pub schema_version: Mutex<Option<Vec<u8>>>,
}

/// A message `try_send` could not queue, handed back with its completion so the caller can
/// wait for room and retry, or fail it.
pub struct Rejected {
    pub error: Error,
    pub completion: Completion,
    pub msg: OutgoingMessage,
}

/// A producer for one topic or one partition of a partitioned topic.
#[derive(Clone)]
pub struct Producer {
    tx: mpsc::Sender<Command>,
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
    budget: MemoryBudget,
    config: Arc<ProducerConfig>,
}

const COMMAND_QUEUE: usize = 1024;

impl Producer {
    /// Create the producer on the broker (lookup, connect, PRODUCER) and start its actor.
    pub async fn create(
        client: PulsarClient,
        topic: TopicName,
        config: Arc<ProducerConfig>,
        budget: MemoryBudget,
    ) -> Result<Producer> {
        let (shared, rx) = Self::shared_for(&client, &topic, &config);
        let actor =
            actor::Actor::connect(client, Arc::clone(&config), Arc::clone(&shared), rx.1).await?;
        tokio::spawn(actor.run());
        Ok(Self::handle(shared, rx.0, config, budget))
    }

    /// A producer that creates itself on the broker at its first send (a lazily started
    /// partition, `ProducerConfig::lazy_start`): until then it holds no connection and the
    /// broker shows no producer on its topic. Creation failing then fails the messages that
    /// started it and closes the producer.
    pub fn create_lazy(
        client: PulsarClient,
        topic: TopicName,
        config: Arc<ProducerConfig>,
        budget: MemoryBudget,
    ) -> Producer {
        let (shared, rx) = Self::shared_for(&client, &topic, &config);
        shared.idle.store(true, Ordering::Release);
        tokio::spawn(actor::start_lazily(
            client,
            Arc::clone(&config),
            Arc::clone(&shared),
            rx.1,
        ));
        Self::handle(shared, rx.0, config, budget)
    }

    fn handle(
        shared: Arc<Shared>,
        tx: mpsc::Sender<Command>,
        config: Arc<ProducerConfig>,
        budget: MemoryBudget,
    ) -> Producer {
        let slots = Arc::new(Semaphore::new(
            config.max_pending_messages.clamp(1, Semaphore::MAX_PERMITS),
        ));
        Producer {
            tx,
            shared,
            slots,
            budget,
            config,
        }
    }

    /// The state a producer's handle and actor share, and the command channel between them.
    #[allow(clippy::type_complexity)]
    fn shared_for(
        client: &PulsarClient,
        topic: &TopicName,
        config: &ProducerConfig,
    ) -> (
        Arc<Shared>,
        (mpsc::Sender<Command>, mpsc::Receiver<Command>),
    ) {
        let partition = topic.partition_index().map(|p| p as i32).unwrap_or(-1);
        let metrics = EntityMetrics::register(client.entity_labels(
            Kind::Producer,
            topic.to_string(),
            config.producer_name.clone().unwrap_or_default(),
        ));
        let shared = Arc::new(Shared {
            topic: topic.clone(),
            partition,
            name: Mutex::new(config.producer_name.clone().unwrap_or_default()),
            last_sequence_id: AtomicI64::new(-1),
            pending_messages: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            connected: AtomicBool::new(false),
            idle: AtomicBool::new(false),
            stats: stats::Stats::new(metrics),
            max_message_size: AtomicUsize::new(crate::protocol::DEFAULT_MAX_FRAME_SIZE),
            schema_version: Mutex::new(None),
        });
        // The pending gauge is read at scrape time from the counter the producer keeps anyway.
        let weak = Arc::downgrade(&shared);
        shared.stats.metrics().set_sampler(Box::new(move |g| {
            if let Some(s) = weak.upgrade() {
                g[G::PendingMessages as usize] =
                    Some(s.pending_messages.load(Ordering::Relaxed) as i64);
            }
        }));
        (shared, mpsc::channel(COMMAND_QUEUE))
    }

    pub fn topic(&self) -> &TopicName {
        &self.shared.topic
    }

    pub fn name(&self) -> String {
        self.shared
            .name
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn last_sequence_id(&self) -> i64 {
        self.shared.last_sequence_id.load(Ordering::Acquire)
    }

    /// The registry's version of this producer's schema, once created (None: no schema).
    pub fn schema_version(&self) -> Option<Vec<u8>> {
        self.shared
            .schema_version
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Messages accepted and not yet acknowledged or failed.
    pub fn pending(&self) -> usize {
        self.shared.pending_messages.load(Ordering::Acquire)
    }

    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Open, and registered with the broker on a live connection (the Java `isConnected`).
    pub fn is_connected(&self) -> bool {
        !self.is_closed() && self.shared.connected.load(Ordering::Acquire)
    }

    /// A lazily started producer that has not sent yet: not on the broker, by design.
    pub fn is_idle(&self) -> bool {
        self.shared.idle.load(Ordering::Acquire)
    }

    pub fn stats(&self) -> StatsSnapshot {
        self.shared.stats.snapshot(self.pending())
    }

    /// This producer's metric cells (one partition's, for a partition producer).
    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        self.shared.stats.metrics()
    }

    pub fn max_message_size(&self) -> usize {
        self.shared.max_message_size.load(Ordering::Relaxed)
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::closed("producer"))
        } else {
            Ok(())
        }
    }

    fn check_size(&self, msg: &OutgoingMessage) -> Result<()> {
        let max = self.max_message_size();
        if msg.payload.len() > max && !self.config.chunking {
            return Err(Error::new(
                ErrorKind::MessageTooBig,
                format!(
                    "message of {} bytes is larger than the broker's maximum of {max} bytes",
                    msg.payload.len()
                ),
            ));
        }
        Ok(())
    }

    /// Reserve memory and pending slots for `n` messages of `bytes` total, waiting or
    /// failing as configured.
    async fn reserve(&self, n: usize, bytes: usize) -> Result<(Reservation, OwnedSemaphorePermit)> {
        let n32 = u32::try_from(n).map_err(|_| Error::invalid("too many messages in one call"))?;
        if self.config.block_if_queue_full {
            let permits = Arc::clone(&self.slots)
                .acquire_many_owned(n32)
                .await
                .map_err(|_| Error::closed("producer"))?;
            let res = self.budget.reserve(bytes as u64).await;
            Ok((res, permits))
        } else {
            self.try_reserve(n32, bytes)
        }
    }

    fn try_reserve(&self, n: u32, bytes: usize) -> Result<(Reservation, OwnedSemaphorePermit)> {
        let permits = Arc::clone(&self.slots)
            .try_acquire_many_owned(n)
            .map_err(|_| {
                Error::new(
                    ErrorKind::QueueFull,
                    format!(
                        "producer queue is full ({} messages pending)",
                        self.config.max_pending_messages
                    ),
                )
            })?;
        let res = self.budget.try_reserve(bytes as u64).map_err(|e| {
            Error::new(
                ErrorKind::QueueFull,
                format!("client memory limit reached: {e}"),
            )
        })?;
        Ok((res, permits))
    }

    fn queued(
        msg: OutgoingMessage,
        user_sequence_id: bool,
        entry: EntryOptions,
        completion: Completion,
        reservation: Option<Reservation>,
        permits: Option<OwnedSemaphorePermit>,
        enqueued_at: Instant,
    ) -> Queued {
        Queued {
            msg,
            user_sequence_id,
            entry,
            completion,
            reservation,
            permits,
            enqueued_at,
        }
    }

    async fn push(&self, items: Vec<Queued>) -> Result<()> {
        let n = items.len();
        self.shared.pending_messages.fetch_add(n, Ordering::AcqRel);
        if let Err(mpsc::error::SendError(Command::Send(items))) =
            self.tx.send(Command::Send(items)).await
        {
            self.shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
            let err = Error::closed("producer");
            for q in items {
                q.completion.complete(Err(err.clone()));
            }
            return Err(err);
        }
        Ok(())
    }

    /// Queue one message; `completion` reports its id or error. Waits for room if the
    /// producer blocks when full, else fails with `QueueFull`.
    pub async fn send(
        &self,
        msg: OutgoingMessage,
        user_sequence_id: bool,
        entry: EntryOptions,
        completion: Completion,
    ) -> Result<()> {
        self.check_open()?;
        self.check_size(&msg)?;
        let (res, permits) = self.reserve(1, msg.payload.len()).await?;
        let q = Self::queued(
            msg,
            user_sequence_id,
            entry,
            completion,
            Some(res),
            Some(permits),
            Instant::now(),
        );
        self.push(vec![q]).await
    }

    /// Queue one message without ever waiting: fails with `QueueFull` when there is no room,
    /// whatever `block_if_queue_full` says (the caller then decides to wait elsewhere).
    pub fn try_send(
        &self,
        msg: OutgoingMessage,
        user_sequence_id: bool,
        entry: EntryOptions,
        completion: Completion,
    ) -> std::result::Result<(), Box<Rejected>> {
        let reject = |error, completion, msg| {
            Box::new(Rejected {
                error,
                completion,
                msg,
            })
        };
        if let Err(e) = self.check_open().and_then(|_| self.check_size(&msg)) {
            return Err(reject(e, completion, msg));
        }
        let (res, permits) = match self.try_reserve(1, msg.payload.len()) {
            Ok(x) => x,
            Err(e) => return Err(reject(e, completion, msg)),
        };
        let q = Self::queued(
            msg,
            user_sequence_id,
            entry,
            completion,
            Some(res),
            Some(permits),
            Instant::now(),
        );
        self.shared.pending_messages.fetch_add(1, Ordering::AcqRel);
        match self.tx.try_send(Command::Send(vec![q])) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.shared.pending_messages.fetch_sub(1, Ordering::AcqRel);
                let (closed, cmd) = match e {
                    mpsc::error::TrySendError::Full(c) => (false, c),
                    mpsc::error::TrySendError::Closed(c) => (true, c),
                };
                let Command::Send(mut v) = cmd else {
                    unreachable!("only Send commands are queued here")
                };
                let q = v.pop().expect("one item was queued");
                let err = if closed {
                    Error::closed("producer")
                } else {
                    Error::new(ErrorKind::QueueFull, "producer command queue is full")
                };
                Err(reject(err, q.completion, q.msg))
            }
        }
    }

    /// Queue many messages, reserving room in chunks so a huge call cannot deadlock on the
    /// pending limit. Each message's completion is `Group(group, offset + i)`.
    /// `user_sequence_ids`: the messages carry caller-chosen sequence ids (for deduplication).
    /// `schema_version`: every message's schema version when not the producer's own (one
    /// for the whole call: the messages batch together as any others do).
    pub async fn send_many(
        &self,
        msgs: Vec<OutgoingMessage>,
        group: &Arc<Group>,
        indexes: Vec<usize>,
        user_sequence_ids: bool,
        schema_version: Option<&Bytes>,
    ) -> Result<()> {
        // Two instances of one loop, so the plain call builds each entry exactly as it did
        // before versions existed: with the version read per message in one shared loop,
        // callgrind counted ~50 more instructions per message of a plain `send_many`.
        match schema_version {
            None => {
                self.queue_many(
                    msgs,
                    group,
                    indexes,
                    user_sequence_ids,
                    EntryOptions::default,
                )
                .await
            }
            // A version is shared, not copied: cloning `Bytes` bumps a count.
            Some(v) => {
                let entry = || EntryOptions {
                    schema_version: Some(v.clone()),
                    ..EntryOptions::default()
                };
                self.queue_many(msgs, group, indexes, user_sequence_ids, entry)
                    .await
            }
        }
    }

    async fn queue_many(
        &self,
        msgs: Vec<OutgoingMessage>,
        group: &Arc<Group>,
        indexes: Vec<usize>,
        user_sequence_ids: bool,
        entry: impl Fn() -> EntryOptions,
    ) -> Result<()> {
        self.check_open()?;
        for m in &msgs {
            self.check_size(m)?;
        }
        let chunk = self.config.max_pending_messages.clamp(1, 1000);
        // Each chunk's (count, bytes) read up front, so that the messages then move once,
        // straight into their queue items, rather than first into a vector per chunk.
        let parts: Vec<(usize, usize)> = msgs
            .chunks(chunk)
            .map(|c| (c.len(), c.iter().map(|m| m.payload.len()).sum()))
            .collect();
        let mut it = msgs.into_iter().zip(indexes);
        for (n, bytes) in parts {
            let (mut res, mut permits) = self.reserve(n, bytes).await?;
            let mut items = Vec::with_capacity(n);
            // One clock read per chunk: the chunk is handed over at one moment.
            let at = Instant::now();
            // `extend` from a mapping closure writes each 328-byte item in place (a push loop
            // built it on the stack and copied it in).
            items.extend(it.by_ref().take(n).map(|(m, i)| {
                // Split the chunk's reservation so each message releases its own share.
                let r = res.split(m.payload.len() as u64);
                let p = permits.split(1);
                Self::queued(
                    m,
                    user_sequence_ids,
                    entry(),
                    Completion::Group(Arc::clone(group), i),
                    r,
                    p,
                    at,
                )
            }));
            self.push(items).await?;
            // Let the actor batch this chunk now. Woken from a runtime worker, it sits in
            // that worker's LIFO slot, which no other worker may take, so without a yield it
            // started only after the whole call was handed over: a 10,000-message call's
            // first frame left ~1.3 ms after the call began instead of ~0.4 ms, and
            // handing over, batching, writing and the broker ran one after another.
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    /// Queue a bulk send of plain payloads (no key, properties, event time or caller-given
    /// sequence id; the producer's schema version): the actor cuts batches straight from
    /// `packed`, and each batch entry settles its messages in `group` as one range. Room is
    /// reserved in chunks as for [`send_many`](Self::send_many), so memory stays within the
    /// client's budget and a huge call cannot deadlock on the pending limit; each chunk
    /// crosses to the actor as one item. What could not be queued (the producer closed, a
    /// message too big: then nothing is) is failed in `group` and returned as the error.
    pub async fn send_bulk(
        &self,
        packed: Arc<crate::engine::bulk::Packed>,
        group: &Arc<bulk::BulkGroup>,
    ) -> Result<()> {
        let n = packed.len();
        if let Err(e) = self.check_bulk(packed.max_len()) {
            group.failed(n, &e);
            return Err(e);
        }
        self.send_bulk_range(&packed, group, 0, n).await
    }

    /// Whether a bulk send whose largest payload is `max_len` bytes can be queued: the
    /// producer open and no message above the broker's limit (a bulk call is refused whole
    /// before any of it is sent).
    pub(crate) fn check_bulk(&self, max_len: usize) -> Result<()> {
        self.check_open()?;
        let max = self.max_message_size();
        if max_len > max {
            return Err(Error::new(
                ErrorKind::MessageTooBig,
                format!(
                    "a message of {max_len} bytes is larger than the broker's maximum of {max} \
                     bytes"
                ),
            ));
        }
        Ok(())
    }

    /// Queue messages `start..end` of a bulk send checked with [`check_bulk`](Self::check_bulk)
    /// (see [`send_bulk`](Self::send_bulk)); on failure the ones of the range not queued are
    /// failed in `group` and the error returned.
    pub(crate) async fn send_bulk_range(
        &self,
        packed: &Arc<crate::engine::bulk::Packed>,
        group: &Arc<bulk::BulkGroup>,
        start: usize,
        end: usize,
    ) -> Result<()> {
        let fail_rest = |from: usize, e: Error| {
            group.failed(end - from, &e);
            Err(e)
        };
        let chunk = self.config.max_pending_messages.clamp(1, 1000);
        // A chunk also holds at most half the client's memory budget, so a call larger than
        // the budget waits for receipts between chunks instead of being granted one
        // oversized reservation (which the budget allows when nothing else is reserved).
        let byte_cap = match self.budget.limit() {
            0 => usize::MAX,
            limit => usize::try_from(limit / 2).unwrap_or(usize::MAX).max(1),
        };
        let mut from = start;
        while from < end {
            let mut to = from + 1;
            let mut bytes = packed.bytes_in(from, to);
            while to < end && to - from < chunk {
                let next = packed.bytes_in(to, to + 1);
                if bytes + next > byte_cap {
                    break;
                }
                bytes += next;
                to += 1;
            }
            let (reservation, permits) = match self.reserve(to - from, bytes).await {
                Ok(x) => x,
                Err(e) => return fail_rest(from, e),
            };
            let item = bulk::BulkChunk {
                packed: Arc::clone(packed),
                from,
                to,
                group: Arc::clone(group),
                reservation,
                permits,
                enqueued_at: Instant::now(),
            };
            self.shared
                .pending_messages
                .fetch_add(to - from, Ordering::AcqRel);
            if let Err(mpsc::error::SendError(Command::Bulk(item))) =
                self.tx.send(Command::Bulk(item)).await
            {
                self.shared
                    .pending_messages
                    .fetch_sub(to - from, Ordering::AcqRel);
                drop(item);
                return fail_rest(from, Error::closed("producer"));
            }
            from = to;
            // As in `queue_many`: let the actor batch this chunk now.
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    /// Whether [`send_bulk`](Self::send_bulk) applies to this producer's settings: batching
    /// on, in send order (not key-based), and no chunking (whose large messages go their own
    /// way). Anything else takes the per-message path.
    pub fn bulk_eligible(&self) -> bool {
        self.config.batching
            && self.config.batching_type == BatchingType::Default
            && !self.config.chunking
    }

    /// Close the open batch and send it now rather than at the batching delay, without
    /// waiting for receipts — what a caller about to wait on its message's receipt asks for
    /// (the Java client does the same in its blocking `send`). Best effort: when the command
    /// queue is full the batch goes out at its delay as usual.
    pub fn trigger_flush(&self) {
        if self.config.batching {
            let _ = self.tx.try_send(Command::Trigger);
        }
    }

    /// Send whatever is batched now and wait until everything queued so far is acknowledged
    /// or failed.
    pub async fn flush(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Command::Flush(tx)).await.is_err() {
            return Ok(()); // closed: nothing left to flush
        }
        let _ = rx.await;
        Ok(())
    }

    /// Flush, then close on the broker. Idempotent.
    pub async fn close(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Command::Close(tx)).await.is_err() {
            self.shared.closed.store(true, Ordering::Release);
            return Ok(());
        }
        rx.await.unwrap_or(Ok(()))
    }
}

/// Wrap a payload already owned by Rust.
pub fn message(payload: Bytes) -> OutgoingMessage {
    OutgoingMessage::new(payload, 0)
}
