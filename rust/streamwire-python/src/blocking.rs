//! The one helper every blocking Python call goes through.
//!
//! It runs the engine future on the process runtime, detaches from the interpreter while it
//! waits (so other Python threads run), and wakes every slice to check for signals so Ctrl-C
//! and Spark task kills interrupt the wait. The future itself is aborted on interrupt, which
//! every engine future tolerates (cancel safety is documented where they are defined).
//!
//! The wait itself is an OS-level timed channel receive, not a Tokio timer: the signal check
//! comes every slice even when the runtime's workers are slow to drive its timers (a loaded
//! machine), so an interrupt is never left waiting on the engine.

use std::future::Future;
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::runtime;

use crate::errors::to_py;

const SLICE: Duration = Duration::from_millis(200);

/// Block until `fut` completes, `timeout` passes (→ `OperationTimeoutError`, naming `what`),
/// or a signal handler raises.
pub fn wait<T, F>(py: Python<'_>, what: &str, timeout: Option<Duration>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let handle = runtime::handle().map_err(to_py)?;
    let (tx, mut rx) = sync_channel(1);
    let task = handle.spawn(async move {
        let _ = tx.send(fut.await);
    });
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let slice = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
            None => SLICE,
        };
        // The receiver is Send, not Sync: it goes into the detached closure and comes back.
        let (got, back) = py.detach(move || (rx.recv_timeout(slice), rx));
        rx = back;
        match got {
            Ok(res) => return res.map_err(to_py),
            Err(RecvTimeoutError::Disconnected) => {
                // The task ended without a result: it panicked. Its join error says why.
                let why = match handle.block_on(task) {
                    Err(e) => e.to_string(),
                    Ok(()) => "no result".to_owned(),
                };
                return Err(to_py(Error::new(
                    ErrorKind::Protocol,
                    format!("internal task failed during {what}: {why}"),
                )));
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    task.abort();
                    return Err(e);
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    task.abort();
                    return Err(to_py(Error::timeout(what)));
                }
            }
        }
    }
}

/// Convert a Python timeout in seconds (None = no limit) to a Duration, rejecting bad values.
pub fn timeout_arg(name: &str, secs: Option<f64>) -> Result<Option<Duration>> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s >= 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(Error::invalid(format!(
            "{name} must be a non-negative number of seconds, got {s}"
        ))),
    }
}

/// A positive duration setting in seconds.
pub fn positive_secs(name: &str, secs: f64) -> Result<Duration> {
    if secs.is_finite() && secs > 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(Error::new(
            ErrorKind::Config,
            format!("{name} must be a positive number of seconds, got {secs}"),
        ))
    }
}

/// A count or size from Python: negative (or too large) values are a `ConfigError` with the
/// option's name, not Python's bare `OverflowError`.
pub fn count_arg<T: TryFrom<i64>>(name: &str, value: i64) -> Result<T> {
    if value < 0 {
        return Err(Error::new(
            ErrorKind::Config,
            format!("{name} must not be negative, got {value}"),
        ));
    }
    T::try_from(value)
        .map_err(|_| Error::new(ErrorKind::Config, format!("{name} is too large: {value}")))
}
