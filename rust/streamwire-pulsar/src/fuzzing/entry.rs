//! The entry-unpacking fuzz body, shared by `fuzz/fuzz_targets/entry_unpack.rs` (cargo-fuzz)
//! and `tests/fuzz_entry.rs` (deterministic, stable toolchain).
//!
//! The input is an [`EntryHeader`] (the first [`ENTRY_HEADER_LEN`] bytes) and a body. The
//! header says how to wrap the body into a MESSAGE frame: codec, whether to compress the body
//! for real (so decompression succeeds and the batch parser sees the fuzzed bytes) or pass it
//! on as if it were compressed, what `uncompressed_size` and `num_messages_in_batch` to
//! claim, the broker's `ack_set`, and whether to damage the frame after encoding. The frame is
//! encoded with our encoder, decoded with `FrameDecoder` and given to
//! [`unpack`](crate::consumer::entry::unpack); its outcome is compared with what the pieces
//! (checksum, [`decompress`], [`BatchIter`]) say it must be.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use streamwire_proto::pulsar::SingleMessageMetadata;

use super::{mutate, SplitMix64};
use crate::consumer::entry::{unpack, EntryContext, Rejected, StartFilter, Unpacked};
use crate::engine::batch_format::{encode_message, single_metadata_for, BatchIter};
use crate::engine::compression::{compress, decompress, Codec, DEFAULT_MAX_UNCOMPRESSED_SIZE};
use crate::engine::message::OutgoingMessage;
use crate::message_id::MessageId;
use crate::protocol::pb::command_ack::ValidationError;
use crate::protocol::{
    encode_payload_command_parts, pb, ChecksumStatus, FrameDecoder, PayloadSection,
};

/// Bytes of [`EntryHeader`] at the front of a [`fuzz_entry`] input.
pub const ENTRY_HEADER_LEN: usize = 16;

/// [`EntryHeader::flags`]: compress the body with the codec (otherwise the body is passed
/// on as the compressed bytes).
pub const FLAG_COMPRESS: u8 = 1;
/// [`EntryHeader::flags`]: damage the (compressed) payload with [`mutate`] before framing.
pub const FLAG_DAMAGE_PAYLOAD: u8 = 1 << 1;
/// [`EntryHeader::flags`]: both bits set: change one byte of the checksummed part of the
/// encoded frame, so the checksum fails.
pub const FLAG_CORRUPT_FRAME: u8 = 3 << 2;
/// [`EntryHeader::flags`]: the consumer is a reader with a start position near the entry.
pub const FLAG_START_FILTER: u8 = 1 << 4;
/// [`EntryHeader::flags`]: the application already acknowledged some batch indexes.
pub const FLAG_APP_ACKED: u8 = 1 << 5;
/// [`EntryHeader::flags`]: the entry's `sequence_id` is near `u64::MAX`.
pub const FLAG_HIGH_SEQUENCE: u8 = 1 << 6;
/// [`EntryHeader::flags`]: the reader's start position is inclusive.
pub const FLAG_INCLUSIVE: u8 = 1 << 7;

/// The first [`ENTRY_HEADER_LEN`] bytes of a [`fuzz_entry`] input. Every byte pattern is a
/// header; values out of range wrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EntryHeader {
    /// Byte 0, mod 8: 0..=4 that `CompressionType`, 5 an unknown one, 6 and 7 no
    /// `compression` field.
    pub codec: u8,
    /// Byte 1: the `FLAG_*` bits.
    pub flags: u8,
    /// Byte 2, mod 8: 0 and 1 no `num_messages_in_batch` (a single message); 2..=5 `count`;
    /// 6 `-count` (zero or negative); 7 `i32::MAX - count`.
    pub batch: u8,
    /// Byte 3, mod 16: `uncompressed_size` is 0..=11 the body's length; 12 and 13 that plus
    /// `delta`; 14 absent; 15 over [`DEFAULT_MAX_UNCOMPRESSED_SIZE`] (or right at it).
    pub size: u8,
    /// Bytes 4..6, little-endian.
    pub count: u16,
    /// Byte 6.
    pub delta: i8,
    /// Byte 7, mod 4: words of the broker's `ack_set` (0: none).
    pub ack_words: u8,
    /// Bytes 8..16, little-endian: seeds every other choice.
    pub seed: u64,
}

