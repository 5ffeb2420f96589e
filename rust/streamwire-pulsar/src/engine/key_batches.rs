//! Key-based batching: a producer's messages grouped by key, so that every batch entry holds
//! the messages of ONE key.
//!
//! Why: a Key_Shared subscription dispatches a whole entry by a single key (the entry's
//! ordering key, else its partition key). A default batch mixes keys, so its messages all go
//! to the consumer of one key, and a consumer receives keys outside its hash range. With
//! key-based batching (Java's `BatcherBuilder.KEY_BASED`, the Python client's
//! `BatchingType.KeyBased`) every entry carries one key and is dispatched by it.
//!
//! The behaviour follows the Java client's `BatchMessageKeyBasedContainer`:
//! - messages are grouped by ordering key if set, else by partition key; messages with
//!   neither share one group;
//! - the limits (messages, bytes, delay) apply to the whole container, not to each group;
//! - when the container is flushed, every group goes out.
//!
//! One difference on purpose: the Java client numbers messages as they arrive and sends the
//! groups sorted by their first sequence id, so with interleaved keys a later entry may
//! start below an earlier entry's highest id. Our entries carry their highest id (as default
//! batches do), which broker deduplication compares the next entry's first id with, so here
//! the container holds messages *without* sequence ids; the producer numbers them as it
//! drains the groups, one group after the other, and the ids rise across the entries sent.
//! (A message with a caller-given sequence id cannot be renumbered: the producer drains the
//! container before it and batches it only with neighbours of the same key.)
//!
//! Pure: time is an argument, and the container holds any item type (the actor's queued
//! messages; plain values in the tests).

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use streamwire_proto::pulsar::MessageMetadata;

use super::batcher::BatchConfig;
use super::message::OutgoingMessage;

/// How a batching producer groups messages into batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BatchingType {
    /// Messages in the order sent, whatever their keys (Java's `DEFAULT`).
    #[default]
    Default,
    /// One key per batch (Java's `KEY_BASED`).
    KeyBased,
}

/// The key a message is grouped by, and that its batch entry is dispatched by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GroupKey {
    /// Neither an ordering key nor a partition key.
    Unkeyed,
    /// The partition key (`b64`: it is base64 text of binary key bytes).
    Partition { key: String, b64: bool },
    /// The ordering key, which overrides the partition key for dispatch.
    Ordering(Bytes),
}

impl GroupKey {
    /// The group of `msg`: its ordering key if set, else its partition key.
    pub fn of(msg: &OutgoingMessage) -> GroupKey {
        match (&msg.ordering_key, &msg.key) {
            (Some(k), _) => GroupKey::Ordering(k.clone()),
            (None, Some(k)) => GroupKey::Partition {
                key: k.clone(),
                b64: msg.partition_key_b64,
            },
            (None, None) => GroupKey::Unkeyed,
        }
    }

    /// Put the key on a batch entry's metadata: the broker's Key_Shared dispatcher reads the
    /// entry's keys, not those of the messages inside (as the Java client, which copies the
    /// first message's keys).
    pub fn apply(&self, md: &mut MessageMetadata) {
        match self {
            GroupKey::Unkeyed => {}
            GroupKey::Partition { key, b64 } => {
                md.partition_key = Some(key.clone());
                md.partition_key_b64_encoded = b64.then_some(true);
            }
            GroupKey::Ordering(k) => md.ordering_key = Some(k.clone()),
        }
    }
}

/// Messages waiting for a key-based flush, grouped by key in the order each key first came.
#[derive(Debug)]
pub struct KeyedContainer<T> {
    config: BatchConfig,
    /// The groups, in order of their first message; each group's items in arrival order.
    groups: Vec<(GroupKey, Vec<T>)>,
    /// Where each key's group is in `groups`.
    index: HashMap<GroupKey, usize>,
    messages: u32,
    bytes: usize,
    opened_at: Option<Instant>,
}

