//! Record values from Arrow columns (pure), for a typed `send_many` of a record batch (or
//! struct array) instead of a sequence of values: each column is read once through its
//! buffers ([`ColumnView`], no per-row object of any front end) into [`Value`]s of the record
//! schema, which the record codec then encodes. The Spark Data Source writes typed
//! DataFrames through this, one call per Arrow batch.
//!
//! Columns are matched to the record's fields by name; a field without a column is null
//! (an error when its type is not nullable); a column that is no field is an error, so a
//! misspelt column is not dropped silently. Arrow types widen as Avro's promotion rules do
//! (int8..int32 to `int`, any integer to `long`, integers and floats to `float`/`double`);
//! timestamps and dates are written as their integer value (the unit of the column).
//!
//! Every error's text is what the Python binding raises as `SchemaError` (the bad-input
//! tables pin them): keep them as they are.

use streamwire_core::arrow_view::{ColumnView, LayoutError, ViewType};

use super::avro::{AvroSchema, Node, NodeId};
use super::value::{type_name, Value};

/// Why Arrow columns cannot be read or built for a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArrowError {
    /// The columns or values do not fit the schema (a type, a null, a value out of range).
    #[error("{0}")]
    Schema(String),
    /// The buffers are not a valid Arrow layout.
    #[error("{0}")]
    Layout(String),
}

impl From<LayoutError> for ArrowError {
    fn from(e: LayoutError) -> Self {
        ArrowError::Layout(e.0)
    }
}

fn err(msg: impl Into<String>) -> ArrowError {
    ArrowError::Schema(msg.into())
}

/// How strictly Arrow columns are read into values.
#[derive(Debug, Clone, Copy, Default)]
pub struct ArrowRead {
    /// A null (or a missing column) where the schema has no null is a `Value::Null` instead
    /// of an error: PROTOBUF_NATIVE fields without presence, which the encoder then leaves
    /// out (the reader sees the protobuf default, as protobuf has it).
    pub nulls_as_absent: bool,
    /// A null row of a struct array is a `Value::Null` (a null half of a key/value) instead
    /// of an error.
    pub null_rows: bool,
}

/// Rows given as named columns: a record batch or table (`batch`; a table's columns may be
/// in several chunks), or a struct array (its fields, and its rows' validity).
#[derive(Debug, Clone)]
pub struct Records<'a> {
    pub rows: usize,
    pub columns: Vec<(String, Vec<ColumnView<'a>>)>,
    /// Whether each row is valid (a struct array with nulls), None: all are.
    pub row_valid: Option<Vec<bool>>,
    /// A record batch or table (not a struct array).
    pub batch: bool,
}

impl<'a> Records<'a> {
    /// The rows of a struct column.
    pub fn of_struct(col: ColumnView<'a>) -> Records<'a> {
        let ViewType::Struct(names) = &col.ty else {
            return Records {
                rows: col.len,
                columns: Vec::new(),
                row_valid: None,
                batch: false,
            };
        };
        let row_valid = col
            .validity
            .is_some()
            .then(|| (0..col.len).map(|i| col.is_valid(i)).collect());
        let names = names.clone();
        Records {
            rows: col.len,
            columns: names
                .into_iter()
                .zip(col.children.into_iter().map(|c| vec![c]))
                .collect(),
            row_valid,
            batch: false,
        }
    }

    fn column(&self, name: &str) -> Option<&[ColumnView<'a>]> {
        self.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| &c[..])
    }
}

