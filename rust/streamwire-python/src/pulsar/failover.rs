//! `streamwire.AutoClusterFailover`: a primary cluster and its secondaries, given to `Client`
//! instead of a service URL. The rules and the probing live in the engine
//! (`streamwire_pulsar::failover`, `streamwire_pulsar::client`); this is the option object.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyString;

use streamwire_core::error::{Error, ErrorKind};
use streamwire_pulsar::failover::FailoverPolicy;

use crate::common::blocking::positive_secs;
use crate::common::errors::{to_py, IntoPyResult};

/// Automatic failover between Pulsar clusters, given to `Client` as its `service_url`.
///
/// The client starts on `primary` and probes every cluster each `check_interval` seconds
/// (a TCP connection to one of its hosts). Once the cluster in use has failed
/// `failover_threshold` probes in a row, the client moves to the primary if it is
/// reachable, else to the first reachable secondary: lookups go there, and every connection
/// is closed so producers and consumers reconnect there (messages not yet acknowledged are
/// sent again to the new cluster). While on a secondary, once the primary has passed
/// `switch_back_threshold` probes in a row the client moves back. The same rules as the
/// official client's `pulsar.AutoClusterFailover`; the client's auth and TLS options apply
/// to every cluster.
///
/// Args:
///     primary: the preferred cluster's service URL (`pulsar://`, `pulsar+ssl://`,
///         `http(s)://`; several hosts may be listed).
///     secondary: the fallback clusters' service URLs, in order of preference (at least one).
///     check_interval: seconds between probes. Default 5.0.
///     failover_threshold: failed probes in a row before moving away. Default 1.
///     switch_back_threshold: successful probes of the primary in a row before moving back.
///         Default 1.
///
/// Raises:
///     ConfigError: no secondary, a non-positive interval or threshold.
#[pyclass(frozen, module = "streamwire._native")]
pub struct AutoClusterFailover {
    /// The primary's URL first, then the secondaries'.
    pub(crate) urls: Vec<String>,
    pub(crate) policy: FailoverPolicy,
}

#[pymethods]
impl AutoClusterFailover {
    #[new]
    #[pyo3(signature = (primary, secondary, *, check_interval=5.0, failover_threshold=1,
                        switch_back_threshold=1))]
    fn new(
        primary: String,
        secondary: &Bound<'_, PyAny>,
        check_interval: f64,
        failover_threshold: i64,
        switch_back_threshold: i64,
    ) -> PyResult<Self> {
        // A lone string is a list of characters to Python: refuse it rather than iterate.
        if secondary.is_instance_of::<PyString>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "secondary must be a list of service URLs, not a str",
            ));
        }
        let secondary: Vec<String> = secondary.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("secondary must be a list of service URLs")
        })?;
        if secondary.is_empty() {
            return Err(config("secondary must name at least one service URL"));
        }
        let threshold = |name: &str, v: i64| -> PyResult<u32> {
            u32::try_from(v)
                .ok()
                .filter(|v| *v >= 1)
                .ok_or_else(|| config(&format!("{name} must be at least 1, got {v}")))
        };
        let check_interval: Duration = positive_secs("check_interval", check_interval).py_err()?;
        let mut urls = vec![primary];
        urls.extend(secondary);
        Ok(AutoClusterFailover {
            urls,
            policy: FailoverPolicy {
                check_interval,
                failover_threshold: threshold("failover_threshold", failover_threshold)?,
                switch_back_threshold: threshold("switch_back_threshold", switch_back_threshold)?,
            },
        })
    }

    /// The primary cluster's service URL.
    #[getter]
    fn primary(&self) -> &str {
        &self.urls[0]
    }

    /// The secondary clusters' service URLs, in order.
    #[getter]
    fn secondary(&self) -> Vec<String> {
        self.urls[1..].to_vec()
    }

    /// Seconds between probes.
    #[getter]
    fn check_interval(&self) -> f64 {
        self.policy.check_interval.as_secs_f64()
    }

    /// Failed probes in a row before moving away.
    #[getter]
    fn failover_threshold(&self) -> u32 {
        self.policy.failover_threshold
    }

    /// Successful probes of the primary in a row before moving back.
    #[getter]
    fn switch_back_threshold(&self) -> u32 {
        self.policy.switch_back_threshold
    }

    fn __repr__(&self) -> String {
        format!(
            "AutoClusterFailover(primary={:?}, secondary={:?}, check_interval={}, \
             failover_threshold={}, switch_back_threshold={})",
            self.urls[0],
            &self.urls[1..],
            self.policy.check_interval.as_secs_f64(),
            self.policy.failover_threshold,
            self.policy.switch_back_threshold
        )
    }
}

fn config(msg: &str) -> PyErr {
    to_py(Error::new(ErrorKind::Config, msg))
}
