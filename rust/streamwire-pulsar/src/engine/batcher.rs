//! Accumulating one producer's messages into batches.
//!
//! A batch closes on whichever limit comes first: a message count, a byte size, or a delay
//! since its first message (so a slow trickle still goes out promptly). Each message is
//! serialized into the batch buffer as it is added — the single copy of its payload — so
//! the byte count is exact and [`BatchBuilder::take`] only has to hand the buffer over.
//!
//! Differences from the Java client, on purpose: the byte limit counts the serialized size
//! (size prefix + metadata + payload), not payloads alone, so a batch never exceeds it; and
//! a message whose serialized size alone exceeds the limit is not batched at all but sent
//! as a plain message, since it could only ever form a batch of one. The bytes produced are
//! the standard batch format (see [`batch_format`](super::batch_format)), readable by the
//! official consumers.
//!
//! Time is an argument (`now`), never read here.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use super::batch_format::{
    encode_message, encode_plain, encoded_len, is_plain, plain_encoded_len, single_metadata_for,
};
use super::message::OutgoingMessage;

/// Batch limits. `Default` matches the Java client (1000 messages, 128 KiB, 1 ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchConfig {
    /// Close the batch at this many messages (at least 1).
    pub max_messages: u32,
    /// Close the batch before its serialized size would exceed this many bytes.
    pub max_bytes: usize,
    /// Send the batch at the latest this long after its first message was added.
    pub max_delay: Duration,
}

impl Default for BatchConfig {
    fn default() -> Self {
        Self {
            max_messages: 1000,
            max_bytes: 128 * 1024,
            max_delay: Duration::from_millis(1),
        }
    }
}

/// What happened to a message offered to [`BatchBuilder::add`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddOutcome {
    /// Added; the batch has room for more.
    Added,
    /// Added, and the batch reached a limit: send it now.
    AddedBatchFull,
    /// Not added: it doesn't fit in the current batch. Send the current batch (`take`),
    /// then add the message again.
    DoesNotFit(OutgoingMessage),
    /// Not added: the message alone exceeds `max_bytes`. Send the current batch first (if
    /// any, to keep order), then send this message un-batched.
    TooLargeForBatch(OutgoingMessage),
}

/// A closed batch, ready for compression and framing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchToSend {
    /// The serialized messages (uncompressed), in the standard batch format.
    pub payload: Bytes,
    /// `num_messages_in_batch`.
    pub num_messages: u32,
    /// Sequence id of the first message (the entry's `sequence_id`).
    pub first_sequence_id: u64,
    /// Sequence id of the last message (the entry's `highest_sequence_id`).
    pub last_sequence_id: u64,
    /// `uncompressed_size` (the payload length).
    pub uncompressed_size: usize,
}

/// Builds batches for one producer.
#[derive(Debug)]
pub struct BatchBuilder {
    config: BatchConfig,
    buf: BytesMut,
    num_messages: u32,
    first_sequence_id: u64,
    last_sequence_id: u64,
    opened_at: Option<Instant>,
    /// Serialized size of the last batch taken: the next one reserves that much up front.
    last_len: usize,
}

impl BatchBuilder {
    /// An empty builder with `config` (a `max_messages` of 0 is treated as 1).
    pub fn new(mut config: BatchConfig) -> Self {
        config.max_messages = config.max_messages.max(1);
        Self {
            config,
            buf: BytesMut::new(),
            num_messages: 0,
            first_sequence_id: 0,
            last_sequence_id: 0,
            opened_at: None,
            last_len: 0,
        }
    }

    /// The limits in force.
    pub fn config(&self) -> &BatchConfig {
        &self.config
    }

    /// No message is waiting.
    pub fn is_empty(&self) -> bool {
        self.num_messages == 0
    }

    /// Messages in the current batch.
    pub fn len(&self) -> u32 {
        self.num_messages
    }

    /// Serialized bytes in the current batch.
    pub fn size_bytes(&self) -> usize {
        self.buf.len()
    }

    /// When the current batch must be sent (first message + `max_delay`); `None` if empty.
    /// The producer arms its timer with this.
    pub fn deadline(&self) -> Option<Instant> {
        self.opened_at
            .map(|t| t.checked_add(self.config.max_delay).unwrap_or(t))
    }

    /// The current batch's delay has expired at `now`.
    pub fn is_due(&self, now: Instant) -> bool {
        self.deadline().is_some_and(|d| now >= d)
    }

