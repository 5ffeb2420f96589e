//! The blocking face's future of a write handed over without waiting: TANK's `send_async`
//! (`streamwire.tank.SendFuture`) and Pravega's `write_async` / `write_many_async`
//! (`streamwire.pravega.WriteFuture`). The engine completes it directly (no task per
//! message) and Python waits on it with the interpreter released.
//!
//! The state and the waiting are written once here; `write_future!` makes each protocol's
//! Python class over them (a class of its own per protocol: its name, repr and docstrings
//! say what it waits for).

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use streamwire_core::completion::Completion;
use streamwire_core::error::{Error, Result};

use crate::common::blocking::timeout_arg;
use crate::common::errors::{to_py, IntoPyResult};

/// A future's outcome, and whether anyone waits for it.
#[derive(Default)]
struct Slot {
    result: Option<Result<()>>,
    waiters: usize,
}

/// Filled once by the engine; waited on by Python.
#[derive(Default)]
pub(crate) struct FutureState {
    slot: Mutex<Slot>,
    ready: Condvar,
}

impl FutureState {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the outcome is known (never waits).
    pub fn is_done(&self) -> bool {
        self.lock().result.is_some()
    }

    /// Wait for the outcome (interpreter released, Ctrl-C checked), at most `timeout`
    /// seconds; then `OperationTimeoutError` "waiting for the `what` result".
    pub fn wait(&self, py: Python<'_>, timeout: Option<f64>, what: &str) -> PyResult<()> {
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let got = py.detach(|| {
                let mut slot = self.lock();
                if slot.result.is_none() {
                    // Counted under the lock `complete` takes: no wake-up is missed.
                    slot.waiters += 1;
                    slot = self
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
                return Err(to_py(Error::timeout(format!(
                    "waiting for the {what} result"
                ))));
            }
        }
    }

    /// The error the write failed with, or None once it succeeded (waits like `wait`).
    pub fn exception(
        &self,
        py: Python<'_>,
        timeout: Option<f64>,
        what: &str,
    ) -> PyResult<Option<Py<PyAny>>> {
        match self.wait(py, timeout, what) {
            Ok(()) => Ok(None),
            Err(e) if !self.is_done() => Err(e),
            Err(e) => Ok(Some(e.into_value(py).into_any())),
        }
    }

    /// `done=True` or `done=False`, for the repr.
    pub fn done_word(&self) -> &'static str {
        if self.is_done() {
            "True"
        } else {
            "False"
        }
    }
}

impl Completion for FutureState {
    /// Why the waiter count: `notify_all` is a system call even with nobody waiting, and
    /// most such futures are never waited on (a flush settles them), so settling a block of
    /// messages would cost one call per message.
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

/// A protocol's write-future class over [`FutureState`]: `write_future!(Class, "repr
/// name", "what" in the timeout error, "doc of result()", "doc of exception()")`, the class's
/// own doc comment first.
#[macro_export]
macro_rules! write_future {
    (
        $(#[$doc:meta])*
        $name:ident, $repr:literal, $what:literal, $result_doc:literal, $exception_doc:literal
    ) => {
        $(#[$doc])*
        #[pyo3::pyclass(frozen, module = "streamwire._native")]
        pub struct $name {
            pub(crate) state: std::sync::Arc<$crate::common::write_future::FutureState>,
        }

        #[pyo3::pymethods]
        impl $name {
            /// Whether the outcome is known (never waits).
            fn done(&self) -> bool {
                self.state.is_done()
            }

            #[doc = $result_doc]
            ///
            /// Args:
            ///     timeout: seconds to wait at most (None: no limit); then
            ///         `OperationTimeoutError`. Default None.
            #[pyo3(signature = (timeout=None))]
            fn result(&self, py: pyo3::Python<'_>, timeout: Option<f64>) -> pyo3::PyResult<()> {
                self.state.wait(py, timeout, $what)
            }

            #[doc = $exception_doc]
            ///
            /// Args:
            ///     timeout: seconds to wait at most (None: no limit); then
            ///         `OperationTimeoutError` is raised. Default None.
            #[pyo3(signature = (timeout=None))]
            fn exception(
                &self,
                py: pyo3::Python<'_>,
                timeout: Option<f64>,
            ) -> pyo3::PyResult<Option<pyo3::Py<pyo3::PyAny>>> {
                self.state.exception(py, timeout, $what)
            }

            fn __repr__(&self) -> String {
                format!(concat!("<", $repr, " done={}>"), self.state.done_word())
            }
        }
    };
}
