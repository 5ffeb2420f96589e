//! Reassembly of chunked messages (pure, no I/O), following the Java consumer.
//!
//! Chunks of one message share a `uuid` and arrive in order (`chunk_id` 0, 1, ...). The
//! (still compressed) pieces are appended until the last one; then the whole payload is
//! decoded as one entry. A duplicate chunk (id at or below the last one seen) is acknowledged
//! and dropped; a chunk out of order drops the message being assembled (its chunks stay
//! unacknowledged, as in Java, and come again on redelivery) and is itself acknowledged only
//! if older than the expiry. At most `max_pending` messages are assembled at once: a new one
//! evicts the oldest (left unacknowledged). Messages incomplete for longer than the expiry are
//! dropped and their chunks acknowledged.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use crate::message_id::MessageId;

/// A chunk's place in its message, from the entry's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMeta {
    pub uuid: String,
    pub chunk_id: u32,
    pub num_chunks: u32,
    pub total_size: usize,
    /// Milliseconds since the epoch (for the expiry of a stray chunk).
    pub publish_time: u64,
}

/// What a chunk led to.
#[derive(Debug, PartialEq, Eq)]
pub enum ChunkOutcome {
    /// Kept; the message is not complete yet.
    Pending,
    /// The last chunk: the whole payload and every chunk's entry id, in order.
    Complete { payload: Bytes, ids: Vec<MessageId> },
    /// Dropped; acknowledge `ack` (possibly empty).
    Dropped { ack: Vec<MessageId> },
}

#[derive(Debug)]
struct Ctx {
    uuid: String,
    buf: BytesMut,
    ids: Vec<MessageId>,
    last_chunk: u32,
    num_chunks: u32,
    started: Instant,
}

/// Messages being reassembled, oldest first.
#[derive(Debug)]
pub struct ChunkAssembler {
    pending: VecDeque<Ctx>,
    max_pending: usize,
    expire: Duration,
    /// Messages with a chunk kept still encrypted (failure action CONSUME): delivered whole,
    /// still sealed, with their encryption context, as the Java consumer does.
    undecrypted: HashSet<String>,
}

/// Undecrypted message marks kept at most (a mark whose message never completes would
/// otherwise stay for good).
const MAX_UNDECRYPTED_MARKS: usize = 1024;

/// Refuse absurd totals: a chunked message is at most this big.
pub const MAX_CHUNKED_MESSAGE: usize = 1 << 31;

impl ChunkAssembler {
    /// `max_pending` 0 means no limit; `expire` zero means never.
    pub fn new(max_pending: usize, expire: Duration) -> Self {
        ChunkAssembler {
            pending: VecDeque::new(),
            max_pending,
            expire,
            undecrypted: HashSet::new(),
        }
    }

    /// Remember that a chunk of message `uuid` is kept encrypted.
    pub fn mark_undecrypted(&mut self, uuid: &str) {
        if self.undecrypted.len() >= MAX_UNDECRYPTED_MARKS {
            self.undecrypted.clear();
        }
        self.undecrypted.insert(uuid.to_owned());
    }

