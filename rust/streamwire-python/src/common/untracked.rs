//! Lists of received messages whose objects the cyclic garbage collector does not track.
//!
//! PyO3 makes every `#[pyclass]` a GC type, so each `Message` of a 10,000-message
//! `receive_many` is linked into the collector's youngest generation. Allocating them triggers
//! a young collection every 700 objects, and because the list keeps them alive across those
//! collections they are promoted and pulled into the full collections their number sets off.
//! Measured on the Pulsar `receive_many(10_000)` + list-acknowledge loop: 29% of the process's
//! samples in the collector and PyO3's `tp_traverse`, and the loop ran 1.5-1.7x faster with
//! the collector disabled.
//!
//! A message object holds only Rust data (no Python reference), so it can never be part of
//! a reference cycle: the collector has nothing to find in it. Untracking it right after it
//! is built removes that cost and changes nothing else. Classes that hold Python references
//! must not implement [`Acyclic`].

use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::PyClass;

/// A pyclass whose instances hold no Python object (only Rust data), so they cannot take
/// part in a reference cycle. Implementing it for a class with a `Py<…>` field would let
/// cycles through that field leak.
pub trait Acyclic: PyClass {}

/// Build a Python object of `value`, not tracked by the cyclic garbage collector.
pub fn untracked<T: Acyclic + Into<PyClassInitializer<T>>>(
    py: Python<'_>,
    value: T,
) -> PyResult<Bound<'_, T>> {
    let obj = Bound::new(py, value)?;
    // SAFETY: `obj` is a live object of a GC type (PyO3 gives every pyclass
    // Py_TPFLAGS_HAVE_GC); `PyObject_GC_UnTrack` only unlinks it from the collector's lists
    // and is a no-op on an untracked object, so PyO3's deallocator calling it again later is
    // fine. `T: Acyclic` promises the object holds no Python reference, so no cycle can pass
    // through it and the collector loses nothing by not visiting it. The GIL is held (`py`).
    unsafe { pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
    Ok(obj)
}

/// A Python list of untracked objects built from `values`, in order.
pub fn untracked_list<T, I>(py: Python<'_>, values: I) -> PyResult<Bound<'_, PyList>>
where
    T: Acyclic + Into<PyClassInitializer<T>>,
    I: IntoIterator<Item = T>,
    I::IntoIter: ExactSizeIterator,
{
    let objs = values
        .into_iter()
        .map(|v| untracked(py, v))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, objs)
}