/// The record values of every row of `rows`, read as `how` says.
pub fn arrow_records(
    schema: &AvroSchema,
    rows: &Records<'_>,
    how: ArrowRead,
) -> Result<Vec<Value>, ArrowError> {
    let root = schema.nullable_inner(schema.root).unwrap_or(schema.root);
    let Node::Record(rec) = schema.node(root) else {
        return Err(err(
            "send_many takes Arrow columns only for a record schema",
        ));
    };
    let n = rows.rows;
    for (name, _) in &rows.columns {
        if !rec.fields.iter().any(|f| &f.name == name) {
            return Err(err(format!(
                "column {name:?} is not a field of record {} (its fields: {})",
                rec.name,
                rec.fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let mut columns = Vec::with_capacity(rec.fields.len());
    for f in &rec.fields {
        let col = if let Some(chunks) = rows.column(&f.name) {
            // A table's column comes in chunks, read one after the other.
            let mut out = Vec::with_capacity(n);
            for c in chunks {
                out.extend(column(schema, f.node, c, &f.name, how)?);
            }
            out
        } else if schema.nullable_inner(f.node).is_some()
            || matches!(schema.node(f.node), Node::Null)
            || how.nulls_as_absent
        {
            vec![Value::Null; n]
        } else {
            return Err(err(format!(
                "no column for field {:?} ({}), which is not nullable",
                f.name,
                type_name(schema, f.node)
            )));
        };
        columns.push(col.into_iter());
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let fields: Vec<Value> = columns
            .iter_mut()
            .map(|c| c.next().unwrap_or(Value::Null))
            .collect();
        if rows.row_valid.as_ref().is_some_and(|v| !v[i]) {
            if !how.null_rows {
                return Err(err(format!("row {i} is null, not a record")));
            }
            out.push(Value::Null);
            continue;
        }
        out.push(Value::Record(fields));
    }
    Ok(out)
}

/// Whether an integer column of this type may be written as an Avro int or long.
fn is_int(ty: &ViewType) -> bool {
    match ty {
        // uint64 does not fit a long; a duration is no point in time.
        ViewType::Int { bytes, signed } => *signed || *bytes < 8,
        ViewType::Temporal { .. } => true,
        _ => false,
    }
}

fn is_string(ty: &ViewType) -> bool {
    matches!(ty, ViewType::Binary { utf8: true, .. })
}

/// The values of column `arr` as node `id` of `s` (one per row); `path` names it in errors.
fn column(
    s: &AvroSchema,
    id: NodeId,
    arr: &ColumnView<'_>,
    path: &str,
    how: ArrowRead,
) -> Result<Vec<Value>, ArrowError> {
    let n = arr.len;
    let ty = &arr.type_name;
    let inner = s.nullable_inner(id);
    let node_id = inner.unwrap_or(id);
    let nullable = inner.is_some() || matches!(s.node(id), Node::Null) || how.nulls_as_absent;
    if arr.ty == ViewType::Null {
        if !nullable && n > 0 {
            return Err(not_nullable(s, id, path, 0));
        }
        return Ok(vec![Value::Null; n]);
    }
    let mismatch = || {
        err(format!(
            "column {path:?} is {ty}, which does not fit the schema's {}",
            type_name(s, node_id)
        ))
    };
    let values: Vec<Value> = match s.node(node_id) {
        Node::Null => vec![Value::Null; n],
        Node::Boolean => {
            if arr.ty != ViewType::Boolean {
                return Err(mismatch());
            }
            arr.bools().into_iter().map(Value::Boolean).collect()
        }
        Node::Int => {
            if !is_int(&arr.ty) {
                return Err(mismatch());
            }
            let mut out = Vec::with_capacity(n);
            for (i, x) in arr.ints()?.into_iter().enumerate() {
                match i32::try_from(x) {
                    Ok(v) => out.push(Value::Int(v)),
                    Err(_) if arr.is_valid(i) => {
                        return Err(err(format!(
                            "column {path:?} row {i}: {x} does not fit an Avro int"
                        )))
                    }
                    Err(_) => out.push(Value::Int(0)),
                }
            }
            out
        }
        Node::Long => {
            if !is_int(&arr.ty) {
                return Err(mismatch());
            }
            arr.ints()?.into_iter().map(Value::Long).collect()
        }
        Node::Float | Node::Double => {
            if !(is_int(&arr.ty) || matches!(arr.ty, ViewType::Float { .. })) {
                return Err(mismatch());
            }
            let double = matches!(s.node(node_id), Node::Double);
            arr.floats()?
                .into_iter()
                .map(|f| {
                    if double {
                        Value::Double(f)
                    } else {
                        Value::Float(f as f32)
                    }
                })
                .collect()
        }
        Node::String => {
            if !is_string(&arr.ty) {
                return Err(mismatch());
            }
            arr.bytes()?
                .into_iter()
                // Arrow strings are UTF-8 by contract; pyarrow validates them on creation.
                .map(|b| Value::String(String::from_utf8(b.to_vec()).unwrap_or_default()))
                .collect()
        }
        Node::Bytes | Node::Fixed { .. } => {
            if !matches!(arr.ty, ViewType::Binary { .. } | ViewType::FixedBinary(_)) {
                return Err(mismatch());
            }
            let fixed = match s.node(node_id) {
                Node::Fixed { size, .. } => Some(*size),
                _ => None,
            };
            let mut out = Vec::with_capacity(n);
            for (i, b) in arr.bytes()?.into_iter().enumerate() {
                out.push(match fixed {
                    Some(size) => {
                        if b.len() != size && arr.is_valid(i) {
                            return Err(err(format!(
                                "column {path:?} row {i}: {} bytes, the fixed type takes {size}",
                                b.len()
                            )));
                        }
                        Value::Fixed(b.to_vec())
                    }
                    None => Value::Bytes(b.to_vec()),
                });
            }
            out
        }
        Node::Enum { symbols, .. } => {
            if !is_string(&arr.ty) {
                return Err(mismatch());
            }
            let mut out = Vec::with_capacity(n);
            for (i, b) in arr.bytes()?.into_iter().enumerate() {
                match symbols.iter().position(|s| s.as_bytes() == b) {
                    Some(k) => out.push(Value::Enum(k as u32)),
                    None if arr.is_valid(i) => {
                        return Err(err(format!(
                            "column {path:?} row {i}: {:?} is not a symbol of the enum ({})",
                            String::from_utf8_lossy(b),
                            symbols.join(", ")
                        )))
                    }
                    None => out.push(Value::Enum(0)),
                }
            }
            out
        }
        Node::Record(r) => {
            let ViewType::Struct(names) = &arr.ty else {
                return Err(mismatch());
            };
            if let Some(extra) = names
                .iter()
                .find(|c| !r.fields.iter().any(|f| &f.name == *c))
            {
                return Err(err(format!(
                    "{path}.{extra} is not a field of record {}",
                    r.name
                )));
            }
            let mut cols = Vec::with_capacity(r.fields.len());
            for f in &r.fields {
                let sub = format!("{path}.{}", f.name);
                let c = match names.iter().position(|c| c == &f.name) {
                    Some(k) => match arr.children.get(k) {
                        Some(child) => column(s, f.node, child, &sub, how)?,
                        None => return Err(err(format!("{sub}: no child array"))),
                    },
                    None if s.nullable_inner(f.node).is_some() || how.nulls_as_absent => {
                        vec![Value::Null; n]
                    }
                    None => {
                        return Err(err(format!(
                            "no column for field {sub:?}, which is not nullable"
                        )))
                    }
                };
                cols.push(c.into_iter());
            }
            (0..n)
                .map(|_| {
                    Value::Record(
                        cols.iter_mut()
                            .map(|c| c.next().unwrap_or(Value::Null))
                            .collect(),
                    )
                })
                .collect()
        }
        Node::Array(item) => {
            if !matches!(arr.ty, ViewType::List { .. }) {
                return Err(mismatch());
            }
            let offs = arr.list_offsets()?;
            let values = child(arr, 0, path)?;
            let (lo, hi) = (offs[0], offs[n]);
            let items = column(
                s,
                *item,
                &values.slice(lo, hi.saturating_sub(lo)),
                &format!("{path}[]"),
                how,
            )?;
            no_null_items(s, *item, &items, path, how)?;
            let mut items = items.into_iter();
            (0..n)
                .map(|i| {
                    Value::Array(
                        items
                            .by_ref()
                            .take(offs[i + 1].saturating_sub(offs[i]))
                            .collect(),
                    )
                })
                .collect()
        }
        Node::Map(val) => {
            if arr.ty != ViewType::Map {
                return Err(mismatch());
            }
            let offs = arr.list_offsets()?;
            let (lo, hi) = (offs[0], offs[n]);
            let len = hi.saturating_sub(lo);
            let keys = child(arr, 0, path)?.slice(lo, len);
            if !is_string(&keys.ty) {
                return Err(err(format!(
                    "column {path:?}: map keys must be strings, not {}",
                    keys.type_name
                )));
            }
            let keys = keys.bytes()?;
            let items = child(arr, 1, path)?.slice(lo, len);
            let vals = column(s, *val, &items, &format!("{path}{{}}"), how)?;
            no_null_items(s, *val, &vals, path, how)?;
            let mut pairs = keys
                .into_iter()
                .map(|k| String::from_utf8(k.to_vec()).unwrap_or_default())
                .zip(vals);
            (0..n)
                .map(|i| {
                    Value::Map(
                        pairs
                            .by_ref()
                            .take(offs[i + 1].saturating_sub(offs[i]))
                            .collect(),
                    )
                })
                .collect()
        }
        Node::Union(_) => {
            return Err(err(format!(
                "column {path:?}: only nullable unions (null and one type) take Arrow columns"
            )))
        }
    };
    if arr.validity.is_none() {
        return Ok(values);
    }
    let mut out = values;
    for (i, x) in out.iter_mut().enumerate() {
        if !arr.is_valid(i) {
            if !nullable {
                return Err(not_nullable(s, id, path, i));
            }
            *x = Value::Null;
        }
    }
    Ok(out)
}

fn child<'v, 'a>(
    arr: &'v ColumnView<'a>,
    i: usize,
    path: &str,
) -> Result<&'v ColumnView<'a>, ArrowError> {
    arr.children
        .get(i)
        .ok_or_else(|| ArrowError::Layout(format!("column {path:?}: no child array")))
}

/// Nulls read as absent fields must not hide in lists and maps: a protobuf repeated field
/// or map has no null item, and leaving it out would drop it silently.
fn no_null_items(
    s: &AvroSchema,
    item: NodeId,
    items: &[Value],
    path: &str,
    how: ArrowRead,
) -> Result<(), ArrowError> {
    if !how.nulls_as_absent || s.nullable_inner(item).is_some() {
        return Ok(());
    }
    match items.iter().position(|v| matches!(v, Value::Null)) {
        Some(i) => Err(err(format!(
            "column {path:?}: item {i} is null, which a repeated field or map cannot hold"
        ))),
        None => Ok(()),
    }
}

fn not_nullable(s: &AvroSchema, id: NodeId, path: &str, row: usize) -> ArrowError {
    err(format!(
        "column {path:?} row {row} is null, but the schema's {} is not nullable",
        type_name(s, id)
    ))
}
