//! One actor task per topic-partition consumer: subscribe, flow permits, deliver messages to
//! the partition's queue, send grouped acks and redeliveries, and reconnect invisibly.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use streamwire_core::log::{event, Level};

use tokio::sync::{mpsc, oneshot};

use crate::reconnect::Retries;
use streamwire_core::backoff::{Backoff, BackoffConfig};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::C;

use super::chunks::{ChunkAssembler, ChunkMeta};
use super::entry::{unpack, EntryContext, StartFilter};
use super::{ConsumerConfig, Slot};
use crate::client::PulsarClient;
use crate::connection::{Connection, Event};
use crate::engine::permits::FlowPermits;
use crate::message_id::MessageId;
use crate::protocol::commands::{self, SeekTarget, SubscribeParams};
use crate::protocol::pb;
use crate::protocol::pb::base_command::Type;
use crate::protocol::pb::command_ack::AckType;
use crate::protocol::pb::command_subscribe::SubType;
use crate::protocol::{Frame, PayloadSection};

/// Requests from the handle to the actor.
pub(crate) enum Control {
    Seek(SeekTarget, oneshot::Sender<Result<()>>),
    LastMessageId(oneshot::Sender<Result<MessageId>>),
    Stats(oneshot::Sender<Result<pb::CommandConsumerStatsResponse>>),
    RedeliverAll(oneshot::Sender<Result<()>>),
    Unsubscribe(oneshot::Sender<Result<()>>),
    Close(oneshot::Sender<Result<()>>),
    /// The live connection and consumer id (a transactional ack is sent and awaited by the
    /// caller, off the actor).
    Live(oneshot::Sender<Result<(Connection, u64)>>),
}

const EVENT_QUEUE: usize = 1024;

#[path = "actor_chunks.rs"]
mod chunked;

struct Live {
    conn: Connection,
    id: u64,
    events: mpsc::Receiver<Event>,
}

pub(crate) struct Actor {
    pub client: PulsarClient,
    pub slot: Arc<Slot>,
    pub cfg: Arc<ConsumerConfig>,
    pub ctl: mpsc::Receiver<Control>,
    pub permits: FlowPermits,
    pub ctx: EntryContext,
    /// Where a non-durable subscription (re)starts, and what to skip.
    pub start: Option<StartFilter>,
    /// A non-durable subscription was moved by publish time: the broker keeps its reset
    /// cursor, so re-subscribe without a start message id (until something is delivered).
    pub resume_cursor: bool,
    pub consumer_name: String,
    /// The client's cluster epoch this consumer's message ids belong to.
    pub cluster_epoch: u64,
    /// Chunked messages being reassembled.
    pub chunks: ChunkAssembler,
}

/// Whether the first subscribe is tried again after `e` (until the operation timeout).
/// `ConsumerBusy` is not: another consumer holds the exclusive subscription (or a Key_Shared
/// one with other settings) and will not let go because we wait, so the caller learns it at
/// once, as the official clients report it. A reconnect still retries it (the broker may
/// not have noticed yet that our previous connection is gone).
fn retry_first_subscribe(e: &Error) -> bool {
    e.is_retriable() && e.kind() != ErrorKind::ConsumerBusy
}

enum Exit {
    Reconnect,
    Stop,
}

