//! Incremental frame decoder.

use bytes::{Buf, Bytes, BytesMut};
use prost::Message;
use streamwire_proto::pulsar as pb;

use super::{
    ChecksumStatus, Frame, PayloadSection, DEFAULT_MAX_FRAME_SIZE, MAGIC_BROKER_ENTRY_METADATA,
    MAGIC_CRC32C,
};
use crate::protocol::checksum::crc32c;
use crate::protocol::commands::{body_present, command_name};
use crate::protocol::ProtocolError;

/// Size of the `totalSize` prefix.
const LEN_PREFIX: usize = 4;

/// Splits a byte stream into [`Frame`]s.
///
/// Feed it the connection's read buffer after every read; it takes complete frames off the
/// front and leaves partial ones in place, whatever the chunking of the stream.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    max_frame_size: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_SIZE)
    }
}

impl FrameDecoder {
    /// A decoder that rejects frames whose `totalSize` exceeds `max_frame_size`.
    pub fn new(max_frame_size: usize) -> Self {
        Self { max_frame_size }
    }

    /// The limit in force.
    pub fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }

    /// Change the limit, typically after `Connected.max_message_size` (plus
    /// [`FRAME_HEADROOM`](super::FRAME_HEADROOM)).
    pub fn set_max_frame_size(&mut self, max_frame_size: usize) {
        self.max_frame_size = max_frame_size;
    }

    /// Take the next complete frame off the front of `buf`.
    ///
    /// * `Ok(Some(frame))` — one frame consumed; call again, more may be buffered.
    /// * `Ok(None)` — `buf` holds no complete frame yet; it has been given capacity for the
    ///   rest of the frame (bounded by the maximum frame size), so read more and call again.
    /// * `Err(_)` — the stream is corrupt; close the connection. Per-message problems
    ///   (checksum, metadata) are *not* reported here but in [`Frame::payload`].
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, ProtocolError> {
        if buf.len() < LEN_PREFIX {
            buf.reserve(LEN_PREFIX - buf.len());
            return Ok(None);
        }
        let total = read_u32(&buf[..LEN_PREFIX]) as usize;
        // Checked before anything is buffered or reserved, so a lying size prefix can
        // never make us allocate more than the limit.
        if total > self.max_frame_size {
            return Err(ProtocolError::FrameTooLarge {
                size: total,
                max: self.max_frame_size,
            });
        }
        if total < 4 {
            return Err(ProtocolError::malformed(format!(
                "frame size {total} cannot hold the 4-byte command size"
            )));
        }
        let needed = LEN_PREFIX + total;
        if buf.len() < needed {
            buf.reserve(needed - buf.len());
            return Ok(None);
        }
        let mut frame = buf.split_to(needed).freeze();
        frame.advance(LEN_PREFIX);
        decode_frame(frame).map(Some)
    }
}

/// Decode one complete frame (without its length prefix). Pure function of its input.
fn decode_frame(mut frame: Bytes) -> Result<Frame, ProtocolError> {
    let total = frame.len();
    let command_size = frame.get_u32() as usize;
    if command_size > frame.len() {
        return Err(ProtocolError::malformed(format!(
            "command size {command_size} exceeds frame size {total}"
        )));
    }
    // Decoding from a `Bytes` makes prost slice `bytes` fields instead of copying them.
    let command_bytes = frame.split_to(command_size);
    let command =
        pb::BaseCommand::decode(command_bytes).map_err(|e| ProtocolError::decode("command", e))?;
    if body_present(&command) == Some(false) {
        return Err(ProtocolError::MissingCommand {
            command: command_name(&command),
        });
    }

    let needs_payload = matches!(
        pb::base_command::Type::try_from(command.r#type),
        Ok(pb::base_command::Type::Send | pb::base_command::Type::Message)
    );
    let payload = if frame.is_empty() {
        if needs_payload {
            return Err(ProtocolError::malformed(format!(
                "{} frame without a payload section",
                command_name(&command)
            )));
        }
        None
    } else {
        // Anything after the command is a payload section, whatever the command type: that
        // is how the framing is defined, and it keeps one code path.
        Some(decode_payload_section(frame)?)
    };
    Ok(Frame { command, payload })
}

/// Decode the bytes after the command. Size fields that do not fit are stream errors;
/// checksum and protobuf problems are recorded in the returned section.
fn decode_payload_section(mut rest: Bytes) -> Result<PayloadSection, ProtocolError> {
    // Problems that spoil only this message; kept so the metadata result can carry it.
    let mut message_error: Option<ProtocolError> = None;

    let mut broker_entry_metadata = None;
    if peek_u16(&rest) == Some(MAGIC_BROKER_ENTRY_METADATA) {
        need(&rest, 6, "broker entry metadata header")?;
        rest.advance(2);
        let size = rest.get_u32() as usize;
        need(&rest, size, "broker entry metadata")?;
        match pb::BrokerEntryMetadata::decode(rest.split_to(size)) {
            Ok(m) => broker_entry_metadata = Some(m),
            Err(e) => message_error = Some(ProtocolError::decode("broker entry metadata", e)),
        }
    }

    // Without the magic the next bytes are already the metadata size. The two cannot be
    // confused: a metadata size starting 0x0e01 would be over 235 MB, beyond any frame.
    let checksum = if peek_u16(&rest) == Some(MAGIC_CRC32C) {
        need(&rest, 6, "checksum")?;
        rest.advance(2);
        let expected = rest.get_u32();
        let computed = crc32c(&rest);
        if expected == computed {
            ChecksumStatus::Valid
        } else {
            ChecksumStatus::Mismatch { expected, computed }
        }
    } else {
        ChecksumStatus::Absent
    };

    need(&rest, 4, "metadata size")?;
    let metadata_size = rest.get_u32() as usize;
    need(&rest, metadata_size, "message metadata")?;
    let metadata_bytes = rest.split_to(metadata_size);
    let metadata = match message_error {
        Some(e) => Err(e),
        None => pb::MessageMetadata::decode(metadata_bytes)
            .map_err(|e| ProtocolError::decode("message metadata", e)),
    };
    Ok(PayloadSection {
        broker_entry_metadata,
        metadata,
        payload: rest,
        checksum,
    })
}

fn read_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn peek_u16(b: &[u8]) -> Option<u16> {
    (b.len() >= 2).then(|| u16::from_be_bytes([b[0], b[1]]))
}

fn need(rest: &[u8], n: usize, what: &str) -> Result<(), ProtocolError> {
    if rest.len() < n {
        return Err(ProtocolError::malformed(format!(
            "{what} needs {n} bytes but only {} remain in the frame",
            rest.len()
        )));
    }
    Ok(())
}
