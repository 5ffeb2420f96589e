//! `streamwire.pravega.WriteFuture`: the outcome of the blocking face's `write_async` and
//! `write_many_async`, completed by the engine directly (no task per event) and waited on
//! with the interpreter released.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use streamwire_core::completion::Completion;
use streamwire_core::error::{Error, Result};

use crate::common::blocking::timeout_arg;
use crate::common::errors::{to_py, IntoPyResult};

/// A write future's outcome, and whether anyone waits for it.
#[derive(Default)]
struct Slot {
    result: Option<Result<()>>,
    waiters: usize,
}

#[derive(Default)]
pub(crate) struct FutureState {
    slot: Mutex<Slot>,
    ready: Condvar,
}

impl FutureState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Completion for FutureState {
    /// Why the waiter count: `notify_all` is a system call even with nobody waiting, and
    /// most `write_async` futures are never waited on (a flush settles them), so settling a
    /// block of events would cost one call per event.
    fn complete(&self, result: Result<()>) {
        let wake = {
            let mut slot = self.lock();
            slot.result = Some(result);
            slot.waiters > 0
        };
        if wake {
            self.ready.notify_all();
        }
    }
}

/// The outcome of `write_async` (or `write_many_async`): `result()` waits until the segment
/// store holds the event(s). Made by those calls, not constructed directly.
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaWriteFuture {
    pub(crate) state: Arc<FutureState>,
}

#[pymethods]
impl PravegaWriteFuture {
    /// Whether the outcome is known (never waits).
    fn done(&self) -> bool {
        self.state.lock().result.is_some()
    }

    /// Wait until the event is written (returns None) or raise its error.
    ///
    /// Args:
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError`.
    ///         Default None.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let st = Arc::clone(&self.state);
            let got = py.detach(move || {
                let mut slot = st.lock();
                if slot.result.is_none() {
                    // Counted under the lock `complete` takes: no wake-up is missed.
                    slot.waiters += 1;
                    slot = st
                        .ready
                        .wait_timeout_while(slot, Duration::from_millis(200), |s| {
                            s.result.is_none()
                        })
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    slot.waiters -= 1;
                }
                slot.result.clone()
            });
            if let Some(r) = got {
                return r.py_err();
            }
            py.check_signals()?;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(to_py(Error::timeout("waiting for the write result")));
            }
        }
    }

    /// The error the write failed with, or None once it succeeded (waits like `result`).
    ///
    /// Args:
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError` is
    ///         raised. Default None.
    #[pyo3(signature = (timeout=None))]
    fn exception(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Py<PyAny>>> {
        match self.result(py, timeout) {
            Ok(()) => Ok(None),
            Err(e) if !self.done() => Err(e),
            Err(e) => Ok(Some(e.into_value(py).into_any())),
        }
    }

    fn __repr__(&self) -> String {
        let done = if self.done() { "True" } else { "False" };
        format!("<streamwire.pravega.WriteFuture done={done}>")
    }
}
