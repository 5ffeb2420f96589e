//! Typed Arrow columns from decoded records (pure): the `value` column of a `receive_arrow`
//! / `read_arrow` with a record schema is a struct of the record's fields, nested records
//! structs, arrays lists, maps maps, enums their symbols. Values go from the decoded record
//! straight into the column buffers ([`ArrayData`]); a front end hands the buffers on (the
//! Python binding to `pyarrow.Array.from_buffers`).

use streamwire_core::arrow::validity;
use streamwire_core::arrow_view::{ArrayData, DataType};

use super::arrow_encode::ArrowError;
use super::avro::{AvroSchema, Node, NodeId};
use super::value::Value;

static NULL: Value = Value::Null;

/// The column of node `id` of `s` for `vals` (one per row). A null where the node has no
/// null (a null key or value half of a key/value, a null record) is a null row.
pub fn column(s: &AvroSchema, id: NodeId, vals: &[&Value]) -> Result<ArrayData, ArrowError> {
    let n = vals.len();
    let nulls = || validity(vals.iter().map(|v| !matches!(v, Value::Null)), n);
    let (id, valid) = match s.nullable_inner(id) {
        Some(inner) => (inner, nulls()),
        None if vals.iter().any(|v| matches!(v, Value::Null)) => (id, nulls()),
        None => (id, None),
    };
    Ok(match s.node(id) {
        Node::Null => ArrayData::nested(DataType::Null, n, None, None, Vec::new()),
        Node::Boolean => ArrayData::bools(
            n,
            vals.iter().map(|v| matches!(v, Value::Boolean(true))),
            valid,
        ),
        Node::Int => ArrayData::fixed(
            DataType::Int32,
            n,
            vals.iter()
                .map(|v| if let Value::Int(i) = v { *i } else { 0 }),
            i32::to_le_bytes,
            valid,
        ),
        Node::Long => ArrayData::fixed(
            DataType::Int64,
            n,
            vals.iter()
                .map(|v| if let Value::Long(i) = v { *i } else { 0 }),
            i64::to_le_bytes,
            valid,
        ),
        Node::Float => ArrayData::fixed(
            DataType::Float32,
            n,
            vals.iter()
                .map(|v| if let Value::Float(f) = v { *f } else { 0.0 }),
            f32::to_le_bytes,
            valid,
        ),
        Node::Double => ArrayData::fixed(
            DataType::Float64,
            n,
            vals.iter()
                .map(|v| if let Value::Double(f) = v { *f } else { 0.0 }),
            f64::to_le_bytes,
            valid,
        ),
        Node::String => ArrayData::var(
            &vals
                .iter()
                .map(|v| match v {
                    Value::String(x) => Some(x.as_bytes()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            true,
        ),
        Node::Bytes | Node::Fixed { .. } => ArrayData::var(
            &vals
                .iter()
                .map(|v| match v {
                    Value::Bytes(x) | Value::Fixed(x) => Some(&x[..]),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            false,
        ),
        Node::Enum { symbols, .. } => ArrayData::var(
            &vals
                .iter()
                .map(|v| match v {
                    Value::Enum(i) => symbols.get(*i as usize).map(String::as_bytes),
                    _ => None,
                })
                .collect::<Vec<_>>(),
            true,
        ),
        Node::Record(r) => {
            let mut children = Vec::with_capacity(r.fields.len());
            for (i, f) in r.fields.iter().enumerate() {
                let child_vals: Vec<&Value> = vals
                    .iter()
                    .map(|v| match v {
                        Value::Record(x) => x.get(i).unwrap_or(&NULL),
                        _ => &NULL,
                    })
                    .collect();
                children.push(column(s, f.node, &child_vals)?);
            }
            let names = r.fields.iter().map(|f| f.name.clone()).collect();
            ArrayData::nested(DataType::Struct(names), n, valid, None, children)
        }
        Node::Array(item) => {
            let (offsets, items) = flatten(vals, |v| match v {
                Value::Array(x) => x.iter().collect(),
                _ => Vec::new(),
            });
            let child = column(s, *item, &items)?;
            ArrayData::nested(DataType::List, n, valid, Some(offsets), vec![child])
        }
        Node::Map(val) => {
            let (offsets, entries) = flatten(vals, |v| match v {
                Value::Map(x) => x.iter().collect(),
                _ => Vec::new(),
            });
            let keys = ArrayData::var(
                &entries
                    .iter()
                    .map(|(k, _)| Some(k.as_bytes()))
                    .collect::<Vec<_>>(),
                true,
            );
            let vs: Vec<&Value> = entries.iter().map(|(_, v)| v).collect();
            let values = column(s, *val, &vs)?;
            let entry = ArrayData::nested(
                DataType::Struct(vec!["key".into(), "value".into()]),
                entries.len(),
                None,
                None,
                vec![keys, values],
            );
            ArrayData::nested(DataType::Map, n, valid, Some(offsets), vec![entry])
        }
        Node::Union(_) => {
            return Err(ArrowError::Schema(
                "receive_arrow: only nullable unions (Optional[X]) have an Arrow column".into(),
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
