//! The producer actor's unbatched sends: one message as its own entry, and a message above
//! the broker's maximum cut into chunks. Kept apart from `actor.rs` (connection, batching,
//! receipts) because it is the one path that shapes an entry's metadata from a single
//! message; it uses the actor's private helpers, so it is a child module of `actor`.

use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, ErrorKind};

use super::super::completion::Completion;
use super::super::frames::to_pb_codec;
use super::super::pending::{ChunkPos, InFlight};
use super::Actor;
use crate::crypto::TAG_LEN;
use crate::protocol::pb;

impl Actor {
    pub(super) async fn send_single(
        &mut self,
        msg: crate::engine::message::OutgoingMessage,
        entry: super::super::EntryOptions,
        completion: Completion,
        reservation: Option<Reservation>,
        permits: Option<tokio::sync::OwnedSemaphorePermit>,
        enqueued_at: Instant,
    ) {
        let mut md = self.base_metadata(msg.sequence_id);
        md.partition_key = msg.key.clone();
        md.partition_key_b64_encoded = msg.partition_key_b64.then_some(true);
        md.ordering_key = msg.ordering_key.clone();
        md.event_time = msg.event_time;
        md.null_value = msg.null_value.then_some(true);
        md.properties = msg
            .properties
            .iter()
            .map(|(k, v)| pb::KeyValue {
                key: k.clone(),
                value: v.clone(),
            })
            .collect();
        md.deliver_at_time = entry.deliver_at;
        md.replicate_to = entry.replicate_to.clone();
        if entry.disable_replication {
            md.replicate_to = vec!["__local__".to_owned()];
        }
        if let Some(v) = &entry.schema_version {
            md.schema_version = Some(v.clone());
        }
        if let Some(t) = entry.txn {
            md.txnid_least_bits = Some(t.least);
            md.txnid_most_bits = Some(t.most);
        }
        let raw_len = msg.payload.len();
        let payload = match self.compress_payload(&msg.payload) {
            Ok(Some(c)) => {
                md.set_compression(to_pb_codec(self.config.compression));
                md.uncompressed_size = Some(raw_len as u32);
                c
            }
            Ok(None) => msg.payload,
            Err(e) => {
                self.fail_items(vec![(completion, reservation, permits)], &e);
                return;
            }
        };
        let max = self.shared.max_message_size.load(Ordering::Relaxed);
        let sealed_len = payload.len() + self.encryptor.as_ref().map_or(0, |_| TAG_LEN);
        if sealed_len > max && self.config.chunking {
            // The Java producer compresses once, cuts the compressed bytes, and seals each
            // chunk on its own (own IV, keys in every chunk's metadata): so does this one.
            let timing = (self.deadline_from(enqueued_at), enqueued_at);
            self.send_chunked(
                md,
                payload,
                raw_len,
                completion,
                reservation,
                permits,
                timing,
            )
            .await;
            return;
        }
        let payload = match self.seal_payload(&mut md, payload, raw_len) {
            Ok(p) => p,
            Err(e) => {
                self.fail_items(vec![(completion, reservation, permits)], &e);
                return;
            }
        };
        if payload.len() > max {
            let e = Error::new(
                ErrorKind::MessageTooBig,
                format!(
                    "message of {} bytes exceeds the broker's maximum of {max}",
                    payload.len()
                ),
            );
            self.fail_items(vec![(completion, reservation, permits)], &e);
            return;
        }
        let entry = InFlight {
            sequence_id: msg.sequence_id,
            highest_sequence_id: msg.sequence_id,
            num_messages: 1,
            batched: false,
            metadata: md,
            payload,
            frame: None,
            completions: vec![completion],
            deadline: self.deadline_from(enqueued_at),
            enqueued_at,
            bytes: raw_len,
            reservation,
            permits,
            chunk: None,
            bulk: None,
        };
        self.dispatch(entry).await;
    }

    /// Split a message above the broker's maximum into chunks, each its own entry, as the
    /// Java client does: same sequence id, `uuid` = producer name and sequence id, the
    /// (compressed) payload cut into pieces that fit with their metadata. The last chunk's
    /// receipt completes the message.
    #[allow(clippy::too_many_arguments)]
    async fn send_chunked(
        &mut self,
        mut md: pb::MessageMetadata,
        payload: Bytes,
        raw_len: usize,
        completion: Completion,
        reservation: Option<Reservation>,
        permits: Option<tokio::sync::OwnedSemaphorePermit>,
        (deadline, enqueued_at): (Instant, Instant),
    ) {
        let max = self.shared.max_message_size.load(Ordering::Relaxed);
        md.uuid = Some(format!("{}-{}", md.producer_name, md.sequence_id));
        // The compressed size, before any sealing (the Java producer's compressedPayloadSize):
        // a consumer reassembles the opened chunks to this size.
        md.total_chunk_msg_size = Some(payload.len() as i32);
        // Measure the metadata with the chunk fields at their widest.
        md.num_chunks_from_msg = Some(i32::MAX);
        md.chunk_id = Some(i32::MAX);
        // Encrypting: every chunk carries the wrapped keys and an IV, and grows by the tag.
        let mut seal_cost = 0;
        if self.encryptor.is_some() {
            let mut probe = md.clone();
            if let Err(e) = self.seal_payload(&mut probe, Bytes::new(), raw_len) {
                self.fail_items(vec![(completion, reservation, permits)], &e);
                return;
            }
            md = probe;
            seal_cost = TAG_LEN;
        }
        let room = max.saturating_sub(prost::Message::encoded_len(&md) + seal_cost);
        if room == 0 || i32::try_from(payload.len()).is_err() {
            let e = Error::new(
                ErrorKind::MessageTooBig,
                format!(
                    "message of {} bytes cannot be chunked (metadata alone fills the broker's \
                     maximum of {max} bytes)",
                    payload.len()
                ),
            );
            self.fail_items(vec![(completion, reservation, permits)], &e);
            return;
        }
        let total = payload.len().div_ceil(room).max(1);
        md.num_chunks_from_msg = Some(total as i32);
        // Cut (and seal) every chunk before sending any: a failure leaves nothing half-sent.
        let mut pieces = Vec::with_capacity(total);
        for i in 0..total {
            let mut m = md.clone();
            m.chunk_id = Some(i as i32);
            let piece = payload.slice(i * room..((i + 1) * room).min(payload.len()));
            let piece = match self.seal_payload(&mut m, piece, raw_len) {
                Ok(p) => p,
                Err(e) => {
                    self.fail_items(vec![(completion, reservation, permits)], &e);
                    return;
                }
            };
            pieces.push((m, piece));
        }
        let mut holdings = Some((completion, reservation, permits));
        for (i, (m, piece)) in pieces.into_iter().enumerate() {
            let last = i + 1 == total;
            let (completions, reservation, permits) = match (last, holdings.take()) {
                (true, Some((c, r, p))) => (vec![c], r, p),
                (_, h) => {
                    holdings = h;
                    (Vec::new(), None, None)
                }
            };
            let entry = InFlight {
                sequence_id: m.sequence_id,
                highest_sequence_id: m.sequence_id,
                num_messages: 1,
                batched: false,
                metadata: m,
                payload: piece,
                frame: None,
                completions,
                deadline,
                enqueued_at,
                bytes: if last { raw_len } else { 0 },
                reservation,
                permits,
                chunk: Some(ChunkPos {
                    chunk_id: i as u32,
                    last,
                }),
                bulk: None,
            };
            self.dispatch(entry).await;
        }
    }
}
