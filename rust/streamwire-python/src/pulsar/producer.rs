//! `Producer`: `send` (blocking for the receipt), `send_async` (a future and/or callback),
//! `send_many` (one crossing for many messages, from lists or Arrow arrays).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::log;
use streamwire_core::runtime;
use streamwire_pulsar::engine::batcher::BatchConfig;
use streamwire_pulsar::engine::compression::Codec;
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::producer::{
    BatchingType, Completion, EntryOptions, ProducerConfig, Rejected, Routing, TopicProducer,
};
use streamwire_pulsar::protocol::pb;
use streamwire_pulsar::topic::TopicName;

use crate::common::blocking::{count_arg, positive_secs, wait};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::common::pickle::refuse_pickle;
use crate::pulsar::client::Client;
use crate::pulsar::deliver_time::{DeliverAfter, DeliverAt};
use crate::pulsar::dispatch::{self, ErrorSlot, Job};
use crate::pulsar::message_id::PyMessageId;
use crate::pulsar::producer_build::{build_message, many_messages};
use crate::pulsar::schema::{codec_of, Codec as SchemaCodec};
use crate::pulsar::schema_multi::SchemaVersions;
use crate::pulsar::send_future::{FutureState, SendFuture};
use crate::pulsar::transaction::txn_arg;

fn config_err(msg: String) -> PyErr {
    to_py(Error::new(ErrorKind::Config, msg))
}

