//! Fuzz bodies (cargo-fuzz targets in `fuzz/`, a bounded run in `tests/fuzz_pravega.rs`):
//! arbitrary bytes through the reply decoder and the event decoder, and through the reader
//! group state decoders (table keys and CBOR values an official client or a corrupt table
//! may hold), never panic and never allocate beyond what the input holds.

use bytes::{Bytes, BytesMut};

use crate::wire::{decode_frame, decode_request, EventDecoder, MAX_FRAME};

/// Frames from arbitrary bytes; SEGMENT_READ data then through the event decoder.
pub fn fuzz_reply(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    let mut events = EventDecoder::new();
    let mut out = Vec::new();
    while let Ok(Some(reply)) = decode_frame(&mut buf, MAX_FRAME) {
        if let crate::wire::Reply::SegmentRead { data, .. } = reply {
            if events.feed(data, &mut out).is_err() {
                events = EventDecoder::new();
            }
        }
    }
    let _ = EventDecoder::new().feed(Bytes::copy_from_slice(data), &mut out);
    // The same bytes as requests (the server-side decoder tests' fake segment store uses).
    let mut buf = BytesMut::from(data);
    while let Ok(Some(_)) = decode_request(&mut buf, MAX_FRAME) {}
}

/// Table keys and values of a reader group's state from arbitrary bytes (every decoder an
/// entry read from the group's table segment goes through).
pub fn fuzz_group_state(data: &[u8]) {
    use crate::group::cbor;
    if let Ok(key) = cbor::key_from_bytes(data) {
        let _ = cbor::split_key(&key);
        let _ = cbor::SegKey::parse(&key);
    }
    let _ = cbor::Stored::decode(data);
    let _ = cbor::decode_offset(data);
    let _ = cbor::decode_assigned(data);
    let _ = cbor::decode_predecessors(data);
    let _ = cbor::decode_config(data);
}
