//! Column-shaped inputs for bulk sends: Python sequences or pyarrow arrays, read with one
//! copy of the payload bytes for the whole call (never one allocation per message).
//!
//! Any other Arrow library's column (polars, nanoarrow, DuckDB...) is taken through the Arrow
//! PyCapsule interface (`__arrow_c_array__` / `__arrow_c_stream__`): pyarrow imports it
//! without copying, then it is read as a pyarrow column. View layouts (`binary_view`,
//! `string_view`: what polars exports) are cast to the offsets layout first, one copy inside
//! Arrow.

use bytes::{Bytes, BytesMut};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use streamwire_core::error::Error;
use streamwire_pulsar::engine::bulk::Packed;

use crate::common::bytes_like::{buffer_bytes, raw_buffer_bytes as bytes_of};
use crate::common::errors::to_py;

fn is_arrow(obj: &Bound<'_, PyAny>) -> bool {
    obj.hasattr("buffers").unwrap_or(false) && obj.hasattr("type").unwrap_or(false)
}

fn arrow_type(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    obj.getattr("type")?.str()?.extract()
}

fn bad(msg: String) -> PyErr {
    to_py(Error::invalid(msg))
}

/// An Arrow column of another library as a pyarrow array or chunked array, through the
/// PyCapsule interface (None: not an Arrow exporter, or already pyarrow).
fn from_capsule<'py>(values: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    // Lists and tuples first (the common input): no attribute probing for them.
    if values.is_instance_of::<PyList>()
        || values.is_instance_of::<PyTuple>()
        || is_arrow(values)
        || values.hasattr("chunks").unwrap_or(false)
    {
        return Ok(None);
    }
    let (make, what) = if values.hasattr("__arrow_c_stream__").unwrap_or(false) {
        ("chunked_array", "__arrow_c_stream__")
    } else if values.hasattr("__arrow_c_array__").unwrap_or(false) {
        ("array", "__arrow_c_array__")
    } else {
        return Ok(None);
    };
    let pa = values.py().import("pyarrow").map_err(|_| {
        to_py(Error::invalid(format!(
            "this column is an Arrow column ({what}); reading it needs pyarrow \
             (pip install pyarrow)"
        )))
    })?;
    pa.call_method1(make, (values,)).map(Some)
}

/// Payloads and their null flags from a sequence of bytes-likes, a pyarrow array, or any
/// Arrow column (the PyCapsule interface).
pub fn payloads(values: &Bound<'_, PyAny>) -> PyResult<Vec<(Bytes, bool)>> {
    if let Some(arrow) = from_capsule(values)? {
        return payloads(&arrow);
    }
    if values.hasattr("chunks").unwrap_or(false) && !is_arrow(values) {
        // pyarrow.ChunkedArray: concatenate the chunks' payloads.
        let mut out = Vec::new();
        for chunk in values.getattr("chunks")?.try_iter()? {
            out.extend(payloads(&chunk?)?);
        }
        return Ok(out);
    }
    if is_arrow(values) {
        return arrow_payloads(values);
    }
    if values.is_instance_of::<PyBytes>() || values.is_instance_of::<PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "send_many takes a sequence of values (or a pyarrow array), not a single value",
        ));
    }
    let items: Vec<Bound<'_, PyAny>> = values
        .try_iter()
        .map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(
                "send_many takes a sequence of bytes-like values or a pyarrow array",
            )
        })?
        .collect::<PyResult<_>>()?;
    // Fast path: all bytes → one buffer, one copy.
    let mut total = 0usize;
    let mut all_bytes = true;
    for it in &items {
        match it.cast::<PyBytes>() {
            Ok(b) => total += b.as_bytes().len(),
            Err(_) => {
                all_bytes = false;
                break;
            }
        }
    }
    if all_bytes {
        let mut buf = BytesMut::with_capacity(total);
        let mut lens = Vec::with_capacity(items.len());
        for it in &items {
            let b = it.cast::<PyBytes>().map_err(PyErr::from)?.as_bytes();
            buf.extend_from_slice(b);
            lens.push((b.len(), false));
        }
        return Ok(freeze_slices(buf, &lens));
    }
    items
        .iter()
        .map(|it| {
            if it.is_none() {
                Ok((Bytes::new(), true))
            } else {
                payload_of(it).map(|b| (b, false))
            }
        })
        .collect()
}

fn arrow_payloads(arr: &Bound<'_, PyAny>) -> PyResult<Vec<(Bytes, bool)>> {
    let (data, offsets, nulls) = arrow_parts(arr)?;
    Ok(offsets
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            let null = nulls.as_ref().is_some_and(|n| n[i]);
            (data.slice(w[0]..w[1]), null)
        })
        .collect())
}

