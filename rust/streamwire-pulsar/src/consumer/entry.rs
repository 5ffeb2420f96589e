//! Turning one MESSAGE frame into the messages the application sees (pure, no I/O).
//!
//! Order of checks, as the Java client does it: checksum and metadata, then decryption (see
//! [`crate::crypto`]), then decompression, then batch parsing. Any failure means the whole entry is dropped and acknowledged with the
//! matching validation error; nothing of it reaches the application. Messages the broker
//! marks as already acknowledged (`ack_set`) and messages before the start position of a
//! reader are skipped; they still count against flow permits.

use std::sync::Arc;

use bytes::Bytes;

use crate::crypto::{ConsumerCrypto, EncryptionContext, FailureAction};
use crate::engine::batch_format::{BatchIter, SIZE_PREFIX_LEN};
use crate::engine::compression::{decompress, Codec};
use crate::message_id::MessageId;
use crate::protocol::pb;
use crate::protocol::pb::command_ack::ValidationError;
use crate::protocol::PayloadSection;

/// A message as handed to the application.
///
/// Kept small (it is moved from the network task to the queue to a Python object, 1000s at a
/// time): what every message of an entry shares sits behind one `Arc`, and the optional parts
/// (key, ordering key, properties, event time) behind one `Box` that most messages do not have.
#[derive(Debug, Clone)]
pub struct ReceivedMessage {
    pub id: MessageId,
    pub payload: Bytes,
    pub sequence_id: u64,
    pub entry: Arc<EntryInfo>,
    pub extras: Option<Box<Extras>>,
}

/// What the messages of one entry share.
#[derive(Debug, Clone)]
pub struct EntryInfo {
    /// Index of the per-topic consumer inside a multi-topic consumer (routes acks).
    pub slot: u32,
    pub topic: Arc<str>,
    pub publish_time: u64,
    pub producer_name: Arc<str>,
    pub redelivery_count: u32,
    /// The registry version of the schema the entry was written with (None: none given).
    pub schema_version: Option<Arc<[u8]>>,
}

/// The optional per-message parts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras {
    pub key: Option<String>,
    pub ordering_key: Option<Bytes>,
    pub properties: Vec<(String, String)>,
    pub event_time: Option<u64>,
    /// The producer sent a null value (`null_value`: the payload is empty), as the Java
    /// client does for a null message or the null value half of a SEPARATED key/value.
    pub null_value: bool,
    /// Set when the payload is still encrypted (failure action CONSUME): how it was sealed.
    pub encryption: Option<Arc<EncryptionContext>>,
}

impl Extras {
    /// `None` when every part is absent (no allocation for plain messages).
    pub fn boxed(self) -> Option<Box<Extras>> {
        if self == Extras::default() {
            None
        } else {
            Some(Box::new(self))
        }
    }
}

impl ReceivedMessage {
    pub fn slot(&self) -> u32 {
        self.entry.slot
    }

    pub fn topic(&self) -> &Arc<str> {
        &self.entry.topic
    }

    pub fn publish_time(&self) -> u64 {
        self.entry.publish_time
    }

    pub fn producer_name(&self) -> &Arc<str> {
        &self.entry.producer_name
    }

    pub fn redelivery_count(&self) -> u32 {
        self.entry.redelivery_count
    }

    /// The schema version the message was written with, if its producer had a schema.
    pub fn schema_version(&self) -> Option<&[u8]> {
        self.entry.schema_version.as_deref()
    }

    pub fn key(&self) -> Option<&str> {
        self.extras.as_ref()?.key.as_deref()
    }

    pub fn ordering_key(&self) -> Option<&Bytes> {
        self.extras.as_ref()?.ordering_key.as_ref()
    }

    pub fn properties(&self) -> &[(String, String)] {
        self.extras
            .as_ref()
            .map_or(&[], |x| x.properties.as_slice())
    }

    pub fn event_time(&self) -> Option<u64> {
        self.extras.as_ref()?.event_time
    }

    /// Whether the producer marked the value null (`null_value`; the payload is empty).
    pub fn null_value(&self) -> bool {
        self.extras.as_ref().is_some_and(|x| x.null_value)
    }

