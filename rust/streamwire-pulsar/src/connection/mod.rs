//! One TCP connection to one broker, driven by two Tokio tasks.
//!
//! The *reader* task decodes frames and routes them: responses to the request that waits for
//! them (by request id), receipts and messages to the producer or consumer registered under
//! their id, broker pings answered at once. The *writer* task owns the socket's write half,
//! coalesces whatever is queued into one buffer per write, sends keepalive pings, and expires
//! requests whose deadline passed. Both end together; every waiter then gets `Disconnected`.
//!
//! Cancel safety: dropping the future of [`Connection::request`] leaves its slot in the
//! pending table until the writer's sweep sees the receiver is gone (within one tick).

mod handshake;
pub mod pool;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use streamwire_core::log::{event, Level};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::protocol::{self, pb, Frame, FrameDecoder};
use crate::server_error::server_error;
use crate::service_url::BrokerAddr;

pub use crate::auth::{Auth, AuthProvider};
// TLS is protocol-neutral and lives in the core crate (shared with Pravega); `pulsar+ssl://`
// connections use it as it is, the broker's host being the verified name.
pub use streamwire_core::tls::{self, TlsConnector, TlsOptions};

/// Settings shared by every connection a client opens.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    pub connect_timeout: Duration,
    pub operation_timeout: Duration,
    pub keepalive_interval: Duration,
    pub auth: Option<Auth>,
    /// TLS for `pulsar+ssl://` brokers; `None` means system roots with full verification.
    pub tls: Option<TlsConnector>,
    pub client_version: String,
    /// The broker's advertised listener (its `advertisedListeners` name) that every lookup
    /// asks for. `None`: the broker answers with the listener the lookup arrived on, or its
    /// internal one.
    pub listener_name: Option<String>,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            connect_timeout: Duration::from_secs(10),
            operation_timeout: Duration::from_secs(30),
            keepalive_interval: Duration::from_secs(30),
            auth: None,
            tls: None,
            client_version: format!("streamwire-{}", env!("CARGO_PKG_VERSION")),
            listener_name: None,
        }
    }
}

/// What a connection delivers to a registered producer or consumer.
#[derive(Debug)]
pub enum Event {
    /// Boxed: a decoded frame is large, and moving the box through channels is cheaper.
    Frame(Box<Frame>),
    /// The connection is gone; the handler must reconnect.
    Disconnected(Error),
}

/// Capacity of the queue of frames waiting for the writer.
const WRITE_QUEUE: usize = 4096;
/// How often the writer wakes to expire requests and check liveness.
const SWEEP_TICK: Duration = Duration::from_millis(250);

enum Outgoing {
    Command(Box<pb::BaseCommand>),
    Encoded(Bytes),
    /// A frame in two pieces: its head (sizes, command, checksum, metadata) and its payload,
    /// which is written from its own buffer (see `encode_payload_head`).
    Split(Bytes, Bytes),
}

struct PendingRequest {
    deadline: Instant,
    what: &'static str,
    reply: oneshot::Sender<Result<Frame>>,
}

#[derive(Default)]
struct Tables {
    pending: HashMap<u64, PendingRequest>,
    handlers: HashMap<u64, mpsc::Sender<Event>>,
    /// Set once the connection has ended; later registrations fail at once.
    closed: Option<Error>,
}

struct Inner {
    addr: BrokerAddr,
    tx: mpsc::Sender<Outgoing>,
    tables: Mutex<Tables>,
    next_request_id: AtomicU64,
    next_handler_id: AtomicU64,
    closed: AtomicBool,
    max_message_size: usize,
    server_version: String,
    protocol_version: i32,
    operation_timeout: Duration,
    /// Asked again whenever the broker sends AUTH_CHALLENGE.
    auth: Option<Auth>,
    client_version: String,
    /// Milliseconds since `epoch` when something was last read.
    last_read_ms: AtomicU64,
    epoch: Instant,
    shutdown: tokio::sync::watch::Sender<bool>,
}

/// A cheap, cloneable handle to a live connection.
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("addr", &self.inner.addr.to_string())
            .field("closed", &self.is_closed())
            .finish()
    }
}

