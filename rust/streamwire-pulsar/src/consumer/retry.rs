//! The retry-letter topic, as the Java client's `enableRetry` / `reconsumeLater`.
//!
//! A consumer subscribed with `retry_enable` also subscribes to its retry-letter topic
//! (default `<first topic>-<subscription>-RETRY`). `reconsume_later(message, delay)` publishes
//! a copy of the message there, delivered after `delay` (the broker's delayed delivery, so a
//! shared subscription is needed for the delay to hold), then acknowledges the original: the
//! consumer receives the copy again later, with `RECONSUMETIMES` counting the rounds. Once
//! that count passes the policy's `max_redeliver_count` (16 when no policy was given) the copy
//! goes to the dead-letter topic instead (default `<first topic>-<subscription>-DLQ`).
//!
//! The copy's properties are Java's: the message's own, then `REAL_TOPIC`, `REAL_SUBSCRIPTION`
//! and `ORIGIN_MESSAGE_ID` (and the legacy `ORIGIN_MESSAGE_IDY_TIME`) when absent, the caller's
//! extra properties, then `RECONSUMETIMES` and `DELAY_TIME` (milliseconds). The default topic
//! names are Java 4.0's; Java's fallback to the names of Pulsar 2.7 and older
//! (`<subscription>-RETRY` in the topic's namespace, when such a topic exists) is not made.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{oneshot, OnceCell};

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::{Error, ErrorKind, Result};

use super::dlq::{self, DeadLetterPolicy};
use super::entry::ReceivedMessage;
use super::{Consumer, ConsumerConfig};
use crate::client::PulsarClient;
use crate::engine::message::OutgoingMessage;
use crate::producer::{Completion, EntryOptions, ProducerConfig, TopicProducer};
use crate::topic::TopicName;

pub const RECONSUME_TIMES: &str = "RECONSUMETIMES";
/// The subscription that handed the message back (Java 4.0 writes it).
pub const REAL_SUBSCRIPTION: &str = "REAL_SUBSCRIPTION";
pub const DELAY_TIME: &str = "DELAY_TIME";
/// The dead-letter threshold when retry is enabled without a policy (Java's
/// `RetryMessageUtil.MAX_RECONSUMETIMES`).
pub const MAX_RECONSUME_TIMES: u32 = 16;

/// The producers of one consumer's `reconsume_later`, made on first use.
#[derive(Default)]
pub(crate) struct RetryProducers {
    retry: OnceCell<TopicProducer>,
    dead: OnceCell<TopicProducer>,
}

/// With `retry_enable`: fill in the policy's topics (Java's defaults, named after the first
/// topic) and return the topics to subscribe to, the retry-letter topic added. None: as given.
pub(crate) fn prepare(
    topics: &[TopicName],
    cfg: &mut ConsumerConfig,
) -> Result<Option<Vec<TopicName>>> {
    if !cfg.retry_enable {
        return Ok(None);
    }
    let first = topics[0].base().to_string();
    let sub = cfg.subscription.clone();
    let policy = cfg.dead_letter.get_or_insert(DeadLetterPolicy {
        max_redeliver_count: MAX_RECONSUME_TIMES,
        dead_letter_topic: None,
        initial_subscription_name: None,
        retry_letter_topic: None,
    });
    let retry = policy
        .retry_letter_topic
        .get_or_insert_with(|| format!("{first}-{sub}-RETRY"))
        .clone();
    policy
        .dead_letter_topic
        .get_or_insert_with(|| dlq::default_topic(&first, &sub));
    let retry = TopicName::parse(&retry)?;
    let mut all = topics.to_vec();
    if !all.contains(&retry) {
        all.push(retry);
    }
    Ok(Some(all))
}

/// The copy `reconsume_later` publishes, and whether it goes to the dead-letter topic (the
/// rounds so far passed `max_redeliver_count`).
pub fn retry_message(
    m: &ReceivedMessage,
    subscription: &str,
    delay: Duration,
    extra: &[(String, String)],
    max_redeliver_count: u32,
) -> (OutgoingMessage, bool) {
    let mut out = dlq::dead_letter_message(m);
    let mut props: BTreeMap<String, String> =
        std::mem::take(&mut out.properties).into_iter().collect();
    props
        .entry(REAL_SUBSCRIPTION.to_owned())
        .or_insert_with(|| subscription.to_owned());
    props.extend(extra.iter().cloned());
    let rounds = props
        .get(RECONSUME_TIMES)
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(1, |n| n.saturating_add(1));
    props.insert(RECONSUME_TIMES.to_owned(), rounds.to_string());
    props.insert(DELAY_TIME.to_owned(), delay.as_millis().to_string());
    out.properties = props.into_iter().collect();
    (out, rounds > max_redeliver_count)
}

async fn producer<'a>(
    client: &PulsarClient,
    cell: &'a OnceCell<TopicProducer>,
    topic: &str,
    initial_subscription_name: Option<String>,
) -> Result<&'a TopicProducer> {
    cell.get_or_try_init(|| async {
        // As the dead-letter producer: one message per entry (each carries its own delivery
        // time), chunks for large ones, and a full queue fails rather than blocks.
        let config = ProducerConfig {
            batching: false,
            chunking: true,
            block_if_queue_full: false,
            initial_subscription_name,
            ..ProducerConfig::default()
        };
        let topic = TopicName::parse(topic)?;
        TopicProducer::create(client.clone(), topic, config, MemoryBudget::unlimited()).await
    })
    .await
}

