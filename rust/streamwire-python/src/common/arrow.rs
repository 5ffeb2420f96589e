//! pyarrow arrays from engine values, for every protocol's `*_arrow` calls, and pyarrow
//! arrays as the engine's column views (`streamwire_core::arrow_view`) and back: the only
//! place that knows pyarrow's API for the schema code.
//!
//! Buffers are Python `bytes` filled in place by `streamwire_core::arrow` and handed to
//! `pyarrow.Array.from_buffers`: one copy of each value, no Python object per row.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use std::borrow::Cow;

use streamwire_core::arrow::{fill_fixed, validity, VarLayout};
use streamwire_core::arrow_view::{ArrayData, ColumnView, DataType, ViewType};

use crate::common::bytes_like::raw_buffer_bytes;

/// Builds arrays of `rows` rows with one imported `pyarrow`.
pub struct ArrowBuilder<'py> {
    py: Python<'py>,
    pa: Bound<'py, PyModule>,
    rows: usize,
}

impl<'py> ArrowBuilder<'py> {
    pub fn new(py: Python<'py>, rows: usize) -> PyResult<Self> {
        Ok(ArrowBuilder {
            py,
            pa: py.import("pyarrow")?,
            rows,
        })
    }

    pub fn pa(&self) -> &Bound<'py, PyModule> {
        &self.pa
    }

    fn filled(&self, len: usize, fill: impl FnOnce(&mut [u8])) -> PyResult<Bound<'py, PyAny>> {
        let b = PyBytes::new_with(self.py, len, |b| {
            fill(b);
            Ok(())
        })?;
        self.pa.call_method1("py_buffer", (b,))
    }

    fn opt_buf(&self, bits: Option<Vec<u8>>) -> PyResult<Bound<'py, PyAny>> {
        match bits {
            Some(b) => self.filled(b.len(), |out| out.copy_from_slice(&b)),
            None => Ok(self.py.None().into_bound(self.py)),
        }
    }

    fn array_of(
        &self,
        ty: Bound<'py, PyAny>,
        len: usize,
        bufs: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.pa
            .getattr("Array")?
            .call_method1("from_buffers", (ty, len, PyList::new(self.py, bufs)?))
    }

    /// A binary (or, with `string`, utf8) column; `None` rows are nulls.
    pub fn var(&self, items: &[Option<&[u8]>], string: bool) -> PyResult<Bound<'py, PyAny>> {
        let layout = VarLayout::of(items);
        let valid = validity(items.iter().map(Option::is_some), items.len());
        let offsets = self.filled(layout.offsets_len(), |b| layout.fill_offsets(items, b))?;
        let values = self.filled(layout.values_len, |b| VarLayout::fill_values(items, b))?;
        let ty = match (string, layout.large) {
            (true, false) => "string",
            (true, true) => "large_string",
            (false, false) => "binary",
            (false, true) => "large_binary",
        };
        self.array_of(
            self.pa.call_method0(ty)?,
            items.len(),
            vec![self.opt_buf(valid)?, offsets, values],
        )
    }

    /// A fixed-width column of pyarrow type `ty` ("int32", "int64", "uint64", "uint16", ...,
    /// or "ts" for timestamp[ms]); `valid` marks nulls when given.
    pub fn fixed<T, const N: usize>(
        &self,
        ty: &str,
        values: impl Iterator<Item = T>,
        to: fn(T) -> [u8; N],
        valid: Option<Vec<u8>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let data = self.filled(self.rows * N, |b| fill_fixed(values, to, b))?;
        let ty = if ty == "ts" {
            self.pa.call_method1("timestamp", ("ms",))?
        } else {
            self.pa.call_method0(ty)?
        };
        self.array_of(ty, self.rows, vec![self.opt_buf(valid)?, data])
    }

    /// The validity bitmap of this builder's rows.
    pub fn validity(&self, valid: impl Iterator<Item = bool>) -> Option<Vec<u8>> {
        validity(valid, self.rows)
    }

    /// A `pyarrow.RecordBatch` of `arrays` named `names`.
    pub fn record_batch(
        &self,
        arrays: Vec<Bound<'py, PyAny>>,
        names: &[&str],
    ) -> PyResult<Bound<'py, PyAny>> {
        let kwargs = PyDict::new(self.py);
        kwargs.set_item("names", PyList::new(self.py, names)?)?;
        self.pa.getattr("RecordBatch")?.call_method(
            "from_arrays",
            (PyList::new(self.py, arrays)?,),
            Some(&kwargs),
        )
    }
}

