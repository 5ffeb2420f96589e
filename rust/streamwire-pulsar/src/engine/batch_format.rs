//! The batch payload format shared by all Pulsar clients.
//!
//! A batched entry's payload (before compression) is the concatenation, for each message,
//! of `[u32 big-endian size of the SingleMessageMetadata][SingleMessageMetadata][payload]`,
//! where the metadata's `payload_size` gives the payload length. The entry's
//! `MessageMetadata.num_messages_in_batch` says how many there are. This is what the Java
//! client's `Commands.serializeSingleMessageInBatchWithPayload` writes and its consumer
//! reads, so a batch we build is readable by any official consumer, and vice versa.
//!
//! Decoding never trusts a size field: every length is checked against what is left, the
//! payload slices share the input buffer (no copies), and a malformed batch yields a typed
//! error instead of a panic.

use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};
use prost::encoding::{decode_varint, encode_varint, encoded_len_varint};
use prost::Message as _;
use streamwire_proto::pulsar::{KeyValue, SingleMessageMetadata};

use super::message::OutgoingMessage;

/// Bytes of the size prefix before each message's metadata.
pub const SIZE_PREFIX_LEN: usize = 4;

/// A malformed batch payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchFormatError {
    /// Fewer than 4 bytes left where a metadata size was expected.
    TruncatedSize {
        /// Index of the message in the batch.
        index: u32,
        /// Bytes left.
        available: usize,
    },
    /// The metadata size claims more bytes than are left.
    TruncatedMetadata {
        /// Index of the message in the batch.
        index: u32,
        /// Claimed metadata size.
        size: u32,
        /// Bytes left.
        available: usize,
    },
    /// The metadata is not a valid `SingleMessageMetadata`.
    InvalidMetadata {
        /// Index of the message in the batch.
        index: u32,
        /// The protobuf decoder's message.
        reason: String,
    },
    /// `payload_size` is negative.
    NegativePayloadSize {
        /// Index of the message in the batch.
        index: u32,
        /// The value.
        size: i32,
    },
    /// `payload_size` claims more bytes than are left.
    TruncatedPayload {
        /// Index of the message in the batch.
        index: u32,
        /// Claimed payload size.
        size: u32,
        /// Bytes left.
        available: usize,
    },
}

impl fmt::Display for BatchFormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TruncatedSize { index, available } => write!(
                f,
                "batch message {index}: metadata size needs 4 bytes, {available} left"
            ),
            Self::TruncatedMetadata {
                index,
                size,
                available,
            } => write!(
                f,
                "batch message {index}: metadata of {size} bytes, only {available} left"
            ),
            Self::InvalidMetadata { index, reason } => {
                write!(f, "batch message {index}: invalid metadata: {reason}")
            }
            Self::NegativePayloadSize { index, size } => {
                write!(f, "batch message {index}: negative payload size {size}")
            }
            Self::TruncatedPayload {
                index,
                size,
                available,
            } => write!(
                f,
                "batch message {index}: payload of {size} bytes, only {available} left"
            ),
        }
    }
}

impl std::error::Error for BatchFormatError {}

