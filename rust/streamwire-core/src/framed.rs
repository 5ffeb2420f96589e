//! A framed, request/response connection: the building block every protocol crate's
//! connection sits on.
//!
//! One Tokio task reads and decodes frames and routes each to the request that waits for it
//! (by the request id the protocol's [`FrameCodec`] finds in it) or, when it answers nothing,
//! to the connection's unsolicited channel (broker pings, pushes). A second task owns the
//! write half and coalesces whatever is queued into one write, so a burst of pipelined
//! requests costs one syscall. Both tasks end together, and every waiter then gets
//! `Disconnected` with the cause: nothing waits forever on a dead socket.
//!
//! Why the deadline sweep lives in the writer: a request whose reply never comes (a broker
//! that stalls) must fail with `Timeout` at its deadline even when nothing else happens on the
//! connection, without one timer per request.
//!
//! Cancel safety: dropping the receiver of [`FramedConnection::start_request`] leaves its slot
//! until the reply arrives or the sweep passes its deadline; nothing else is affected.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::{Error, ErrorKind, Result};

/// What a protocol tells the connection about its frames.
pub trait FrameCodec: Send + 'static {
    /// One decoded frame.
    type Frame: Send + 'static;
    /// Decode one frame from the front of `buf`: `Ok(None)` means more bytes are needed, an
    /// error means the stream is corrupt and the connection closes.
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Self::Frame>>;
    /// The request id a frame answers; `None` for frames that answer nothing.
    fn request_id(frame: &Self::Frame) -> Option<u64>;
}

/// Tunables of one connection.
#[derive(Debug, Clone)]
pub struct FramedConfig {
    /// Frames queued for the writer before senders wait (back-pressure, never unbounded).
    pub write_queue: usize,
    /// Initial capacity of the read buffer.
    pub read_buffer: usize,
    /// How often pending requests are checked against their deadlines.
    pub sweep_tick: Duration,
    /// A frame sent when nothing was written for this long (the protocol's ping), if any.
    pub keepalive: Option<(Duration, Bytes)>,
    /// Unsolicited frames buffered for the owner before the reader waits.
    pub unsolicited_queue: usize,
}

impl Default for FramedConfig {
    fn default() -> Self {
        FramedConfig {
            write_queue: 1024,
            read_buffer: 64 * 1024,
            sweep_tick: Duration::from_millis(100),
            keepalive: None,
            unsolicited_queue: 64,
        }
    }
}

type Reply<F> = oneshot::Sender<Result<F>>;

struct Pending<F> {
    deadline: Instant,
    what: &'static str,
    reply: Reply<F>,
}

struct Inner<F> {
    peer: String,
    tx: mpsc::Sender<Bytes>,
    pending: Mutex<Table<F>>,
    next_id: AtomicU64,
    closed: AtomicBool,
    shutdown: watch::Sender<bool>,
}

struct Table<F> {
    waiting: HashMap<u64, Pending<F>>,
    /// Set once the connection has ended: later requests fail at once with it.
    ended: Option<Error>,
}

/// A cheap, cloneable handle to one live framed connection.
pub struct FramedConnection<F> {
    inner: Arc<Inner<F>>,
}

impl<F> Clone for FramedConnection<F> {
    fn clone(&self) -> Self {
        FramedConnection {
            inner: self.inner.clone(),
        }
    }
}