impl Actor {
    /// Subscribe; the first outcome goes to `ready`, then run until closed.
    pub async fn run(mut self, ready: oneshot::Sender<Result<()>>) {
        let deadline = Instant::now() + self.client.config().operation_timeout;
        let mut backoff = Backoff::new(BackoffConfig::default());
        let mut live = loop {
            match self.connect().await {
                Ok(l) => break l,
                Err(e) if retry_first_subscribe(&e) && Instant::now() < deadline => {
                    tokio::time::sleep(crate::reconnect::retry_delay(&mut backoff, &e)).await;
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                    return;
                }
            }
        };
        let _ = ready.send(Ok(()));
        loop {
            match self.serve(&mut live).await {
                Exit::Stop => {
                    self.slot.connected.store(false, Ordering::Release);
                    return;
                }
                Exit::Reconnect => {
                    self.slot.connected.store(false, Ordering::Release);
                    live.conn.unregister_handler(live.id);
                    self.slot.acks().resend_after_reconnect();
                    self.slot.recheck_acks.store(
                        4 * u64::from(self.cfg.receiver_queue_size) + 10_000,
                        Ordering::Relaxed,
                    );
                    self.slot.stats.reconnects.fetch_add(1, Ordering::Relaxed);
                    self.slot.metrics.add(C::Reconnects, 1);
                    event(Level::Warning, "pulsar.consumer", || {
                        (
                            "consumer disconnected, reconnecting".to_owned(),
                            vec![
                                ("topic", self.slot.topic.to_string()),
                                ("subscription", self.cfg.subscription.clone()),
                            ],
                        )
                    });
                    match self.reconnect().await {
                        Some(l) => live = l,
                        None => return,
                    }
                }
            }
        }
    }

    /// Reconnect with jittered backoff, answering control requests meanwhile.
    async fn reconnect(&mut self) -> Option<Live> {
        self.discard_queue();
        let mut retries = Retries::new(Backoff::new(BackoffConfig::default()));
        loop {
            let delay = match self.connect().await {
                Ok(l) => {
                    *self.reconnect_error() = None;
                    event(Level::Info, "pulsar.consumer", || {
                        (
                            "consumer reconnected".to_owned(),
                            vec![
                                ("topic", self.slot.topic.to_string()),
                                ("subscription", self.cfg.subscription.clone()),
                            ],
                        )
                    });
                    return Some(l);
                }
                Err(e) if !e.is_retriable() && e.kind() != ErrorKind::Connect => {
                    self.fail(e);
                    return None;
                }
                Err(e) => {
                    // Retried forever (as the Java client does); visible in stats().
                    self.slot
                        .stats
                        .reconnect_failures
                        .fetch_add(1, Ordering::Relaxed);
                    *self.reconnect_error() = Some(e.to_string());
                    retries.delay(&e)
                }
            };
            let sleep = tokio::time::sleep(delay);
            tokio::pin!(sleep);
            loop {
                tokio::select! {
                    _ = &mut sleep => break,
                    c = self.ctl.recv() => match c {
                        None => return None,
                        Some(Control::Close(tx)) => {
                            self.finish();
                            let _ = tx.send(Ok(()));
                            return None;
                        }
                        Some(other) => refuse_while_disconnected(other),
                    },
                }
            }
        }
    }

