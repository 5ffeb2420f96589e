//! `streamwire.pravega.Client`'s native half: the controller calls and the factories of
//! writers and readers.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::{Error, ErrorKind};
use streamwire_core::runtime;
use streamwire_core::tls::{TlsConnector, TlsOptions};
use streamwire_pravega::byte_stream::ByteStream;
use streamwire_pravega::client::{ClientConfig, PravegaClient};
use streamwire_pravega::controller::ScopedStream;
use streamwire_pravega::group::ReaderGroup;
use streamwire_pravega::reader::{
    head_cut, segments_between, tail_cut, ReaderConfig, Start, StreamCut, StreamReader,
};
use streamwire_pravega::security::{ControllerUri, Credentials};
use streamwire_pravega::txn::{random_writer_id, TransactionalWriter, TxnConfig};
use streamwire_pravega::writer::{EventWriter, WriterConfig};

use crate::common::blocking::{count_arg, positive_secs, timeout_arg, wait};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::pravega::byte_stream::PravegaByteStream;
use crate::pravega::group::PravegaReaderGroup;
use crate::pravega::reader::PravegaReader;
use crate::pravega::txn::{
    handle as txn_handle, txn_id_arg, PravegaTransactionHandle, PravegaTransactionalWriter,
};
use crate::pravega::writer::PravegaWriter;

const PICKLE_HINT: &str = "pass the controller URI instead and create the client inside the \
    worker";

/// A connection to a Pravega controller (and the segment stores it names). Thread-safe.
#[pyclass(frozen, name = "PravegaClient", module = "streamwire._native")]
pub struct PravegaNativeClient {
    pub(crate) inner: PravegaClient,
    pub(crate) pid: u32,
    closed: AtomicBool,
    pub(crate) budget: MemoryBudget,
    pub(crate) timeout: Duration,
}

crate::live_handle!(
    PravegaNativeClient,
    "Pravega Client",
    PICKLE_HINT,
    close_now
);

/// One open segment for Python: `(segment_id, number, epoch, low, high)`.
type SegmentRow = (i64, i32, i32, f64, f64);

/// The credentials the keyword arguments describe: a username and password (`Basic`), or a
/// method and its token, or none.
fn credentials_arg(
    username: Option<String>,
    password: Option<String>,
    auth_method: Option<String>,
    auth_token: Option<String>,
) -> PyResult<Option<Credentials>> {
    let basic = username.is_some() || password.is_some();
    let custom = auth_method.is_some() || auth_token.is_some();
    if basic && custom {
        return Err(to_py(Error::invalid(
            "pass either username and password, or auth_method and auth_token, not both",
        )));
    }
    match (username, password, auth_method, auth_token) {
        (Some(u), Some(p), None, None) => Credentials::basic(&u, &p).map(Some).py_err(),
        (None, None, Some(m), Some(t)) => Credentials::custom(&m, &t).map(Some).py_err(),
        (None, None, None, None) => Ok(None),
        (Some(_), None, ..) | (None, Some(_), ..) => Err(to_py(Error::invalid(
            "username and password go together (Basic credentials)",
        ))),
        _ => Err(to_py(Error::invalid(
            "auth_method and auth_token go together",
        ))),
    }
}

/// Pravega's rule for scope and stream names.
pub(crate) fn name_arg(what: &str, name: &str) -> PyResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 255
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && !name.starts_with('_');
    if !ok {
        return Err(to_py(Error::invalid(format!(
            "a Pravega {what} name is 1 to 255 characters of letters, digits, '-' and '.', \
             got {name:?}"
        ))));
    }
    Ok(())
}

impl PravegaNativeClient {
    pub(crate) fn live(&self) -> PyResult<PravegaClient> {
        runtime::check_same_process(self.pid, "Pravega client").py_err()?;
        if self.closed.load(Ordering::Acquire) {
            return Err(to_py(Error::closed("Pravega client")));
        }
        Ok(self.inner.clone())
    }

    pub(crate) fn stream(&self, scope: &str, stream: &str) -> PyResult<ScopedStream> {
        name_arg("scope", scope)?;
        name_arg("stream", stream)?;
        Ok(ScopedStream::new(scope, stream))
    }
}

