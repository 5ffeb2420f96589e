//! `streamwire.pravega.Writer`, both faces: blocking, future-returning and bulk writes, and
//! their awaitable forms (`_awrite`, `_awrite_many`, `_aflush`, `_aclose`; the lane that
//! keeps awaitable writes in call order is `common::lane`, and `impl Sink for EventWriter`
//! here says how a Pravega writer takes a payload).
//!
//! An awaited `write_many` is followed by the writer's hurry command once its events are
//! handed over (as the blocking `write_many` does): its caller waits for all of them, so its
//! last partial block must not wait for an acknowledgement to free a block slot. A single
//! awaited `write` sends no hurry: single writes made while blocks are in flight are still
//! gathered into the next block.
//!
//! Events are framed on the calling thread straight from the Python objects (one copy into
//! the buffer that later becomes append blocks); `write_async` futures are completed by the
//! engine directly (no task per event); `write_many` crosses the interpreter once per call.
//! The two faces' write shells differ only in how they wait: every check, the framing and
//! the budget's rules are the shared functions below.

use std::future::Future;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use streamwire_core::budget::{MemoryBudget, Reservation};
use streamwire_core::completion::{Completion, Done};
use streamwire_core::error::{Error, Result};
use streamwire_core::runtime;
use streamwire_pravega::writer::{one_event, BatchBuilder, EventBatch, EventWriter, Rejected};

use super::framing::{frame_events, Handover, Pieces, PIECE_BYTES};
use super::inline::wait_here;
use crate::common::aio;
use crate::common::blocking::{timeout_arg, wait};
use crate::common::columns::payload_of;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::common::lane::{Lane, Sink};
use crate::common::reserve;
use crate::common::write_future::FutureState;

const PICKLE_HINT: &str = "create the writer inside the worker process";

/// What one pending `write_async` event holds besides its bytes (its queue entry, future and
/// completion): counted against the memory budget so the budget bounds the process's memory,
/// not only the payloads (measured: ~400 bytes per pending 100-byte event).
const PER_EVENT_OVERHEAD: u64 = 320;

pub(crate) fn key_arg(key: Option<&Bound<'_, PyAny>>) -> PyResult<Option<String>> {
    match key {
        None => Ok(None),
        Some(k) if k.is_none() => Ok(None),
        Some(k) => match k.cast::<PyString>() {
            Ok(s) => Ok(Some(s.to_cow()?.into_owned())),
            Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "a routing key is a str, not {}",
                k.get_type().name()?
            ))),
        },
    }
}

crate::write_future! {
    /// The outcome of `write_async` (or `write_many_async`): `result()` waits until the segment
    /// store holds the event(s). Made by those calls, not constructed directly.
    PravegaWriteFuture,
    "streamwire.pravega.WriteFuture",
    "write",
    "Wait until the event is written (returns None) or raise its error.",
    "The error the write failed with, or None once it succeeded (waits like `result`)."
}

/// The lane's view of a Pravega writer: a payload is one call's framed events; a bulk call
/// is followed by the hurry command.
impl Sink for EventWriter {
    type Payload = EventBatch;
    type Rejected = Rejected;
    const NAME: &'static str = "Pravega writer";

    fn memory(&self) -> &MemoryBudget {
        self.budget()
    }

    fn try_hand_over(
        &self,
        batch: EventBatch,
        done: Done,
        reservation: Reservation,
    ) -> Result<Option<Rejected>> {
        self.try_write(batch, done, Some(reservation))
    }

    fn hand_over(&self, rejected: Rejected) -> impl Future<Output = Result<()>> + Send {
        self.submit(rejected)
    }

    fn try_hurry(&self) -> bool {
        EventWriter::try_hurry(self)
    }

    fn hurry(&self) -> impl Future<Output = ()> + Send {
        EventWriter::hurry(self)
    }
}

/// Writes events to one stream. Thread-safe. Made by `streamwire.pravega.Client.create_writer`
/// (and wrapped by `streamwire.aio.pravega.Writer`).
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaWriter {
    inner: EventWriter,
    pid: u32,
    block_if_queue_full: bool,
    lane: Lane<EventWriter>,
}

crate::live_handle!(PravegaWriter, "Pravega Writer", PICKLE_HINT);

impl PravegaWriter {
    pub fn new(inner: EventWriter, pid: u32, block_if_queue_full: bool) -> Self {
        PravegaWriter {
            inner,
            pid,
            block_if_queue_full,
            lane: Lane::default(),
        }
    }

