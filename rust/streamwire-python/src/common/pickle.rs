//! Live handles (clients, producers, consumers, readers, views) refuse to pickle with a
//! message that says what to do instead, and close at the end of a `with` block; every
//! protocol's classes share this one wording and these three methods (`live_handle!`).

use pyo3::PyErr;

pub fn refuse_pickle(what: &str, instead: &str) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!(
        "a live streamwire {what} cannot be pickled or sent to another process; {instead}"
    ))
}

/// `__enter__` (the handle itself), `__exit__` (closes it; the block's exception, if any,
/// propagates) and `__reduce__` (refused, see [`refuse_pickle`]) for a live handle, as a
/// `#[pymethods]` block of its own: `live_handle!(Type, "what", HINT)` for a handle whose
/// `close(py)` waits and can fail, `live_handle!(Type, "what", HINT, close_now)` for one
/// whose `close()` only starts the shutdown.
#[macro_export]
macro_rules! live_handle {
    ($ty:ty, $what:expr, $hint:expr) => {
        $crate::live_handle!(@methods $ty, $what, $hint, waits);
    };
    ($ty:ty, $what:expr, $hint:expr, close_now) => {
        $crate::live_handle!(@methods $ty, $what, $hint, close_now);
    };
    (@methods $ty:ty, $what:expr, $hint:expr, $how:ident) => {
        #[pyo3::pymethods]
        impl $ty {
            fn __enter__(slf: pyo3::Bound<'_, Self>) -> pyo3::Bound<'_, Self> {
                slf
            }

            #[pyo3(signature = (*_args))]
            fn __exit__(
                &self,
                py: pyo3::Python<'_>,
                _args: &pyo3::Bound<'_, pyo3::types::PyTuple>,
            ) -> pyo3::PyResult<bool> {
                $crate::live_handle!(@close self, py, $how);
                Ok(false)
            }

            fn __reduce__(&self) -> pyo3::PyResult<()> {
                Err($crate::common::pickle::refuse_pickle($what, $hint))
            }
        }
    };
    (@close $s:ident, $py:ident, waits) => {
        $s.close($py)?;
    };
    (@close $s:ident, $py:ident, close_now) => {
        let _ = $py;
        $s.close();
    };
}
