//! `streamwire.SendFuture`: what a blocking `Producer.send_async` returns — a slot the
//! producer's receipt (or error) fills, waited on with the interpreter lock released.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use streamwire_core::error::{Error, Result};
use streamwire_pulsar::message_id::MessageId;

use crate::common::errors::{to_py, IntoPyResult};
use crate::pulsar::message_id::PyMessageId;

/// The result of a `send_async`, filled in when the broker's receipt (or an error) arrives.
#[derive(Default)]
pub(crate) struct FutureState {
    result: Mutex<Option<Result<MessageId>>>,
    ready: Condvar,
}

impl FutureState {
    pub(crate) fn set(&self, res: Result<MessageId>) {
        let mut r = self.result.lock().unwrap_or_else(|p| p.into_inner());
        if r.is_none() {
            *r = Some(res);
        }
        self.ready.notify_all();
    }
}

/// The outcome of a `Producer.send_async`: filled in when the broker's receipt (or an error)
/// arrives. Made by `send_async`, not constructed directly.
#[pyclass(frozen, module = "streamwire._native")]
pub struct SendFuture {
    pub(crate) state: Arc<FutureState>,
}

#[pymethods]
impl SendFuture {
    /// Whether the outcome is known (never waits).
    fn done(&self) -> bool {
        self.state
            .result
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Wait for the outcome: the `MessageId`, or the send's error raised.
    ///
    /// Args:
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError`.
    ///         Default None.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<PyMessageId> {
        let timeout = crate::common::blocking::timeout_arg("timeout", timeout).py_err()?;
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let st = Arc::clone(&self.state);
            let slice = Duration::from_millis(200);
            let got = py.detach(move || {
                let guard = st.result.lock().unwrap_or_else(|p| p.into_inner());
                let (guard, _) = st
                    .ready
                    .wait_timeout_while(guard, slice, |r| r.is_none())
                    .unwrap_or_else(|p| p.into_inner());
                guard.clone()
            });
            if let Some(r) = got {
                return r.map(PyMessageId::from).py_err();
            }
            py.check_signals()?;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(to_py(Error::timeout("waiting for the send result")));
            }
        }
    }

    /// The error the send failed with, or None if it succeeded (waits like `result`).
    ///
    /// Args:
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError` is
    ///         raised. Default None.
    #[pyo3(signature = (timeout=None))]
    fn exception(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Py<PyAny>>> {
        match self.result(py, timeout) {
            Ok(_) => Ok(None),
            Err(e) if e.get_type(py).name()? == "OperationTimeoutError" && !self.done() => Err(e),
            Err(e) => Ok(Some(e.into_value(py).into_any())),
        }
    }

    fn __repr__(&self) -> String {
        let done = if self.done() { "True" } else { "False" };
        format!("<streamwire.SendFuture done={done}>")
    }
}
