//! `Client` and `Lookup`: the entry point of the Python API.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::{Error, ErrorKind};
use streamwire_core::runtime;
use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::connection::{ConnectionConfig, TlsConnector, TlsOptions};
use streamwire_pulsar::http_lookup::parse_http_service;
use streamwire_pulsar::service_url::ServiceUrl;
use streamwire_pulsar::topic::TopicName;

use crate::common::blocking::positive_secs;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::pulsar::auth::build_auth;
use crate::pulsar::failover::AutoClusterFailover;

const PICKLE_HINT: &str = "pass the service URL and options instead (for Spark, a \
    streamwire.spark.ClientConfig) and create the client inside the worker";

/// A connection to a Pulsar cluster. Thread-safe; create one per process and share it.
///
/// Nothing is dialled until the first producer, consumer or lookup. Live clients do not
/// pickle; after `fork()` a client made in the parent raises `ForkedProcessError`.
///
/// Args:
///     service_url: `pulsar://host:port` or `pulsar+ssl://host:port` (several hosts may be
///         listed, comma-separated); or a broker's or proxy's web address,
///         `http://host:port` / `https://host:port`: lookups and partition counts are then
///         REST calls (the auth and TLS options apply), producers and consumers still connect
///         to the owning broker's binary port. Or a `streamwire.AutoClusterFailover`: a
///         primary cluster and its secondaries, moved between automatically.
///     operation_timeout: seconds a broker request (lookup, create producer, subscribe,
///         seek...) may take; calls that include a lookup wait up to twice this. Default 30.0.
///     connection_timeout: seconds to open a TCP (and TLS) connection. Default 10.0.
///     auth_token: a token (str), or a callable returning a fresh token str for every
///         connection and challenge. Default None.
///     io_threads: engine I/O threads for this process; only the first setting takes effect
///         (a later different value warns with `RuntimeWarning`). Default None: the engine's
///         default.
///     keepalive_interval: seconds between PING frames on idle connections. Default 30.0.
///     memory_limit: bytes of payload that may be pending in all of this client's producers
///         together (0: unlimited). Default 64 MiB.
///     auth_token_file: a file holding the token, re-read on every use. Default None.
///     auth: an authentication plug-in (`streamwire.AuthBasic`, `AuthTls`, or any
///         `streamwire.AuthPlugin`). Default None. At most one of `auth_token`,
///         `auth_token_file` and `auth` may be given (else `ConfigError`).
///     tls_trust_certs_file: PEM file of CA certificates to trust. Default None: the system
///         roots.
///     tls_cert_file: PEM client certificate (mutual TLS). Default None.
///     tls_key_file: PEM private key of `tls_cert_file`. Default None.
///     tls_disable_hostname_verification_DANGEROUS: accept a broker certificate issued for
///         another host name. Default False.
///     tls_allow_insecure_connection_DANGEROUS: accept any broker certificate (no
///         verification at all). Default False.
///     listener_name: the brokers' advertised listener (a name in their
///         `advertisedListeners`) to ask for in every lookup, for clients in another network
///         than the brokers' internal one. Default None: the listener the lookup arrives on.
///         A name the brokers do not have raises `ConfigError` at the first lookup.
///     message_listener_threads: threads that call the message and reader listeners of this
///         client's consumers and readers (`subscribe(message_listener=...)`); each consumer
///         is served by one of them, so its messages reach its listener one at a time, in
///         order. Started on the first listener, stopped (and joined) by `close`. Default 1.
///
/// Raises:
///     ConfigError: a bad option, or a TLS file that cannot be read (checked here, not on
///         first use).
#[pyclass(frozen, module = "streamwire._native")]
pub struct Client {
    pub(crate) inner: PulsarClient,
    pub(crate) pid: u32,
    pub(crate) closed: AtomicBool,
    pub(crate) operation_timeout: Duration,
    /// Bounds the payload bytes of all messages pending in this client's producers.
    pub(crate) budget: MemoryBudget,
    /// For the repr
    failover: bool,
    /// For the repr: the auth method name and whether TLS is on (never any secret).
    auth_method: Option<String>,
    /// The transaction coordinator client, made on the first `transaction()`.
    pub(crate) txn_coordinator:
        std::sync::OnceLock<std::sync::Arc<streamwire_pulsar::transaction::Coordinator>>,
    /// `message_listener_threads`.
    listener_threads: usize,
    /// The listener pool (`streamwire._listeners.Pool`), made by the first listener.
    listener_pool: PyOnceLock<Py<PyAny>>,
}

crate::live_handle!(Client, "Client", PICKLE_HINT);

fn config_err(msg: &str) -> PyErr {
    to_py(Error::new(ErrorKind::Config, msg))
}

impl Client {
    /// The engine client, if this handle is usable here and now.
    pub(crate) fn live(&self) -> PyResult<&PulsarClient> {
        runtime::check_same_process(self.pid, "client").py_err()?;
        if self.closed.load(Ordering::Acquire) {
            return Err(to_py(Error::closed("client")));
        }
        Ok(&self.inner)
    }

