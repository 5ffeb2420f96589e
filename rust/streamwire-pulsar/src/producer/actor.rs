//! The producer actor: owns sequence ids, the batch being built, the in-flight queue and the
//! broker-side producer; reconnects and re-sends on its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use streamwire_core::log::{event, Level};

use bytes::{Bytes, BytesMut};
use tokio::sync::{mpsc, oneshot};

use streamwire_core::backoff::{Backoff, BackoffConfig};
use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, ErrorKind, Result};

use super::completion::Completion;
use super::frames::encode_entry;
use super::pending::{InFlight, PendingQueue, Receipt};
use super::placement::{place, OpenBatch, Placement};
use super::{Command, ProducerConfig, Queued, Shared};
use crate::client::PulsarClient;
use crate::connection::{Connection, Event};
use crate::engine::batcher::{AddOutcome, BatchBuilder};
use crate::engine::compression::{compress, Codec};
use crate::engine::key_batches::{BatchingType, GroupKey, KeyedContainer};
use crate::message_id::MessageId;
use crate::protocol::{commands, pb, ProducerParams};
use crate::reconnect::Retries;
use crate::server_error::{code, server_error};

#[path = "actor_batch.rs"]
mod batch;
#[path = "actor_bulk.rs"]
mod bulk;
#[path = "actor_keyed.rs"]
mod keyed;
#[path = "actor_lazy.rs"]
mod lazy;
#[path = "actor_send.rs"]
mod send;

use batch::Joined;
pub(super) use lazy::start_lazily;

/// The broker-side producer on a live connection.
struct Live {
    conn: Connection,
    producer_id: u64,
    events: mpsc::Receiver<Event>,
}

