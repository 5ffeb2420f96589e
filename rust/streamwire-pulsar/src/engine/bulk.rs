//! The payloads of one bulk send as one contiguous buffer plus offsets, and batches cut
//! straight from it.
//!
//! Why: a bulk send (`send_many` of plain values) used to become one `OutgoingMessage` (144
//! bytes) and one 328-byte queue item per message, each moved several times on its way into
//! a batch, with a completion and holdings per message (callgrind: ~1,900 instructions per
//! 100 B message, most of them not payload bytes). Here the values stay where the binding
//! copied them once, and a batch is written from them with each message's two-varint
//! metadata written by hand (byte for byte what [`encode_plain`] writes for a message with
//! nothing but a payload and a sequence id): no per-message allocation, no per-message item.
//!
//! Pure: no I/O, no clock.

use bytes::{Bytes, BytesMut};

use super::batch_format::{encode_plain, plain_encoded_len};
use super::message::OutgoingMessage;

/// Many payloads in one buffer: message `i` is `data[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    data: Bytes,
    offsets: Vec<usize>,
}

/// Offsets that do not describe a buffer (not starting at 0, decreasing, or not ending at
/// its length).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadOffsets;

impl std::fmt::Display for BadOffsets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "bulk payload offsets must start at 0, never decrease and end at the buffer's length",
        )
    }
}

impl std::error::Error for BadOffsets {}

impl Packed {
    /// `offsets` has one more entry than there are messages: 0, the end of each message.
    pub fn new(data: Bytes, offsets: Vec<usize>) -> Result<Packed, BadOffsets> {
        let starts_at_zero = offsets.first() == Some(&0);
        let ends_at_len = offsets.last() == Some(&data.len());
        let monotonic = offsets.windows(2).all(|w| w[0] <= w[1]);
        if !(starts_at_zero && ends_at_len && monotonic) {
            return Err(BadOffsets);
        }
        Ok(Packed { data, offsets })
    }

    /// Messages held.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Message `i`'s payload.
    pub fn payload(&self, i: usize) -> &[u8] {
        &self.data[self.offsets[i]..self.offsets[i + 1]]
    }

    /// Payload bytes of messages `from..to`.
    pub fn bytes_in(&self, from: usize, to: usize) -> usize {
        self.offsets[to] - self.offsets[from]
    }

    /// The largest payload (0 when empty).
    pub fn max_len(&self) -> usize {
        self.offsets
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// One `OutgoingMessage` per payload (sharing the buffer, no copy): for the paths that
    /// take messages one by one (partitioned topics, chunking, key-based batching).
    pub fn to_messages(&self) -> Vec<OutgoingMessage> {
        self.offsets
            .windows(2)
            .map(|w| OutgoingMessage::new(self.data.slice(w[0]..w[1]), 0))
            .collect()
    }
}

/// How many messages from `from` (before `end`) make the next batch, and its serialized
/// size: at most `max_messages`, and no more bytes than `max_bytes` — but always at least
/// one message (one larger than `max_bytes` makes a batch of its own, where the per-message
/// path would send it unbatched; either is a valid entry). Sequence ids count from
/// `first_seq`, as they size the metadata's varint.
pub fn next_batch(
    p: &Packed,
    from: usize,
    end: usize,
    max_messages: u32,
    max_bytes: usize,
    first_seq: u64,
) -> (usize, usize) {
    let mut n = 0usize;
    let mut size = 0usize;
    let max = (max_messages.max(1) as usize).min(end - from);
    while n < max {
        let i = from + n;
        let len = p.offsets[i + 1] - p.offsets[i];
        let one = plain_encoded_len(len, first_seq + n as u64);
        if n > 0 && size + one > max_bytes {
            break;
        }
        size += one;
        n += 1;
    }
    (n, size)
}

/// The runs of whole batches a bulk send to a partitioned topic is split into, in input
/// order: each run is one batch's worth (at most `max_messages`, at most `max_bytes` once
/// encoded, at least one message), and goes to one partition in turn — the official
/// client's round robin with batching, which stays on a partition for a full batch
/// (pulsar-client-cpp's `RoundRobinMessageRouter`; the Python client is built on it). The
/// run is cut with the largest sequence id (`i64::MAX`, Pulsar's are non-negative int64: the
/// longest varint), so the partition producer, cutting it again with its own ids, makes it
/// exactly one batch.
pub fn batch_runs(p: &Packed, max_messages: u32, max_bytes: usize) -> BatchRuns<'_> {
    BatchRuns {
        p,
        from: 0,
        max_messages,
        max_bytes,
    }
}

/// The iterator of [`batch_runs`]: `(from, to)` message ranges, contiguous, covering all.
pub struct BatchRuns<'a> {
    p: &'a Packed,
    from: usize,
    max_messages: u32,
    max_bytes: usize,
}

impl Iterator for BatchRuns<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let end = self.p.len();
        if self.from >= end {
            return None;
        }
        let (n, _) = next_batch(
            self.p,
            self.from,
            end,
            self.max_messages,
            self.max_bytes,
            i64::MAX as u64,
        );
        let run = (self.from, self.from + n);
        self.from += n;
        Some(run)
    }
}