/// The columns to build, in order: all of `known`, or the named ones (unknown or repeated
/// names are a `ValueError` listing the columns).
pub fn column_list(
    known: &'static [&'static str],
    columns: Option<&[String]>,
) -> PyResult<Vec<&'static str>> {
    let Some(cols) = columns else {
        return Ok(known.to_vec());
    };
    let mut names = Vec::with_capacity(cols.len());
    for c in cols {
        let Some(k) = known.iter().find(|k| **k == c.as_str()) else {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown column {c:?}; the columns are: {}",
                known.join(", ")
            )));
        };
        if names.contains(k) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "column {c:?} named twice"
            )));
        }
        names.push(*k);
    }
    Ok(names)
}

/// Whether `values` is a `pyarrow.RecordBatch` / `Table` or a struct `pyarrow.Array`.
pub fn is_arrow_records(values: &Bound<'_, PyAny>) -> bool {
    if values.hasattr("num_rows").unwrap_or(false) && values.hasattr("schema").unwrap_or(false) {
        return true;
    }
    values.hasattr("buffers").unwrap_or(false)
        && values
            .getattr("type")
            .and_then(|t| t.str()?.extract::<String>())
            .is_ok_and(|t| t.starts_with("struct<"))
}

/// Whether `arr` is a `pyarrow.ChunkedArray` (chunks, and no buffers of its own).
pub fn is_chunked(arr: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(arr.hasattr("chunks")? && !arr.hasattr("buffers")?)
}

/// The engine's type of a pyarrow type spelt `name` (`str(type)`).
fn view_type(name: &str, ty: &Bound<'_, PyAny>) -> PyResult<ViewType> {
    let int = |bytes, signed| ViewType::Int { bytes, signed };
    let bin = |utf8, large| ViewType::Binary { utf8, large };
    Ok(match name {
        "null" => ViewType::Null,
        "bool" => ViewType::Boolean,
        "int8" => int(1, true),
        "uint8" => int(1, false),
        "int16" => int(2, true),
        "uint16" => int(2, false),
        "int32" => int(4, true),
        "uint32" => int(4, false),
        "int64" => int(8, true),
        "uint64" => int(8, false),
        "float" => ViewType::Float { bytes: 4 },
        "double" => ViewType::Float { bytes: 8 },
        "date32[day]" => ViewType::Temporal { bytes: 4 },
        "date64[ms]" => ViewType::Temporal { bytes: 8 },
        t if t.starts_with("timestamp[") => ViewType::Temporal { bytes: 8 },
        "binary" => bin(false, false),
        "large_binary" => bin(false, true),
        "string" => bin(true, false),
        "large_string" => bin(true, true),
        t if t.starts_with("list<") => ViewType::List { large: false },
        t if t.starts_with("large_list<") => ViewType::List { large: true },
        t if t.starts_with("map<") => ViewType::Map,
        t if t.starts_with("struct<") => {
            let k: usize = ty.getattr("num_fields")?.extract()?;
            ViewType::Struct(
                (0..k)
                    .map(|i| ty.call_method1("field", (i,))?.getattr("name")?.extract())
                    .collect::<PyResult<_>>()?,
            )
        }
        t => match t
            .strip_prefix("fixed_size_binary[")
            .and_then(|s| s.strip_suffix(']'))
            .and_then(|s| s.parse().ok())
        {
            Some(size) => ViewType::FixedBinary(size),
            None => ViewType::Other,
        },
    })
}