#[pymethods]
impl PravegaNativeClient {
    /// The transaction `txn_id` (an int, as `Transaction.id` gives, or the UUID's text) of
    /// `stream`, begun elsewhere: commit, abort, status and ping by its id. Nothing is asked
    /// of the controller until one of those is called.
    fn transaction(
        &self,
        scope: &str,
        stream: &str,
        txn_id: &Bound<'_, PyAny>,
    ) -> PyResult<PravegaTransactionHandle> {
        let st = self.stream(scope, stream)?;
        let id = txn_id_arg(txn_id)?;
        Ok(txn_handle(&self.live()?, st, id, self.pid))
    }

    /// The client's metrics: connections, pending bytes, and the totals of every writer and
    /// reader it created (closed ones included).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        crate::common::metrics::client_dict(py, self.live()?.metrics())
    }

    #[new]
    #[pyo3(signature = (controller_uri, *, timeout=30.0, connection_timeout=10.0,
                        memory_limit=67_108_864, tls_trust_certs_file=None,
                        tls_disable_hostname_verification_DANGEROUS=false, username=None,
                        password=None, auth_method=None, auth_token=None))]
    #[allow(clippy::too_many_arguments, non_snake_case)] // Python keyword arguments
    fn new(
        py: Python<'_>,
        controller_uri: &str,
        timeout: f64,
        connection_timeout: f64,
        memory_limit: i64,
        tls_trust_certs_file: Option<PathBuf>,
        tls_disable_hostname_verification_DANGEROUS: bool,
        username: Option<String>,
        password: Option<String>,
        auth_method: Option<String>,
        auth_token: Option<String>,
    ) -> PyResult<Self> {
        let timeout = positive_secs("timeout", timeout).py_err()?;
        let mut config = ClientConfig {
            controller_timeout: timeout,
            request_timeout: timeout,
            ..ClientConfig::default()
        };
        config.dial.connect_timeout =
            positive_secs("connection_timeout", connection_timeout).py_err()?;
        let limit: u64 = count_arg("memory_limit", memory_limit).py_err()?;
        let parsed = ControllerUri::parse(controller_uri).py_err()?;
        let tls_options = TlsOptions {
            trust_certs_file: tls_trust_certs_file,
            skip_hostname_verification: tls_disable_hostname_verification_DANGEROUS,
            ..TlsOptions::default()
        };
        if !parsed.tls && tls_options != TlsOptions::default() {
            // TLS is the URI's scheme (as in the official clients): settings for it with a
            // tcp:// URI would be silently unused.
            return Err(to_py(Error::new(
                ErrorKind::Config,
                format!(
                    "TLS settings were given but the controller URI {controller_uri:?} is                      tcp://; use tls://host:port"
                ),
            )));
        }
        if parsed.tls {
            // Built now so that a bad CA bundle fails here, not on first use.
            config.tls = Some(TlsConnector::new(&tls_options).py_err()?);
        }
        config.credentials = credentials_arg(username, password, auth_method, auth_token)?;
        let uri = controller_uri.to_string();
        let inner = wait(py, "connecting to the controller", None, async move {
            PravegaClient::connect(&uri, config).await
        })?;
        let budget = MemoryBudget::new(limit);
        crate::common::metrics::sample_budget(inner.metrics(), &budget);
        Ok(PravegaNativeClient {
            inner,
            pid: runtime::current_pid(),
            closed: AtomicBool::new(false),
            budget,
            timeout,
        })
    }

    #[getter]
    fn controller_uri(&self) -> &str {
        self.inner.uri()
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.pravega.Client controller={:?}{}>",
            self.inner.uri(),
            if self.closed() { " closed" } else { "" }
        )
    }
}