impl<F: Send + 'static> std::fmt::Debug for FramedConnection<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FramedConnection")
            .field("peer", &self.inner.peer)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl<F: Send + 'static> FramedConnection<F> {
    /// Start the reader and writer tasks on `stream` (on the current Tokio runtime).
    /// `already_read` holds bytes read before the hand-over (a greeting's tail); unsolicited
    /// frames arrive on the returned receiver, which the owner must drain or drop (a full
    /// receiver holds the reader back: back-pressure, never a silently dropped frame).
    pub fn start<S, C>(
        peer: impl Into<String>,
        stream: S,
        mut codec: C,
        config: FramedConfig,
        already_read: BytesMut,
    ) -> (Self, mpsc::Receiver<F>)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
        C: FrameCodec<Frame = F>,
    {
        let (tx, rx) = mpsc::channel(config.write_queue.max(1));
        let (utx, urx) = mpsc::channel(config.unsolicited_queue.max(1));
        let (shutdown, shutdown_rx) = watch::channel(false);
        let inner = Arc::new(Inner {
            peer: peer.into(),
            tx,
            pending: Mutex::new(Table {
                waiting: HashMap::new(),
                ended: None,
            }),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            shutdown,
        });
        let (read_half, write_half) = tokio::io::split(stream);
        let reader_inner = inner.clone();
        let mut reader_shutdown = shutdown_rx.clone();
        let read_capacity = config.read_buffer;
        tokio::spawn(async move {
            let mut buf = already_read;
            buf.reserve(read_capacity);
            let outcome = tokio::select! {
                r = read_loop(read_half, &mut codec, &reader_inner, &utx, buf) => r,
                () = stopped(&mut reader_shutdown) => closed_here(&reader_inner.peer),
            };
            end(&reader_inner, outcome);
        });
        let writer_inner = inner.clone();
        tokio::spawn(async move {
            let outcome = write_loop(write_half, rx, &writer_inner, &config, shutdown_rx).await;
            end(&writer_inner, outcome);
        });
        (FramedConnection { inner }, urx)
    }

    /// The peer's address, for messages.
    pub fn peer(&self) -> &str {
        &self.inner.peer
    }

    /// A fresh request id (wrapping is harmless: ids only need to be unique among the ones
    /// in flight).
    pub fn next_request_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Why the connection ended, once it has.
    pub fn end_reason(&self) -> Option<Error> {
        lock(&self.inner.pending).ended.clone()
    }

    /// Queue an already-encoded request answered by a frame carrying `id`; the receiver
    /// completes with the reply, `Timeout` at `deadline`, or `Disconnected`. Waits only for
    /// room in the write queue.
    pub async fn start_request(
        &self,
        id: u64,
        frame: Bytes,
        deadline: Instant,
        what: &'static str,
    ) -> Result<oneshot::Receiver<Result<F>>> {
        let (reply, rx) = oneshot::channel();
        {
            let mut table = lock(&self.inner.pending);
            if let Some(e) = &table.ended {
                return Err(e.clone());
            }
            if table.waiting.contains_key(&id) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("request id {id} is already in flight"),
                ));
            }
            table.waiting.insert(
                id,
                Pending {
                    deadline,
                    what,
                    reply,
                },
            );
        }
        if self.inner.tx.send(frame).await.is_err() {
            lock(&self.inner.pending).waiting.remove(&id);
            return Err(self.disconnected());
        }
        Ok(rx)
    }

    /// Send a request and wait for its reply (or `timeout`).
    pub async fn request(
        &self,
        id: u64,
        frame: Bytes,
        timeout: Duration,
        what: &'static str,
    ) -> Result<F> {
        let deadline = Instant::now() + timeout;
        let rx = self.start_request(id, frame, deadline, what).await?;
        rx.await.unwrap_or_else(|_| Err(self.disconnected()))
    }

    /// Queue a frame that expects no reply.
    pub async fn send(&self, frame: Bytes) -> Result<()> {
        if self.is_closed() {
            return Err(self.disconnected());
        }
        self.inner
            .tx
            .send(frame)
            .await
            .map_err(|_| self.disconnected())
    }

    /// Close the connection; every waiter gets `Disconnected`.
    pub fn close(&self) {
        let _ = self.inner.shutdown.send(true);
    }

    fn disconnected(&self) -> Error {
        self.end_reason().unwrap_or_else(|| {
            Error::new(
                ErrorKind::Disconnected,
                format!("connection to {} was lost", self.inner.peer),
            )
        })
    }
}

impl<F> Drop for Inner<F> {
    fn drop(&mut self) {
        // The last handle is gone: stop both tasks.
        let _ = self.shutdown.send(true);
    }
}

