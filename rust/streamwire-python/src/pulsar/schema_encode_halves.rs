//! Payloads from Arrow columns for every schema that has a column form: a record (JSON,
//! Avro) or PROTOBUF_NATIVE message from a record batch / struct array, and a KEY_VALUE pair
//! from a batch with a `key` and a `value` column typed per the halves (struct for a record
//! or message half, string or binary for a STRING or BYTES half). Columns are read through
//! their buffers by `schema_encode_arrow` into values of the schema's record layout, then
//! encoded in Rust (Avro binary, JSON, protobuf wire): no Python object per row or field.
//! Typed `send_many` of a `pyarrow.RecordBatch` and `SchemaCodec.encode_arrow` use it; the
//! Spark Data Source writes typed DataFrames so.
//!
//! PROTOBUF_NATIVE: a null or a missing column is the field left out (the reader sees the
//! protobuf default; fields with presence read as absent), which is protobuf's own meaning of
//! "no value"; a null item of a list or map is an error (protobuf has none to send).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use streamwire_pulsar::schema::avro::AvroSchema;
use streamwire_pulsar::schema::keyvalue::encode_inline;
use streamwire_pulsar::schema::protobuf::ProtoSchema;
use streamwire_pulsar::schema::protobuf_wire;
use streamwire_pulsar::schema::value::Value;

use crate::pulsar::schema::{b64, Codec, Kind, PySchemaCodec};
use crate::pulsar::schema_encode_arrow::{
    arrow_records, arrow_type, is_arrow_records, var, ArrowRead, Validity,
};
use crate::pulsar::schema_values::schema_error;

/// Encoded payloads: all of them back to back in `buf`, cut at `lens`; `keys[i]` the base64
/// message key of a SEPARATED key/value row.
pub(crate) struct Payloads {
    pub buf: Vec<u8>,
    pub lens: Vec<usize>,
    pub keys: Vec<Option<String>>,
}

/// How protobuf reads Arrow nulls (see the module note).
const PROTOBUF: ArrowRead = ArrowRead {
    nulls_as_absent: true,
    null_rows: false,
};

/// The payloads of the rows of `values` (a record batch, table or struct array), or None
/// when `codec` has no column form (BYTES, STRING: a plain sequence is its form).
pub(crate) fn arrow_payloads(
    py: Python<'_>,
    codec: &Codec,
    values: &Bound<'_, PyAny>,
) -> PyResult<Option<Payloads>> {
    let mut out = Payloads {
        buf: Vec::new(),
        lens: Vec::new(),
        keys: Vec::new(),
    };
    match &codec.kind {
        Kind::Record { codec: rc, .. } => {
            for (i, v) in arrow_records(py, &rc.schema, values, ArrowRead::default())?
                .iter()
                .enumerate()
            {
                let start = out.buf.len();
                rc.encode(v, &mut out.buf)
                    .map_err(|e| schema_error(py, format!("row {i}: {}", e.0)))?;
                out.lens.push(out.buf.len() - start);
                out.keys.push(None);
            }
        }
        Kind::Protobuf(p) => {
            let rows = arrow_records(py, p.arrow_schema(), values, PROTOBUF)?;
            for (i, v) in rows.iter().enumerate() {
                let start = out.buf.len();
                protobuf_wire::encode(p.layout(), v, &mut out.buf)
                    .map_err(|e| schema_error(py, format!("row {i}: {}", e.0)))?;
                out.lens.push(out.buf.len() - start);
                out.keys.push(None);
            }
        }
        Kind::KeyValue {
            key,
            value,
            separated,
        } => {
            let (k_col, v_col, n) = kv_columns(py, values)?;
            let ks = match k_col {
                Some(c) => half_payloads(py, key, &c, "key")?,
                None => vec![None; n],
            };
            let vs = match v_col {
                Some(c) => half_payloads(py, value, &c, "value")?,
                None => vec![None; n],
            };
            for (k, v) in ks.iter().zip(&vs) {
                let start = out.buf.len();
                if *separated {
                    out.buf.extend_from_slice(v.as_deref().unwrap_or_default());
                    out.keys
                        .push(Some(b64::encode(k.as_deref().unwrap_or_default())));
                } else {
                    out.buf
                        .extend_from_slice(&encode_inline(k.as_deref(), v.as_deref()));
                    out.keys.push(None);
                }
                out.lens.push(out.buf.len() - start);
            }
        }
        Kind::Bytes | Kind::String => return Ok(None),
    }
    Ok(Some(out))
}

/// The `key` and `value` columns of a key/value batch (either may be absent: null halves),
/// and its row count. Any other column is an error: it would be dropped silently.
type KvColumns<'py> = (Option<Bound<'py, PyAny>>, Option<Bound<'py, PyAny>>, usize);