impl EntryHeader {
    pub fn from_bytes(b: &[u8; ENTRY_HEADER_LEN]) -> Self {
        let mut seed = [0u8; 8];
        seed.copy_from_slice(&b[8..]);
        EntryHeader {
            codec: b[0],
            flags: b[1],
            batch: b[2],
            size: b[3],
            count: u16::from_le_bytes([b[4], b[5]]),
            delta: b[6] as i8,
            ack_words: b[7],
            seed: u64::from_le_bytes(seed),
        }
    }

    pub fn to_bytes(&self) -> [u8; ENTRY_HEADER_LEN] {
        let mut b = [0u8; ENTRY_HEADER_LEN];
        b[0] = self.codec;
        b[1] = self.flags;
        b[2] = self.batch;
        b[3] = self.size;
        b[4..6].copy_from_slice(&self.count.to_le_bytes());
        b[6] = self.delta as u8;
        b[7] = self.ack_words;
        b[8..].copy_from_slice(&self.seed.to_le_bytes());
        b
    }

    /// A header under which a well-formed body unpacks: a batch of `count` messages (a
    /// single message if `None`), a real codec, compressed for real, true sizes, an intact
    /// frame. Ack set, start position and acknowledged indexes are random.
    pub fn valid(rng: &mut SplitMix64, count: Option<u16>) -> Self {
        let extra = FLAG_START_FILTER | FLAG_APP_ACKED | FLAG_HIGH_SEQUENCE | FLAG_INCLUSIVE;
        EntryHeader {
            codec: [0, 1, 2, 3, 4, 6, 7][rng.below(7)],
            flags: FLAG_COMPRESS | (rng.next_u64() as u8 & extra),
            batch: if count.is_some() { 2 } else { 0 },
            size: rng.below(12) as u8,
            count: count.unwrap_or(0),
            delta: 0,
            ack_words: rng.below(4) as u8,
            seed: rng.next_u64(),
        }
    }

    /// The `compression` field this header asks for.
    fn wire_codec(&self, rng: &mut SplitMix64) -> Option<i32> {
        match self.codec % 8 {
            c @ 0..=4 => Some(i32::from(c)),
            5 => Some([5, -1, 100, i32::MAX][rng.below(4)]),
            _ => None,
        }
    }

    fn num_messages(&self) -> Option<i32> {
        let count = i32::from(self.count);
        match self.batch % 8 {
            0 | 1 => None,
            2..=5 => Some(count),
            6 => Some(-count),
            _ => Some(i32::MAX - count),
        }
    }

    fn uncompressed_size(&self, len: usize, rng: &mut SplitMix64) -> Option<u32> {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let limit = u32::try_from(DEFAULT_MAX_UNCOMPRESSED_SIZE).unwrap_or(u32::MAX);
        match self.size % 16 {
            0..=11 => Some(len),
            12 | 13 => Some(len.saturating_add_signed(i32::from(self.delta))),
            14 => None,
            // Kept rare: a claim at the limit may cost a 64 MiB allocation.
            _ => Some(match rng.below(8) {
                0 => limit,
                1 => u32::MAX,
                _ => limit + 1 + u32::from(self.count),
            }),
        }
    }
}