crate::two_faces! {
    impl PravegaNativeClient {
        /// True when created, False when it existed.
        fn create_scope / _acreate_scope (&self, py, scope: &str) -> bool {
            name_arg("scope", scope)?;
            let (c, s) = (self.live()?, scope.to_string());
            Op::new("create_scope", None, async move {
                c.controller().create_scope(&s).await
            })
        }

        /// Whether `scope` exists.
        fn scope_exists / _ascope_exists (&self, py, scope: &str) -> bool {
            name_arg("scope", scope)?;
            let (c, s) = (self.live()?, scope.to_string());
            Op::new("scope_exists", None, async move {
                c.controller().check_scope_exists(&s).await
            })
        }

        /// Delete an empty scope; False when there was none.
        fn delete_scope / _adelete_scope (&self, py, scope: &str) -> bool {
            name_arg("scope", scope)?;
            let (c, s) = (self.live()?, scope.to_string());
            Op::new("delete_scope", None, async move {
                c.controller().delete_scope(&s).await
            })
        }

        /// Whether the stream exists.
        fn stream_exists / _astream_exists (&self, py, scope: &str, stream: &str) -> bool {
            let (st, c) = (self.stream(scope, stream)?, self.live()?);
            Op::new("stream_exists", None, async move {
                c.controller().check_stream_exists(&st).await
            })
        }

        /// The names of the scope's streams.
        fn streams / _astreams (&self, py, scope: &str) -> Vec<String> {
            name_arg("scope", scope)?;
            let (c, s) = (self.live()?, scope.to_string());
            Op::new("streams", None, async move { c.controller().list_streams(&s).await })
        }

        /// Seal the stream: no more writes.
        fn seal_stream / _aseal_stream (&self, py, scope: &str, stream: &str) -> () as none {
            let (st, c) = (self.stream(scope, stream)?, self.live()?);
            Op::new("seal_stream", None, async move {
                c.controller().seal_stream(&st).await
            })
        }

        /// Delete a sealed stream; False when there was none.
        fn delete_stream / _adelete_stream (&self, py, scope: &str, stream: &str) -> bool {
            let (st, c) = (self.stream(scope, stream)?, self.live()?);
            Op::new("delete_stream", None, async move {
                c.controller().delete_stream(&st).await
            })
        }

        /// The open segments in key order: `(segment_id, number, epoch, low, high)`.
        fn segments / _asegments (&self, py, scope: &str, stream: &str) -> Vec<SegmentRow> {
            let (st, c) = (self.stream(scope, stream)?, self.live()?);
            Op::new("segments", None, async move {
                let cur = c.controller().get_current_segments(&st).await?;
                Ok(cur
                    .segments
                    .iter()
                    .map(|s| (s.id, s.number(), s.epoch(), s.low, s.high))
                    .collect())
            })
        }

        /// Seal `sealed` (segment ids) and open segments over `new_ranges`; waits until the
        /// controller reports the scale done.
        #[pyo3(signature = (scope, stream, sealed, new_ranges, timeout=None))]
        fn scale_stream / _ascale_stream (
            &self,
            py,
            scope: &str,
            stream: &str,
            sealed: Vec<i64>,
            new_ranges: Vec<(f64, f64)>,
            timeout: Option<f64>,
        ) -> () as none {
            let st = self.stream(scope, stream)?;
            let timeout = timeout_arg("timeout", timeout)
                .py_err()?
                .unwrap_or(self.timeout);
            let c = self.live()?;
            Op::new("scale_stream", Some(timeout), async move {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis() as i64)
                    .unwrap_or(0);
                let epoch = c.controller().scale(&st, &sealed, &new_ranges, now).await?;
                let start = Instant::now();
                loop {
                    if c.controller().check_scale(&st, epoch).await? {
                        return Ok(());
                    }
                    if start.elapsed() > timeout {
                        return Err(Error::timeout("scale_stream"));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        }

        /// A writer to one stream.
        #[pyo3(signature = (scope, stream, *, block_if_queue_full=true, max_block=1_048_576,
                            window=8_388_608, send_timeout=60.0))]
        fn create_writer / _acreate_writer (
            &self,
            py,
            scope: &str,
            stream: &str,
            block_if_queue_full: bool,
            max_block: i64,
            window: i64,
            send_timeout: f64,
        ) -> PravegaWriter {
            let st = self.stream(scope, stream)?;
            let config = writer_config(max_block, window, send_timeout)?;
            let (c, budget, pid) = (self.live()?, self.budget.clone(), self.pid);
            Op::new("create_writer", Some(self.timeout), async move {
                let w = EventWriter::create(&c, st, config, budget).await?;
                Ok(PravegaWriter::new(w, pid, block_if_queue_full))
            })
        }

        /// A byte stream on `stream`, which must have exactly one segment (create it with
        /// `segments=1` and no auto-scaling). Reading starts at offset 0, writing at the
        /// tail.
        fn create_byte_stream / _acreate_byte_stream (
            &self,
            py,
            scope: &str,
            stream: &str,
        ) -> PravegaByteStream {
            let st = self.stream(scope, stream)?;
            let (c, pid, timeout) = (self.live()?, self.pid, self.timeout);
            Op::new("create_byte_stream", Some(self.timeout), async move {
                let b = ByteStream::open(&c, st).await?;
                Ok(PravegaByteStream::new(b, pid, timeout))
            })
        }

        /// A writer of transactions to one stream (each lives `lease` seconds without a
        /// ping; its appends take `create_writer`'s settings).
        #[pyo3(signature = (scope, stream, *, writer_id=None, lease=30.0,
                            block_if_queue_full=true, max_block=1_048_576, window=8_388_608,
                            send_timeout=60.0))]
        fn create_transactional_writer / _acreate_transactional_writer (
            &self,
            py,
            scope: &str,
            stream: &str,
            writer_id: Option<String>,
            lease: f64,
            block_if_queue_full: bool,
            max_block: i64,
            window: i64,
            send_timeout: f64,
        ) -> PravegaTransactionalWriter {
            let st = self.stream(scope, stream)?;
            let config = TxnConfig {
                lease: lease_arg(lease)?,
                writer: writer_config(max_block, window, send_timeout)?,
            };
            let writer_id = match writer_id {
                Some(w) if w.is_empty() => {
                    return Err(to_py(Error::invalid("writer_id must not be empty")))
                }
                Some(w) => w,
                None => random_writer_id(),
            };
            let (c, budget, pid) = (self.live()?, self.budget.clone(), self.pid);
            Op::new("create_transactional_writer", Some(self.timeout), async move {
                let w = TransactionalWriter::create(&c, st, writer_id, config, budget).await?;
                Ok(PravegaTransactionalWriter::new(w, pid, block_if_queue_full))
            })
        }

        /// A reader of one stream from `start`: "head", "tail" or a stream cut's text.
        #[pyo3(signature = (scope, stream, start="head", *, read_ahead=16,
                            read_length=1_048_576))]
        fn create_reader / _acreate_reader (
            &self,
            py,
            scope: &str,
            stream: &str,
            start: &str,
            read_ahead: i64,
            read_length: i64,
        ) -> PravegaReader {
            let st = self.stream(scope, stream)?;
            let (start, config) = reader_plan(start, read_ahead, read_length)?;
            let (c, pid) = (self.live()?, self.pid);
            Op::new("create_reader", Some(self.timeout), async move {
                let r = StreamReader::create(&c, st, start, config).await?;
                Ok(PravegaReader::new(r, pid))
            })
        }

        /// Create reader group `group` of `scope` reading `streams` (names in `scope`) from
        /// `start` ("head", "tail" or a stream cut's text of one of them; the others from
        /// their head), or open it when it exists: the state is kept where and as the
        /// official clients keep it, so their readers can join it.
        #[pyo3(signature = (scope, group, streams, start="head"))]
        fn create_reader_group / _acreate_reader_group (
            &self,
            py,
            scope: &str,
            group: &str,
            streams: Vec<String>,
            start: &str,
        ) -> PravegaReaderGroup {
            name_arg("reader group", group)?;
            if streams.is_empty() {
                return Err(to_py(Error::invalid("streams must name at least one stream")));
            }
            let mut plan = Vec::with_capacity(streams.len());
            let (first_start, _) = reader_plan(start, 1, 8)?;
            for s in &streams {
                let st = self.stream(scope, s)?;
                let start = match &first_start {
                    Start::Cut(c) if c.stream != st => Start::Head,
                    other => other.clone(),
                };
                plan.push((st, start));
            }
            if let Start::Cut(c) = &first_start {
                if !plan.iter().any(|(s, _)| *s == c.stream) {
                    return Err(to_py(Error::invalid(format!(
                        "the stream cut is of {}, which the group does not read", c.stream
                    ))));
                }
            }
            let (c, pid, t) = (self.live()?, self.pid, self.timeout);
            let (scope, group) = (scope.to_owned(), group.to_owned());
            Op::new("create_reader_group", Some(self.timeout), async move {
                let g = ReaderGroup::create(&c, &scope, &group, plan).await?;
                Ok(PravegaReaderGroup::new(g, pid, t))
            })
        }

        /// An existing reader group (`TopicNotFoundError` when there is none).
        fn open_reader_group / _aopen_reader_group (
            &self,
            py,
            scope: &str,
            group: &str,
        ) -> PravegaReaderGroup {
            name_arg("scope", scope)?;
            name_arg("reader group", group)?;
            let (c, pid, t) = (self.live()?, self.pid, self.timeout);
            let (scope, group) = (scope.to_owned(), group.to_owned());
            Op::new("open_reader_group", Some(self.timeout), async move {
                let g = ReaderGroup::open(&c, &scope, &group).await?;
                Ok(PravegaReaderGroup::new(g, pid, t))
            })
        }

        /// Delete a reader group's state: False when there was none.
        fn delete_reader_group / _adelete_reader_group (
            &self,
            py,
            scope: &str,
            group: &str,
        ) -> bool {
            name_arg("scope", scope)?;
            name_arg("reader group", group)?;
            let c = self.live()?;
            let (scope, group) = (scope.to_owned(), group.to_owned());
            Op::new("delete_reader_group", Some(self.timeout), async move {
                ReaderGroup::delete(&c, &scope, &group).await
            })
        }

        /// The stream's `"head"` or `"tail"` as a stream cut's text.
        fn stream_cut / _astream_cut (
            &self,
            py,
            scope: &str,
            stream: &str,
            which: &str,
        ) -> String {
            let st = self.stream(scope, stream)?;
            let head = match which {
                "head" | "earliest" => true,
                "tail" | "latest" => false,
                other => {
                    return Err(to_py(Error::invalid(format!(
                        "which must be 'head' or 'tail', got {other:?}"
                    ))))
                }
            };
            let c = self.live()?;
            Op::new("stream_cut", None, async move {
                let cut = if head {
                    head_cut(&c, &st).await?
                } else {
                    tail_cut(&c, &st).await?
                };
                Ok(cut.to_text())
            })
        }

        /// Each segment's byte range between two stream cuts: `(segment_id, from, to)`.
        fn segment_ranges / _asegment_ranges (
            &self,
            py,
            scope: &str,
            stream: &str,
            start: &str,
            end: &str,
        ) -> Vec<(i64, i64, i64)> {
            let st = self.stream(scope, stream)?;
            let (a, b) = (
                StreamCut::parse(start).py_err()?,
                StreamCut::parse(end).py_err()?,
            );
            if a.stream != st || b.stream != st {
                return Err(to_py(Error::invalid("both cuts must be of this stream")));
            }
            let c = self.live()?;
            Op::new("segment_ranges", None, async move {
                segments_between(&c, &st, &a, &b).await
            })
        }
    }
}

