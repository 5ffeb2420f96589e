//! `Message`: one received message, and the Arrow columns built from many of them.
//!
//! A `Message` wraps the engine's message: the payload stays a slice of the network buffer
//! until `data()` copies it once into a Python `bytes`. Messages refuse to pickle (they are
//! tied to the consumer that acknowledges them); pickle `msg.data()` and `msg.message_id`.

use prost::Message as _;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use streamwire_pulsar::consumer::ReceivedMessage;

use crate::client::refuse_pickle;
use crate::message_id::PyMessageId;

/// A message received by a `Consumer` or a `Reader`. Immutable and thread-safe.
#[pyclass(frozen, module = "streamwire._native")]
pub struct Message {
    pub(crate) m: ReceivedMessage,
}

impl Message {
    pub(crate) fn new(m: ReceivedMessage) -> Self {
        Message { m }
    }
}

#[pymethods]
impl Message {
    /// The payload as `bytes` (copied once from the network buffer).
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.m.payload)
    }

    /// The payload as `bytes` (same as `data()`).
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.m.payload)
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

    #[getter]
    fn message_id(&self) -> PyMessageId {
        self.m.id.into()
    }

    /// The topic (partition) the message was read from.
    #[getter]
    fn topic(&self) -> &str {
        self.m.topic()
    }

    #[getter]
    fn redelivery_count(&self) -> u32 {
        self.m.redelivery_count()
    }

    #[getter]
    fn producer_name(&self) -> &str {
        self.m.producer_name()
    }

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

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.Message {} topic={:?} {} bytes key={:?}>",
            self.m.id,
            &**self.m.topic(),
            self.m.payload.len(),
            self.m.key()
        )
    }
}

/// Validity bitmap (LSB first) for `n` rows; None when every row is valid.
fn validity(valid: impl Iterator<Item = bool>, n: usize) -> Option<Vec<u8>> {
    let mut bits = vec![0u8; n.div_ceil(8)];
    let mut all = true;
    for (i, v) in valid.enumerate() {
        if v {
            bits[i / 8] |= 1 << (i % 8);
        } else {
            all = false;
        }
    }
    (!all).then_some(bits)
}

/// A Python `bytes` of `len` bytes filled in place by `fill` (the only copy of the data).
fn bytes_with<'py>(
    py: Python<'py>,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, len, |b| {
        fill(b);
        Ok(())
    })
}

/// Variable-width column written straight into Python bytes: (offsets as i32 or i64
/// little-endian, values, is_large).
fn var_column<'py>(
    py: Python<'py>,
    items: &[Option<&[u8]>],
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, bool)> {
    let total: usize = items.iter().map(|i| i.map_or(0, <[u8]>::len)).sum();
    let large = total > i32::MAX as usize;
    let width = if large { 8 } else { 4 };
    let offsets = bytes_with(py, (items.len() + 1) * width, |b| {
        let mut end = 0usize;
        let mut chunks = b.chunks_exact_mut(width);
        let put = |c: &mut [u8], e: usize| {
            if large {
                c.copy_from_slice(&(e as i64).to_le_bytes());
            } else {
                c.copy_from_slice(&(e as i32).to_le_bytes());
            }
        };
        if let Some(c) = chunks.next() {
            put(c, 0);
        }
        for (c, it) in chunks.zip(items) {
            end += it.map_or(0, <[u8]>::len);
            put(c, end);
        }
    })?;
    let values = bytes_with(py, total, |b| {
        let mut at = 0;
        for it in items.iter().flatten() {
            b[at..at + it.len()].copy_from_slice(it);
            at += it.len();
        }
    })?;
    Ok((offsets, values, large))
}

fn fixed<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    msgs: &[ReceivedMessage],
    f: impl Fn(&ReceivedMessage) -> T,
    to: fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyBytes>> {
    bytes_with(py, msgs.len() * N, |b| {
        for (c, m) in b.chunks_exact_mut(N).zip(msgs) {
            c.copy_from_slice(&to(f(m)));
        }
    })
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
    let Some(cols) = columns else {
        return Ok(ARROW_COLUMNS.to_vec());
    };
    let mut names = Vec::with_capacity(cols.len());
    for c in cols {
        let Some(known) = ARROW_COLUMNS.iter().find(|k| **k == c.as_str()) else {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown column {c:?}; the columns are: {}",
                ARROW_COLUMNS.join(", ")
            )));
        };
        if names.contains(known) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "column {c:?} named twice"
            )));
        }
        names.push(*known);
    }
    Ok(names)
}

