//! The awaitable Pravega writer (`streamwire.aio.pravega.Writer`'s native half).
//!
//! A write frames its events at the call (the same helpers as the blocking `write` and
//! `write_many`) and returns an `asyncio.Future` resolved through the bridge in `common::aio`
//! once the segment store holds them. Events are handed to the engine at once when the
//! client's memory budget and the writer's queue have room; otherwise they go to this
//! writer's lane, one engine task that waits for room strictly in call order (every later
//! write queues behind it while it is busy), so gathered writes keep their call order and a
//! full budget never blocks the loop.
//!
//! An awaited `write_many` is followed by the writer's hurry command once its events are
//! handed over (as the blocking `write_many` does): its caller waits for all of them, so its
//! last partial block must not wait for an acknowledgement to free a block slot. A single
//! awaited `write` sends no hurry: single writes made while blocks are in flight are still
//! gathered into the next block.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use streamwire_core::budget::Reservation;
use streamwire_core::completion::{Completion, Done, Group};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::runtime;
use streamwire_pravega::writer::{one_event, EventBatch, EventWriter, Rejected};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::common::aio::{self, Target, Value};
use crate::common::columns::payload_of;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::pickle::refuse_pickle;
use crate::pravega::client::{writer_config, PravegaNativeClient};
use crate::pravega::writer::{event_batch, key_arg};

/// The future of one write call: resolved once, by whoever comes first.
struct Slot {
    target: Mutex<Option<Target>>,
    /// What a successful call resolves to: None (`write`) or the count (`write_many`).
    count: Option<usize>,
}

impl Slot {
    fn new(target: Target, count: Option<usize>) -> Arc<Slot> {
        Arc::new(Slot {
            target: Mutex::new(Some(target)),
            count,
        })
    }

    fn forget(&self) {
        self.target.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn finish(&self, res: Result<()>) {
        let t = self.target.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = t {
            let count = self.count;
            aio::complete(
                t,
                res.map(|()| match count {
                    None => Value::None,
                    Some(n) => Value::Build(Box::new(move |py| {
                        Ok(n.into_pyobject(py)?.into_any().unbind())
                    })),
                }),
            );
        }
    }

    /// The engine completion for this call's events.
    /// A bulk call (`write_many`): its caller waits for every event, so the writer is told
    /// to hurry once they are handed over.
    fn is_bulk(&self) -> bool {
        self.count.is_some()
    }

    fn done(self: &Arc<Self>) -> Done {
        match self.count {
            None => Done::Notify(self.clone()),
            Some(n) => {
                let (group, rx) = Group::new(n);
                let slot = self.clone();
                if let Ok(h) = runtime::handle() {
                    h.spawn(async move {
                        slot.finish(
                            rx.await
                                .unwrap_or_else(|_| Err(Error::closed("Pravega writer"))),
                        );
                    });
                }
                Done::Group(group)
            }
        }
    }
}

impl Completion for Slot {
    fn complete(&self, result: Result<()>) {
        self.finish(result);
    }
}

/// Work waiting its turn behind earlier writes.
enum Waiting {
    /// Events still waiting for budget.
    Write {
        batch: EventBatch,
        bytes: u64,
        slot: Arc<Slot>,
    },
    /// Events the engine's full queue gave back.
    Submit(Rejected, Arc<Slot>),
    /// `flush` or `close`, started once everything before it is handed over.
    Then { close: bool, slot: Arc<Slot> },
}

impl Waiting {
    fn slot(&self) -> &Arc<Slot> {
        match self {
            Waiting::Write { slot, .. } | Waiting::Submit(_, slot) | Waiting::Then { slot, .. } => {
                slot
            }
        }
    }
}

/// The in-order queue of writes waiting for room (created on first use).
#[derive(Default)]
struct Lane {
    busy: Arc<AtomicUsize>,
    tx: Mutex<Option<UnboundedSender<Waiting>>>,
}

impl Lane {
    fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire) > 0
    }

    fn push(&self, w: &EventWriter, item: Waiting) -> Result<()> {
        let mut tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if tx.is_none() {
            let (t, mut rx) = unbounded_channel::<Waiting>();
            let busy = Arc::clone(&self.busy);
            let w = w.clone();
            runtime::handle()?.spawn(async move {
                while let Some(item) = rx.recv().await {
                    run_waiting(&w, item).await;
                    // Only after the write is handed over: a write made now comes after it.
                    busy.fetch_sub(1, Ordering::AcqRel);
                }
            });
            *tx = Some(t);
        }
        self.busy.fetch_add(1, Ordering::AcqRel);
        let failed = match tx.as_ref() {
            Some(t) => t.send(item).err().map(|e| e.0),
            None => Some(item),
        };
        if let Some(item) = failed {
            self.busy.fetch_sub(1, Ordering::AcqRel);
            item.slot().finish(Err(Error::closed("Pravega writer")));
        }
        Ok(())
    }
}

/// Tell the writer to send what it holds (after a bulk call's events are handed over);
/// from a task when its command queue is full, still behind those events.
fn hurry_soon(w: &EventWriter) {
    if !w.try_hurry() {
        let w = w.clone();
        if let Ok(h) = runtime::handle() {
            h.spawn(async move { w.hurry().await });
        }
    }
}

