//! The Pulsar wire protocol, as pure functions and data: no I/O, no async.
//!
//! * [`frame`] — splitting a byte stream into frames and writing frames (incl. CRC32C);
//! * [`commands`] — builders for the commands a client sends, command names for logs;
//! * [`checksum`] — CRC32C helpers;
//! * [`error`] — [`ProtocolError`].
//!
//! The protobuf types are re-exported as [`pb`].

pub mod checksum;
pub mod commands;
pub mod error;
pub mod frame;

pub use streamwire_proto::pulsar as pb;

pub use checksum::{crc32c, crc32c_append, crc32c_slices};
pub use commands::{
    command_name, ProducerParams, SeekTarget, SubscribeParams, CLIENT_PROTOCOL_VERSION,
};
pub use error::ProtocolError;
pub use frame::{
    encode_command, encode_payload_command, encode_payload_command_parts, encode_payload_head,
    ChecksumStatus, Frame, FrameDecoder, PayloadSection, DEFAULT_MAX_FRAME_SIZE, FRAME_HEADROOM,
    MAGIC_BROKER_ENTRY_METADATA, MAGIC_CRC32C,
};