    /// The listener pool, made on first use: a client without listeners starts no thread
    /// and imports nothing for them.
    pub(crate) fn listener_pool(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let pool = self.listener_pool.get_or_try_init(py, || {
            py.import("streamwire._listeners")?
                .getattr("Pool")?
                .call1((self.listener_threads,))
                .map(Bound::unbind)
        })?;
        Ok(pool.clone_ref(py))
    }
}

#[pymethods]
impl Client {
    #[new]
    #[pyo3(signature = (service_url, *, operation_timeout=30.0, connection_timeout=10.0,
                        auth_token=None, io_threads=None, keepalive_interval=30.0,
                        memory_limit=67_108_864, auth_token_file=None, auth=None,
                        tls_trust_certs_file=None, tls_cert_file=None, tls_key_file=None,
                        tls_disable_hostname_verification_DANGEROUS=false,
                        tls_allow_insecure_connection_DANGEROUS=false, listener_name=None,
                        message_listener_threads=1))]
    #[allow(clippy::too_many_arguments, non_snake_case)]
    fn new(
        py: Python<'_>,
        service_url: &Bound<'_, PyAny>,
        operation_timeout: f64,
        connection_timeout: f64,
        auth_token: Option<&Bound<'_, PyAny>>,
        io_threads: Option<i64>,
        keepalive_interval: f64,
        memory_limit: i64,
        auth_token_file: Option<PathBuf>,
        auth: Option<&Bound<'_, PyAny>>,
        tls_trust_certs_file: Option<PathBuf>,
        tls_cert_file: Option<PathBuf>,
        tls_key_file: Option<PathBuf>,
        tls_disable_hostname_verification_DANGEROUS: bool,
        tls_allow_insecure_connection_DANGEROUS: bool,
        listener_name: Option<String>,
        message_listener_threads: i64,
    ) -> PyResult<Self> {
        let failover = service_url.cast::<AutoClusterFailover>().ok();
        let urls = match &failover {
            Some(f) => f.get().urls(),
            None => match service_url.extract::<String>() {
                Ok(url) => vec![url],
                Err(_) => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "service_url must be a str or a streamwire.AutoClusterFailover",
                    ))
                }
            },
        };
        if message_listener_threads < 1 {
            return Err(config_err(&format!(
                "message_listener_threads must be at least 1, got {message_listener_threads}"
            )));
        }
        let listener_threads = usize::try_from(message_listener_threads).unwrap_or(usize::MAX);
        let memory_limit: u64 =
            crate::common::blocking::count_arg("memory_limit", memory_limit).py_err()?;
        let io_threads: Option<usize> = io_threads
            .map(|n| crate::common::blocking::count_arg("io_threads", n))
            .transpose()
            .py_err()?;
        if let Some(n) = io_threads {
            if n == 0 {
                return Err(to_py(Error::new(
                    ErrorKind::Config,
                    "io_threads must be at least 1",
                )));
            }
            // The engine is one runtime per process: a later client cannot resize it. That is
            // worth a warning, not a failure (a reused Spark worker meets many configs).
            if let Err(e) = runtime::configure_worker_threads(n) {
                pyo3::PyErr::warn(
                    py,
                    &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
                    &std::ffi::CString::new(e.to_string()).unwrap_or_default(),
                    1,
                )?;
            }
        }
        let operation_timeout = positive_secs("operation_timeout", operation_timeout).py_err()?;
        if let Some(name) = &listener_name {
            // The broker matches the name exactly; blanks or commas can only be a mistake.
            if name.is_empty() || name.contains([',', ':', ' ']) {
                return Err(config_err(&format!(
                    "listener_name must be a listener's name as in the brokers' \
                     advertisedListeners, got {name:?}"
                )));
            }
        }
        let config = ConnectionConfig {
            connect_timeout: positive_secs("connection_timeout", connection_timeout).py_err()?,
            operation_timeout,
            keepalive_interval: positive_secs("keepalive_interval", keepalive_interval).py_err()?,
            auth: build_auth(auth_token, auth_token_file, auth)?,
            listener_name,
            ..ConnectionConfig::default()
        };
        let tls_options = TlsOptions {
            trust_certs_file: tls_trust_certs_file,
            cert_file: tls_cert_file,
            key_file: tls_key_file,
            skip_hostname_verification: tls_disable_hostname_verification_DANGEROUS,
            allow_insecure_connection: tls_allow_insecure_connection_DANGEROUS,
        };
        // https:// (REST lookups) needs the TLS settings as much as pulsar+ssl:// does.
        let mut wants_tls = false;
        for url in &urls {
            wants_tls |= match parse_http_service(url).py_err()? {
                Some(http) => http.hosts.iter().any(|h| h.tls),
                None => ServiceUrl::parse(url).py_err()?.hosts.iter().any(|h| h.tls),
            };
        }
        let config = ConnectionConfig {
            // Built now so a bad CA bundle or key file fails here, not on first use.
            tls: if wants_tls || tls_options != TlsOptions::default() {
                Some(TlsConnector::new(&tls_options).py_err()?)
            } else {
                None
            },
            ..config
        };
        let auth_method = config.auth.as_ref().map(|a| a.method_name().to_owned());
        let inner = match &failover {
            Some(f) => {
                let clusters = f.get().clusters(&config, &tls_options)?;
                PulsarClient::with_failover(clusters, f.get().policy)
            }
            None => PulsarClient::new(&urls[0], config),
        }
        .py_err()?;
        let budget = MemoryBudget::new(memory_limit);
        crate::common::metrics::sample_budget(inner.metrics(), &budget);
        Ok(Client {
            inner,
            pid: runtime::current_pid(),
            closed: AtomicBool::new(false),
            operation_timeout,
            budget,
            failover: failover.is_some(),
            auth_method,
            txn_coordinator: std::sync::OnceLock::new(),
            listener_threads,
            listener_pool: PyOnceLock::new(),
        })
    }

    /// The service URL in use: the one the client was created with, or with
    /// `AutoClusterFailover` the cluster it is on now.
    #[getter]
    fn service_url(&self) -> String {
        self.inner.service_url()
    }

    /// Topic metadata lookups (owner broker, partition count).
    fn lookup(slf: Bound<'_, Self>) -> PyResult<Lookup> {
        slf.get().live()?;
        Ok(Lookup {
            client: slf.unbind(),
        })
    }

    /// Close every connection. Further use raises `AlreadyClosedError`. Idempotent.
    ///
    /// The listener threads are stopped first and joined: a listener call running now
    /// finishes (a listener closing its own client is not waited for).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if !self.closed.swap(true, Ordering::AcqRel) && self.pid == runtime::current_pid() {
            let stopped = match self.listener_pool.get(py) {
                Some(pool) => pool.call_method0(py, "close").map(drop),
                None => Ok(()),
            };
            self.inner.close();
            stopped?;
        }
        Ok(())
    }

    /// Number of open broker connections (diagnostics).
    /// The client's metrics: connections, lookups, pending bytes, and the totals of every
    /// producer and consumer it created (closed ones included).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let c = self.live()?;
        crate::common::metrics::client_dict(py, c.metrics())
    }

    fn _open_connections(&self) -> PyResult<usize> {
        Ok(self.live()?.pool().open_connections())
    }

    fn __repr__(&self) -> String {
        let state = if self.closed.load(Ordering::Acquire) {
            "closed"
        } else {
            "open"
        };
        let url = self.inner.service_url();
        let failover = if self.failover { " failover" } else { "" };
        match &self.auth_method {
            Some(m) => format!("<streamwire.Client {url:?}{failover} {state} auth={m:?}>"),
            None => format!("<streamwire.Client {url:?}{failover} {state}>"),
        }
    }
}

