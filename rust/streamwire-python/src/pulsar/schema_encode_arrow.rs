//! Record values from Arrow columns, for a typed `send_many` given a `pyarrow.RecordBatch`
//! (or `StructArray`) instead of a sequence of Python values: each column is read once
//! through its buffers (no Python object per row or field) into [`Value`]s of the record
//! schema, which the record codec then encodes. The Spark Data Source writes typed
//! DataFrames through this, one call per Arrow batch.
//!
//! Columns are matched to the record's fields by name; a field without a column is null
//! (an error when its type is not nullable); a column that is no field is an error, so a
//! misspelt column is not dropped silently. Arrow types widen as Avro's promotion rules do
//! (int8..int32 to `int`, any integer to `long`, integers and floats to `float`/`double`);
//! timestamps and dates are written as their integer value (the unit of the column).

use pyo3::prelude::*;

use streamwire_pulsar::schema::avro::{AvroSchema, Node, NodeId};
use streamwire_pulsar::schema::value::{type_name, Value};

use crate::common::bytes_like::raw_buffer_bytes as bytes_of;
use crate::pulsar::schema_values::schema_error;

/// Whether `values` is a `pyarrow.RecordBatch` / `Table` or a struct `pyarrow.Array`.
pub(crate) fn is_arrow_records(values: &Bound<'_, PyAny>) -> bool {
    if values.hasattr("num_rows").unwrap_or(false) && values.hasattr("schema").unwrap_or(false) {
        return true;
    }
    values.hasattr("buffers").unwrap_or(false)
        && arrow_type(values).is_ok_and(|t| t.starts_with("struct<"))
}

/// How strictly Arrow columns are read into values.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ArrowRead {
    /// A null (or a missing column) where the schema has no null is a `Value::Null` instead
    /// of an error: PROTOBUF_NATIVE fields without presence, which the encoder then leaves
    /// out (the reader sees the protobuf default, as protobuf has it).
    pub nulls_as_absent: bool,
    /// A null row of a struct array is a `Value::Null` (a null half of a key/value) instead
    /// of an error.
    pub null_rows: bool,
}

