//! The consumer actor's chunked messages: each chunk opened (when encrypted, as the Java
//! consumer does: decrypt each chunk, then reassemble, then decompress), kept until the last
//! one, and the whole unpacked as one entry. Kept apart from `actor.rs` (connection, flow,
//! control); it uses the actor's private helpers, so it is a child module of `actor`.

use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use streamwire_core::error::{Error, ErrorKind};

use super::super::chunks::{ChunkMeta, ChunkOutcome};
use super::super::entry::unpack;
use super::{Actor, Exit, Live};
use crate::crypto::FailureAction;
use crate::message_id::MessageId;
use crate::protocol::commands;
use crate::protocol::pb;
use crate::protocol::pb::command_ack::{AckType, ValidationError};
use crate::protocol::{ChecksumStatus, PayloadSection};

impl Actor {
    /// One chunk of a chunked message: keep it, or deliver the reassembled message.
    pub(super) async fn on_chunk(
        &mut self,
        live: &Live,
        cmd: &pb::CommandMessage,
        section: &PayloadSection,
        meta: ChunkMeta,
    ) -> Option<Exit> {
        let _ = self.permits.on_messages_received(1);
        let base = MessageId::from_proto(&cmd.message_id);
        let id = MessageId::new(base.ledger_id, base.entry_id, self.ctx.partition, -1, 0);
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        // The Java producer seals each chunk on its own: open it before reassembly (the Java
        // consumer decrypts each chunk, appends, and decompresses the whole).
        let piece = match self.open_chunk(live, section, &meta, id).await {
            Ok(p) => p,
            Err(exit) => return exit,
        };
        let outcome = self.chunks.add(&meta, id, &piece, Instant::now(), now_ms);
        let (payload, ids) = match outcome {
            ChunkOutcome::Pending => return self.discard(live, 1).await,
            ChunkOutcome::Dropped { ack } => {
                {
                    let mut acks = self.slot.acks();
                    for a in ack {
                        acks.individual(a);
                    }
                }
                return self.discard(live, 1).await;
            }
            ChunkOutcome::Complete { payload, ids } => (payload, ids),
        };
        let mut metadata = section.metadata.clone();
        if !self.chunks.take_undecrypted(&meta.uuid) {
            // Opened chunk by chunk: the whole is plain (compressed) bytes. A message kept
            // sealed keeps its encryption fields, so unpacking hands it over undecrypted.
            if let Ok(m) = &mut metadata {
                m.encryption_keys.clear();
                m.encryption_param = None;
                m.encryption_algo = None;
            }
        }
        let whole = PayloadSection {
            broker_entry_metadata: section.broker_entry_metadata,
            metadata,
            payload,
            checksum: ChecksumStatus::Absent,
        };
        let res = {
            let acks = self.slot.acks();
            unpack(&self.ctx, cmd, &whole, None, |i| acks.is_acked(i))
        };
        match res {
            Ok(u) if !u.messages.is_empty() => {
                let first = ids[0];
                let mut messages = u.messages;
                for m in &mut messages {
                    m.id = m.id.with_first_chunk(&first);
                }
                self.slot.chunk_ids().insert(messages[0].id, ids);
                self.slot.count_received(&messages);
                self.slot.queue.push(messages);
                self.slot.app_notify.notify_one();
                None
            }
            Ok(_) => {
                self.slot.stats.skipped.fetch_add(1, Ordering::Relaxed);
                self.discard(live, 1).await
            }
            Err(r) => {
                self.slot.stats.invalid.fetch_add(1, Ordering::Relaxed);
                let protos = ids.iter().map(MessageId::to_proto).collect();
                let ack = commands::ack(
                    live.id,
                    AckType::Individual,
                    protos,
                    Some(r.validation),
                    None,
                );
                let _ = live.conn.send_command(ack).await;
                self.discard(live, 1).await
            }
        }
    }

    /// Decrypt one chunk when it is encrypted. A chunk that cannot be decrypted takes the
    /// failure action, as each entry does in the Java consumer: FAIL holds it unacknowledged
    /// (redelivered after an ack timeout; the next receive raises why), DISCARD
    /// acknowledges it with `DecryptionError`, CONSUME keeps it sealed (the message is
    /// delivered whole, still encrypted). `Err` carries the actor's exit after a discard.
    async fn open_chunk(
        &mut self,
        live: &Live,
        section: &PayloadSection,
        meta: &ChunkMeta,
        id: MessageId,
    ) -> std::result::Result<Bytes, Option<Exit>> {
        let Ok(md) = section.verified_metadata() else {
            return Ok(section.payload.clone());
        };
        if md.encryption_keys.is_empty() {
            return Ok(section.payload.clone());
        }
        let e = match self.ctx.crypto.open(md, &section.payload, Instant::now()) {
            Ok(plain) => return Ok(Bytes::from(plain)),
            Err(e) => e,
        };
        match self.ctx.crypto.action {
            FailureAction::Consume => {
                self.chunks.mark_undecrypted(&meta.uuid);
                Ok(section.payload.clone())
            }
            FailureAction::Discard => {
                self.slot.stats.invalid.fetch_add(1, Ordering::Relaxed);
                let ack = commands::ack(
                    live.id,
                    AckType::Individual,
                    vec![id.to_proto()],
                    Some(ValidationError::DecryptionError),
                    None,
                );
                let _ = live.conn.send_command(ack).await;
                Err(self.discard(live, 1).await)
            }
            FailureAction::Fail => {
                self.slot.stats.invalid.fetch_add(1, Ordering::Relaxed);
                if let Some(u) = &self.slot.unacked {
                    u.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .delivered(id, Instant::now());
                }
                self.slot.hold_error(Error::new(
                    ErrorKind::Crypto,
                    format!(
                        "chunk {} of message {:?} ({}:{}) of {} could not be decrypted: {e}",
                        meta.chunk_id, meta.uuid, id.ledger_id, id.entry_id, self.ctx.topic
                    ),
                ));
                Err(self.discard(live, 1).await)
            }
        }
    }
}