crate::two_faces! {
    impl Client {
        /// Create a producer for `topic` (partitioned topics get one producer per partition).
        ///
        /// Args:
        ///     topic: the topic to produce to.
        ///     producer_name: a fixed producer name (needed for broker deduplication); default
        ///         None: the broker assigns one.
        ///     batching: gather messages into batch entries. Default True.
        ///     batching_max_messages: messages per batch at most. Default 1000.
        ///     batching_max_bytes: payload bytes per batch at most. Default 128 KiB.
        ///     batching_max_delay: seconds a batch waits for more messages after its first
        ///         (0: no waiting). Default 0.001.
        ///     batching_type: `"default"` (a batch holds messages in the order sent, whatever
        ///         their keys) or `"key_based"` (a batch holds the messages of ONE key: ordering
        ///         key if set, else partition key; for Key_Shared subscriptions, which dispatch
        ///         a whole batch by one key). The limits apply to all keys together. Default
        ///         `"default"`.
        ///     compression: None, `"lz4"`, `"zlib"`, `"zstd"` or `"snappy"`. Default None.
        ///     max_pending_messages: messages sent and not yet acknowledged, at most (per
        ///         partition). Default 10,000.
        ///     block_if_queue_full: when that queue (or the client's `memory_limit`) is full,
        ///         wait (True) or raise `ProducerQueueFullError` (False). Default True.
        ///     send_timeout: seconds a message may wait for its receipt before it fails with
        ///         `OperationTimeoutError` (0: no limit). Default 30.0.
        ///     initial_sequence_id: the sequence id to continue after; default None: the
        ///         broker's last one for this producer name.
        ///     access_mode: `"shared"`, `"exclusive"`, `"exclusive_with_fencing"` or
        ///         `"wait_for_exclusive"`. Default `"shared"`.
        ///     routing: for partitioned topics, how unkeyed messages pick a partition:
        ///         `"round_robin"` (as the Java client), `"single"` (one random partition)
        ///         or `"key_hash"` (a time-based one); keyed messages always go by the hash of
        ///         their key. Default `"round_robin"`.
        ///     message_router: for partitioned topics, a callable `(key, num_partitions) -> int`
        ///         that picks every message's partition (`key`: its partition key, a str, or
        ///         None), instead of `routing`. It runs on the sending thread, before the
        ///         message is queued; a router that raises, returns a non-int or an index
        ///         outside `0..num_partitions` fails that send with `InvalidArgumentError`
        ///         (nothing is sent). Not called for a topic without partitions. Default None.
        ///     lazy_start_partitioned_producers: for partitioned topics, create a partition's
        ///         producer on the broker only when a message is first sent to it (the
        ///         partition the routing picks first is created at once); useful with
        ///         `routing="single"` or a `message_router` that uses few partitions. Needs
        ///         `access_mode="shared"`. Default False: every partition at creation.
        ///     auto_update_partitions_interval: for partitioned topics, seconds between checks
        ///         (one metadata lookup) for partitions the topic gained (`pulsar-admin topics
        ///         update-partitioned-topic`): they get producers (lazily with
        ///         `lazy_start_partitioned_producers`) and the routing spreads messages over
        ///         the new count, as the Java client's `autoUpdatePartitionsInterval`; sends
        ///         in flight are not disturbed. 0: never (Java's
        ///         `autoUpdatePartitions(false)`). Default 60.0.
        ///     chunking: split messages larger than the broker's limit into chunks instead of
        ///         failing them with `MessageTooBigError`. Default False.
        ///     properties: producer metadata (str to str) sent to the broker. Default None.
        ///     schema: a `streamwire.schema` object: registered with the topic (the broker
        ///         checks compatibility), and `send`/`send_async`/`send_many` take values of
        ///         it, encoded in Rust. Default None: bytes.
        ///     encryption_keys: end-to-end encryption: the key names to encrypt for. Every
        ///         entry (a whole batch, after compression) is sealed with AES-256-GCM under
        ///         the producer's data key, which travels wrapped with each name's RSA public
        ///         key (RSA-OAEP, SHA-1), as the official clients do; the data key is renewed
        ///         every 4 hours. Needs `crypto_key_reader`. Default None.
        ///     crypto_key_reader: a `streamwire.CryptoKeyReader` with the public keys of
        ///         `encryption_keys`, or an object of yours with a `get_public_key(key_name,
        ///         metadata)` method returning the PEM key (bytes or str), a `(pem,
        ///         metadata)` pair (the metadata travels with the wrapped data key to the
        ///         consumer's `get_private_key`), or None (as the Java client's
        ///         `CryptoKeyReader` interface). Default None.
        ///
        /// Raises:
        ///     ConfigError: a bad option.
        ///     CryptoError: a public key of `encryption_keys` is missing or not an RSA key.
        ///     IncompatibleSchemaError: the topic's schema does not accept `schema`.
        ///     OperationTimeoutError: the broker did not answer within twice the client's
        ///         `operation_timeout`.
        #[pyo3(signature = (topic, *, producer_name=None, batching=true,
            batching_max_messages=1000, batching_max_bytes=131_072, batching_max_delay=0.001,
            batching_type="default", compression=None, max_pending_messages=10_000, block_if_queue_full=true,
            send_timeout=30.0, initial_sequence_id=None, access_mode="shared",
            routing="round_robin", message_router=None, lazy_start_partitioned_producers=false,
            auto_update_partitions_interval=60.0, chunking=false, properties=None, schema=None, encryption_keys=None,
            crypto_key_reader=None))]
        fn create_producer / _acreate_producer (
            &self,
            py,
            topic: &str,
            producer_name: Option<String>,
            batching: bool,
            batching_max_messages: i64,
            batching_max_bytes: i64,
            batching_max_delay: f64,
            batching_type: &str,
            compression: Option<&str>,
            max_pending_messages: i64,
            block_if_queue_full: bool,
            send_timeout: f64,
            initial_sequence_id: Option<i64>,
            access_mode: &str,
            routing: &str,
            message_router: Option<Py<PyAny>>,
            lazy_start_partitioned_producers: bool,
            auto_update_partitions_interval: f64,
            chunking: bool,
            properties: Option<&Bound<'_, PyAny>>,
            schema: Option<&Bound<'_, PyAny>>,
            encryption_keys: Option<Vec<String>>,
            crypto_key_reader: Option<&Bound<'_, PyAny>>,
        ) -> Producer {
            let client = self.live()?.clone();
            let topic = TopicName::parse(topic).py_err()?;
            let batching_max_messages: u32 =
                count_arg("batching_max_messages", batching_max_messages).py_err()?;
            let batching_max_bytes: usize =
                count_arg("batching_max_bytes", batching_max_bytes).py_err()?;
            let max_pending_messages: usize =
                count_arg("max_pending_messages", max_pending_messages).py_err()?;
            if batching_max_messages == 0 || batching_max_bytes == 0 {
                return Err(config_err("batching limits must be positive".into()));
            }
            if max_pending_messages == 0 {
                return Err(config_err("max_pending_messages must be at least 1".into()));
            }
            if producer_name.as_deref() == Some("") {
                return Err(config_err("producer_name must not be empty".into()));
            }
            let compression = match compression.map(str::to_ascii_lowercase).as_deref() {
                None | Some("none") => Codec::None,
                Some("lz4") => Codec::Lz4,
                Some("zlib") => Codec::Zlib,
                Some("zstd") => Codec::Zstd,
                Some("snappy") => Codec::Snappy,
                Some(other) => {
                    return Err(config_err(format!(
                        "unknown compression {other:?}; use None, 'lz4', 'zlib', 'zstd' or \
                         'snappy'"
                    )))
                }
            };
            let access_mode = match access_mode {
                "shared" => pb::ProducerAccessMode::Shared,
                "exclusive" => pb::ProducerAccessMode::Exclusive,
                "exclusive_with_fencing" => pb::ProducerAccessMode::ExclusiveWithFencing,
                "wait_for_exclusive" => pb::ProducerAccessMode::WaitForExclusive,
                other => {
                    return Err(config_err(format!(
                        "unknown access_mode {other:?}; use 'shared', 'exclusive', \
                         'exclusive_with_fencing' or 'wait_for_exclusive'"
                    )))
                }
            };
            let batching_type = match batching_type {
                "default" => BatchingType::Default,
                "key_based" => BatchingType::KeyBased,
                other => {
                    return Err(config_err(format!(
                        "unknown batching_type {other:?}; use 'default' or 'key_based'"
                    )))
                }
            };
            if batching_type == BatchingType::KeyBased && !batching {
                return Err(config_err(
                    "batching_type='key_based' needs batching=True".into(),
                ));
            }
            let routing = match routing {
                "round_robin" => Routing::RoundRobin,
                "single" => Routing::Single,
                "key_hash" => Routing::KeyHash,
                other => {
                    return Err(config_err(format!(
                        "unknown routing {other:?}; use 'round_robin', 'single' or 'key_hash'"
                    )))
                }
            };
            if lazy_start_partitioned_producers && access_mode != pb::ProducerAccessMode::Shared {
                // A partition created at its first send could be refused for exclusivity
                // long after creation said yes (Java starts lazily only in Shared mode).
                return Err(config_err(
                    "lazy_start_partitioned_producers needs access_mode='shared'".into(),
                ));
            }
            if let Some(r) = &message_router {
                if !r.bind(py).is_callable() {
                    return Err(config_err(
                        "message_router must be a callable (key, num_partitions) -> int".into(),
                    ));
                }
            }
            let send_timeout = if send_timeout == 0.0 {
                Duration::ZERO
            } else {
                positive_secs("send_timeout", send_timeout).py_err()?
            };
            let max_delay = if batching_max_delay == 0.0 {
                Duration::ZERO
            } else {
                positive_secs("batching_max_delay", batching_max_delay).py_err()?
            };
            let auto_update_partitions =
                crate::pulsar::table_view::partitions_interval(auto_update_partitions_interval)?;
            let encryption =
                crate::pulsar::crypto::producer_encryption(encryption_keys, crypto_key_reader)?;
            let config = ProducerConfig {
                producer_name,
                encryption,
                batching,
                batch: BatchConfig {
                    max_messages: batching_max_messages,
                    max_bytes: batching_max_bytes,
                    max_delay,
                },
                batching_type,
                compression,
                max_pending_messages,
                block_if_queue_full,
                send_timeout,
                initial_sequence_id,
                access_mode,
                properties: match properties {
                    Some(p) => crate::common::columns::one_props(p)?,
                    None => Vec::new(),
                },
                routing,
                chunking,
                lazy_start: lazy_start_partitioned_producers,
                auto_update_partitions,
                ..ProducerConfig::default()
            };
            let plan = ProducerPlan {
                client,
                topic,
                config,
                budget: self.budget.clone(),
                timeout: self.operation_timeout * 2,
                codec: None,
                router: message_router,
            }
            .with_schema(schema)?;
            Op::new("create producer", Some(plan.timeout), plan.open())
        }
    }
}

