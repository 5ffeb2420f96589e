//! The awaitable TANK producer (`streamwire.aio.tank.Producer`'s native half).
//!
//! A send checks its arguments at the call (the same helpers as the blocking `send`) and
//! returns an `asyncio.Future` resolved through the bridge in `common::aio` when the broker
//! acknowledges it. The message is handed to the engine at once when the client's memory
//! budget and the producer's queue have room; otherwise it goes to this producer's `Lane`:
//! one engine task that waits for budget and queue room strictly in call order, and every
//! later send queues behind it while it is busy. So sends gathered from many coroutines
//! keep their call order, and the loop never blocks on a full budget.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::runtime;
use streamwire_tank::producer::{Completion, Done, Dones, Group, Outgoing, Prepared, Producer};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::common::aio::{self, Target, Value};
use crate::common::errors::to_py;
use crate::common::pickle::refuse_pickle;
use crate::tank::client::{producer_config, TankNativeClient};
use crate::tank::producer::{many_outgoing, outgoing};

/// The future of one send (or one `send_many`): resolved once, by whoever comes first.
struct Slot {
    target: Mutex<Option<Target>>,
    /// What a successful send resolves to (`None`, or the count of a `send_many`).
    count: Option<usize>,
}

impl Slot {
    fn new(target: Target, count: Option<usize>) -> Arc<Slot> {
        Arc::new(Slot {
            target: Mutex::new(Some(target)),
            count,
        })
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
}

impl Completion for Slot {
    fn complete(&self, result: Result<()>) {
        self.finish(result);
    }
}

/// One send's messages and completion, with its budget reservation once it has one.
struct Job {
    msgs: Vec<Outgoing>,
    bytes: u64,
    reservation: Option<Reservation>,
    slot: Arc<Slot>,
}

impl Job {
    /// The engine completion of this job: per message for a send, one group for send_many.
    fn dones(&self) -> Dones {
        match self.slot.count {
            None => Dones::Each(vec![Done::Notify(self.slot.clone())]),
            Some(n) => {
                let (group, rx) = Group::new(n);
                let slot = self.slot.clone();
                if let Ok(h) = runtime::handle() {
                    h.spawn(async move {
                        slot.finish(
                            rx.await
                                .unwrap_or_else(|_| Err(Error::closed("TANK producer"))),
                        );
                    });
                }
                Dones::Group(group)
            }
        }
    }
}

/// Work waiting its turn behind earlier sends.
enum Waiting {
    Send(Job),
    /// A prepared send the engine's full queue refused.
    Submit(Prepared, Arc<Slot>),
    /// `flush` or `close`, started once everything before it is handed over.
    Then {
        close: bool,
        slot: Arc<Slot>,
    },
}

/// The in-order queue of sends waiting for budget or queue room (created on first use).
#[derive(Default)]
struct Lane {
    busy: Arc<AtomicUsize>,
    tx: Mutex<Option<UnboundedSender<Waiting>>>,
}

impl Lane {
    fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire) > 0
    }

    fn push(&self, p: &Producer, w: Waiting) -> Result<()> {
        let mut tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if tx.is_none() {
            let (t, mut rx) = unbounded_channel::<Waiting>();
            let busy = Arc::clone(&self.busy);
            let p = p.clone();
            runtime::handle()?.spawn(async move {
                while let Some(w) = rx.recv().await {
                    run_waiting(&p, w).await;
                    // Only after the send is handed over: a send made now comes after it.
                    busy.fetch_sub(1, Ordering::AcqRel);
                }
            });
            *tx = Some(t);
        }
        self.busy.fetch_add(1, Ordering::AcqRel);
        let failed = match tx.as_ref() {
            Some(t) => t.send(w).err().map(|e| e.0),
            None => Some(w),
        };
        if let Some(w) = failed {
            self.busy.fetch_sub(1, Ordering::AcqRel);
            match w {
                Waiting::Send(j) => j.slot.finish(Err(Error::closed("TANK producer"))),
                Waiting::Then { slot, .. } | Waiting::Submit(_, slot) => {
                    slot.finish(Err(Error::closed("TANK producer")))
                }
            }
        }
        Ok(())
    }
}

async fn run_waiting(p: &Producer, w: Waiting) {
    match w {
        Waiting::Send(mut job) => {
            let reservation = match job.reservation.take() {
                Some(r) => r,
                None => p.budget().reserve(job.bytes).await,
            };
            let dones = job.dones();
            let res = match p.prepare(job.msgs, dones, Some(reservation)) {
                Ok(prepared) => p.submit(prepared).await,
                Err(e) => Err(e),
            };
            if let Err(e) = res {
                job.slot.finish(Err(e));
            }
        }
        Waiting::Submit(prepared, slot) => {
            if let Err(e) = p.submit(prepared).await {
                slot.finish(Err(e));
            }
        }
        Waiting::Then { close, slot } => {
            let p = p.clone();
            if let Ok(h) = runtime::handle() {
                h.spawn(async move {
                    slot.finish(if close {
                        p.close().await
                    } else {
                        p.flush().await
                    });
                });
            }
        }
    }
}

/// Produces to one TANK topic from coroutines. Made by `streamwire.aio.tank.Client`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct TankAioProducer {
    inner: Producer,
    pid: u32,
    block_if_queue_full: bool,
    lane: Lane,
}