/// The record values of every row of `values` (a record batch, table or struct array),
/// read as `how` says.
pub(crate) fn arrow_records(
    py: Python<'_>,
    schema: &AvroSchema,
    values: &Bound<'_, PyAny>,
    how: ArrowRead,
) -> PyResult<Vec<Value>> {
    let root = schema.nullable_inner(schema.root).unwrap_or(schema.root);
    let Node::Record(rec) = schema.node(root) else {
        return Err(schema_error(
            py,
            "send_many takes Arrow columns only for a record schema",
        ));
    };
    // A Table's columns are chunked arrays, which `column` reads chunk by chunk.
    let batch = values.clone();
    let (n, names, struct_valid) = if batch.hasattr("num_rows")? {
        let names: Vec<String> = batch.getattr("schema")?.getattr("names")?.extract()?;
        (batch.getattr("num_rows")?.extract::<usize>()?, names, None)
    } else {
        let ty = batch.getattr("type")?;
        let k: usize = ty.getattr("num_fields")?.extract()?;
        let mut names = Vec::with_capacity(k);
        for i in 0..k {
            names.push(ty.call_method1("field", (i,))?.getattr("name")?.extract()?);
        }
        (batch.len()?, names, Validity::of(&batch)?)
    };
    for name in &names {
        if !rec.fields.iter().any(|f| &f.name == name) {
            return Err(schema_error(
                py,
                format!(
                    "column {name:?} is not a field of record {} (its fields: {})",
                    rec.name,
                    rec.fields
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    let mut columns = Vec::with_capacity(rec.fields.len());
    for f in &rec.fields {
        let col = if names.contains(&f.name) {
            let arr = if batch.hasattr("num_rows")? {
                batch.call_method1("column", (f.name.as_str(),))?
            } else {
                batch.call_method1("field", (f.name.as_str(),))?
            };
            column(py, schema, f.node, &arr, &f.name, how)?
        } else if schema.nullable_inner(f.node).is_some()
            || matches!(schema.node(f.node), Node::Null)
            || how.nulls_as_absent
        {
            vec![Value::Null; n]
        } else {
            return Err(schema_error(
                py,
                format!(
                    "no column for field {:?} ({}), which is not nullable",
                    f.name,
                    type_name(schema, f.node)
                ),
            ));
        };
        columns.push(col.into_iter());
    }
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        let fields: Vec<Value> = columns
            .iter_mut()
            .map(|c| c.next().unwrap_or(Value::Null))
            .collect();
        if struct_valid.as_ref().is_some_and(|v| !v.get(i)) {
            if !how.null_rows {
                return Err(schema_error(py, format!("row {i} is null, not a record")));
            }
            rows.push(Value::Null);
            continue;
        }
        rows.push(Value::Record(fields));
    }
    Ok(rows)
}

pub(crate) fn arrow_type(arr: &Bound<'_, PyAny>) -> PyResult<String> {
    arr.getattr("type")?.str()?.extract()
}

/// The `i`th buffer of `arr` itself (`buffers()` lists the children's after its own).
fn buffer(arr: &Bound<'_, PyAny>, i: usize) -> PyResult<Option<Vec<u8>>> {
    let bufs = arr.call_method0("buffers")?;
    let b = bufs.get_item(i)?;
    if b.is_none() {
        return Ok(None);
    }
    bytes_of(&b).map(Some)
}

/// A validity bitmap and the array's offset into it.
pub(crate) struct Validity {
    bits: Vec<u8>,
    offset: usize,
}

impl Validity {
    pub(crate) fn of(arr: &Bound<'_, PyAny>) -> PyResult<Option<Validity>> {
        if arr.getattr("null_count")?.extract::<usize>()? == 0 {
            return Ok(None);
        }
        Ok(buffer(arr, 0)?.map(|bits| Validity {
            bits,
            offset: arr.getattr("offset").and_then(|o| o.extract()).unwrap_or(0),
        }))
    }

    pub(crate) fn get(&self, i: usize) -> bool {
        bit(&self.bits, self.offset + i)
    }
}

fn bit(bits: &[u8], i: usize) -> bool {
    bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
}

/// The integers of an integer, date or timestamp column (nulls as 0).
fn ints(py: Python<'_>, arr: &Bound<'_, PyAny>, ty: &str, n: usize) -> PyResult<Vec<i64>> {
    let (width, signed) = match ty {
        "int8" => (1, true),
        "uint8" => (1, false),
        "int16" => (2, true),
        "uint16" => (2, false),
        "int32" | "date32[day]" => (4, true),
        "uint32" => (4, false),
        "int64" | "date64[ms]" => (8, true),
        t if t.starts_with("timestamp[") || t.starts_with("duration[") => (8, true),
        other => return Err(schema_error(py, format!("not an integer column: {other}"))),
    };
    let offset: usize = arr.getattr("offset")?.extract()?;
    let data = buffer(arr, 1)?.unwrap_or_default();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let at = (offset + i) * width;
        let Some(b) = data.get(at..at + width) else {
            return Err(schema_error(py, "an Arrow data buffer is too short"));
        };
        let mut raw = [0u8; 8];
        raw[..width].copy_from_slice(b);
        let v = match (width, signed) {
            (1, true) => i64::from(b[0] as i8),
            (2, true) => i64::from(i16::from_le_bytes([b[0], b[1]])),
            (4, true) => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            (8, _) => i64::from_le_bytes(raw),
            _ => i64::from_le_bytes(raw), // unsigned below 64 bits: zero-extended
        };
        out.push(v);
    }
    Ok(out)
}

/// The floats of a float32 / float64 column, or of an integer column.
fn floats(py: Python<'_>, arr: &Bound<'_, PyAny>, ty: &str, n: usize) -> PyResult<Vec<f64>> {
    let width = match ty {
        "float" => 4,
        "double" => 8,
        _ => {
            return Ok(ints(py, arr, ty, n)?
                .into_iter()
                .map(|i| i as f64)
                .collect())
        }
    };
    let offset: usize = arr.getattr("offset")?.extract()?;
    let data = buffer(arr, 1)?.unwrap_or_default();
    (0..n)
        .map(|i| {
            let at = (offset + i) * width;
            match data.get(at..at + width) {
                Some(b) if width == 4 => {
                    Ok(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                }
                Some(b) => Ok(f64::from_le_bytes(b.try_into().expect("8 bytes"))),
                None => Err(schema_error(py, "an Arrow data buffer is too short")),
            }
        })
        .collect()
}

/// The byte strings of a (large) binary / string or fixed-size binary column.
pub(crate) fn var(
    py: Python<'_>,
    arr: &Bound<'_, PyAny>,
    ty: &str,
    n: usize,
) -> PyResult<Vec<Vec<u8>>> {
    let offset: usize = arr.getattr("offset")?.extract()?;
    if let Some(size) = ty
        .strip_prefix("fixed_size_binary[")
        .and_then(|s| s.strip_suffix(']'))
        .and_then(|s| s.parse::<usize>().ok())
    {
        let data = buffer(arr, 1)?.unwrap_or_default();
        return (0..n)
            .map(|i| {
                let at = (offset + i) * size;
                data.get(at..at + size)
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| schema_error(py, "an Arrow data buffer is too short"))
            })
            .collect();
    }
    let wide = match ty {
        "binary" | "string" => false,
        "large_binary" | "large_string" => true,
        other => return Err(schema_error(py, format!("not a binary column: {other}"))),
    };
    let offsets = buffer(arr, 1)?.unwrap_or_default();
    let data = buffer(arr, 2)?.unwrap_or_default();
    let w = if wide { 8 } else { 4 };
    let off = |i: usize| -> PyResult<usize> {
        let at = (offset + i) * w;
        let b = offsets
            .get(at..at + w)
            .ok_or_else(|| schema_error(py, "an Arrow offsets buffer is too short"))?;
        let v = if wide {
            i64::from_le_bytes(b.try_into().expect("8 bytes"))
        } else {
            i64::from(i32::from_le_bytes(b.try_into().expect("4 bytes")))
        };
        usize::try_from(v).map_err(|_| schema_error(py, "a negative Arrow offset"))
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (a, b) = (off(i)?, off(i + 1)?);
        out.push(
            data.get(a..b)
                .ok_or_else(|| schema_error(py, "Arrow offsets out of range"))?
                .to_vec(),
        );
    }
    Ok(out)
}

/// List / map offsets (absolute into the unsliced child) of `arr`'s rows.
fn list_offsets(py: Python<'_>, arr: &Bound<'_, PyAny>, n: usize) -> PyResult<Vec<usize>> {
    let offs = arr.getattr("offsets")?;
    let ty = arrow_type(&offs)?;
    let v = ints(py, &offs, &ty, n + 1)?;
    v.into_iter()
        .map(|x| usize::try_from(x).map_err(|_| schema_error(py, "a negative Arrow offset")))
        .collect()
}

/// The values of column `arr` as node `id` of `s` (one per row); `path` names it in errors.
fn column(
    py: Python<'_>,
    s: &AvroSchema,
    id: NodeId,
    arr: &Bound<'_, PyAny>,
    path: &str,
    how: ArrowRead,
) -> PyResult<Vec<Value>> {
    if arr.hasattr("chunks")? && !arr.hasattr("buffers")? {
        let mut out = Vec::new();
        for chunk in arr.getattr("chunks")?.try_iter()? {
            out.extend(column(py, s, id, &chunk?, path, how)?);
        }
        return Ok(out);
    }
    let n: usize = arr.len()?;
    let ty = arrow_type(arr)?;
    let inner = s.nullable_inner(id);
    let node_id = inner.unwrap_or(id);
    let valid = Validity::of(arr)?;
    if ty == "null" {
        if inner.is_none() && !matches!(s.node(id), Node::Null) && n > 0 && !how.nulls_as_absent {
            return Err(not_nullable(py, s, id, path, 0));
        }
        return Ok(vec![Value::Null; n]);
    }
    let mismatch = || {
        schema_error(
            py,
            format!(
                "column {path:?} is {ty}, which does not fit the schema's {}",
                type_name(s, node_id)
            ),
        )
    };
    let is_int = |t: &str| {
        matches!(
            t,
            "int8" | "int16" | "int32" | "int64" | "uint8" | "uint16" | "uint32"
        ) || t.starts_with("timestamp[")
            || t == "date32[day]"
            || t == "date64[ms]"
    };
    let values: Vec<Value> = match s.node(node_id) {
        Node::Null => vec![Value::Null; n],
        Node::Boolean => {
            if ty != "bool" {
                return Err(mismatch());
            }
            let offset: usize = arr.getattr("offset")?.extract()?;
            let data = buffer(arr, 1)?.unwrap_or_default();
            (0..n)
                .map(|i| Value::Boolean(bit(&data, offset + i)))
                .collect()
        }
        Node::Int => {
            if !is_int(&ty) {
                return Err(mismatch());
            }
            let xs = ints(py, arr, &ty, n)?;
            let mut out = Vec::with_capacity(n);
            for (i, x) in xs.into_iter().enumerate() {
                let valid_row = valid.as_ref().is_none_or(|v| v.get(i));
                match i32::try_from(x) {
                    Ok(v) => out.push(Value::Int(v)),
                    Err(_) if valid_row => {
                        return Err(schema_error(
                            py,
                            format!("column {path:?} row {i}: {x} does not fit an Avro int"),
                        ))
                    }
                    Err(_) => out.push(Value::Int(0)),
                }
            }
            out
        }
        Node::Long => {
            if !is_int(&ty) {
                return Err(mismatch());
            }
            ints(py, arr, &ty, n)?
                .into_iter()
                .map(Value::Long)
                .collect()
        }
        Node::Float | Node::Double => {
            if !(is_int(&ty) || ty == "float" || ty == "double") {
                return Err(mismatch());
            }
            let double = matches!(s.node(node_id), Node::Double);
            floats(py, arr, &ty, n)?
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
            if !matches!(ty.as_str(), "string" | "large_string") {
                return Err(mismatch());
            }
            var(py, arr, &ty, n)?
                .into_iter()
                // Arrow strings are UTF-8 by contract; pyarrow validates them on creation.
                .map(|b| Value::String(String::from_utf8(b).unwrap_or_default()))
                .collect()
        }
        Node::Bytes | Node::Fixed { .. } => {
            if !(matches!(
                ty.as_str(),
                "binary" | "large_binary" | "string" | "large_string"
            ) || ty.starts_with("fixed_size_binary["))
            {
                return Err(mismatch());
            }
            let fixed = match s.node(node_id) {
                Node::Fixed { size, .. } => Some(*size),
                _ => None,
            };
            let mut out = Vec::with_capacity(n);
            for (i, b) in var(py, arr, &ty, n)?.into_iter().enumerate() {
                out.push(match fixed {
                    Some(size) => {
                        if b.len() != size && valid.as_ref().is_none_or(|v| v.get(i)) {
                            return Err(schema_error(
                                py,
                                format!(
                                    "column {path:?} row {i}: {} bytes, the fixed type takes {size}",
                                    b.len()
                                ),
                            ));
                        }
                        Value::Fixed(b)
                    }
                    None => Value::Bytes(b),
                });
            }
            out
        }
        Node::Enum { symbols, .. } => {
            if !matches!(ty.as_str(), "string" | "large_string") {
                return Err(mismatch());
            }
            let mut out = Vec::with_capacity(n);
            for (i, b) in var(py, arr, &ty, n)?.into_iter().enumerate() {
                match symbols.iter().position(|s| s.as_bytes() == &b[..]) {
                    Some(k) => out.push(Value::Enum(k as u32)),
                    None if valid.as_ref().is_none_or(|v| v.get(i)) => {
                        return Err(schema_error(
                            py,
                            format!(
                                "column {path:?} row {i}: {:?} is not a symbol of the enum ({})",
                                String::from_utf8_lossy(&b),
                                symbols.join(", ")
                            ),
                        ))
                    }
                    None => out.push(Value::Enum(0)),
                }
            }
            out
        }
        Node::Record(r) => {
            if !ty.starts_with("struct<") {
                return Err(mismatch());
            }
            let names: Vec<String> = {
                let t = arr.getattr("type")?;
                let k: usize = t.getattr("num_fields")?.extract()?;
                (0..k)
                    .map(|i| t.call_method1("field", (i,))?.getattr("name")?.extract())
                    .collect::<PyResult<_>>()?
            };
            if let Some(extra) = names
                .iter()
                .find(|c| !r.fields.iter().any(|f| &f.name == *c))
            {
                return Err(schema_error(
                    py,
                    format!("{path}.{extra} is not a field of record {}", r.name),
                ));
            }
            let mut cols = Vec::with_capacity(r.fields.len());
            for f in &r.fields {
                let sub = format!("{path}.{}", f.name);
                let c = if names.contains(&f.name) {
                    let child = arr.call_method1("field", (f.name.as_str(),))?;
                    column(py, s, f.node, &child, &sub, how)?
                } else if s.nullable_inner(f.node).is_some() || how.nulls_as_absent {
                    vec![Value::Null; n]
                } else {
                    return Err(schema_error(
                        py,
                        format!("no column for field {sub:?}, which is not nullable"),
                    ));
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
            if !(ty.starts_with("list<") || ty.starts_with("large_list<")) {
                return Err(mismatch());
            }
            let offs = list_offsets(py, arr, n)?;
            let (lo, hi) = (offs[0], offs[n]);
            let child = arr
                .getattr("values")?
                .call_method1("slice", (lo, hi.saturating_sub(lo)))?;
            let items = column(py, s, *item, &child, &format!("{path}[]"), how)?;
            no_null_items(py, s, *item, &items, path, how)?;
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
            if !ty.starts_with("map<") {
                return Err(mismatch());
            }
            let offs = list_offsets(py, arr, n)?;
            let (lo, hi) = (offs[0], offs[n]);
            let len = hi.saturating_sub(lo);
            let keys = arr.getattr("keys")?.call_method1("slice", (lo, len))?;
            let key_ty = arrow_type(&keys)?;
            if !matches!(key_ty.as_str(), "string" | "large_string") {
                return Err(schema_error(
                    py,
                    format!("column {path:?}: map keys must be strings, not {key_ty}"),
                ));
            }
            let keys = var(py, &keys, &key_ty, len)?;
            let items = arr.getattr("items")?.call_method1("slice", (lo, len))?;
            let vals = column(py, s, *val, &items, &format!("{path}{{}}"), how)?;
            no_null_items(py, s, *val, &vals, path, how)?;
            let mut pairs = keys
                .into_iter()
                .map(|k| String::from_utf8(k).unwrap_or_default())
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
            return Err(schema_error(
                py,
                format!(
                    "column {path:?}: only nullable unions (null and one type) take Arrow columns"
                ),
            ))
        }
    };
    let Some(v) = valid else {
        return Ok(values);
    };
    let mut out = values;
    for (i, x) in out.iter_mut().enumerate() {
        if !v.get(i) {
            if inner.is_none() && !matches!(s.node(id), Node::Null) && !how.nulls_as_absent {
                return Err(not_nullable(py, s, id, path, i));
            }
            *x = Value::Null;
        }
    }
    Ok(out)
}

/// Nulls read as absent fields must not hide in lists and maps: a protobuf repeated field
/// or map has no null item, and leaving it out would drop it silently.
fn no_null_items(
    py: Python<'_>,
    s: &AvroSchema,
    item: NodeId,
    items: &[Value],
    path: &str,
    how: ArrowRead,
) -> PyResult<()> {
    if !how.nulls_as_absent || s.nullable_inner(item).is_some() {
        return Ok(());
    }
    match items.iter().position(|v| matches!(v, Value::Null)) {
        Some(i) => Err(schema_error(
            py,
            format!("column {path:?}: item {i} is null, which a repeated field or map cannot hold"),
        )),
        None => Ok(()),
    }
}

fn not_nullable(py: Python<'_>, s: &AvroSchema, id: NodeId, path: &str, row: usize) -> PyErr {
    schema_error(
        py,
        format!(
            "column {path:?} row {row} is null, but the schema's {} is not nullable",
            type_name(s, id)
        ),
    )
}
