//! Dead-letter policy, as the Java client implements it.
//!
//! A message delivered with `redelivery_count >= max_redeliver_count` is remembered; when it
//! is to be redelivered again (negative ack or ack timeout, shared subscriptions only) it is
//! published to the dead-letter topic instead and then acknowledged. One that arrives with a
//! count above the maximum goes to the dead-letter topic at once, without reaching the
//! application. The dead-letter copy carries the payload, key, ordering key, event time and
//! properties, plus `REAL_TOPIC` and `ORIGIN_MESSAGE_ID` (and the legacy
//! `ORIGIN_MESSAGE_IDY_TIME`). The default topic is `<topic>-<subscription>-DLQ`, where
//! `<topic>` is the (partition) topic the message came from, as in Java's `ConsumerImpl`. With
//! `initial_subscription_name` the dead-letter producer asks the broker to create that
//! subscription on the dead-letter topic, so the dead letters are kept for it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::{oneshot, OnceCell};

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::Result;

use super::entry::ReceivedMessage;
use super::Slot;
use crate::client::PulsarClient;
use crate::engine::message::OutgoingMessage;
use crate::message_id::MessageId;
use crate::producer::{Completion, EntryOptions, ProducerConfig, TopicProducer};
use crate::topic::TopicName;

/// When messages go to a dead-letter topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterPolicy {
    pub max_redeliver_count: u32,
    /// None: `<topic>-<subscription>-DLQ`.
    pub dead_letter_topic: Option<String>,
    /// A subscription the broker creates on the dead-letter topic together with the
    /// dead-letter producer (Java's `initialSubscriptionName`): without a subscription, a
    /// topic without retention keeps nothing for a subscriber that comes later.
    pub initial_subscription_name: Option<String>,
    /// Where `reconsume_later` sends messages (with `retry_enable`; None:
    /// `<topic>-<subscription>-RETRY`, see `retry::prepare`).
    pub retry_letter_topic: Option<String>,
}

pub const REAL_TOPIC: &str = "REAL_TOPIC";
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
/// The property name older Java clients wrote (sic); Java still writes both.
pub const LEGACY_ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_IDY_TIME";

/// One partition consumer's dead-letter state.
pub(crate) struct DeadLetter {
    pub max_redeliver_count: u32,
    pub topic: String,
    initial_subscription_name: Option<String>,
    producer: OnceCell<TopicProducer>,
    /// Delivered at the maximum count and not acknowledged: entry id -> its messages.
    possible: Mutex<HashMap<MessageId, Vec<ReceivedMessage>>>,
}

impl DeadLetter {
    pub fn new(policy: &DeadLetterPolicy, topic: &str, subscription: &str) -> DeadLetter {
        DeadLetter {
            max_redeliver_count: policy.max_redeliver_count,
            topic: policy
                .dead_letter_topic
                .clone()
                .unwrap_or_else(|| default_topic(topic, subscription)),
            initial_subscription_name: policy.initial_subscription_name.clone(),
            producer: OnceCell::new(),
            possible: Mutex::new(HashMap::new()),
        }
    }

    fn possible(&self) -> MutexGuard<'_, HashMap<MessageId, Vec<ReceivedMessage>>> {
        self.possible.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Remember messages delivered at (or above) the maximum count.
    pub fn remember(&self, msgs: &[ReceivedMessage]) {
        let mut p = self.possible();
        for m in msgs {
            p.entry(m.id.entry()).or_default().push(m.clone());
        }
    }

    /// Forget an acknowledged message.
    pub fn acked(&self, id: &MessageId) {
        let mut p = self.possible();
        if p.is_empty() {
            return;
        }
        let key = id.entry();
        if let Some(v) = p.get_mut(&key) {
            v.retain(|m| m.id != *id);
            if v.is_empty() || !id.is_batch() {
                p.remove(&key);
            }
        }
    }

    /// The remembered messages of these entries; the rest are returned for redelivery.
    pub fn take(&self, ids: Vec<MessageId>) -> (Vec<ReceivedMessage>, Vec<MessageId>) {
        let mut p = self.possible();
        if p.is_empty() {
            return (Vec::new(), ids);
        }
        let mut dead = Vec::new();
        let mut keep = Vec::new();
        for id in ids {
            match p.remove(&id.entry()) {
                Some(msgs) => dead.extend(msgs),
                None => keep.push(id),
            }
        }
        (dead, keep)
    }

    pub fn clear(&self) {
        self.possible().clear();
    }

    pub async fn close(&self) {
        if let Some(p) = self.producer.get() {
            let _ = p.close().await;
        }
    }
}

pub fn default_topic(topic: &str, subscription: &str) -> String {
    format!("{topic}-{subscription}-DLQ")
}

/// Java's `MessageId.toString()`: `ledger:entry:partition[:batch]`, and for a chunked
/// message `first;last`.
pub fn java_id_string(id: &MessageId) -> String {
    let last = if id.is_batch() {
        format!(
            "{}:{}:{}:{}",
            id.ledger_id, id.entry_id, id.partition, id.batch_index
        )
    } else {
        format!("{}:{}:{}", id.ledger_id, id.entry_id, id.partition)
    };
    match id.first_chunk {
        Some((l, e)) => format!("{l}:{e}:{};{last}", id.partition),
        None => last,
    }
}

