//! Payloads from Arrow columns (typed `send_many` of a `pyarrow.RecordBatch`,
//! `SchemaCodec.encode_arrow`; the Spark Data Source writes typed DataFrames so): the
//! binding's half. The columns are viewed through their buffers (`common::arrow`), the rows
//! read and encoded by `streamwire_pulsar::schema::arrow_kv` (records, PROTOBUF_NATIVE
//! messages, KEY_VALUE halves), and its errors raised as `SchemaError` with their texts.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use streamwire_pulsar::schema::arrow_encode::{ArrowError, Records};
use streamwire_pulsar::schema::arrow_kv::{self, ColumnCodec, HalfCodec, Payloads};

use crate::common::arrow::{column_view, is_arrow_records, is_chunked};
use crate::pulsar::schema::{Codec, Kind, PySchemaCodec};
use crate::pulsar::schema_values::schema_error;

/// An engine error about Arrow columns as the `SchemaError` it is to Python.
pub(crate) fn arrow_err(py: Python<'_>, e: ArrowError) -> PyErr {
    schema_error(py, e.to_string())
}

/// The payload codec of one half (or of a whole schema that is not a key/value one).
pub(crate) fn half_codec<'c>(py: Python<'_>, c: &'c Codec) -> PyResult<HalfCodec<'c>> {
    Ok(match &c.kind {
        Kind::Bytes => HalfCodec::Bytes,
        Kind::String => HalfCodec::String,
        Kind::Record { codec, .. } => HalfCodec::Record(codec),
        Kind::Protobuf(p) => HalfCodec::Protobuf(p.layout()),
        Kind::KeyValue { .. } => return Err(schema_error(py, "a key/value schema cannot nest")),
    })
}

fn column_codec<'c>(py: Python<'_>, c: &'c Codec) -> PyResult<ColumnCodec<'c>> {
    Ok(match &c.kind {
        Kind::KeyValue {
            key,
            value,
            separated,
        } => ColumnCodec::KeyValue {
            key: half_codec(py, key)?,
            value: half_codec(py, value)?,
            separated: *separated,
        },
        _ => ColumnCodec::Plain(half_codec(py, c)?),
    })
}

/// The rows of a record batch, table (`combine`: each column's chunks as one array) or
/// struct array, viewed.
fn records_of(values: &Bound<'_, PyAny>, combine: bool) -> PyResult<Records<'static>> {
    if !values.hasattr("num_rows")? {
        return Ok(Records::of_struct(column_view(values)?));
    }
    let names: Vec<String> = values.getattr("schema")?.getattr("names")?.extract()?;
    let mut columns = Vec::with_capacity(names.len());
    for name in names {
        let c = values.call_method1("column", (name.as_str(),))?;
        let chunks = if !is_chunked(&c)? {
            vec![column_view(&c)?]
        } else if combine {
            vec![column_view(&c.call_method0("combine_chunks")?)?]
        } else {
            c.getattr("chunks")?
                .try_iter()?
                .map(|x| column_view(&x?))
                .collect::<PyResult<_>>()?
        };
        columns.push((name, chunks));
    }
    Ok(Records {
        rows: values.getattr("num_rows")?.extract()?,
        columns,
        row_valid: None,
        batch: true,
    })
}

/// The payloads of the rows of `values` (a record batch, table or struct array), or None
/// when `codec` has no column form (BYTES, STRING: a plain sequence is its form).
pub(crate) fn arrow_payloads(
    py: Python<'_>,
    codec: &Codec,
    values: &Bound<'_, PyAny>,
) -> PyResult<Option<Payloads>> {
    let cc = column_codec(py, codec)?;
    if matches!(cc, ColumnCodec::Plain(HalfCodec::Bytes | HalfCodec::String)) {
        return Ok(None);
    }
    // A key/value half is read as one array, as its error texts count rows across chunks.
    let rows = records_of(values, matches!(cc, ColumnCodec::KeyValue { .. }))?;
    arrow_kv::arrow_payloads(cc, &rows).map_err(|e| arrow_err(py, e))
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
