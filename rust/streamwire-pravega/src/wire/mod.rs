//! The segment store's wire protocol (pure, no I/O), as the 0.13 server speaks it
//! (`WIRE_VERSION` 16, oldest compatible 5). Every frame is `type:i32 length:i32` (big endian)
//! and the fields; newer fields trail older ones, so decoders read trailing fields only when
//! the bytes are there, and ignore what follows the fields they know.

pub mod cursor;
pub mod errors;
pub mod events;
pub mod peer;
pub mod reply;
pub mod request;
pub mod table;
pub mod utf;

pub use cursor::Cursor;
pub use errors::check_hello;
pub use events::EventDecoder;
pub use peer::{decode_request, Request};
pub use reply::{decode_frame, Reply};
pub use request::*;

use streamwire_core::error::{Error, ErrorKind};

/// The wire version we speak, and the oldest we accept.
pub const WIRE_VERSION: i32 = 16;
pub const OLDEST_COMPATIBLE_VERSION: i32 = 5;

/// Largest frame the server sends (`MAX_WIRECOMMAND_SIZE`, 16 MiB + headroom).
pub const MAX_FRAME: usize = 0x00ff_ffff + 1024;

/// Command type ids (`WireCommandType`).
pub mod ids {
    pub const HELLO: i32 = -127;
    pub const PADDING: i32 = -1;
    pub const PARTIAL_EVENT: i32 = -2;
    pub const EVENT: i32 = 0;
    pub const SETUP_APPEND: i32 = 1;
    pub const APPEND_SETUP: i32 = 2;
    pub const APPEND_BLOCK: i32 = 3;
    pub const APPEND_BLOCK_END: i32 = 4;
    pub const CONDITIONAL_APPEND: i32 = 5;
    pub const DATA_APPENDED: i32 = 7;
    pub const CONDITIONAL_CHECK_FAILED: i32 = 8;
    pub const READ_SEGMENT: i32 = 9;
    pub const SEGMENT_READ: i32 = 10;
    pub const GET_STREAM_SEGMENT_INFO: i32 = 11;
    pub const STREAM_SEGMENT_INFO: i32 = 12;
    pub const CREATE_SEGMENT: i32 = 20;
    pub const TRUNCATE_SEGMENT: i32 = 38;
    pub const CREATE_TRANSIENT_SEGMENT: i32 = 40;
    pub const SEGMENT_TRUNCATED: i32 = 39;
    pub const SEGMENT_CREATED: i32 = 21;
    pub const WRONG_HOST: i32 = 50;
    pub const SEGMENT_IS_SEALED: i32 = 51;
    pub const SEGMENT_ALREADY_EXISTS: i32 = 52;
    pub const NO_SUCH_SEGMENT: i32 = 53;
    pub const INVALID_EVENT_NUMBER: i32 = 55;
    pub const SEGMENT_IS_TRUNCATED: i32 = 56;
    pub const OPERATION_UNSUPPORTED: i32 = 57;
    pub const MERGE_SEGMENTS: i32 = 58;
    pub const SEGMENTS_MERGED: i32 = 59;
    pub const AUTH_TOKEN_CHECK_FAILED: i32 = 60;
    pub const ERROR_MESSAGE: i32 = 61;
    pub const CONDITIONAL_BLOCK_END: i32 = 89;
    pub const KEEP_ALIVE: i32 = 100;
}

/// What went wrong encoding or decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    Truncated,
    Malformed(&'static str),
    TooLarge { len: u64, limit: u64 },
    InvalidArgument(&'static str),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Truncated => f.write_str("truncated Pravega frame"),
            WireError::Malformed(w) => write!(f, "malformed Pravega data: {w}"),
            WireError::TooLarge { len, limit } => {
                write!(
                    f,
                    "Pravega frame of {len} bytes is over the limit of {limit}"
                )
            }
            WireError::InvalidArgument(w) => write!(f, "invalid Pravega request: {w}"),
        }
    }
}

impl std::error::Error for WireError {}

impl From<WireError> for Error {
    fn from(e: WireError) -> Error {
        let kind = match e {
            WireError::InvalidArgument(_) => ErrorKind::InvalidArgument,
            WireError::TooLarge { .. } => ErrorKind::MessageTooBig,
            _ => ErrorKind::Protocol,
        };
        Error::new(kind, e.to_string())
    }
}
