//! A TANK connection: TCP, the broker's greeting, then the core framed connection.
//!
//! The broker greets every new connection with a Ping; the protocol page says a client must
//! not count the connection ready before it arrives, so dialling waits for it (bounded by the
//! connect timeout) and hands any bytes read past it to the framed connection. Requests are
//! pipelined and matched to responses by the `requestId:u32` every response carries.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::framed::{FrameCodec, FramedConfig, FramedConnection};

use crate::codec::{self, MsgType, RawFrame};
use crate::url::BrokerAddr;

/// A live connection to a TANK broker.
pub type Connection = FramedConnection<RawFrame>;

/// The frame layer of TANK for the core connection.
pub struct TankCodec {
    max_payload: usize,
}

impl FrameCodec for TankCodec {
    type Frame = RawFrame;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<RawFrame>> {
        codec::decode_frame(buf, self.max_payload).map_err(Error::from)
    }

    fn request_id(frame: &RawFrame) -> Option<u64> {
        codec::response_request_id(frame.msg_type, &frame.payload).map(u64::from)
    }
}

/// How connections are opened.
#[derive(Debug, Clone)]
pub struct DialConfig {
    pub connect_timeout: Duration,
    /// Largest response payload accepted (a consume response holds up to the fetch sizes).
    pub max_frame: usize,
    /// Idle time after which we send a Ping (the broker ignores it; it keeps NATs open and
    /// finds a dead peer).
    pub keepalive: Duration,
}

impl Default for DialConfig {
    fn default() -> Self {
        DialConfig {
            connect_timeout: Duration::from_secs(10),
            max_frame: 256 * 1024 * 1024,
            keepalive: Duration::from_secs(30),
        }
    }
}

fn ping_frame() -> Bytes {
    let mut b = BytesMut::with_capacity(5);
    codec::encode_ping(&mut b);
    b.freeze()
}

/// Connect, wait for the greeting Ping, and start the connection's tasks.
pub async fn dial(addr: &BrokerAddr, config: &DialConfig) -> Result<Connection> {
    let target = format!("tank://{addr}");
    let fut = async {
        let stream = TcpStream::connect((addr.host.as_str(), addr.port))
            .await
            .map_err(|e| {
                Error::new(
                    ErrorKind::Connect,
                    format!("could not connect to {target}: {e}"),
                )
            })?;
        stream
            .set_nodelay(true)
            .map_err(|e| Error::new(ErrorKind::Connect, format!("{target}: set_nodelay: {e}")))?;
        greeting(stream, &target, config.max_frame).await
    };
    let (stream, rest) = match tokio::time::timeout(config.connect_timeout, fut).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(Error::new(
                ErrorKind::Connect,
                format!(
                    "connecting to {target} timed out after {:?} (no connection or no greeting)",
                    config.connect_timeout
                ),
            ))
        }
    };
    let framed = FramedConfig {
        keepalive: Some((config.keepalive, ping_frame())),
        ..FramedConfig::default()
    };
    let codec = TankCodec {
        max_payload: config.max_frame,
    };
    // Unsolicited frames are the broker's pings: the receiver is dropped, so they are
    // discarded as they arrive.
    let (conn, _pings) = FramedConnection::start(target, stream, codec, framed, rest);
    Ok(conn)
}

/// Read until the first frame; it must be the broker's Ping.
async fn greeting(
    mut stream: TcpStream,
    target: &str,
    max_frame: usize,
) -> Result<(TcpStream, BytesMut)> {
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        match codec::decode_frame(&mut buf, max_frame).map_err(Error::from)? {
            Some(f) if f.msg_type == MsgType::Ping as u8 => return Ok((stream, buf)),
            Some(f) => {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "{target} is not a TANK broker: its first frame was type {} instead of \
                         the greeting ping",
                        f.msg_type
                    ),
                ))
            }
            None => {}
        }
        let n = stream.read_buf(&mut buf).await.map_err(|e| {
            Error::new(
                ErrorKind::Connect,
                format!("{target} failed before greeting: {e}"),
            )
        })?;
        if n == 0 {
            return Err(Error::new(
                ErrorKind::Connect,
                format!("{target} closed the connection before its greeting"),
            ));
        }
    }
}
