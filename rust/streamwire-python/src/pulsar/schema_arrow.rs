//! Typed Arrow columns for a consumer with a record schema: `receive_arrow` / `read_arrow`
//! give the `value` column as a struct of the record's fields (reader's schema, each
//! message decoded with its writer's version and resolved), nested records as structs,
//! arrays as lists, maps as maps, enums as their symbols. Values go from the decoded
//! record straight into the column buffers: no Python object per row or field.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use streamwire_pulsar::consumer::ReceivedMessage;
use streamwire_pulsar::schema::avro::{AvroSchema, Node, NodeId};
use streamwire_pulsar::schema::value::Value;

use crate::common::arrow::ArrowBuilder;
use crate::pulsar::message::to_record_batch;
use crate::pulsar::schema::{Kind, Typed};
use crate::pulsar::schema_values::schema_error;

static NULL: Value = Value::Null;

/// The record batch of `names` for `msgs`, `value` typed when the schema is a record's.
pub(crate) fn typed_batch<'py>(
    py: Python<'py>,
    typed: Option<&Typed>,
    msgs: &[ReceivedMessage],
    names: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    if let Some(t) = typed.filter(|t| matches!(t.codec.kind, Kind::KeyValue { .. })) {
        return crate::pulsar::schema_arrow_kv::kv_batch(py, t, msgs, names);
    }
    let (Some(t), Some(at)) = (typed, names.iter().position(|n| *n == "value")) else {
        return to_record_batch(py, msgs, names);
    };
    let Some(schema) = t.record_schema() else {
        return to_record_batch(py, msgs, names);
    };
    // The other columns as usual; the raw payload column would be built only to be
    // replaced, so it is not.
    let others: Vec<&str> = names.iter().copied().filter(|n| *n != "value").collect();
    let batch = to_record_batch(py, msgs, &others)?;
    let values = msgs
        .iter()
        .map(|m| t.record_value(py, m))
        .collect::<PyResult<Vec<Value>>>()?;
    let refs: Vec<&Value> = values.iter().collect();
    let b = ArrowBuilder::new(py, msgs.len())?;
    // A message sent with null_value is a Null record: column() makes it a null row.
    let col = column(&b, schema, schema.root, &refs)?;
    let cols = batch.getattr("columns")?.cast_into::<PyList>()?;
    cols.insert(at, col)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("names", PyList::new(py, names)?)?;
    b.pa()
        .getattr("RecordBatch")?
        .call_method("from_arrays", (cols,), Some(&kwargs))
}

pub(crate) fn field<'py>(
    b: &ArrowBuilder<'py>,
    name: &str,
    col: &Bound<'py, PyAny>,
    nullable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    b.pa()
        .call_method1("field", (name, col.getattr("type")?, nullable))
}