    /// How the payload is encrypted, when it was handed over undecrypted (CONSUME).
    pub fn encryption(&self) -> Option<&Arc<EncryptionContext>> {
        self.extras.as_ref()?.encryption.as_ref()
    }
}

/// Where a reader starts: messages before it (and at it, unless inclusive) are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartFilter {
    pub id: MessageId,
    pub inclusive: bool,
}

impl StartFilter {
    /// Whether this names a real position (not earliest / latest, which filter nothing).
    pub fn is_position(&self) -> bool {
        let (l, e) = (self.id.ledger_id, self.id.entry_id);
        !(l < 0 && e < 0) && l != i64::MAX
    }

    /// Whether `id` comes before the start position (partition is ignored: one topic).
    pub fn skips(&self, id: &MessageId) -> bool {
        if !self.is_position() {
            return false;
        }
        let k = (id.ledger_id, id.entry_id, id.batch_index);
        let s = (self.id.ledger_id, self.id.entry_id, self.id.batch_index);
        k < s || (k == s && !self.inclusive)
    }
}

/// Why an entry was rejected, with the validation error to acknowledge it with.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub validation: ValidationError,
    pub reason: String,
    /// How many messages the entry claimed to hold (its cost in permits).
    pub permits: u32,
    /// Not acknowledged: the entry could not be decrypted and the failure action is FAIL.
    /// It stays unacknowledged (redelivered later) and the application is told `reason`.
    pub hold: bool,
}

/// The outcome of unpacking one entry.
#[derive(Debug, Default)]
pub struct Unpacked {
    pub messages: Vec<ReceivedMessage>,
    /// Permits the entry consumed (its number of messages).
    pub permits: u32,
    /// Messages skipped (already acked, or before the start position).
    pub skipped: u32,
    /// Permits of messages that will not be delivered one by one (an undecrypted batch is
    /// delivered as one message): given back to the broker, nothing acknowledged.
    pub surplus: u32,
}

/// Context that is the same for every entry of one consumer.
#[derive(Debug, Clone)]
pub struct EntryContext {
    pub topic: Arc<str>,
    pub partition: i32,
    pub slot: u32,
    /// Decryption settings (default: no key reader, FAIL).
    pub crypto: ConsumerCrypto,
}

fn bit_set(ack_set: &[i64], index: u32) -> bool {
    let word = (index / 64) as usize;
    match ack_set.get(word) {
        Some(w) => (*w as u64) >> (index % 64) & 1 == 1,
        None => false,
    }
}