fn parse_topic(topic: &str) -> PyResult<TopicName> {
    TopicName::parse(topic).py_err()
}

/// Metadata lookups for topics.
#[pyclass(frozen, module = "streamwire._native")]
pub struct Lookup {
    pub(crate) client: Py<Client>,
}

crate::two_faces! {
    impl Lookup {
        /// The URL of the broker that owns `topic` (one partition, or a non-partitioned topic).
        ///
        /// Args:
        ///     topic: a topic name (short or fully qualified).
        fn broker_url / _abroker_url (&self, py, topic: &str) -> String {
            let client = self.client.get();
            let inner = client.live()?.clone();
            let t = parse_topic(topic)?;
            Op::new("lookup", Some(client.operation_timeout * 2), async move {
                Ok(inner.lookup_topic(&t).await?.logical.to_string())
            })
        }

        /// The number of partitions of `topic`; 0 means it is not partitioned.
        ///
        /// Args:
        ///     topic: a topic name (short or fully qualified).
        fn partitions / _apartitions (&self, py, topic: &str) -> u32 {
            let (inner, t, timeout) = self.partition_call(topic)?;
            Op::new("partition metadata", timeout, async move { inner.partitions(&t).await })
        }

        /// The fully qualified topic names to produce to / consume from for `topic`: its
        /// partitions if it is partitioned, else the topic itself.
        ///
        /// Args:
        ///     topic: a topic name (short or fully qualified).
        fn topic_partitions / _atopic_partitions (&self, py, topic: &str) -> Vec<String> {
            let (inner, t, timeout) = self.partition_call(topic)?;
            Op::new("partition metadata", timeout, async move {
                Ok(match inner.partitions(&t).await? {
                    0 => vec![t.to_string()],
                    n => (0..n).map(|i| t.partition(i).to_string()).collect(),
                })
            })
        }
    }
}

impl Lookup {
    fn partition_call(&self, topic: &str) -> PyResult<(PulsarClient, TopicName, Option<Duration>)> {
        let client = self.client.get();
        let inner = client.live()?.clone();
        Ok((
            inner,
            parse_topic(topic)?,
            Some(client.operation_timeout * 2),
        ))
    }
}

#[pymethods]
impl Lookup {
    fn __reduce__(&self) -> PyResult<()> {
        Err(crate::common::pickle::refuse_pickle("Lookup", PICKLE_HINT))
    }

    fn __repr__(&self) -> String {
        "<streamwire.Lookup>".to_owned()
    }
}
