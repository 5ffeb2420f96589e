//! `streamwire.pravega.Reader` and its events, both faces: reads one at a time, in lists, or
//! as an Arrow record batch (blocking, or awaited in two steps: `_await_events` then
//! `_take`), and the position as a stream cut's text. The take path is `take::Source`.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use streamwire_core::error::Error;
use streamwire_core::metrics::EntityMetrics;
use streamwire_pravega::reader::{ReadEvent, StreamReader};

use super::arrow_sink::ArrowSink;
use super::inline::wait_here;
use super::take::Source;
use crate::common::aio::{self, Value};
use crate::common::arrow::{column_list, ArrowBuilder};
use crate::common::blocking::timeout_arg;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
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

    /// `scope/stream` of the stream the event came from.
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
        Err(crate::common::pickle::refuse_pickle(
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

/// Reads one stream, or a reader group's streams. Thread-safe (calls are serialised). Made
/// by `streamwire.pravega.Client.create_reader` and `ReaderGroup.create_reader`; both
/// `streamwire.pravega.Reader` and `streamwire.aio.pravega.Reader` wrap it.
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaReader {
    src: Arc<Source>,
    pid: u32,
    /// `scope/stream` of each stream read, by the index events carry.
    streams: Vec<Arc<str>>,
    metrics: Arc<EntityMetrics>,
    /// The reader's id in its reader group, for a group's reader.
    group_reader: Option<String>,
    /// The event vector of the last call, emptied, for the next: a new one per call of
    /// 10,000 events (480 KB) had the allocator map fresh pages each time (6% of a
    /// `read_many` profile was the kernel zeroing them). At most `TAKE_CAP` events' worth.
    spare: std::sync::Mutex<Vec<ReadEvent>>,
}

crate::live_handle!(PravegaReader, "Pravega Reader", PICKLE_HINT);

/// Events one call gathers room for up front (and the spare vector keeps at most).
const TAKE_CAP: usize = 65_536;

/// What a take returns: one event (or None), a list, or a RecordBatch.
const ONE: u8 = 0;
const MANY: u8 = 1;
const ARROW: u8 = 2;

pub(crate) fn max_arg(max_events: i64) -> PyResult<usize> {
    if max_events < 1 {
        return Err(to_py(Error::invalid(format!(
            "max_events must be at least 1, got {max_events}"
        ))));
    }
    Ok(usize::try_from(max_events).unwrap_or(usize::MAX))
}

/// A read's checked arguments: the most events, the Arrow columns, the wait for the first.
fn read_args(
    kind: u8,
    max_events: i64,
    timeout: Option<f64>,
    columns: Option<&[String]>,
) -> PyResult<(usize, Vec<&str>, Duration)> {
    let max = if kind == ONE { 1 } else { max_arg(max_events)? };
    // Checked whenever given (also by `_await_events`); built only when a batch is made.
    let names = if kind == ARROW || columns.is_some() {
        column_list(&ARROW_COLUMNS, columns)?
    } else {
        Vec::new()
    };
    let t = timeout_arg("timeout", timeout)
        .py_err()?
        .unwrap_or(Duration::from_secs(365 * 24 * 3600));
    Ok((max, names, t))
}

impl PravegaReader {
    pub fn new(r: StreamReader, pid: u32) -> Self {
        let streams = r
            .streams()
            .iter()
            .map(|s| Arc::from(s.to_string()))
            .collect();
        let metrics = Arc::clone(r.metrics());
        let group_reader = r.group_reader().map(str::to_owned);
        PravegaReader {
            group_reader,
            src: Source::new(r),
            pid,
            streams,
            metrics,
            spare: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn live(&self, py: Python<'_>) -> PyResult<()> {
        aio::check_same_process(py, self.pid, "Pravega reader")?;
        if self.src.is_closing() {
            return Err(to_py(Error::closed("Pravega reader")));
        }
        Ok(())
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

    fn wrap(&self, e: ReadEvent) -> PravegaEventObj {
        PravegaEventObj {
            stream: self.streams[e.stream as usize].clone(),
            e,
        }
    }

    /// `got` as the Python value of a `kind` of take (emptied; both faces).
    fn deliver(
        &self,
        py: Python<'_>,
        kind: u8,
        got: &mut Vec<ReadEvent>,
        names: &[&str],
    ) -> PyResult<Py<PyAny>> {
        Ok(match kind {
            ONE => match got.pop() {
                Some(e) => Py::new(py, self.wrap(e))?.into_any(),
                None => py.None(),
            },
            // Events hold only Rust data: built untracked by the cyclic collector, which
            // would otherwise walk the 10,000 live events of a call in collection after
            // collection (13% of a read_many profile; see common::untracked).
            MANY => untracked_list(py, got.drain(..).map(|e| self.wrap(e)))?
                .into_any()
                .unbind(),
            _ => {
                let batch = events_to_batch(py, &self.streams, got, names)?.unbind();
                got.clear();
                batch
            }
        })
    }

    /// The blocking take: held events, or one engine read polled on this thread.
    fn take(
        &self,
        py: Python<'_>,
        kind: u8,
        max_events: i64,
        timeout: Option<f64>,
        columns: Option<Vec<String>>,
        what: &str,
    ) -> PyResult<Py<PyAny>> {
        self.live(py)?;
        let (max, names, t) = read_args(kind, max_events, timeout, columns.as_deref())?;
        let src = &self.src;
        if kind == ARROW {
            // Payloads copied once into the batch, straight from the chunks (`arrow_sink`).
            let sink = wait_here(py, what, None, async move {
                let mut sink = ArrowSink::with_capacity(max.min(TAKE_CAP));
                src.read(max, t, &mut sink).await?;
                Ok(sink)
            })?;
            return Ok(sink.batch(py, &self.streams, &names)?.unbind());
        }
        let mut out = self.vector(max);
        let mut got = wait_here(py, what, None, async move {
            src.read(max, t, &mut out).await?;
            Ok(out)
        })?;
        let value = self.deliver(py, kind, &mut got, &names);
        self.give_back(got);
        value
    }
}

#[pymethods]
impl PravegaReader {
    /// This reader's metrics; see README "Metrics" for the keys.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        self.live(py)?;
        crate::common::metrics::snapshot_dict(py, &self.metrics.snapshot())
    }

    /// `scope/stream` (the first of a reader group's streams).
    #[getter]
    fn stream(&self) -> &str {
        &self.streams[0]
    }

    /// Every stream read, `scope/stream` each (a reader group's: all of the group's).
    #[getter]
    fn streams(&self) -> Vec<String> {
        self.streams.iter().map(|s| s.to_string()).collect()
    }

    /// The reader's id in its reader group (None for a reader outside a group).
    #[getter]
    fn group_reader(&self) -> Option<&str> {
        self.group_reader.as_deref()
    }

    /// The next event, or None when none arrived within `timeout` seconds (None: wait).
    #[pyo3(signature = (timeout=None))]
    fn read(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        self.take(py, ONE, 1, timeout, None, "read")
    }

    /// Up to `max_events` events: waits up to `timeout` for the first, then takes what is
    /// already fetched.
    #[pyo3(signature = (max_events=1000, timeout=None))]
    fn read_many(
        &self,
        py: Python<'_>,
        max_events: i64,
        timeout: Option<f64>,
    ) -> PyResult<Py<PyAny>> {
        self.take(py, MANY, max_events, timeout, None, "read_many")
    }

    /// Like `read_many`, as a pyarrow RecordBatch (columns value, stream, segment, offset).
    #[pyo3(signature = (max_events=10_000, timeout=None, columns=None))]
    fn read_arrow(
        &self,
        py: Python<'_>,
        max_events: i64,
        timeout: Option<f64>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        self.take(py, ARROW, max_events, timeout, columns, "read_arrow")
    }

    /// True once a sealed stream has been read to its end (and nothing is held), or once
    /// the reader is closed.
    #[getter]
    fn at_end(&self) -> bool {
        self.src.at_end()
    }

    /// Whether the reader is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.src.is_closing()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "<streamwire.pravega.Reader stream={}>",
            str_repr(py, Some(&self.streams.join(",")))
        )
    }
}

/// The awaitable reads: `streamwire.aio.pravega.Reader` awaits `_await_events`, then takes
/// with `_take` on the loop's thread (see `take` for why in two steps).
#[pymethods]
impl PravegaReader {
    /// Wait until events are held for `_take` (or `timeout` seconds pass, or the stream
    /// ends): resolves to None. `max_events` and `columns` are checked here, at the call.
    #[pyo3(signature = (max_events, timeout=None, columns=None))]
    fn _await_events<'py>(
        &self,
        py: Python<'py>,
        max_events: i64,
        timeout: Option<f64>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let (max, _, t) = read_args(MANY, max_events, timeout, columns.as_deref())?;
        if self.src.has_held() {
            return aio::ready(py, py.None().into_bound(py));
        }
        let src = self.src.clone();
        let work = async move { src.read_held(max, t).await };
        // Not aborted on cancel (see `take`): the read finishes into `held`.
        let (fut, _) = aio::spawn(py, "read", None, work, |()| Value::None)?;
        Ok(fut)
    }

    /// Take held events now: `kind` 0 one event (or None), 1 a list, 2 a RecordBatch.
    #[pyo3(signature = (kind, max_events, columns=None))]
    fn _take(
        &self,
        py: Python<'_>,
        kind: u8,
        max_events: i64,
        columns: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        let (max, names, _) = read_args(kind, max_events, None, columns.as_deref())?;
        let mut got = self.src.take_held(max);
        self.deliver(py, kind, &mut got, &names)
    }
}

crate::two_faces! {
    impl PravegaReader {
        /// The position after the last event handed out, as a stream cut's text (it waits
        /// for a read in progress to end). `InvalidArgumentError` for a reader of a group
        /// of several streams: `stream_cuts` gives one per stream.
        fn position / _aposition (&self, py) -> String {
            self.live(py)?;
            if self.streams.len() > 1 {
                return Err(to_py(Error::invalid(format!(
                    "this reader reads {} streams: use stream_cuts() for a position per stream",
                    self.streams.len()
                ))));
            }
            let src = self.src.clone();
            Op::new("position", None, async move {
                Ok(src.positions().await?.swap_remove(0))
            })
        }

        /// The position after the last event handed out, one stream cut's text per stream
        /// read, in the order of `streams` (it waits for a read in progress to end).
        fn stream_cuts / _astream_cuts (&self, py) -> Vec<String> {
            self.live(py)?;
            let src = self.src.clone();
            Op::new("stream_cuts", None, async move { src.positions().await })
        }

        /// A reader group's reader leaves its group: its segments go back to the group at
        /// the position after the last event handed out; reads then raise
        /// `AlreadyClosedError`. False when it was offline already. `InvalidArgumentError`
        /// for a reader that is not in a group.
        fn offline / _aoffline (&self, py) -> bool {
            self.live(py)?;
            let src = self.src.clone();
            Op::new("offline", None, async move { src.offline().await })
        }

        /// Close the reader: a pending read ends with `AlreadyClosedError`. A reader group's
        /// reader goes offline first. Idempotent.
        fn close / _aclose (&self, py) -> () as none {
            self.src.stop();
            let src = self.src.clone();
            Op::new("close", None, async move { src.close().await })
        }
    }
}

/// The `names` columns of `got`, in that order (shared with the awaitable `read_arrow`).
pub(crate) fn events_to_batch<'py>(
    py: Python<'py>,
    streams: &[Arc<str>],
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
                    .map(|e| Some(streams[e.stream as usize].as_bytes()))
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
