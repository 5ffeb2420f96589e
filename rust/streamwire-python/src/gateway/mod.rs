//! `streamwire.gateway.serve()` and the `streamwire gateway` command: the PIP-64 gateway on
//! the process's engine runtime, with the interpreter released while it serves. Ctrl-C (or
//! any signal handler that raises) stops it cleanly: no new connections, requests in flight
//! finish, producers flush and close; then the call returns.

use std::time::Duration;

use pyo3::prelude::*;
use tokio::sync::oneshot;

use streamwire_core::error::{Error, ErrorKind};
use streamwire_core::runtime;
use streamwire_gateway::GatewayConfig;

use crate::common::errors::{to_py, IntoPyResult};

const SLICE: Duration = Duration::from_millis(200);

/// The gateway's flags and endpoints, as the plain binary's `--help` prints them (one text
/// for both ways to run it).
#[pyfunction]
pub fn _gateway_usage() -> &'static str {
    streamwire_gateway::config::USAGE
}

/// Serve with the gateway's flags (`--service-url`, `--listen`, ...) over the
/// `STREAMWIRE_GATEWAY_*` environment, until a signal handler raises (Ctrl-C).
#[pyfunction]
pub fn _gateway_run(py: Python<'_>, args: Vec<String>) -> PyResult<()> {
    let config = GatewayConfig::parse(&args, |k| std::env::var(k).ok()).py_err()?;
    let grace = config.request_timeout + Duration::from_secs(5);
    let handle = runtime::handle().py_err()?;
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let mut task = handle.spawn(streamwire_gateway::serve(config, async {
        let _ = stop_rx.await;
    }));
    let mut stop = Some(stop_tx);
    let mut interrupted = false;
    loop {
        let slice = if interrupted { grace } else { SLICE };
        let joined =
            py.detach(|| handle.block_on(async { tokio::time::timeout(slice, &mut task).await }));
        match joined {
            // After Ctrl-C this is the clean stop: not an error.
            Ok(Ok(result)) => return result.py_err(),
            Ok(Err(join)) => {
                return Err(to_py(Error::new(
                    ErrorKind::Protocol,
                    format!("the gateway task failed: {join}"),
                )))
            }
            Err(_) if interrupted => {
                task.abort();
                return Err(to_py(Error::timeout("stopping the gateway")));
            }
            Err(_) => {
                if py.check_signals().is_err() {
                    if let Some(tx) = stop.take() {
                        let _ = tx.send(());
                    }
                    interrupted = true;
                }
            }
        }
    }
}
