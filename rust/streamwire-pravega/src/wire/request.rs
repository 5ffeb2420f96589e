//! Commands a client sends: each encoder appends one complete frame (header back-patched).

use bytes::{BufMut, BytesMut};

use super::utf::put_utf;
use super::{ids, WireError, OLDEST_COMPATIBLE_VERSION, WIRE_VERSION};

pub(crate) fn begin(out: &mut BytesMut, type_id: i32) -> usize {
    let at = out.len();
    out.put_i32(type_id);
    out.put_i32(0);
    at
}

pub(crate) fn end(out: &mut BytesMut, at: usize) -> Result<(), WireError> {
    let len = out.len() - at - 8;
    let n = i32::try_from(len).map_err(|_| WireError::TooLarge {
        len: len as u64,
        limit: i32::MAX as u64,
    })?;
    out[at + 4..at + 8].copy_from_slice(&n.to_be_bytes());
    Ok(())
}

pub(crate) fn put_uuid(out: &mut BytesMut, id: u128) {
    out.put_u64((id >> 64) as u64);
    out.put_u64(id as u64);
}

/// `HELLO`: the versions we speak.
pub fn encode_hello(out: &mut BytesMut) {
    let at = begin(out, ids::HELLO);
    out.put_i32(WIRE_VERSION);
    out.put_i32(OLDEST_COMPATIBLE_VERSION);
    let _ = end(out, at);
}

pub fn encode_keep_alive(out: &mut BytesMut) {
    let at = begin(out, ids::KEEP_ALIVE);
    let _ = end(out, at);
}

/// `SETUP_APPEND`: start (or resume) writer `writer_id` on `segment`.
pub fn encode_setup_append(
    out: &mut BytesMut,
    request_id: i64,
    writer_id: u128,
    segment: &str,
    token: &str,
) -> Result<(), WireError> {
    let at = begin(out, ids::SETUP_APPEND);
    out.put_i64(request_id);
    put_uuid(out, writer_id);
    put_utf(out, segment)?;
    put_utf(out, token)?;
    end(out, at)
}

/// An EVENT inside append data or segment data: `type:i32 (0) length:i32 data`.
pub fn put_event(out: &mut impl BufMut, data: &[u8]) -> Result<(), WireError> {
    let n =
        i32::try_from(data.len()).map_err(|_| WireError::InvalidArgument("event over 2 GiB"))?;
    out.put_i32(ids::EVENT);
    out.put_i32(n);
    out.put_slice(data);
    Ok(())
}

/// `APPEND_BLOCK`: the start of a block of appends, `data` being whole or partial EVENT
/// frames (the Java writer's way; `APPEND_BLOCK_END` then closes the block). The frame's length
/// covers the data: there is no separate data length.
pub fn encode_append_block(
    out: &mut BytesMut,
    writer_id: u128,
    data: &[u8],
) -> Result<(), WireError> {
    let at = begin(out, ids::APPEND_BLOCK);
    put_uuid(out, writer_id);
    out.put_slice(data);
    end(out, at)
}

/// `APPEND_BLOCK_END` carrying the events themselves (as the official Rust/Python client
/// does): `events` holds whole EVENT frames; `last_event_number` is the writer's number of
/// the last of them. After an `APPEND_BLOCK`, `events` is what completes the block (often
/// empty) and `size_of_whole_events` covers the whole block; here both are `events.len()`.
pub fn encode_append_block_end(
    out: &mut BytesMut,
    writer_id: u128,
    events: &[u8],
    num_events: i32,
    last_event_number: i64,
    request_id: i64,
) -> Result<(), WireError> {
    let n =
        i32::try_from(events.len()).map_err(|_| WireError::InvalidArgument("block over 2 GiB"))?;
    let at = begin(out, ids::APPEND_BLOCK_END);
    put_uuid(out, writer_id);
    out.put_i32(n); // sizeOfWholeEvents
    out.put_i32(n); // data length
    out.put_slice(events);
    out.put_i32(num_events);
    out.put_i64(last_event_number);
    out.put_i64(request_id);
    end(out, at)
}

/// `CONDITIONAL_APPEND`: one event, written only if the segment is `expected_offset` long.
pub fn encode_conditional_append(
    out: &mut BytesMut,
    writer_id: u128,
    event_number: i64,
    expected_offset: i64,
    event: &[u8],
    request_id: i64,
) -> Result<(), WireError> {
    let at = begin(out, ids::CONDITIONAL_APPEND);
    put_uuid(out, writer_id);
    out.put_i64(event_number);
    out.put_i64(expected_offset);
    put_event(out, event)?;
    out.put_i64(request_id);
    end(out, at)
}

