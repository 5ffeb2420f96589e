//! The segment store's side of the codec: requests decoded as the server reads them, replies
//! encoded as the server writes them (all fields, the newest layout). A client never needs
//! this at run time; it exists so every client encoder/decoder pair is checked by a round
//! trip, and so tests can run an in-process fake segment store that speaks the real layout.

use bytes::{BufMut, Bytes, BytesMut};

use super::cursor::Cursor;
use super::reply::Reply;
use super::request::{begin, end, put_uuid};
use super::utf::put_utf;
use super::{ids, WireError};

/// A command a client sends, as the server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Hello {
        high: i32,
        low: i32,
    },
    KeepAlive,
    SetupAppend {
        request_id: i64,
        writer_id: u128,
        segment: String,
        token: String,
    },
    /// Whole or partial EVENT frames; the frame's length covers them.
    AppendBlock {
        writer_id: u128,
        data: Bytes,
    },
    AppendBlockEnd {
        writer_id: u128,
        size_of_whole_events: i32,
        data: Bytes,
        num_events: i32,
        last_event_number: i64,
        request_id: i64,
    },
    /// `event` is the EVENT's payload (its 8-byte header checked and dropped).
    ConditionalAppend {
        writer_id: u128,
        event_number: i64,
        expected_offset: i64,
        event: Bytes,
        request_id: i64,
    },
    /// Raw bytes (no EVENT header), conditional on the segment's length.
    ConditionalBlockEnd {
        writer_id: u128,
        event_number: i64,
        expected_offset: i64,
        data: Bytes,
        request_id: i64,
    },
    TruncateSegment {
        request_id: i64,
        segment: String,
        offset: i64,
        token: String,
    },
    ReadSegment {
        segment: String,
        offset: i64,
        suggested_length: i32,
        token: String,
        request_id: i64,
    },
    GetStreamSegmentInfo {
        request_id: i64,
        segment: String,
        token: String,
    },
    CreateSegment {
        request_id: i64,
        segment: String,
        target_rate: i32,
        scale_type: u8,
        token: String,
        rollover_size_bytes: i64,
    },
    CreateTransientSegment {
        request_id: i64,
        writer_id: u128,
        parent: String,
        token: String,
    },
    /// Attribute updates (a trailing list) are not decoded: our client sends none.
    MergeSegments {
        request_id: i64,
        target: String,
        source: String,
        token: String,
    },
    Other {
        type_id: i32,
        payload: Bytes,
    },
}

fn data_of(payload: &Bytes, c: &mut Cursor<'_>, n: i32) -> Result<Bytes, WireError> {
    let n = usize::try_from(n).map_err(|_| WireError::Malformed("negative data length"))?;
    let at = c.pos();
    c.take(n)?;
    Ok(payload.slice(at..at + n))
}

