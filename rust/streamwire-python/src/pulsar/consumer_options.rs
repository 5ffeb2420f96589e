//! `Client.subscribe` and `Client.create_reader`: every option checked once, in one
//! definition serving the blocking call and its awaitable `_a` form (`two_faces!`); opening
//! (`Plan::open`) is the only part that waits.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use streamwire_core::error::{Error, ErrorKind, Result as EResult};
use streamwire_core::runtime;
use streamwire_pulsar::consumer::dlq::DeadLetterPolicy;
use streamwire_pulsar::consumer::pattern::{namespace_of, TopicFilter};
use streamwire_pulsar::consumer::{
    Consumer as Engine, ConsumerConfig, InitialPosition, KeySharedPolicy, StartFilter, SubType,
};
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::namespace::TopicsMode;
use streamwire_pulsar::topic::TopicName;

use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::pulsar::client::Client;
use crate::pulsar::consumer::{Consumer, Handle, Reader};
use crate::pulsar::listener::{Adopt, Listening};
use crate::pulsar::message_id::PyMessageId;
use crate::pulsar::schema::{codec_of, Codec, Typed};
use crate::pulsar::table_view::partitions_interval;

fn config_err(msg: String) -> PyErr {
    to_py(Error::new(ErrorKind::Config, msg))
}

fn non_negative(name: &str, secs: f64) -> PyResult<Duration> {
    if secs.is_finite() && secs >= 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(config_err(format!(
            "{name} must be a non-negative number of seconds, got {secs}"
        )))
    }
}

fn queue_size(n: i64) -> PyResult<u32> {
    if (1..=1_000_000).contains(&n) {
        Ok(n as u32)
    } else {
        Err(config_err(format!(
            "receiver_queue_size must be between 1 and 1000000, got {n}"
        )))
    }
}

/// What `subscribe` was given: topics by name, or a compiled regex.
enum Topics {
    Names(Vec<TopicName>),
    Pattern {
        namespace: String,
        label: String,
        filter: TopicFilter,
    },
}

/// A filter asking the caller's compiled pattern, as Java's `TopicList.filterTopics`: the
/// domain (`persistent://`) is taken off both the pattern and the names, and a pattern with
/// no `/` is matched against the bare topic name.
fn pattern_filter(py: Python<'_>, topic: &Bound<'_, PyAny>) -> PyResult<TopicFilter> {
    let re = py.import("re")?;
    let pattern: String = topic.getattr("pattern")?.extract()?;
    let short: String = re
        .call_method1("sub", (r"^\^?(non-)?persistent:(\\?/){2}", "", &pattern))?
        .extract()?;
    let local_only = !short.replace('\\', "").contains('/');
    let compiled: Py<PyAny> = re
        .call_method1("compile", (&short, topic.getattr("flags")?))?
        .unbind();
    Ok(Arc::new(move |names: &[String]| {
        Python::try_attach(|py| -> PyResult<Vec<bool>> {
            let c = compiled.bind(py);
            names
                .iter()
                .map(|n| {
                    let rest = n.split_once("://").map_or(n.as_str(), |(_, r)| r);
                    let subject = if local_only {
                        rest.rsplit('/').next().unwrap_or(rest)
                    } else {
                        rest
                    };
                    Ok(!c.call_method1("fullmatch", (subject,))?.is_none())
                })
                .collect()
        })
        .and_then(Result::ok)
    }))
}

/// Topics named by a str, a list of str, or a compiled regex.
fn topics_arg(py: Python<'_>, topic: &Bound<'_, PyAny>) -> PyResult<Topics> {
    if let Ok(s) = topic.extract::<String>() {
        return Ok(Topics::Names(vec![TopicName::parse(&s).py_err()?]));
    }
    let re = py.import("re")?.getattr("Pattern")?;
    if topic.is_instance(&re)? {
        let pattern: String = topic.getattr("pattern")?.extract()?;
        return Ok(Topics::Pattern {
            namespace: namespace_of(&pattern).py_err()?,
            filter: pattern_filter(py, topic)?,
            label: pattern,
        });
    }
    if topic.is_instance_of::<PyList>() || topic.is_instance_of::<PyTuple>() {
        let names: Vec<String> = topic.extract()?;
        if names.is_empty() {
            return Err(to_py(Error::invalid("the list of topics is empty")));
        }
        return names
            .iter()
            .map(|n| TopicName::parse(n).py_err())
            .collect::<PyResult<_>>()
            .map(Topics::Names);
    }
    Err(PyTypeError::new_err(
        "topic must be a str, a list of str, or a compiled re.Pattern",
    ))
}

