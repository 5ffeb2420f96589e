//! `streamwire.AutoClusterFailover`: a primary cluster and its secondaries, given to `Client`
//! instead of a service URL, each a URL or a `streamwire.ServiceInfo` (a URL with its own
//! credentials and TLS trust). The rules and the probing live in the engine
//! (`streamwire_pulsar::failover`, `streamwire_pulsar::client`); these are the option objects,
//! and the per-cluster connection settings they make out of the client's.

use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyString;

use streamwire_core::error::{Error, ErrorKind};
use streamwire_pulsar::client::Cluster;
use streamwire_pulsar::connection::{Auth, ConnectionConfig, TlsConnector, TlsOptions};
use streamwire_pulsar::failover::FailoverPolicy;

use crate::common::blocking::positive_secs;
use crate::common::errors::{to_py, IntoPyResult};
use crate::pulsar::auth::build_auth;

/// One cluster for `AutoClusterFailover`: its service URL and, where it differs from the
/// client's, how to authenticate to it, which CA to trust and which client certificate to
/// present.
///
/// What is not given here is the `Client`'s own setting: a cluster that needs no
/// credentials while another does is given with the credentials on the other's
/// `ServiceInfo`, none on the `Client`. (The official client's `pulsar.ServiceInfo` carries
/// the same two things.)
///
/// Args:
///     service_url: the cluster's service URL (`pulsar://`, `pulsar+ssl://`, `http(s)://`).
///     auth_token: a token (str) or a callable returning one, for this cluster.
///     auth_token_file: a file holding this cluster's token (read on every connection).
///     auth: an authentication plug-in object for this cluster (as `Client`'s `auth`).
///     tls_trust_certs_file: the CA bundle this cluster's certificates are checked against
///         (the client's other TLS settings apply).
///     tls_cert_file: the client certificate (PEM) presented to this cluster (mutual TLS;
///         with `auth=AuthTls()` it is also the cluster's credential). Needs `tls_key_file`.
///     tls_key_file: the private key (PEM) of `tls_cert_file`.
///
/// Raises:
///     ConfigError: more than one of `auth_token`, `auth_token_file` and `auth`; only one of
///         `tls_cert_file` and `tls_key_file`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct ServiceInfo {
    cluster: Entry,
}

/// A cluster as the failover option holds it.
#[derive(Clone)]
pub(crate) struct Entry {
    url: String,
    auth: Option<Auth>,
    trust: Option<PathBuf>,
    /// The client certificate and its key, both or neither.
    cert: Option<(PathBuf, PathBuf)>,
}

impl Entry {
    fn of(item: &Bound<'_, PyAny>) -> PyResult<Entry> {
        if let Ok(info) = item.cast::<ServiceInfo>() {
            return Ok(info.get().cluster.clone());
        }
        let url: String = item.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(
                "a cluster must be a service URL (str) or a streamwire.ServiceInfo",
            )
        })?;
        Ok(Entry {
            url,
            auth: None,
            trust: None,
            cert: None,
        })
    }

    /// This cluster's settings: the client's, with this cluster's credentials and CA.
    fn cluster(&self, base: &ConnectionConfig, tls: &TlsOptions) -> PyResult<Cluster> {
        let mut config = base.clone();
        if let Some(auth) = &self.auth {
            config.auth = Some(auth.clone());
        }
        if self.trust.is_some() || self.cert.is_some() {
            let mut options = tls.clone();
            if let Some(trust) = &self.trust {
                options.trust_certs_file = Some(trust.clone());
            }
            if let Some((cert, key)) = &self.cert {
                options.cert_file = Some(cert.clone());
                options.key_file = Some(key.clone());
            }
            // Built now so a bad CA bundle or key fails at the Client call, not on failover.
            config.tls = Some(TlsConnector::new(&options).py_err()?);
        }
        Ok(Cluster {
            url: self.url.clone(),
            config,
        })
    }
}

