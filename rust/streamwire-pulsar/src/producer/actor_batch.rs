//! The producer actor's batches: a message joining the open batch (the common case, without
//! an await), and a closed batch becoming one entry (its metadata, compression, the holdings
//! of its messages merged). Kept apart from `actor.rs` (connection, receipts, reconnects);
//! it uses the actor's private state, so it is a child module of `actor`.

use std::time::Instant;

use streamwire_core::budget::Reservation;

use super::super::completion::Completion;
use super::super::frames::{lone_message, to_pb_codec};
use super::super::pending::InFlight;
use super::super::placement::{place, OpenBatch, Placement};
use super::super::Queued;
use super::Actor;
use crate::engine::batcher::AddOutcome;

impl Actor {
    /// [`enqueue`](Self::enqueue)'s common case, done without an await: a message with an
    /// engine-assigned sequence id that joins the open batch (or opens one) and fits. Being
    /// synchronous, it does not move the 328-byte item into a future and out again (callgrind:
    /// the actor copied each item four times). Anything else comes back, untouched apart from
    /// its sequence id (which `enqueue` assigns again), for `enqueue` to place.
    pub(super) fn join_open_batch(&mut self, q: Queued, now: Instant) -> Joined {
        if self.terminal.is_some()
            || q.user_sequence_id
            || self.last_potential_duplicate
            || self.batcher.is_none()
        {
            return Joined::Declined(q);
        }
        let open = OpenBatch {
            len: self.batch_items.len(),
            schema_version: self.batch_schema_version.as_deref(),
            txn: self.batch_txn,
        };
        if place(true, open, &q.entry, false) != Placement::Join {
            return Joined::Declined(q);
        }
        let Queued {
            mut msg,
            user_sequence_id,
            entry,
            completion,
            reservation,
            permits,
            enqueued_at,
        } = q;
        msg.sequence_id = self.next_sequence_id;
        let len = msg.payload.len();
        let batcher = self.batcher.as_mut().expect("checked above");
        let full = match batcher.add(msg, now) {
            AddOutcome::Added => false,
            AddOutcome::AddedBatchFull => true,
            AddOutcome::DoesNotFit(msg) | AddOutcome::TooLargeForBatch(msg) => {
                return Joined::Declined(Queued {
                    msg,
                    user_sequence_id,
                    entry,
                    completion,
                    reservation,
                    permits,
                    enqueued_at,
                });
            }
        };
        self.next_sequence_id += 1;
        if self.batch_items.is_empty() {
            // The batch opens with this message: its version is the batch's.
            self.batch_txn = entry.txn;
            self.batch_schema_version = entry.schema_version;
        }
        self.note_batch_item(completion, reservation, permits, enqueued_at, len);
        if full {
            Joined::Full
        } else {
            Joined::Added
        }
    }

    pub(super) fn note_batch_item(
        &mut self,
        c: Completion,
        r: Option<Reservation>,
        p: Option<tokio::sync::OwnedSemaphorePermit>,
        enqueued_at: Instant,
        payload_len: usize,
    ) {
        if self.batch_items.is_empty() {
            self.batch_opened_at = Some(enqueued_at);
        }
        self.batch_payload_bytes += payload_len;
        self.batch_items.push((c, r, p));
    }

    pub(super) async fn flush_batch(&mut self) {
        let version = self.batch_schema_version.take();
        let txn = self.batch_txn.take();
        let key = self.batch_key.take();
        let Some(batch) = self.batcher.as_mut().and_then(|b| b.take()) else {
            return;
        };
        // The next batch starts with room for as many items as this one had: grown from
        // empty, a 1,000-message batch reallocated its item list ten times (callgrind:
        // about 90 instructions per message of `send_many`, mostly copying items over).
        let room = self.batch_items.len();
        let mut items = std::mem::replace(&mut self.batch_items, Vec::with_capacity(room));
        let payload_bytes = std::mem::take(&mut self.batch_payload_bytes);
        let enqueued_at = self.batch_opened_at.take().unwrap_or_else(Instant::now);
        if batch.num_messages == 1 && items.len() == 1 {
            // As Java's BatchMessageContainerImpl: a batch of one goes as a plain message
            // (its id has no batch index).
            if let Some(msg) = lone_message(&batch) {
                let (c, r, p) = items.pop().expect("one item");
                let entry = super::super::EntryOptions {
                    schema_version: version,
                    txn,
                    ..super::super::EntryOptions::default()
                };
                self.send_single(msg, entry, c, r, p, enqueued_at).await;
                return;
            }
        }
        let mut md = self.base_metadata(batch.first_sequence_id);
        if version.is_some() {
            md.schema_version = version;
        }
        if let Some(t) = txn {
            md.txnid_least_bits = Some(t.least);
            md.txnid_most_bits = Some(t.most);
        }
        if let Some(k) = &key {
            k.apply(&mut md);
        }
        md.num_messages_in_batch = Some(batch.num_messages as i32);
        md.highest_sequence_id = Some(batch.last_sequence_id);
        let payload = match self.compress_payload(&batch.payload) {
            Ok(Some(c)) => {
                md.set_compression(to_pb_codec(self.config.compression));
                md.uncompressed_size = Some(batch.uncompressed_size as u32);
                c
            }
            Ok(None) => batch.payload,
            Err(e) => {
                self.fail_items(items, &e);
                return;
            }
        };
        let payload = match self.seal_payload(&mut md, payload, batch.uncompressed_size) {
            Ok(p) => p,
            Err(e) => {
                self.fail_items(items, &e);
                return;
            }
        };
        let mut completions = Vec::with_capacity(items.len());
        let mut reservation: Option<Reservation> = None;
        let mut permits: Option<tokio::sync::OwnedSemaphorePermit> = None;
        for (c, r, p) in items {
            completions.push(c);
            if let Some(r) = r {
                match reservation.as_mut() {
                    Some(acc) => {
                        if let Err(back) = acc.merge(r) {
                            drop(back);
                        }
                    }
                    None => reservation = Some(r),
                }
            }
            if let Some(p) = p {
                match permits.as_mut() {
                    Some(acc) => acc.merge(p),
                    None => permits = Some(p),
                }
            }
        }
        let entry = InFlight {
            sequence_id: batch.first_sequence_id,
            highest_sequence_id: batch.last_sequence_id,
            num_messages: batch.num_messages,
            batched: true,
            metadata: md,
            payload,
            frame: None,
            completions,
            deadline: self.deadline_from(enqueued_at),
            enqueued_at,
            bytes: payload_bytes,
            reservation,
            permits,
            chunk: None,
            bulk: None,
        };
        self.dispatch(entry).await;
    }
}

/// What [`Actor::join_open_batch`] did with a message. A return value consumed at once, never
/// stored: boxing the declined item would cost an allocation per message wherever the common
/// case does not apply (every message of an unbatched producer).
#[allow(clippy::large_enum_variant)]
pub(super) enum Joined {
    /// In the open batch, which has room for more.
    Added,
    /// In the open batch, which is now full: send it.
    Full,
    /// Not the common case: for `enqueue`.
    Declined(Queued),
}
