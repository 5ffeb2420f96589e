//! The awaitable writes of `streamwire.pravega.Writer` (`_awrite`, `_awrite_many`): the
//! futures they resolve, and the lane that keeps them in call order.
//!
//! A write frames its events at the call (the same helpers as the blocking `write` and
//! `write_many`) and returns an `asyncio.Future` resolved through the bridge in `common::aio`
//! once the segment store holds them. Events are handed to the engine at once when the
//! client's memory budget and the writer's queue have room; otherwise they go to the
//! writer's lane, one engine task that waits for room strictly in call order (every later
//! write queues behind it while it is busy), so gathered writes keep their call order and a
//! full budget never blocks the loop. `flush` and `close` (either face) take their turn in
//! the lane first, so they come after every write made before them.
//!
//! An awaited `write_many` is followed by the writer's hurry command once its events are
//! handed over (as the blocking `write_many` does): its caller waits for all of them, so its
//! last partial block must not wait for an acknowledgement to free a block slot. A single
//! awaited `write` sends no hurry: single writes made while blocks are in flight are still
//! gathered into the next block.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use streamwire_core::budget::Reservation;
use streamwire_core::completion::{Completion, Done, Group};
use streamwire_core::error::{Error, Result};
use streamwire_core::runtime;
use streamwire_pravega::writer::{EventBatch, EventWriter, Rejected};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::oneshot;

use crate::common::aio::{self, Target, Value};
use crate::common::errors::to_py;

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

    /// A bulk call (`write_many`): its caller waits for every event, so the writer is told
    /// to hurry once they are handed over.
    fn is_bulk(&self) -> bool {
        self.count.is_some()
    }

    /// The engine completion for this call's events.
    fn done(self: &Arc<Self>) -> Done {
        match self.count {
            None => Done::Notify(self.clone()),
            Some(n) => {
                // Settled on the engine thread: a flush that returns finds the call done.
                let group = Group::notifying(n, self.clone());
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
    /// A `flush` or `close`: told once everything before it is handed over.
    Turn(oneshot::Sender<()>),
}

/// The in-order queue of writes waiting for room (created on first use).
#[derive(Default)]
pub(crate) struct Lane {
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
            match item {
                Waiting::Write { slot, .. } | Waiting::Submit(_, slot) => {
                    slot.finish(Err(Error::closed("Pravega writer")))
                }
                // Dropped: its waiter goes on at once.
                Waiting::Turn(_) => {}
            }
        }
        Ok(())
    }

    /// A future that ends once every write queued before this call is handed over (at
    /// once when none waits): what `flush` and `close` wait for first.
    pub fn turn(&self, w: &EventWriter) -> Result<impl Future<Output = ()> + Send + 'static> {
        let rx = if self.is_busy() {
            let (tx, rx) = oneshot::channel();
            self.push(w, Waiting::Turn(tx))?;
            Some(rx)
        } else {
            None
        };
        Ok(async move {
            if let Some(rx) = rx {
                let _ = rx.await;
            }
        })
    }

    /// An awaitable write of `batch` (`count`: a `write_many`'s, resolving to the count):
    /// handed over now when nothing waits before it and there is room (`reservation`
    /// taken), else queued in the lane.
    pub fn start<'py>(
        &self,
        py: Python<'py>,
        w: &EventWriter,
        batch: EventBatch,
        reservation: Option<Reservation>,
        count: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = batch.data.len() as u64;
        let (fut, target) = aio::new_future(py)?;
        let slot = Slot::new(target, count);
        let item = match reservation {
            Some(r) if !self.is_busy() => {
                let bulk = slot.is_bulk();
                match w.try_write(batch, slot.done(), Some(r)) {
                    Ok(None) => {
                        if bulk {
                            hurry_soon(w);
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
        self.push(w, item).map_err(to_py)?;
        Ok(fut)
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
    let (res, slot) = match item {
        Waiting::Write { batch, bytes, slot } => {
            let reservation = w.budget().reserve(bytes).await;
            let res = match w.try_write(batch, slot.done(), Some(reservation)) {
                Ok(None) => Ok(()),
                Ok(Some(rejected)) => w.submit(rejected).await,
                Err(e) => Err(e),
            };
            (res, slot)
        }
        Waiting::Submit(rejected, slot) => (w.submit(rejected).await, slot),
        Waiting::Turn(tx) => {
            let _ = tx.send(());
            return;
        }
    };
    match res {
        Err(e) => slot.finish(Err(e)),
        Ok(()) if slot.is_bulk() => w.hurry().await,
        Ok(()) => {}
    }
}