/// A producer's validated settings; opening it is the only part that waits.
pub(crate) struct ProducerPlan {
    client: streamwire_pulsar::client::PulsarClient,
    topic: TopicName,
    config: ProducerConfig,
    budget: streamwire_core::budget::MemoryBudget,
    pub(crate) timeout: Duration,
    codec: Option<Arc<SchemaCodec>>,
    router: Option<Py<PyAny>>,
}

impl ProducerPlan {
    /// Produce values of `schema` (a `streamwire.schema` object, or None).
    pub(crate) fn with_schema(mut self, schema: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if let Some(c) = codec_of(schema)? {
            self.config.schema = Some(c.info.to_proto());
            self.codec = Some(c);
        }
        Ok(self)
    }

    /// Open the producer on the broker.
    pub(crate) async fn open(self) -> Result<Producer> {
        let topic = self.topic.to_string();
        let block = self.config.block_if_queue_full;
        let client = self.client.clone();
        let tp = TopicProducer::create(self.client, self.topic, self.config, self.budget).await?;
        let schema_topic = tp.partition_producers()[0].topic().clone();
        log::event(log::Level::Info, "pulsar.producer", || {
            (
                "producer opened".to_owned(),
                vec![("topic", topic.clone()), ("producer", tp.name())],
            )
        });
        Ok(Producer {
            topic,
            block_if_queue_full: block,
            inner: Arc::new(tp),
            pid: runtime::current_pid(),
            closed: AtomicBool::new(false),
            callback_errors: Arc::new(Mutex::new(None)),
            room: Default::default(),
            codec: self.codec,
            schemas: SchemaVersions::new(client, self.timeout, schema_topic),
            router: self.router,
        })
    }
}