    fn live(&self, py: Python<'_>) -> PyResult<EventWriter> {
        // No system call per event (`write_async` checks on every call).
        aio::check_same_process(py, self.pid, "Pravega writer")?;
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("Pravega writer")));
        }
        Ok(self.inner.clone())
    }

    /// Reserve budget now if there is room; `None` when the caller must wait for it.
    fn try_reserve(&self, bytes: u64) -> PyResult<Option<Reservation>> {
        reserve::try_reserve(self.inner.budget(), bytes, self.block_if_queue_full).py_err()
    }

    /// The blocking face's reservation: waits (interpreter released) for room.
    fn reserve(&self, py: Python<'_>, bytes: u64) -> PyResult<Reservation> {
        if let Some(r) = self.try_reserve(bytes)? {
            return Ok(r);
        }
        let budget = self.inner.budget().clone();
        wait(py, "waiting for writer memory", None, async move {
            Ok(budget.reserve(bytes).await)
        })
    }

    /// An awaitable write of `batch`: handed over now, or queued in the lane.
    fn start<'py>(
        &self,
        py: Python<'py>,
        batch: EventBatch,
        count: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = batch.data.len() as u64;
        let block = self.block_if_queue_full;
        self.lane.start(py, &self.inner, batch, bytes, block, count)
    }
}

#[pymethods]
impl PravegaWriter {
    /// This writer's metrics; see README "Metrics" for the keys.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let w = self.live(py)?;
        crate::common::metrics::snapshot_dict(py, &w.metrics().snapshot())
    }

    /// The stream's scope.
    #[getter]
    fn scope(&self) -> &str {
        &self.inner.stream().scope
    }

    /// The stream's name (without the scope).
    #[getter]
    fn stream(&self) -> &str {
        &self.inner.stream().stream
    }

    /// Events handed over and not yet written or failed.
    #[getter]
    fn pending(&self) -> usize {
        self.inner.pending()
    }

    fn __len__(&self) -> usize {
        self.inner.pending()
    }

    /// Write one event and wait until the segment store holds it.
    ///
    /// Args:
    ///     event: the payload (bytes-like, or str sent as UTF-8).
    ///     routing_key: events with the same key go to the same segment, in order.
    ///         Default None: any segment.
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError`.
    ///         Default None.
    #[pyo3(signature = (event, routing_key=None, *, timeout=None))]
    fn write(
        &self,
        py: Python<'_>,
        event: &Bound<'_, PyAny>,
        routing_key: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
    ) -> PyResult<()> {
        let w = self.live(py)?;
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let batch = frame_one(event, routing_key)?;
        let reservation = self.reserve(py, batch.data.len() as u64)?;
        wait_here(py, "write", timeout, async move {
            w.write(batch, Some(reservation)).await
        })
    }

    /// Hand one event over and return a future of its write.
    ///
    /// Args:
    ///     event: the payload (bytes-like, or str sent as UTF-8).
    ///     routing_key: as for `write`. Default None.
    #[pyo3(signature = (event, routing_key=None))]
    fn write_async(
        &self,
        py: Python<'_>,
        event: &Bound<'_, PyAny>,
        routing_key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PravegaWriteFuture> {
        let w = self.live(py)?;
        let batch = frame_one(event, routing_key)?;
        let reservation = self.reserve(py, batch.data.len() as u64 + PER_EVENT_OVERHEAD)?;
        let state = Arc::<FutureState>::default();
        let done = Done::Notify(state.clone());
        if let Some(rejected) = w.try_write(batch, done, Some(reservation)).py_err()? {
            wait(
                py,
                "write_async",
                None,
                async move { w.submit(rejected).await },
            )?;
        }
        Ok(PravegaWriteFuture { state })
    }

    /// Write many events (a list of bytes/str or a pyarrow binary/string array) and wait
    /// until all are written. `routing_keys` is one str for all, or one str/None per event.
    /// Returns the count.
    ///
    /// Args:
    ///     events: the payloads.
    ///     routing_keys: one str for every event, or one str/None per event. Default None.
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError`.
    ///         Default None.
    #[pyo3(signature = (events, routing_keys=None, *, timeout=None))]
    fn write_many(
        &self,
        py: Python<'_>,
        events: &Bound<'_, PyAny>,
        routing_keys: Option<&Bound<'_, PyAny>>,
        timeout: Option<f64>,
    ) -> PyResult<usize> {
        let w = self.live(py)?;
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let mut h = Handover::new(w, Box::new(|bytes| self.reserve(py, bytes)));
        frame_events(events, routing_keys, PIECE_BYTES, &mut h)?;
        let n = h.events();
        let (later, w, rx) = h.finish();
        let Some(rx) = rx else {
            return Ok(0);
        };
        wait_here(py, "write_many", timeout, async move {
            for r in later {
                w.submit(r).await?;
            }
            // This call waits for its last events: no holding them back for later ones.
            w.hurry().await;
            rx.await
                .unwrap_or_else(|_| Err(Error::closed("Pravega writer")))
        })?;
        Ok(n)
    }

    /// Like `write_many`, without waiting for the segment store: returns one future for the
    /// whole call (`result()` returns None once every event is written, or raises the first
    /// failure). Successive calls pipeline; only handing over waits, when the memory budget
    /// is full (or raises `ProducerQueueFullError` with `block_if_queue_full=False`).
    ///
    /// Args:
    ///     events: the payloads, as for `write_many`.
    ///     routing_keys: as for `write_many`. Default None.
    #[pyo3(signature = (events, routing_keys=None))]
    fn write_many_async(
        &self,
        py: Python<'_>,
        events: &Bound<'_, PyAny>,
        routing_keys: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PravegaWriteFuture> {
        let w = self.live(py)?;
        let state = Arc::<FutureState>::default();
        let mut h =
            Handover::new(w, Box::new(|bytes| self.reserve(py, bytes))).settling(state.clone());
        frame_events(events, routing_keys, PIECE_BYTES, &mut h)?;
        if h.events() == 0 {
            state.complete(Ok(()));
            return Ok(PravegaWriteFuture { state });
        }
        let (later, w, _) = h.finish();
        if !later.is_empty() {
            wait_here(py, "write_many_async", None, async move {
                for r in later {
                    w.submit(r).await?;
                }
                Ok(())
            })?;
        }
        Ok(PravegaWriteFuture { state })
    }

    /// Whether the writer is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.pravega.Writer stream={}/{} pending={}>",
            self.inner.stream().scope,
            self.inner.stream().stream,
            self.inner.pending()
        )
    }
}