    fn reconnect_error(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.slot
            .stats
            .reconnect_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn fail(&mut self, e: Error) {
        event(Level::Error, "pulsar.consumer", || {
            (
                format!("consumer failed for good: {e}"),
                vec![
                    ("topic", self.slot.topic.to_string()),
                    ("subscription", self.cfg.subscription.clone()),
                ],
            )
        });
        *self.slot.fatal.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        self.slot.app_notify.notify_waiters();
        self.slot.app_notify.notify_one();
    }

    fn finish(&mut self) {
        self.slot.app_notify.notify_waiters();
    }

    /// The client moved to another cluster: the message ids held here are the old cluster's
    /// and may name other messages there (both clusters' ledgers can start at the same ids),
    /// so pending acknowledgements are dropped, nothing is skipped as "already acknowledged",
    /// and a non-durable subscription starts again where it was configured to start (its
    /// last position is a position on the old cluster). Durable subscriptions resume from
    /// their cursor on the new cluster.
    fn forget_cluster_ids(&mut self) {
        self.slot.acks().reset_after_seek();
        self.slot.recheck_acks.store(0, Ordering::Relaxed);
        let partition = self.ctx.partition;
        self.start = self.cfg.start.map(|mut f| {
            f.id.partition = partition;
            f
        });
        self.resume_cursor = false;
    }

    /// Drop what the app has not taken yet; the broker sends it again after resubscribing.
    fn discard_queue(&mut self) {
        self.slot.queue.clear();
        if !self.cfg.durable {
            if let Some(last) = self.slot.queue.last_delivered() {
                self.start = Some(StartFilter {
                    id: last,
                    inclusive: false,
                });
                self.resume_cursor = false;
            }
        }
    }

    async fn connect(&mut self) -> Result<Live> {
        let epoch = self.client.cluster_epoch();
        if epoch != self.cluster_epoch {
            self.forget_cluster_ids();
            self.cluster_epoch = epoch;
        }
        let (conn, _) = self.client.connection_for(&self.slot.topic).await?;
        let id = conn.new_handler_id();
        let (tx, events) = mpsc::channel(EVENT_QUEUE);
        conn.register_handler(id, tx)?;
        let rid = conn.new_request_id();
        let start_message_id = if self.cfg.durable || self.resume_cursor {
            None
        } else {
            self.start
                .map(|f| {
                    let s = f.id;
                    if f.inclusive && !s.is_batch() && s.entry_id >= 0 && s.ledger_id >= 0 {
                        MessageId::new(s.ledger_id, s.entry_id - 1, s.partition, -1, 0).to_proto()
                    } else {
                        s.to_proto()
                    }
                })
                .or_else(|| Some(self.cfg.initial_position_id().to_proto()))
        };
        let params = SubscribeParams {
            topic: self.slot.topic_str.to_string(),
            subscription: self.cfg.subscription.clone(),
            sub_type: self.cfg.sub_type,
            consumer_id: id,
            request_id: rid,
            consumer_name: Some(self.consumer_name.clone()),
            durable: self.cfg.durable,
            start_message_id,
            read_compacted: self.cfg.read_compacted,
            initial_position: self.cfg.initial_position,
            replicate_subscription_state: self.cfg.replicate_subscription_state,
            key_shared_meta: self.cfg.key_shared_meta(),
            schema: self.cfg.schema.clone(),
            ..SubscribeParams::default()
        };
        if let Err(e) = conn
            .request(rid, "subscribe", commands::subscribe(&params))
            .await
        {
            conn.unregister_handler(id);
            return Err(e.context(format!("subscribe to {}", self.slot.topic_str)));
        }
        // Nothing from a previous connection may reach the app now.
        self.slot.queue.clear();
        self.chunks.clear();
        if let Some(dl) = &self.slot.dead_letter {
            dl.clear();
        }
        let grant = self.permits.on_reconnect();
        self.slot.connected.store(true, Ordering::Release);
        let live = Live { conn, id, events };
        // Acks made while disconnected go first, so the broker does not redeliver them.
        self.flush_acks(&live).await;
        live.conn.send_command(commands::flow(id, grant)).await?;
        Ok(live)
    }

    async fn serve(&mut self, live: &mut Live) -> Exit {
        let period = self
            .cfg
            .ack_group_time
            .clamp(Duration::from_millis(5), Duration::from_millis(100));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let slot = Arc::clone(&self.slot);
        loop {
            tokio::select! {
                ev = live.events.recv() => match ev {
                    Some(Event::Frame(f)) => {
                        if let Some(exit) = self.on_frame(live, *f).await {
                            return exit;
                        }
                    }
                    Some(Event::Disconnected(_)) | None => return Exit::Reconnect,
                },
                c = self.ctl.recv() => match c {
                    None => {
                        self.close(live).await;
                        return Exit::Stop;
                    }
                    Some(c) => if let Some(exit) = self.on_control(live, c).await {
                        return exit;
                    },
                },
                _ = slot.queue.wake_actor.notified() => {
                    if self.return_permits(live).await.is_err() {
                        return Exit::Reconnect;
                    }
                    let due = slot.acks().should_flush() || self.cfg.ack_group_time.is_zero();
                    if due {
                        self.flush_acks(live).await;
                    }
                }
                _ = tick.tick() => {
                    if self.return_permits(live).await.is_err() {
                        return Exit::Reconnect;
                    }
                    self.expire_chunks();
                    self.flush_acks(live).await;
                    self.redeliver_due(live).await;
                }
            }
        }
    }

    async fn return_permits(&mut self, live: &Live) -> Result<()> {
        let n = self.slot.queue.take_delivered();
        if n == 0 {
            return Ok(());
        }
        let grant = self
            .permits
            .on_message_delivered_to_app(n)
            .unwrap_or(Some(n));
        if let Some(g) = grant {
            live.conn.send_command(commands::flow(live.id, g)).await?;
        }
        Ok(())
    }

    async fn flush_acks(&mut self, live: &Live) {
        let batches = self.slot.acks().take();
        for b in batches {
            let kind = if b.cumulative {
                AckType::Cumulative
            } else {
                AckType::Individual
            };
            let _ = live
                .conn
                .send_command(commands::ack(live.id, kind, b.ids, None, None))
                .await;
        }
    }

    async fn redeliver_due(&mut self, live: &Live) {
        let now = Instant::now();
        let mut due = self.slot.nacks().take_due(now);
        if let Some(u) = &self.slot.unacked {
            let expired = u
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take_expired(now);
            due.extend(expired.iter().map(MessageId::entry));
        }
        if due.is_empty() {
            return;
        }
        due.sort();
        due.dedup();
        let _ = self.redeliver(live, due).await;
    }

    /// Ask for redelivery: the given entries on shared subscriptions, everything otherwise.
    async fn redeliver(&mut self, live: &Live, ids: Vec<MessageId>) -> Result<()> {
        let individual = matches!(self.cfg.sub_type, SubType::Shared | SubType::KeyShared);
        if individual && !ids.is_empty() {
            let mut ids = ids;
            if let Some(dl) = &self.slot.dead_letter {
                let (dead, keep) = dl.take(ids);
                if !dead.is_empty() {
                    tokio::spawn(super::dlq::send(
                        self.client.clone(),
                        Arc::clone(&self.slot),
                        dead,
                    ));
                }
                ids = keep;
                if ids.is_empty() {
                    return Ok(());
                }
            }
            if ids.iter().any(|i| !i.is_batch()) {
                let mut all = Vec::with_capacity(ids.len());
                for id in ids {
                    match self.slot.expand(&id, false) {
                        Some(chunks) => all.extend(chunks),
                        None => all.push(id),
                    }
                }
                ids = all;
            }
            {
                let mut acks = self.slot.acks();
                for id in &ids {
                    acks.forget_batch(id);
                }
            }
            let protos = ids.iter().map(|i| i.to_proto()).collect();
            self.slot
                .stats
                .redelivery_requests
                .fetch_add(ids.len() as u64, Ordering::Relaxed);
            self.slot.metrics.add(C::Redeliveries, ids.len() as u64);
            return live
                .conn
                .send_command(commands::redeliver_unacknowledged(live.id, protos, None))
                .await;
        }
        // Exclusive / failover: everything unacked comes again, in order; what is queued
        // here would come twice, so drop it and hand its permits back.
        let (discarded, delivered) = self.slot.queue.clear();
        self.chunks.clear();
        if let Some(u) = &self.slot.unacked {
            u.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
        self.slot
            .stats
            .redelivery_requests
            .fetch_add(1, Ordering::Relaxed);
        self.slot.metrics.add(C::Redeliveries, 1);
        live.conn
            .send_command(commands::redeliver_unacknowledged(live.id, vec![], None))
            .await?;
        let mut grant = 0;
        if delivered > 0 {
            grant += self
                .permits
                .on_message_delivered_to_app(delivered)
                .ok()
                .flatten()
                .unwrap_or(0);
        }
        if discarded > 0 {
            grant += self
                .permits
                .on_messages_discarded(discarded)
                .ok()
                .flatten()
                .unwrap_or(0);
        }
        if grant > 0 {
            live.conn
                .send_command(commands::flow(live.id, grant))
                .await?;
        }
        Ok(())
    }

    async fn on_frame(&mut self, live: &Live, frame: Frame) -> Option<Exit> {
        match frame.command.r#type() {
            Type::Message => {
                let cmd = frame.command.message.as_ref()?;
                let section = frame.payload.as_ref()?;
                if let Some(meta) = chunk_meta(section) {
                    return self.on_chunk(live, cmd, section, meta).await;
                }
                let filter = if self.cfg.durable {
                    None
                } else {
                    self.start.as_ref()
                };
                // Acknowledged messages come again only after a reconnect (acks lost with the
                // connection): outside that window, skip the ack tracker and its lock.
                let res = if self.slot.recheck_acks.load(Ordering::Relaxed) > 0 {
                    let acks = self.slot.acks();
                    unpack(&self.ctx, cmd, section, filter, |id| acks.is_acked(id))
                } else {
                    unpack(&self.ctx, cmd, section, filter, |_| false)
                };
                match res {
                    Ok(u) => {
                        let _ = self.permits.on_messages_received(u.permits);
                        if u.skipped > 0 {
                            self.slot
                                .stats
                                .skipped
                                .fetch_add(u64::from(u.skipped), Ordering::Relaxed);
                            if self.cfg.durable {
                                // Already acknowledged by the app: acknowledge it again.
                                let b = MessageId::from_proto(&cmd.message_id);
                                let e = MessageId::new(
                                    b.ledger_id,
                                    b.entry_id,
                                    self.ctx.partition,
                                    -1,
                                    0,
                                );
                                self.slot.acks().reack(&e);
                            }
                            if let Some(exit) = self.discard(live, u.skipped).await {
                                return Some(exit);
                            }
                        }
                        if u.surplus > 0 {
                            if let Some(exit) = self.discard(live, u.surplus).await {
                                return Some(exit);
                            }
                        }
                        let mut u = u;
                        if let Some(exit) = self.dead_letter_filter(live, &mut u.messages).await {
                            return Some(exit);
                        }
                        if !u.messages.is_empty() {
                            self.slot.count_received(&u.messages);
                            self.slot.queue.push(u.messages);
                            self.slot.app_notify.notify_one();
                        }
                    }
                    Err(r) if r.hold => {
                        // FAIL: neither delivered nor acknowledged (as the official clients);
                        // an ack timeout redelivers it, and the application hears why.
                        self.slot.stats.invalid.fetch_add(1, Ordering::Relaxed);
                        let _ = self.permits.on_messages_received(r.permits);
                        if let Some(u) = &self.slot.unacked {
                            let b = MessageId::from_proto(&cmd.message_id);
                            let id =
                                MessageId::new(b.ledger_id, b.entry_id, self.ctx.partition, -1, 0);
                            u.lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .delivered(id, Instant::now());
                        }
                        self.slot
                            .hold_error(Error::new(ErrorKind::Crypto, r.reason));
                        return self.discard(live, r.permits).await;
                    }
                    Err(r) => {
                        self.slot.stats.invalid.fetch_add(1, Ordering::Relaxed);
                        let ack = commands::ack(
                            live.id,
                            AckType::Individual,
                            vec![MessageId::from_proto(&cmd.message_id).entry().to_proto()],
                            Some(r.validation),
                            None,
                        );
                        let _ = live.conn.send_command(ack).await;
                        let _ = self.permits.on_messages_received(r.permits);
                        return self.discard(live, r.permits).await;
                    }
                }
                None
            }
            Type::ReachedEndOfTopic => {
                self.slot.end_of_topic.store(true, Ordering::Release);
                self.slot.app_notify.notify_waiters();
                self.slot.app_notify.notify_one();
                None
            }
            Type::CloseConsumer => Some(Exit::Reconnect),
            _ => None,
        }
    }

    /// Dead-letter policy on arrival: remember messages at the maximum redelivery count;
    /// send those above it to the dead-letter topic without delivering them.
    async fn dead_letter_filter(
        &mut self,
        live: &Live,
        messages: &mut Vec<super::ReceivedMessage>,
    ) -> Option<Exit> {
        let dl = self.slot.dead_letter.as_ref()?;
        let count = messages.first()?.redelivery_count();
        if count < dl.max_redeliver_count {
            return None;
        }
        if count == dl.max_redeliver_count {
            dl.remember(messages);
            return None;
        }
        let dead = std::mem::take(messages);
        let n = dead.len() as u32;
        tokio::spawn(super::dlq::send(
            self.client.clone(),
            Arc::clone(&self.slot),
            dead,
        ));
        self.discard(live, n).await
    }

    fn expire_chunks(&mut self) {
        if self.chunks.is_empty() {
            return;
        }
        let ack = self.chunks.expire(Instant::now());
        if !ack.is_empty() {
            let mut acks = self.slot.acks();
            for id in ack {
                acks.individual(id);
            }
        }
    }

    /// Give back the permits of `n` messages that do not reach the queue (skipped, invalid,
    /// dead-lettered, or chunks held back); a failed FLOW means the connection is gone.
    async fn discard(&mut self, live: &Live, n: u32) -> Option<Exit> {
        if let Ok(Some(g)) = self.permits.on_messages_discarded(n) {
            if live
                .conn
                .send_command(commands::flow(live.id, g))
                .await
                .is_err()
            {
                return Some(Exit::Reconnect);
            }
        }
        None
    }

    async fn request(
        &self,
        live: &Live,
        what: &'static str,
        build: impl FnOnce(u64) -> pb::BaseCommand,
    ) -> Result<Frame> {
        let rid = live.conn.new_request_id();
        live.conn.request(rid, what, build(rid)).await
    }

    async fn on_control(&mut self, live: &mut Live, c: Control) -> Option<Exit> {
        let id = live.id;
        match c {
            Control::Seek(target, tx) => {
                // Acks made before the seek must not land after it.
                self.flush_acks(live).await;
                let res = self
                    .request(live, "seek", |rid| commands::seek(id, rid, target.clone()))
                    .await;
                let ok = res.is_ok();
                let _ = tx.send(res.map(|_| ()));
                if ok {
                    // The broker drops its side of the consumer after a seek; start over from
                    // the new position, with nothing from before it left in the queue.
                    let by_time_non_durable =
                        !self.cfg.durable && matches!(target, SeekTarget::PublishTime(_));
                    match &target {
                        SeekTarget::MessageId(m) => {
                            let mut m = MessageId::from_proto(m);
                            m.partition = self.ctx.partition;
                            self.start = Some(StartFilter {
                                id: m,
                                inclusive: true,
                            });
                            self.resume_cursor = false;
                        }
                        SeekTarget::PublishTime(_) if by_time_non_durable => {
                            // Only the broker knows where that time is: resume its cursor.
                            self.start = None;
                            self.resume_cursor = true;
                        }
                        SeekTarget::PublishTime(_) => {}
                    }
                    self.slot.queue.clear();
                    self.slot.queue.set_last_delivered(None);
                    self.chunks.clear();
                    self.slot.acks().reset_after_seek();
                    if let Some(u) = &self.slot.unacked {
                        u.lock().unwrap_or_else(|p| p.into_inner()).clear();
                    }
                    if !by_time_non_durable {
                        // (Closing a non-durable subscription's only consumer would drop the
                        // subscription and its reset cursor; the broker has already closed
                        // its side of the consumer after the seek.)
                        let rid = live.conn.new_request_id();
                        let _ = live
                            .conn
                            .request(rid, "close consumer", commands::close_consumer(id, rid))
                            .await;
                    }
                    return Some(Exit::Reconnect);
                }
                None
            }
            Control::LastMessageId(tx) => {
                let res = self
                    .request(live, "get last message id", |rid| {
                        commands::get_last_message_id(id, rid)
                    })
                    .await
                    .and_then(|f| {
                        let r = f.command.get_last_message_id_response.ok_or_else(|| {
                            Error::new(ErrorKind::Protocol, "empty GetLastMessageId response")
                        })?;
                        let mut m = MessageId::from_proto(&r.last_message_id);
                        m.partition = self.ctx.partition;
                        Ok(m)
                    });
                let _ = tx.send(res);
                None
            }
            Control::Stats(tx) => {
                let res = self
                    .request(live, "consumer stats", |rid| {
                        commands::consumer_stats(id, rid)
                    })
                    .await
                    .map(|f| *f.command.consumer_stats_response.unwrap_or_default());
                let _ = tx.send(res);
                None
            }
            Control::RedeliverAll(tx) => {
                self.slot
                    .nacks()
                    .take_due(Instant::now() + Duration::from_secs(86400 * 365));
                let res = self.redeliver(live, vec![]).await;
                let _ = tx.send(res);
                None
            }
            Control::Unsubscribe(tx) => {
                self.flush_acks(live).await;
                let res = self
                    .request(live, "unsubscribe", |rid| {
                        commands::unsubscribe(id, rid, false)
                    })
                    .await;
                let ok = res.is_ok();
                let _ = tx.send(res.map(|_| ()));
                if ok {
                    live.conn.unregister_handler(id);
                    self.finish();
                    return Some(Exit::Stop);
                }
                None
            }
            Control::Close(tx) => {
                self.close(live).await;
                let _ = tx.send(Ok(()));
                Some(Exit::Stop)
            }
            Control::Live(tx) => {
                // Grouped plain acks go first, so they cannot land after the transactional
                // ack of a later message.
                self.flush_acks(live).await;
                let _ = tx.send(Ok((live.conn.clone(), id)));
                None
            }
        }
    }

    async fn close(&mut self, live: &Live) {
        self.flush_acks(live).await;
        let rid = live.conn.new_request_id();
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            live.conn.request(
                rid,
                "close consumer",
                commands::close_consumer(live.id, rid),
            ),
        )
        .await;
        live.conn.unregister_handler(live.id);
        self.finish();
    }
}