/// The per-message metadata the Java client writes for `msg` in a batch: key (with its
/// base64 flag), ordering key, properties, event time, sequence id, null value and the
/// payload size.
pub fn single_metadata_for(msg: &OutgoingMessage) -> SingleMessageMetadata {
    let payload_size = i32::try_from(msg.payload.len()).unwrap_or(i32::MAX);
    SingleMessageMetadata {
        properties: msg
            .properties
            .iter()
            .map(|(key, value)| KeyValue {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
        partition_key: msg.key.clone(),
        partition_key_b64_encoded: msg.key.as_ref().map(|_| msg.partition_key_b64),
        payload_size,
        event_time: msg.event_time.filter(|&t| t != 0),
        ordering_key: msg.ordering_key.clone(),
        sequence_id: Some(msg.sequence_id),
        null_value: msg.null_value.then_some(true),
        ..SingleMessageMetadata::default()
    }
}

/// Bytes that [`encode_message`] appends for `meta` and a payload of `payload_len` bytes.
pub fn encoded_len(meta: &SingleMessageMetadata, payload_len: usize) -> usize {
    SIZE_PREFIX_LEN + meta.encoded_len() + payload_len
}

/// Append one message (size prefix, metadata, payload) to `out`.
///
/// `meta.payload_size` should equal `payload.len()`; it is what readers trust.
pub fn encode_message(meta: &SingleMessageMetadata, payload: &[u8], out: &mut BytesMut) {
    let meta_len = meta.encoded_len();
    out.reserve(SIZE_PREFIX_LEN + meta_len + payload.len());
    // A SingleMessageMetadata is far smaller than 4 GiB (bounded by the frame size).
    out.put_u32(u32::try_from(meta_len).unwrap_or(u32::MAX));
    meta.encode(out)
        .expect("BytesMut grows, and capacity was reserved");
    out.put_slice(payload);
}

/// A message with nothing but a payload and a sequence id (no key, ordering key, properties,
/// event time or null value) — what bulk sends carry. Its metadata is two varints, which
/// [`encode_plain`] writes by hand: building a `SingleMessageMetadata` and having prost size it
/// three times cost more than copying a 100-byte payload.
pub fn is_plain(msg: &OutgoingMessage) -> bool {
    msg.key.is_none()
        && msg.ordering_key.is_none()
        && msg.properties.is_empty()
        && msg.event_time.is_none_or(|t| t == 0)
        && !msg.null_value
}

/// `payload_size` (field 3, varint) and `sequence_id` (field 8, varint).
const PAYLOAD_SIZE_TAG: u8 = 3 << 3;
const SEQUENCE_ID_TAG: u8 = 8 << 3;

fn plain_payload_size(payload_len: usize) -> u64 {
    // An int32 field; a payload is far below 2 GiB (bounded by the frame size).
    i32::try_from(payload_len).unwrap_or(i32::MAX) as u64
}

/// Bytes of a plain message's metadata (what prost would write for it).
pub fn plain_metadata_len(payload_len: usize, sequence_id: u64) -> usize {
    2 + encoded_len_varint(plain_payload_size(payload_len)) + encoded_len_varint(sequence_id)
}

/// Bytes that [`encode_plain`] appends.
pub fn plain_encoded_len(payload_len: usize, sequence_id: u64) -> usize {
    SIZE_PREFIX_LEN + plain_metadata_len(payload_len, sequence_id) + payload_len
}

/// Append one plain message (see [`is_plain`]): byte for byte what [`encode_message`] writes
/// for it, fields in number order as prost writes them.
pub fn encode_plain(payload: &[u8], sequence_id: u64, out: &mut BytesMut) {
    let meta_len = plain_metadata_len(payload.len(), sequence_id);
    out.reserve(SIZE_PREFIX_LEN + meta_len + payload.len());
    out.put_u32(meta_len as u32);
    out.put_u8(PAYLOAD_SIZE_TAG);
    encode_varint(plain_payload_size(payload.len()), out);
    out.put_u8(SEQUENCE_ID_TAG);
    encode_varint(sequence_id, out);
    out.put_slice(payload);
}

/// The metadata of a plain message (exactly `payload_size` then `sequence_id`, as
/// [`encode_plain`] and the Java client write them for a message without options), read without
/// prost; `None` for anything else, which then takes the general decoder. Same result as prost
/// on the bytes it accepts (proptest).
pub fn decode_plain(mut meta: &[u8]) -> Option<SingleMessageMetadata> {
    if meta.first() != Some(&PAYLOAD_SIZE_TAG) {
        return None;
    }
    meta = &meta[1..];
    let size = i32::try_from(decode_varint(&mut meta).ok()?).ok()?;
    if meta.first() != Some(&SEQUENCE_ID_TAG) {
        return None;
    }
    meta = &meta[1..];
    let sequence_id = decode_varint(&mut meta).ok()?;
    if !meta.is_empty() {
        return None;
    }
    Some(SingleMessageMetadata {
        payload_size: size,
        sequence_id: Some(sequence_id),
        ..SingleMessageMetadata::default()
    })
}

/// Iterates over the messages of a batch payload, yielding zero-copy payload slices.
///
/// Yields at most `num_messages` items; after an error it yields nothing more. Bytes left
/// over after the last message are ignored by readers (as the official clients do) and
/// reported by [`remaining`](Self::remaining).
#[derive(Debug, Clone)]
pub struct BatchIter {
    buf: Bytes,
    num_messages: u32,
    index: u32,
    failed: bool,
}

impl BatchIter {
    /// Iterate over `num_messages` messages (from `MessageMetadata.num_messages_in_batch`)
    /// of an uncompressed batch payload.
    pub fn new(payload: Bytes, num_messages: u32) -> Self {
        Self {
            buf: payload,
            num_messages,
            index: 0,
            failed: false,
        }
    }

    /// Bytes not consumed yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn next_message(&mut self) -> Result<(SingleMessageMetadata, Bytes), BatchFormatError> {
        let index = self.index;
        let available = self.buf.len();
        let Some(size_bytes) = self.buf.get(..SIZE_PREFIX_LEN) else {
            return Err(BatchFormatError::TruncatedSize { index, available });
        };
        let size = u32::from_be_bytes([size_bytes[0], size_bytes[1], size_bytes[2], size_bytes[3]]);
        let after_prefix = available - SIZE_PREFIX_LEN;
        let meta_len = usize::try_from(size).unwrap_or(usize::MAX);
        if meta_len > after_prefix {
            return Err(BatchFormatError::TruncatedMetadata {
                index,
                size,
                available: after_prefix,
            });
        }
        let meta_bytes = &self.buf[SIZE_PREFIX_LEN..SIZE_PREFIX_LEN + meta_len];
        let meta = match decode_plain(meta_bytes) {
            Some(plain) => plain,
            None => SingleMessageMetadata::decode(meta_bytes).map_err(|e| {
                BatchFormatError::InvalidMetadata {
                    index,
                    reason: e.to_string(),
                }
            })?,
        };
        let payload_size = u32::try_from(meta.payload_size).map_err(|_| {
            BatchFormatError::NegativePayloadSize {
                index,
                size: meta.payload_size,
            }
        })?;
        let payload_len = usize::try_from(payload_size).unwrap_or(usize::MAX);
        let after_meta = after_prefix - meta_len;
        if payload_len > after_meta {
            return Err(BatchFormatError::TruncatedPayload {
                index,
                size: payload_size,
                available: after_meta,
            });
        }
        let start = SIZE_PREFIX_LEN + meta_len;
        let payload = self.buf.slice(start..start + payload_len);
        self.buf = self.buf.slice(start + payload_len..);
        Ok((meta, payload))
    }
}

impl Iterator for BatchIter {
    type Item = Result<(SingleMessageMetadata, Bytes), BatchFormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.index >= self.num_messages {
            return None;
        }
        let item = self.next_message();
        self.index += 1;
        if item.is_err() {
            self.failed = true;
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.failed {
            return (0, Some(0));
        }
        let left = usize::try_from(self.num_messages - self.index).unwrap_or(usize::MAX);
        (0, Some(left))
    }
}

impl std::iter::FusedIterator for BatchIter {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn plain_encoding_is_what_prost_writes(
            len in prop_oneof![0usize..300, 16_000usize..20_000, Just(2_000_000usize)],
            seq in any::<u64>(),
        ) {
            let m = OutgoingMessage::new(vec![7u8; len], seq);
            prop_assert!(is_plain(&m));
            let mut general = BytesMut::new();
            encode_message(&single_metadata_for(&m), &m.payload, &mut general);
            let mut plain = BytesMut::new();
            encode_plain(&m.payload, seq, &mut plain);
            prop_assert_eq!(&plain[..], &general[..]);
            prop_assert_eq!(plain.len(), plain_encoded_len(len, seq));
        }
    }

    proptest! {
        #[test]
        fn plain_decoding_agrees_with_prost(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            if let Some(plain) = decode_plain(&bytes) {
                prop_assert_eq!(Some(plain), SingleMessageMetadata::decode(&bytes[..]).ok());
            }
        }

        #[test]
        fn plain_metadata_is_read_back_by_the_fast_path(len in 0usize..100_000, seq in any::<u64>()) {
            let mut out = BytesMut::new();
            encode_plain(&vec![1u8; len], seq, &mut out);
            let meta = &out[SIZE_PREFIX_LEN..SIZE_PREFIX_LEN + plain_metadata_len(len, seq)];
            let got = decode_plain(meta).expect("plain");
            prop_assert_eq!(got.payload_size as usize, len);
            prop_assert_eq!(got.sequence_id, Some(seq));
        }
    }

    #[test]
    fn only_messages_without_options_are_plain() {
        let base = OutgoingMessage::new(&b"x"[..], 1);
        assert!(is_plain(&base));
        assert!(is_plain(&OutgoingMessage {
            event_time: Some(0),
            ..base.clone()
        }));
        assert!(!is_plain(&base.clone().with_key("k")));
        assert!(!is_plain(&OutgoingMessage {
            event_time: Some(5),
            ..base.clone()
        }));
        assert!(!is_plain(&OutgoingMessage {
            null_value: true,
            ..base.clone()
        }));
        assert!(!is_plain(&OutgoingMessage {
            properties: vec![("a".into(), "b".into())],
            ..base.clone()
        }));
        assert!(!is_plain(&OutgoingMessage {
            ordering_key: Some(Bytes::from_static(b"o")),
            ..base
        }));
    }

    fn encode_all(msgs: &[OutgoingMessage]) -> Bytes {
        let mut out = BytesMut::new();
        for m in msgs {
            let meta = single_metadata_for(m);
            let before = out.len();
            encode_message(&meta, &m.payload, &mut out);
            assert_eq!(out.len() - before, encoded_len(&meta, m.payload.len()));
        }
        out.freeze()
    }

    #[test]
    fn known_bytes_of_one_message() {
        // payload_size = 2 (field 3, varint) and sequence_id = 1 (field 8, varint):
        // metadata = 18 02 40 01, 4 bytes.
        let m = OutgoingMessage::new(Bytes::from_static(b"hi"), 1);
        let bytes = encode_all(&[m]);
        assert_eq!(&bytes[..], b"\x00\x00\x00\x04\x18\x02\x40\x01hi");
    }

    #[test]
    fn known_bytes_with_key_and_property() {
        let m = OutgoingMessage::new(Bytes::from_static(b"v"), 0)
            .with_key("k")
            .with_property("a", "b");
        let bytes = encode_all(&[m]);
        // properties (1): 0a 06 [0a 01 'a' 12 01 'b'], partition_key (2): 12 01 'k',
        // payload_size (3): 18 01, b64 flag (6): 30 00, sequence_id (8): 40 00.
        let meta = b"\x0a\x06\x0a\x01a\x12\x01b\x12\x01k\x18\x01\x30\x00\x40\x00";
        let mut want = vec![0, 0, 0, meta.len() as u8];
        want.extend_from_slice(meta);
        want.push(b'v');
        assert_eq!(&bytes[..], &want[..]);
    }

    #[test]
    fn round_trip_is_zero_copy() {
        let msgs = vec![
            OutgoingMessage::new(Bytes::from_static(b"first"), 10)
                .with_key("key")
                .with_ordering_key(Bytes::from_static(b"ord"))
                .with_property("p", "q")
                .with_event_time(1234),
            OutgoingMessage::new(Bytes::new(), 11),
            OutgoingMessage {
                null_value: true,
                partition_key_b64: true,
                ..OutgoingMessage::new(Bytes::new(), 12).with_key("AAE=")
            },
        ];
        let buf = encode_all(&msgs);
        let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
        let decoded: Vec<_> = BatchIter::new(buf.clone(), 3)
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(decoded.len(), 3);
        for ((meta, payload), m) in decoded.iter().zip(&msgs) {
            assert_eq!(meta, &single_metadata_for(m));
            assert_eq!(payload, &m.payload);
            if !payload.is_empty() {
                assert!(range.contains(&(payload.as_ptr() as usize)));
            }
        }
        assert_eq!(decoded[0].0.ordering_key.as_deref(), Some(&b"ord"[..]));
        assert_eq!(decoded[2].0.null_value, Some(true));
        assert_eq!(decoded[2].0.partition_key_b64_encoded, Some(true));
    }

    #[test]
    fn stops_after_num_messages_and_reports_leftover() {
        let buf = encode_all(&[
            OutgoingMessage::new(Bytes::from_static(b"a"), 0),
            OutgoingMessage::new(Bytes::from_static(b"b"), 1),
        ]);
        let mut it = BatchIter::new(buf, 1);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().is_none());
        assert!(it.remaining() > 0);
    }

    #[test]
    fn typed_errors_for_lying_sizes() {
        let mut it = BatchIter::new(Bytes::from_static(b"\x00\x00"), 1);
        assert_eq!(
            it.next(),
            Some(Err(BatchFormatError::TruncatedSize {
                index: 0,
                available: 2
            }))
        );
        assert_eq!(it.next(), None);

        let mut it = BatchIter::new(Bytes::from_static(b"\xff\xff\xff\xff\x18"), 1);
        assert!(matches!(
            it.next(),
            Some(Err(BatchFormatError::TruncatedMetadata {
                size: u32::MAX,
                available: 1,
                ..
            }))
        ));

        // payload_size = 100 but 2 bytes follow.
        let mut it = BatchIter::new(Bytes::from_static(b"\x00\x00\x00\x02\x18\x64hi"), 1);
        assert!(matches!(
            it.next(),
            Some(Err(BatchFormatError::TruncatedPayload {
                size: 100,
                available: 2,
                ..
            }))
        ));

        // payload_size = -1 (ten-byte varint).
        let meta = b"\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01";
        let mut bad = vec![0, 0, 0, meta.len() as u8];
        bad.extend_from_slice(meta);
        let mut it = BatchIter::new(Bytes::from(bad), 1);
        assert_eq!(
            it.next(),
            Some(Err(BatchFormatError::NegativePayloadSize {
                index: 0,
                size: -1
            }))
        );

        // Garbage protobuf (an unterminated varint tag).
        let mut it = BatchIter::new(Bytes::from_static(b"\x00\x00\x00\x01\xff"), 1);
        assert!(matches!(
            it.next(),
            Some(Err(BatchFormatError::InvalidMetadata { .. }))
        ));
    }

    #[test]
    fn second_message_error_has_its_index() {
        let mut buf =
            BytesMut::from(&encode_all(&[OutgoingMessage::new(Bytes::from_static(b"a"), 0)])[..]);
        buf.put_slice(b"\x00");
        let items: Vec<_> = BatchIter::new(buf.freeze(), 5).collect();
        assert_eq!(items.len(), 2);
        assert_eq!(
            items[1],
            Err(BatchFormatError::TruncatedSize {
                index: 1,
                available: 1
            })
        );
    }

    fn arb_message() -> impl Strategy<Value = OutgoingMessage> {
        (
            proptest::collection::vec(any::<u8>(), 0..64),
            proptest::option::of("[a-z]{0,8}"),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)),
            proptest::collection::vec(("[a-z]{0,4}", "[a-z]{0,4}"), 0..3),
            proptest::option::of(1u64..),
            any::<u64>(),
            any::<bool>(),
        )
            .prop_map(|(payload, key, ok, props, et, seq, null)| OutgoingMessage {
                payload: payload.into(),
                key,
                partition_key_b64: false,
                ordering_key: ok.map(Bytes::from),
                properties: props,
                event_time: et,
                sequence_id: seq,
                null_value: null,
                partition: None,
            })
    }

    proptest! {
        #[test]
        fn round_trip_any_batch(msgs in proptest::collection::vec(arb_message(), 0..20)) {
            let buf = encode_all(&msgs);
            let decoded: Vec<_> = BatchIter::new(buf, msgs.len() as u32)
                .collect::<Result<_, _>>()
                .unwrap();
            prop_assert_eq!(decoded.len(), msgs.len());
            for ((meta, payload), m) in decoded.into_iter().zip(&msgs) {
                prop_assert_eq!(meta, single_metadata_for(m));
                prop_assert_eq!(payload, m.payload.clone());
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..256), n in 0u32..50) {
            let it = BatchIter::new(Bytes::from(data), n);
            let mut errors = 0;
            let mut count = 0;
            for item in it {
                count += 1;
                if item.is_err() { errors += 1; }
            }
            prop_assert!(errors <= 1);
            prop_assert!(count <= n);
        }

        #[test]
        fn truncation_is_always_an_error(msgs in proptest::collection::vec(arb_message(), 1..5), cut in any::<prop::sample::Index>()) {
            let buf = encode_all(&msgs);
            let cut = cut.index(buf.len());
            let result: Result<Vec<_>, _> = BatchIter::new(buf.slice(..cut), msgs.len() as u32).collect();
            prop_assert!(result.is_err());
        }
    }
}