/// `dead_letter_policy`: a mapping with `max_redeliver_count` (required, >= 1) and
/// optionally `dead_letter_topic` and `initial_subscription_name`.
fn dead_letter_arg(obj: &Bound<'_, PyAny>) -> PyResult<DeadLetterPolicy> {
    let items = obj.call_method0("items").map_err(|_| {
        PyTypeError::new_err("dead_letter_policy must be a mapping with max_redeliver_count")
    })?;
    let mut policy = DeadLetterPolicy {
        max_redeliver_count: 0,
        dead_letter_topic: None,
        initial_subscription_name: None,
        retry_letter_topic: None,
    };
    let mut have_max = false;
    for item in items.try_iter()? {
        let (k, v): (String, Bound<'_, PyAny>) = item?.extract()?;
        match k.as_str() {
            "max_redeliver_count" => {
                let n: i64 = v.extract()?;
                if !(1..=i64::from(i32::MAX)).contains(&n) {
                    return Err(config_err(format!(
                        "dead_letter_policy max_redeliver_count must be at least 1, got {n}"
                    )));
                }
                policy.max_redeliver_count = n as u32;
                have_max = true;
            }
            "dead_letter_topic" => {
                let t: Option<String> = v.extract()?;
                if let Some(t) = &t {
                    TopicName::parse(t).py_err()?;
                }
                policy.dead_letter_topic = t;
            }
            "retry_letter_topic" => {
                let t: Option<String> = v.extract()?;
                if let Some(t) = &t {
                    TopicName::parse(t).py_err()?;
                }
                policy.retry_letter_topic = t;
            }
            "initial_subscription_name" => {
                let n: Option<String> = v.extract()?;
                if n.as_deref() == Some("") {
                    return Err(config_err(
                        "dead_letter_policy initial_subscription_name must not be empty".into(),
                    ));
                }
                policy.initial_subscription_name = n;
            }
            other => {
                return Err(config_err(format!(
                    "unknown dead_letter_policy key {other:?}; use max_redeliver_count, \
                     dead_letter_topic, retry_letter_topic and initial_subscription_name"
                )))
            }
        }
    }
    if !have_max {
        return Err(config_err(
            "dead_letter_policy needs max_redeliver_count".into(),
        ));
    }
    Ok(policy)
}

/// `"auto_split"`, or a dict with `"sticky"` (inclusive hash ranges; without it: auto split)
/// and/or `"allow_out_of_order_delivery"` (a bool): the policy and the out-of-order flag.
fn key_shared_arg(obj: &Bound<'_, PyAny>) -> PyResult<(KeySharedPolicy, bool)> {
    const HINT: &str = "key_shared_policy must be None, \"auto_split\" or a dict with \"sticky\": \
                        [(start, end), ...] and/or \"allow_out_of_order_delivery\": bool";
    if let Ok(s) = obj.extract::<String>() {
        return match s.as_str() {
            "auto_split" => Ok((KeySharedPolicy::AutoSplit, false)),
            _ => Err(config_err(format!("{HINT}, got {s:?}"))),
        };
    }
    let d = obj
        .cast::<PyDict>()
        .map_err(|_| config_err(HINT.to_owned()))?;
    if d.is_empty() {
        return Err(config_err(format!("{HINT}, got an empty dict")));
    }
    let mut policy = KeySharedPolicy::AutoSplit;
    let mut allow = false;
    for (k, v) in d.iter() {
        let k: String = k.extract().map_err(|_| config_err(HINT.to_owned()))?;
        match k.as_str() {
            "sticky" => {
                let ranges = v
                    .extract::<Vec<(i32, i32)>>()
                    .map_err(|_| config_err(HINT.to_owned()))?;
                policy = KeySharedPolicy::Sticky(ranges);
            }
            "allow_out_of_order_delivery" => {
                // A bool only: 0/1 or a string would more likely be a mistake than a choice.
                allow =
                    v.cast::<pyo3::types::PyBool>()
                        .map_err(|_| {
                            config_err(format!(
                            "key_shared_policy allow_out_of_order_delivery must be a bool, got {}",
                            v.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                        ))
                        })?
                        .is_true();
            }
            other => {
                return Err(config_err(format!(
                    "unknown key_shared_policy key {other:?}; use \"sticky\" and \
                     \"allow_out_of_order_delivery\""
                )))
            }
        }
    }
    policy.validate().py_err()?;
    Ok((policy, allow))
}

/// `regex_subscription_mode`: the kinds of topics a pattern subscription lists.
fn regex_mode(s: &str) -> PyResult<TopicsMode> {
    Ok(match s {
        "persistent" => TopicsMode::Persistent,
        "non_persistent" => TopicsMode::NonPersistent,
        "all" => TopicsMode::All,
        _ => {
            return Err(config_err(format!(
                "regex_subscription_mode must be \"persistent\", \"non_persistent\" or \"all\"; \
                 got {s:?}"
            )))
        }
    })
}

fn sub_type(s: &str) -> PyResult<SubType> {
    Ok(match s {
        "exclusive" => SubType::Exclusive,
        "shared" => SubType::Shared,
        "failover" => SubType::Failover,
        "key_shared" => SubType::KeyShared,
        _ => {
            return Err(config_err(format!(
            "subscription_type must be one of exclusive, shared, failover, key_shared; got {s:?}"
        )))
        }
    })
}

crate::two_faces! {
    impl Client {
        /// Subscribe to a topic, a list of topics or a regex pattern.
        ///
        /// Args:
        ///     topic: a topic name, a list of names, or a compiled `re.Pattern` matched against
        ///         the topics of its namespace (new matches are picked up every
        ///         `pattern_auto_discovery_period`).
        ///     subscription_name: the subscription (created if it does not exist).
        ///     subscription_type: `"exclusive"`, `"shared"`, `"failover"` or `"key_shared"`.
        ///         Default `"exclusive"`.
        ///     initial_position: where a new subscription starts: `"latest"` or `"earliest"`.
        ///         Default `"latest"`.
        ///     receiver_queue_size: messages fetched ahead per partition (1 to 1,000,000).
        ///         Default 1000.
        ///     consumer_name: a name for this consumer. Default None: a random name.
        ///     ack_grouping_time: seconds acknowledgements are gathered before they are sent
        ///         (0: sent at once). Default 0.1.
        ///     negative_ack_redelivery_delay: seconds before a negatively acknowledged message is
        ///         redelivered. Default 60.0.
        ///     ack_timeout: seconds after which a message not acknowledged is redelivered.
        ///         Default None: never.
        ///     batch_index_ack: acknowledge single messages of a batch (the broker must enable
        ///         it too). Default False.
        ///     read_compacted: read the compacted view of the topic. Default False.
        ///     replicate_subscription_state: replicate the subscription's position to other
        ///         clusters. Default False.
        ///     pattern_auto_discovery_period: seconds between checks for new topics matching a
        ///         pattern. Default 60.0.
        ///     auto_update_partitions_interval: seconds between checks (one metadata lookup per
        ///         partitioned topic named) for partitions a topic gained: they are
        ///         subscribed with this consumer's options, from their earliest message (the
        ///         broker gave existing subscriptions a cursor at their start when they were
        ///         added: nothing sent to them before this consumer noticed is lost), as the
        ///         Java client's `autoUpdatePartitionsInterval`. A pattern finds new partitions
        ///         every `pattern_auto_discovery_period` instead. 0: never. Default 60.0.
        ///     regex_subscription_mode: which topics a pattern is matched against:
        ///         `"persistent"`, `"non_persistent"` or `"all"` (both). Default `"persistent"`.
        ///     dead_letter_policy: `{"max_redeliver_count": n, "dead_letter_topic": name,
        ///         "initial_subscription_name": sub}`: after `n` redeliveries a message goes to
        ///         the dead-letter topic (default name: `<topic>-<subscription>-DLQ`); with
        ///         `initial_subscription_name` the broker creates that subscription on the
        ///         dead-letter topic when the first dead letter is written, so the dead letters
        ///         are kept for it even without retention. Default None.
        ///     max_pending_chunked_messages: chunked messages being assembled at once, at most.
        ///         Default 10.
        ///     expire_time_of_incomplete_chunked_message: seconds an incomplete chunked message is
        ///         kept before it is dropped. Default 60.0.
        ///     key_shared_policy: for `"key_shared"`: None or `"auto_split"` (the broker splits
        ///         the hash range), or a dict with `"sticky": [(start, end), ...]` (inclusive
        ///         hash ranges this consumer owns; without it the broker splits) and/or
        ///         `"allow_out_of_order_delivery": True` (a consumer taking over a key gets its
        ///         new messages while an earlier owner still has older ones unacknowledged;
        ///         every consumer of the subscription must agree). Default None.
        ///     schema: a `streamwire.schema` object: the broker checks it against the topic's
        ///         schema, and `Message.value` decodes each message with the schema version it
        ///         was written with. Default None: raw bytes.
        ///     retry_enable: also subscribe to the retry-letter topic (`dead_letter_policy`'s
        ///         `retry_letter_topic`, default `<topic>-<subscription>-RETRY`) for
        ///         `Consumer.reconsume_later`; without a `dead_letter_policy`, messages go to
        ///         `<topic>-<subscription>-DLQ` after 16 rounds (as the Java client's
        ///         `enableRetry`). Not with a pattern. Default False.
        ///     message_listener: a callable `listener(consumer, message)`: every message is
        ///         handed to it, one at a time in receive order, on one of the client's
        ///         `message_listener_threads`; the receive calls then raise `ConfigError`. It
        ///         acknowledges what it wants acknowledged; what it raises is logged (logger
        ///         `streamwire`) and counted (`metrics()["listener_errors"]`), and the next
        ///         message still comes. Default None.
        ///     crypto_key_reader: a `streamwire.CryptoKeyReader` with the private key(s) to
        ///         decrypt end-to-end encrypted messages, or an object of yours with a
        ///         `get_private_key(key_name, metadata)` method returning the PEM key (bytes
        ///         or str), a `(pem, metadata)` pair, or None (as the Java client's
        ///         `CryptoKeyReader` interface); what it raises is a `CryptoError`. Default
        ///         None.
        ///     crypto_failure_action: what happens to a message that cannot be decrypted (no
        ///         reader, no matching private key, a tampered payload): `"fail"` (as the
        ///         official clients: it is not delivered and not acknowledged, so an
        ///         `ack_timeout` or a reconnect delivers it again; the next receive raises
        ///         `CryptoError` saying why), `"discard"` (acknowledged and dropped) or
        ///         `"consume"` (delivered still encrypted, a batch as one message, with
        ///         `Message.encryption_context()`). Default `"fail"`.
        ///
        /// Raises:
        ///     ConfigError: a bad option.
        ///     OperationTimeoutError: the broker did not answer within twice the client's
        ///         `operation_timeout`.
        #[pyo3(signature = (topic, subscription_name, *, subscription_type="exclusive",
            initial_position="latest", receiver_queue_size=1000, consumer_name=None,
            ack_grouping_time=0.1, negative_ack_redelivery_delay=60.0, ack_timeout=None,
            batch_index_ack=false, read_compacted=false, replicate_subscription_state=false,
            pattern_auto_discovery_period=60.0, regex_subscription_mode="persistent",
            auto_update_partitions_interval=60.0, dead_letter_policy=None,
            max_pending_chunked_messages=10, expire_time_of_incomplete_chunked_message=60.0,
            key_shared_policy=None, schema=None, message_listener=None, retry_enable=false,
            crypto_key_reader=None, crypto_failure_action="fail"))]
        fn subscribe / _asubscribe (
            &self,
            py,
            topic: &Bound<'_, PyAny>,
            subscription_name: &str,
            subscription_type: &str,
            initial_position: &str,
            receiver_queue_size: i64,
            consumer_name: Option<String>,
            ack_grouping_time: f64,
            negative_ack_redelivery_delay: f64,
            ack_timeout: Option<f64>,
            batch_index_ack: bool,
            read_compacted: bool,
            replicate_subscription_state: bool,
            pattern_auto_discovery_period: f64,
            regex_subscription_mode: &str,
            auto_update_partitions_interval: f64,
            dead_letter_policy: Option<&Bound<'_, PyAny>>,
            max_pending_chunked_messages: usize,
            expire_time_of_incomplete_chunked_message: f64,
            key_shared_policy: Option<&Bound<'_, PyAny>>,
            schema: Option<&Bound<'_, PyAny>>,
            message_listener: Option<&Bound<'_, PyAny>>,
            retry_enable: bool,
            crypto_key_reader: Option<&Bound<'_, PyAny>>,
            crypto_failure_action: &str,
        ) -> Adopt<Consumer> {
            self.live()?; // a closed client raises before any option is checked
            if subscription_name.is_empty() {
                return Err(config_err("subscription_name must not be empty".into()));
            }
            let initial_position = match initial_position {
                "latest" => InitialPosition::Latest,
                "earliest" => InitialPosition::Earliest,
                other => {
                    return Err(config_err(format!(
                        "initial_position must be \"latest\" or \"earliest\", got {other:?}"
                    )))
                }
            };
            let ack_timeout = match ack_timeout {
                None => None,
                Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
                Some(t) => {
                    return Err(config_err(format!(
                        "ack_timeout must be None or a positive number of seconds, got {t}"
                    )))
                }
            };
            let period = non_negative(
                "pattern_auto_discovery_period",
                pattern_auto_discovery_period,
            )?;
            let (key_shared, allow_out_of_order_delivery) = match key_shared_policy
                .filter(|o| !o.is_none())
                .map(key_shared_arg)
                .transpose()?
            {
                Some((p, allow)) => (Some(p), allow),
                None => (None, false),
            };
            let cfg = ConsumerConfig {
                subscription: subscription_name.to_owned(),
                sub_type: sub_type(subscription_type)?,
                initial_position,
                consumer_name,
                receiver_queue_size: queue_size(receiver_queue_size)?,
                ack_group_time: non_negative("ack_grouping_time", ack_grouping_time)?,
                nack_delay: non_negative(
                    "negative_ack_redelivery_delay",
                    negative_ack_redelivery_delay,
                )?,
                ack_timeout,
                batch_index_ack,
                read_compacted,
                replicate_subscription_state,
                max_pending_chunked_messages,
                expire_incomplete_chunked: non_negative(
                    "expire_time_of_incomplete_chunked_message",
                    expire_time_of_incomplete_chunked_message,
                )?,
                dead_letter: dead_letter_policy.map(dead_letter_arg).transpose()?,
                key_shared,
                allow_out_of_order_delivery,
                regex_mode: regex_mode(regex_subscription_mode)?,
                auto_update_partitions: partitions_interval(auto_update_partitions_interval)?,
                retry_enable,
                crypto: crate::pulsar::crypto::consumer_crypto(
                    crypto_key_reader,
                    crypto_failure_action,
                )?,
                ..ConsumerConfig::default()
            };
            let listener = Listening::from_arg("message_listener", message_listener)?;
            let topics = topics_arg(py, topic)?;
            if retry_enable && matches!(topics, Topics::Pattern { .. }) {
                // As Java: its retry topic is named after the first topic a consumer names.
                return Err(config_err(
                    "retry_enable needs topics by name, not a pattern".into(),
                ));
            }
            let plan = Plan::new(py, self, topics, period, cfg, schema, listener)?;
            Op::new("subscribe", Some(plan.timeout), async move {
                let (h, pool) = plan.open().await?;
                streamwire_core::log::event(
                    streamwire_core::log::Level::Info,
                    "pulsar.consumer",
                    || {
                        (
                            "consumer opened".to_owned(),
                            vec![
                                ("topic", h.engine.topic().to_owned()),
                                ("subscription", h.engine.subscription().to_owned()),
                            ],
                        )
                    },
                );
                Ok(Adopt { obj: Consumer { h }, pool })
            })
        }

        /// Read a topic from a position, without a durable subscription.
        ///
        /// Args:
        ///     topic: the topic to read.
        ///     start_message_id: `"earliest"`, `"latest"` or a `MessageId`. Default None:
        ///         earliest.
        ///     inclusive: also deliver the message at `start_message_id`. Default False.
        ///     receiver_queue_size: messages fetched ahead (1 to 1,000,000). Default 1000.
        ///     reader_name: a name for the reader's consumer. Default None.
        ///     schema: a `streamwire.schema` object to decode messages with (see
        ///         `subscribe`). Default None: raw bytes.
        ///     reader_listener: a callable `listener(reader, message)` every message is handed
        ///         to, as `subscribe`'s `message_listener`. Default None.
        ///     crypto_key_reader, crypto_failure_action: decryption, as `subscribe`'s.
        ///     auto_update_partitions_interval: seconds between checks for partitions a
        ///         partitioned topic gained, which the reader then reads from their earliest
        ///         message (they were written after it started); 0: never. Default 60.0.
        #[pyo3(signature = (topic, start_message_id=None, *, inclusive=false,
            receiver_queue_size=1000, reader_name=None, schema=None, reader_listener=None,
            crypto_key_reader=None, crypto_failure_action="fail",
            auto_update_partitions_interval=60.0))]
        fn create_reader / _acreate_reader (
            &self,
            py,
            topic: &str,
            start_message_id: Option<&Bound<'_, PyAny>>,
            inclusive: bool,
            receiver_queue_size: i64,
            reader_name: Option<String>,
            schema: Option<&Bound<'_, PyAny>>,
            reader_listener: Option<&Bound<'_, PyAny>>,
            crypto_key_reader: Option<&Bound<'_, PyAny>>,
            crypto_failure_action: &str,
            auto_update_partitions_interval: f64,
        ) -> Adopt<Reader> {
            self.live()?; // a closed client raises before any option is checked
            let t = TopicName::parse(topic).py_err()?;
            let start = match start_message_id {
                None => MessageId::EARLIEST,
                Some(o) => {
                    if let Ok(id) = o.extract::<PyMessageId>() {
                        id.id
                    } else if let Ok(s) = o.extract::<String>() {
                        match s.as_str() {
                            "earliest" => MessageId::EARLIEST,
                            "latest" => MessageId::LATEST,
                            _ => {
                                return Err(config_err(format!(
                                    "start_message_id must be \"earliest\", \"latest\" or a \
                                     MessageId, got {s:?}"
                                )))
                            }
                        }
                    } else {
                        return Err(PyTypeError::new_err(
                            "start_message_id must be \"earliest\", \"latest\" or a MessageId",
                        ));
                    }
                }
            };
            let n: u64 = rand_suffix();
            let cfg = ConsumerConfig {
                subscription: format!("reader-{n:010x}"),
                sub_type: SubType::Exclusive,
                initial_position: if start == MessageId::LATEST {
                    InitialPosition::Latest
                } else {
                    InitialPosition::Earliest
                },
                consumer_name: reader_name,
                receiver_queue_size: queue_size(receiver_queue_size)?,
                durable: false,
                start: Some(StartFilter {
                    id: start,
                    inclusive,
                }),
                auto_update_partitions: partitions_interval(auto_update_partitions_interval)?,
                crypto: crate::pulsar::crypto::consumer_crypto(
                    crypto_key_reader,
                    crypto_failure_action,
                )?,
                ..ConsumerConfig::default()
            };
            let listener = Listening::from_arg("reader_listener", reader_listener)?;
            let topics = Topics::Names(vec![t]);
            let plan = Plan::new(py, self, topics, Duration::ZERO, cfg, schema, listener)?;
            Op::new("create reader", Some(plan.timeout), async move {
                let (h, pool) = plan.open().await?;
                Ok(Adopt { obj: Reader { h }, pool })
            })
        }
    }
}

