//! The one helper every blocking Python call goes through.
//!
//! It runs the engine future on the process runtime, detaches from the interpreter while it
//! waits (so other Python threads run), and wakes every slice to check for signals so Ctrl-C
//! and Spark task kills interrupt the wait. The future itself is aborted on interrupt, which
//! every engine future tolerates (cancel safety is documented where they are defined).

use std::future::Future;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::runtime;

use crate::common::errors::to_py;

const SLICE: Duration = Duration::from_millis(200);

/// Block until `fut` completes, `timeout` passes (→ `OperationTimeoutError`, naming `what`),
/// or a signal handler raises.
pub fn wait<T, F>(py: Python<'_>, what: &str, timeout: Option<Duration>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let handle = runtime::handle().map_err(to_py)?;
    let mut task = handle.spawn(fut);
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let slice = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
            None => SLICE,
        };
        let joined =
            py.detach(|| handle.block_on(async { tokio::time::timeout(slice, &mut task).await }));
        match joined {
            Ok(Ok(res)) => return res.map_err(to_py),
            Ok(Err(join_err)) => {
                return Err(to_py(Error::new(
                    ErrorKind::Protocol,
                    format!("internal task failed during {what}: {join_err}"),
                )))
            }
            Err(_) => {
                if let Err(e) = py.check_signals() {
                    // The signal's exception wins. A task that finished in the instant before
                    // the abort has its result dropped: a received message then stays
                    // unacknowledged and is redelivered like any message whose processing a
                    // Ctrl-C cut short; a finished send stays sent, only its receipt is not
                    // returned (as when Ctrl-C lands just after the call returns).
                    task.abort();
                    return Err(e);
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    task.abort();
                    // The task may have finished between the last slice and the abort: its
                    // result (a message taken from a receiver queue, say) is returned rather
                    // than dropped with the handle. Otherwise the abort lands at the task's
                    // next await, where the engine's futures take nothing.
                    return match py.detach(|| handle.block_on(&mut task)) {
                        Ok(res) => res.map_err(to_py),
                        Err(e) if e.is_cancelled() => Err(to_py(Error::timeout(what))),
                        Err(e) => Err(to_py(Error::new(
                            ErrorKind::Protocol,
                            format!("internal task failed during {what}: {e}"),
                        ))),
                    };
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