/// The end of a connection this side closed. `Disconnected`, not `Closed`: the connection's
/// users (producers, consumers) are still open and go on with a new connection; `Closed` is
/// for handles the application closed.
fn closed_here(peer: &str) -> Error {
    Error::new(
        ErrorKind::Disconnected,
        format!("the connection to {peer} was closed by this client"),
    )
}

/// Resolves once shutdown is asked for (the guard `wait_for` returns is not `Send`).
async fn stopped(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Mark the connection ended (first cause wins) and fail every waiter with it.
fn end<F>(inner: &Inner<F>, cause: Error) {
    let drained: Vec<Pending<F>> = {
        let mut table = lock(&inner.pending);
        if table.ended.is_none() {
            table.ended = Some(cause);
        }
        table.waiting.drain().map(|(_, p)| p).collect()
    };
    inner.closed.store(true, Ordering::Release);
    let _ = inner.shutdown.send(true);
    let cause = lock(&inner.pending).ended.clone();
    for p in drained {
        let _ = p.reply.send(Err(cause
            .clone()
            .unwrap_or_else(|| Error::new(ErrorKind::Disconnected, "connection ended"))));
    }
}

async fn read_loop<R, C>(
    mut rd: R,
    codec: &mut C,
    inner: &Inner<C::Frame>,
    unsolicited: &mpsc::Sender<C::Frame>,
    mut buf: BytesMut,
) -> Error
where
    R: AsyncRead + Unpin,
    C: FrameCodec,
{
    loop {
        // Decode everything already buffered before reading more.
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => route::<C>(inner, unsolicited, frame).await,
                Ok(None) => break,
                Err(e) => {
                    return Error::new(
                        ErrorKind::Protocol,
                        format!("{} sent a malformed frame: {e}", inner.peer),
                    )
                }
            }
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(64 * 1024);
        }
        match rd.read_buf(&mut buf).await {
            Ok(0) => {
                return Error::new(
                    ErrorKind::Disconnected,
                    format!("{} closed the connection", inner.peer),
                )
            }
            Ok(_) => {}
            Err(e) => {
                return Error::new(
                    ErrorKind::Disconnected,
                    format!("connection to {} failed: {e}", inner.peer),
                )
            }
        }
    }
}

async fn route<C: FrameCodec>(
    inner: &Inner<C::Frame>,
    unsolicited: &mpsc::Sender<C::Frame>,
    frame: C::Frame,
) {
    let waiter = C::request_id(&frame).and_then(|id| lock(&inner.pending).waiting.remove(&id));
    match waiter {
        Some(p) => {
            let _ = p.reply.send(Ok(frame));
        }
        // Nobody listening for unsolicited frames is fine (a dropped receiver).
        None => {
            let _ = unsolicited.send(frame).await;
        }
    }
}

async fn write_loop<W, F>(
    mut wr: W,
    mut rx: mpsc::Receiver<Bytes>,
    inner: &Inner<F>,
    config: &FramedConfig,
    mut shutdown: watch::Receiver<bool>,
) -> Error
where
    W: AsyncWrite + Unpin,
{
    let mut out = BytesMut::with_capacity(64 * 1024);
    let mut tick = tokio::time::interval(config.sweep_tick);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_write = Instant::now();
    loop {
        tokio::select! {
            msg = rx.recv() => {
                let Some(first) = msg else {
                    return closed_here(&inner.peer);
                };
                // Coalesce everything already queued into one write.
                let mut batch = vec![first];
                while batch.len() < 256 {
                    match rx.try_recv() {
                        Ok(b) => batch.push(b),
                        Err(_) => break,
                    }
                }
                // Flushed each time: a TLS stream accepts bytes into its own buffer and sends
                // what the socket did not take only on a later write or a flush, so without it
                // a request's tail could wait for the next keepalive (a no-op on plain TCP).
                let written = match write_all(&mut wr, &mut out, batch).await {
                    Ok(()) => wr.flush().await,
                    Err(e) => Err(e),
                };
                if let Err(e) = written {
                    return Error::new(
                        ErrorKind::Disconnected,
                        format!("writing to {} failed: {e}", inner.peer),
                    );
                }
                last_write = Instant::now();
            }
            _ = tick.tick() => {
                sweep(inner);
                if let Some((every, ping)) = &config.keepalive {
                    if last_write.elapsed() >= *every {
                        let sent = match wr.write_all(ping).await {
                            Ok(()) => wr.flush().await,
                            Err(e) => Err(e),
                        };
                        if let Err(e) = sent {
                            return Error::new(
                                ErrorKind::Disconnected,
                                format!("keepalive to {} failed: {e}", inner.peer),
                            );
                        }
                        last_write = Instant::now();
                    }
                }
            }
            () = stopped(&mut shutdown) => {
                let _ = wr.shutdown().await;
                return closed_here(&inner.peer);
            }
        }
    }
}