impl Request {
    /// Decode one command's fields (`payload` without the 8-byte header).
    pub fn decode(type_id: i32, payload: Bytes) -> Result<Request, WireError> {
        let mut c = Cursor::new(&payload);
        let c = &mut c;
        Ok(match type_id {
            ids::HELLO => Request::Hello {
                high: c.i32()?,
                low: c.i32()?,
            },
            ids::KEEP_ALIVE => Request::KeepAlive,
            ids::SETUP_APPEND => Request::SetupAppend {
                request_id: c.i64()?,
                writer_id: c.uuid()?,
                segment: c.utf()?,
                token: c.utf()?,
            },
            ids::APPEND_BLOCK => {
                let writer_id = c.uuid()?;
                Request::AppendBlock {
                    writer_id,
                    data: payload.slice(c.pos()..),
                }
            }
            ids::APPEND_BLOCK_END => {
                let writer_id = c.uuid()?;
                let size_of_whole_events = c.i32()?;
                let n = c.i32()?;
                Request::AppendBlockEnd {
                    writer_id,
                    size_of_whole_events,
                    data: data_of(&payload, c, n)?,
                    num_events: c.i32()?,
                    last_event_number: c.i64()?,
                    request_id: c.opt_i64(-1)?,
                }
            }
            ids::CONDITIONAL_APPEND => {
                let writer_id = c.uuid()?;
                let event_number = c.i64()?;
                let expected_offset = c.i64()?;
                if c.i32()? != ids::EVENT {
                    return Err(WireError::Malformed("conditional append without an EVENT"));
                }
                let n = c.i32()?;
                Request::ConditionalAppend {
                    writer_id,
                    event_number,
                    expected_offset,
                    event: data_of(&payload, c, n)?,
                    request_id: c.opt_i64(-1)?,
                }
            }
            ids::CONDITIONAL_BLOCK_END => {
                let writer_id = c.uuid()?;
                let event_number = c.i64()?;
                let expected_offset = c.i64()?;
                let n = c.i32()?;
                Request::ConditionalBlockEnd {
                    writer_id,
                    event_number,
                    expected_offset,
                    data: data_of(&payload, c, n)?,
                    request_id: c.i64()?,
                }
            }
            ids::TRUNCATE_SEGMENT => Request::TruncateSegment {
                request_id: c.i64()?,
                segment: c.utf()?,
                offset: c.i64()?,
                token: c.utf()?,
            },
            ids::READ_SEGMENT => Request::ReadSegment {
                segment: c.utf()?,
                offset: c.i64()?,
                suggested_length: c.i32()?,
                token: c.utf()?,
                request_id: c.opt_i64(-1)?,
            },
            ids::GET_STREAM_SEGMENT_INFO => Request::GetStreamSegmentInfo {
                request_id: c.i64()?,
                segment: c.utf()?,
                token: c.utf()?,
            },
            ids::CREATE_SEGMENT => Request::CreateSegment {
                request_id: c.i64()?,
                segment: c.utf()?,
                target_rate: c.i32()?,
                scale_type: c.u8()?,
                token: c.utf()?,
                rollover_size_bytes: c.opt_i64(0)?,
            },
            ids::CREATE_TRANSIENT_SEGMENT => Request::CreateTransientSegment {
                request_id: c.i64()?,
                writer_id: c.uuid()?,
                parent: c.utf()?,
                token: c.utf()?,
            },
            ids::MERGE_SEGMENTS => Request::MergeSegments {
                request_id: c.i64()?,
                target: c.utf()?,
                source: c.utf()?,
                token: c.utf()?,
            },
            other => Request::Other {
                type_id: other,
                payload,
            },
        })
    }
}

/// Split one request frame off `buf` (the server's `decode_frame`).
pub fn decode_request(buf: &mut BytesMut, max_len: usize) -> Result<Option<Request>, WireError> {
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
        return Ok(None);
    }
    let frame = buf.split_to(8 + len).freeze();
    Request::decode(type_id, frame.slice(8..)).map(Some)
}

fn put_data(out: &mut BytesMut, data: &[u8]) -> Result<(), WireError> {
    let n = i32::try_from(data.len()).map_err(|_| WireError::InvalidArgument("data over 2 GiB"))?;
    out.put_i32(n);
    out.put_slice(data);
    Ok(())
}