pub(super) struct Actor {
    client: PulsarClient,
    config: Arc<ProducerConfig>,
    shared: Arc<Shared>,
    rx: mpsc::Receiver<Command>,
    live: Option<Live>,
    name: Option<String>,
    epoch: u64,
    topic_epoch: Option<u64>,
    next_sequence_id: u64,
    /// The previous message carried a caller-given sequence id at or below one already used
    /// (a possible duplicate). Such messages travel in batches of their own, as in the Java
    /// client: the broker judges a whole batch by its first sequence id, so a replayed id
    /// batched with new ones would get the new ones dropped as duplicates too.
    last_potential_duplicate: bool,
    batcher: Option<BatchBuilder>,
    /// Completions and holdings of the messages in the batch being built, in order.
    batch_items: Vec<(
        Completion,
        Option<Reservation>,
        Option<tokio::sync::OwnedSemaphorePermit>,
    )>,
    batch_opened_at: Option<Instant>,
    /// Payload bytes of the messages in the batch being built (for metrics).
    batch_payload_bytes: usize,
    pending: PendingQueue,
    flush_waiters: Vec<(u64, oneshot::Sender<()>)>,
    retries: Retries,
    reconnect_at: Option<Instant>,
    out: BytesMut,
    terminal: Option<Error>,
    /// Sequence id and id of the first chunk of the chunked message being acknowledged.
    chunk_first: Option<(u64, MessageId)>,
    /// The schema version from ProducerSuccess, set on every message's metadata.
    schema_version: Option<Bytes>,
    /// The schema version of the batch being built when it is not the producer's own (a
    /// batch carries one version; see `placement`).
    batch_schema_version: Option<Bytes>,
    /// The transaction of the batch being built (a batch belongs to one; see `placement`).
    batch_txn: Option<crate::transaction::TxnId>,
    /// Key-based batching: the messages waiting, grouped by key (see `actor_keyed`).
    keyed: Option<KeyedContainer<Queued>>,
    /// Key-based batching: the key of the batch being built (a batch holds one key).
    batch_key: Option<GroupKey>,
    /// End-to-end encryption: this partition producer's data key (None: not encrypting).
    encryptor: Option<crate::crypto::Encryptor>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Actor {
    pub(super) async fn connect(
        client: PulsarClient,
        config: Arc<ProducerConfig>,
        shared: Arc<Shared>,
        rx: mpsc::Receiver<Command>,
    ) -> Result<Actor> {
        Self::connect_or_back(client, config, shared, rx)
            .await
            .map_err(|(e, _)| e)
    }

    /// [`connect`](Self::connect), handing the command channel back on failure (a lazily
    /// started producer then fails what is queued in it, see `actor_lazy`).
    async fn connect_or_back(
        client: PulsarClient,
        config: Arc<ProducerConfig>,
        shared: Arc<Shared>,
        rx: mpsc::Receiver<Command>,
    ) -> std::result::Result<Actor, (Error, mpsc::Receiver<Command>)> {
        let batcher = config
            .batching
            .then(|| BatchBuilder::new(config.batch.clone()));
        let keyed = (config.batching && config.batching_type == BatchingType::KeyBased)
            .then(|| KeyedContainer::new(config.batch.clone()));
        // As the Java producer: an unusable recipient key fails the producer's creation, not
        // its first send.
        let encryptor = match &config.encryption {
            None => None,
            Some(enc) => match crate::crypto::Encryptor::new(
                enc.key_names.clone(),
                enc.reader.clone(),
                Instant::now(),
            ) {
                Ok(e) => Some(e),
                Err(e) => return Err((Error::new(ErrorKind::Crypto, e.to_string()), rx)),
            },
        };
        let mut actor = Actor {
            client,
            name: config.producer_name.clone(),
            config,
            shared,
            rx,
            live: None,
            epoch: 0,
            topic_epoch: None,
            next_sequence_id: 0,
            last_potential_duplicate: false,
            batcher,
            batch_items: Vec::new(),
            batch_opened_at: None,
            batch_payload_bytes: 0,
            pending: PendingQueue::default(),
            flush_waiters: Vec::new(),
            retries: Retries::new(Backoff::new(BackoffConfig {
                initial: Duration::from_millis(100),
                max: Duration::from_secs(30),
                ..BackoffConfig::default()
            })),
            reconnect_at: None,
            out: BytesMut::with_capacity(64 * 1024),
            terminal: None,
            chunk_first: None,
            schema_version: None,
            batch_schema_version: None,
            batch_txn: None,
            keyed,
            batch_key: None,
            encryptor,
        };
        // The owner may be gone (a failover in progress): retried until the operation timeout,
        // at most a second apart (see `reconnect`); the last failure is what the caller sees.
        let deadline = Instant::now() + actor.client.config().operation_timeout;
        loop {
            match actor.establish(true).await {
                Ok(()) => return Ok(actor),
                Err(e) if crate::reconnect::retry_creation(&e) => {
                    let delay = actor.retries.delay(&e);
                    if Instant::now() + delay >= deadline {
                        return Err((e, actor.rx));
                    }
                    event(Level::Debug, "pulsar.producer", || {
                        (
                            format!("creating the producer failed ({e}); again in {delay:?}"),
                            vec![("topic", actor.shared.topic.to_string())],
                        )
                    });
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err((e, actor.rx)),
            }
        }
    }

    /// Look up, connect, and create the producer on the broker.
    async fn establish(&mut self, first: bool) -> Result<()> {
        let topic = self.shared.topic.to_string();
        let (conn, _owner) = self.client.connection_for(&self.shared.topic).await?;
        let producer_id = conn.new_handler_id();
        let (etx, erx) = mpsc::channel(1024);
        conn.register_handler(producer_id, etx)?;
        let request_id = conn.new_request_id();
        let params = ProducerParams {
            topic: topic.clone(),
            producer_id,
            request_id,
            producer_name: self.name.clone(),
            user_provided_producer_name: self.config.producer_name.is_some(),
            epoch: self.epoch,
            access_mode: self.config.access_mode,
            topic_epoch: self.topic_epoch,
            metadata: self
                .config
                .properties
                .iter()
                .map(|(k, v)| pb::KeyValue {
                    key: k.clone(),
                    value: v.clone(),
                })
                .collect(),
            schema: self.config.schema.clone(),
            initial_subscription_name: self.config.initial_subscription_name.clone(),
            ..ProducerParams::default()
        };
        let res = conn
            .request(request_id, "create producer", commands::producer(&params))
            .await;
        let mut frame = match res {
            Ok(f) => f,
            Err(e) => {
                conn.unregister_handler(producer_id);
                if e.kind() == ErrorKind::Timeout {
                    // The protocol asks us to close a producer whose creation got no answer.
                    let rid = conn.new_request_id();
                    let _ = conn
                        .send_command(commands::close_producer(producer_id, rid))
                        .await;
                }
                return Err(e.context(format!("create producer on {topic}")));
            }
        };
        let mut ok = frame.command.producer_success.take().unwrap_or_default();
        if ok.producer_ready == Some(false) {
            // WaitForExclusive: the broker answers again once we hold the topic.
            let mut f = conn
                .await_response(
                    request_id,
                    "wait for exclusive access",
                    Duration::from_secs(86_400),
                )
                .await?;
            ok = f.command.producer_success.take().unwrap_or_default();
        }
        self.name = Some(ok.producer_name.clone());
        *self.shared.name.lock().unwrap_or_else(|p| p.into_inner()) = ok.producer_name.clone();
        self.shared.stats.metrics().set_name(&ok.producer_name);
        if ok.topic_epoch.is_some() {
            self.topic_epoch = ok.topic_epoch;
        }
        if self.config.schema.is_some() {
            // Every message names the schema version it was written with, so that consumers
            // decode it with that version even after the topic's schema evolved.
            *self
                .shared
                .schema_version
                .lock()
                .unwrap_or_else(|p| p.into_inner()) =
                ok.schema_version.as_deref().map(<[u8]>::to_vec);
            self.schema_version = ok.schema_version.take();
        }
        let broker_last = ok.last_sequence_id.unwrap_or(-1);
        if first {
            let initial = self.config.initial_sequence_id.unwrap_or(-1);
            let last = broker_last.max(initial);
            self.next_sequence_id = (last + 1).max(0) as u64;
            self.shared.last_sequence_id.store(last, Ordering::Release);
        }
        let max = conn.max_message_size();
        self.shared.max_message_size.store(max, Ordering::Relaxed);
        self.live = Some(Live {
            conn,
            producer_id,
            events: erx,
        });
        self.shared.connected.store(true, Ordering::Release);
        self.epoch += 1;
        self.retries.reset();
        self.reconnect_at = None;
        Ok(())
    }

    pub(super) async fn run(mut self) {
        let mut expiry_tick = tokio::time::interval(Duration::from_millis(100));
        expiry_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let batch_deadline = self.batch_deadline();
            let reconnect_at = self.reconnect_at;
            tokio::select! {
                biased;
                ev = recv_event(&mut self.live) => self.on_event(ev).await,
                cmd = self.rx.recv() => match cmd {
                    Some(Command::Send(items)) => self.on_send(items).await,
                    Some(Command::Bulk(chunk)) => self.on_bulk(chunk).await,
                    Some(Command::Flush(tx)) => self.on_flush(tx).await,
                    Some(Command::Trigger) => self.flush_all().await,
                    Some(Command::Close(tx)) => {
                        let res = self.close().await;
                        let _ = tx.send(res);
                        return;
                    }
                    None => {
                        // Every handle is gone: deliver what we hold, then close.
                        let _ = self.close().await;
                        return;
                    }
                },
                _ = sleep_until(batch_deadline) => self.flush_all().await,
                _ = sleep_until(reconnect_at) => self.try_reconnect().await,
                _ = expiry_tick.tick() => self.expire(),
            }
        }
    }

    async fn on_send(&mut self, items: Vec<Queued>) {
        // One clock read for the hand-over, not one per message (a bulk send hands over
        // a thousand at once; reading the clock cost more than batching each of them).
        let now = Instant::now();
        if self.keyed.is_some() {
            self.on_send_keyed(items, now).await;
            return;
        }
        for q in items {
            match self.join_open_batch(q, now) {
                Joined::Added => {}
                Joined::Full => {
                    self.flush_batch().await;
                    yield_to_writer().await;
                }
                Joined::Declined(q) => self.enqueue(q, now).await,
            }
        }
        // Let more queued sends join the batch before the deadline; an unbatched producer
        // has already written everything.
    }

    async fn enqueue(&mut self, q: Queued, now: Instant) {
        if let Some(err) = &self.terminal {
            self.fail_queued(q, err.clone());
            return;
        }
        let Queued {
            mut msg,
            user_sequence_id,
            entry,
            completion,
            reservation,
            permits,
            enqueued_at,
        } = q;
        let potential_duplicate = user_sequence_id && msg.sequence_id < self.next_sequence_id;
        if user_sequence_id {
            self.next_sequence_id = self.next_sequence_id.max(msg.sequence_id + 1);
        } else {
            msg.sequence_id = self.next_sequence_id;
            self.next_sequence_id += 1;
        }
        // A possible duplicate starts a batch of its own, and so does the first message after
        // one (see `last_potential_duplicate`).
        let isolate = potential_duplicate || self.last_potential_duplicate;
        self.last_potential_duplicate = potential_duplicate;
        let open = OpenBatch {
            len: self.batch_items.len(),
            schema_version: self.batch_schema_version.as_deref(),
            txn: self.batch_txn,
        };
        match place(self.batcher.is_some(), open, &entry, isolate) {
            Placement::Join => {}
            Placement::CloseThenJoin => self.flush_batch().await,
            Placement::Alone => {
                self.flush_batch().await;
                self.send_single(msg, entry, completion, reservation, permits, enqueued_at)
                    .await;
                return;
            }
        }
        // Key-based batching: a batch holds one key.
        let key = self.keyed.is_some().then(|| GroupKey::of(&msg));
        if let Some(k) = &key {
            if !self.batch_items.is_empty() && self.batch_key.as_ref() != Some(k) {
                self.flush_batch().await;
            }
        }
        if self.batch_items.is_empty() {
            // The batch opens with this message: its version (and key) are the batch's.
            self.batch_schema_version = entry.schema_version.clone();
            self.batch_txn = entry.txn;
            self.batch_key = key.clone();
        }
        let len = msg.payload.len();
        let batcher = self.batcher.as_mut().expect("batchable implies a batcher");
        match batcher.add(msg, now) {
            AddOutcome::Added => {
                self.note_batch_item(completion, reservation, permits, enqueued_at, len);
            }
            AddOutcome::AddedBatchFull => {
                self.note_batch_item(completion, reservation, permits, enqueued_at, len);
                self.flush_batch().await;
                yield_to_writer().await;
            }
            AddOutcome::DoesNotFit(msg) => {
                self.flush_batch().await;
                self.batch_txn = entry.txn;
                self.batch_schema_version = entry.schema_version;
                self.batch_key = key;
                let batcher = self.batcher.as_mut().expect("batcher");
                let full = matches!(batcher.add(msg, now), AddOutcome::AddedBatchFull);
                self.note_batch_item(completion, reservation, permits, enqueued_at, len);
                if full {
                    self.flush_batch().await;
                }
                yield_to_writer().await;
            }
            AddOutcome::TooLargeForBatch(msg) => {
                self.flush_batch().await;
                self.send_single(msg, entry, completion, reservation, permits, enqueued_at)
                    .await;
            }
        }
    }

    fn fail_queued(&mut self, q: Queued, err: Error) {
        self.shared.pending_messages.fetch_sub(1, Ordering::AcqRel);
        self.shared.stats.on_failed(1);
        let Queued {
            completion,
            reservation,
            permits,
            ..
        } = q;
        drop((reservation, permits)); // free the room before the caller hears of it
        completion.complete(Err(err));
    }

    fn deadline_from(&self, enqueued_at: Instant) -> Instant {
        if self.config.send_timeout.is_zero() {
            enqueued_at + Duration::from_secs(365 * 24 * 3600)
        } else {
            enqueued_at + self.config.send_timeout
        }
    }

    fn compress_payload(&self, raw: &[u8]) -> Result<Option<Bytes>> {
        // An empty payload goes uncompressed: compressing cannot shrink it, and the official
        // C++/Python consumer cannot inflate zlib into 0 bytes (it discards such a message
        // as corrupted, even one written by the official producer).
        if self.config.compression == Codec::None || raw.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(raw.len() / 2 + 64);
        compress(self.config.compression, raw, &mut out).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("compression failed: {e}"),
            )
        })?;
        Ok(Some(Bytes::from(out)))
    }

    /// Encrypt an entry's (compressed) payload when the producer encrypts; otherwise hand
    /// it back untouched (no copy). `raw_len` is the size before compression.
    fn seal_payload(
        &mut self,
        md: &mut pb::MessageMetadata,
        payload: Bytes,
        raw_len: usize,
    ) -> Result<Bytes> {
        let Some(enc) = self.encryptor.as_mut() else {
            return Ok(payload);
        };
        if let Err(e) = enc.rotate_if_due(Instant::now()) {
            // The old data key stays in use (the Java producer does the same).
            event(Level::Warning, "pulsar.producer", || {
                (
                    format!("rotating the encryption data key failed, keeping the old one: {e}"),
                    vec![("topic", self.shared.topic.to_string())],
                )
            });
        }
        md.uncompressed_size = Some(raw_len as u32);
        enc.encrypt(md, &payload)
            .map(Bytes::from)
            .map_err(|e| Error::new(ErrorKind::Crypto, e.to_string()))
    }

    fn base_metadata(&self, sequence_id: u64) -> pb::MessageMetadata {
        pb::MessageMetadata {
            producer_name: self.name.clone().unwrap_or_default(),
            sequence_id,
            publish_time: now_ms(),
            schema_version: self.schema_version.clone(),
            ..Default::default()
        }
    }

    fn fail_items(
        &mut self,
        items: Vec<(
            Completion,
            Option<Reservation>,
            Option<tokio::sync::OwnedSemaphorePermit>,
        )>,
        err: &Error,
    ) {
        let n = items.len();
        self.shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
        self.shared.stats.on_failed(n as u64);
        for (c, r, p) in items {
            drop((r, p)); // free the room before the caller hears of it
            c.complete(Err(err.clone()));
        }
    }

    /// Write an entry if connected, and track it until its receipt.
    async fn dispatch(&mut self, mut entry: InFlight) {
        if let Some(live) = &self.live {
            let sent = match encode_entry(
                live.producer_id,
                live.conn.max_message_size(),
                &mut entry,
                &mut self.out,
            ) {
                Ok((head, payload)) => live.conn.send_split(head, payload).await,
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                self.on_disconnect(e);
            }
        }
        self.pending.push(entry);
    }

    async fn on_event(&mut self, ev: Option<Event>) {
        let frame = match ev {
            Some(Event::Frame(f)) => f,
            Some(Event::Disconnected(e)) => return self.on_disconnect(e),
            None => {
                return self.on_disconnect(Error::new(ErrorKind::Disconnected, "connection lost"))
            }
        };
        use pb::base_command::Type;
        match frame.command_type() {
            Some(Type::SendReceipt) => {
                let r = frame
                    .command
                    .send_receipt
                    .as_deref()
                    .cloned()
                    .unwrap_or_default();
                let (outcome, entry) = self.pending.on_receipt(r.sequence_id);
                match outcome {
                    Receipt::Matched => {
                        if let Some(e) = entry {
                            let id = r.message_id.unwrap_or_default();
                            self.complete_entry(e, id.ledger_id as i64, id.entry_id as i64);
                        }
                    }
                    Receipt::Stale => {}
                    Receipt::Unexpected => {
                        self.recreate(Error::new(
                            ErrorKind::Protocol,
                            "receipt out of order; re-creating the producer",
                        ))
                        .await
                    }
                }
                self.check_flush_waiters();
            }
            Some(Type::SendError) => {
                let e = frame
                    .command
                    .send_error
                    .as_deref()
                    .cloned()
                    .unwrap_or_default();
                let err = server_error(e.error, &e.message);
                if e.error == code::TOPIC_TERMINATED_ERROR || e.error == code::NOT_ALLOWED_ERROR {
                    self.terminal = Some(err.clone());
                    self.log_terminal(&err);
                    self.fail_all(&err);
                } else {
                    self.recreate(err).await;
                }
            }
            Some(Type::CloseProducer) => {
                self.recreate(Error::new(
                    ErrorKind::Disconnected,
                    "broker closed the producer",
                ))
                .await
            }
            _ => {}
        }
    }

    fn complete_entry(&mut self, e: InFlight, ledger: i64, entry: i64) {
        let partition = self.shared.partition;
        let this = MessageId::new(ledger, entry, partition, -1, 0);
        if let Some(c) = e.chunk {
            if c.chunk_id == 0 {
                self.chunk_first = Some((e.sequence_id, this));
            }
            if !c.last {
                return;
            }
        }
        let n = e.messages() as usize;
        self.shared
            .stats
            .on_acked(n as u64, e.bytes as u64, e.enqueued_at.elapsed());
        self.shared
            .last_sequence_id
            .store(e.highest_sequence_id as i64, Ordering::Release);
        // Count it done before completing, so `len(producer)` is 0 once the last future is.
        self.shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
        if e.chunk.is_some() {
            let first = match self.chunk_first.take() {
                Some((seq, first)) if seq == e.sequence_id => first,
                _ => this,
            };
            e.complete_chunked(this.with_first_chunk(&first));
        } else {
            e.complete(ledger, entry, partition);
        }
    }

    /// The live connection, taken away: from now on the producer is not connected.
    fn take_live(&mut self) -> Option<Live> {
        self.shared.connected.store(false, Ordering::Release);
        self.live.take()
    }

    /// Close the broker-side producer and schedule an immediate re-creation. Counted as a
    /// reconnect whatever the cause: a topic being unloaded may answer the sends in flight
    /// with a SendError before its CloseProducer (which then finds no handler), and both mean
    /// the same to the user.
    async fn recreate(&mut self, why: Error) {
        self.shared.stats.on_reconnect();
        if let Some(live) = self.take_live() {
            live.conn.unregister_handler(live.producer_id);
            let rid = live.conn.new_request_id();
            let _ = live
                .conn
                .send_command(commands::close_producer(live.producer_id, rid))
                .await;
        }
        let _ = why;
        self.reconnect_at = Some(Instant::now());
    }

    fn on_disconnect(&mut self, why: Error) {
        if let Some(live) = self.take_live() {
            live.conn.unregister_handler(live.producer_id);
        }
        event(Level::Warning, "pulsar.producer", || {
            (
                format!("producer disconnected, reconnecting: {why}"),
                vec![("topic", self.shared.topic.to_string())],
            )
        });
        self.shared.stats.on_reconnect();
        if self.reconnect_at.is_none() {
            self.reconnect_at = Some(Instant::now() + self.retries.backoff.next_delay());
        }
    }

    async fn try_reconnect(&mut self) {
        self.reconnect_at = None;
        let timeout = self.client.config().operation_timeout;
        let res = match tokio::time::timeout(timeout, self.establish(false)).await {
            Ok(r) => r,
            Err(_) => Err(Error::timeout("re-creating the producer")),
        };
        match res {
            Ok(()) => {
                // Re-send everything unacknowledged, in order, under the new producer id.
                let live = self.live.as_ref().expect("established");
                let mut out = std::mem::take(&mut self.out);
                let frames: Result<Vec<(Bytes, Bytes)>> = self
                    .pending
                    .iter_mut()
                    .map(|e| {
                        encode_entry(live.producer_id, live.conn.max_message_size(), e, &mut out)
                    })
                    .collect();
                self.out = out;
                let frames = match frames {
                    Ok(f) => f,
                    Err(err) => return self.on_disconnect(err),
                };
                let conn = live.conn.clone();
                event(Level::Info, "pulsar.producer", || {
                    (
                        format!("producer reconnected; re-sending {} entries", frames.len()),
                        vec![("topic", self.shared.topic.to_string())],
                    )
                });
                for (head, payload) in frames {
                    if let Err(err) = conn.send_split(head, payload).await {
                        return self.on_disconnect(err);
                    }
                }
            }
            Err(e) => {
                if matches!(
                    e.kind(),
                    ErrorKind::ProducerFenced
                        | ErrorKind::TopicTerminated
                        | ErrorKind::Authorization
                        | ErrorKind::Closed
                ) {
                    self.shared
                        .closed
                        .store(e.kind() == ErrorKind::Closed, Ordering::Release);
                    self.terminal = Some(e.clone());
                    self.log_terminal(&e);
                    self.fail_all(&e);
                    return;
                }
                let delay = self.retries.delay(&e);
                event(Level::Debug, "pulsar.producer", || {
                    (
                        format!("reconnect failed ({e}); next attempt in {delay:?}"),
                        vec![("topic", self.shared.topic.to_string())],
                    )
                });
                self.reconnect_at = Some(Instant::now() + delay);
            }
        }
    }

    /// Fail the messages whose send timeout passed; later ones keep going.
    fn expire(&mut self) {
        let now = Instant::now();
        let expired = self.pending.take_expired(now);
        if expired.is_empty() {
            return;
        }
        let err = Error::new(
            ErrorKind::Timeout,
            format!(
                "send timed out after {:.1}s waiting for the broker's receipt",
                self.config.send_timeout.as_secs_f64()
            ),
        );
        for e in expired {
            let n = e.messages() as usize;
            self.shared.stats.on_failed(n as u64);
            self.shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
            e.fail(&err);
        }
        self.check_flush_waiters();
    }

    /// The producer cannot go on (fenced, terminated, refused...): said once, as an error.
    fn log_terminal(&self, err: &Error) {
        event(Level::Error, "pulsar.producer", || {
            (
                format!("producer failed for good: {err}"),
                vec![("topic", self.shared.topic.to_string())],
            )
        });
    }

    fn fail_all(&mut self, err: &Error) {
        self.fail_keyed(err);
        let items = std::mem::take(&mut self.batch_items);
        self.batch_payload_bytes = 0;
        if let Some(b) = self.batcher.as_mut() {
            let _ = b.take();
        }
        self.fail_items(items, err);
        for e in self.pending.drain() {
            let n = e.messages() as usize;
            self.shared.stats.on_failed(n as u64);
            self.shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
            e.fail(err);
        }
        self.check_flush_waiters();
    }

    async fn on_flush(&mut self, tx: oneshot::Sender<()>) {
        self.flush_all().await;
        let upto = self.next_sequence_id;
        self.flush_waiters.push((upto, tx));
        self.check_flush_waiters();
    }

    fn check_flush_waiters(&mut self) {
        if self.flush_waiters.is_empty() {
            return;
        }
        let head = self.pending.iter().next().map(|e| e.sequence_id);
        let waiters = std::mem::take(&mut self.flush_waiters);
        for (upto, tx) in waiters {
            // Done when nothing sent before the flush is still in flight.
            if head.is_none_or(|h| h >= upto) {
                let _ = tx.send(());
            } else {
                self.flush_waiters.push((upto, tx));
            }
        }
    }

    async fn close(&mut self) -> Result<()> {
        self.flush_all().await;
        // Wait for outstanding receipts, bounded by the send timeout (expiry keeps running).
        let limit = if self.config.send_timeout.is_zero() {
            self.client.config().operation_timeout
        } else {
            self.config.send_timeout + Duration::from_millis(200)
        };
        let until = Instant::now() + limit;
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        while !self.pending.is_empty() && Instant::now() < until {
            tokio::select! {
                ev = recv_event(&mut self.live) => self.on_event(ev).await,
                _ = sleep_until(self.reconnect_at) => self.try_reconnect().await,
                _ = tick.tick() => self.expire(),
            }
        }
        self.shared.closed.store(true, Ordering::Release);
        let err = Error::closed("producer");
        self.fail_all(&err);
        // Refuse whatever is still queued in the channel.
        self.rx.close();
        while let Ok(cmd) = self.rx.try_recv() {
            match cmd {
                Command::Send(items) => {
                    for q in items {
                        self.fail_queued(q, err.clone());
                    }
                }
                Command::Bulk(chunk) => self.fail_chunk(chunk, &err),
                Command::Flush(tx) => {
                    let _ = tx.send(());
                }
                Command::Trigger => {}
                Command::Close(tx) => {
                    let _ = tx.send(Ok(()));
                }
            }
        }
        if let Some(live) = self.take_live() {
            live.conn.unregister_handler(live.producer_id);
            let rid = live.conn.new_request_id();
            let _ = live
                .conn
                .request(
                    rid,
                    "close producer",
                    commands::close_producer(live.producer_id, rid),
                )
                .await;
        }
        Ok(())
    }
}

async fn recv_event(live: &mut Option<Live>) -> Option<Event> {
    match live {
        Some(l) => l.events.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

/// After a full batch went to the connection: let its writer run now. The writer, woken from
/// this worker, waits in the worker's LIFO slot (no other worker may take it) until the actor
/// yields, and an actor with ten queued chunks of a `send_many` yields only when all ten are
/// batched: every frame then left at once at the end and the broker sat idle meanwhile. One
/// yield per full batch (a thousand messages at 100 B) costs next to nothing.
async fn yield_to_writer() {
    tokio::task::yield_now().await;
}