/// A binary or string Arrow array's referenced bytes (copied once, into a buffer we own),
/// its offsets rebased to that buffer (one more than there are values), and its null flags
/// when it has a validity buffer.
#[allow(clippy::type_complexity)]
fn arrow_parts(arr: &Bound<'_, PyAny>) -> PyResult<(Bytes, Vec<usize>, Option<Vec<bool>>)> {
    let ty = arrow_type(arr)?;
    if ty == "binary_view" || ty == "string_view" {
        let to = if ty == "binary_view" {
            "large_binary"
        } else {
            "large_string"
        };
        return arrow_parts(&arr.call_method1("cast", (to,))?);
    }
    let wide = match ty.as_str() {
        "binary" | "string" => false,
        "large_binary" | "large_string" => true,
        other => {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "send_many needs a binary or string arrow array, got {other}"
            )))
        }
    };
    let n: usize = arr.len()?;
    let offset: usize = arr.getattr("offset")?.extract()?;
    let bufs: Vec<Option<Bound<'_, PyAny>>> = arr.call_method0("buffers")?.extract()?;
    let validity = match bufs.first() {
        Some(Some(v)) => Some(bytes_of(v)?),
        _ => None,
    };
    let offsets_raw = match bufs.get(1) {
        Some(Some(o)) => bytes_of(o)?,
        _ => return Err(bad("arrow array has no offsets buffer".into())),
    };
    let width = if wide { 8 } else { 4 };
    let off_at = |i: usize| -> PyResult<usize> {
        let at = (offset + i) * width;
        let slice = offsets_raw
            .get(at..at + width)
            .ok_or_else(|| bad("arrow offsets buffer is too short".into()))?;
        let v = if wide {
            i64::from_le_bytes(slice.try_into().expect("8 bytes"))
        } else {
            i64::from(i32::from_le_bytes(slice.try_into().expect("4 bytes")))
        };
        usize::try_from(v).map_err(|_| bad("negative arrow offset".into()))
    };
    let start = off_at(0)?;
    let end = off_at(n)?;
    let data = match bufs.get(2) {
        Some(Some(d)) if end > start => {
            // Copy only the referenced range, once, into a buffer we own.
            let view = d.call_method1("slice", (start, end - start))?;
            Bytes::from(bytes_of(&view)?)
        }
        _ => Bytes::new(),
    };
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0);
    let mut prev = 0;
    for i in 1..=n {
        let b = off_at(i)? - start;
        if b < prev || b > data.len() {
            return Err(bad("arrow offsets are not monotonic".into()));
        }
        offsets.push(b);
        prev = b;
    }
    let nulls = validity.map(|v| {
        (0..n)
            .map(|i| {
                let bit = offset + i;
                v.get(bit / 8)
                    .is_none_or(|byte| byte & (1 << (bit % 8)) == 0)
            })
            .collect()
    });
    Ok((data, offsets, nulls))
}

/// The values of a bulk send as one buffer plus offsets (see `engine::bulk::Packed`): a
/// list or tuple of `bytes` is copied once into one buffer, a pyarrow binary/string array
/// is taken from its buffers (its bytes copied once), anything else goes through
/// [`payloads`] and is copied together. `None` when a value is null (the bulk path carries
/// no per-message metadata; the caller takes the per-message path).
pub fn packed(values: &Bound<'_, PyAny>) -> PyResult<Option<Packed>> {
    let ok = |data: Bytes, offsets: Vec<usize>| {
        Packed::new(data, offsets).map_err(|e| bad(e.to_string()))
    };
    if values.is_instance_of::<PyList>() || values.is_instance_of::<PyTuple>() {
        let seq = values
            .cast::<pyo3::types::PySequence>()
            .map_err(PyErr::from)?;
        let n = seq.len()?;
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0usize);
        let mut total = 0usize;
        let mut all_bytes = true;
        for it in seq.try_iter()? {
            match it?.cast::<PyBytes>() {
                Ok(b) => {
                    total += b.as_bytes().len();
                    offsets.push(total);
                }
                Err(_) => {
                    all_bytes = false;
                    break;
                }
            }
        }
        if all_bytes {
            let mut buf = BytesMut::with_capacity(total);
            for it in seq.try_iter()? {
                let it = it?;
                buf.extend_from_slice(it.cast::<PyBytes>().map_err(PyErr::from)?.as_bytes());
            }
            return ok(buf.freeze(), offsets).map(Some);
        }
    } else if is_arrow(values) {
        let (data, offsets, nulls) = arrow_parts(values)?;
        if nulls.is_some_and(|n| n.contains(&true)) {
            return Ok(None);
        }
        return ok(data, offsets).map(Some);
    }
    let items = payloads(values)?;
    if items.iter().any(|(_, null)| *null) {
        return Ok(None);
    }
    let total = items.iter().map(|(b, _)| b.len()).sum();
    let mut buf = BytesMut::with_capacity(total);
    let mut offsets = Vec::with_capacity(items.len() + 1);
    offsets.push(0);
    for (b, _) in &items {
        buf.extend_from_slice(b);
        offsets.push(buf.len());
    }
    ok(buf.freeze(), offsets).map(Some)
}