/// Unpack one MESSAGE frame. `filter` skips messages before a reader's start position;
/// `acked` skips messages the application already acknowledged (a redelivery after a
/// reconnect must not hand them out again).
pub fn unpack(
    ctx: &EntryContext,
    cmd: &pb::CommandMessage,
    section: &PayloadSection,
    filter: Option<&StartFilter>,
    acked: impl Fn(&MessageId) -> bool,
) -> Result<Unpacked, Rejected> {
    let claimed = section
        .metadata
        .as_ref()
        .ok()
        .and_then(|m| m.num_messages_in_batch)
        .map_or(1, |n| n.max(1) as u32);
    let reject = |validation, reason: String| Rejected {
        validation,
        reason,
        permits: claimed,
        hold: false,
    };
    let meta = section.verified_metadata().map_err(|e| {
        let v = match e {
            crate::protocol::ProtocolError::ChecksumMismatch { .. } => {
                ValidationError::ChecksumMismatch
            }
            _ => ValidationError::BatchDeSerializeError,
        };
        reject(v, e.to_string())
    })?;
    let base = MessageId::from_proto(&cmd.message_id);
    // Decryption comes first (the producer sealed the compressed bytes); with no encryption
    // keys the payload is used as it came, without a copy.
    let mut opened = None;
    if !meta.encryption_keys.is_empty() {
        match ctx
            .crypto
            .open(meta, &section.payload, std::time::Instant::now())
        {
            Ok(plain) => opened = Some(Bytes::from(plain)),
            Err(e) => match ctx.crypto.action {
                FailureAction::Consume => {
                    return Ok(undecrypted(ctx, cmd, section, meta, base, claimed))
                }
                FailureAction::Discard => {
                    return Err(reject(ValidationError::DecryptionError, e.to_string()))
                }
                FailureAction::Fail => {
                    return Err(Rejected {
                        hold: true,
                        ..reject(
                            ValidationError::DecryptionError,
                            format!(
                                "message {}:{} of {} could not be decrypted: {e}",
                                base.ledger_id, base.entry_id, ctx.topic
                            ),
                        )
                    })
                }
            },
        }
    }
    let sealed_or_plain = opened.as_ref().unwrap_or(&section.payload);
    let codec = Codec::from_wire(meta.compression.unwrap_or(0)).ok_or_else(|| {
        reject(
            ValidationError::DecompressionError,
            format!("unknown compression type {:?}", meta.compression),
        )
    })?;
    let payload = if codec == Codec::None {
        sealed_or_plain.clone()
    } else {
        let size = meta.uncompressed_size.unwrap_or(0) as usize;
        decompress(codec, sealed_or_plain, size)
            .map_err(|e| reject(ValidationError::DecompressionError, e.to_string()))?
    };
    let entry = Arc::new(EntryInfo {
        slot: ctx.slot,
        topic: ctx.topic.clone(),
        publish_time: meta.publish_time,
        producer_name: Arc::from(meta.producer_name.as_str()),
        redelivery_count: cmd.redelivery_count.unwrap_or(0),
        schema_version: meta.schema_version.as_deref().map(Arc::from),
    });
    let mut out = Unpacked {
        permits: claimed,
        ..Default::default()
    };
    if meta.num_messages_in_batch.is_none() {
        let id = MessageId::new(base.ledger_id, base.entry_id, ctx.partition, -1, 0);
        if filter.is_some_and(|f| f.skips(&id)) || acked(&id) {
            out.skipped = 1;
            return Ok(out);
        }
        out.messages.push(ReceivedMessage {
            id,
            payload,
            sequence_id: meta.sequence_id,
            entry,
            extras: Extras {
                key: meta.partition_key.clone(),
                ordering_key: meta.ordering_key.clone(),
                properties: meta
                    .properties
                    .iter()
                    .map(|kv| (kv.key.clone(), kv.value.clone()))
                    .collect(),
                event_time: meta.event_time.filter(|&t| t != 0),
                null_value: meta.null_value == Some(true),
                encryption: None,
            }
            .boxed(),
        });
        return Ok(out);
    }
    let n = claimed;
    let batch_size = i32::try_from(n).unwrap_or(i32::MAX);
    // `n` comes off the wire (up to i32::MAX): size the buffer by what the payload can
    // hold, every message taking at least its size prefix.
    let mut parsed = Vec::with_capacity((n as usize).min(payload.len() / SIZE_PREFIX_LEN));
    for (i, item) in BatchIter::new(payload, n).enumerate() {
        let (single, body) =
            item.map_err(|e| reject(ValidationError::BatchDeSerializeError, e.to_string()))?;
        parsed.push((i as u32, single, body));
    }
    if parsed.len() as u32 != n {
        return Err(reject(
            ValidationError::BatchDeSerializeError,
            format!("batch claims {n} messages, {} parsed", parsed.len()),
        ));
    }
    out.messages.reserve(parsed.len());
    for (i, single, body) in parsed {
        let id = MessageId::new(
            base.ledger_id,
            base.entry_id,
            ctx.partition,
            i as i32,
            batch_size,
        );
        let acked_already = !cmd.ack_set.is_empty() && !bit_set(&cmd.ack_set, i);
        if acked_already
            || single.compacted_out == Some(true)
            || filter.is_some_and(|f| f.skips(&id))
            || acked(&id)
        {
            out.skipped += 1;
            continue;
        }
        out.messages.push(ReceivedMessage {
            id,
            payload: body,
            // The entry's sequence id is off the wire: near u64::MAX it must not overflow.
            sequence_id: single
                .sequence_id
                .unwrap_or(meta.sequence_id.wrapping_add(u64::from(i))),
            entry: entry.clone(),
            extras: Extras {
                key: single.partition_key,
                ordering_key: single.ordering_key,
                properties: single
                    .properties
                    .into_iter()
                    .map(|kv| (kv.key, kv.value))
                    .collect(),
                event_time: single.event_time.filter(|&t| t != 0),
                null_value: single.null_value == Some(true),
                encryption: None,
            }
            .boxed(),
        });
    }
    Ok(out)
}