impl<T> KeyedContainer<T> {
    /// An empty container with the producer's batch limits (a `max_messages` of 0 is 1).
    pub fn new(mut config: BatchConfig) -> Self {
        config.max_messages = config.max_messages.max(1);
        Self {
            config,
            groups: Vec::new(),
            index: HashMap::new(),
            messages: 0,
            bytes: 0,
            opened_at: None,
        }
    }

    /// No message is waiting.
    pub fn is_empty(&self) -> bool {
        self.messages == 0
    }

    /// Messages waiting, over all keys.
    pub fn len(&self) -> u32 {
        self.messages
    }

    /// Payload bytes waiting, over all keys.
    pub fn size_bytes(&self) -> usize {
        self.bytes
    }

    /// Keys waiting.
    pub fn keys(&self) -> usize {
        self.groups.len()
    }

    /// When the container must be flushed (first message + `max_delay`); `None` if empty.
    pub fn deadline(&self) -> Option<Instant> {
        self.opened_at
            .map(|t| t.checked_add(self.config.max_delay).unwrap_or(t))
    }

    /// Add `item` (a message of `payload_len` bytes) to the group of `key` at `now`. True
    /// when the container has reached a limit: flush it now. The byte count is of payloads,
    /// as the Java client's; each batch the groups become still keeps the exact serialized
    /// limit, since the batch builder cuts a group that would exceed it.
    pub fn add(&mut self, key: GroupKey, payload_len: usize, item: T, now: Instant) -> bool {
        if self.messages == 0 {
            self.opened_at = Some(now);
        }
        match self.index.get(&key) {
            Some(&i) => self.groups[i].1.push(item),
            None => {
                self.index.insert(key.clone(), self.groups.len());
                self.groups.push((key, vec![item]));
            }
        }
        self.messages += 1;
        self.bytes = self.bytes.saturating_add(payload_len);
        self.messages >= self.config.max_messages || self.bytes >= self.config.max_bytes
    }

    /// Take every group, in the order of their first message (so the oldest waiting message
    /// goes first), each group's items in arrival order. Empties the container.
    pub fn drain(&mut self) -> Vec<(GroupKey, Vec<T>)> {
        self.index.clear();
        self.messages = 0;
        self.bytes = 0;
        self.opened_at = None;
        std::mem::take(&mut self.groups)
    }
}

/// Whether a message of group `next` must close the batch being built (of group `open`,
/// `None` when no batch is open) before it joins: a batch holds one key.
pub fn closes_open_batch(open: Option<&GroupKey>, next: &GroupKey) -> bool {
    open.is_some_and(|k| k != next)
}

#[cfg(test)]
mod tests {
    use super::super::batch_format::BatchIter;
    use super::super::batcher::{AddOutcome, BatchBuilder, BatchToSend};
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn keyed(key: Option<&str>, ordering: Option<&str>) -> OutgoingMessage {
        let mut m = OutgoingMessage::new(&b"v"[..], 0);
        m.key = key.map(str::to_owned);
        m.ordering_key = ordering.map(|o| Bytes::copy_from_slice(o.as_bytes()));
        m
    }

    #[test]
    fn groups_by_ordering_key_then_partition_key() {
        assert_eq!(GroupKey::of(&keyed(None, None)), GroupKey::Unkeyed);
        assert_eq!(
            GroupKey::of(&keyed(Some("a"), None)),
            GroupKey::Partition {
                key: "a".into(),
                b64: false
            }
        );
        // The ordering key wins over the partition key.
        assert_eq!(
            GroupKey::of(&keyed(Some("a"), Some("o"))),
            GroupKey::Ordering(Bytes::from_static(b"o"))
        );
        assert_eq!(
            GroupKey::of(&keyed(Some("b"), Some("o"))),
            GroupKey::of(&keyed(None, Some("o")))
        );
        let mut b64 = keyed(Some("YQ=="), None);
        b64.partition_key_b64 = true;
        let mut md = MessageMetadata::default();
        GroupKey::of(&b64).apply(&mut md);
        assert_eq!(
            (md.partition_key.as_deref(), md.partition_key_b64_encoded),
            (Some("YQ=="), Some(true))
        );
        let mut md = MessageMetadata::default();
        GroupKey::of(&keyed(Some("a"), Some("o"))).apply(&mut md);
        assert_eq!(md.ordering_key.as_deref(), Some(&b"o"[..]));
        let mut md = MessageMetadata::default();
        GroupKey::Unkeyed.apply(&mut md);
        assert_eq!(md, MessageMetadata::default());
    }