    /// Whether a chunk of message `uuid` was kept encrypted (and forget it).
    pub fn take_undecrypted(&mut self, uuid: &str) -> bool {
        self.undecrypted.remove(uuid)
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Forget everything (after a reconnect or seek the broker sends the chunks again).
    pub fn clear(&mut self) {
        self.pending.clear();
        self.undecrypted.clear();
    }

    fn stale(&self, publish_time: u64, now_ms: u64) -> bool {
        !self.expire.is_zero() && now_ms > publish_time + self.expire.as_millis() as u64
    }

    /// Add one chunk. `now_ms` is the wall clock (for a stray chunk's publish time).
    pub fn add(
        &mut self,
        meta: &ChunkMeta,
        id: MessageId,
        piece: &[u8],
        now: Instant,
        now_ms: u64,
    ) -> ChunkOutcome {
        let pos = self.pending.iter().position(|c| c.uuid == meta.uuid);
        if meta.chunk_id == 0 {
            let mut ack = Vec::new();
            if let Some(p) = pos {
                // The message is being sent again (a producer re-send): start over, and the
                // earlier copies' chunks are duplicates.
                // A redelivery of the same entries restarts without acknowledging anything.
                if let Some(old) = self.pending.remove(p) {
                    if !old.ids.contains(&id) {
                        ack = old.ids;
                    }
                }
            }
            if meta.num_chunks < 2 || meta.total_size > MAX_CHUNKED_MESSAGE {
                ack.push(id);
                return ChunkOutcome::Dropped { ack };
            }
            if self.max_pending > 0 && self.pending.len() >= self.max_pending {
                // Java (autoAckOldestChunkedMessageOnQueueFull=false): evict, leave unacked.
                self.pending.pop_front();
            }
            // `total_size` is off the wire: reserve no more than the chunks can bring (the
            // first chunk is the largest); the buffer grows if that guess is short.
            let expected = piece.len().saturating_mul(meta.num_chunks as usize);
            let mut buf = BytesMut::with_capacity(meta.total_size.min(expected).min(64 << 20));
            buf.extend_from_slice(piece);
            self.pending.push_back(Ctx {
                uuid: meta.uuid.clone(),
                buf,
                ids: vec![id],
                last_chunk: 0,
                num_chunks: meta.num_chunks,
                started: now,
            });
            return if ack.is_empty() {
                ChunkOutcome::Pending
            } else {
                ChunkOutcome::Dropped { ack }
            };
        }
        let Some(p) = pos else {
            let ack = if self.stale(meta.publish_time, now_ms) {
                vec![id]
            } else {
                Vec::new()
            };
            return ChunkOutcome::Dropped { ack };
        };
        let ctx = &mut self.pending[p];
        if meta.chunk_id <= ctx.last_chunk {
            return ChunkOutcome::Dropped { ack: vec![id] };
        }
        if meta.chunk_id != ctx.last_chunk + 1 || meta.num_chunks != ctx.num_chunks {
            self.pending.remove(p);
            let ack = if self.stale(meta.publish_time, now_ms) {
                vec![id]
            } else {
                Vec::new()
            };
            return ChunkOutcome::Dropped { ack };
        }
        ctx.buf.extend_from_slice(piece);
        ctx.ids.push(id);
        ctx.last_chunk = meta.chunk_id;
        if meta.chunk_id + 1 < ctx.num_chunks {
            return ChunkOutcome::Pending;
        }
        let ctx = self.pending.remove(p).expect("found above");
        ChunkOutcome::Complete {
            payload: ctx.buf.freeze(),
            ids: ctx.ids,
        }
    }

    /// Drop messages incomplete for longer than the expiry; returns their chunks to ack.
    pub fn expire(&mut self, now: Instant) -> Vec<MessageId> {
        if self.expire.is_zero() {
            return Vec::new();
        }
        let mut ack = Vec::new();
        while self
            .pending
            .front()
            .is_some_and(|c| now.saturating_duration_since(c.started) >= self.expire)
        {
            if let Some(c) = self.pending.pop_front() {
                ack.extend(c.ids);
            }
        }
        ack
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(uuid: &str, chunk_id: u32, n: u32) -> ChunkMeta {
        ChunkMeta {
            uuid: uuid.into(),
            chunk_id,
            num_chunks: n,
            total_size: 9,
            publish_time: 1_000,
        }
    }

    fn id(e: i64) -> MessageId {
        MessageId::new(1, e, -1, -1, 0)
    }

    #[test]
    fn undecrypted_marks_are_taken_once_cleared_and_bounded() {
        let mut a = ChunkAssembler::new(10, Duration::from_secs(60));
        a.mark_undecrypted("m");
        assert!(a.take_undecrypted("m"));
        assert!(!a.take_undecrypted("m"), "taken once");
        a.mark_undecrypted("n");
        a.clear();
        assert!(!a.take_undecrypted("n"), "a reconnect forgets them");
        for i in 0..=MAX_UNDECRYPTED_MARKS {
            a.mark_undecrypted(&i.to_string());
        }
        assert!(a.undecrypted.len() <= MAX_UNDECRYPTED_MARKS);
        assert!(a.take_undecrypted(&MAX_UNDECRYPTED_MARKS.to_string()));
    }

    #[test]
    fn a_huge_total_size_does_not_size_the_buffer() {
        let t = Instant::now();
        let mut a = ChunkAssembler::new(10, Duration::from_secs(60));
        let m = ChunkMeta {
            total_size: MAX_CHUNKED_MESSAGE,
            ..meta("a", 0, 2)
        };
        assert_eq!(a.add(&m, id(1), b"abc", t, 0), ChunkOutcome::Pending);
        assert!(a.pending[0].buf.capacity() < 1024);
        assert_eq!(
            a.add(&meta("a", 1, 2), id(2), b"defg", t, 0),
            ChunkOutcome::Complete {
                payload: Bytes::from_static(b"abcdefg"),
                ids: vec![id(1), id(2)]
            }
        );
    }

    #[test]
    fn reassembles_in_order_and_interleaved() {
        let t = Instant::now();
        let mut a = ChunkAssembler::new(10, Duration::from_secs(60));
        assert_eq!(
            a.add(&meta("a", 0, 3), id(1), b"abc", t, 0),
            ChunkOutcome::Pending
        );
        assert_eq!(
            a.add(&meta("b", 0, 2), id(2), b"xy", t, 0),
            ChunkOutcome::Pending
        );
        assert_eq!(
            a.add(&meta("a", 1, 3), id(3), b"def", t, 0),
            ChunkOutcome::Pending
        );
        assert_eq!(
            a.add(&meta("b", 1, 2), id(4), b"z", t, 0),
            ChunkOutcome::Complete {
                payload: Bytes::from_static(b"xyz"),
                ids: vec![id(2), id(4)]
            }
        );
        assert_eq!(
            a.add(&meta("a", 2, 3), id(5), b"ghi", t, 0),
            ChunkOutcome::Complete {
                payload: Bytes::from_static(b"abcdefghi"),
                ids: vec![id(1), id(3), id(5)]
            }
        );
        assert!(a.is_empty());
    }

    #[test]
    fn duplicates_are_acked_and_gaps_drop_the_message() {
        let t = Instant::now();
        let mut a = ChunkAssembler::new(10, Duration::from_secs(60));
        a.add(&meta("a", 0, 3), id(1), b"abc", t, 0);
        a.add(&meta("a", 1, 3), id(2), b"def", t, 0);
        assert_eq!(
            a.add(&meta("a", 1, 3), id(3), b"def", t, 0),
            ChunkOutcome::Dropped { ack: vec![id(3)] }
        );
        // Chunk 0 again: the message is re-sent; the first copy's chunks are acked.
        assert_eq!(
            a.add(&meta("a", 0, 3), id(4), b"abc", t, 0),
            ChunkOutcome::Dropped {
                ack: vec![id(1), id(2)]
            }
        );
        // The same chunk 0 entry redelivered: restart quietly.
        assert_eq!(
            a.add(&meta("a", 0, 3), id(4), b"abc", t, 0),
            ChunkOutcome::Pending
        );
        // A gap (chunk 2 after 0) drops the message; a fresh stray chunk is not acked.
        assert_eq!(
            a.add(&meta("a", 2, 3), id(5), b"ghi", t, 2_000),
            ChunkOutcome::Dropped { ack: vec![] }
        );
        assert!(a.is_empty());
        // A stray chunk published longer ago than the expiry is acked.
        assert_eq!(
            a.add(&meta("c", 1, 3), id(6), b"x", t, 62_000),
            ChunkOutcome::Dropped { ack: vec![id(6)] }
        );
    }

    #[test]
    fn limits_evict_the_oldest_and_expire() {
        let t = Instant::now();
        let mut a = ChunkAssembler::new(2, Duration::from_secs(60));
        a.add(&meta("a", 0, 2), id(1), b"a", t, 0);
        a.add(
            &meta("b", 0, 2),
            id(2),
            b"b",
            t + Duration::from_secs(30),
            0,
        );
        a.add(
            &meta("c", 0, 2),
            id(3),
            b"c",
            t + Duration::from_secs(40),
            0,
        );
        assert_eq!(a.len(), 2);
        // "a" was evicted: its last chunk is now a stray.
        assert_eq!(
            a.add(&meta("a", 1, 2), id(4), b"a", t, 0),
            ChunkOutcome::Dropped { ack: vec![] }
        );
        assert_eq!(a.expire(t + Duration::from_secs(95)), vec![id(2)]);
        assert_eq!(a.len(), 1);
        assert_eq!(a.expire(t + Duration::from_secs(100)), vec![id(3)]);
    }
}
