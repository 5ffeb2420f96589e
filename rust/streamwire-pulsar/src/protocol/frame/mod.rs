//! Pulsar framing: the types shared by the decoder and the encoder, and the byte layout.
//!
//! ```text
//! simple command   [totalSize u32][commandSize u32][BaseCommand]
//! payload command  [totalSize u32][commandSize u32][BaseCommand]
//!                  ( [0x0e02][brokerEntryMetadataSize u32][BrokerEntryMetadata] )?
//!                  ( [0x0e01][CRC32C u32] )?
//!                  [metadataSize u32][MessageMetadata][payload ...]
//! ```
//!
//! All integers are big-endian. `totalSize` counts every byte after itself. The CRC32C
//! covers everything after the checksum field: metadata size, metadata and payload.
//! The broker-entry block and the checksum are optional on receive (pulsar-lite sends
//! MESSAGE frames with neither); we always write the checksum.

mod decode;
mod encode;
#[cfg(test)]
mod tests;

pub use decode::FrameDecoder;
pub use encode::{
    encode_command, encode_payload_command, encode_payload_command_parts, encode_payload_head,
};

use bytes::Bytes;
use streamwire_proto::pulsar as pb;

use super::ProtocolError;

/// Frame size limit until the broker's `Connected.max_message_size` says otherwise.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 5 * 1024 * 1024;

/// Head-room to add to a broker's `max_message_size` when deriving the frame limit: the
/// limit is on the message (metadata + payload) but a frame also carries the command and
/// size/magic/checksum fields.
pub const FRAME_HEADROOM: usize = 10 * 1024;

/// Marks a CRC32C-protected payload section.
pub const MAGIC_CRC32C: u16 = 0x0e01;

/// Marks a broker-entry-metadata block in front of the message metadata.
pub const MAGIC_BROKER_ENTRY_METADATA: u16 = 0x0e02;

/// One decoded frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The command. Its `type` may be a value this build does not know (a newer broker);
    /// [`Frame::command_type`] is `None` then and the caller should ignore the frame.
    pub command: pb::BaseCommand,
    /// Present when bytes follow the command (SEND and MESSAGE frames).
    pub payload: Option<PayloadSection>,
}

impl Frame {
    /// The command type, or `None` when the value is not one this build knows.
    pub fn command_type(&self) -> Option<pb::base_command::Type> {
        pb::base_command::Type::try_from(self.command.r#type).ok()
    }
}

/// The part of a SEND / MESSAGE frame after the command.
///
/// Problems here are the message's, not the connection's: a bad checksum shows up in
/// [`checksum`](Self::checksum) and unparseable metadata in [`metadata`](Self::metadata).
/// Use [`verified_metadata`](Self::verified_metadata) to get both checks at once.
#[derive(Debug, Clone, PartialEq)]
pub struct PayloadSection {
    /// Broker-added metadata (timestamp, index), when the broker sent it.
    pub broker_entry_metadata: Option<pb::BrokerEntryMetadata>,
    /// The message metadata, or why it could not be parsed (this includes an unparseable
    /// broker-entry-metadata block, which would otherwise go unnoticed).
    pub metadata: Result<pb::MessageMetadata, ProtocolError>,
    /// The raw (possibly compressed, possibly batched) payload: a slice of the read buffer.
    pub payload: Bytes,
    /// What became of the CRC32C check.
    pub checksum: ChecksumStatus,
}

impl PayloadSection {
    /// The metadata if the checksum (when present) matched and the metadata parsed.
    pub fn verified_metadata(&self) -> Result<&pb::MessageMetadata, ProtocolError> {
        if let ChecksumStatus::Mismatch { expected, computed } = self.checksum {
            return Err(ProtocolError::ChecksumMismatch { expected, computed });
        }
        self.metadata.as_ref().map_err(Clone::clone)
    }
}

/// Outcome of the CRC32C check of a payload section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumStatus {
    /// The frame carried no checksum (allowed: some brokers omit it).
    Absent,
    /// The checksum matched.
    Valid,
    /// The checksum did not match: the message is corrupt.
    Mismatch {
        /// Checksum carried by the frame.
        expected: u32,
        /// Checksum computed over the received bytes.
        computed: u32,
    },
}