    #[test]
    fn limits_apply_to_the_whole_container() {
        let mut c = KeyedContainer::new(BatchConfig {
            max_messages: 3,
            max_bytes: 1000,
            max_delay: Duration::from_millis(10),
        });
        let t0 = Instant::now();
        assert_eq!(c.deadline(), None);
        assert!(!c.add(GroupKey::Unkeyed, 10, 1, t0));
        assert!(!c.add(GroupKey::Ordering(Bytes::from_static(b"x")), 10, 2, t0));
        assert_eq!(c.deadline(), Some(t0 + Duration::from_millis(10)));
        // The third message fills the container although each key holds fewer.
        assert!(c.add(GroupKey::Unkeyed, 10, 3, t0 + Duration::from_millis(5)));
        assert_eq!((c.len(), c.keys(), c.size_bytes()), (3, 2, 30));
        let groups = c.drain();
        assert_eq!(
            groups,
            vec![
                (GroupKey::Unkeyed, vec![1, 3]),
                (GroupKey::Ordering(Bytes::from_static(b"x")), vec![2]),
            ]
        );
        assert!(c.is_empty() && c.deadline().is_none() && c.drain().is_empty());
        // Bytes count over keys too.
        let mut c = KeyedContainer::new(BatchConfig {
            max_messages: 100,
            max_bytes: 100,
            max_delay: Duration::ZERO,
        });
        assert!(!c.add(GroupKey::Unkeyed, 60, (), t0));
        assert!(c.add(GroupKey::Ordering(Bytes::new()), 40, (), t0));
    }

    #[test]
    fn open_batch_closes_on_another_key() {
        let a = GroupKey::Partition {
            key: "a".into(),
            b64: false,
        };
        let b64a = GroupKey::Partition {
            key: "a".into(),
            b64: true,
        };
        assert!(!closes_open_batch(None, &a));
        assert!(!closes_open_batch(Some(&a), &a));
        assert!(closes_open_batch(Some(&a), &b64a));
        assert!(closes_open_batch(Some(&GroupKey::Unkeyed), &a));
    }

    /// A message of the model: which of a few keys (or none), as partition or ordering key,
    /// its payload size, and whether the producer flushes right after it.
    #[derive(Debug, Clone)]
    struct M {
        key: Option<u8>,
        ordering: bool,
        size: usize,
        flush_after: bool,
    }

    fn model_msg(keys: u8) -> impl Strategy<Value = M> {
        (
            proptest::option::weighted(0.9, 0..keys),
            proptest::bool::weighted(0.3),
            0usize..300,
            proptest::bool::weighted(0.05),
        )
            .prop_map(|(key, ordering, size, flush_after)| M {
                key,
                ordering,
                size,
                flush_after,
            })
    }

    /// The actor's drain, modelled: groups in order, numbered as they go, through one batch
    /// builder that is closed whenever the next message is of another key (and when a limit
    /// says so), and at the end. Returns the batches sent.
    fn drain_through_builder(
        groups: Vec<(GroupKey, Vec<OutgoingMessage>)>,
        builder: &mut BatchBuilder,
        next_seq: &mut u64,
        now: Instant,
        out: &mut Vec<BatchToSend>,
    ) {
        let mut open: Option<GroupKey> = None;
        for (key, items) in groups {
            for mut m in items {
                m.sequence_id = *next_seq;
                *next_seq += 1;
                if closes_open_batch(open.as_ref(), &key) {
                    out.extend(builder.take());
                }
                open = Some(key.clone());
                match builder.add(m, now) {
                    AddOutcome::Added => {}
                    AddOutcome::AddedBatchFull => out.extend(builder.take()),
                    AddOutcome::DoesNotFit(m) => {
                        out.extend(builder.take());
                        if matches!(builder.add(m, now), AddOutcome::AddedBatchFull) {
                            out.extend(builder.take());
                        }
                    }
                    AddOutcome::TooLargeForBatch(m) => {
                        out.extend(builder.take());
                        // Sent alone: model it as a batch of one.
                        let mut solo = BatchBuilder::new(BatchConfig {
                            max_bytes: usize::MAX,
                            ..BatchConfig::default()
                        });
                        solo.add(m, now);
                        out.extend(solo.take());
                    }
                }
            }
        }
        out.extend(builder.take());
    }