    /// Offer a message at time `now` (starts the delay clock if it is the first).
    pub fn add(&mut self, msg: OutgoingMessage, now: Instant) -> AddOutcome {
        // Plain messages (payload and sequence id only) skip building the metadata struct.
        let meta = (!is_plain(&msg)).then(|| single_metadata_for(&msg));
        let size = match &meta {
            Some(meta) => encoded_len(meta, msg.payload.len()),
            None => plain_encoded_len(msg.payload.len(), msg.sequence_id),
        };
        if size > self.config.max_bytes {
            return AddOutcome::TooLargeForBatch(msg);
        }
        let fits = self.num_messages < self.config.max_messages
            && self
                .buf
                .len()
                .checked_add(size)
                .is_some_and(|total| total <= self.config.max_bytes);
        if !fits {
            return AddOutcome::DoesNotFit(msg);
        }
        if self.num_messages == 0 {
            self.first_sequence_id = msg.sequence_id;
            self.opened_at = Some(now);
            // One allocation for a typical batch rather than repeated doubling: as large as
            // the last batch (a bulk sender's batches are alike), at most `max_bytes`.
            let want = self
                .config
                .max_bytes
                .min(size.saturating_mul(16).max(self.last_len));
            if self.buf.capacity() < want {
                self.buf.reserve(want);
            }
        }
        match &meta {
            Some(meta) => encode_message(meta, &msg.payload, &mut self.buf),
            None => encode_plain(&msg.payload, msg.sequence_id, &mut self.buf),
        }
        self.last_sequence_id = msg.sequence_id;
        self.num_messages += 1;
        if self.num_messages >= self.config.max_messages || self.buf.len() >= self.config.max_bytes
        {
            AddOutcome::AddedBatchFull
        } else {
            AddOutcome::Added
        }
    }