/// A fuzz input: `header` then `body`.
pub fn entry_input(header: &EntryHeader, body: &[u8]) -> Vec<u8> {
    let mut out = header.to_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// A valid uncompressed batch body of 1..=100 messages (mostly few), and its count.
pub fn valid_batch(rng: &mut SplitMix64) -> (Vec<u8>, u16) {
    let most = if rng.below(8) == 0 { 100 } else { 6 };
    let n = 1 + rng.below(most);
    let mut out = BytesMut::new();
    for i in 0..n {
        let most = if rng.below(8) == 0 { 2000 } else { 40 };
        let len = rng.below(most);
        // Half the payloads repeat one byte, so that compression has work to do.
        let payload: Vec<u8> = if rng.below(2) == 0 {
            vec![rng.next_u64() as u8; len]
        } else {
            (0..len).map(|_| rng.next_u64() as u8).collect()
        };
        let mut m = OutgoingMessage::new(payload, rng.below(1000) as u64);
        if rng.below(2) == 0 {
            m = m.with_key(format!("k{i}"));
        }
        if rng.below(4) == 0 {
            m = m.with_ordering_key(Bytes::from(vec![i as u8; 3]));
        }
        if rng.below(4) == 0 {
            m = m.with_property("p", format!("{i}"));
        }
        if rng.below(4) == 0 {
            m = m.with_event_time(rng.below(3) as u64);
        }
        m.null_value = rng.below(16) == 0;
        let mut meta = single_metadata_for(&m);
        // Not every producer sets these.
        if rng.below(4) == 0 {
            meta.sequence_id = None;
        }
        if rng.below(8) == 0 {
            meta.compacted_out = Some(true);
        }
        encode_message(&meta, &m.payload, &mut out);
    }
    (out.to_vec(), n as u16)
}

/// Build a MESSAGE frame from `data` (see [`EntryHeader`]), decode it, unpack it and check
/// the outcome; also run [`BatchIter`] directly over the body. Panics on any violation.
pub fn fuzz_entry(data: &[u8]) {
    let _ = unpack_checked(data);
}

/// [`fuzz_entry`], returning what `unpack` returned (`None`: input shorter than the header,
/// or a frame damaged beyond decoding).
pub fn unpack_checked(data: &[u8]) -> Option<Result<Unpacked, Rejected>> {
    let (head, body) = data.split_first_chunk::<ENTRY_HEADER_LEN>()?;
    let h = EntryHeader::from_bytes(head);
    let mut rng = SplitMix64(h.seed);

    let iter_count = match rng.below(4) {
        0 => u32::MAX,
        1 => rng.below(4) as u32,
        _ => u32::from(h.count),
    };
    check_batch_iter(body, iter_count);

    let wire_codec = h.wire_codec(&mut rng);
    let codec = wire_codec.map_or(Some(Codec::None), Codec::from_wire);
    let mut payload = match codec {
        Some(c) if h.flags & FLAG_COMPRESS != 0 => {
            let mut out = Vec::new();
            compress(c, body, &mut out).expect("small inputs compress");
            out
        }
        _ => body.to_vec(),
    };
    if h.flags & FLAG_DAMAGE_PAYLOAD != 0 {
        mutate(&mut payload, &mut rng);
    }
    let md = pb::MessageMetadata {
        producer_name: "fuzz".into(),
        sequence_id: if h.flags & FLAG_HIGH_SEQUENCE != 0 {
            u64::MAX - rng.below(3) as u64
        } else {
            rng.below(1000) as u64
        },
        publish_time: 1_700_000_000_000,
        partition_key: (rng.below(4) == 0).then(|| "key".into()),
        event_time: (rng.below(4) == 0).then(|| rng.below(2) as u64),
        compression: wire_codec,
        uncompressed_size: h.uncompressed_size(body.len(), &mut rng),
        num_messages_in_batch: h.num_messages(),
        ..Default::default()
    };
    let ack_set: Vec<i64> = (0..h.ack_words % 4)
        // Mostly set bits: a set bit is a message still to deliver.
        .map(|_| (rng.next_u64() | rng.next_u64()) as i64)
        .collect();
    let (ledger, entry) = (1 + rng.below(3) as u64, rng.below(3) as u64);
    let command = pb::BaseCommand {
        r#type: pb::base_command::Type::Message as i32,
        message: Some(Box::new(pb::CommandMessage {
            consumer_id: 1,
            message_id: pb::MessageIdData {
                ledger_id: ledger,
                entry_id: entry,
                ..Default::default()
            },
            redelivery_count: Some(rng.below(3) as u32),
            ack_set,
            ..Default::default()
        })),
        ..Default::default()
    };
    let mut frame = BytesMut::new();
    encode_payload_command_parts(&command, &md, &[&payload], &mut frame, usize::MAX)
        .expect("no limit");
    let corrupt = h.flags & FLAG_CORRUPT_FRAME == FLAG_CORRUPT_FRAME;
    if corrupt {
        // Anywhere from the checksum on: the CRC, metadata size, metadata or payload.
        let command_size = u32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]) as usize;
        let checksum_at = 8 + command_size + 2;
        let at = checksum_at + rng.below(frame.len() - checksum_at);
        frame[at] ^= 1 + rng.below(255) as u8;
    }
    let decoded = FrameDecoder::new(usize::MAX).decode(&mut frame);
    let Ok(Some(decoded)) = decoded else {
        assert!(corrupt, "an intact frame must decode: {decoded:?}");
        return None;
    };
    assert!(frame.is_empty(), "the whole frame is consumed");
    let section = decoded
        .payload
        .as_ref()
        .expect("a MESSAGE frame has a payload");
    let cmd = decoded
        .command
        .message
        .as_deref()
        .expect("a MESSAGE command");
    if corrupt {
        assert!(matches!(section.checksum, ChecksumStatus::Mismatch { .. }));
    } else {
        assert_eq!(section.checksum, ChecksumStatus::Valid);
        assert_eq!(section.metadata.as_ref().ok(), Some(&md));
        assert_eq!(&section.payload[..], &payload[..]);
    }

    let ctx = EntryContext {
        topic: Arc::from("persistent://fuzz/ns/t-partition-3"),
        partition: 3,
        slot: 0,
        crypto: crate::crypto::ConsumerCrypto::default(),
    };
    let filter = (h.flags & FLAG_START_FILTER != 0).then(|| StartFilter {
        id: MessageId::new(
            ledger as i64 + rng.below(3) as i64 - 1,
            entry as i64 + rng.below(3) as i64 - 1,
            3,
            rng.below(10) as i32 - 1,
            0,
        ),
        inclusive: h.flags & FLAG_INCLUSIVE != 0,
    });
    let app_acked = h.flags & FLAG_APP_ACKED != 0;
    let acked_mod = rng.below(3) as i32;
    let acked = |id: &MessageId| app_acked && (id.batch_index + acked_mod).rem_euclid(3) == 0;

    let result = unpack(&ctx, cmd, section, filter.as_ref(), acked);
    let skips = |id: &MessageId| filter.is_some_and(|f| f.skips(id)) || acked(id);
    check_outcome(&ctx, cmd, section, &result, skips);
    Some(result)
}

