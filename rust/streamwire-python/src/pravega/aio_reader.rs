//! The awaitable Pravega reader (`streamwire.aio.pravega.Reader`'s native half), and why a
//! cancelled read loses nothing.
//!
//! The engine's `StreamReader::read` is not cancel-safe (a chunk fetched but not yet parsed
//! would be lost if the call were dropped), so an engine read is never aborted: a read whose
//! coroutine is cancelled runs to its end. Its events go into this reader's `held` queue,
//! never into a future's value; the future only says "look" (None), and the woken coroutine
//! takes what it asked for from `held` (`_take`) on the loop's thread with no await in
//! between, so events of a cancelled read stay first in line. Reads are serialised by the
//! reader's lock and a read that finds events held returns at once. `position()` puts held
//! events back (their segment's offset is the first held event's), so a persisted position
//! resumes with no gap. `close` ends a pending read (its events are dropped with the reader).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use tokio::sync::watch;

use streamwire_core::error::{Error, Result};
use streamwire_pravega::reader::{ReadEvent, StreamReader};

use crate::common::aio::{self, Value};
use crate::common::arrow::column_list;
use crate::common::blocking::timeout_arg;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::pickle::refuse_pickle;
use crate::common::untracked::untracked_list;
use crate::pravega::client::{reader_plan, PravegaNativeClient};
use crate::pravega::reader::{events_to_batch, max_arg, PravegaEventObj, ARROW_COLUMNS};

type Shared = Arc<tokio::sync::Mutex<Option<StreamReader>>>;
type Held = Arc<Mutex<VecDeque<ReadEvent>>>;

/// Reads one stream from coroutines. Made by `streamwire.aio.pravega.Client`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaAioReader {
    inner: Shared,
    held: Held,
    pid: u32,
    stream: Arc<str>,
    at_end: Arc<AtomicBool>,
    closing: watch::Sender<bool>,
}

impl PravegaAioReader {
    fn new(r: StreamReader, pid: u32) -> Self {
        let s = r.stream();
        let stream: Arc<str> = Arc::from(format!("{}/{}", s.scope, s.stream));
        let at_end = Arc::new(AtomicBool::new(r.at_end()));
        PravegaAioReader {
            inner: Arc::new(tokio::sync::Mutex::new(Some(r))),
            held: Held::default(),
            pid,
            stream,
            at_end,
            closing: watch::channel(false).0,
        }
    }

    fn live(&self, py: Python<'_>) -> PyResult<()> {
        aio::check_same_process(py, self.pid, "Pravega reader")?;
        if *self.closing.borrow() {
            return Err(to_py(Error::closed("Pravega reader")));
        }
        Ok(())
    }

    fn has_held(&self) -> bool {
        !self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }
}

/// One engine read into `held` (unless events are already held), or `Closed` on close.
async fn read_into_held(
    shared: Shared,
    held: Held,
    at_end: Arc<AtomicBool>,
    mut closing: watch::Receiver<bool>,
    max: usize,
    timeout: Duration,
) -> Result<()> {
    let read = async {
        let mut guard = shared.lock().await;
        if !held.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            return Ok(());
        }
        let r = guard
            .as_mut()
            .ok_or_else(|| Error::closed("Pravega reader"))?;
        let mut out = Vec::with_capacity(max.min(65_536));
        let res = r.read(max, timeout, &mut out).await;
        at_end.store(r.at_end(), Ordering::Release);
        let got = !out.is_empty();
        // No await after this point: the events reach `held` whatever happens.
        held.lock().unwrap_or_else(|p| p.into_inner()).extend(out);
        if got {
            Ok(())
        } else {
            res
        }
    };
    tokio::select! {
        r = read => r,
        _ = closing.wait_for(|c| *c) => Err(Error::closed("Pravega reader")),
    }
}

#[pymethods]
impl PravegaAioReader {
    /// `scope/stream`.
    #[getter]
    fn stream(&self) -> &str {
        &self.stream
    }

    /// True once a sealed stream has been read to its end (and nothing is held).
    #[getter]
    fn at_end(&self) -> bool {
        self.at_end.load(Ordering::Acquire) && !self.has_held()
    }