    proptest! {
        /// Through the container and the builder: every batch holds one key; sequence ids
        /// rise across all batches sent (what deduplication needs); each key's messages keep
        /// their order; nothing is lost or sent twice; the container never holds more than
        /// its limits allow.
        #[test]
        fn one_key_per_batch_ids_rise_nothing_lost(
            keys in 1u8..20,
            max_messages in 1u32..30,
            max_bytes in 1usize..3_000,
            msgs in proptest::collection::vec(model_msg(20), 0..300),
        ) {
            let config = BatchConfig { max_messages, max_bytes, max_delay: Duration::from_millis(1) };
            let mut container: KeyedContainer<OutgoingMessage> = KeyedContainer::new(config.clone());
            let mut builder = BatchBuilder::new(config);
            let now = Instant::now();
            let mut next_seq = 0u64;
            let mut batches = Vec::new();
            for (i, m) in msgs.iter().enumerate() {
                let name = m.key.map(|k| format!("k{}", k % keys));
                let mut out = OutgoingMessage::new(format!("{i:05}").repeat(m.size / 5 + 1), 0);
                if m.ordering {
                    out.ordering_key = name.map(Bytes::from);
                } else {
                    out.key = name;
                }
                let full = container.add(GroupKey::of(&out), out.payload.len(), out, now);
                prop_assert!(container.len() <= max_messages);
                if full || m.flush_after {
                    let groups = container.drain();
                    drain_through_builder(groups, &mut builder, &mut next_seq, now, &mut batches);
                }
            }
            let groups = container.drain();
            drain_through_builder(groups, &mut builder, &mut next_seq, now, &mut batches);

            let mut all_ids = Vec::new();
            let mut per_key: HashMap<GroupKey, Vec<usize>> = HashMap::new();
            for b in batches {
                let decoded: Vec<_> = BatchIter::new(b.payload, b.num_messages)
                    .map(|r| r.unwrap())
                    .collect();
                let first = &decoded[0].0;
                let key_of = |s: &streamwire_proto::pulsar::SingleMessageMetadata| {
                    let mut m = OutgoingMessage::new(Bytes::new(), 0);
                    m.key = s.partition_key.clone();
                    m.ordering_key = s.ordering_key.clone();
                    GroupKey::of(&m)
                };
                let key = key_of(first);
                for (meta, payload) in &decoded {
                    prop_assert_eq!(key_of(meta), key.clone(), "one key per batch");
                    all_ids.push(meta.sequence_id.unwrap());
                    let idx: usize = std::str::from_utf8(&payload[..5]).unwrap().parse().unwrap();
                    per_key.entry(key.clone()).or_default().push(idx);
                }
                prop_assert_eq!(decoded.first().unwrap().0.sequence_id, Some(b.first_sequence_id));
                prop_assert_eq!(decoded.last().unwrap().0.sequence_id, Some(b.last_sequence_id));
            }
            // Ids rise across the batches, in the order sent, with no gap or repeat.
            prop_assert_eq!(all_ids, (0..msgs.len() as u64).collect::<Vec<_>>());
            // Each key's messages in the order they were sent; all of them, once.
            let mut seen: Vec<usize> = Vec::new();
            for idxs in per_key.values() {
                prop_assert!(idxs.windows(2).all(|w| w[0] < w[1]), "per-key order");
                seen.extend(idxs);
            }
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..msgs.len()).collect::<Vec<_>>());
        }
    }
}