fn lock(tables: &Mutex<Tables>) -> std::sync::MutexGuard<'_, Tables> {
    tables.lock().unwrap_or_else(|p| p.into_inner())
}

impl Connection {
    /// Open a TCP connection to `physical` and complete the Pulsar handshake.
    ///
    /// `proxy_to` is the logical broker URL when `physical` is a proxy that must forward us.
    pub async fn connect(
        physical: &BrokerAddr,
        proxy_to: Option<&BrokerAddr>,
        config: &ConnectionConfig,
    ) -> Result<Connection> {
        let target = physical.host_port();
        let connect = async {
            let tcp = tokio::net::TcpStream::connect(&target).await.map_err(|e| {
                Error::new(
                    ErrorKind::Connect,
                    format!("cannot connect to {physical}: {e}"),
                )
            })?;
            let _ = tcp.set_nodelay(true);
            if physical.tls {
                let connector = match &config.tls {
                    Some(c) => c.clone(),
                    None => TlsConnector::new(&TlsOptions::default())?,
                };
                let stream = connector
                    .connect(&physical.host, &physical.to_string(), tcp)
                    .await?;
                let (stream, connected, leftover) =
                    handshake::handshake(stream, physical, proxy_to, config).await?;
                Ok(Self::start(
                    stream,
                    physical.clone(),
                    connected,
                    leftover,
                    config,
                ))
            } else {
                let (stream, connected, leftover) =
                    handshake::handshake(tcp, physical, proxy_to, config).await?;
                Ok(Self::start(
                    stream,
                    physical.clone(),
                    connected,
                    leftover,
                    config,
                ))
            }
        };
        let res = tokio::time::timeout(config.connect_timeout, connect)
            .await
            .map_err(|_| {
                Error::new(
                    ErrorKind::Connect,
                    format!(
                        "connecting to {physical} timed out after {:.1}s",
                        config.connect_timeout.as_secs_f64()
                    ),
                )
            })
            .and_then(|r| r);
        match &res {
            Ok(_) => event(Level::Info, "pulsar.connection", || {
                (
                    format!("connected to {physical}"),
                    vec![("broker", physical.to_string())],
                )
            }),
            Err(e) => event(Level::Warning, "pulsar.connection", || {
                (
                    format!("cannot connect to {physical}: {e}"),
                    vec![("broker", physical.to_string())],
                )
            }),
        }
        res
    }

