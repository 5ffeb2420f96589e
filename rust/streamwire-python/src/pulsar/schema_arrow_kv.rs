//! Typed Arrow columns for a consumer with a KEY_VALUE schema: `receive_arrow` / `read_arrow`
//! give `key` and `value` typed per their halves — a struct column for a record (JSON, Avro)
//! or PROTOBUF_NATIVE half, a string or binary column for a STRING or BYTES half — instead of
//! the message key and the raw payload. An INLINE payload's halves are slices of it (no
//! copy); a SEPARATED message's key half is its base64 message key. Each record half is
//! decoded with the writer version's schema of that half and resolved to the reader's, as
//! `receive` does.
//!
//! Also `SchemaCodec.arrow_type`: the Arrow type such a read gives (built from zero rows), so
//! that a planner (the Spark Data Source on its driver) knows the columns before reading.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use streamwire_pulsar::consumer::ReceivedMessage;
use streamwire_pulsar::schema::keyvalue::split_halves;
use streamwire_pulsar::schema::value::Value;
use streamwire_pulsar::schema::RecordCodec;

use crate::common::arrow::ArrowBuilder;
use crate::pulsar::message::to_record_batch;
use crate::pulsar::schema::{b64, decode_resolved, Codec, Kind, PySchemaCodec, Typed};
use crate::pulsar::schema_arrow::column;
use crate::pulsar::schema_values::schema_error;

/// One message's halves: raw bytes (borrowed from the payload where they can be) and the
/// writer version's record codecs of each half (None: the reader's own).
struct Halves<'a> {
    key: Option<std::borrow::Cow<'a, [u8]>>,
    value: Option<&'a [u8]>,
    key_writer: Option<std::sync::Arc<RecordCodec>>,
    value_writer: Option<std::sync::Arc<RecordCodec>>,
}

fn halves<'a>(py: Python<'_>, t: &Typed, m: &'a ReceivedMessage) -> PyResult<Halves<'a>> {
    let Kind::KeyValue { separated, .. } = &t.codec.kind else {
        return Err(schema_error(py, "not a key/value schema"));
    };
    let (key, value) = if *separated {
        let k = match m.key() {
            Some(k) => Some(std::borrow::Cow::Owned(b64::decode(k).ok_or_else(
                || {
                    schema_error(
                        py,
                        format!(
                            "message {:?}: the key of a SEPARATED key/value is not base64",
                            m.id
                        ),
                    )
                },
            )?)),
            None => None,
        };
        (k, (!m.null_value()).then_some(&m.payload[..]))
    } else {
        let (k, v) = split_halves(&m.payload)
            .map_err(|e| schema_error(py, format!("message {:?}: {}", m.id, e.0)))?;
        (k.map(std::borrow::Cow::Borrowed), v)
    };
    let writer = match m.schema_version() {
        Some(ver) if !ver.is_empty() => t.writer(py, m.topic(), ver)?,
        _ => None,
    };
    Ok(Halves {
        key,
        value,
        key_writer: writer.as_ref().and_then(|w| w.key.clone()),
        value_writer: writer.as_ref().and_then(|w| w.value.clone()),
    })
}

/// The record batch of `names` for `msgs` of a KEY_VALUE consumer: `key` and `value` typed.
pub(crate) fn kv_batch<'py>(
    py: Python<'py>,
    t: &Typed,
    msgs: &[ReceivedMessage],
    names: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let Kind::KeyValue { key, value, .. } = &t.codec.kind else {
        return to_record_batch(py, msgs, names);
    };
    let typed_at: Vec<(usize, &str)> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| matches!(**n, "key" | "value"))
        .map(|(i, n)| (i, *n))
        .collect();
    if typed_at.is_empty() {
        return to_record_batch(py, msgs, names);
    }
    let others: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !matches!(*n, "key" | "value"))
        .collect();
    let batch = to_record_batch(py, msgs, &others)?;
    let hs = msgs
        .iter()
        .map(|m| halves(py, t, m))
        .collect::<PyResult<Vec<_>>>()?;
    let b = ArrowBuilder::new(py, msgs.len())?;
    let cols = batch.getattr("columns")?.cast_into::<PyList>()?;
    // Ascending positions: each insert lands where `names` has it.
    for (at, name) in typed_at {
        let col = if name == "key" {
            let raws: Vec<Option<&[u8]>> = hs.iter().map(|h| h.key.as_deref()).collect();
            let ws: Vec<Option<&RecordCodec>> =
                hs.iter().map(|h| h.key_writer.as_deref()).collect();
            half_column(&b, key, &raws, &ws, msgs)?
        } else {
            let raws: Vec<Option<&[u8]>> = hs.iter().map(|h| h.value).collect();
            let ws: Vec<Option<&RecordCodec>> =
                hs.iter().map(|h| h.value_writer.as_deref()).collect();
            half_column(&b, value, &raws, &ws, msgs)?
        };
        cols.insert(at, col)?;
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("names", PyList::new(py, names)?)?;
    b.pa()
        .getattr("RecordBatch")?
        .call_method("from_arrays", (cols,), Some(&kwargs))
}