#[pymethods]
impl ServiceInfo {
    #[new]
    #[pyo3(signature = (service_url, *, auth_token=None, auth_token_file=None, auth=None,
                        tls_trust_certs_file=None, tls_cert_file=None, tls_key_file=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        service_url: String,
        auth_token: Option<&Bound<'_, PyAny>>,
        auth_token_file: Option<PathBuf>,
        auth: Option<&Bound<'_, PyAny>>,
        tls_trust_certs_file: Option<PathBuf>,
        tls_cert_file: Option<PathBuf>,
        tls_key_file: Option<PathBuf>,
    ) -> PyResult<Self> {
        let cert = match (tls_cert_file, tls_key_file) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (None, None) => None,
            _ => {
                return Err(config(
                    "ServiceInfo: tls_cert_file and tls_key_file go together (a client \
                     certificate needs its private key)",
                ))
            }
        };
        Ok(ServiceInfo {
            cluster: Entry {
                url: service_url,
                auth: build_auth(auth_token, auth_token_file, auth)?,
                trust: tls_trust_certs_file,
                cert,
            },
        })
    }

    /// The cluster's service URL.
    #[getter]
    fn service_url(&self) -> &str {
        &self.cluster.url
    }

    /// The CA bundle for this cluster, if it has its own.
    #[getter]
    fn tls_trust_certs_file(&self) -> Option<String> {
        self.cluster
            .trust
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned())
    }

    /// The client certificate this cluster is given, if it has its own (the key is not shown).
    #[getter]
    fn tls_cert_file(&self) -> Option<String> {
        self.cluster
            .cert
            .as_ref()
            .map(|(c, _)| c.to_string_lossy().into_owned())
    }

    /// The authentication method this cluster's credentials use (`"token"`, ...), if it
    /// has its own (the credentials themselves are not shown).
    #[getter]
    fn auth_method(&self) -> Option<String> {
        self.cluster
            .auth
            .as_ref()
            .map(|a| a.method_name().to_owned())
    }

    fn __repr__(&self) -> String {
        format!(
            "ServiceInfo({:?}, auth_method={:?}, tls_trust_certs_file={:?}, \
             tls_cert_file={:?})",
            self.cluster.url,
            self.auth_method(),
            self.cluster.trust,
            self.tls_cert_file()
        )
    }
}

/// Automatic failover between Pulsar clusters, given to `Client` as its `service_url`.
///
/// The client starts on `primary` and probes every cluster each `check_interval` seconds
/// (a TCP connection to one of its hosts). Once the cluster in use has failed
/// `failover_threshold` probes in a row, the client moves to the primary if it is
/// reachable, else to the first reachable secondary: lookups go there, and every connection
/// is closed so producers and consumers reconnect there (messages not yet acknowledged are
/// sent again to the new cluster). While on a secondary, once the primary has passed
/// `switch_back_threshold` probes in a row the client moves back. The same rules as the
/// official client's `pulsar.AutoClusterFailover`. The client's auth and TLS options apply
/// to every cluster given as a plain URL; a `ServiceInfo` replaces them for its cluster.
///
/// Args:
///     primary: the preferred cluster: its service URL (`pulsar://`, `pulsar+ssl://`,
///         `http(s)://`; several hosts may be listed) or a `ServiceInfo` (the URL with its
///         own credentials or CA).
///     secondary: the fallback clusters, in order of preference (at least one), each a
///         service URL or a `ServiceInfo`.
///     check_interval: seconds between probes. Default 5.0.
///     failover_threshold: failed probes in a row before moving away. Default 1.
///     switch_back_threshold: successful probes of the primary in a row before moving back.
///         Default 1.
///
/// Raises:
///     ConfigError: no secondary, a non-positive interval or threshold.
#[pyclass(frozen, module = "streamwire._native")]
pub struct AutoClusterFailover {
    /// The primary first, then the secondaries.
    clusters: Vec<Entry>,
    pub(crate) policy: FailoverPolicy,
}

#[pymethods]
impl AutoClusterFailover {
    #[new]
    #[pyo3(signature = (primary, secondary, *, check_interval=5.0, failover_threshold=1,
                        switch_back_threshold=1))]
    fn new(
        primary: &Bound<'_, PyAny>,
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
        let secondary: Vec<Bound<'_, PyAny>> = secondary.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(
                "secondary must be a list of service URLs or ServiceInfo objects",
            )
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
        let mut clusters = vec![Entry::of(primary)?];
        for s in &secondary {
            clusters.push(Entry::of(s)?);
        }
        Ok(AutoClusterFailover {
            clusters,
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
        &self.clusters[0].url
    }

    /// The secondary clusters' service URLs, in order.
    #[getter]
    fn secondary(&self) -> Vec<String> {
        self.clusters[1..].iter().map(|c| c.url.clone()).collect()
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
            self.primary(),
            self.secondary(),
            self.policy.check_interval.as_secs_f64(),
            self.policy.failover_threshold,
            self.policy.switch_back_threshold
        )
    }
}

impl AutoClusterFailover {
    /// Every cluster's URL (the primary first) and connection settings, made from the
    /// client's `base` settings and its TLS options.
    pub(crate) fn clusters(
        &self,
        base: &ConnectionConfig,
        tls: &TlsOptions,
    ) -> PyResult<Vec<Cluster>> {
        self.clusters.iter().map(|c| c.cluster(base, tls)).collect()
    }

    /// Every cluster's service URL, the primary first.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.clusters.iter().map(|c| c.url.clone()).collect()
    }
}

fn config(msg: &str) -> PyErr {
    to_py(Error::new(ErrorKind::Config, msg))
}