fn kv_columns<'py>(py: Python<'py>, values: &Bound<'py, PyAny>) -> PyResult<KvColumns<'py>> {
    if !values.hasattr("num_rows")? {
        return Err(schema_error(
            py,
            "a key/value schema takes Arrow columns as a record batch with 'key' and 'value' \
             columns",
        ));
    }
    let names: Vec<String> = values.getattr("schema")?.getattr("names")?.extract()?;
    if let Some(other) = names
        .iter()
        .find(|n| !matches!(n.as_str(), "key" | "value"))
    {
        return Err(schema_error(
            py,
            format!("column {other:?} is neither 'key' nor 'value' of the key/value schema"),
        ));
    }
    let n: usize = values.getattr("num_rows")?.extract()?;
    let get = |name: &str| -> PyResult<Option<Bound<'py, PyAny>>> {
        if !names.iter().any(|x| x == name) {
            return Ok(None);
        }
        let c = values.call_method1("column", (name,))?;
        // A Table's column is chunked: one array for the half readers below.
        if c.hasattr("chunks")? && !c.hasattr("buffers")? {
            return Ok(Some(c.call_method0("combine_chunks")?));
        }
        Ok(Some(c))
    };
    Ok((get("key")?, get("value")?, n))
}

/// One half's bytes per row of column `arr` (None: a null half).
fn half_payloads(
    py: Python<'_>,
    half: &Codec,
    arr: &Bound<'_, PyAny>,
    name: &str,
) -> PyResult<Vec<Option<Vec<u8>>>> {
    let ty = arrow_type(arr)?;
    let n: usize = arr.len()?;
    let mismatch = |want: &str| {
        schema_error(
            py,
            format!("column {name:?} is {ty}; the key/value schema's {name} half takes {want}"),
        )
    };
    match &half.kind {
        Kind::Bytes | Kind::String => {
            let string = matches!(half.kind, Kind::String);
            let ok = matches!(ty.as_str(), "string" | "large_string")
                || (!string && matches!(ty.as_str(), "binary" | "large_binary"));
            if !ok {
                return Err(mismatch(if string {
                    "a string column"
                } else {
                    "a binary or string column"
                }));
            }
            let valid = Validity::of(arr)?;
            Ok(var(py, arr, &ty, n)?
                .into_iter()
                .enumerate()
                .map(|(i, b)| valid.as_ref().is_none_or(|v| v.get(i)).then_some(b))
                .collect())
        }
        Kind::Record { codec, .. } => {
            let rows = struct_rows(py, &codec.schema, arr, &ty, name, ArrowRead::default())?;
            encode_rows(py, rows, name, |v, out| {
                codec.encode(v, out).map_err(|e| e.0)
            })
        }
        Kind::Protobuf(p) => {
            let how = ArrowRead {
                null_rows: true,
                ..PROTOBUF
            };
            let rows = struct_rows(py, p.arrow_schema(), arr, &ty, name, how)?;
            let layout: &ProtoSchema = p.layout();
            encode_rows(py, rows, name, |v, out| {
                protobuf_wire::encode(layout, v, out).map_err(|e| e.0)
            })
        }
        Kind::KeyValue { .. } => Err(schema_error(py, "a key/value schema cannot nest")),
    }
}

fn struct_rows(
    py: Python<'_>,
    schema: &AvroSchema,
    arr: &Bound<'_, PyAny>,
    ty: &str,
    name: &str,
    how: ArrowRead,
) -> PyResult<Vec<Value>> {
    if !ty.starts_with("struct<") {
        return Err(schema_error(
            py,
            format!("column {name:?} is {ty}; the key/value schema's {name} half is a record"),
        ));
    }
    arrow_records(
        py,
        schema,
        arr,
        ArrowRead {
            null_rows: true,
            ..how
        },
    )
}

fn encode_rows(
    py: Python<'_>,
    rows: Vec<Value>,
    name: &str,
    enc: impl Fn(&Value, &mut Vec<u8>) -> Result<(), String>,
) -> PyResult<Vec<Option<Vec<u8>>>> {
    let mut out = Vec::with_capacity(rows.len());
    for (i, v) in rows.iter().enumerate() {
        if matches!(v, Value::Null) {
            out.push(None);
            continue;
        }
        let mut b = Vec::new();
        enc(v, &mut b).map_err(|e| schema_error(py, format!("{name} row {i}: {e}")))?;
        out.push(Some(b));
    }
    Ok(out)
}

#[pymethods]
impl PySchemaCodec {
    /// Encode every row of Arrow columns into its payload, in Rust (a SEPARATED key/value
    /// gives the value parts, like `encode`). A value that does not fit raises `SchemaError`;
    /// a batch of no rows checks only that the columns fit.
    ///
    /// Args:
    ///     values: a `pyarrow.RecordBatch` (or `Table`, or struct `Array`) whose columns are
    ///         the record's fields, or `key` and `value` for a key/value schema.
    fn encode_arrow<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        if !is_arrow_records(values) {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "encode_arrow takes a pyarrow.RecordBatch, Table or struct Array",
            ));
        }
        let Some(p) = arrow_payloads(py, &self.inner, values)? else {
            return Err(schema_error(
                py,
                "a BYTES or STRING schema has no Arrow record form",
            ));
        };
        let mut at = 0;
        let items = p.lens.iter().map(|&n| {
            let b = PyBytes::new(py, &p.buf[at..at + n]);
            at += n;
            b
        });
        PyList::new(py, items)
    }
}