/// Append messages `from..from + n` to `out` in the standard batch format, their sequence
/// ids counting from `first_seq`. Callers size `out` first with [`next_batch`].
pub fn write_batch(p: &Packed, from: usize, n: usize, first_seq: u64, out: &mut BytesMut) {
    for k in 0..n {
        encode_plain(p.payload(from + k), first_seq + k as u64, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::batch_format::BatchIter;
    use crate::engine::batcher::{AddOutcome, BatchBuilder, BatchConfig};
    use std::time::{Duration, Instant};

    fn packed(vals: &[&[u8]]) -> Packed {
        let mut data = Vec::new();
        let mut offsets = vec![0];
        for v in vals {
            data.extend_from_slice(v);
            offsets.push(data.len());
        }
        Packed::new(Bytes::from(data), offsets).unwrap()
    }

    #[test]
    fn offsets_are_checked() {
        let d = Bytes::from_static(b"abc");
        assert!(Packed::new(d.clone(), vec![0, 1, 3]).is_ok());
        assert_eq!(Packed::new(d.clone(), vec![1, 3]), Err(BadOffsets));
        assert_eq!(Packed::new(d.clone(), vec![0, 2, 1, 3]), Err(BadOffsets));
        assert_eq!(Packed::new(d.clone(), vec![0, 2]), Err(BadOffsets));
        assert_eq!(Packed::new(d, vec![]), Err(BadOffsets));
        assert!(Packed::new(Bytes::new(), vec![0]).unwrap().is_empty());
    }

    /// The batches cut from a buffer are byte for byte the ones the per-message batcher
    /// builds from the same values, split at the same places.
    #[test]
    fn same_bytes_and_cuts_as_the_batcher() {
        let vals: Vec<Vec<u8>> = (0..2500u32)
            .map(|i| vec![(i % 251) as u8; (i as usize * 37) % 300])
            .collect();
        let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
        let p = packed(&refs);
        for (max_messages, max_bytes) in [(1000, 128 * 1024), (7, 1 << 20), (1000, 2000)] {
            let cfg = BatchConfig {
                max_messages,
                max_bytes,
                max_delay: Duration::from_secs(1),
            };
            let mut b = BatchBuilder::new(cfg);
            let now = Instant::now();
            let mut theirs = Vec::new();
            for (i, v) in vals.iter().enumerate() {
                let m = OutgoingMessage::new(Bytes::from(v.clone()), 100 + i as u64);
                match b.add(m, now) {
                    AddOutcome::Added => {}
                    AddOutcome::AddedBatchFull => theirs.push(b.take().unwrap()),
                    AddOutcome::DoesNotFit(m) => {
                        theirs.push(b.take().unwrap());
                        assert_eq!(b.add(m, now), AddOutcome::Added);
                    }
                    AddOutcome::TooLargeForBatch(_) => unreachable!("values are small"),
                }
            }
            theirs.extend(b.take());
            let mut ours = Vec::new();
            let mut from = 0;
            while from < p.len() {
                let seq = 100 + from as u64;
                let (n, size) = next_batch(&p, from, p.len(), max_messages, max_bytes, seq);
                let mut out = BytesMut::with_capacity(size);
                write_batch(&p, from, n, seq, &mut out);
                assert_eq!(out.len(), size);
                ours.push((out.freeze(), n as u32, seq));
                from += n;
            }
            assert_eq!(ours.len(), theirs.len());
            for ((bytes, n, seq), t) in ours.iter().zip(&theirs) {
                assert_eq!(bytes, &t.payload);
                assert_eq!(*n, t.num_messages);
                assert_eq!(*seq, t.first_sequence_id);
            }
        }
    }

    /// Every run is one batch when cut again with any real sequence id: never more
    /// messages or bytes than the limits; runs cover the call in order.
    #[test]
    fn batch_runs_are_one_batch_each_whatever_the_sequence_ids() {
        let vals: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| vec![1u8; (i as usize * 53) % 1200])
            .collect();
        let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
        let p = packed(&refs);
        for (max_messages, max_bytes) in [(1000, 128 * 1024), (100, 1 << 20), (1000, 4000)] {
            let runs: Vec<_> = batch_runs(&p, max_messages, max_bytes).collect();
            assert_eq!(runs.first().map(|r| r.0), Some(0));
            assert_eq!(runs.last().map(|r| r.1), Some(p.len()));
            assert!(runs.windows(2).all(|w| w[0].1 == w[1].0));
            for &(from, to) in &runs {
                for seq in [0u64, 1 << 20, 1 << 40] {
                    let (n, _) = next_batch(&p, from, to, max_messages, max_bytes, seq);
                    assert_eq!(n, to - from, "run {from}..{to} split at seq {seq}");
                }
            }
        }
        let empty = Packed::new(Bytes::new(), vec![0]).unwrap();
        assert_eq!(batch_runs(&empty, 1000, 1000).count(), 0);
    }

    #[test]
    fn an_oversized_message_makes_a_batch_of_its_own_and_the_range_ends_at_end() {
        let big = vec![7u8; 500];
        let p = packed(&[b"a", &big, b"b", b"c"]);
        assert_eq!(next_batch(&p, 0, 4, 1000, 100, 0).0, 1);
        let (n, size) = next_batch(&p, 1, 4, 1000, 100, 0);
        assert_eq!(n, 1);
        assert!(size > 500);
        assert_eq!(next_batch(&p, 2, 3, 1000, 100, 0).0, 1);
        let mut out = BytesMut::new();
        write_batch(&p, 2, 2, 9, &mut out);
        let msgs: Vec<_> = BatchIter::new(out.freeze(), 2)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(&msgs[1].1[..], b"c");
        assert_eq!(msgs[1].0.sequence_id, Some(10));
        assert_eq!(p.max_len(), 500);
        assert_eq!(p.bytes_in(1, 3), 501);
        assert_eq!(p.to_messages()[1].payload.len(), 500);
    }
}