/// `CONDITIONAL_BLOCK_END`: raw bytes (no EVENT header: a byte stream's data), written only
/// if the segment is `expected_offset` long; `event_number` orders the writer's blocks.
pub fn encode_conditional_block_end(
    out: &mut BytesMut,
    writer_id: u128,
    event_number: i64,
    expected_offset: i64,
    data: &[u8],
    request_id: i64,
) -> Result<(), WireError> {
    let n =
        i32::try_from(data.len()).map_err(|_| WireError::InvalidArgument("block over 2 GiB"))?;
    let at = begin(out, ids::CONDITIONAL_BLOCK_END);
    put_uuid(out, writer_id);
    out.put_i64(event_number);
    out.put_i64(expected_offset);
    out.put_i32(n);
    out.put_slice(data);
    out.put_i64(request_id);
    end(out, at)
}

/// `CREATE_TRANSIENT_SEGMENT`: a transient segment beside `parent` for writer `writer_id`
/// (a large event is written there, then merged into the parent); the store answers
/// `SEGMENT_CREATED` with the transient segment's name.
pub fn encode_create_transient_segment(
    out: &mut BytesMut,
    request_id: i64,
    writer_id: u128,
    parent: &str,
    token: &str,
) -> Result<(), WireError> {
    let at = begin(out, ids::CREATE_TRANSIENT_SEGMENT);
    out.put_i64(request_id);
    put_uuid(out, writer_id);
    put_utf(out, parent)?;
    put_utf(out, token)?;
    end(out, at)
}

/// `MERGE_SEGMENTS`: append all of `source` to `target` atomically (readers of the target see
/// none of it or all of it); the store answers `SEGMENTS_MERGED`. The trailing attribute
/// updates (wire version 5+) are sent as an empty list, as the official large-event writer
/// does.
pub fn encode_merge_segments(
    out: &mut BytesMut,
    request_id: i64,
    target: &str,
    source: &str,
    token: &str,
) -> Result<(), WireError> {
    let at = begin(out, ids::MERGE_SEGMENTS);
    out.put_i64(request_id);
    put_utf(out, target)?;
    put_utf(out, source)?;
    put_utf(out, token)?;
    out.put_i32(0);
    end(out, at)
}

/// `TRUNCATE_SEGMENT`: drop the segment's data before `offset` (its new start offset).
pub fn encode_truncate_segment(
    out: &mut BytesMut,
    request_id: i64,
    segment: &str,
    offset: i64,
    token: &str,
) -> Result<(), WireError> {
    let at = begin(out, ids::TRUNCATE_SEGMENT);
    out.put_i64(request_id);
    put_utf(out, segment)?;
    out.put_i64(offset);
    put_utf(out, token)?;
    end(out, at)
}

/// `READ_SEGMENT`: up to `suggested_length` bytes from `offset` (held at the tail).
pub fn encode_read_segment(
    out: &mut BytesMut,
    segment: &str,
    offset: i64,
    suggested_length: i32,
    token: &str,
    request_id: i64,
) -> Result<(), WireError> {
    let at = begin(out, ids::READ_SEGMENT);
    put_utf(out, segment)?;
    out.put_i64(offset);
    out.put_i32(suggested_length);
    put_utf(out, token)?;
    out.put_i64(request_id);
    end(out, at)
}

pub fn encode_get_stream_segment_info(
    out: &mut BytesMut,
    request_id: i64,
    segment: &str,
    token: &str,
) -> Result<(), WireError> {
    let at = begin(out, ids::GET_STREAM_SEGMENT_INFO);
    out.put_i64(request_id);
    put_utf(out, segment)?;
    put_utf(out, token)?;
    end(out, at)
}

/// `CREATE_SEGMENT` (tests; writers go through the controller).
pub fn encode_create_segment(
    out: &mut BytesMut,
    request_id: i64,
    segment: &str,
    target_rate: i32,
    scale_type: u8,
    token: &str,
    rollover_size_bytes: i64,
) -> Result<(), WireError> {
    let at = begin(out, ids::CREATE_SEGMENT);
    out.put_i64(request_id);
    put_utf(out, segment)?;
    out.put_i32(target_rate);
    out.put_u8(scale_type);
    put_utf(out, token)?;
    out.put_i64(rollover_size_bytes);
    end(out, at)
}
