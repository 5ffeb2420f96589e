//! How a consumer subscribes: its configuration and the checks made before anything is
//! sent (pure; the handle in `mod.rs` only reads it).

use std::time::Duration;

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::message_id::MessageId;
use crate::protocol::pb;

use super::{dlq, InitialPosition, StartFilter, SubType};

/// How a consumer subscribes.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    pub subscription: String,
    pub sub_type: SubType,
    pub initial_position: InitialPosition,
    pub consumer_name: Option<String>,
    pub receiver_queue_size: u32,
    /// Acks are sent at most this long after they are made (0: at once).
    pub ack_group_time: Duration,
    /// Acks are sent as soon as this many are waiting.
    pub ack_group_max: usize,
    pub nack_delay: Duration,
    pub ack_timeout: Option<Duration>,
    pub batch_index_ack: bool,
    pub read_compacted: bool,
    pub replicate_subscription_state: bool,
    /// False for readers: the subscription disappears with the consumer.
    pub durable: bool,
    /// Readers: where to start (earliest / latest are plain ids too).
    pub start: Option<StartFilter>,
    /// Chunked messages assembled at once (0: no limit); a new one evicts the oldest.
    pub max_pending_chunked_messages: usize,
    /// Incomplete chunked messages older than this are dropped and their chunks acked.
    pub expire_incomplete_chunked: Duration,
    /// Send messages redelivered too often to a dead-letter topic (shared subscriptions).
    pub dead_letter: Option<dlq::DeadLetterPolicy>,
    /// Also subscribe to the retry-letter topic, for `reconsume_later` (Java's `enableRetry`).
    pub retry_enable: bool,
    /// How a Key_Shared subscription spreads keys (`None`: the broker's default, auto split).
    pub key_shared: Option<KeySharedPolicy>,
    /// Key_Shared: let the broker deliver a key's new messages to a consumer that just took
    /// the key over while an earlier owner still holds unacknowledged ones of it (Java's
    /// `KeySharedPolicy.setAllowOutOfOrderDelivery`). The broker keeps one setting per
    /// subscription and refuses a consumer whose setting differs from the connected ones'.
    pub allow_out_of_order_delivery: bool,
    /// Pattern subscriptions: which topics of the namespace are listed (persistent ones, as
    /// Java's default `RegexSubscriptionMode.PersistentOnly`, non-persistent ones, or both).
    pub regex_mode: pb::command_get_topics_of_namespace::Mode,
    /// The schema the consumer reads with, checked by the broker against the topic's.
    pub schema: Option<pb::Schema>,
    /// End-to-end encryption: the key reader and what to do with what cannot be decrypted.
    pub crypto: crate::crypto::ConsumerCrypto,
    /// Partitioned topics subscribed by name: how often to ask whether they gained
    /// partitions, which are then subscribed too (Java's `autoUpdatePartitionsInterval`, 60 s
    /// by default); zero: never. Pattern subscriptions find new partitions at each
    /// rediscovery instead.
    pub auto_update_partitions: Duration,
}

/// Key_Shared hash-range assignment, as Java's `KeySharedPolicy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySharedPolicy {
    /// The broker splits the hash space among the consumers.
    AutoSplit,
    /// This consumer takes exactly these inclusive ranges of the 0..=65535 hash space.
    Sticky(Vec<(i32, i32)>),
}

impl KeySharedPolicy {
    /// Size of the key hash space (Java's `KeySharedPolicy.DEFAULT_HASH_RANGE_SIZE`).
    pub const HASH_RANGE_SIZE: i32 = 65_536;

    /// Ranges must be within the hash space, non-empty, and not overlap.
    pub fn validate(&self) -> Result<()> {
        let KeySharedPolicy::Sticky(ranges) = self else {
            return Ok(());
        };
        if ranges.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                "sticky key_shared_policy needs ranges",
            ));
        }
        let mut sorted = ranges.clone();
        sorted.sort_unstable();
        for (i, &(a, b)) in sorted.iter().enumerate() {
            if a < 0 || b < a || b >= Self::HASH_RANGE_SIZE {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("key_shared_policy range ({a}, {b}) must satisfy 0 <= start <= end <= 65535"),
                ));
            }
            if i > 0 && a <= sorted[i - 1].1 {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "key_shared_policy ranges {:?} and ({a}, {b}) overlap",
                        sorted[i - 1]
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn to_proto(&self, allow_out_of_order_delivery: bool) -> pb::KeySharedMeta {
        // Sent only when set: a broker older than the field reads an absent one as false.
        let allow = allow_out_of_order_delivery.then_some(true);
        match self {
            KeySharedPolicy::AutoSplit => pb::KeySharedMeta {
                key_shared_mode: pb::KeySharedMode::AutoSplit as i32,
                allow_out_of_order_delivery: allow,
                ..Default::default()
            },
            KeySharedPolicy::Sticky(r) => pb::KeySharedMeta {
                key_shared_mode: pb::KeySharedMode::Sticky as i32,
                hash_ranges: r
                    .iter()
                    .map(|&(start, end)| pb::IntRange { start, end })
                    .collect(),
                allow_out_of_order_delivery: allow,
            },
        }
    }
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            subscription: String::new(),
            sub_type: SubType::Exclusive,
            initial_position: InitialPosition::Latest,
            consumer_name: None,
            receiver_queue_size: 1000,
            ack_group_time: Duration::from_millis(100),
            ack_group_max: 1000,
            nack_delay: Duration::from_secs(60),
            ack_timeout: None,
            batch_index_ack: false,
            read_compacted: false,
            replicate_subscription_state: false,
            durable: true,
            start: None,
            max_pending_chunked_messages: 10,
            expire_incomplete_chunked: Duration::from_secs(60),
            dead_letter: None,
            retry_enable: false,
            key_shared: None,
            allow_out_of_order_delivery: false,
            regex_mode: pb::command_get_topics_of_namespace::Mode::Persistent,
            schema: None,
            crypto: crate::crypto::ConsumerCrypto::default(),
            auto_update_partitions: Duration::from_secs(60),
        }
    }
}