impl Reply {
    /// Append this reply as one frame, as the 0.13 server writes it.
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), WireError> {
        use Reply::*;
        let type_id = match self {
            Hello { .. } => ids::HELLO,
            KeepAlive => ids::KEEP_ALIVE,
            AppendSetup { .. } => ids::APPEND_SETUP,
            DataAppended { .. } => ids::DATA_APPENDED,
            ConditionalCheckFailed { .. } => ids::CONDITIONAL_CHECK_FAILED,
            SegmentRead { .. } => ids::SEGMENT_READ,
            StreamSegmentInfo { .. } => ids::STREAM_SEGMENT_INFO,
            SegmentCreated { .. } => ids::SEGMENT_CREATED,
            SegmentTruncated { .. } => ids::SEGMENT_TRUNCATED,
            SegmentsMerged { .. } => ids::SEGMENTS_MERGED,
            WrongHost { .. } => ids::WRONG_HOST,
            SegmentIsSealed { .. } => ids::SEGMENT_IS_SEALED,
            SegmentIsTruncated { .. } => ids::SEGMENT_IS_TRUNCATED,
            SegmentAlreadyExists { .. } => ids::SEGMENT_ALREADY_EXISTS,
            NoSuchSegment { .. } => ids::NO_SUCH_SEGMENT,
            InvalidEventNumber { .. } => ids::INVALID_EVENT_NUMBER,
            OperationUnsupported { .. } => ids::OPERATION_UNSUPPORTED,
            AuthTokenCheckFailed { .. } => ids::AUTH_TOKEN_CHECK_FAILED,
            ErrorMessage { .. } => ids::ERROR_MESSAGE,
            Other { type_id, .. } => *type_id,
        };
        let at = begin(out, type_id);
        match self {
            Hello { high, low } => {
                out.put_i32(*high);
                out.put_i32(*low);
            }
            KeepAlive => {}
            AppendSetup {
                request_id,
                segment,
                writer_id,
                last_event_number,
            } => {
                out.put_i64(*request_id);
                put_utf(out, segment)?;
                put_uuid(out, *writer_id);
                out.put_i64(*last_event_number);
            }
            DataAppended {
                writer_id,
                event_number,
                previous_event_number,
                request_id,
                current_segment_write_offset,
            } => {
                put_uuid(out, *writer_id);
                out.put_i64(*event_number);
                out.put_i64(*previous_event_number);
                out.put_i64(*request_id);
                out.put_i64(*current_segment_write_offset);
            }
            ConditionalCheckFailed {
                writer_id,
                event_number,
                request_id,
            } => {
                put_uuid(out, *writer_id);
                out.put_i64(*event_number);
                out.put_i64(*request_id);
            }
            SegmentRead {
                segment,
                offset,
                at_tail,
                end_of_segment,
                data,
                request_id,
            } => {
                put_utf(out, segment)?;
                out.put_i64(*offset);
                out.put_u8(u8::from(*at_tail));
                out.put_u8(u8::from(*end_of_segment));
                put_data(out, data)?;
                out.put_i64(*request_id);
            }
            StreamSegmentInfo {
                request_id,
                segment,
                exists,
                sealed,
                deleted,
                last_modified,
                write_offset,
                start_offset,
            } => {
                out.put_i64(*request_id);
                put_utf(out, segment)?;
                out.put_u8(u8::from(*exists));
                out.put_u8(u8::from(*sealed));
                out.put_u8(u8::from(*deleted));
                out.put_i64(*last_modified);
                out.put_i64(*write_offset);
                out.put_i64(*start_offset);
            }
            SegmentCreated {
                request_id,
                segment,
            }
            | SegmentTruncated {
                request_id,
                segment,
            } => {
                out.put_i64(*request_id);
                put_utf(out, segment)?;
            }
            SegmentsMerged {
                request_id,
                target,
                source,
                new_target_write_offset,
            } => {
                out.put_i64(*request_id);
                put_utf(out, target)?;
                put_utf(out, source)?;
                out.put_i64(*new_target_write_offset);
            }
            WrongHost {
                request_id,
                segment,
                correct_host,
                stack,
            } => {
                out.put_i64(*request_id);
                put_utf(out, segment)?;
                put_utf(out, correct_host)?;
                put_utf(out, stack)?;
            }
            SegmentIsSealed {
                request_id,
                segment,
                stack,
                offset,
            }
            | NoSuchSegment {
                request_id,
                segment,
                stack,
                offset,
            } => {
                out.put_i64(*request_id);
                put_utf(out, segment)?;
                put_utf(out, stack)?;
                out.put_i64(*offset);
            }
            SegmentIsTruncated {
                request_id,
                segment,
                start_offset,
                stack,
                offset,
            } => {
                out.put_i64(*request_id);
                put_utf(out, segment)?;
                out.put_i64(*start_offset);
                put_utf(out, stack)?;
                out.put_i64(*offset);
            }
            SegmentAlreadyExists {
                request_id,
                segment,
                stack,
            }
            | OperationUnsupported {
                request_id,
                operation: segment,
                stack,
            } => {
                out.put_i64(*request_id);
                put_utf(out, segment)?;
                put_utf(out, stack)?;
            }
            InvalidEventNumber {
                writer_id,
                request_id,
                stack,
                event_number,
            } => {
                put_uuid(out, *writer_id);
                out.put_i64(*request_id);
                put_utf(out, stack)?;
                out.put_i64(*event_number);
            }
            AuthTokenCheckFailed {
                request_id,
                stack,
                error_code,
            } => {
                out.put_i64(*request_id);
                put_utf(out, stack)?;
                out.put_i32(*error_code);
            }
            ErrorMessage {
                request_id,
                segment,
                message,
                error_code,
            } => {
                out.put_i64(*request_id);
                put_utf(out, segment)?;
                put_utf(out, message)?;
                out.put_i32(*error_code);
            }
            Other { payload, .. } => out.put_slice(payload),
        }
        end(out, at)
    }
}
