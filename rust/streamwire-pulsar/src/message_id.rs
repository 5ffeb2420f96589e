//! Message ids as the Java client models them (pure).
//!
//! `(ledger, entry)` locates an entry in the topic; `partition` is -1 outside partitioned
//! topics; `batch_index` is -1 for an entry that is not a batch. Ordering follows the Java
//! client's `compareTo`: ledger, entry, partition, then batch index; `batch_size` is carried
//! for batch-index acks but takes no part in equality or order.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use bytes::Bytes;
use prost::Message as _;

use streamwire_core::error::{Error, Result};

use crate::protocol::pb;

#[derive(Debug, Clone, Copy)]
pub struct MessageId {
    pub ledger_id: i64,
    pub entry_id: i64,
    pub partition: i32,
    pub batch_index: i32,
    pub batch_size: i32,
    /// For a chunked message, `(ledger, entry)` of its first chunk (this id is the last
    /// chunk's, as Java's `ChunkMessageIdImpl`). Takes no part in equality or order.
    pub first_chunk: Option<(i64, i64)>,
}

impl MessageId {
    /// The position before the first message (Java's `MessageId.earliest`).
    pub const EARLIEST: MessageId = MessageId::new(-1, -1, -1, -1, 0);
    /// The position after the last message (Java's `MessageId.latest`).
    pub const LATEST: MessageId = MessageId::new(i64::MAX, i64::MAX, -1, -1, 0);

    pub const fn new(
        ledger_id: i64,
        entry_id: i64,
        partition: i32,
        batch_index: i32,
        batch_size: i32,
    ) -> Self {
        MessageId {
            ledger_id,
            entry_id,
            partition,
            batch_index,
            batch_size,
            first_chunk: None,
        }
    }

    fn key(&self) -> (i64, i64, i32, i32) {
        (
            self.ledger_id,
            self.entry_id,
            self.partition,
            self.batch_index,
        )
    }

    pub fn is_batch(&self) -> bool {
        self.batch_index >= 0
    }

    /// The id of the whole entry (batch index dropped).
    pub fn entry(&self) -> MessageId {
        MessageId::new(self.ledger_id, self.entry_id, self.partition, -1, 0)
    }

    /// The id of a chunked message: this (last chunk) id carrying its first chunk's position.
    pub fn with_first_chunk(mut self, first: &MessageId) -> MessageId {
        self.first_chunk = Some((first.ledger_id, first.entry_id));
        self
    }

    pub fn from_proto(d: &pb::MessageIdData) -> MessageId {
        MessageId {
            ledger_id: d.ledger_id as i64,
            entry_id: d.entry_id as i64,
            partition: d.partition.unwrap_or(-1),
            batch_index: d.batch_index.unwrap_or(-1),
            batch_size: d.batch_size.unwrap_or(0),
            first_chunk: d
                .first_chunk_message_id
                .as_ref()
                .map(|f| (f.ledger_id as i64, f.entry_id as i64)),
        }
    }

    /// The protobuf form, as the Java client writes it: optional fields only when meaningful.
    pub fn to_proto(&self) -> pb::MessageIdData {
        pb::MessageIdData {
            ledger_id: self.ledger_id as u64,
            entry_id: self.entry_id as u64,
            partition: (self.partition >= 0).then_some(self.partition),
            batch_index: (self.batch_index >= 0).then_some(self.batch_index),
            batch_size: (self.batch_size > 0).then_some(self.batch_size),
            first_chunk_message_id: self.first_chunk.map(|(l, e)| {
                Box::new(pb::MessageIdData {
                    ledger_id: l as u64,
                    entry_id: e as u64,
                    partition: (self.partition >= 0).then_some(self.partition),
                    ..Default::default()
                })
            }),
            ..Default::default()
        }
    }

    /// Serialized form, byte-compatible with Java's `MessageId.toByteArray()`.
    pub fn serialize(&self) -> Vec<u8> {
        self.to_proto().encode_to_vec()
    }

    pub fn deserialize(data: &[u8]) -> Result<MessageId> {
        let d = pb::MessageIdData::decode(Bytes::copy_from_slice(data))
            .map_err(|e| Error::invalid(format!("not a serialized message id: {e}")))?;
        Ok(MessageId::from_proto(&d))
    }
}

impl PartialEq for MessageId {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for MessageId {}

impl Hash for MessageId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

impl PartialOrd for MessageId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MessageId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl std::fmt::Display for MessageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "({},{},{},{})",
            self.ledger_id, self.entry_id, self.partition, self.batch_index
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn order_and_equality_follow_java() {
        let a = MessageId::new(1, 2, -1, -1, 0);
        let b = MessageId::new(1, 2, -1, 0, 10);
        let c = MessageId::new(1, 3, -1, -1, 0);
        assert!(a < b && b < c);
        assert_eq!(
            MessageId::new(1, 2, 0, 3, 10),
            MessageId::new(1, 2, 0, 3, 0)
        );
        assert!(MessageId::EARLIEST < a && c < MessageId::LATEST);
    }

    #[test]
    fn earliest_round_trips() {
        let e = MessageId::deserialize(&MessageId::EARLIEST.serialize()).unwrap();
        assert_eq!(e, MessageId::EARLIEST);
        assert!(MessageId::deserialize(b"\xff\xff").is_err());
    }

    proptest! {
        #[test]
        fn serialize_round_trip(l in any::<i64>(), e in any::<i64>(), p in -1i32..1000,
                                bi in -1i32..5000, bs in 0i32..5000) {
            let id = MessageId::new(l, e, p, bi, bs);
            let back = MessageId::deserialize(&id.serialize()).unwrap();
            prop_assert_eq!(back, id);
            prop_assert_eq!(back.batch_size, bs);
        }
    }
}
