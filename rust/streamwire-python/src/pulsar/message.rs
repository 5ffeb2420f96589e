//! `Message`: one received message, and the Arrow columns built from many of them.
//!
//! A `Message` wraps the engine's message: the payload stays a slice of the network buffer
//! until `data()` copies it once into a Python `bytes`. Messages refuse to pickle (they are
//! tied to the consumer that acknowledges them); pickle `msg.data()` and `msg.message_id`.

use std::sync::Arc;

use prost::Message as _;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use streamwire_pulsar::consumer::ReceivedMessage;

use crate::common::arrow::ArrowBuilder;
use crate::common::pickle::refuse_pickle;
use crate::common::repr::str_repr;
use crate::common::untracked::{untracked, Acyclic};
use crate::pulsar::message_id::PyMessageId;
use crate::pulsar::schema::Typed;

/// A message received by a `Consumer` or a `Reader`. Immutable and thread-safe.
#[pyclass(frozen, module = "streamwire._native")]
pub struct Message {
    pub(crate) m: ReceivedMessage,
    /// The consumer's schema: `value` decodes with it.
    typed: Option<Arc<Typed>>,
}

// Instances skip the cyclic collector (see common::untracked). A message holds Rust data and,
// with a schema, the consumer's shared `Typed` (whose record classes are Python types kept
// by the consumer): a message never refers to another message or to anything that could
// refer back to it, and PyO3's traverse never visited the `Typed` either.
impl Acyclic for Message {}

impl Message {
    pub(crate) fn typed(m: ReceivedMessage, typed: Option<Arc<Typed>>) -> Self {
        Message { m, typed }
    }
}

#[pymethods]
impl Message {
    /// The payload as `bytes`: the official client's spelling of the `value` property.
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.m.payload)
    }

    /// The key, or None: the official client's spelling of the `key` property.
    fn partition_key(&self) -> Option<&str> {
        self.m.key()
    }

    /// The official client's spelling of `publish_time` (milliseconds since the epoch).
    fn publish_timestamp(&self) -> u64 {
        self.m.publish_time()
    }

    /// The official client's spelling of `event_time`: 0 when the producer set none, as the
    /// official client answers.
    fn event_timestamp(&self) -> u64 {
        self.m.event_time().unwrap_or(0)
    }

    /// The official client's spelling of the `topic` property.
    fn topic_name(&self) -> &str {
        self.m.topic()
    }

    /// How the payload is encrypted, when the consumer handed it over undecrypted
    /// (`crypto_failure_action="consume"` and no usable key); None for every other message.
    fn encryption_context(&self) -> Option<crate::pulsar::crypto::EncryptionContextObj> {
        self.m
            .encryption()
            .map(|c| crate::pulsar::crypto::EncryptionContextObj::new(c.clone()))
    }

    /// Whether the producer sent a null value (the official client's `send(None)`, a
    /// compaction tombstone): the payload is then empty, but not an empty value.
    fn has_null_value(&self) -> bool {
        self.m.null_value()
    }

    /// The value: with a consumer `schema`, the payload decoded with the schema version it
    /// was written with (a `SchemaError` if it does not decode); otherwise the payload as
    /// `bytes` (copied once from the network buffer). `data()` is always the raw payload.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.typed {
            Some(t) => t.decode(py, &self.m),
            None => Ok(PyBytes::new(py, &self.m.payload).into_any()),
        }
    }

    /// The registry version of the schema the message was written with (None: none).
    #[getter]
    fn schema_version<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.m.schema_version().map(|v| PyBytes::new(py, v))
    }

    /// The message key (partition key), or None.
    #[getter]
    fn key(&self) -> Option<&str> {
        self.m.key()
    }

    /// The ordering key, or None.
    #[getter]
    fn ordering_key<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.m.ordering_key().map(|k| PyBytes::new(py, k))
    }

    /// The message properties (a new dict on every access).
    #[getter]
    fn properties<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.m.properties() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Event time in milliseconds since the epoch, or None when the producer set none.
    #[getter]
    fn event_time(&self) -> Option<u64> {
        self.m.event_time()
    }

    /// Publish time (set by the producer's client) in milliseconds since the epoch.
    #[getter]
    fn publish_time(&self) -> u64 {
        self.m.publish_time()
    }

    /// The message's `MessageId` (acknowledge, seek or persist it).
    #[getter]
    fn message_id<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyMessageId>> {
        untracked(py, self.m.id.into())
    }

    /// The topic (partition) the message was read from.
    #[getter]
    fn topic(&self) -> &str {
        self.m.topic()
    }

    /// How many times the broker redelivered this message before (0 at first delivery).
    #[getter]
    fn redelivery_count(&self) -> u32 {
        self.m.redelivery_count()
    }

    /// The name of the producer that published the message.
    #[getter]
    fn producer_name(&self) -> &str {
        self.m.producer_name()
    }

    /// The sequence id its producer gave the message.
    #[getter]
    fn sequence_id(&self) -> u64 {
        self.m.sequence_id
    }

    fn __len__(&self) -> usize {
        self.m.payload.len()
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "Message",
            "pickle msg.data(), msg.properties and msg.message_id (a MessageId pickles) instead",
        ))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<streamwire.Message {} topic={} {} bytes key={}>",
            self.m.id,
            str_repr(py, Some(self.m.topic())),
            self.m.payload.len(),
            str_repr(py, self.m.key())
        )
    }
}

