//! A connection to a segment store: TCP (TLS on top when the controller URI is `tls://`: the
//! host `getURI` named is the verified name), the HELLO exchange, then the core framed
//! connection.
//!
//! Both sides open with HELLO (the versions each speaks); a connection is ready once the
//! server's HELLO arrived and its version range overlaps ours. Two codecs share the frame
//! layer: readers match replies to requests by their request id (a `READ_SEGMENT` and its
//! `SEGMENT_READ`), while an append connection hands every frame to its writer, because
//! `DATA_APPENDED` acknowledges event numbers, not requests (one reply may cover several
//! blocks).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::framed::{FrameCodec, FramedConfig, FramedConnection};
use streamwire_core::tls::TlsConnector;

use crate::controller::NodeUri;
use crate::wire::{self, check_hello, decode_frame, Reply, MAX_FRAME};

/// A live connection to a segment store.
pub type Connection = FramedConnection<Reply>;

/// The most a frame's header makes a connection reserve ahead of its bytes: a reader's
/// default read (1 MiB) and its header fit.
const RESERVE_CAP: usize = 2 * 1024 * 1024;

/// The frame layer for the core connection; `ROUTE_BY_ID` picks reader or writer use.
pub struct PravegaCodec<const ROUTE_BY_ID: bool>;

impl<const ROUTE_BY_ID: bool> FrameCodec for PravegaCodec<ROUTE_BY_ID> {
    type Frame = Reply;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Reply>> {
        let frame = decode_frame(buf, MAX_FRAME).map_err(Error::from)?;
        if frame.is_none() && buf.len() >= 8 {
            // Room for the rest of the frame now, up to `RESERVE_CAP`: grown by the read
            // loop's 64 KiB steps instead, a 1 MiB SEGMENT_READ was copied into a larger
            // buffer again and again (realloc copies were 6% of a reader's profile). Capped,
            // so a lying length allocates no more than that.
            let len = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
            let want = (8 + len).min(RESERVE_CAP);
            if want > buf.len() {
                buf.reserve(want - buf.len());
            }
        }
        Ok(frame)
    }

    fn request_id(frame: &Reply) -> Option<u64> {
        if ROUTE_BY_ID {
            frame.request_id().map(|id| id as u64)
        } else {
            None
        }
    }
}

/// How segment store connections are opened.
#[derive(Debug, Clone)]
pub struct DialConfig {
    pub connect_timeout: Duration,
    /// Idle time after which we send KEEP_ALIVE (the server echoes it and drops connections
    /// that stay silent).
    pub keepalive: Duration,
    /// TLS for every segment store (set when the controller URI is `tls://`).
    pub tls: Option<TlsConnector>,
}

impl Default for DialConfig {
    fn default() -> Self {
        DialConfig {
            connect_timeout: Duration::from_secs(10),
            keepalive: Duration::from_secs(20),
            tls: None,
        }
    }
}

fn keep_alive_frame() -> Bytes {
    let mut b = BytesMut::with_capacity(8);
    wire::encode_keep_alive(&mut b);
    b.freeze()
}

/// Connect to `node`, exchange HELLO and start the connection's tasks. Frames not matched to
/// a request (all of them for an append connection) arrive on the receiver.
pub async fn dial<const ROUTE_BY_ID: bool>(
    node: &NodeUri,
    config: &DialConfig,
) -> Result<(Connection, mpsc::Receiver<Reply>)> {
    let scheme = if config.tls.is_some() { "tls" } else { "tcp" };
    let target = format!("{scheme}://{}:{}", node.host, node.port);
    let framed = FramedConfig {
        keepalive: Some((config.keepalive, keep_alive_frame())),
        unsolicited_queue: 1024,
        ..FramedConfig::default()
    };
    let codec = PravegaCodec::<ROUTE_BY_ID>;
    let fut = async {
        let tcp = TcpStream::connect((node.host.as_str(), node.port))
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Connect,
                    format!("could not connect to segment store {target}: {e}"),
                )
            })?;
        tcp.set_nodelay(true)
            .map_err(|e| Error::new(ErrorKind::Connect, format!("{target}: set_nodelay: {e}")))?;
        // Two stream types, one greeting: each branch hands its own type to the framed
        // connection (generic over the stream).
        match &config.tls {
            Some(tls) => {
                let peer = format!("segment store {target}");
                let host = node.host.trim_start_matches('[').trim_end_matches(']');
                let mut stream = tls.connect(host, &peer, tcp).await?;
                let rest = greet(&mut stream, &target).await?;
                Ok::<_, Error>(FramedConnection::start(
                    target.clone(),
                    stream,
                    codec,
                    framed,
                    rest,
                ))
            }
            None => {
                let mut stream = tcp;
                let rest = greet(&mut stream, &target).await?;
                Ok(FramedConnection::start(
                    target.clone(),
                    stream,
                    codec,
                    framed,
                    rest,
                ))
            }
        }
    };
    match tokio::time::timeout(config.connect_timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(Error::new(
            ErrorKind::Connect,
            format!(
                "connecting to segment store {target} timed out after {:?}",
                config.connect_timeout
            ),
        )),
    }
}

/// Send our HELLO and wait for the server's; bytes past it are handed on.
async fn greet<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    target: &str,
) -> Result<BytesMut> {
    let mut hello = BytesMut::with_capacity(16);
    wire::encode_hello(&mut hello);
    stream
        .write_all(&hello)
        .await
        .map_err(|e| Error::new(ErrorKind::Connect, format!("{target}: {e}")))?;
    await_hello(stream, target).await
}

/// Read until the server's HELLO and check its versions; bytes past it are handed on.
async fn await_hello<S: AsyncRead + Unpin>(stream: &mut S, target: &str) -> Result<BytesMut> {
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        match decode_frame(&mut buf, MAX_FRAME).map_err(Error::from)? {
            Some(Reply::Hello { high, low }) => {
                check_hello(high, low).map_err(|e| e.context(target))?;
                return Ok(buf);
            }
            Some(Reply::KeepAlive) => continue,
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    format!("{target} answered HELLO with {other:?}"),
                ))
            }
            None => {}
        }
        let n = stream.read_buf(&mut buf).await.map_err(|e| {
            Error::new(
                ErrorKind::Connect,
                format!("{target} failed before HELLO: {e}"),
            )
        })?;
        if n == 0 {
            return Err(Error::new(
                ErrorKind::Connect,
                format!("{target} closed the connection before its HELLO"),
            ));
        }
    }
}
