//! Reading bytes-like objects (`bytearray`, `memoryview`, a `pyarrow.Buffer`, ...) in each of
//! the builds the wheels come in.
//!
//! The wheels are abi3: one per platform serves every CPython from a version on. CPython 3.9's
//! limited API (feature `abi3`, the default, for 3.9 and 3.10) has no buffer protocol
//! (`PyObject_GetBuffer` joined it in 3.11), so there a buffer is copied out through
//! `memoryview.tobytes()`: one memcpy into a `bytes`, then ours. 3.11's (feature `abi3-py311`)
//! and the full API read the buffer directly, once. `make dist` builds both abi3 wheels; pip
//! takes the 3.11 one on 3.11 and later. (A `str` is read with `to_cow()`, which likewise
//! borrows its UTF-8 from 3.10's API on and encodes a copy on 3.9's.)

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

#[cfg(not(feature = "abi3"))]
use pyo3::buffer::PyBuffer;
#[cfg(feature = "abi3")]
use pyo3::types::PyMemoryView;

/// The bytes of any object exporting a buffer of byte-sized items, copied into a vector we
/// own. Fails with `TypeError` for an object that is no buffer or whose items are wider than a
/// byte (an `array('i')`: its bytes would be in the machine's order, which no reader expects).
pub(crate) fn buffer_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    copy_out(obj)
}

/// A buffer's bytes viewed as unsigned bytes whatever its format: what Arrow's buffers are
/// (pyarrow exports them with format `b`, signed bytes).
pub(crate) fn raw_buffer_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let view = pyo3::types::PyMemoryView::from(obj)?.call_method1("cast", ("B",))?;
    copy_out(&view)
}

#[cfg(not(feature = "abi3"))]
fn copy_out(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    PyBuffer::<u8>::get(obj)?.to_vec(obj.py())
}

#[cfg(feature = "abi3")]
fn copy_out(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let view = PyMemoryView::from(obj)?;
    if view.getattr("itemsize")?.extract::<usize>()? != 1 {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "a bytes-like value must have byte-sized items, not format {:?}",
            view.getattr("format")?.extract::<String>()?
        )));
    }
    // `tobytes()` puts a non-contiguous view in order too, as `PyBuffer::to_vec` does.
    let copied = view.call_method0("tobytes")?;
    Ok(copied.cast::<PyBytes>()?.as_bytes().to_vec())
}