fn to_list<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Some(arrow) = from_capsule(obj)? {
        return arrow.call_method0("to_pylist");
    }
    if obj.hasattr("to_pylist")? {
        obj.call_method0("to_pylist")
    } else {
        Ok(obj.clone())
    }
}

fn check_len(got: usize, n: usize, name: &str) -> PyResult<()> {
    if got != n {
        return Err(bad(format!(
            "{name} has {got} entries but there are {n} values"
        )));
    }
    Ok(())
}

pub fn opt_strings(
    obj: Option<&Bound<'_, PyAny>>,
    n: usize,
    name: &str,
) -> PyResult<Option<Vec<Option<String>>>> {
    let Some(obj) = obj else { return Ok(None) };
    let v: Vec<Option<String>> = to_list(obj)?.extract()?;
    check_len(v.len(), n, name)?;
    Ok(Some(v))
}

pub fn opt_u64s(
    obj: Option<&Bound<'_, PyAny>>,
    n: usize,
    name: &str,
) -> PyResult<Option<Vec<Option<u64>>>> {
    let Some(obj) = obj else { return Ok(None) };
    let converted = from_capsule(obj)?;
    let obj = converted.as_ref().unwrap_or(obj);
    // Arrow timestamps convert to milliseconds since the epoch, whatever their unit.
    let divisor: i64 = if obj.hasattr("type")? {
        let ty = arrow_type(obj)?;
        if ty.starts_with("timestamp[s") {
            -1000
        } else if ty.starts_with("timestamp[ms") {
            1
        } else if ty.starts_with("timestamp[us") {
            1000
        } else if ty.starts_with("timestamp[ns") {
            1_000_000
        } else {
            1
        }
    } else {
        1
    };
    let list = if divisor != 1 {
        obj.call_method1("cast", ("int64",))?
            .call_method0("to_pylist")?
    } else {
        to_list(obj)?
    };
    let v: Vec<Option<i64>> = list.extract()?;
    check_len(v.len(), n, name)?;
    v.into_iter()
        .map(|x| {
            x.map(|t| {
                let ms = if divisor < 0 {
                    t * -divisor
                } else {
                    t / divisor
                };
                u64::try_from(ms).map_err(|_| bad(format!("{name} must be non-negative")))
            })
            .transpose()
        })
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

pub enum Props {
    None,
    Same(Vec<(String, String)>),
    Each(Vec<Vec<(String, String)>>),
}

pub fn one_props(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(String, String)>> {
    if obj.is_none() {
        return Ok(Vec::new());
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return d
            .iter()
            .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
            .collect();
    }
    // Arrow map rows come as lists of (key, value) tuples.
    obj.extract()
}

pub fn properties(obj: Option<&Bound<'_, PyAny>>, n: usize) -> PyResult<Props> {
    let Some(obj) = obj else {
        return Ok(Props::None);
    };
    if obj.is_instance_of::<PyDict>() {
        return Ok(Props::Same(one_props(obj)?));
    }
    let list = to_list(obj)?;
    let items: Vec<Bound<'_, PyAny>> = list.try_iter()?.collect::<PyResult<_>>()?;
    check_len(items.len(), n, "properties")?;
    Ok(Props::Each(
        items.iter().map(one_props).collect::<PyResult<_>>()?,
    ))
}

/// Copy a bytes-like (or str, as UTF-8) value into an owned buffer: the one copy a send makes.
pub(crate) fn payload_of(value: &Bound<'_, PyAny>) -> PyResult<Bytes> {
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(Bytes::copy_from_slice(b.as_bytes()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Bytes::from(s.to_cow()?.into_owned().into_bytes()));
    }
    match buffer_bytes(value) {
        Ok(buf) => Ok(Bytes::from(buf)),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "message value must be bytes, bytearray, memoryview or str, not {}",
            value.get_type().name()?
        ))),
    }
}

/// Used by the columns module to build one payload buffer for many messages.
pub(crate) fn freeze_slices(buf: BytesMut, lens: &[(usize, bool)]) -> Vec<(Bytes, bool)> {
    let all = buf.freeze();
    let mut out = Vec::with_capacity(lens.len());
    let mut at = 0;
    for &(len, null) in lens {
        out.push((all.slice(at..at + len), null));
        at += len;
    }
    out
}