    /// Close the current batch and return it; `None` if it is empty.
    pub fn take(&mut self) -> Option<BatchToSend> {
        if self.num_messages == 0 {
            return None;
        }
        let payload = self.buf.split().freeze();
        self.last_len = payload.len();
        let batch = BatchToSend {
            uncompressed_size: payload.len(),
            payload,
            num_messages: self.num_messages,
            first_sequence_id: self.first_sequence_id,
            last_sequence_id: self.last_sequence_id,
        };
        self.num_messages = 0;
        self.opened_at = None;
        Some(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::super::batch_format::BatchIter;
    use super::*;
    use proptest::prelude::*;

    fn msg(len: usize, seq: u64) -> OutgoingMessage {
        OutgoingMessage::new(vec![b'x'; len], seq)
    }

    fn entry_size(m: &OutgoingMessage) -> usize {
        encoded_len(&single_metadata_for(m), m.payload.len())
    }

    #[test]
    fn closes_on_count() {
        let mut b = BatchBuilder::new(BatchConfig {
            max_messages: 3,
            ..BatchConfig::default()
        });
        let now = Instant::now();
        assert_eq!(b.add(msg(1, 1), now), AddOutcome::Added);
        assert_eq!(b.add(msg(1, 2), now), AddOutcome::Added);
        assert_eq!(b.add(msg(1, 3), now), AddOutcome::AddedBatchFull);
        assert_eq!(b.add(msg(1, 4), now), AddOutcome::DoesNotFit(msg(1, 4)));
        let batch = b.take().unwrap();
        assert_eq!(
            (
                batch.num_messages,
                batch.first_sequence_id,
                batch.last_sequence_id
            ),
            (3, 1, 3)
        );
        assert_eq!(batch.uncompressed_size, batch.payload.len());
        assert!(b.is_empty() && b.take().is_none() && b.deadline().is_none());
        assert_eq!(b.add(msg(1, 4), now), AddOutcome::Added);
    }

    #[test]
    fn closes_on_bytes() {
        let one = entry_size(&msg(10, 1));
        let mut b = BatchBuilder::new(BatchConfig {
            max_bytes: one * 2 + 3,
            ..BatchConfig::default()
        });
        let now = Instant::now();
        assert_eq!(b.add(msg(10, 1), now), AddOutcome::Added);
        assert_eq!(b.add(msg(10, 2), now), AddOutcome::Added);
        assert!(matches!(b.add(msg(10, 3), now), AddOutcome::DoesNotFit(_)));
        assert_eq!(b.size_bytes(), one * 2);
        // Exactly filling the limit reports full.
        let mut b = BatchBuilder::new(BatchConfig {
            max_bytes: one * 2,
            ..BatchConfig::default()
        });
        assert_eq!(b.add(msg(10, 1), now), AddOutcome::Added);
        assert_eq!(b.add(msg(10, 2), now), AddOutcome::AddedBatchFull);
    }

    #[test]
    fn too_large_message_is_sent_unbatched() {
        let mut b = BatchBuilder::new(BatchConfig {
            max_bytes: 100,
            ..BatchConfig::default()
        });
        let now = Instant::now();
        assert!(
            matches!(b.add(msg(200, 1), now), AddOutcome::TooLargeForBatch(m) if m.sequence_id == 1)
        );
        assert!(b.is_empty());
        b.add(msg(1, 2), now);
        assert!(matches!(
            b.add(msg(200, 3), now),
            AddOutcome::TooLargeForBatch(_)
        ));
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn deadline_from_first_message() {
        let mut b = BatchBuilder::new(BatchConfig {
            max_delay: Duration::from_millis(10),
            ..BatchConfig::default()
        });
        let t0 = Instant::now();
        assert_eq!(b.deadline(), None);
        assert!(!b.is_due(t0));
        b.add(msg(1, 1), t0);
        b.add(msg(1, 2), t0 + Duration::from_millis(5));
        assert_eq!(b.deadline(), Some(t0 + Duration::from_millis(10)));
        assert!(!b.is_due(t0 + Duration::from_millis(9)));
        assert!(b.is_due(t0 + Duration::from_millis(10)));
        b.take();
        b.add(msg(1, 3), t0 + Duration::from_millis(20));
        assert_eq!(b.deadline(), Some(t0 + Duration::from_millis(30)));
    }

    #[test]
    fn payload_copied_once_into_standard_format() {
        let msgs: Vec<_> = (0..5)
            .map(|i| msg(i, 100 + i as u64).with_key(format!("k{i}")))
            .collect();
        let mut b = BatchBuilder::new(BatchConfig::default());
        let now = Instant::now();
        for m in &msgs {
            assert_eq!(b.add(m.clone(), now), AddOutcome::Added);
        }
        let batch = b.take().unwrap();
        let decoded: Vec<_> = BatchIter::new(batch.payload.clone(), batch.num_messages)
            .collect::<Result<_, _>>()
            .unwrap();
        for ((meta, payload), m) in decoded.iter().zip(&msgs) {
            assert_eq!(meta.partition_key, m.key);
            assert_eq!(meta.sequence_id, Some(m.sequence_id));
            assert_eq!(payload, &m.payload);
        }
    }

    proptest! {
        /// Feeding messages through the builder, flushing whenever told to, sends every
        /// message exactly once, in order, in batches that respect both limits.
        #[test]
        fn batches_respect_limits_and_keep_order(
            max_messages in 1u32..20,
            max_bytes in 1usize..2_000,
            sizes in proptest::collection::vec(0usize..600, 0..100),
        ) {
            let mut b = BatchBuilder::new(BatchConfig { max_messages, max_bytes, max_delay: Duration::from_millis(5) });
            let now = Instant::now();
            let mut sent: Vec<u64> = Vec::new();
            let check = |batch: BatchToSend, sent: &mut Vec<u64>| {
                assert!(batch.num_messages >= 1 && batch.num_messages <= max_messages);
                assert!(batch.payload.len() <= max_bytes);
                let seqs: Vec<u64> = BatchIter::new(batch.payload, batch.num_messages)
                    .map(|r| r.unwrap().0.sequence_id.unwrap())
                    .collect();
                assert_eq!(seqs.first(), Some(&batch.first_sequence_id));
                assert_eq!(seqs.last(), Some(&batch.last_sequence_id));
                sent.extend(seqs);
            };
            for (seq, size) in sizes.iter().enumerate() {
                let m = msg(*size, seq as u64);
                match b.add(m, now) {
                    AddOutcome::Added => {}
                    AddOutcome::AddedBatchFull => check(b.take().unwrap(), &mut sent),
                    AddOutcome::DoesNotFit(m) => {
                        check(b.take().unwrap(), &mut sent);
                        match b.add(m, now) {
                            AddOutcome::Added => {}
                            AddOutcome::AddedBatchFull => check(b.take().unwrap(), &mut sent),
                            other => prop_assert!(false, "re-add after flush failed: {other:?}"),
                        }
                    }
                    AddOutcome::TooLargeForBatch(m) => {
                        prop_assert!(entry_size(&m) > max_bytes);
                        if let Some(batch) = b.take() { check(batch, &mut sent); }
                        sent.push(m.sequence_id);
                    }
                }
            }
            if let Some(batch) = b.take() { check(batch, &mut sent); }
            let want: Vec<u64> = (0..sizes.len() as u64).collect();
            prop_assert_eq!(sent, want);
        }
    }
}