/// A pyarrow array as a column view for the engine: its buffers copied out once, its
/// children (struct fields, list values, map keys and items) viewed the same way.
pub fn column_view(arr: &Bound<'_, PyAny>) -> PyResult<ColumnView<'static>> {
    let ty = arr.getattr("type")?;
    let type_name: String = ty.str()?.extract()?;
    let vt = view_type(&type_name, &ty)?;
    // How many buffers after the validity bitmap are the array's own (`buffers()` lists
    // the children's after them).
    let own = match vt {
        ViewType::Null | ViewType::Struct(_) | ViewType::Other => 0,
        ViewType::Binary { .. } => 2,
        _ => 1,
    };
    let bufs = arr.call_method0("buffers")?;
    let get = |i: usize| -> PyResult<Option<Vec<u8>>> {
        let b = bufs.get_item(i)?;
        if b.is_none() {
            return Ok(None);
        }
        raw_buffer_bytes(&b).map(Some)
    };
    let validity = if arr.getattr("null_count")?.extract::<usize>()? > 0 {
        get(0)?.map(Cow::Owned)
    } else {
        None
    };
    let buffers = (1..=own)
        .map(|i| Ok(Cow::Owned(get(i)?.unwrap_or_default())))
        .collect::<PyResult<_>>()?;
    let children = match &vt {
        ViewType::Struct(names) => (0..names.len())
            .map(|i| column_view(&arr.call_method1("field", (i,))?))
            .collect::<PyResult<_>>()?,
        ViewType::List { .. } => vec![column_view(&arr.getattr("values")?)?],
        ViewType::Map => vec![
            column_view(&arr.getattr("keys")?)?,
            column_view(&arr.getattr("items")?)?,
        ],
        _ => Vec::new(),
    };
    Ok(ColumnView {
        ty: vt,
        type_name: Cow::Owned(type_name),
        len: arr.len()?,
        offset: arr.getattr("offset")?.extract()?,
        validity,
        buffers,
        children,
    })
}

/// A pyarrow array of an array the engine built (`pyarrow.Array.from_buffers`).
pub fn to_pyarrow<'py>(pa: &Bound<'py, PyModule>, a: &ArrayData) -> PyResult<Bound<'py, PyAny>> {
    let py = pa.py();
    if a.data_type == DataType::Null {
        return pa.call_method1("nulls", (a.len,));
    }
    let buf = |b: &[u8]| pa.call_method1("py_buffer", (PyBytes::new(py, b),));
    let mut bufs = vec![match &a.validity {
        Some(v) => buf(v)?,
        None => py.None().into_bound(py),
    }];
    for b in &a.buffers {
        bufs.push(buf(b)?);
    }
    let field = |name: &str, c: &Bound<'py, PyAny>, nullable: bool| {
        pa.call_method1("field", (name, c.getattr("type")?, nullable))
    };
    let children: Vec<Bound<'py, PyAny>> = match (&a.data_type, a.children.first()) {
        // A map's entries: a struct of a non-null key and a nullable value.
        (DataType::Map, Some(entries)) => {
            let kv = entries
                .children
                .iter()
                .map(|c| to_pyarrow(pa, c))
                .collect::<PyResult<Vec<_>>>()?;
            let [k, v] = &kv[..] else {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "a map without key and value",
                ));
            };
            let ty = pa.call_method1(
                "struct",
                (PyList::new(
                    py,
                    [field("key", k, false)?, field("value", v, true)?],
                )?,),
            )?;
            let kwargs = PyDict::new(py);
            kwargs.set_item("children", PyList::new(py, &kv)?)?;
            let entry = pa.getattr("Array")?.call_method(
                "from_buffers",
                (ty, entries.len, PyList::new(py, [py.None()])?),
                Some(&kwargs),
            )?;
            vec![entry]
        }
        _ => a
            .children
            .iter()
            .map(|c| to_pyarrow(pa, c))
            .collect::<PyResult<_>>()?,
    };
    let ty = match &a.data_type {
        DataType::Null => unreachable!("built above"),
        DataType::Boolean => pa.call_method0("bool_")?,
        DataType::Int32 => pa.call_method0("int32")?,
        DataType::Int64 => pa.call_method0("int64")?,
        DataType::Float32 => pa.call_method0("float32")?,
        DataType::Float64 => pa.call_method0("float64")?,
        DataType::Binary { utf8, large } => pa.call_method0(match (utf8, large) {
            (true, false) => "string",
            (true, true) => "large_string",
            (false, false) => "binary",
            (false, true) => "large_binary",
        })?,
        DataType::Struct(names) => {
            let fields = names
                .iter()
                .zip(&children)
                .map(|(n, c)| field(n, c, true))
                .collect::<PyResult<Vec<_>>>()?;
            pa.call_method1("struct", (PyList::new(py, fields)?,))?
        }
        DataType::List => pa.call_method1("list_", (children[0].getattr("type")?,))?,
        DataType::Map => {
            let value = children[0].getattr("type")?.call_method1("field", (1,))?;
            pa.call_method1("map_", (pa.call_method0("string")?, value.getattr("type")?))?
        }
    };
    let kwargs = PyDict::new(py);
    if !children.is_empty() {
        kwargs.set_item("children", PyList::new(py, children)?)?;
    }
    pa.getattr("Array")?.call_method(
        "from_buffers",
        (ty, a.len, PyList::new(py, bufs)?),
        Some(&kwargs),
    )
}