/// The dead-letter copy of a message (properties sorted, as Java's `TreeMap`).
pub fn dead_letter_message(m: &ReceivedMessage) -> OutgoingMessage {
    let mut props: BTreeMap<String, String> = m.properties().iter().cloned().collect();
    let real = TopicName::parse(m.topic())
        .map(|t| t.base().to_string())
        .unwrap_or_else(|_| m.topic().to_string());
    let origin = java_id_string(&m.id);
    props.entry(REAL_TOPIC.to_owned()).or_insert(real);
    props
        .entry(LEGACY_ORIGIN_MESSAGE_ID.to_owned())
        .or_insert_with(|| origin.clone());
    props.entry(ORIGIN_MESSAGE_ID.to_owned()).or_insert(origin);
    let mut out = OutgoingMessage::new(m.payload.clone(), 0);
    out.key = m.key().map(str::to_owned);
    out.ordering_key = m.ordering_key().cloned();
    out.event_time = m.event_time();
    out.properties = props.into_iter().collect();
    out
}

async fn producer<'a>(client: &PulsarClient, dl: &'a DeadLetter) -> Result<&'a TopicProducer> {
    dl.producer
        .get_or_try_init(|| async {
            let config = ProducerConfig {
                batching: false,
                chunking: true,
                block_if_queue_full: false,
                initial_subscription_name: dl.initial_subscription_name.clone(),
                ..ProducerConfig::default()
            };
            let topic = TopicName::parse(&dl.topic)?;
            TopicProducer::create(client.clone(), topic, config, MemoryBudget::unlimited()).await
        })
        .await
}

/// Publish `msgs` to the slot's dead-letter topic and acknowledge each once written; a
/// message that could not be written is negatively acknowledged (redelivered later, when it
/// is tried again).
pub(crate) async fn send(client: PulsarClient, slot: Arc<Slot>, msgs: Vec<ReceivedMessage>) {
    let Some(dl) = slot.dead_letter.as_ref() else {
        return;
    };
    let p = producer(&client, dl).await;
    let mut waits = Vec::with_capacity(msgs.len());
    for m in msgs {
        let (tx, rx) = oneshot::channel();
        let sent = match &p {
            Ok(p) => {
                p.send(
                    dead_letter_message(&m),
                    false,
                    EntryOptions::default(),
                    Completion::Once(tx),
                )
                .await
            }
            Err(e) => Err(e.clone()),
        };
        waits.push((m.id, sent.is_ok().then_some(rx)));
    }
    for (id, rx) in waits {
        let ok = match rx {
            Some(rx) => matches!(rx.await, Ok(Ok(_))),
            None => false,
        };
        if ok {
            slot.acks().individual(id);
            slot.stats
                .dead_lettered
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            slot.metrics
                .add(streamwire_core::metrics::C::DeadLettered, 1);
        } else {
            slot.nacks().add(id, Instant::now());
        }
    }
    slot.queue.wake_actor.notify_one();
}

#[cfg(test)]
mod tests {
    use super::super::entry::{EntryInfo, Extras};
    use super::*;
    use bytes::Bytes;

    fn msg(id: MessageId) -> ReceivedMessage {
        ReceivedMessage {
            id,
            payload: Bytes::from_static(b"x"),
            sequence_id: 0,
            entry: Arc::new(EntryInfo {
                slot: 0,
                topic: Arc::from("persistent://public/default/t-partition-2"),
                publish_time: 1,
                producer_name: Arc::from("p"),
                redelivery_count: 3,
                schema_version: None,
            }),
            extras: Extras {
                key: Some("k".into()),
                ordering_key: None,
                properties: vec![
                    ("z".into(), "1".into()),
                    ("REAL_TOPIC".into(), "mine".into()),
                ],
                event_time: Some(5),
                null_value: false,
                encryption: None,
            }
            .boxed(),
        }
    }

    #[test]
    fn names_and_properties_follow_java() {
        assert_eq!(
            default_topic("persistent://public/default/t", "sub"),
            "persistent://public/default/t-sub-DLQ"
        );
        assert_eq!(java_id_string(&MessageId::new(1, 2, -1, -1, 0)), "1:2:-1");
        assert_eq!(java_id_string(&MessageId::new(1, 2, 3, 4, 5)), "1:2:3:4");
        let chunked =
            MessageId::new(1, 9, 0, -1, 0).with_first_chunk(&MessageId::new(1, 5, 0, -1, 0));
        assert_eq!(java_id_string(&chunked), "1:5:0;1:9:0");
        let out = dead_letter_message(&msg(MessageId::new(7, 8, 2, -1, 0)));
        let keys: Vec<&str> = out.properties.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "ORIGIN_MESSAGE_ID",
                "ORIGIN_MESSAGE_IDY_TIME",
                "REAL_TOPIC",
                "z"
            ]
        );
        // putIfAbsent: a property the message already had wins.
        assert_eq!(out.properties[2].1, "mine");
        assert_eq!(out.properties[0].1, "7:8:2");
        assert_eq!((out.key.as_deref(), out.event_time), (Some("k"), Some(5)));
    }

    #[test]
    fn remembered_messages_are_taken_once_and_forgotten_on_ack() {
        let dl = DeadLetter::new(
            &DeadLetterPolicy {
                max_redeliver_count: 3,
                dead_letter_topic: None,
                initial_subscription_name: None,
                retry_letter_topic: None,
            },
            "persistent://public/default/t",
            "s",
        );
        let a = MessageId::new(1, 1, -1, -1, 0);
        let b = MessageId::new(1, 2, -1, 0, 2);
        let b1 = MessageId::new(1, 2, -1, 1, 2);
        dl.remember(&[msg(a), msg(b), msg(b1)]);
        dl.acked(&b);
        let (dead, keep) = dl.take(vec![a, b1.entry(), MessageId::new(1, 3, -1, -1, 0)]);
        assert_eq!(dead.iter().map(|m| m.id).collect::<Vec<_>>(), vec![a, b1]);
        assert_eq!(keep, vec![MessageId::new(1, 3, -1, -1, 0)]);
        assert_eq!(dl.take(vec![a]).0.len(), 0);
        assert_eq!(dl.topic, "persistent://public/default/t-s-DLQ");
    }
}