/// Build a `pyarrow.RecordBatch` from messages: buffers are filled in Rust and handed to
/// `pyarrow.Array.from_buffers`, so no Python object is made per row.
/// The columns of `receive_arrow` / `read_arrow`, in their default order.
pub(crate) const ARROW_COLUMNS: [&str; 14] = [
    "value",
    "key",
    "topic",
    "partition",
    "ledger_id",
    "entry_id",
    "batch_index",
    "publish_time",
    "event_time",
    "properties",
    "producer_name",
    "sequence_id",
    "redelivery_count",
    "message_id",
];

/// The columns to build, in order: all of them, or the named ones (unknown or repeated names
/// are a `ValueError`).
pub(crate) fn column_list(columns: Option<&[String]>) -> PyResult<Vec<&'static str>> {
    crate::common::arrow::column_list(&ARROW_COLUMNS, columns)
}

/// Build the `names` columns (from `column_list`), in that order.
pub(crate) fn to_record_batch<'py>(
    py: Python<'py>,
    msgs: &[ReceivedMessage],
    names: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let n = msgs.len();
    let b = ArrowBuilder::new(py, n)?;
    let mut arrays = Vec::with_capacity(names.len());
    for name in names {
        arrays.push(match *name {
            "value" => b.var(
                &msgs
                    .iter()
                    .map(|m| Some(&m.payload[..]))
                    .collect::<Vec<_>>(),
                false,
            )?,
            "key" => b.var(
                &msgs
                    .iter()
                    .map(|m| m.key().map(str::as_bytes))
                    .collect::<Vec<_>>(),
                true,
            )?,
            "topic" => b.var(
                &msgs
                    .iter()
                    .map(|m| Some(m.topic().as_bytes()))
                    .collect::<Vec<_>>(),
                true,
            )?,
            "producer_name" => b.var(
                &msgs
                    .iter()
                    .map(|m| Some(m.producer_name().as_bytes()))
                    .collect::<Vec<_>>(),
                true,
            )?,
            "partition" => b.fixed(
                "int32",
                msgs.iter().map(|m| m.id.partition),
                i32::to_le_bytes,
                None,
            )?,
            "ledger_id" => b.fixed(
                "int64",
                msgs.iter().map(|m| m.id.ledger_id),
                i64::to_le_bytes,
                None,
            )?,
            "entry_id" => b.fixed(
                "int64",
                msgs.iter().map(|m| m.id.entry_id),
                i64::to_le_bytes,
                None,
            )?,
            "batch_index" => b.fixed(
                "int32",
                msgs.iter().map(|m| m.id.batch_index),
                i32::to_le_bytes,
                None,
            )?,
            "publish_time" => b.fixed(
                "ts",
                msgs.iter().map(|m| m.publish_time() as i64),
                i64::to_le_bytes,
                None,
            )?,
            "event_time" => b.fixed(
                "ts",
                msgs.iter().map(|m| m.event_time().unwrap_or(0) as i64),
                i64::to_le_bytes,
                b.validity(msgs.iter().map(|m| m.event_time().is_some())),
            )?,
            "sequence_id" => b.fixed(
                "int64",
                msgs.iter().map(|m| m.sequence_id as i64),
                i64::to_le_bytes,
                None,
            )?,
            "redelivery_count" => b.fixed(
                "int32",
                msgs.iter().map(|m| m.redelivery_count() as i32),
                i32::to_le_bytes,
                None,
            )?,
            "properties" => {
                // map<string, string> = offsets + keys + values.
                let mut count: i32 = 0;
                let offsets = std::iter::once(0).chain(msgs.iter().map(|m| {
                    count += m.properties().len() as i32;
                    count
                }));
                let offsets_arr = ArrowBuilder::new(py, n + 1)?.fixed(
                    "int32",
                    offsets,
                    i32::to_le_bytes,
                    None,
                )?;
                let pkeys = b.var(
                    &msgs
                        .iter()
                        .flat_map(|m| m.properties().iter().map(|(k, _)| Some(k.as_bytes())))
                        .collect::<Vec<_>>(),
                    true,
                )?;
                let pvals = b.var(
                    &msgs
                        .iter()
                        .flat_map(|m| m.properties().iter().map(|(_, v)| Some(v.as_bytes())))
                        .collect::<Vec<_>>(),
                    true,
                )?;
                b.pa()
                    .getattr("MapArray")?
                    .call_method1("from_arrays", (offsets_arr, pkeys, pvals))?
            }
            // Each id's Java-compatible serialized form (MessageIdData), encoded into one
            // values buffer.
            "message_id" => {
                let mut values = Vec::with_capacity(n * 12);
                let mut ends = Vec::with_capacity(n);
                for m in msgs {
                    m.id.to_proto()
                        .encode(&mut values)
                        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
                    ends.push(values.len());
                }
                let mut start = 0;
                let items: Vec<Option<&[u8]>> = ends
                    .iter()
                    .map(|&e| {
                        let s = &values[start..e];
                        start = e;
                        Some(s)
                    })
                    .collect();
                b.var(&items, false)?
            }
            other => unreachable!("column {other} is listed in ARROW_COLUMNS"),
        });
    }
    b.record_batch(arrays, names)
}