/// The column of node `id` for `vals` (one per row of `b`). A null where the node has no
/// null (a null key or value half of a key/value) is a null row of the column.
pub(crate) fn column<'py>(
    b: &ArrowBuilder<'py>,
    s: &AvroSchema,
    id: NodeId,
    vals: &[&Value],
) -> PyResult<Bound<'py, PyAny>> {
    let py = b.pa().py();
    let (id, valid) = match s.nullable_inner(id) {
        Some(inner) => (
            inner,
            b.validity(vals.iter().map(|v| !matches!(v, Value::Null))),
        ),
        None if vals.iter().any(|v| matches!(v, Value::Null)) => (
            id,
            b.validity(vals.iter().map(|v| !matches!(v, Value::Null))),
        ),
        None => (id, None),
    };
    Ok(match s.node(id) {
        Node::Null => b.pa().call_method1("nulls", (vals.len(),))?,
        Node::Boolean => b.bools(
            vals.iter().map(|v| matches!(v, Value::Boolean(true))),
            valid,
        )?,
        Node::Int => b.fixed(
            "int32",
            vals.iter()
                .map(|v| if let Value::Int(i) = v { *i } else { 0 }),
            i32::to_le_bytes,
            valid,
        )?,
        Node::Long => b.fixed(
            "int64",
            vals.iter()
                .map(|v| if let Value::Long(i) = v { *i } else { 0 }),
            i64::to_le_bytes,
            valid,
        )?,
        Node::Float => b.fixed(
            "float32",
            vals.iter()
                .map(|v| if let Value::Float(f) = v { *f } else { 0.0 }),
            f32::to_le_bytes,
            valid,
        )?,
        Node::Double => b.fixed(
            "float64",
            vals.iter()
                .map(|v| if let Value::Double(f) = v { *f } else { 0.0 }),
            f64::to_le_bytes,
            valid,
        )?,
        Node::String => b.var(
            &vals
                .iter()
                .map(|v| match v {
                    Value::String(x) => Some(x.as_bytes()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            true,
        )?,
        Node::Bytes | Node::Fixed { .. } => b.var(
            &vals
                .iter()
                .map(|v| match v {
                    Value::Bytes(x) | Value::Fixed(x) => Some(&x[..]),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            false,
        )?,
        Node::Enum { symbols, .. } => b.var(
            &vals
                .iter()
                .map(|v| match v {
                    Value::Enum(i) => symbols.get(*i as usize).map(String::as_bytes),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            true,
        )?,
        Node::Record(r) => {
            let mut children = Vec::with_capacity(r.fields.len());
            let mut fields = Vec::with_capacity(r.fields.len());
            for (i, f) in r.fields.iter().enumerate() {
                let child_vals: Vec<&Value> = vals
                    .iter()
                    .map(|v| match v {
                        Value::Record(x) => x.get(i).unwrap_or(&NULL),
                        _ => &NULL,
                    })
                    .collect();
                let c = column(b, s, f.node, &child_vals)?;
                fields.push(field(b, &f.name, &c, true)?);
                children.push(c);
            }
            let ty = b.pa().call_method1("struct", (PyList::new(py, fields)?,))?;
            b.nested(ty, vals.len(), valid, None, children)?
        }
        Node::Array(item) => {
            let (offsets, items) = flatten(vals, |v| match v {
                Value::Array(x) => x.iter().collect(),
                _ => Vec::new(),
            });
            let child = column(&b.with_rows(items.len()), s, *item, &items)?;
            let ty = b.pa().call_method1("list_", (child.getattr("type")?,))?;
            b.nested(ty, vals.len(), valid, Some(offsets), vec![child])?
        }
        Node::Map(val) => {
            let (offsets, entries) = flatten(vals, |v| match v {
                Value::Map(x) => x.iter().collect(),
                _ => Vec::new(),
            });
            let cb = b.with_rows(entries.len());
            let keys = cb.var(
                &entries
                    .iter()
                    .map(|(k, _)| Some(k.as_bytes()))
                    .collect::<Vec<_>>(),
                true,
            )?;
            let vs: Vec<&Value> = entries.iter().map(|(_, v)| v).collect();
            let values = column(&cb, s, *val, &vs)?;
            let kf = field(b, "key", &keys, false)?;
            let vf = field(b, "value", &values, true)?;
            let entry_ty = b
                .pa()
                .call_method1("struct", (PyList::new(py, [kf, vf])?,))?;
            let entry = cb.nested(
                entry_ty,
                entries.len(),
                None,
                None,
                vec![keys, values.clone()],
            )?;
            let ty = b.pa().call_method1(
                "map_",
                (b.pa().call_method0("string")?, values.getattr("type")?),
            )?;
            b.nested(ty, vals.len(), valid, Some(offsets), vec![entry])?
        }
        Node::Union(_) => {
            return Err(schema_error(
                py,
                "receive_arrow: only nullable unions (Optional[X]) have an Arrow column",
            ))
        }
    })
}

/// Offsets (`rows + 1`, i32) and the flattened items of a list-like column.
fn flatten<'a, T: 'a>(
    vals: &[&'a Value],
    items: impl Fn(&'a Value) -> Vec<T>,
) -> (Vec<i32>, Vec<T>) {
    let mut offsets = Vec::with_capacity(vals.len() + 1);
    let mut out = Vec::new();
    offsets.push(0);
    for v in vals {
        out.extend(items(v));
        offsets.push(out.len() as i32);
    }
    (offsets, out)
}
