//! pyarrow arrays from engine values, for every protocol's `*_arrow` calls.
//!
//! Buffers are Python `bytes` filled in place by `streamwire_core::arrow` and handed to
//! `pyarrow.Array.from_buffers`: one copy of each value, no Python object per row.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use streamwire_core::arrow::{fill_fixed, validity, VarLayout};

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

    /// A boolean column (`values` bit-packed LSB first), nulls where `valid` says.
    pub fn bools(
        &self,
        values: impl Iterator<Item = bool>,
        valid: Option<Vec<u8>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut bits = vec![0u8; self.rows.div_ceil(8)];
        for (i, v) in values.enumerate().take(self.rows) {
            if v {
                bits[i / 8] |= 1 << (i % 8);
            }
        }
        let data = self.filled(bits.len(), |b| b.copy_from_slice(&bits))?;
        self.array_of(
            self.pa.call_method0("bool_")?,
            self.rows,
            vec![self.opt_buf(valid)?, data],
        )
    }

    /// A nested array of type `ty` and `len` rows from its own buffers (`validity`, and for
    /// lists and maps `offsets`, i32) and its `children` arrays.
    pub fn nested(
        &self,
        ty: Bound<'py, PyAny>,
        len: usize,
        valid: Option<Vec<u8>>,
        offsets: Option<Vec<i32>>,
        children: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut bufs = vec![self.opt_buf(valid)?];
        if let Some(o) = offsets {
            bufs.push(self.filled(o.len() * 4, |b| {
                for (c, x) in b.chunks_exact_mut(4).zip(&o) {
                    c.copy_from_slice(&x.to_le_bytes());
                }
            })?);
        }
        let kwargs = PyDict::new(self.py);
        kwargs.set_item("children", PyList::new(self.py, children)?)?;
        self.pa.getattr("Array")?.call_method(
            "from_buffers",
            (ty, len, PyList::new(self.py, bufs)?),
            Some(&kwargs),
        )
    }

    /// The same builder for `rows` rows (the children of lists and maps).
    pub fn with_rows(&self, rows: usize) -> ArrowBuilder<'py> {
        ArrowBuilder {
            py: self.py,
            pa: self.pa.clone(),
            rows,
        }
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