/// The awaitable writes: resolved through the asyncio bridge, never blocking the loop (a full
/// budget queues the write in the lane instead of waiting for room).
#[pymethods]
impl PravegaWriter {
    /// `write` as an awaitable: resolves to None once the segment store holds the event.
    #[pyo3(signature = (event, routing_key=None))]
    fn _awrite<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
        routing_key: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let batch = frame_one(event, routing_key)?;
        self.start(py, batch, None)
    }

    /// `write_many` as an awaitable: resolves to the count once all are written.
    #[pyo3(signature = (events, routing_keys=None))]
    fn _awrite_many<'py>(
        &self,
        py: Python<'py>,
        events: &Bound<'py, PyAny>,
        routing_keys: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let batch = event_batch(events, routing_keys)?;
        let n = batch.count;
        self.start(py, batch, Some(n))
    }
}

crate::two_faces! {
    impl PravegaWriter {
        /// Wait until every event handed over is written (awaitable writes still queued for
        /// room first); raises the first failure since the last flush.
        ///
        /// Args:
        ///     timeout: seconds to wait at most (None: no limit); then
        ///         `OperationTimeoutError`. Default None.
        #[pyo3(signature = (timeout=None))]
        fn flush / _aflush (&self, py, timeout: Option<f64>) -> () as none {
            let w = self.live(py)?;
            let timeout = timeout_arg("timeout", timeout).py_err()?;
            let turn = self.lane.turn(&w).py_err()?;
            Op::new("flush", timeout, async move {
                turn.await;
                w.flush().await
            })
        }

        /// Write what is pending, then close the writer's connections. Idempotent.
        fn close / _aclose (&self, py) -> () as none {
            // Another process's writer, or a closed one: nothing to do (no runtime needed).
            let open = self.pid == runtime::current_pid() && !self.inner.is_closed();
            let task = if open {
                let w = self.inner.clone();
                let turn = self.lane.turn(&w).py_err()?;
                // A task of its own: a cancelled await (or Ctrl-C) leaves the close going.
                Some(runtime::handle().py_err()?.spawn(async move {
                    turn.await;
                    w.close().await
                }))
            } else {
                None
            };
            Op::new("close", None, async move {
                match task {
                    Some(t) => t.await.unwrap_or_else(|_| Err(Error::closed("Pravega writer"))),
                    None => Ok(()),
                }
            })
        }
    }
}

/// One event framed from `write`'s arguments (bytes taken without a copy to a buffer); the
/// transactions' `write` frames the same way.
pub(crate) fn frame_one(
    event: &Bound<'_, PyAny>,
    routing_key: Option<&Bound<'_, PyAny>>,
) -> PyResult<EventBatch> {
    let key = key_arg(routing_key)?;
    match event.cast::<PyBytes>() {
        Ok(b) => one_event(b.as_bytes(), key.as_deref()),
        Err(_) => one_event(&payload_of(event)?, key.as_deref()),
    }
    .py_err()
}

/// The framed events of `write_many`'s arguments as one batch (the awaitable `write_many`,
/// and both faces of a transaction's `write_many`).
pub(crate) fn event_batch(
    events: &Bound<'_, PyAny>,
    routing_keys: Option<&Bound<'_, PyAny>>,
) -> PyResult<EventBatch> {
    let mut one = None;
    frame_events(events, routing_keys, usize::MAX, &mut OneBatch(&mut one))?;
    Ok(one.unwrap_or_else(|| BatchBuilder::default().finish()))
}

struct OneBatch<'a>(&'a mut Option<EventBatch>);

impl Pieces for OneBatch<'_> {
    fn begin(&mut self, _events: usize, _bytes: usize) -> PyResult<()> {
        Ok(())
    }
    fn piece(&mut self, batch: EventBatch) -> PyResult<()> {
        *self.0 = Some(batch);
        Ok(())
    }
}