    fn start<S>(
        stream: S,
        addr: BrokerAddr,
        connected: pb::CommandConnected,
        leftover: BytesMut,
        config: &ConnectionConfig,
    ) -> Connection
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let max_message_size = connected
            .max_message_size
            .filter(|&n| n > 0)
            .map(|n| n as usize)
            .unwrap_or(protocol::DEFAULT_MAX_FRAME_SIZE);
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let epoch = Instant::now();
        let inner = Arc::new(Inner {
            addr,
            tx,
            tables: Mutex::new(Tables::default()),
            next_request_id: AtomicU64::new(1),
            next_handler_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            max_message_size,
            server_version: connected.server_version.clone(),
            protocol_version: connected.protocol_version.unwrap_or(0),
            operation_timeout: config.operation_timeout,
            auth: config.auth.clone(),
            client_version: config.client_version.clone(),
            last_read_ms: AtomicU64::new(0),
            epoch,
            shutdown: tokio::sync::watch::channel(false).0,
        });
        let (read_half, write_half) = tokio::io::split(stream);
        // Frames may carry a little overhead beyond the message itself.
        let mut decoder = FrameDecoder::new(max_message_size + protocol::FRAME_HEADROOM);
        let reader_inner = Arc::clone(&inner);
        let writer_inner = Arc::clone(&inner);
        let keepalive = config.keepalive_interval;
        tokio::spawn(async move {
            let res = read_loop(read_half, &mut decoder, leftover, &reader_inner).await;
            let err = res.err().unwrap_or_else(|| {
                Error::new(ErrorKind::Disconnected, "connection closed by the broker")
            });
            shut(&reader_inner, err);
        });
        tokio::spawn(async move {
            let res = write_loop(write_half, rx, &writer_inner, keepalive).await;
            let err = res
                .err()
                .unwrap_or_else(|| Error::new(ErrorKind::Disconnected, "connection closed"));
            shut(&writer_inner, err);
        });
        Connection { inner }
    }

    pub fn addr(&self) -> &BrokerAddr {
        &self.inner.addr
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// The broker's maximum message size (from `Connected`, else 5 MB).
    pub fn max_message_size(&self) -> usize {
        self.inner.max_message_size
    }

    pub fn server_version(&self) -> &str {
        &self.inner.server_version
    }

    pub fn protocol_version(&self) -> i32 {
        self.inner.protocol_version
    }

    pub fn new_request_id(&self) -> u64 {
        self.inner.next_request_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A producer/consumer id unique on this connection.
    pub fn new_handler_id(&self) -> u64 {
        self.inner.next_handler_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Route frames for producer/consumer `id` to `sink` until unregistered or disconnected.
    pub fn register_handler(&self, id: u64, sink: mpsc::Sender<Event>) -> Result<()> {
        let mut t = lock(&self.inner.tables);
        if let Some(e) = &t.closed {
            return Err(e.clone());
        }
        t.handlers.insert(id, sink);
        Ok(())
    }

    pub fn unregister_handler(&self, id: u64) {
        lock(&self.inner.tables).handlers.remove(&id);
    }

    /// Queue a command that expects no response.
    pub async fn send_command(&self, cmd: pb::BaseCommand) -> Result<()> {
        self.push(Outgoing::Command(Box::new(cmd))).await
    }

    /// Queue an already encoded frame (the producer encodes SEND frames itself).
    pub async fn send_encoded(&self, frame: Bytes) -> Result<()> {
        self.push(Outgoing::Encoded(frame)).await
    }

    /// Queue a frame given as its head and payload (`protocol::encode_payload_head`); a large
    /// payload goes to the socket from its own buffer, uncopied.
    pub async fn send_split(&self, head: Bytes, payload: Bytes) -> Result<()> {
        self.push(Outgoing::Split(head, payload)).await
    }

    async fn push(&self, item: Outgoing) -> Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        self.inner
            .tx
            .send(item)
            .await
            .map_err(|_| self.closed_error())
    }

    fn closed_error(&self) -> Error {
        lock(&self.inner.tables).closed.clone().unwrap_or_else(|| {
            Error::new(
                ErrorKind::Disconnected,
                format!("connection to {} is closed", self.inner.addr),
            )
        })
    }

    /// Send a request (whose `request_id` is already set to `request_id`) and wait for the
    /// response frame, with the connection's operation timeout. A broker `Error` response
    /// becomes a typed error.
    pub async fn request(
        &self,
        request_id: u64,
        what: &'static str,
        cmd: pb::BaseCommand,
    ) -> Result<Frame> {
        self.request_with_timeout(request_id, what, cmd, self.inner.operation_timeout)
            .await
    }

    pub async fn request_with_timeout(
        &self,
        request_id: u64,
        what: &'static str,
        cmd: pb::BaseCommand,
        timeout: Duration,
    ) -> Result<Frame> {
        let rx = self.register_pending(request_id, what, timeout)?;
        if let Err(e) = self.push(Outgoing::Command(Box::new(cmd))).await {
            lock(&self.inner.tables).pending.remove(&request_id);
            return Err(e);
        }
        // The writer's sweep enforces the deadline; this outer timeout is a safety net.
        match tokio::time::timeout(timeout + SWEEP_TICK * 2, rx).await {
            Ok(Ok(res)) => res,
            Ok(Err(_)) => Err(self.closed_error()),
            Err(_) => {
                lock(&self.inner.tables).pending.remove(&request_id);
                Err(Error::timeout(format!("{what} on {}", self.inner.addr)))
            }
        }
    }

    /// Put a waiter for `request_id` in the pending table (the writer's sweep expires it).
    fn register_pending(
        &self,
        request_id: u64,
        what: &'static str,
        timeout: Duration,
    ) -> Result<oneshot::Receiver<Result<Frame>>> {
        let (reply, rx) = oneshot::channel();
        let mut t = lock(&self.inner.tables);
        if let Some(e) = &t.closed {
            return Err(e.clone());
        }
        t.pending.insert(
            request_id,
            PendingRequest {
                deadline: Instant::now() + timeout,
                what,
                reply,
            },
        );
        Ok(rx)
    }

    /// Wait for a further response to `request_id` without sending anything (a producer in
    /// `WaitForExclusive` mode gets a second `ProducerSuccess` once it holds the topic).
    pub async fn await_response(
        &self,
        request_id: u64,
        what: &'static str,
        timeout: Duration,
    ) -> Result<Frame> {
        let rx = self.register_pending(request_id, what, timeout)?;
        match rx.await {
            Ok(res) => res,
            Err(_) => Err(self.closed_error()),
        }
    }

    /// Close the connection; waiters get `Disconnected`.
    pub fn close(&self) {
        shut(
            &self.inner,
            Error::new(ErrorKind::Closed, "connection closed by the client"),
        );
    }

    /// Number of requests waiting for a response (for tests and stats).
    pub fn pending_requests(&self) -> usize {
        lock(&self.inner.tables).pending.len()
    }
}

/// End the connection once: fail every waiter, tell every handler, stop both tasks.
fn shut(inner: &Inner, err: Error) {
    if inner.closed.swap(true, Ordering::AcqRel) {
        return;
    }
    let (pending, handlers) = {
        let mut t = lock(&inner.tables);
        t.closed = Some(err.clone());
        (
            std::mem::take(&mut t.pending),
            std::mem::take(&mut t.handlers),
        )
    };
    for (_, p) in pending {
        let _ = p.reply.send(Err(err.clone().context(p.what)));
    }
    for (_, h) in handlers {
        // A full handler queue is dropped instead: the receiver then sees the channel close,
        // which it treats the same as a disconnect.
        let _ = h.try_send(Event::Disconnected(err.clone()));
    }
    inner.shutdown.send_replace(true);
}

/// The request id a response frame answers, if it is a response.
fn response_request_id(cmd: &pb::BaseCommand) -> Option<u64> {
    use pb::base_command::Type;
    match cmd.r#type() {
        Type::Success => cmd.success.as_ref().map(|c| c.request_id),
        Type::Error => cmd.error.as_ref().map(|c| c.request_id),
        Type::ProducerSuccess => cmd.producer_success.as_ref().map(|c| c.request_id),
        Type::LookupResponse => cmd.lookup_topic_response.as_ref().map(|c| c.request_id),
        Type::PartitionedMetadataResponse => cmd
            .partition_metadata_response
            .as_ref()
            .map(|c| c.request_id),
        Type::GetLastMessageIdResponse => cmd
            .get_last_message_id_response
            .as_ref()
            .map(|c| c.request_id),
        Type::GetTopicsOfNamespaceResponse => cmd
            .get_topics_of_namespace_response
            .as_ref()
            .map(|c| c.request_id),
        Type::ConsumerStatsResponse => cmd.consumer_stats_response.as_ref().map(|c| c.request_id),
        Type::GetSchemaResponse => cmd.get_schema_response.as_ref().map(|c| c.request_id),
        Type::GetOrCreateSchemaResponse => cmd
            .get_or_create_schema_response
            .as_ref()
            .map(|c| c.request_id),
        Type::AckResponse => cmd.ack_response.as_ref().and_then(|c| c.request_id),
        _ => crate::transaction::wire::response_request_id(cmd),
    }
}