/// Build the `names` columns (from `column_list`), in that order.
pub(crate) fn to_record_batch<'py>(
    py: Python<'py>,
    msgs: &[ReceivedMessage],
    names: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let pa = py.import("pyarrow")?;
    let n = msgs.len();
    let buf = |b: Bound<'py, PyBytes>| -> PyResult<Bound<'py, PyAny>> {
        pa.call_method1("py_buffer", (b,))
    };
    let vec_buf = |b: Vec<u8>| buf(PyBytes::new(py, &b));
    let opt_buf = |b: Option<Vec<u8>>| -> PyResult<Bound<'py, PyAny>> {
        match b {
            Some(b) => vec_buf(b),
            None => Ok(py.None().into_bound(py)),
        }
    };
    let array = pa.getattr("Array")?;
    let from_buffers = |ty: Bound<'py, PyAny>,
                        len: usize,
                        bufs: Vec<Bound<'py, PyAny>>|
     -> PyResult<Bound<'py, PyAny>> {
        array.call_method1("from_buffers", (ty, len, PyList::new(py, bufs)?))
    };
    let var = |items: Vec<Option<&[u8]>>, string: bool| -> PyResult<Bound<'py, PyAny>> {
        let len = items.len();
        let valid = validity(items.iter().map(Option::is_some), len);
        let (offsets, values, large) = var_column(py, &items)?;
        let ty = match (string, large) {
            (true, false) => pa.call_method0("string")?,
            (true, true) => pa.call_method0("large_string")?,
            (false, false) => pa.call_method0("binary")?,
            (false, true) => pa.call_method0("large_binary")?,
        };
        from_buffers(ty, len, vec![opt_buf(valid)?, buf(offsets)?, buf(values)?])
    };
    let prim = |ty: &str,
                data: Bound<'py, PyBytes>,
                valid: Option<Vec<u8>>|
     -> PyResult<Bound<'py, PyAny>> {
        let ty = if ty == "ts" {
            pa.call_method1("timestamp", ("ms",))?
        } else {
            pa.call_method0(ty)?
        };
        from_buffers(ty, n, vec![opt_buf(valid)?, buf(data)?])
    };

    let mut arrays = Vec::with_capacity(names.len());
    for name in names {
        arrays.push(match *name {
            "value" => var(msgs.iter().map(|m| Some(&m.payload[..])).collect(), false)?,
            "key" => var(
                msgs.iter().map(|m| m.key().map(str::as_bytes)).collect(),
                true,
            )?,
            "topic" => var(
                msgs.iter().map(|m| Some(m.topic().as_bytes())).collect(),
                true,
            )?,
            "producer_name" => var(
                msgs.iter()
                    .map(|m| Some(m.producer_name().as_bytes()))
                    .collect(),
                true,
            )?,
            "partition" => prim(
                "int32",
                fixed(py, msgs, |m| m.id.partition, i32::to_le_bytes)?,
                None,
            )?,
            "ledger_id" => prim(
                "int64",
                fixed(py, msgs, |m| m.id.ledger_id, i64::to_le_bytes)?,
                None,
            )?,
            "entry_id" => prim(
                "int64",
                fixed(py, msgs, |m| m.id.entry_id, i64::to_le_bytes)?,
                None,
            )?,
            "batch_index" => prim(
                "int32",
                fixed(py, msgs, |m| m.id.batch_index, i32::to_le_bytes)?,
                None,
            )?,
            "publish_time" => prim(
                "ts",
                fixed(py, msgs, |m| m.publish_time() as i64, i64::to_le_bytes)?,
                None,
            )?,
            "event_time" => prim(
                "ts",
                fixed(
                    py,
                    msgs,
                    |m| m.event_time().unwrap_or(0) as i64,
                    i64::to_le_bytes,
                )?,
                validity(msgs.iter().map(|m| m.event_time().is_some()), n),
            )?,
            "sequence_id" => prim(
                "int64",
                fixed(py, msgs, |m| m.sequence_id as i64, i64::to_le_bytes)?,
                None,
            )?,
            "redelivery_count" => prim(
                "int32",
                fixed(py, msgs, |m| m.redelivery_count() as i32, i32::to_le_bytes)?,
                None,
            )?,
            "properties" => {
                // map<string, string> = offsets + keys + values.
                let mut map_offsets = Vec::with_capacity((n + 1) * 4);
                let mut count: i32 = 0;
                map_offsets.extend_from_slice(&0i32.to_le_bytes());
                for m in msgs {
                    count += m.properties().len() as i32;
                    map_offsets.extend_from_slice(&count.to_le_bytes());
                }
                let pkeys = var(
                    msgs.iter()
                        .flat_map(|m| m.properties().iter().map(|(k, _)| Some(k.as_bytes())))
                        .collect(),
                    true,
                )?;
                let pvals = var(
                    msgs.iter()
                        .flat_map(|m| m.properties().iter().map(|(_, v)| Some(v.as_bytes())))
                        .collect(),
                    true,
                )?;
                let offsets_arr = from_buffers(
                    pa.call_method0("int32")?,
                    n + 1,
                    vec![py.None().into_bound(py), vec_buf(map_offsets)?],
                )?;
                pa.getattr("MapArray")?
                    .call_method1("from_arrays", (offsets_arr, pkeys, pvals))?
            }
            // Each id's Java-compatible serialized form (MessageIdData), encoded straight into
            // one values buffer.
            "message_id" => {
                let mut values = Vec::with_capacity(n * 12);
                let mut offsets = Vec::with_capacity((n + 1) * 4);
                offsets.extend_from_slice(&0i32.to_le_bytes());
                for m in msgs {
                    m.id.to_proto()
                        .encode(&mut values)
                        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
                    let end = i32::try_from(values.len()).map_err(|_| {
                        pyo3::exceptions::PyOverflowError::new_err("message id column over 2 GiB")
                    })?;
                    offsets.extend_from_slice(&end.to_le_bytes());
                }
                from_buffers(
                    pa.call_method0("binary")?,
                    n,
                    vec![
                        py.None().into_bound(py),
                        vec_buf(offsets)?,
                        vec_buf(values)?,
                    ],
                )?
            }
            other => unreachable!("column {other} is listed in ARROW_COLUMNS"),
        });
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("names", PyList::new(py, names)?)?;
    pa.getattr("RecordBatch")?.call_method(
        "from_arrays",
        (PyList::new(py, arrays)?,),
        Some(&kwargs),
    )
}