    /// Whether the reader is closed.
    #[getter]
    fn closed(&self) -> bool {
        *self.closing.borrow()
    }

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
        let max = max_arg(max_events)?;
        column_list(&ARROW_COLUMNS, columns.as_deref())?;
        let t = timeout_arg("timeout", timeout)
            .py_err()?
            .unwrap_or(Duration::from_secs(365 * 24 * 3600));
        if self.has_held() {
            return aio::ready(py, py.None().into_bound(py));
        }
        let work = read_into_held(
            self.inner.clone(),
            self.held.clone(),
            self.at_end.clone(),
            self.closing.subscribe(),
            max,
            t,
        );
        // Not aborted on cancel (see the top of this file): the read finishes into `held`.
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
        let max = if kind == 0 { 1 } else { max_arg(max_events)? };
        let names = column_list(&ARROW_COLUMNS, columns.as_deref())?;
        let got: Vec<ReadEvent> = {
            let mut q = self.held.lock().unwrap_or_else(|p| p.into_inner());
            let n = max.min(q.len());
            q.drain(..n).collect()
        };
        let wrap = |e: ReadEvent| PravegaEventObj {
            e,
            stream: self.stream.clone(),
        };
        Ok(match kind {
            0 => match got.into_iter().next() {
                Some(e) => Py::new(py, wrap(e))?.into_any(),
                None => py.None(),
            },
            1 => untracked_list(py, got.into_iter().map(wrap))?
                .into_any()
                .unbind(),
            _ => events_to_batch(py, &self.stream, &got, &names)?.unbind(),
        })
    }

    /// The position after the last event taken, as a stream cut's text (an awaitable; it
    /// waits for a read in progress to end).
    fn _aposition<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let (shared, held) = (self.inner.clone(), self.held.clone());
        let work = async move {
            let guard = shared.lock().await;
            let r = guard
                .as_ref()
                .ok_or_else(|| Error::closed("Pravega reader"))?;
            let mut cut = r.position();
            for e in held.lock().unwrap_or_else(|p| p.into_inner()).iter().rev() {
                // Walking back from the newest, the oldest held event of a segment wins.
                cut.positions.insert(e.segment, e.offset);
            }
            Ok(cut.to_text())
        };
        let (fut, _) = aio::spawn(py, "position", None, work, |text: String| {
            Value::Build(Box::new(move |py| {
                Ok(pyo3::types::PyString::new(py, &text).into_any().unbind())
            }))
        })?;
        Ok(fut)
    }

    /// Close the reader: a pending read ends with `AlreadyClosedError`. Idempotent.
    fn _aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.closing.send_replace(true);
        self.held.lock().unwrap_or_else(|p| p.into_inner()).clear();
        let shared = self.inner.clone();
        let work = async move {
            shared.lock().await.take();
            Ok(())
        };
        let (fut, _) = aio::spawn(py, "close", None, work, |()| Value::None)?;
        Ok(fut)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "Pravega Reader",
            "persist reader.position() and create a reader with start=position inside the \
             worker",
        ))
    }

    fn __repr__(&self) -> String {
        format!("<streamwire.aio.pravega.Reader stream={:?}>", &*self.stream)
    }
}

#[pymethods]
impl PravegaNativeClient {
    /// `create_reader` as an awaitable: the same options, checked the same way.
    #[pyo3(signature = (scope, stream, start="head", *, read_ahead=16, read_length=1_048_576))]
    fn _acreate_reader<'py>(
        &self,
        py: Python<'py>,
        scope: &str,
        stream: &str,
        start: &str,
        read_ahead: i64,
        read_length: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let st = self.stream(scope, stream)?;
        let (start, config) = reader_plan(start, read_ahead, read_length)?;
        let c = self.live()?;
        let pid = self.pid;
        let open = async move {
            let r = StreamReader::create(&c, st, start, config).await?;
            Ok((r, pid))
        };
        let (fut, _) = aio::spawn(py, "create_reader", Some(self.timeout), open, |(r, pid)| {
            Value::Build(Box::new(move |py| {
                Ok(Py::new(py, PravegaAioReader::new(r, pid))?.into_any())
            }))
        })?;
        Ok(fut)
    }
}
