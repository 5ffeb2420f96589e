//! The message a producer is asked to send, before batching or framing.
//!
//! Why `Bytes` everywhere: the payload handed over by the application (and ordering keys)
//! is reference-counted, so queuing, routing and retrying never copy it; the only copy is
//! the one into a batch buffer (or the frame, for an un-batched message).

use bytes::Bytes;

/// One message to publish.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutgoingMessage {
    /// The payload (empty for a null value, see `null_value`).
    pub payload: Bytes,
    /// Partition key: used for routing and compaction. Base64 text if `partition_key_b64`.
    pub key: Option<String>,
    /// The key holds base64 of binary key bytes (Java's `keyBytes`).
    pub partition_key_b64: bool,
    /// Ordering key for Key_Shared subscriptions (overrides the key for dispatch).
    pub ordering_key: Option<Bytes>,
    /// Application properties, in the order given.
    pub properties: Vec<(String, String)>,
    /// Application event time in milliseconds since the epoch (0 is treated as unset).
    pub event_time: Option<u64>,
    /// Producer-assigned sequence id (deduplication and receipts).
    pub sequence_id: u64,
    /// The message is a tombstone (null value) rather than an empty payload.
    pub null_value: bool,
    /// The partition the caller's own router chose (a partitioned topic's `message_router`,
    /// run in the binding on the caller's thread); None: the producer's routing decides.
    pub partition: Option<u32>,
}

impl OutgoingMessage {
    /// A message with `payload` and `sequence_id` and nothing else set.
    pub fn new(payload: impl Into<Bytes>, sequence_id: u64) -> Self {
        Self {
            payload: payload.into(),
            sequence_id,
            ..Self::default()
        }
    }

    /// Set the partition key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Set the ordering key.
    pub fn with_ordering_key(mut self, key: impl Into<Bytes>) -> Self {
        self.ordering_key = Some(key.into());
        self
    }

    /// Add a property.
    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.push((key.into(), value.into()));
        self
    }

    /// Set the event time (milliseconds since the epoch).
    pub fn with_event_time(mut self, event_time_ms: u64) -> Self {
        self.event_time = Some(event_time_ms);
        self
    }

    /// Payload length in bytes.
    pub fn payload_len(&self) -> usize {
        self.payload.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sets_fields_without_copying_payload() {
        let payload = Bytes::from_static(b"hello");
        let m = OutgoingMessage::new(payload.clone(), 7)
            .with_key("k")
            .with_ordering_key(Bytes::from_static(b"o"))
            .with_property("a", "b")
            .with_event_time(42);
        assert_eq!(m.payload.as_ptr(), payload.as_ptr());
        assert_eq!(m.key.as_deref(), Some("k"));
        assert_eq!(m.properties, vec![("a".to_owned(), "b".to_owned())]);
        assert_eq!(
            (m.event_time, m.sequence_id, m.payload_len()),
            (Some(42), 7, 5)
        );
        assert!(!m.null_value && !m.partition_key_b64);
    }
}