async fn write_all<W: AsyncWrite + Unpin>(
    wr: &mut W,
    out: &mut BytesMut,
    batch: Vec<Bytes>,
) -> std::io::Result<()> {
    if batch.len() == 1 {
        return wr.write_all(&batch[0]).await;
    }
    // Large frames go out as they are; small ones are copied into one buffer so a burst is
    // one syscall.
    for b in batch {
        if b.len() >= 32 * 1024 {
            if !out.is_empty() {
                wr.write_all(out).await?;
                out.clear();
            }
            wr.write_all(&b).await?;
        } else {
            out.extend_from_slice(&b);
        }
    }
    if !out.is_empty() {
        wr.write_all(out).await?;
        out.clear();
    }
    Ok(())
}

/// Fail requests whose deadline passed (and forget ones whose caller went away).
fn sweep<F>(inner: &Inner<F>) {
    let now = Instant::now();
    let expired: Vec<Pending<F>> = {
        let mut table = lock(&inner.pending);
        let ids: Vec<u64> = table
            .waiting
            .iter()
            .filter(|(_, p)| p.deadline <= now || p.reply.is_closed())
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .filter_map(|id| table.waiting.remove(&id))
            .collect()
    };
    for p in expired {
        let what = p.what;
        let _ = p.reply.send(Err(Error::new(
            ErrorKind::Timeout,
            format!("{what} to {} timed out", inner.peer),
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames of the test protocol: `id:u8 len:u8 body`; id 0 answers nothing.
    struct TinyCodec;

    impl FrameCodec for TinyCodec {
        type Frame = (u8, Bytes);
        fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<(u8, Bytes)>> {
            if buf.len() < 2 {
                return Ok(None);
            }
            let len = buf[1] as usize;
            if len > 100 {
                return Err(Error::new(ErrorKind::Protocol, "too long"));
            }
            if buf.len() < 2 + len {
                return Ok(None);
            }
            let f = buf.split_to(2 + len).freeze();
            Ok(Some((f[0], f.slice(2..))))
        }
        fn request_id(frame: &(u8, Bytes)) -> Option<u64> {
            (frame.0 != 0).then_some(frame.0 as u64)
        }
    }

    fn frame(id: u8, body: &[u8]) -> Bytes {
        let mut v = vec![id, body.len() as u8];
        v.extend_from_slice(body);
        Bytes::from(v)
    }

    #[tokio::test]
    async fn replies_route_by_id_out_of_order_and_unsolicited_go_aside() {
        let (client, mut server) = tokio::io::duplex(1024);
        let (conn, mut unsolicited) = FramedConnection::start(
            "test",
            client,
            TinyCodec,
            FramedConfig::default(),
            BytesMut::new(),
        );
        let t = Duration::from_secs(5);
        let a = conn.request(1, frame(1, b"a"), t, "a");
        let b = conn.request(2, frame(2, b"b"), t, "b");
        let serve = async {
            let mut got = [0u8; 6];
            server.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"\x01\x01a\x02\x01b");
            // Answer out of order, with an unsolicited frame between.
            server.write_all(&frame(2, b"B")).await.unwrap();
            server.write_all(&frame(0, b"ping")).await.unwrap();
            server.write_all(&frame(1, b"A")).await.unwrap();
        };
        let (ra, rb, ()) = tokio::join!(a, b, serve);
        assert_eq!(ra.unwrap().1, Bytes::from_static(b"A"));
        assert_eq!(rb.unwrap().1, Bytes::from_static(b"B"));
        assert_eq!(
            unsolicited.recv().await.unwrap().1,
            Bytes::from_static(b"ping")
        );
    }

    #[tokio::test]
    async fn a_buffering_stream_is_flushed_after_each_write() {
        // A BufWriter keeps small writes until flushed, as a TLS stream keeps what the socket
        // did not take: the frame must still reach the server at once.
        let (client, mut server) = tokio::io::duplex(1024);
        let buffered = tokio::io::BufStream::new(client);
        let (conn, _u) = FramedConnection::start(
            "test",
            buffered,
            TinyCodec,
            FramedConfig::default(),
            BytesMut::new(),
        );
        conn.send(frame(0, b"hi")).await.unwrap();
        let mut got = [0u8; 4];
        tokio::time::timeout(Duration::from_secs(2), server.read_exact(&mut got))
            .await
            .expect("the frame stayed in the stream's buffer")
            .unwrap();
        assert_eq!(&got, b"\x00\x02hi");
    }

    #[tokio::test]
    async fn a_request_without_reply_times_out_and_the_connection_stays() {
        let (client, _server) = tokio::io::duplex(1024);
        let config = FramedConfig {
            sweep_tick: Duration::from_millis(10),
            ..FramedConfig::default()
        };
        let (conn, _u) =
            FramedConnection::start("test", client, TinyCodec, config, BytesMut::new());
        let err = conn
            .request(7, frame(7, b""), Duration::from_millis(50), "probe")
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout);
        assert!(err.to_string().contains("probe"), "{err}");
        assert!(!conn.is_closed());
    }

    #[tokio::test]
    async fn peer_close_fails_every_waiter_with_disconnected() {
        let (client, server) = tokio::io::duplex(1024);
        let (conn, _u) = FramedConnection::start(
            "test",
            client,
            TinyCodec,
            FramedConfig::default(),
            BytesMut::new(),
        );
        let rx = conn
            .start_request(
                3,
                frame(3, b""),
                Instant::now() + Duration::from_secs(5),
                "x",
            )
            .await
            .unwrap();
        drop(server);
        let err = rx.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Disconnected);
        // Later requests fail at once with the same cause.
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(conn.is_closed());
        let again = conn
            .request(4, frame(4, b""), Duration::from_secs(1), "y")
            .await
            .unwrap_err();
        assert_eq!(again.kind(), ErrorKind::Disconnected);
    }

    #[tokio::test]
    async fn a_corrupt_stream_closes_with_a_protocol_error() {
        let (client, mut server) = tokio::io::duplex(1024);
        let (conn, _u) = FramedConnection::start(
            "test",
            client,
            TinyCodec,
            FramedConfig::default(),
            BytesMut::new(),
        );
        let rx = conn
            .start_request(
                5,
                frame(5, b""),
                Instant::now() + Duration::from_secs(5),
                "x",
            )
            .await
            .unwrap();
        server.write_all(&[9, 200]).await.unwrap();
        let err = rx.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol);
    }

    #[tokio::test]
    async fn bytes_read_before_the_hand_over_are_decoded_first() {
        let (client, _server) = tokio::io::duplex(1024);
        let mut early = BytesMut::new();
        early.extend_from_slice(&frame(0, b"hi"));
        let (_conn, mut u) =
            FramedConnection::start("test", client, TinyCodec, FramedConfig::default(), early);
        assert_eq!(u.recv().await.unwrap().1, Bytes::from_static(b"hi"));
    }

    #[tokio::test]
    async fn close_fails_waiters_with_disconnected() {
        let (client, _server) = tokio::io::duplex(1024);
        let (conn, _u) = FramedConnection::start(
            "test",
            client,
            TinyCodec,
            FramedConfig::default(),
            BytesMut::new(),
        );
        let rx = conn
            .start_request(
                1,
                frame(1, b""),
                Instant::now() + Duration::from_secs(5),
                "x",
            )
            .await
            .unwrap();
        conn.close();
        let err = rx.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Disconnected);
        assert!(err.to_string().contains("closed by this client"), "{err}");
    }
}
