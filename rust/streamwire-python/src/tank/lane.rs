//! The awaitable sends' in-order lane (the asyncio face of `TankProducer`).
//!
//! An awaited send checks its arguments at the call (the same helpers as the blocking `send`)
//! and returns an `asyncio.Future` resolved through the bridge in `common::aio` when the
//! broker acknowledges it. The message is handed to the engine at once when the client's
//! memory budget and the producer's queue have room; otherwise it goes to the producer's
//! `Lane`: one engine task that waits for budget and queue room strictly in call order, and
//! every later send queues behind it while it is busy. So sends gathered from many coroutines
//! keep their call order, and the loop never blocks on a full budget. `flush` and `close`
//! (either face) first wait for their `turn`: everything sent before them handed over.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, Result};
use streamwire_core::runtime;
use streamwire_tank::producer::{Completion, Done, Dones, Group, Outgoing, Prepared, Producer};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::oneshot;

use crate::common::aio::{self, Target, Value};
use crate::common::errors::to_py;

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
                // Settled on the engine thread: a flush that returns finds the call done.
                let group = Group::notifying(n, self.slot.clone());
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
    /// A `flush` or `close` waiting until everything before it is handed over.
    Turn(oneshot::Sender<()>),
}

/// The in-order queue of sends waiting for budget or queue room (created on first use).
#[derive(Default)]
pub(crate) struct Lane {
    busy: Arc<AtomicUsize>,
    tx: Mutex<Option<UnboundedSender<Waiting>>>,
}

impl Lane {
    fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire) > 0
    }

    /// What a `flush` or `close` waits for first: None when nothing waits in the lane, else
    /// a receiver told once everything queued before it is handed over.
    pub(crate) fn turn(&self, p: &Producer) -> Result<Option<oneshot::Receiver<()>>> {
        if !self.is_busy() {
            return Ok(None);
        }
        let (tx, rx) = oneshot::channel();
        self.push(p, Waiting::Turn(tx))?;
        Ok(Some(rx))
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
                Waiting::Submit(_, slot) => slot.finish(Err(Error::closed("TANK producer"))),
                // Dropped: the waiter goes on at once (and finds the producer closed).
                Waiting::Turn(_) => {}
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
        Waiting::Turn(tx) => {
            let _ = tx.send(());
        }
    }
}

impl Lane {
    /// Hand `msgs` to `p` now when nothing waits before them and `reservation` holds their
    /// budget (the engine's queue permitting); else queue them here. Returns the future of
    /// their acknowledgement (None, or the count `count` of a `send_many`).
    pub(crate) fn start<'py>(
        &self,
        py: Python<'py>,
        p: &Producer,
        msgs: Vec<Outgoing>,
        bytes: u64,
        reservation: Option<Reservation>,
        count: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (fut, target) = aio::new_future(py)?;
        let mut job = Job {
            msgs,
            bytes,
            reservation,
            slot: Slot::new(target, count),
        };
        if !self.is_busy() && job.reservation.is_some() {
            let dones = job.dones();
            let submitted = p
                .prepare(job.msgs, dones, job.reservation.take())
                .and_then(|prepared| p.try_submit(prepared));
            return match submitted {
                Ok(None) => Ok(fut),
                Ok(Some(prepared)) => {
                    // The engine's queue is full: wait for room in the lane, in order.
                    self.push(p, Waiting::Submit(prepared, job.slot))
                        .map_err(to_py)?;
                    Ok(fut)
                }
                Err(e) => {
                    // Raised at the call: the future is never resolved nor returned.
                    job.slot
                        .target
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .take();
                    Err(to_py(e))
                }
            };
        }
        self.push(p, Waiting::Send(job)).map_err(to_py)?;
        Ok(fut)
    }
}