async fn run_waiting(w: &EventWriter, item: Waiting) {
    match item {
        Waiting::Write { batch, bytes, slot } => {
            let reservation = w.budget().reserve(bytes).await;
            let res = match w.try_write(batch, slot.done(), Some(reservation)) {
                Ok(None) => Ok(()),
                Ok(Some(rejected)) => w.submit(rejected).await,
                Err(e) => Err(e),
            };
            match res {
                Err(e) => slot.finish(Err(e)),
                Ok(()) if slot.is_bulk() => w.hurry().await,
                Ok(()) => {}
            }
        }
        Waiting::Submit(rejected, slot) => match w.submit(rejected).await {
            Err(e) => slot.finish(Err(e)),
            Ok(()) if slot.is_bulk() => w.hurry().await,
            Ok(()) => {}
        },
        Waiting::Then { close, slot } => {
            let w = w.clone();
            if let Ok(h) = runtime::handle() {
                h.spawn(async move {
                    slot.finish(if close {
                        w.close().await
                    } else {
                        w.flush().await
                    });
                });
            }
        }
    }
}

/// Writes events to one stream from coroutines. Made by `streamwire.aio.pravega.Client`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaAioWriter {
    inner: EventWriter,
    pid: u32,
    block_if_queue_full: bool,
    lane: Lane,
}

impl PravegaAioWriter {
    fn live(&self, py: Python<'_>) -> PyResult<()> {
        aio::check_same_process(py, self.pid, "Pravega writer")?;
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("Pravega writer")));
        }
        Ok(())
    }

    /// Reserve budget now if there is room; `None` when the lane must wait for it.
    fn try_reserve(&self, bytes: u64) -> PyResult<Option<Reservation>> {
        let budget = self.inner.budget();
        if bytes > budget.limit() && budget.limit() > 0 {
            return Err(to_py(Error::new(
                ErrorKind::MessageTooBig,
                format!(
                    "{bytes} bytes are more than the client's memory_limit ({})",
                    budget.limit()
                ),
            )));
        }
        match budget.try_reserve(bytes) {
            Ok(r) => Ok(Some(r)),
            Err(full) if !self.block_if_queue_full => Err(to_py(Error::new(
                ErrorKind::QueueFull,
                format!(
                    "the client's memory budget is full ({} of {} bytes used)",
                    full.used, full.limit
                ),
            ))),
            Err(_) => Ok(None),
        }
    }

    fn start<'py>(
        &self,
        py: Python<'py>,
        batch: EventBatch,
        count: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = batch.data.len() as u64;
        let reservation = self.try_reserve(bytes)?;
        let (fut, target) = aio::new_future(py)?;
        let slot = Slot::new(target, count);
        let item = match reservation {
            Some(r) if !self.lane.is_busy() => {
                let bulk = slot.is_bulk();
                match self.inner.try_write(batch, slot.done(), Some(r)) {
                    Ok(None) => {
                        if bulk {
                            hurry_soon(&self.inner);
                        }
                        return Ok(fut);
                    }
                    Ok(Some(rejected)) => Waiting::Submit(rejected, slot),
                    Err(e) => {
                        slot.forget();
                        return Err(to_py(e));
                    }
                }
            }
            // Budget taken (behind a busy lane) or not yet: the lane reserves if needed.
            Some(r) => {
                drop(r);
                Waiting::Write { batch, bytes, slot }
            }
            None => Waiting::Write { batch, bytes, slot },
        };
        self.lane.push(&self.inner, item).map_err(to_py)?;
        Ok(fut)
    }

    fn then<'py>(&self, py: Python<'py>, close: bool) -> PyResult<Bound<'py, PyAny>> {
        let (fut, target) = aio::new_future(py)?;
        let slot = Slot::new(target, None);
        self.lane
            .push(&self.inner, Waiting::Then { close, slot })
            .map_err(to_py)?;
        Ok(fut)
    }
}

#[pymethods]
impl PravegaAioWriter {
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

    /// Whether the writer is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// `write` as an awaitable: resolves to None once the segment store holds the event.
    #[pyo3(signature = (event, routing_key=None))]
    fn _awrite<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
        routing_key: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let key = key_arg(routing_key)?;
        let batch = one_event(&payload_of(event)?, key.as_deref()).py_err()?;
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
        if n == 0 {
            return aio::ready(py, 0usize.into_pyobject(py)?.into_any());
        }
        self.start(py, batch, Some(n))
    }

    /// `flush` as an awaitable, after every write made so far is handed over.
    fn _aflush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        self.then(py, false)
    }

    /// `close` as an awaitable. Idempotent.
    fn _aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.pid != runtime::current_pid() || self.inner.is_closed() {
            return aio::ready(py, py.None().into_bound(py));
        }
        self.then(py, true)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "Pravega Writer",
            "create the writer inside the worker process",
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.aio.pravega.Writer stream={}/{} pending={}>",
            self.inner.stream().scope,
            self.inner.stream().stream,
            self.inner.pending()
        )
    }
}

#[pymethods]
impl PravegaNativeClient {
    /// `create_writer` as an awaitable: the same options, checked the same way.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (scope, stream, *, block_if_queue_full=true, max_block=1_048_576,
                        window=8_388_608, send_timeout=60.0))]
    fn _acreate_writer<'py>(
        &self,
        py: Python<'py>,
        scope: &str,
        stream: &str,
        block_if_queue_full: bool,
        max_block: i64,
        window: i64,
        send_timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let st = self.stream(scope, stream)?;
        let config = writer_config(max_block, window, send_timeout)?;
        let c = self.live()?;
        let (budget, pid) = (self.budget.clone(), self.pid);
        let open = async move {
            let w = EventWriter::create(&c, st, config, budget).await?;
            Ok((w, pid, block_if_queue_full))
        };
        let (fut, _) = aio::spawn(
            py,
            "create_writer",
            Some(self.timeout),
            open,
            |(inner, pid, block_if_queue_full)| {
                Value::Build(Box::new(move |py| {
                    let w = PravegaAioWriter {
                        inner,
                        pid,
                        block_if_queue_full,
                        lane: Lane::default(),
                    };
                    Ok(Py::new(py, w)?.into_any())
                }))
            },
        )?;
        Ok(fut)
    }
}
