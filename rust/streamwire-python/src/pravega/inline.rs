//! Waiting for an engine future on the calling thread (interpreter lock released), instead of
//! spawning it on a worker and waiting for the worker.
//!
//! Why: `common::blocking::wait` spawns the future and blocks on its join handle, so every
//! call costs two cross-thread hand-offs (wake a worker; the worker wakes the caller), and on
//! loaded cores each hand-off waits for a run-queue slot. Polled here, a read that finds
//! events already read ahead completes with no hand-off at all, and whatever completes a
//! waiting call (a fetch task queueing a chunk, the writer's task settling a `write_many`)
//! wakes this thread directly.
//!
//! Cancellation is the same as `wait`'s abort: on a signal or at the deadline the future is
//! dropped where it waits (handing over, a queue receive, a completion's receiver).

use std::future::Future;
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use streamwire_core::error::{Error, Result};
use streamwire_core::runtime;

use crate::common::errors::to_py;

/// How long one wait lasts before signals (Ctrl-C) are checked.
const SLICE: Duration = Duration::from_millis(200);

/// Run `fut` to completion on this thread, up to `timeout` (then `OperationTimeoutError`).
pub fn wait_here<T, F>(py: Python<'_>, what: &str, timeout: Option<Duration>, fut: F) -> PyResult<T>
where
    T: Send,
    F: Future<Output = Result<T>> + Send,
{
    let handle = runtime::handle().map_err(to_py)?;
    let mut fut = Box::pin(fut);
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let slice = match deadline {
            Some(d) => d.saturating_duration_since(Instant::now()).min(SLICE),
            None => SLICE,
        };
        let got = py
            .detach(|| handle.block_on(async { tokio::time::timeout(slice, fut.as_mut()).await }));
        match got {
            Ok(res) => return res.map_err(to_py),
            Err(_) => {
                py.check_signals()?;
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(to_py(Error::timeout(what)));
                }
            }
        }
    }
}
