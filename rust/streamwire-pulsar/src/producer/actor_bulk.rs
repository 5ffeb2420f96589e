//! The producer actor's bulk path: a [`BulkChunk`] (a range of one bulk send's packed
//! payloads) becomes batch entries cut straight from the shared buffer, each holding its
//! share of the chunk's memory and pending slots and settling its messages as one range.
//! A child module of `actor` (it uses the actor's sequence ids, metadata, compression,
//! encryption and in-flight queue).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;

use streamwire_core::error::Error;

use super::super::bulk::{BulkChunk, BulkSlot};
use super::super::frames::to_pb_codec;
use super::super::pending::InFlight;
use super::{yield_to_writer, Actor};
use crate::engine::bulk::{next_batch, write_batch};

impl Actor {
    pub(super) async fn on_bulk(&mut self, chunk: BulkChunk) {
        if let Some(err) = self.terminal.clone() {
            self.fail_chunk(chunk, &err);
            return;
        }
        // Whatever was queued before this chunk goes first (the open batch, and any keyed
        // groups): order with concurrent `send`s is the order of the command queue.
        self.flush_all().await;
        // The first message after a possible duplicate starts a batch of its own: it does,
        // every bulk batch starts fresh.
        self.last_potential_duplicate = false;
        let BulkChunk {
            packed,
            from,
            to,
            group,
            mut reservation,
            mut permits,
            enqueued_at,
        } = chunk;
        let (max_messages, max_bytes) = match self.batcher.as_ref() {
            Some(b) => (b.config().max_messages, b.config().max_bytes),
            None => (1, 0),
        };
        let deadline = self.deadline_from(enqueued_at);
        let mut at = from;
        while at < to {
            let first_seq = self.next_sequence_id;
            let (n, size) = next_batch(&packed, at, to, max_messages, max_bytes, first_seq);
            let mut buf = BytesMut::with_capacity(size);
            write_batch(&packed, at, n, first_seq, &mut buf);
            let raw = buf.freeze();
            let last_seq = first_seq + n as u64 - 1;
            self.next_sequence_id = last_seq + 1;
            let bytes = packed.bytes_in(at, at + n);
            // Each entry takes its own share of the chunk's holdings (the last one the rest),
            // so memory and slots come back batch by batch as receipts arrive.
            let last = at + n == to;
            let (r, p) = if last {
                (
                    reservation.split(reservation.amount()),
                    permits.split(permits.num_permits()),
                )
            } else {
                (reservation.split(bytes as u64), permits.split(n))
            };
            let mut md = self.base_metadata(first_seq);
            md.num_messages_in_batch = Some(n as i32);
            md.highest_sequence_id = Some(last_seq);
            let uncompressed = raw.len();
            let sealed = match self.compress_payload(&raw) {
                Ok(Some(c)) => {
                    md.set_compression(to_pb_codec(self.config.compression));
                    md.uncompressed_size = Some(uncompressed as u32);
                    Ok(c)
                }
                Ok(None) => Ok(raw),
                Err(e) => Err(e),
            }
            .and_then(|p| self.seal_payload(&mut md, p, uncompressed));
            let slot = BulkSlot {
                group: Arc::clone(&group),
                start: at,
            };
            at += n;
            let payload = match sealed {
                Ok(p) => p,
                Err(e) => {
                    drop((r, p));
                    self.shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
                    self.shared.stats.on_failed(n as u64);
                    group.failed(n, &e);
                    continue;
                }
            };
            let entry = InFlight {
                sequence_id: first_seq,
                highest_sequence_id: last_seq,
                num_messages: n as u32,
                batched: true,
                metadata: md,
                payload,
                frame: None,
                completions: Vec::new(),
                deadline,
                enqueued_at,
                bytes,
                reservation: r,
                permits: p,
                chunk: None,
                bulk: Some(slot),
            };
            self.dispatch(entry).await;
            yield_to_writer().await;
        }
    }

    /// Fail a chunk that cannot be sent (the producer failed for good, or is closing).
    pub(super) fn fail_chunk(&mut self, chunk: BulkChunk, err: &Error) {
        let n = chunk.len();
        self.shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
        self.shared.stats.on_failed(n as u64);
        let BulkChunk {
            group,
            reservation,
            permits,
            ..
        } = chunk;
        drop((reservation, permits)); // free the room before the caller hears of it
        group.failed(n, err);
    }
}
