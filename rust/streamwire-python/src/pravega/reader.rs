//! `streamwire.pravega.Reader` and its events: blocking reads one at a time, in lists, or as
//! an Arrow record batch, and the position as a stream cut's text.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};
use tokio::sync::Mutex;

use streamwire_core::error::Error;
use streamwire_core::metrics::EntityMetrics;
use streamwire_core::runtime;
use streamwire_pravega::reader::{ReadEvent, StreamReader};

use super::inline::wait_here;
use crate::common::arrow::{column_list, ArrowBuilder};
use crate::common::blocking::{timeout_arg, wait};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::pickle::refuse_pickle;
use crate::common::repr::str_repr;
use crate::common::untracked::{untracked_list, Acyclic};

const PICKLE_HINT: &str = "persist reader.position() and create a reader with \
    start=position inside the worker";

/// The columns of `read_arrow`, in their default order (routing keys are not stored with
/// Pravega events, so there is no key column).
pub const ARROW_COLUMNS: [&str; 4] = ["value", "stream", "segment", "offset"];

/// One event read from a stream.
#[pyclass(frozen, name = "PravegaEvent", module = "streamwire._native")]
pub struct PravegaEventObj {
    pub(crate) e: ReadEvent,
    pub(crate) stream: Arc<str>,
}

// Only Rust data inside (the stream name is a Rust `Arc<str>`).
impl Acyclic for PravegaEventObj {}

#[pymethods]
impl PravegaEventObj {
    /// The event's payload as `bytes`.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.e.data)
    }

    /// `scope/stream`.
    #[getter]
    fn stream(&self) -> &str {
        &self.stream
    }

    /// The segment id (`epoch << 32 | number`).
    #[getter]
    fn segment(&self) -> i64 {
        self.e.segment
    }

    /// The offset of the event in its segment.
    #[getter]
    fn offset(&self) -> i64 {
        self.e.offset
    }

    fn __len__(&self) -> usize {
        self.e.data.len()
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "Pravega Event",
            "pickle its value, segment and offset instead",
        ))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<streamwire.pravega.Event stream={} segment={} offset={} {} bytes>",
            str_repr(py, Some(&self.stream)),
            self.e.segment,
            self.e.offset,
            self.e.data.len()
        )
    }
}

type Shared = Arc<Mutex<Option<StreamReader>>>;

/// Reads one stream. Thread-safe (calls are serialised).
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaReader {
    inner: Shared,
    pid: u32,
    stream: Arc<str>,
    metrics: Arc<EntityMetrics>,
    /// The event vector of the last call, emptied, for the next: a new one per call of
    /// 10,000 events (480 KB) had the allocator map fresh pages each time (6% of a
    /// `read_many` profile was the kernel zeroing them). At most `TAKE_CAP` events' worth.
    spare: std::sync::Mutex<Vec<ReadEvent>>,
}

/// Events one call gathers room for up front (and the spare vector keeps at most).
const TAKE_CAP: usize = 65_536;

pub(crate) fn max_arg(max_events: i64) -> PyResult<usize> {
    if max_events < 1 {
        return Err(to_py(Error::invalid(format!(
            "max_events must be at least 1, got {max_events}"
        ))));
    }
    Ok(usize::try_from(max_events).unwrap_or(usize::MAX))
}