impl Consumer {
    /// Publish a copy of `m` to the retry-letter topic, delivered after `delay` (or to the
    /// dead-letter topic once it has come back too often), wait for its receipt, then
    /// acknowledge `m` (of slot `slot`). Nothing is acknowledged if the copy was not written.
    pub async fn reconsume_later(
        &self,
        slot: Option<u32>,
        m: &ReceivedMessage,
        delay: Duration,
        extra: Vec<(String, String)>,
    ) -> Result<()> {
        self.check_open()?;
        let cfg = &self.inner.cfg;
        let policy = match (&cfg.dead_letter, cfg.retry_enable) {
            (Some(p), true) => p,
            _ => {
                return Err(Error::new(
                    ErrorKind::Config,
                    "reconsume_later needs a consumer subscribed with retry_enable=True",
                ))
            }
        };
        let (msg, dead) = retry_message(
            m,
            &cfg.subscription,
            delay,
            &extra,
            policy.max_redeliver_count,
        );
        let (p, entry) = if dead {
            let topic = policy.dead_letter_topic.as_deref().unwrap_or_default();
            let init = policy.initial_subscription_name.clone();
            let p = producer(&self.inner.client, &self.inner.retry.dead, topic, init).await?;
            (p, EntryOptions::default())
        } else {
            let topic = policy.retry_letter_topic.as_deref().unwrap_or_default();
            let p = producer(&self.inner.client, &self.inner.retry.retry, topic, None).await?;
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let at = (!delay.is_zero()).then(|| (now + delay).as_millis() as i64);
            let entry = EntryOptions {
                deliver_at: at,
                ..EntryOptions::default()
            };
            (p, entry)
        };
        let (tx, rx) = oneshot::channel();
        p.send(msg, false, entry, Completion::Once(tx)).await?;
        rx.await
            .map_err(|_| Error::closed("retry-letter producer"))??;
        self.acknowledge(slot, m.id)
    }

    /// Close the retry producers (with the consumer).
    pub(crate) async fn close_retry(&self) {
        for cell in [&self.inner.retry.retry, &self.inner.retry.dead] {
            if let Some(p) = cell.get() {
                let _ = p.close().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::entry::{EntryInfo, Extras};
    use super::*;
    use crate::message_id::MessageId;
    use bytes::Bytes;
    use std::sync::Arc;

    fn msg(props: Vec<(String, String)>) -> ReceivedMessage {
        ReceivedMessage {
            id: MessageId::new(7, 8, -1, -1, 0),
            payload: Bytes::from_static(b"x"),
            sequence_id: 0,
            entry: Arc::new(EntryInfo {
                slot: 0,
                topic: Arc::from("persistent://public/default/t"),
                publish_time: 1,
                producer_name: Arc::from("p"),
                redelivery_count: 0,
                schema_version: None,
            }),
            extras: Extras {
                key: Some("k".into()),
                ordering_key: None,
                properties: props,
                event_time: None,
                null_value: false,
                encryption: None,
            }
            .boxed(),
        }
    }

    fn prop<'a>(m: &'a OutgoingMessage, k: &str) -> Option<&'a str> {
        m.properties
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn rounds_count_up_and_pass_to_the_dead_letter_topic_after_the_maximum() {
        let extra = vec![("why".to_owned(), "busy".to_owned())];
        let (first, dead) = retry_message(&msg(vec![]), "s", Duration::from_secs(2), &extra, 2);
        assert!(!dead);
        assert_eq!(prop(&first, RECONSUME_TIMES), Some("1"));
        assert_eq!(prop(&first, DELAY_TIME), Some("2000"));
        assert_eq!(prop(&first, "why"), Some("busy"));
        assert_eq!(prop(&first, REAL_SUBSCRIPTION), Some("s"));
        assert_eq!(
            prop(&first, dlq::REAL_TOPIC),
            Some("persistent://public/default/t")
        );
        assert_eq!(prop(&first, dlq::ORIGIN_MESSAGE_ID), Some("7:8:-1"));
        assert_eq!(first.key.as_deref(), Some("k"));
        // The copy comes back from the retry topic with its properties: the count goes on,
        // the original topic and id stay.
        let back = msg(first.properties.clone());
        let (second, dead) = retry_message(&back, "s", Duration::ZERO, &[], 2);
        assert!(!dead);
        assert_eq!(prop(&second, RECONSUME_TIMES), Some("2"));
        assert_eq!(prop(&second, dlq::ORIGIN_MESSAGE_ID), Some("7:8:-1"));
        let (third, dead) =
            retry_message(&msg(second.properties.clone()), "s", Duration::ZERO, &[], 2);
        assert!(dead);
        assert_eq!(prop(&third, RECONSUME_TIMES), Some("3"));
    }

    #[test]
    fn prepare_names_the_topics_after_the_first_and_adds_the_retry_topic() {
        let t = TopicName::parse("persistent://public/default/orders").unwrap();
        let mut cfg = ConsumerConfig {
            subscription: "s".into(),
            retry_enable: true,
            ..ConsumerConfig::default()
        };
        let all = prepare(std::slice::from_ref(&t), &mut cfg)
            .unwrap()
            .unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(
            all[1].to_string(),
            "persistent://public/default/orders-s-RETRY"
        );
        let p = cfg.dead_letter.unwrap();
        assert_eq!(p.max_redeliver_count, MAX_RECONSUME_TIMES);
        assert_eq!(
            p.dead_letter_topic.as_deref(),
            Some("persistent://public/default/orders-s-DLQ")
        );
        let mut off = ConsumerConfig::default();
        assert!(prepare(&[t], &mut off).unwrap().is_none());
    }
}