/// The column of one half: `raws[i]` is row `i`'s bytes (None: a null half), `writers[i]`
/// the writer's record codec of that half; `msgs` names a message in errors (may be empty).
fn half_column<'py>(
    b: &ArrowBuilder<'py>,
    half: &Codec,
    raws: &[Option<&[u8]>],
    writers: &[Option<&RecordCodec>],
    msgs: &[ReceivedMessage],
) -> PyResult<Bound<'py, PyAny>> {
    let py = b.pa().py();
    let which = |i: usize| {
        msgs.get(i)
            .map_or_else(|| format!("row {i}"), |m| format!("message {:?}", m.id))
    };
    match &half.kind {
        Kind::Bytes => b.var(raws, false),
        Kind::String => {
            // Arrow strings are UTF-8 by contract; a column must not carry other bytes.
            if let Some(i) = raws
                .iter()
                .position(|r| r.is_some_and(|x| std::str::from_utf8(x).is_err()))
            {
                return Err(schema_error(
                    py,
                    format!("{}: a STRING half is not UTF-8", which(i)),
                ));
            }
            b.var(raws, true)
        }
        Kind::Record { codec, .. } => {
            let mut vals = Vec::with_capacity(raws.len());
            for (i, r) in raws.iter().enumerate() {
                vals.push(match r {
                    None => Value::Null,
                    Some(p) => decode_resolved(codec, writers.get(i).copied().flatten(), p)
                        .map_err(|e| {
                            schema_error(py, format!("cannot decode {}: {}", which(i), e.0))
                        })?,
                });
            }
            let refs: Vec<&Value> = vals.iter().collect();
            column(b, &codec.schema, codec.schema.root, &refs)
        }
        Kind::Protobuf(p) => {
            let mut vals = Vec::with_capacity(raws.len());
            for (i, r) in raws.iter().enumerate() {
                vals.push(match r {
                    None => Value::Null,
                    Some(x) => p.value(x).map_err(|e| {
                        schema_error(py, format!("cannot decode {}: {e}", which(i)))
                    })?,
                });
            }
            let refs: Vec<&Value> = vals.iter().collect();
            let s = p.arrow_schema();
            column(b, s, s.root, &refs)
        }
        Kind::KeyValue { .. } => Err(schema_error(py, "a key/value schema cannot nest")),
    }
}

/// The Arrow type of the `key` or `value` column of a typed read with `codec`.
fn arrow_type_of<'py>(py: Python<'py>, codec: &Codec, half: &str) -> PyResult<Bound<'py, PyAny>> {
    let b = ArrowBuilder::new(py, 0)?;
    let target = match (&codec.kind, half) {
        (Kind::KeyValue { key, .. }, "key") => &**key,
        (Kind::KeyValue { value, .. }, "value") => &**value,
        (_, "value") => codec,
        (_, other) => {
            return Err(schema_error(
                py,
                format!("arrow_type: half is 'value' (or 'key' of a key/value), not {other:?}"),
            ))
        }
    };
    half_column(&b, target, &[], &[], &[])?.getattr("type")
}

#[pymethods]
impl PySchemaCodec {
    /// The Arrow type of the column a typed `receive_arrow` / `read_arrow` gives for this
    /// schema (a struct for a record or protobuf message, string or binary otherwise).
    ///
    /// Args:
    ///     half: "value", or "key" for the key half of a key/value schema.
    #[pyo3(signature = (half="value"))]
    fn arrow_type<'py>(&self, py: Python<'py>, half: &str) -> PyResult<Bound<'py, PyAny>> {
        arrow_type_of(py, &self.inner, half)
    }
}