/// A producer. Thread-safe; `close()` (or the context manager) flushes.
#[pyclass(frozen, module = "streamwire._native")]
pub struct Producer {
    pub(crate) inner: Arc<TopicProducer>,
    pub(crate) pid: u32,
    pub(crate) closed: AtomicBool,
    topic: String,
    pub(crate) block_if_queue_full: bool,
    callback_errors: ErrorSlot,
    /// Awaitable sends waiting for room, in order (`streamwire.aio`).
    pub(crate) room: crate::pulsar::aio_producer::Room,
    /// The schema values are encoded with (`schema=`), or None: bytes.
    pub(crate) codec: Option<Arc<SchemaCodec>>,
    /// Versions of other schemas its messages were sent with (`send(..., schema=)`).
    pub(crate) schemas: SchemaVersions,
    /// The caller's `message_router`, run by `route` on the sending thread.
    pub(crate) router: Option<Py<PyAny>>,
}

impl Producer {
    pub(crate) fn live(&self) -> PyResult<Arc<TopicProducer>> {
        runtime::check_same_process(self.pid, "producer").py_err()?;
        if self.closed.load(Ordering::Acquire) || self.inner.is_closed() {
            return Err(to_py(Error::closed("producer")));
        }
        Ok(Arc::clone(&self.inner))
    }

    /// The message of one send (`send`, `send_async`, `_asend`): `value` encoded with the
    /// call's schema or the producer's, the options checked, and the schema version set
    /// (a schema met for the first time is registered now, after the value is encoded, so a
    /// value that does not fit registers nothing).
    // Inlined into each shell, so the shells run the code they ran before it was shared
    // (callgrind: a call here cost the blocking `send_async` about 5% more instructions).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn message(
        &self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        key: Option<String>,
        ordering_key: Option<Vec<u8>>,
        properties: Option<&Bound<'_, PyAny>>,
        event_time: Option<i64>,
        sequence_id: Option<i64>,
        deliver_after: Option<DeliverAfter>,
        deliver_at: Option<DeliverAt>,
        replication_clusters: Option<Vec<String>>,
        disable_replication: bool,
        schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(OutgoingMessage, bool, EntryOptions)> {
        let codec = self.message_codec(schema)?;
        let (mut msg, user_seq, mut entry) = build_message(
            codec.as_deref().or(self.codec.as_deref()),
            value,
            key,
            ordering_key,
            properties,
            event_time,
            sequence_id,
            deliver_after.map(|d| d.0),
            deliver_at.map(|d| d.0),
            replication_clusters,
            disable_replication,
        )?;
        entry.schema_version = self.message_schema_version(py, codec.as_ref())?;
        if self.router.is_some() {
            msg.partition = self.route(py, msg.key.as_deref())?;
        }
        Ok((msg, user_seq, entry))
    }