/// The checked `WriterConfig` of `create_writer`'s options.
fn writer_config(max_block: i64, window: i64, send_timeout: f64) -> PyResult<WriterConfig> {
    let config = WriterConfig {
        max_block: count_arg("max_block", max_block).py_err()?,
        window: count_arg("window", window).py_err()?,
        send_timeout: positive_secs("send_timeout", send_timeout).py_err()?,
        ..WriterConfig::default()
    };
    if config.max_block == 0 || config.window == 0 {
        return Err(to_py(Error::invalid(
            "max_block and window must be positive",
        )));
    }
    Ok(config)
}

/// A transaction's lease: whole milliseconds, at least one (the controller sets its own
/// bounds and refuses a lease outside them).
fn lease_arg(lease: f64) -> PyResult<Duration> {
    let d = positive_secs("lease", lease).py_err()?;
    if d < Duration::from_millis(1) {
        return Err(to_py(Error::new(
            ErrorKind::Config,
            format!("lease must be at least 0.001 seconds, got {lease}"),
        )));
    }
    Ok(d)
}

/// The checked start and `ReaderConfig` of `create_reader`'s options.
pub(crate) fn reader_plan(
    start: &str,
    read_ahead: i64,
    read_length: i64,
) -> PyResult<(Start, ReaderConfig)> {
    let start = match start {
        "head" | "earliest" => Start::Head,
        "tail" | "latest" => Start::Tail,
        text => Start::Cut(StreamCut::parse(text).py_err()?),
    };
    let mut config = ReaderConfig {
        read_ahead: count_arg("read_ahead", read_ahead).py_err()?,
        ..ReaderConfig::default()
    };
    config.fetch.read_length = count_arg("read_length", read_length).py_err()?;
    if config.read_ahead == 0 || config.fetch.read_length < 8 {
        return Err(to_py(Error::invalid(
            "read_ahead must be at least 1 and read_length at least 8",
        )));
    }
    Ok((start, config))
}