/// The producer or consumer id a broker-initiated frame is for.
fn handler_id(cmd: &pb::BaseCommand) -> Option<u64> {
    use pb::base_command::Type;
    match cmd.r#type() {
        Type::SendReceipt => cmd.send_receipt.as_ref().map(|c| c.producer_id),
        Type::SendError => cmd.send_error.as_ref().map(|c| c.producer_id),
        Type::CloseProducer => cmd.close_producer.as_ref().map(|c| c.producer_id),
        Type::Message => cmd.message.as_ref().map(|c| c.consumer_id),
        Type::CloseConsumer => cmd.close_consumer.as_ref().map(|c| c.consumer_id),
        Type::ReachedEndOfTopic => cmd.reached_end_of_topic.as_ref().map(|c| c.consumer_id),
        Type::ActiveConsumerChange => cmd.active_consumer_change.as_ref().map(|c| c.consumer_id),
        _ => None,
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut rd: R,
    decoder: &mut FrameDecoder,
    mut buf: BytesMut,
    inner: &Arc<Inner>,
) -> Result<()> {
    let mut stop = inner.shutdown.subscribe();
    loop {
        while let Some(frame) = decoder.decode(&mut buf).map_err(|e| {
            Error::new(
                ErrorKind::Protocol,
                format!("protocol error from {}: {e}", inner.addr),
            )
        })? {
            dispatch(frame, inner).await?;
        }
        if buf.capacity() - buf.len() < 8192 {
            buf.reserve(64 * 1024);
        }
        let n = tokio::select! {
            r = rd.read_buf(&mut buf) => r.map_err(|e| {
                Error::new(ErrorKind::Disconnected, format!("connection to {} lost: {e}", inner.addr))
            })?,
            _ = stopped(&mut stop) => return Err(Error::new(ErrorKind::Closed, "connection closed")),
        };
        if n == 0 {
            return Err(Error::new(
                ErrorKind::Disconnected,
                format!("connection to {} closed by the broker", inner.addr),
            ));
        }
        inner
            .last_read_ms
            .store(inner.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

async fn dispatch(frame: Frame, inner: &Arc<Inner>) -> Result<()> {
    use pb::base_command::Type;
    match frame.command.r#type() {
        Type::Ping => {
            // Answer at once; a full write queue means the connection is wedged anyway.
            let _ = inner
                .tx
                .try_send(Outgoing::Command(Box::new(protocol::commands::pong())));
            return Ok(());
        }
        Type::Pong => return Ok(()),
        Type::AuthChallenge => {
            answer_challenge(frame, inner);
            return Ok(());
        }
        _ => {}
    }
    if let Some(rid) = response_request_id(&frame.command) {
        let waiter = lock(&inner.tables).pending.remove(&rid);
        if let Some(p) = waiter {
            let res = match frame.command.error.as_ref() {
                Some(e) if frame.command.r#type() == Type::Error => {
                    Err(server_error(e.error, &e.message).context(p.what))
                }
                _ => Ok(frame),
            };
            let _ = p.reply.send(res);
        }
        return Ok(());
    }
    if let Some(id) = handler_id(&frame.command) {
        let sink = lock(&inner.tables).handlers.get(&id).cloned();
        if let Some(sink) = sink {
            // Flow control bounds what a consumer can be sent, so waiting here is brief.
            if sink.send(Event::Frame(Box::new(frame))).await.is_err() {
                lock(&inner.tables).handlers.remove(&id);
            }
        }
        return Ok(());
    }
    // Anything else (topic watchers, ...) is ignored.
    Ok(())
}

/// Answer an AUTH_CHALLENGE on the live connection with fresh credentials (the provider is
/// asked again, off the reader task). Failing to get them ends the connection.
fn answer_challenge(frame: Frame, inner: &Arc<Inner>) {
    let Some(auth) = inner.auth.clone() else {
        shut(
            inner,
            Error::new(
                ErrorKind::Authentication,
                format!(
                    "{} asked for credentials but no auth is configured",
                    inner.addr
                ),
            ),
        );
        return;
    };
    let challenge = frame
        .command
        .auth_challenge
        .and_then(|c| c.challenge)
        .and_then(|d| d.auth_data)
        .unwrap_or_default();
    let inner = Arc::clone(inner);
    tokio::spawn(async move {
        match auth.respond(challenge).await {
            Ok(data) => {
                let cmd = protocol::commands::auth_response(
                    &inner.client_version,
                    handshake::PROTOCOL_VERSION,
                    auth.method_name(),
                    data,
                );
                let _ = inner.tx.send(Outgoing::Command(Box::new(cmd))).await;
            }
            Err(e) => shut(
                &inner,
                e.context(format!("answering the auth challenge of {}", inner.addr)),
            ),
        }
    });
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<Outgoing>,
    inner: &Arc<Inner>,
    keepalive: Duration,
) -> Result<()> {
    let mut out = BytesMut::with_capacity(64 * 1024);
    let mut tick = tokio::time::interval(SWEEP_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_ping = Instant::now();
    let mut stop = inner.shutdown.subscribe();
    let lost = |e: std::io::Error| {
        Error::new(
            ErrorKind::Disconnected,
            format!("connection to {} lost: {e}", inner.addr),
        )
    };
    loop {
        tokio::select! {
            item = rx.recv() => {
                let Some(item) = item else { return Ok(()) };
                let mut next = Some(item);
                // Coalesce whatever else is already queued into the same write; a large
                // pre-encoded frame (a producer's batch) is written from its own buffer
                // instead of being copied into `out` first.
                while let Some(item) = next.take() {
                    match item {
                        Outgoing::Encoded(b) if b.len() >= DIRECT_WRITE => {
                            if !out.is_empty() {
                                wr.write_all(&out).await.map_err(lost)?;
                                out.clear();
                            }
                            wr.write_all(&b).await.map_err(lost)?;
                        }
                        Outgoing::Split(head, body) if body.len() >= DIRECT_WRITE => {
                            out.extend_from_slice(&head);
                            wr.write_all(&out).await.map_err(lost)?;
                            out.clear();
                            wr.write_all(&body).await.map_err(lost)?;
                        }
                        item => encode(item, &mut out),
                    }
                    if out.len() < 256 * 1024 {
                        next = rx.try_recv().ok();
                    }
                }
                if !out.is_empty() {
                    wr.write_all(&out).await.map_err(lost)?;
                    out.clear();
                }
                // A TLS stream sends what the socket did not take at once only on a later
                // write or a flush: without this a frame's tail could wait for the next ping
                // (a no-op on plain TCP).
                wr.flush().await.map_err(lost)?;
            }
            _ = tick.tick() => {
                sweep_expired(inner);
                let now_ms = inner.epoch.elapsed().as_millis() as u64;
                let idle = Duration::from_millis(now_ms.saturating_sub(inner.last_read_ms.load(Ordering::Relaxed)));
                if idle > keepalive * 2 {
                    return Err(Error::new(
                        ErrorKind::Disconnected,
                        format!("no response from {} for {:.0}s (keepalive)", inner.addr, idle.as_secs_f64()),
                    ));
                }
                if last_ping.elapsed() >= keepalive {
                    last_ping = Instant::now();
                    encode(Outgoing::Command(Box::new(protocol::commands::ping())), &mut out);
                    wr.write_all(&out).await.map_err(lost)?;
                    wr.flush().await.map_err(lost)?;
                    out.clear();
                }
            }
            _ = stopped(&mut stop) => {
                let _ = wr.shutdown().await;
                return Err(Error::new(ErrorKind::Closed, "connection closed"));
            }
        }
    }
}

/// Resolves once the connection is shut (the watch `Ref` is not `Send`, so it stays inside).
async fn stopped(stop: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|v| *v).await;
}

/// Pre-encoded frames at least this long skip the coalescing buffer: a 1,000-message batch
/// (about 110 KB at 100 B) copied into it cost about 110 instructions per message
/// (callgrind, `send_many` of 100 B messages), for a write syscall the frame fills anyway.
const DIRECT_WRITE: usize = 16 * 1024;

fn encode(item: Outgoing, out: &mut BytesMut) {
    match item {
        Outgoing::Command(cmd) => protocol::encode_command(&cmd, out),
        Outgoing::Encoded(b) => out.extend_from_slice(&b),
        Outgoing::Split(head, body) => {
            out.extend_from_slice(&head);
            out.extend_from_slice(&body);
        }
    }
}

/// Fail requests whose deadline passed and drop those nobody waits for any more.
fn sweep_expired(inner: &Inner) {
    let now = Instant::now();
    let expired: Vec<PendingRequest> = {
        let mut t = lock(&inner.tables);
        let ids: Vec<u64> = t
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now || p.reply.is_closed())
            .map(|(id, _)| *id)
            .collect();
        ids.iter().filter_map(|id| t.pending.remove(id)).collect()
    };
    for p in expired {
        let what = p.what;
        let _ = p
            .reply
            .send(Err(Error::timeout(format!("{what} on {}", inner.addr))));
    }
}
