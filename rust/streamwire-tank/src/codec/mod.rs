//! The TANK wire format (pure, no I/O), from the layouts the real broker and its C++ client
//! use (see `shared/design/TANK.md`; the protocol page itself is out of date).
//!
//! - `wire`: integers, `str8`, varints, a never-panicking read cursor.
//! - `frame`: `msgId:u8 payloadLen:u32 payload` framing and request-id extraction.
//! - `request`: encoders of every request a client sends (and decoders, for tests and the
//!   broker double's cross-checks).
//! - `response`: decoders of every response (and encoders, for tests).
//! - `admin`: the broker's side of the admin calls (request decoders, response encoders),
//!   so every admin pair round-trips under proptest.
//! - `bundle`: message bundles (plain, Snappy, sparse) and consume chunks.
//!
//! Decoders return typed errors instead of panicking, and never let a count or length off
//! the wire size an allocation beyond the bytes actually present.

pub mod admin;
pub mod bundle;
pub mod frame;
pub mod request;
pub mod response;
pub mod wire;

pub use admin::*;
pub use bundle::{
    decode_bundle, decode_chunk, encode_bundle, encode_sparse_bundle, plain_bundle_len,
    ChunkDecode, Compression, Message, OutMsg,
};
pub use frame::{begin_frame, decode_frame, encode_ping, end_frame, response_request_id, RawFrame};
pub use request::*;
pub use response::*;

use streamwire_core::error::{Error, ErrorKind};

/// The clientId we send (the broker ignores it).
pub const CLIENT_ID: &[u8] = b"streamwire";

/// Longest topic name the broker accepts.
pub const MAX_TOPIC_LEN: usize = 64;

/// Message types (`TankAPIMsgType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum MsgType {
    Produce = 0x01,
    Consume = 0x02,
    Ping = 0x03,
    ProduceWithSeqnum = 0x05,
    DiscoverPartitions = 0x06,
    CreateTopic = 0x07,
    ReloadConf = 0x08,
    Status = 0x0a,
    DiscoverTopics = 0x0b,
    DiscoverTopology = 0x0c,
}

impl TryFrom<u8> for MsgType {
    type Error = CodecError;
    fn try_from(v: u8) -> Result<Self, CodecError> {
        Ok(match v {
            0x01 => Self::Produce,
            0x02 => Self::Consume,
            0x03 => Self::Ping,
            0x05 => Self::ProduceWithSeqnum,
            0x06 => Self::DiscoverPartitions,
            0x07 => Self::CreateTopic,
            0x08 => Self::ReloadConf,
            0x0a => Self::Status,
            0x0b => Self::DiscoverTopics,
            0x0c => Self::DiscoverTopology,
            _ => return Err(CodecError::Malformed("unknown message type")),
        })
    }
}

/// What went wrong encoding or decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodecError {
    /// The bytes end before the structure does.
    Truncated,
    /// The bytes do not follow the layout.
    Malformed(&'static str),
    /// A length is above the limit in force.
    TooLarge {
        what: &'static str,
        len: u64,
        limit: u64,
    },
    /// A feature this client does not implement (bundle codec 2/3, extra flags).
    Unsupported(&'static str),
    /// An encoder was given something the protocol cannot carry.
    InvalidArgument(&'static str),
}

impl std::fmt::Display for CodecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CodecError::Truncated => f.write_str("truncated TANK frame"),
            CodecError::Malformed(what) => write!(f, "malformed TANK data: {what}"),
            CodecError::TooLarge { what, len, limit } => {
                write!(f, "{what} of {len} bytes is over the limit of {limit}")
            }
            CodecError::Unsupported(what) => write!(f, "unsupported TANK feature: {what}"),
            CodecError::InvalidArgument(what) => write!(f, "invalid TANK request: {what}"),
        }
    }
}

impl std::error::Error for CodecError {}

impl From<CodecError> for Error {
    fn from(e: CodecError) -> Error {
        let kind = match e {
            CodecError::InvalidArgument(_) => ErrorKind::InvalidArgument,
            CodecError::TooLarge { .. } => ErrorKind::MessageTooBig,
            CodecError::Unsupported(_) => ErrorKind::NotSupported,
            CodecError::Truncated | CodecError::Malformed(_) => ErrorKind::Protocol,
        };
        Error::new(kind, e.to_string())
    }
}

pub(crate) fn check_topic(topic: &[u8]) -> Result<(), CodecError> {
    if topic.is_empty() || topic.len() > MAX_TOPIC_LEN {
        return Err(CodecError::InvalidArgument("a topic name is 1 to 64 bytes"));
    }
    Ok(())
}