/// What `unpack` must do with `section`, worked out from the pieces it is made of.
#[derive(Debug)]
enum Expected {
    Reject(ValidationError),
    Single(Bytes),
    Batch(Bytes, Vec<(SingleMessageMetadata, Bytes)>),
}

fn expected(section: &PayloadSection, claim: u32) -> Expected {
    if matches!(section.checksum, ChecksumStatus::Mismatch { .. }) {
        return Expected::Reject(ValidationError::ChecksumMismatch);
    }
    let Ok(meta) = &section.metadata else {
        return Expected::Reject(ValidationError::BatchDeSerializeError);
    };
    let payload = match Codec::from_wire(meta.compression.unwrap_or(0)) {
        None => return Expected::Reject(ValidationError::DecompressionError),
        Some(Codec::None) => section.payload.clone(),
        Some(codec) => {
            let size = meta.uncompressed_size.unwrap_or(0) as usize;
            match decompress(codec, &section.payload, size) {
                Ok(p) => {
                    assert_eq!(p.len(), size, "{codec:?} output has the claimed size");
                    p
                }
                Err(_) => return Expected::Reject(ValidationError::DecompressionError),
            }
        }
    };
    if meta.num_messages_in_batch.is_none() {
        return Expected::Single(payload);
    }
    let items: Result<Vec<_>, _> = BatchIter::new(payload.clone(), claim).collect();
    match items {
        Ok(items) if items.len() as u64 == u64::from(claim) => Expected::Batch(payload, items),
        _ => Expected::Reject(ValidationError::BatchDeSerializeError),
    }
}

