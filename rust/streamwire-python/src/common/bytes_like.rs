//! Reading bytes-like objects and `str`s through the limited Python API, so the extension
//! builds as one abi3 wheel for CPython 3.9+ (`pyo3` feature `abi3-py39`).
//!
//! Two things the full API has are missing there: the buffer protocol (`PyObject_GetBuffer`
//! joined the limited API in 3.11) and a borrowed UTF-8 view of a `str`
//! (`PyUnicode_AsUTF8AndSize`, 3.10). Here a buffer is copied out through
//! `memoryview.tobytes()` (one memcpy into a `bytes`, then ours); a `str` is read with
//! `to_cow()`, which borrows where the API allows and encodes into a fresh `bytes` on 3.9's. Both cost one extra copy of the payload, never a Python object per
//! element; the hot bulk paths (`bytes` sequences and Arrow arrays) measured no slower in the
//! abi3 build (docs/install.md has the figures).

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyMemoryView};

/// The bytes of any object exporting a buffer of byte-sized items (`bytes`, `bytearray`,
/// `memoryview`, a `pyarrow.Buffer`, ...), copied into a vector we own.
///
/// Fails with `TypeError` for an object that is no buffer or whose items are wider than a byte
/// (an `array('i')`: its bytes would be in the machine's order, which no reader expects).
pub(crate) fn buffer_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    let view = PyMemoryView::from(obj)?;
    if view.getattr("itemsize")?.extract::<usize>()? != 1 {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "a bytes-like value must have byte-sized items, not format {:?}",
            view.getattr("format")?.extract::<String>()?
        )));
    }
    // `tobytes()` copies a non-contiguous view into order too, as the buffer protocol's
    // contiguous copy did.
    let copied = view.call_method0("tobytes")?;
    Ok(copied.cast::<PyBytes>()?.as_bytes().to_vec())
}

/// A buffer's bytes viewed as unsigned bytes whatever its format: what Arrow's buffers are
/// (pyarrow exports them with format `b`).
pub(crate) fn raw_buffer_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let copied = PyMemoryView::from(obj)?.call_method0("tobytes")?;
    Ok(copied.cast::<PyBytes>()?.as_bytes().to_vec())
}
