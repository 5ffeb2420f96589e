//! Replies a client receives, decoded; anything else is kept raw (`Other`) so a newer server
//! never breaks an older client.

use bytes::{Bytes, BytesMut};

use super::cursor::Cursor;
use super::{ids, WireError};

/// "No event number yet" (`Long.MIN_VALUE`).
pub const NO_EVENT_NUMBER: i64 = i64::MIN;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Hello {
        high: i32,
        low: i32,
    },
    KeepAlive,
    AppendSetup {
        request_id: i64,
        segment: String,
        writer_id: u128,
        last_event_number: i64,
    },
    DataAppended {
        writer_id: u128,
        event_number: i64,
        previous_event_number: i64,
        request_id: i64,
        current_segment_write_offset: i64,
    },
    ConditionalCheckFailed {
        writer_id: u128,
        event_number: i64,
        request_id: i64,
    },
    SegmentRead {
        segment: String,
        offset: i64,
        at_tail: bool,
        end_of_segment: bool,
        data: Bytes,
        request_id: i64,
    },
    StreamSegmentInfo {
        request_id: i64,
        segment: String,
        exists: bool,
        sealed: bool,
        deleted: bool,
        last_modified: i64,
        write_offset: i64,
        start_offset: i64,
    },
    SegmentCreated {
        request_id: i64,
        segment: String,
    },
    SegmentTruncated {
        request_id: i64,
        segment: String,
    },
    /// `source` was merged into `target`, which is now `new_target_write_offset` long (-1
    /// from a server too old to say).
    SegmentsMerged {
        request_id: i64,
        target: String,
        source: String,
        new_target_write_offset: i64,
    },
    WrongHost {
        request_id: i64,
        segment: String,
        correct_host: String,
        stack: String,
    },
    SegmentIsSealed {
        request_id: i64,
        segment: String,
        stack: String,
        offset: i64,
    },
    SegmentIsTruncated {
        request_id: i64,
        segment: String,
        start_offset: i64,
        stack: String,
        offset: i64,
    },
    SegmentAlreadyExists {
        request_id: i64,
        segment: String,
        stack: String,
    },
    NoSuchSegment {
        request_id: i64,
        segment: String,
        stack: String,
        offset: i64,
    },
    InvalidEventNumber {
        writer_id: u128,
        request_id: i64,
        stack: String,
        event_number: i64,
    },
    OperationUnsupported {
        request_id: i64,
        operation: String,
        stack: String,
    },
    AuthTokenCheckFailed {
        request_id: i64,
        stack: String,
        error_code: i32,
    },
    ErrorMessage {
        request_id: i64,
        segment: String,
        message: String,
        error_code: i32,
    },
    /// A command this client does not act on.
    Other {
        type_id: i32,
        payload: Bytes,
    },
}

impl Reply {
    /// The request a reply answers (`None` for HELLO, KEEP_ALIVE and unknown commands).
    pub fn request_id(&self) -> Option<i64> {
        use Reply::*;
        match self {
            Hello { .. } | KeepAlive => None,
            // Table replies are not decoded here (`wire::table` does), but their first
            // field is the request id: the connection routes them with it.
            Other { type_id, payload }
                if super::table::REPLIES.contains(type_id) && payload.len() >= 8 =>
            {
                Some(i64::from_be_bytes(payload[..8].try_into().ok()?))
            }
            Other { .. } => None,
            AppendSetup { request_id, .. }
            | DataAppended { request_id, .. }
            | ConditionalCheckFailed { request_id, .. }
            | SegmentRead { request_id, .. }
            | StreamSegmentInfo { request_id, .. }
            | SegmentCreated { request_id, .. }
            | SegmentTruncated { request_id, .. }
            | SegmentsMerged { request_id, .. }
            | WrongHost { request_id, .. }
            | SegmentIsSealed { request_id, .. }
            | SegmentIsTruncated { request_id, .. }
            | SegmentAlreadyExists { request_id, .. }
            | NoSuchSegment { request_id, .. }
            | InvalidEventNumber { request_id, .. }
            | OperationUnsupported { request_id, .. }
            | AuthTokenCheckFailed { request_id, .. }
            | ErrorMessage { request_id, .. } => Some(*request_id),
        }
    }