impl PravegaReader {
    pub fn new(r: StreamReader, pid: u32) -> Self {
        let s = r.stream();
        let stream: Arc<str> = Arc::from(format!("{}/{}", s.scope, s.stream));
        let metrics = Arc::clone(r.metrics());
        PravegaReader {
            inner: Arc::new(Mutex::new(Some(r))),
            pid,
            stream,
            metrics,
            spare: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The spare event vector (empty), or a new one.
    fn vector(&self, max: usize) -> Vec<ReadEvent> {
        let mut v = std::mem::take(&mut *self.spare.lock().unwrap_or_else(|p| p.into_inner()));
        v.clear();
        v.reserve(max.min(TAKE_CAP));
        v
    }

    /// Keep `v`'s room for the next call (its events already handed out).
    fn give_back(&self, mut v: Vec<ReadEvent>) {
        v.clear();
        if v.capacity() <= TAKE_CAP {
            *self.spare.lock().unwrap_or_else(|p| p.into_inner()) = v;
        }
    }

    fn take(
        &self,
        py: Python<'_>,
        max: usize,
        timeout: Option<f64>,
        what: &str,
    ) -> PyResult<Vec<ReadEvent>> {
        runtime::check_same_process(self.pid, "Pravega reader").py_err()?;
        let timeout = timeout_arg("timeout", timeout)
            .py_err()?
            .unwrap_or(Duration::from_secs(365 * 24 * 3600));
        let shared = &self.inner;
        let mut out = self.vector(max);
        wait_here(py, what, None, async move {
            let mut guard = shared.lock().await;
            let r = guard
                .as_mut()
                .ok_or_else(|| Error::closed("Pravega reader"))?;
            r.read(max, timeout, &mut out).await?;
            Ok(out)
        })
    }

    fn wrap(&self, e: ReadEvent) -> PravegaEventObj {
        PravegaEventObj {
            e,
            stream: self.stream.clone(),
        }
    }
}

#[pymethods]
impl PravegaReader {
    /// This reader's metrics; see README "Metrics" for the keys.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        runtime::check_same_process(self.pid, "Pravega reader").py_err()?;
        if self.closed() {
            return Err(to_py(Error::closed("Pravega reader")));
        }
        crate::common::metrics::snapshot_dict(py, &self.metrics.snapshot())
    }

    #[getter]
    fn stream(&self) -> &str {
        &self.stream
    }

    /// The next event, or None when none arrived within `timeout` seconds (None: wait).
    #[pyo3(signature = (timeout=None))]
    fn read(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<PravegaEventObj>> {
        let mut got = self.take(py, 1, timeout, "read")?;
        let e = got.pop();
        self.give_back(got);
        Ok(e.map(|e| self.wrap(e)))
    }

    /// Up to `max_events` events: waits up to `timeout` for the first, then takes what is
    /// already fetched.
    #[pyo3(signature = (max_events=1000, timeout=None))]
    fn read_many<'py>(
        &self,
        py: Python<'py>,
        max_events: i64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut got = self.take(py, max_arg(max_events)?, timeout, "read_many")?;
        // Events hold only Rust data: built untracked by the cyclic collector, which would
        // otherwise walk the 10,000 live events of a call in collection after collection
        // (13% of a read_many profile; see common::untracked).
        let list = untracked_list(py, got.drain(..).map(|e| self.wrap(e)));
        self.give_back(got);
        list
    }

    /// Like `read_many`, as a pyarrow RecordBatch (columns value, stream, segment, offset).
    #[pyo3(signature = (max_events=10_000, timeout=None, columns=None))]
    fn read_arrow<'py>(
        &self,
        py: Python<'py>,
        max_events: i64,
        timeout: Option<f64>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let names = column_list(&ARROW_COLUMNS, columns.as_deref())?;
        let got = self.take(py, max_arg(max_events)?, timeout, "read_arrow")?;
        let batch = events_to_batch(py, &self.stream, &got, &names);
        self.give_back(got);
        batch
    }

    /// The position after the last event handed out, as a stream cut's text.
    fn position(&self, py: Python<'_>) -> PyResult<String> {
        runtime::check_same_process(self.pid, "Pravega reader").py_err()?;
        let shared = self.inner.clone();
        wait(py, "position", None, async move {
            let guard = shared.lock().await;
            let r = guard
                .as_ref()
                .ok_or_else(|| Error::closed("Pravega reader"))?;
            Ok(r.position().to_text())
        })
    }

    /// True once a sealed stream has been read to its end.
    #[getter]
    fn at_end(&self, py: Python<'_>) -> PyResult<bool> {
        let shared = self.inner.clone();
        wait(py, "at_end", None, async move {
            let guard = shared.lock().await;
            Ok(guard.as_ref().is_none_or(|r| r.at_end()))
        })
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let shared = self.inner.clone();
        wait(py, "close", None, async move {
            shared.lock().await.take();
            Ok(())
        })
    }

    #[getter]
    fn closed(&self) -> bool {
        match self.inner.try_lock() {
            Ok(g) => g.is_none(),
            Err(_) => false,
        }
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle("Pravega Reader", PICKLE_HINT))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<streamwire.pravega.Reader stream={}>",
            str_repr(py, Some(&self.stream))
        )
    }
}

/// The `names` columns of `got`, in that order (shared with the awaitable `read_arrow`).
pub(crate) fn events_to_batch<'py>(
    py: Python<'py>,
    stream: &str,
    got: &[ReadEvent],
    names: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let b = ArrowBuilder::new(py, got.len())?;
    let mut arrays = Vec::with_capacity(names.len());
    for name in names {
        arrays.push(match *name {
            "value" => b.var(
                &got.iter().map(|e| Some(&e.data[..])).collect::<Vec<_>>(),
                false,
            )?,
            "stream" => b.var(
                &got.iter()
                    .map(|_| Some(stream.as_bytes()))
                    .collect::<Vec<_>>(),
                true,
            )?,
            "segment" => b.fixed(
                "int64",
                got.iter().map(|e| e.segment),
                i64::to_le_bytes,
                None,
            )?,
            "offset" => b.fixed(
                "int64",
                got.iter().map(|e| e.offset),
                i64::to_le_bytes,
                None,
            )?,
            other => unreachable!("column {other} is listed in ARROW_COLUMNS"),
        });
    }
    b.record_batch(arrays, names)
}