/// An entry that could not be decrypted, handed over as it is (failure action CONSUME): one
/// message with the encrypted payload, a batch included (its messages cannot be parsed
/// without the key), as the Java client does; its id is the entry's.
fn undecrypted(
    ctx: &EntryContext,
    cmd: &pb::CommandMessage,
    section: &PayloadSection,
    meta: &pb::MessageMetadata,
    base: MessageId,
    claimed: u32,
) -> Unpacked {
    let entry = Arc::new(EntryInfo {
        slot: ctx.slot,
        topic: ctx.topic.clone(),
        publish_time: meta.publish_time,
        producer_name: Arc::from(meta.producer_name.as_str()),
        redelivery_count: cmd.redelivery_count.unwrap_or(0),
        schema_version: meta.schema_version.as_deref().map(Arc::from),
    });
    let extras = Extras {
        key: meta.partition_key.clone(),
        ordering_key: meta.ordering_key.clone(),
        properties: meta
            .properties
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone()))
            .collect(),
        event_time: meta.event_time.filter(|&t| t != 0),
        null_value: meta.null_value == Some(true),
        encryption: Some(Arc::new(EncryptionContext::of(meta))),
    };
    Unpacked {
        messages: vec![ReceivedMessage {
            id: MessageId::new(base.ledger_id, base.entry_id, ctx.partition, -1, 0),
            payload: section.payload.clone(),
            sequence_id: meta.sequence_id,
            entry,
            extras: extras.boxed(),
        }],
        permits: claimed,
        skipped: 0,
        // A batch counted `claimed` permits and yields one message: the rest are given back.
        surplus: claimed.saturating_sub(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::batch_format::{encode_message, single_metadata_for};
    use crate::engine::compression::compress;
    use crate::engine::message::OutgoingMessage;
    use crate::protocol::{ChecksumStatus, ProtocolError};
    use bytes::BytesMut;

    fn ctx() -> EntryContext {
        EntryContext {
            topic: Arc::from("persistent://public/default/t-partition-3"),
            partition: 3,
            slot: 0,
            crypto: ConsumerCrypto::default(),
        }
    }

    fn cmd(ack_set: Vec<i64>) -> pb::CommandMessage {
        pb::CommandMessage {
            consumer_id: 1,
            message_id: pb::MessageIdData {
                ledger_id: 7,
                entry_id: 9,
                ..Default::default()
            },
            redelivery_count: Some(2),
            ack_set,
            ..Default::default()
        }
    }

    fn meta(batch: Option<i32>) -> pb::MessageMetadata {
        pb::MessageMetadata {
            producer_name: "p".into(),
            sequence_id: 100,
            publish_time: 1234,
            num_messages_in_batch: batch,
            ..Default::default()
        }
    }

    fn batch(n: u32) -> Bytes {
        let mut out = BytesMut::new();
        for i in 0..n {
            let m = OutgoingMessage::new(Bytes::from(format!("m{i}")), 100 + u64::from(i))
                .with_key(format!("k{i}"));
            encode_message(&single_metadata_for(&m), &m.payload, &mut out);
        }
        out.freeze()
    }

    fn section(meta: pb::MessageMetadata, payload: Bytes) -> PayloadSection {
        PayloadSection {
            broker_entry_metadata: None,
            metadata: Ok(meta),
            payload,
            checksum: ChecksumStatus::Absent,
        }
    }

    #[test]
    fn single_message() {
        let u = unpack(
            &ctx(),
            &cmd(vec![]),
            &section(meta(None), Bytes::from("x")),
            None,
            |_| false,
        )
        .unwrap();
        assert_eq!(u.permits, 1);
        let m = &u.messages[0];
        let s = section(meta(None), Bytes::from("x"));
        let again = unpack(&ctx(), &cmd(vec![]), &s, None, |id| id.entry_id == 9).unwrap();
        assert_eq!((again.messages.len(), again.skipped), (0, 1));
        assert_eq!(m.id, MessageId::new(7, 9, 3, -1, 0));
        assert_eq!(
            (m.redelivery_count(), m.sequence_id, m.publish_time()),
            (2, 100, 1234)
        );
        assert_eq!(&m.payload[..], b"x");
    }

    #[test]
    fn batch_is_unpacked_with_indexes_and_ack_set_skips() {
        let s = section(meta(Some(3)), batch(3));
        let u = unpack(&ctx(), &cmd(vec![]), &s, None, |_| false).unwrap();
        assert_eq!(u.messages.len(), 3);
        assert_eq!(u.messages[2].id, MessageId::new(7, 9, 3, 2, 3));
        assert_eq!(u.messages[2].id.batch_size, 3);
        assert_eq!(u.messages[1].key(), Some("k1"));
        assert_eq!(u.messages[1].sequence_id, 101);
        // ack_set: bit set = still unacked; index 1 was acked.
        let u = unpack(&ctx(), &cmd(vec![0b101]), &s, None, |_| false).unwrap();
        let idx: Vec<i32> = u.messages.iter().map(|m| m.id.batch_index).collect();
        assert_eq!(idx, vec![0, 2]);
        assert_eq!((u.permits, u.skipped), (3, 1));
        // Indexes the application already acknowledged are skipped too (a redelivery).
        let u = unpack(&ctx(), &cmd(vec![]), &s, None, |id| id.batch_index == 0).unwrap();
        let idx: Vec<i32> = u.messages.iter().map(|m| m.id.batch_index).collect();
        assert_eq!(idx, vec![1, 2]);
        assert_eq!((u.permits, u.skipped), (3, 1));
    }

    #[test]
    fn null_value_is_kept_for_single_and_batched_messages() {
        // The Java client's null value (a SEPARATED key/value's null value half): an empty
        // payload flagged null_value, which decoders must see (it is not an empty value).
        let single = section(
            pb::MessageMetadata {
                null_value: Some(true),
                ..meta(None)
            },
            Bytes::new(),
        );
        let u = unpack(&ctx(), &cmd(vec![]), &single, None, |_| false).unwrap();
        assert!(u.messages[0].null_value());
        let mut out = BytesMut::new();
        for null in [false, true] {
            let mut m = OutgoingMessage::new(Bytes::from_static(b""), 0);
            m.null_value = null;
            encode_message(&single_metadata_for(&m), &m.payload, &mut out);
        }
        let s = section(meta(Some(2)), out.freeze());
        let u = unpack(&ctx(), &cmd(vec![]), &s, None, |_| false).unwrap();
        let nulls: Vec<bool> = u.messages.iter().map(ReceivedMessage::null_value).collect();
        assert_eq!(nulls, vec![false, true]);
        let plain = section(meta(None), Bytes::new());
        let u = unpack(&ctx(), &cmd(vec![]), &plain, None, |_| false).unwrap();
        assert!(!u.messages[0].null_value());
    }

    #[test]
    fn compressed_batch() {
        let raw = batch(4);
        for codec in Codec::ALL {
            let mut out = Vec::new();
            compress(codec, &raw, &mut out).unwrap();
            let mut m = meta(Some(4));
            m.compression = Some(codec.to_wire());
            m.uncompressed_size = Some(raw.len() as u32);
            let u = unpack(
                &ctx(),
                &cmd(vec![]),
                &section(m, Bytes::from(out)),
                None,
                |_| false,
            )
            .unwrap();
            assert_eq!(&u.messages[3].payload[..], b"m3", "{codec:?}");
        }
    }

    #[test]
    fn start_filter_skips_before_and_at_start() {
        let s = section(meta(Some(4)), batch(4));
        let f = StartFilter {
            id: MessageId::new(7, 9, 3, 1, 4),
            inclusive: false,
        };
        let u = unpack(&ctx(), &cmd(vec![]), &s, Some(&f), |_| false).unwrap();
        assert_eq!(u.messages.len(), 2);
        assert_eq!(u.messages[0].id.batch_index, 2);
        let f = StartFilter {
            inclusive: true,
            ..f
        };
        let u = unpack(&ctx(), &cmd(vec![]), &s, Some(&f), |_| false).unwrap();
        assert_eq!(u.messages.len(), 3);
        // An entry after the start id is untouched.
        let f = StartFilter {
            id: MessageId::new(7, 8, 3, -1, 0),
            inclusive: false,
        };
        assert_eq!(
            unpack(&ctx(), &cmd(vec![]), &s, Some(&f), |_| false)
                .unwrap()
                .messages
                .len(),
            4
        );
    }

    #[test]
    fn huge_batch_count_is_rejected_without_a_huge_allocation() {
        // A count off the wire must not size an allocation: one tiny message claiming
        // i32::MAX siblings is a BatchDeSerializeError, not an abort.
        for payload in [batch(1), Bytes::new(), Bytes::from_static(b"\x00\x00")] {
            let s = section(meta(Some(i32::MAX)), payload);
            let r = unpack(&ctx(), &cmd(vec![]), &s, None, |_| false).unwrap_err();
            assert_eq!(r.validation, ValidationError::BatchDeSerializeError);
            assert_eq!(r.permits, i32::MAX as u32);
        }
    }

    #[test]
    fn batch_sequence_ids_near_u64_max_do_not_overflow() {
        let mut out = BytesMut::new();
        for i in 0..2u8 {
            let m = OutgoingMessage::new(Bytes::from(vec![i]), 0);
            let single = pb::SingleMessageMetadata {
                sequence_id: None,
                ..single_metadata_for(&m)
            };
            encode_message(&single, &m.payload, &mut out);
        }
        let mut m = meta(Some(2));
        m.sequence_id = u64::MAX;
        let s = section(m, out.freeze());
        let u = unpack(&ctx(), &cmd(vec![]), &s, None, |_| false).unwrap();
        let seq: Vec<u64> = u.messages.iter().map(|m| m.sequence_id).collect();
        assert_eq!(seq, vec![u64::MAX, 0]);
    }

    #[test]
    fn corrupt_entries_are_rejected_with_the_right_validation_error() {
        let mut s = section(meta(Some(2)), batch(2));
        s.checksum = ChecksumStatus::Mismatch {
            expected: 1,
            computed: 2,
        };
        let r = unpack(&ctx(), &cmd(vec![]), &s, None, |_| false).unwrap_err();
        assert_eq!(r.validation, ValidationError::ChecksumMismatch);
        assert_eq!(r.permits, 2);

        let mut m = meta(Some(2));
        m.compression = Some(Codec::Lz4.to_wire());
        m.uncompressed_size = Some(50);
        let r = unpack(
            &ctx(),
            &cmd(vec![]),
            &section(m, Bytes::from("zz")),
            None,
            |_| false,
        )
        .unwrap_err();
        assert_eq!(r.validation, ValidationError::DecompressionError);

        let r = unpack(
            &ctx(),
            &cmd(vec![]),
            &section(meta(Some(3)), batch(2)),
            None,
            |_| false,
        )
        .unwrap_err();
        assert_eq!(r.validation, ValidationError::BatchDeSerializeError);

        let bad = PayloadSection {
            metadata: Err(ProtocolError::Malformed("x".into())),
            ..section(meta(None), Bytes::new())
        };
        let r = unpack(&ctx(), &cmd(vec![]), &bad, None, |_| false).unwrap_err();
        assert_eq!(r.permits, 1);
    }
}

#[cfg(test)]
mod size_tests {
    /// Messages are moved by value several times on the way to Python: keep them small.
    #[test]
    fn received_message_stays_small() {
        let size = std::mem::size_of::<super::ReceivedMessage>();
        eprintln!("ReceivedMessage: {size} bytes");
        assert!(
            size <= 112,
            "ReceivedMessage grew to {size} bytes (was 112)"
        );
    }
}

#[cfg(test)]
#[path = "entry_crypto_tests.rs"]
mod crypto_tests;