    /// The partition the caller's `message_router` picks for a message with `key`; None for a
    /// topic without partitions. It runs here, on the calling thread, which holds the GIL:
    /// routing it in the engine would make an engine thread wait for the interpreter.
    fn route(&self, py: Python<'_>, key: Option<&str>) -> PyResult<Option<u32>> {
        let Some(router) = &self.router else {
            return Ok(None);
        };
        let n = self.inner.num_partitions();
        if n <= 1 {
            return Ok(None);
        }
        let bad = |what: String| to_py(Error::invalid(format!("message_router {what}")));
        let out = router.bind(py).call1((key, n)).map_err(|e| {
            let err = bad(format!("raised {e}"));
            err.set_cause(py, Some(e));
            err
        })?;
        // A bool is an int to Python, but no partition index: refused as a non-int.
        let index = match out.extract::<i64>() {
            Ok(i) if !out.is_instance_of::<pyo3::types::PyBool>() => i,
            _ => {
                let kind = out
                    .get_type()
                    .name()
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                return Err(bad(format!("must return an int, got {kind}")));
            }
        };
        if index < 0 || index >= n as i64 {
            return Err(bad(format!(
                "returned {index}, not a partition of the topic's 0..{n}"
            )));
        }
        Ok(Some(index as u32))
    }