impl ConsumerConfig {
    /// The configuration of partitions a topic gained after this consumer subscribed: from
    /// their earliest message. Everything in such a partition was written after the
    /// subscription began, and a consumer notices it only up to an interval later: starting
    /// at the latest message would lose what was sent in between. (On a durable
    /// subscription the broker already created the subscription on the new partitions when
    /// they were added, at their start, so this changes nothing there; it matters for
    /// readers, whose subscriptions are not durable.)
    pub(super) fn for_grown_partitions(&self) -> ConsumerConfig {
        ConsumerConfig {
            initial_position: InitialPosition::Earliest,
            start: self.start.map(|f| StartFilter {
                id: MessageId::EARLIEST,
                inclusive: f.inclusive,
            }),
            ..self.clone()
        }
    }

    pub(super) fn initial_position_id(&self) -> MessageId {
        match self.initial_position {
            InitialPosition::Earliest => MessageId::EARLIEST,
            InitialPosition::Latest => MessageId::LATEST,
        }
    }

    /// The KEY_SHARED metadata of the SUBSCRIBE command: the policy's, or auto split when
    /// only out-of-order delivery was asked for; `None` leaves the broker's default.
    pub(crate) fn key_shared_meta(&self) -> Option<pb::KeySharedMeta> {
        match (&self.key_shared, self.allow_out_of_order_delivery) {
            (Some(p), allow) => Some(p.to_proto(allow)),
            (None, true) => Some(KeySharedPolicy::AutoSplit.to_proto(true)),
            (None, false) => None,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.subscription.is_empty() {
            return Err(Error::new(ErrorKind::Config, "subscription name is empty"));
        }
        if self.receiver_queue_size == 0 {
            return Err(Error::new(
                ErrorKind::Config,
                "receiver_queue_size must be at least 1",
            ));
        }
        if let Some(p) = &self.key_shared {
            if self.sub_type != SubType::KeyShared {
                return Err(Error::new(
                    ErrorKind::Config,
                    "key_shared_policy needs subscription_type=\"key_shared\"",
                ));
            }
            p.validate()?;
        }
        if self.allow_out_of_order_delivery && self.sub_type != SubType::KeyShared {
            return Err(Error::new(
                ErrorKind::Config,
                "allow_out_of_order_delivery needs subscription_type=\"key_shared\"",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_shared_policy_ranges() {
        let ok = KeySharedPolicy::Sticky(vec![(32768, 65535), (0, 10)]);
        assert!(ok.validate().is_ok());
        let meta = ok.to_proto(false);
        assert_eq!(meta.key_shared_mode(), pb::KeySharedMode::Sticky);
        assert_eq!(meta.hash_ranges.len(), 2);
        assert_eq!(meta.allow_out_of_order_delivery, None);
        for bad in [
            vec![],
            vec![(0, 10), (10, 20)],
            vec![(5, 4)],
            vec![(0, 65536)],
        ] {
            assert!(KeySharedPolicy::Sticky(bad).validate().is_err());
        }
        let cfg = ConsumerConfig {
            subscription: "s".into(),
            key_shared: Some(KeySharedPolicy::AutoSplit),
            ..ConsumerConfig::default()
        };
        assert!(cfg.validate().is_err(), "needs a key_shared subscription");
    }

    #[test]
    fn out_of_order_delivery_rides_on_the_key_shared_meta() {
        let mut cfg = ConsumerConfig {
            subscription: "s".into(),
            sub_type: SubType::KeyShared,
            ..ConsumerConfig::default()
        };
        assert_eq!(
            cfg.key_shared_meta(),
            None,
            "the broker's default: no metadata"
        );
        cfg.allow_out_of_order_delivery = true;
        let meta = cfg.key_shared_meta().unwrap();
        assert_eq!(meta.key_shared_mode(), pb::KeySharedMode::AutoSplit);
        assert_eq!(meta.allow_out_of_order_delivery, Some(true));
        cfg.key_shared = Some(KeySharedPolicy::Sticky(vec![(0, 99)]));
        let meta = cfg.key_shared_meta().unwrap();
        assert_eq!(meta.key_shared_mode(), pb::KeySharedMode::Sticky);
        assert_eq!(meta.allow_out_of_order_delivery, Some(true));
        assert!(cfg.validate().is_ok());
        cfg.key_shared = None;
        cfg.sub_type = SubType::Shared;
        assert!(cfg.validate().is_err(), "needs a key_shared subscription");
    }

    #[test]
    fn grown_partitions_start_at_their_earliest_message() {
        let cfg = ConsumerConfig {
            subscription: "s".into(),
            receiver_queue_size: 7,
            ..ConsumerConfig::default()
        };
        let grown = cfg.for_grown_partitions();
        assert_eq!(grown.initial_position, InitialPosition::Earliest);
        assert!(
            grown.start.is_none(),
            "a durable subscription has no start id"
        );
        assert_eq!(
            grown.receiver_queue_size, 7,
            "every other option is the consumer's"
        );
        let reader = ConsumerConfig {
            durable: false,
            start: Some(StartFilter {
                id: MessageId::LATEST,
                inclusive: true,
            }),
            ..cfg
        };
        let grown = reader.for_grown_partitions().start.unwrap();
        assert_eq!(grown.id, MessageId::EARLIEST);
        assert!(grown.inclusive);
    }
}