fn refuse_while_disconnected(c: Control) {
    let err = || {
        Error::new(
            ErrorKind::Disconnected,
            "consumer is reconnecting; try again",
        )
    };
    match c {
        Control::Seek(_, tx) | Control::RedeliverAll(tx) | Control::Unsubscribe(tx) => {
            let _ = tx.send(Err(err()));
        }
        Control::LastMessageId(tx) => {
            let _ = tx.send(Err(err()));
        }
        Control::Stats(tx) => {
            let _ = tx.send(Err(err()));
        }
        Control::Close(tx) => {
            let _ = tx.send(Ok(()));
        }
        Control::Live(tx) => {
            let _ = tx.send(Err(err()));
        }
    }
}

/// The chunk fields of an entry that is one chunk of a chunked message (checksum verified).
fn chunk_meta(section: &PayloadSection) -> Option<ChunkMeta> {
    let m = section.verified_metadata().ok()?;
    let n = m.num_chunks_from_msg.filter(|&n| n > 1)?;
    Some(ChunkMeta {
        uuid: m.uuid.clone()?,
        chunk_id: u32::try_from(m.chunk_id?).ok()?,
        num_chunks: n as u32,
        total_size: usize::try_from(m.total_chunk_msg_size.unwrap_or(0)).unwrap_or(0),
        publish_time: m.publish_time,
    })
}

#[cfg(test)]
mod first_subscribe_tests {
    use super::*;
    use crate::server_error::{code, server_error};

    #[test]
    fn consumer_busy_ends_the_first_subscribe_other_retriable_errors_do_not() {
        let busy = server_error(
            code::CONSUMER_BUSY,
            "Exclusive consumer is already connected",
        );
        assert!(busy.is_retriable(), "a reconnect still retries it");
        assert!(!retry_first_subscribe(&busy));
        assert!(retry_first_subscribe(&server_error(
            code::SERVICE_NOT_READY,
            ""
        )));
        assert!(retry_first_subscribe(&Error::new(
            ErrorKind::Connect,
            "refused"
        )));
        assert!(!retry_first_subscribe(&server_error(
            code::TOPIC_NOT_FOUND,
            ""
        )));
    }
}
