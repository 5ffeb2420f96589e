//! What the producer actor puts on the wire for an entry, as pure functions: the SEND frame
//! (re-encoded with a new producer id after a reconnect, the payload section kept as it was),
//! the lone message of a one-message batch, and the compression codec's protobuf value.

use bytes::{BufMut, Bytes, BytesMut};

use streamwire_core::error::{Error, ErrorKind, Result};

use super::pending::InFlight;
use crate::engine::batch_format::BatchIter;
use crate::engine::compression::Codec;
use crate::protocol::{self, commands, pb};

/// The one message of a batch, back from its batch encoding.
pub(super) fn lone_message(
    batch: &crate::engine::batcher::BatchToSend,
) -> Option<crate::engine::message::OutgoingMessage> {
    let (single, body) = BatchIter::new(batch.payload.clone(), 1).next()?.ok()?;
    let mut msg = crate::engine::message::OutgoingMessage::new(body, batch.first_sequence_id);
    msg.key = single.partition_key;
    msg.partition_key_b64 = single.partition_key_b64_encoded.unwrap_or(false);
    msg.ordering_key = single.ordering_key;
    msg.event_time = single.event_time;
    msg.null_value = single.null_value.unwrap_or(false);
    msg.properties = single
        .properties
        .into_iter()
        .map(|kv| (kv.key, kv.value))
        .collect();
    Some(msg)
}

/// Encode the head of an entry's SEND frame (synchronously, so no borrow of the entry lives
/// across an await): everything but the payload, which follows it on the wire from the
/// entry's own buffer. Returns (head, payload).
pub(super) fn encode_entry(
    producer_id: u64,
    max_message_size: usize,
    e: &mut InFlight,
    out: &mut BytesMut,
) -> Result<(Bytes, Bytes)> {
    let mut cmd = commands::send(
        producer_id,
        e.sequence_id,
        e.num_messages as i32,
        e.batched.then_some(e.highest_sequence_id),
        e.chunk.is_some(),
        false,
    );
    // A transactional entry names its transaction on the command too (the broker routes
    // the entry to the topic's transaction buffer by it).
    if let (Some(send), Some(least), Some(most)) = (
        cmd.send.as_mut(),
        e.metadata.txnid_least_bits,
        e.metadata.txnid_most_bits,
    ) {
        send.txnid_least_bits = Some(least);
        send.txnid_most_bits = Some(most);
    }
    if let Some(old) = &e.frame {
        // [total][command size][command][magic, checksum, metadata]: only the command (the
        // producer id) changes; the checksum covers metadata and payload, both unchanged.
        let old_cmd = old
            .get(4..8)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| Error::new(ErrorKind::Protocol, "stored frame is truncated"))?;
        let tail = old.slice((8 + old_cmd).min(old.len())..);
        let cmd_len = prost::Message::encoded_len(&cmd);
        out.reserve(8 + cmd_len + tail.len());
        out.put_u32((4 + cmd_len + tail.len() + e.payload.len()) as u32);
        out.put_u32(cmd_len as u32);
        prost::Message::encode(&cmd, out)
            .map_err(|err| Error::new(ErrorKind::Protocol, err.to_string()))?;
        out.extend_from_slice(&tail);
    } else {
        protocol::encode_payload_head(
            &cmd,
            &e.metadata,
            &e.payload,
            out,
            max_message_size + protocol::FRAME_HEADROOM,
        )
        .map_err(|err| Error::new(ErrorKind::MessageTooBig, err.to_string()))?;
    }
    let head = out.split().freeze();
    e.frame = Some(head.clone());
    Ok((head, e.payload.clone()))
}

pub(super) fn to_pb_codec(c: Codec) -> pb::CompressionType {
    match c {
        Codec::None => pb::CompressionType::None,
        Codec::Lz4 => pb::CompressionType::Lz4,
        Codec::Zlib => pb::CompressionType::Zlib,
        Codec::Zstd => pb::CompressionType::Zstd,
        Codec::Snappy => pb::CompressionType::Snappy,
    }
}