    /// Decode one command's fields (`payload` without the 8-byte header).
    pub fn decode(type_id: i32, payload: Bytes) -> Result<Reply, WireError> {
        let mut c = Cursor::new(&payload);
        let c = &mut c;
        Ok(match type_id {
            ids::HELLO => Reply::Hello {
                high: c.i32()?,
                low: c.i32()?,
            },
            ids::KEEP_ALIVE => Reply::KeepAlive,
            ids::APPEND_SETUP => Reply::AppendSetup {
                request_id: c.i64()?,
                segment: c.utf()?,
                writer_id: c.uuid()?,
                last_event_number: c.i64()?,
            },
            ids::DATA_APPENDED => Reply::DataAppended {
                writer_id: c.uuid()?,
                event_number: c.i64()?,
                previous_event_number: c.opt_i64(NO_EVENT_NUMBER)?,
                request_id: c.opt_i64(-1)?,
                current_segment_write_offset: c.opt_i64(-1)?,
            },
            ids::CONDITIONAL_CHECK_FAILED => Reply::ConditionalCheckFailed {
                writer_id: c.uuid()?,
                event_number: c.i64()?,
                request_id: c.opt_i64(-1)?,
            },
            ids::SEGMENT_READ => {
                let segment = c.utf()?;
                let offset = c.i64()?;
                let at_tail = c.bool()?;
                let end_of_segment = c.bool()?;
                let n = c.i32()?;
                let n =
                    usize::try_from(n).map_err(|_| WireError::Malformed("negative data length"))?;
                let at = c.pos();
                c.take(n)?;
                Reply::SegmentRead {
                    segment,
                    offset,
                    at_tail,
                    end_of_segment,
                    data: payload.slice(at..at + n),
                    request_id: c.opt_i64(-1)?,
                }
            }
            ids::STREAM_SEGMENT_INFO => Reply::StreamSegmentInfo {
                request_id: c.i64()?,
                segment: c.utf()?,
                exists: c.bool()?,
                sealed: c.bool()?,
                deleted: c.bool()?,
                last_modified: c.i64()?,
                write_offset: c.i64()?,
                start_offset: c.opt_i64(0)?,
            },
            ids::SEGMENT_CREATED => Reply::SegmentCreated {
                request_id: c.i64()?,
                segment: c.utf()?,
            },
            ids::SEGMENT_TRUNCATED => Reply::SegmentTruncated {
                request_id: c.i64()?,
                segment: c.utf()?,
            },
            ids::SEGMENTS_MERGED => Reply::SegmentsMerged {
                request_id: c.i64()?,
                target: c.utf()?,
                source: c.utf()?,
                new_target_write_offset: c.opt_i64(-1)?,
            },
            ids::WRONG_HOST => Reply::WrongHost {
                request_id: c.i64()?,
                segment: c.utf()?,
                correct_host: c.utf()?,
                stack: c.opt_utf()?,
            },
            ids::SEGMENT_IS_SEALED => Reply::SegmentIsSealed {
                request_id: c.i64()?,
                segment: c.utf()?,
                stack: c.opt_utf()?,
                offset: c.opt_i64(-1)?,
            },
            ids::SEGMENT_IS_TRUNCATED => Reply::SegmentIsTruncated {
                request_id: c.i64()?,
                segment: c.utf()?,
                start_offset: c.i64()?,
                stack: c.opt_utf()?,
                offset: c.opt_i64(-1)?,
            },
            ids::SEGMENT_ALREADY_EXISTS => Reply::SegmentAlreadyExists {
                request_id: c.i64()?,
                segment: c.utf()?,
                stack: c.opt_utf()?,
            },
            ids::NO_SUCH_SEGMENT => Reply::NoSuchSegment {
                request_id: c.i64()?,
                segment: c.utf()?,
                stack: c.opt_utf()?,
                offset: c.opt_i64(-1)?,
            },
            ids::INVALID_EVENT_NUMBER => Reply::InvalidEventNumber {
                writer_id: c.uuid()?,
                request_id: c.i64()?,
                stack: c.opt_utf()?,
                event_number: c.opt_i64(-1)?,
            },
            ids::OPERATION_UNSUPPORTED => Reply::OperationUnsupported {
                request_id: c.i64()?,
                operation: c.utf()?,
                stack: c.opt_utf()?,
            },
            ids::AUTH_TOKEN_CHECK_FAILED => Reply::AuthTokenCheckFailed {
                request_id: c.i64()?,
                stack: c.opt_utf()?,
                error_code: c.opt_i32(-1)?,
            },
            ids::ERROR_MESSAGE => Reply::ErrorMessage {
                request_id: c.i64()?,
                segment: c.utf()?,
                message: c.utf()?,
                error_code: c.i32()?,
            },
            other => Reply::Other {
                type_id: other,
                payload,
            },
        })
    }
}

/// Split one frame off `buf` and decode it: `Ok(None)` = need more bytes; `Err` = a corrupt
/// stream (a length out of bounds, or fields that do not parse).
pub fn decode_frame(buf: &mut BytesMut, max_len: usize) -> Result<Option<Reply>, WireError> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let type_id = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let len = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    let len = usize::try_from(len).map_err(|_| WireError::Malformed("negative frame length"))?;
    if len > max_len {
        return Err(WireError::TooLarge {
            len: len as u64,
            limit: max_len as u64,
        });
    }
    if buf.len() < 8 + len {
        // No reserve sized by the header: the caller's reads grow the buffer with the bytes
        // that actually arrive (a lying length never allocates).
        return Ok(None);
    }
    let frame = buf.split_to(8 + len).freeze();
    Reply::decode(type_id, frame.slice(8..)).map(Some)
}
