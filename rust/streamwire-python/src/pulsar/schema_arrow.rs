//! Typed Arrow columns for a consumer with a schema: `receive_arrow` / `read_arrow` give the
//! `value` column as a struct of the record's fields (reader's schema, each message decoded
//! with its writer's version and resolved), or for a KEY_VALUE schema `key` and `value`
//! typed per their halves. The binding's half: it fetches writer versions (a round trip the
//! first time) and hands the engine's columns (`streamwire_pulsar::schema::arrow_decode`,
//! `arrow_kv`) to pyarrow. Also `SchemaCodec.arrow_type`, the Arrow type such a read gives
//! (built from zero rows), so that a planner (the Spark Data Source on its driver) knows the
//! columns before reading.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use streamwire_core::arrow_view::ArrayData;
use streamwire_pulsar::consumer::ReceivedMessage;
use streamwire_pulsar::schema::arrow_decode::column;
use streamwire_pulsar::schema::arrow_kv::{half_column, message_halves};
use streamwire_pulsar::schema::value::Value;
use streamwire_pulsar::schema::RecordCodec;

use crate::common::arrow::to_pyarrow;
use crate::pulsar::message::to_record_batch;
use crate::pulsar::schema::{Codec, Kind, PySchemaCodec, Typed};
use crate::pulsar::schema_encode_halves::{arrow_err, half_codec};
use crate::pulsar::schema_values::schema_error;

/// The record batch of `names` for `msgs`: `value` (and for a key/value schema `key`)
/// typed when the schema gives it a type, the other columns as without a schema.
pub(crate) fn typed_batch<'py>(
    py: Python<'py>,
    typed: Option<&Typed>,
    msgs: &[ReceivedMessage],
    names: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let Some(t) = typed else {
        return to_record_batch(py, msgs, names);
    };
    let typed_names: &[&str] = match &t.codec.kind {
        Kind::KeyValue { .. } => &["key", "value"],
        _ if t.record_schema().is_some() => &["value"],
        _ => &[],
    };
    let at: Vec<(usize, &str)> = names
        .iter()
        .enumerate()
        .filter(|(_, n)| typed_names.contains(n))
        .map(|(i, n)| (i, *n))
        .collect();
    if at.is_empty() {
        return to_record_batch(py, msgs, names);
    }
    // The other columns as usual; the raw key and payload columns would be built only to be
    // replaced, so they are not.
    let others: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !typed_names.contains(n))
        .collect();
    let batch = to_record_batch(py, msgs, &others)?;
    let built = match &t.codec.kind {
        Kind::KeyValue { .. } => kv_columns(py, t, msgs, &at)?,
        _ => {
            let values = msgs
                .iter()
                .map(|m| t.record_value(py, m))
                .collect::<PyResult<Vec<Value>>>()?;
            let refs: Vec<&Value> = values.iter().collect();
            let schema = t.record_schema().expect("checked above");
            // A message sent with null_value is a Null record: column() makes it a null row.
            vec![column(schema, schema.root, &refs).map_err(|e| arrow_err(py, e))?]
        }
    };
    let pa = py.import("pyarrow")?;
    let cols = batch.getattr("columns")?.cast_into::<PyList>()?;
    // Ascending positions: each insert lands where `names` has it.
    for ((i, _), col) in at.iter().zip(&built) {
        cols.insert(*i, to_pyarrow(&pa, col)?)?;
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("names", PyList::new(py, names)?)?;
    pa.getattr("RecordBatch")?
        .call_method("from_arrays", (cols,), Some(&kwargs))
}

/// The `key` and `value` columns (as `at` names them) of a key/value consumer's messages:
/// each record half decoded with the writer version's schema of that half.
fn kv_columns(
    py: Python<'_>,
    t: &Typed,
    msgs: &[ReceivedMessage],
    at: &[(usize, &str)],
) -> PyResult<Vec<ArrayData>> {
    let Kind::KeyValue {
        key,
        value,
        separated,
    } = &t.codec.kind
    else {
        return Err(schema_error(py, "not a key/value schema"));
    };
    let mut halves = Vec::with_capacity(msgs.len());
    let mut writers = Vec::with_capacity(msgs.len());
    for m in msgs {
        halves.push(message_halves(m, *separated).map_err(|e| arrow_err(py, e))?);
        writers.push(match m.schema_version() {
            Some(ver) if !ver.is_empty() => t.writer(py, m.topic(), ver)?,
            _ => None,
        });
    }
    let mut out = Vec::with_capacity(at.len());
    for (_, name) in at {
        let key_half = *name == "key";
        let raws: Vec<Option<&[u8]>> = halves
            .iter()
            .map(|h| if key_half { h.0.as_deref() } else { h.1 })
            .collect();
        let ws: Vec<Option<&RecordCodec>> = writers
            .iter()
            .map(|w| {
                let w = w.as_ref()?;
                if key_half {
                    w.key.as_deref()
                } else {
                    w.value.as_deref()
                }
            })
            .collect();
        let half: &Codec = if key_half { key } else { value };
        let h = half_codec(py, half)?;
        out.push(half_column(h, &raws, &ws, msgs).map_err(|e| arrow_err(py, e))?);
    }
    Ok(out)
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
        let codec: &Codec = &self.inner;
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
        let empty =
            half_column(half_codec(py, target)?, &[], &[], &[]).map_err(|e| arrow_err(py, e))?;
        to_pyarrow(&py.import("pyarrow")?, &empty)?.getattr("type")
    }
}