    /// The messages of one `send_many` / `_asend_many`, whether they carry caller-given
    /// sequence ids, and their schema version (as `message`).
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn messages(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        event_times: Option<&Bound<'_, PyAny>>,
        sequence_ids: Option<&Bound<'_, PyAny>>,
        schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(Vec<OutgoingMessage>, bool, Option<Bytes>)> {
        let codec = self.message_codec(schema)?;
        let (mut msgs, user_seq) = many_messages(
            codec.as_deref().or(self.codec.as_deref()),
            values,
            keys,
            properties,
            event_times,
            sequence_ids,
        )?;
        // After every value is encoded: a value that does not fit registers nothing.
        let version = self.message_schema_version(py, codec.as_ref())?;
        if self.router.is_some() {
            // Every message routed before any is queued: a router that fails sends none.
            for m in &mut msgs {
                m.partition = self.route(py, m.key.as_deref())?;
            }
        }
        Ok((msgs, user_seq, version))
    }

    pub(crate) fn raise_callback_error(&self) -> PyResult<()> {
        let e = self
            .callback_errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        e.map_or(Ok(()), Err)
    }
}

#[pymethods]
impl Producer {
    /// Send one message and wait for the broker's receipt; returns its `MessageId`.
    ///
    /// Args:
    ///     value: the payload (bytes-like, or str sent as UTF-8).
    ///     key: the partition key (routes keyed messages; used by compaction). Default None.
    ///     ordering_key: bytes overriding `key` for Key_Shared ordering. Default None.
    ///     properties: str-to-str message properties. Default None.
    ///     event_time: application event time in milliseconds since the epoch. Default None.
    ///     sequence_id: this message's sequence id instead of the producer's numbering
    ///         (non-negative; for broker deduplication). Default None.
    ///     deliver_after: how long from now before it is delivered, in seconds or as a
    ///         `datetime.timedelta` (delayed delivery applies to shared and key-shared
    ///         subscriptions). Default None.
    ///     deliver_at: the same as an absolute time: milliseconds since the epoch, or a
    ///         timezone-aware `datetime.datetime` (not with `deliver_after`). Default None.
    ///     replication_clusters: replicate only to these clusters. Default None: the
    ///         namespace's.
    ///     disable_replication: do not geo-replicate this message. Default False.
    ///     txn: a `Transaction` (from `Client.transaction()`): the message becomes visible
    ///         only when it commits, and is sent unbatched. Default None.
    ///     schema: a `streamwire.schema` object other than the producer's: `value` is
    ///         encoded with it, registered with the topic (GET_OR_CREATE_SCHEMA, once per
    ///         schema) and its version goes on the message (a batch carries one version:
    ///         the message closes an open batch of another). Default None: the producer's
    ///         schema.
    ///
    /// Raises:
    ///     InvalidArgumentError: a bad option (nothing is sent).
    ///     OperationTimeoutError: no receipt within the producer's `send_timeout`.
    ///     InvalidTransactionStateError: `txn` is no longer open.
    ///     IncompatibleSchemaError: the topic refuses `schema`.
    #[pyo3(signature = (value, *, key=None, ordering_key=None, properties=None, event_time=None,
        sequence_id=None, deliver_after=None, deliver_at=None, replication_clusters=None,
        disable_replication=false, txn=None, schema=None))]
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        key: Option<String>,
        ordering_key: Option<Vec<u8>>,
        properties: Option<&Bound<'_, PyAny>>,
        event_time: Option<i64>,
        sequence_id: Option<i64>,
        deliver_after: Option<DeliverAfter>,
        deliver_at: Option<DeliverAt>,
        replication_clusters: Option<Vec<String>>,
        disable_replication: bool,
        txn: Option<&Bound<'_, PyAny>>,
        schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyMessageId> {
        let tp = self.live()?;
        let txn = txn_arg(txn)?;
        let (msg, user_seq, entry) = self.message(
            py,
            value,
            key,
            ordering_key,
            properties,
            event_time,
            sequence_id,
            deliver_after,
            deliver_at,
            replication_clusters,
            disable_replication,
            schema,
        )?;
        let id = wait(py, "send", None, async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            if let Some(t) = txn {
                tp.send_in_txn(msg, user_seq, entry, Completion::Once(tx), &t)
                    .await?;
                // The caller waits on this receipt: its batch goes out now.
                tp.trigger_flush();
                return rx.await.unwrap_or_else(|_| Err(Error::closed("producer")));
            }
            // The caller waits on this receipt: its batch goes out now, not at the delay.
            tp.send_now(msg, user_seq, entry, Completion::Once(tx))
                .await?;
            rx.await.unwrap_or_else(|_| Err(Error::closed("producer")))
        })?;
        Ok(id.into())
    }

    /// Queue one message and return at once with a `SendFuture`. `callback(error, message_id)`
    /// (one of them None) runs later on streamwire's callback thread, never on an I/O thread.
    ///
    /// Args:
    ///     value: the payload (bytes-like, or str sent as UTF-8).
    ///     callback: called as `callback(error, message_id)` once the outcome is known; an
    ///         exception it raises is re-raised by the next `flush()` or `close()`.
    ///         Default None.
    ///     key: as for `send`; so are ordering_key, properties, event_time, sequence_id,
    ///         deliver_after, deliver_at, replication_clusters, disable_replication, txn and
    ///         schema.
    ///
    /// A full queue waits (or raises `ProducerQueueFullError` with
    /// `block_if_queue_full=False`, without queueing the message).
    #[pyo3(signature = (value, callback=None, *, key=None, ordering_key=None, properties=None,
        event_time=None, sequence_id=None, deliver_after=None, deliver_at=None,
        replication_clusters=None, disable_replication=false, txn=None, schema=None))]
    #[allow(clippy::too_many_arguments)]
    fn send_async(
        &self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        callback: Option<Py<PyAny>>,
        key: Option<String>,
        ordering_key: Option<Vec<u8>>,
        properties: Option<&Bound<'_, PyAny>>,
        event_time: Option<i64>,
        sequence_id: Option<i64>,
        deliver_after: Option<DeliverAfter>,
        deliver_at: Option<DeliverAt>,
        replication_clusters: Option<Vec<String>>,
        disable_replication: bool,
        txn: Option<&Bound<'_, PyAny>>,
        schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<SendFuture> {
        let tp = self.live()?;
        let txn = txn_arg(txn)?;
        if let Some(cb) = &callback {
            if !cb.bind(py).is_callable() {
                return Err(pyo3::exceptions::PyTypeError::new_err(
                    "callback must be callable",
                ));
            }
        }
        let (msg, user_seq, entry) = self.message(
            py,
            value,
            key,
            ordering_key,
            properties,
            event_time,
            sequence_id,
            deliver_after,
            deliver_at,
            replication_clusters,
            disable_replication,
            schema,
        )?;
        let state = Arc::new(FutureState::default());
        let st = Arc::clone(&state);
        let errors = Arc::clone(&self.callback_errors);
        let completion = Completion::Callback(Box::new(move |res: Result<MessageId>| {
            if let Some(cb) = callback {
                dispatch::submit(Job {
                    callback: cb,
                    result: res.clone(),
                    errors,
                });
            }
            st.set(res);
        }));
        if let Some(t) = txn {
            // The partition is registered with the coordinator first (once per partition),
            // so this waits for that; the receipt is reported through the future.
            t.check_open("send").py_err()?;
            wait(py, "send_async in transaction", None, async move {
                tp.send_in_txn(msg, user_seq, entry, completion, &t).await
            })?;
            return Ok(SendFuture { state });
        }
        let p = tp.producer_for_msg(&msg);
        match p.try_send(msg, user_seq, entry.clone(), completion) {
            Ok(()) => {}
            Err(rejected) => {
                let Rejected {
                    error: e,
                    completion,
                    msg,
                } = *rejected;
                if e.kind() == ErrorKind::QueueFull && self.block_if_queue_full {
                    wait(py, "send_async (waiting for room)", None, async move {
                        p.send(msg, user_seq, entry, completion).await
                    })?;
                } else {
                    // Reported once: raised here, so the callback is not called too (the
                    // completion is dropped unfired, with the message it was for).
                    drop(completion);
                    return Err(to_py(e));
                }
            }
        }
        Ok(SendFuture { state })
    }

    /// Send many messages, crossing into the engine once; waits for every receipt and
    /// returns the ids in input order. `values` is a sequence of bytes-like objects or a
    /// pyarrow binary/string array; `keys`/`event_times` likewise (None entries allowed);
    /// `properties` is one dict for all or a sequence of dicts. A producer with a JSON or
    /// Avro schema also takes a `pyarrow.RecordBatch` (or struct array) whose columns are the
    /// record's fields: the rows are read and encoded in Rust, no Python object per row.
    ///
    /// `sequence_ids` (ints, one per value) replace the producer's own numbering, so that with
    /// broker deduplication and a fixed producer name a retried call is not published twice;
    /// unkeyed messages then go to partition `sequence_id % partitions`.
    ///
    /// Args:
    ///     values: the payloads.
    ///     keys: one key (or None) per value. Default None.
    ///     properties: one dict for every message, or one dict (or None) per value.
    ///         Default None.
    ///     event_times: one time in milliseconds since the epoch (or None) per value.
    ///         Default None.
    ///     sequence_ids: one non-negative int per value. Default None.
    ///     txn: a `Transaction`: every message is sent in it (batched together), visible only
    ///         when it commits. Default None.
    ///     schema: a `streamwire.schema` object other than the producer's: every value is
    ///         encoded with it (a sequence of its values, or for a JSON or Avro record
    ///         schema a `pyarrow.RecordBatch` or struct array), it is registered with the
    ///         topic (GET_OR_CREATE_SCHEMA, once per schema) and its version goes on every
    ///         message; they batch together as any others. Default None: the producer's.
    ///     ids: True (the default): return the list of `MessageId`s. False: return a
    ///         `MessageIdRanges` instead (its length is the number sent; ids are made
    ///         only when taken from it). Either way, plain values (no keys, properties,
    ///         event times, sequence ids, transaction, schema or `message_router`) with
    ///         batching on take the bulk path: the values cross to the producer as one
    ///         buffer and are cut into batches there, with no per-message item (with
    ///         `ids=True` the list is made from the settled ranges at the end); on a
    ///         partitioned topic each batch goes to the next partition in turn (`routing=
    ///         "round_robin"`) or all to one (`"single"`). Anything else goes the
    ///         per-message way and answers the same. Default True.
    ///
    /// Raises:
    ///     SchemaError: a value does not fit the schema (nothing is sent).
    ///     IncompatibleSchemaError: the topic refuses `schema` (nothing is sent).
    ///     StreamwireError: the first failure (of its own type), noting how many of the
    ///         messages were not sent; the others were sent.
    #[pyo3(signature = (values, *, keys=None, properties=None, event_times=None,
        sequence_ids=None, txn=None, schema=None, ids=true))]
    #[allow(clippy::too_many_arguments)]
    fn send_many<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'_, PyAny>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        event_times: Option<&Bound<'_, PyAny>>,
        sequence_ids: Option<&Bound<'_, PyAny>>,
        txn: Option<&Bound<'_, PyAny>>,
        schema: Option<&Bound<'_, PyAny>>,
        ids: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let tp = self.live()?;
        let txn = txn_arg(txn)?;
        let plan = self.plan_many(
            py,
            values,
            keys,
            properties,
            event_times,
            sequence_ids,
            txn,
            schema,
        )?;
        let sent = wait(py, "send_many", None, plan.send(tp))?;
        sent.into_py(py, ids)
    }

    /// Send what is batched and wait until every message sent so far is acknowledged or
    /// failed. Raises the first exception a callback raised, if any.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let tp = self.live()?;
        wait(py, "flush", None, async move { tp.flush().await })?;
        self.raise_callback_error()
    }

    /// Flush and close. Idempotent. Messages that could not be delivered fail with their
    /// own errors (raised from `send`, set on their futures, passed to their callbacks).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if self.pid != runtime::current_pid() {
            return Ok(());
        }
        let tp = Arc::clone(&self.inner);
        wait(py, "close producer", None, async move { tp.close().await })?;
        self.raise_callback_error()
    }

    fn __len__(&self) -> usize {
        self.inner.pending()
    }

    /// The topic this producer was created for (as given).
    #[getter]
    fn topic(&self) -> &str {
        &self.topic
    }

    /// The producer name (given, or assigned by the broker).
    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    /// The highest sequence id published so far (-1 before any, unless the broker knew one).
    #[getter]
    fn last_sequence_id(&self) -> i64 {
        self.inner.last_sequence_id()
    }

    /// The registry version of the producer's schema (None without a schema).
    #[getter]
    fn schema_version<'py>(&self, py: Python<'py>) -> Option<Bound<'py, pyo3::types::PyBytes>> {
        self.inner
            .schema_version()
            .map(|v| pyo3::types::PyBytes::new(py, &v))
    }

    /// The number of partition producers (1 for a non-partitioned topic); it grows when the
    /// topic gains partitions (see `auto_update_partitions_interval`).
    #[getter]
    fn num_partitions(&self) -> usize {
        self.inner.num_partitions()
    }

    /// Whether the producer is open and registered with the broker on a live connection
    /// (every partition's, for a partitioned topic); False while it reconnects.
    fn is_connected(&self) -> bool {
        self.inner.is_connected()
    }

    /// This producer's metrics (all partitions summed); see README "Metrics" for the keys.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut s = self.live()?.metrics();
        s.labels.topic = self.topic.clone();
        crate::common::metrics::snapshot_dict(py, &s)
    }

    /// Counters and publish-latency percentiles (milliseconds).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("sent", s.sent)?;
        d.set_item("failed", s.failed)?;
        d.set_item("bytes", s.bytes)?;
        d.set_item("entries", s.entries)?;
        d.set_item("reconnects", s.reconnects)?;
        d.set_item("pending", s.pending)?;
        d.set_item("latency_ms_p50", s.latency_ms[0])?;
        d.set_item("latency_ms_p95", s.latency_ms[1])?;
        d.set_item("latency_ms_p99", s.latency_ms[2])?;
        d.set_item("latency_ms_max", s.latency_ms[3])?;
        Ok(d)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "Producer",
            "create producers inside the worker (for Spark: streamwire.spark's process-local \
             cache, or streamwire.spark.produce_arrow)",
        ))
    }

    fn __repr__(&self) -> String {
        format!("<streamwire.Producer topic={:?}>", self.topic)
    }
}