impl TankAioProducer {
    fn live(&self, py: Python<'_>) -> PyResult<()> {
        aio::check_same_process(py, self.pid, "TANK producer")?;
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("TANK producer")));
        }
        Ok(())
    }

    /// Reserve budget now if there is room; `None` when the lane must wait for it. A full
    /// budget raises with `block_if_queue_full=False`, as the blocking producer does.
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

    /// Hand `msgs` over now when nothing waits before them and there is room; else queue
    /// them in the lane.
    fn start<'py>(
        &self,
        py: Python<'py>,
        msgs: Vec<Outgoing>,
        bytes: u64,
        count: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let reservation = self.try_reserve(bytes)?;
        let (fut, target) = aio::new_future(py)?;
        let mut job = Job {
            msgs,
            bytes,
            reservation,
            slot: Slot::new(target, count),
        };
        if !self.lane.is_busy() && job.reservation.is_some() {
            let dones = job.dones();
            let prepared = self
                .inner
                .prepare(job.msgs, dones, job.reservation.take())
                .map_err(|e| {
                    job.slot
                        .target
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .take();
                    to_py(e)
                })?;
            match self.inner.try_submit(prepared) {
                Ok(None) => return Ok(fut),
                Ok(Some(prepared)) => {
                    // The engine's queue is full: wait for room in the lane, in order.
                    self.lane
                        .push(&self.inner, Waiting::Submit(prepared, job.slot))
                        .map_err(to_py)?;
                    return Ok(fut);
                }
                Err(e) => {
                    job.slot
                        .target
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .take();
                    return Err(to_py(e));
                }
            }
        }
        self.lane
            .push(&self.inner, Waiting::Send(job))
            .map_err(to_py)?;
        Ok(fut)
    }
}

#[pymethods]
impl TankAioProducer {
    /// The topic this producer writes to.
    #[getter]
    fn topic(&self) -> &str {
        self.inner.topic()
    }

    /// The topic's number of partitions.
    #[getter]
    fn partitions(&self) -> u16 {
        self.inner.partitions()
    }

    /// Messages handed over and not yet acknowledged or failed.
    #[getter]
    fn pending(&self) -> usize {
        self.inner.pending()
    }

    /// `send` as an awaitable: resolves to None once the broker acknowledged the message.
    #[pyo3(signature = (value, key=None, *, partition=None, timestamp=None))]
    fn _asend<'py>(
        &self,
        py: Python<'py>,
        value: &Bound<'py, PyAny>,
        key: Option<&Bound<'py, PyAny>>,
        partition: Option<i64>,
        timestamp: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let msg = outgoing(value, key, partition, timestamp)?;
        let bytes = msg.msg.size() as u64;
        self.start(py, vec![msg], bytes, None)
    }

    /// `send_many` as an awaitable: resolves to the count once all are acknowledged.
    #[pyo3(signature = (values, *, keys=None, timestamps=None, partition=None))]
    fn _asend_many<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'py, PyAny>,
        keys: Option<&Bound<'py, PyAny>>,
        timestamps: Option<&Bound<'py, PyAny>>,
        partition: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let (msgs, bytes) = many_outgoing(values, keys, timestamps, partition)?;
        let n = msgs.len();
        if n == 0 {
            return aio::ready(py, 0usize.into_pyobject(py)?.into_any());
        }
        self.start(py, msgs, bytes, Some(n))
    }

    /// `flush` as an awaitable, after every send made so far is handed over.
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
            "TANK Producer",
            "create the producer inside the worker process",
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.aio.tank.Producer topic={:?} partitions={} pending={}>",
            self.inner.topic(),
            self.inner.partitions(),
            self.inner.pending()
        )
    }
}

impl TankAioProducer {
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
impl TankNativeClient {
    /// `create_producer` as an awaitable: the same options, checked the same way.
    #[pyo3(signature = (topic, *, batch_max_messages=1000, batch_max_bytes=131_072,
                        batch_delay=0.001, compression=None, max_in_flight=32,
                        send_timeout=30.0, block_if_queue_full=true))]
    #[allow(clippy::too_many_arguments)]
    fn _acreate_producer<'py>(
        &self,
        py: Python<'py>,
        topic: &str,
        batch_max_messages: i64,
        batch_max_bytes: i64,
        batch_delay: f64,
        compression: Option<&str>,
        max_in_flight: i64,
        send_timeout: f64,
        block_if_queue_full: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let config = producer_config(
            topic,
            batch_max_messages,
            batch_max_bytes,
            batch_delay,
            compression,
            max_in_flight,
            send_timeout,
        )?;
        let c = self.live()?.clone();
        let (t, budget, pid) = (topic.to_string(), self.budget.clone(), self.pid);
        let open = async move {
            let p = streamwire_tank::producer::Producer::create(&c, &t, config, budget).await?;
            Ok((p, pid, block_if_queue_full))
        };
        let (fut, _) = aio::spawn(
            py,
            "create producer",
            Some(self.timeout()),
            open,
            |(inner, pid, block_if_queue_full)| {
                Value::Build(Box::new(move |py| {
                    let p = TankAioProducer {
                        inner,
                        pid,
                        block_if_queue_full,
                        lane: Lane::default(),
                    };
                    Ok(Py::new(py, p)?.into_any())
                }))
            },
        )?;
        Ok(fut)
    }
}