fn check_outcome(
    ctx: &EntryContext,
    cmd: &pb::CommandMessage,
    section: &PayloadSection,
    result: &Result<Unpacked, Rejected>,
    skips: impl Fn(&MessageId) -> bool,
) {
    // What the entry costs in permits, whether or not its metadata can be trusted.
    let claim = section
        .metadata
        .as_ref()
        .ok()
        .and_then(|m| m.num_messages_in_batch)
        .map_or(1, |n| n.max(1) as u32);
    let base = MessageId::from_proto(&cmd.message_id);
    let expect = expected(section, claim);
    let u = match (&expect, result) {
        (Expected::Reject(v), Err(r)) => {
            assert_eq!(r.validation, *v, "{}", r.reason);
            assert_eq!(r.permits, claim);
            return;
        }
        (Expected::Single(_) | Expected::Batch(..), Ok(u)) => u,
        _ => panic!("expected {expect:?}, unpack returned {result:?}"),
    };
    assert_eq!(u.permits, claim);
    // Every permit is accounted for: handed out or skipped (the consumer returns the
    // permits of skipped messages).
    assert_eq!(
        u.messages.len() as u64 + u64::from(u.skipped),
        u64::from(u.permits)
    );
    for m in &u.messages {
        assert_eq!(
            (m.id.ledger_id, m.id.entry_id),
            (base.ledger_id, base.entry_id)
        );
        assert_eq!(m.id.partition, ctx.partition);
        assert_eq!(m.slot(), ctx.slot);
        assert!(!skips(&m.id), "{:?} should have been skipped", m.id);
    }
    match expect {
        Expected::Reject(_) => unreachable!("matched above"),
        Expected::Single(payload) => {
            let id = MessageId::new(base.ledger_id, base.entry_id, ctx.partition, -1, 0);
            if skips(&id) {
                assert_eq!(u.skipped, 1);
            } else {
                assert_eq!(u.messages[0].id, id);
                assert_eq!(u.messages[0].payload, payload);
            }
        }
        Expected::Batch(payload, items) => {
            let meta = section.metadata.as_ref().expect("checked by expected()");
            let batch_size = claim as i32;
            let total: usize = u.messages.iter().map(|m| m.payload.len()).sum();
            assert!(
                total <= payload.len(),
                "{total} payload bytes out of {}",
                payload.len()
            );
            let mut delivered = u.messages.iter();
            for (i, (single, body)) in items.iter().enumerate() {
                let id = MessageId::new(
                    base.ledger_id,
                    base.entry_id,
                    ctx.partition,
                    i as i32,
                    batch_size,
                );
                let word = cmd.ack_set.get(i / 64).map_or(0, |w| *w as u64);
                let broker_acked = !cmd.ack_set.is_empty() && (word >> (i % 64)) & 1 == 0;
                if broker_acked || single.compacted_out == Some(true) || skips(&id) {
                    continue;
                }
                let m = delivered
                    .next()
                    .unwrap_or_else(|| panic!("message {i} missing"));
                assert_eq!(m.id, id);
                assert!(m.id.batch_index < m.id.batch_size);
                assert_eq!(&m.payload, body);
                assert_eq!(m.key(), single.partition_key.as_deref());
                let seq = single
                    .sequence_id
                    .unwrap_or(meta.sequence_id.wrapping_add(i as u64));
                assert_eq!(m.sequence_id, seq);
            }
            assert!(
                delivered.next().is_none(),
                "messages that should be skipped"
            );
        }
    }
}

/// Drive [`BatchIter`] over raw bytes: no panic, at most `count` items, each at least a size
/// prefix long and inside the input, at most one error and nothing after it.
fn check_batch_iter(body: &[u8], count: u32) {
    let buf = Bytes::copy_from_slice(body);
    let start = buf.as_ptr() as usize;
    let mut it = BatchIter::new(buf, count);
    let mut items = 0u64;
    let mut left = body.len();
    loop {
        let hint = it.size_hint().1.expect("bounded");
        let Some(item) = it.next() else { break };
        items += 1;
        assert!(hint >= 1, "an item beyond the size hint");
        assert!(items <= u64::from(count), "more than {count} items");
        match item {
            Ok((meta, payload)) => {
                assert_eq!(payload.len() as u64, meta.payload_size as u64);
                if !payload.is_empty() {
                    let at = payload.as_ptr() as usize;
                    assert!(at >= start && at + payload.len() <= start + body.len());
                }
                let now = it.remaining();
                assert!(
                    now + 4 + payload.len() <= left,
                    "an item shorter than its parts"
                );
                left = now;
            }
            Err(_) => {
                assert!(it.next().is_none(), "an item after an error");
                break;
            }
        }
    }
    assert!(it.next().is_none(), "fused");
    assert!(items <= body.len() as u64 / 4 + 1);
}
