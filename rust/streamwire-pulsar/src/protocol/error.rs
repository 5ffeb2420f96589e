//! Errors of the pure protocol layer.
//!
//! Two kinds of failure come out of the codec and it matters which is which:
//! * a *stream* error (returned as `Err` by [`FrameDecoder::decode`](super::FrameDecoder::decode))
//!   means the byte stream can no longer be trusted — the connection must close;
//! * a *message* error (stored inside a [`PayloadSection`](super::PayloadSection)) spoils one
//!   message only; the consumer reports it to the broker with an ack validation error and
//!   the connection carries on.
//!
//! The same type is used for both so callers can log and map them uniformly.

use thiserror::Error;

/// Something is wrong with bytes on (or destined for) the wire.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A frame is larger than the negotiated maximum. On decode this is detected from the
    /// 4-byte size prefix, before any of the frame is buffered.
    #[error("frame of {size} bytes exceeds the maximum frame size of {max} bytes")]
    FrameTooLarge {
        /// Size of the frame in bytes, not counting its 4-byte length prefix.
        size: usize,
        /// The limit in force.
        max: usize,
    },

    /// Size fields that contradict each other or the frame, or a frame cut short.
    #[error("malformed frame: {0}")]
    Malformed(String),

    /// A protobuf section failed to parse.
    #[error("cannot decode {what}: {source}")]
    Decode {
        /// Which section: "command", "message metadata", "broker entry metadata".
        what: &'static str,
        /// prost's description of the problem.
        #[source]
        source: prost::DecodeError,
    },

    /// `BaseCommand.type` names a command whose body field is absent.
    #[error("{command} command without its body")]
    MissingCommand {
        /// Name of the command type, as in [`command_name`](super::command_name).
        command: &'static str,
    },

    /// The CRC32C stored in a payload section does not match its contents.
    #[error(
        "payload checksum mismatch: frame says {expected:#010x}, contents give {computed:#010x}"
    )]
    ChecksumMismatch {
        /// Checksum carried by the frame.
        expected: u32,
        /// Checksum computed over the received bytes.
        computed: u32,
    },
}

impl ProtocolError {
    pub(crate) fn malformed(msg: impl Into<String>) -> Self {
        ProtocolError::Malformed(msg.into())
    }

    pub(crate) fn decode(what: &'static str, source: prost::DecodeError) -> Self {
        ProtocolError::Decode { what, source }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_messages_are_readable() {
        let e = ProtocolError::FrameTooLarge {
            size: 6_000_000,
            max: 5_242_880,
        };
        assert_eq!(
            e.to_string(),
            "frame of 6000000 bytes exceeds the maximum frame size of 5242880 bytes"
        );
        let e = ProtocolError::malformed("command size 9 exceeds frame size 4");
        assert_eq!(
            e.to_string(),
            "malformed frame: command size 9 exceeds frame size 4"
        );
        let e = ProtocolError::ChecksumMismatch {
            expected: 0xE3069283,
            computed: 1,
        };
        assert_eq!(
            e.to_string(),
            "payload checksum mismatch: frame says 0xe3069283, contents give 0x00000001"
        );
        let e = ProtocolError::MissingCommand { command: "SEND" };
        assert_eq!(e.to_string(), "SEND command without its body");
    }

    #[test]
    fn decode_error_keeps_its_source() {
        use prost::Message;
        let err = streamwire_proto::pulsar::BaseCommand::decode(&[0xff_u8][..]).unwrap_err();
        let e = ProtocolError::decode("command", err);
        assert!(e.to_string().starts_with("cannot decode command: "));
        assert!(std::error::Error::source(&e).is_some());
    }
}
