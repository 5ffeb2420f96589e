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
use pyo3::sync::PyOnceLock;
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

/// A pyclass that holds Python references only some of the time and keeps itself tracked
/// by the collector exactly while it may be part of a reference cycle, with
/// [`set_tracked`]. Implementing it promises that every path storing a reference that could
/// lead back to the object (a callback, an exception with its traceback) calls
/// `set_tracked(obj, true)`, and that `set_tracked(obj, false)` is called only while the
/// object holds nothing that can reach it again.
pub trait TracksItself: PyClass {}

/// Link `obj` into the cyclic collector's lists (`on`) or out of them.
///
/// Tracking is what makes the collector walk an object at each collection of its
/// generation; an object that cannot take part in a cycle gains nothing from it (see
/// `common::aio_future` for the numbers on awaited sends).
pub fn set_tracked<T: TracksItself>(obj: &Bound<'_, T>, on: bool) {
    let ptr = obj.as_ptr();
    // SAFETY: `obj` is a live, fully built object of a pyclass, which PyO3 always makes a GC
    // type (Py_TPFLAGS_HAVE_GC), and the GIL is held (`Bound`). `PyObject_GC_Track` aborts
    // the process on an object that is already tracked, so it is only called after
    // `PyObject_GC_IsTracked` said it is not; `PyObject_GC_UnTrack` is a no-op on an
    // untracked object (PyO3's deallocator calls it again later). Which of the two is right
    // is the implementor's promise (`T: TracksItself`).
    unsafe {
        let tracked = pyo3::ffi::PyObject_GC_IsTracked(ptr) != 0;
        if on && !tracked {
            pyo3::ffi::PyObject_GC_Track(ptr.cast());
        } else if !on && tracked {
            pyo3::ffi::PyObject_GC_UnTrack(ptr.cast());
        }
    }
}

/// Lists at least this long are built with the collector paused (see [`GcPause`]).
const PAUSE_AT: usize = 256;

/// A Python list of untracked objects built from `values`, in order.
///
/// Untracking does not undo the allocation count: CPython still counts each new object of
/// a GC type towards the next young collection (one every 700), and each of those
/// collections walks every list the young generation holds, the caller's previous 10,000
/// messages included. Callgrind on `receive_many(10_000)` + list acknowledge: about 180
/// instructions per message in the collector (of 2,300). A long list is therefore built
/// with the collector paused, and the counted allocations are collected once afterwards.
pub fn untracked_list<T, I>(py: Python<'_>, values: I) -> PyResult<Bound<'_, PyList>>
where
    T: Acyclic + Into<PyClassInitializer<T>>,
    I: IntoIterator<Item = T>,
    I::IntoIter: ExactSizeIterator,
{
    let values = values.into_iter();
    let n = values.len();
    let _pause = if n >= PAUSE_AT {
        GcPause::new(py)?
    } else {
        None
    };
    let mut objs = Vec::with_capacity(n);
    for v in values {
        objs.push(untracked(py, v)?);
    }
    PyList::new(py, objs)
}

static GC_FNS: PyOnceLock<(Py<PyAny>, Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

/// The cyclic collector switched off for as long as this lives (from `gc.disable()` to
/// `gc.enable()`), only if it was on. Safe to use while the GIL is held throughout: no
/// other Python code runs meanwhile, and nothing the collector would free is lost, just
/// found at the next collection.
struct GcPause<'py> {
    py: Python<'py>,
    enable: &'py Py<PyAny>,
}

impl<'py> GcPause<'py> {
    fn new(py: Python<'py>) -> PyResult<Option<Self>> {
        let (isenabled, disable, enable) = GC_FNS.get_or_try_init(py, || -> PyResult<_> {
            let gc = py.import("gc")?;
            Ok((
                gc.getattr("isenabled")?.unbind(),
                gc.getattr("disable")?.unbind(),
                gc.getattr("enable")?.unbind(),
            ))
        })?;
        if !isenabled.bind(py).call0()?.is_truthy()? {
            return Ok(None); // the caller turned it off: leave it so
        }
        disable.bind(py).call0()?;
        Ok(Some(GcPause { py, enable }))
    }
}

impl Drop for GcPause<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.enable.bind(self.py).call0() {
            e.write_unraisable(self.py, None);
        }
    }
}