/// A consumer's or reader's validated settings; subscribing is the only part that waits.
struct Plan {
    client: streamwire_pulsar::client::PulsarClient,
    topics: Topics,
    period: Duration,
    cfg: ConsumerConfig,
    timeout: Duration,
    op_timeout: Duration,
    schema: Option<Arc<Codec>>,
    listener: Option<Listening>,
    /// The client's listener pool, when there is a listener.
    pool: Option<Py<PyAny>>,
}

impl Plan {
    /// The plan of a subscription of `client`, decoding with `schema` (a `streamwire.schema`
    /// object, or None).
    fn new(
        py: Python<'_>,
        client: &Client,
        topics: Topics,
        period: Duration,
        mut cfg: ConsumerConfig,
        schema: Option<&Bound<'_, PyAny>>,
        listener: Option<Listening>,
    ) -> PyResult<Plan> {
        let schema = codec_of(schema)?;
        if let Some(c) = &schema {
            cfg.schema = Some(c.info.to_proto());
        }
        Ok(Plan {
            client: client.live()?.clone(),
            topics,
            period,
            cfg,
            timeout: client.operation_timeout * 2,
            op_timeout: client.operation_timeout,
            schema,
            pool: match &listener {
                Some(_) => Some(client.listener_pool(py)?),
                None => None,
            },
            listener,
        })
    }

    async fn open(self) -> EResult<(Handle, Option<Py<PyAny>>)> {
        let client = self.client;
        let cfg = self.cfg;
        let engine = match self.topics {
            Topics::Names(t) => Engine::subscribe(&client, &t, cfg).await?,
            Topics::Pattern {
                namespace,
                label,
                filter,
            } => {
                Engine::subscribe_pattern(&client, &namespace, label, filter, self.period, cfg)
                    .await?
            }
        };
        let h = Handle {
            typed: self
                .schema
                .map(|c| Typed::new(c, client.clone(), self.op_timeout * 2)),
            engine,
            pid: runtime::current_pid(),
            op_timeout: self.op_timeout,
            listening: self.listener,
        };
        Ok((h, self.pool))
    }
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() & 0xff_ffff_ffff
}
