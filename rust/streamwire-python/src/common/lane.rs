//! The in-order lane of awaitable writes, whatever the protocol: the asyncio face of a TANK
//! producer (`_asend`, `_asend_many`) and of a Pravega writer (`_awrite`, `_awrite_many`).
//!
//! An awaitable write checks and builds its payload at the call (the same helpers as the
//! blocking face) and returns an `asyncio.Future` resolved through the bridge in
//! `common::aio` once the broker holds it. The payload is handed to the engine at once when
//! the client's memory budget and the engine's queue have room; otherwise it goes to the
//! writer's `Lane`: one engine task that waits for budget and queue room strictly in call
//! order, and every later write queues behind it while it is busy. So writes gathered from
//! many coroutines keep their call order, and a full budget never blocks the loop. `flush`
//! and `close` (either face) first wait for their `turn`: everything written before them
//! handed over.
//!
//! What differs per protocol is only how a payload is handed over and whether a bulk call is
//! followed by a hurry command: the [`Sink`] trait. Why one lane and not one per protocol:
//! the ordering, the budget rule and the future's settlement are where the bugs were (a bulk
//! future settled after a flush returned, ea5c955); they are now fixed in one place.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use streamwire_core::budget::{MemoryBudget, Reservation};
use streamwire_core::completion::{Completion, Done, Group};
use streamwire_core::error::{Error, Result};
use streamwire_core::runtime;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::oneshot;

use crate::common::aio::{self, Target, Value};
use crate::common::errors::to_py;
use crate::common::reserve::try_reserve;

/// A protocol's writer as the lane sees it: the steps that differ per protocol.
pub(crate) trait Sink: Clone + Send + Sync + 'static {
    /// One call's checked payload (messages, framed events).
    type Payload: Send + 'static;
    /// A payload the engine's full queue gave back, to hand over when it has room.
    type Rejected: Send + 'static;
    /// Named in the `AlreadyClosedError` of a write the lane can no longer take.
    const NAME: &'static str;

    /// The client's memory budget this writer reserves from.
    fn memory(&self) -> &MemoryBudget;

    /// Hand `payload` over without waiting, `done` settling it; `Ok(Some(_))` gives it back
    /// when the engine's queue is full. An error fails the whole call.
    fn try_hand_over(
        &self,
        payload: Self::Payload,
        done: Done,
        reservation: Reservation,
    ) -> Result<Option<Self::Rejected>>;

    /// Hand a given-back payload over, waiting for room in the engine's queue.
    fn hand_over(&self, rejected: Self::Rejected) -> impl Future<Output = Result<()>> + Send;

    /// After a bulk call's payload is handed over: its caller waits for all of it, so the
    /// writer must not hold its last part back for later writes. `false` when that cannot
    /// be said without waiting (then [`hurry`](Self::hurry) is awaited from a task). The
    /// default (a writer without such a hint) does nothing.
    fn try_hurry(&self) -> bool {
        true
    }

    /// [`try_hurry`](Self::try_hurry), waiting for room to say it.
    fn hurry(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// The future of one call: resolved once, by whoever comes first.
struct Slot {
    target: Mutex<Option<Target>>,
    /// What a successful call resolves to: None (one message) or the count (a bulk call).
    count: Option<usize>,
}

impl Slot {
    fn new(target: Target, count: Option<usize>) -> Arc<Slot> {
        Arc::new(Slot {
            target: Mutex::new(Some(target)),
            count,
        })
    }

    /// The call raised instead: its future is never resolved nor returned.
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

    /// A bulk call: its caller waits for every message, so the writer is told to hurry.
    fn is_bulk(&self) -> bool {
        self.count.is_some()
    }

    /// The engine completion of this call: per message, or one group for a bulk call.
    fn done(self: &Arc<Self>) -> Done {
        match self.count {
            None => Done::Notify(self.clone()),
            // Settled on the engine thread: a flush that returns finds the call done.
            Some(n) => Done::Group(Group::notifying(n, self.clone())),
        }
    }
}

impl Completion for Slot {
    fn complete(&self, result: Result<()>) {
        self.finish(result);
    }
}

/// Work waiting its turn behind earlier writes.
enum Waiting<S: Sink> {
    /// A payload still waiting for budget.
    Write {
        payload: S::Payload,
        bytes: u64,
        slot: Arc<Slot>,
    },
    /// A payload the engine's full queue gave back.
    Submit(S::Rejected, Arc<Slot>),
    /// A `flush` or `close`: told once everything before it is handed over.
    Turn(oneshot::Sender<()>),
}

/// The in-order queue of writes waiting for room (its task is started on first use).
pub(crate) struct Lane<S: Sink> {
    busy: Arc<AtomicUsize>,
    tx: Mutex<Option<UnboundedSender<Waiting<S>>>>,
}

impl<S: Sink> Default for Lane<S> {
    fn default() -> Self {
        Lane {
            busy: Arc::default(),
            tx: Mutex::new(None),
        }
    }
}

impl<S: Sink> Lane<S> {
    fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire) > 0
    }

    fn push(&self, sink: &S, item: Waiting<S>) -> Result<()> {
        let mut tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if tx.is_none() {
            let (t, mut rx) = unbounded_channel::<Waiting<S>>();
            let busy = Arc::clone(&self.busy);
            let sink = sink.clone();
            runtime::handle()?.spawn(async move {
                while let Some(item) = rx.recv().await {
                    run_waiting(&sink, item).await;
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
                    slot.finish(Err(Error::closed(S::NAME)))
                }
                // Dropped: its waiter goes on at once (and finds the writer closed).
                Waiting::Turn(_) => {}
            }
        }
        Ok(())
    }

    /// A future that ends once every write queued before this call is handed over (at
    /// once when none waits): what `flush` and `close` wait for first.
    pub fn turn(&self, sink: &S) -> Result<impl Future<Output = ()> + Send + 'static> {
        let rx = if self.is_busy() {
            let (tx, rx) = oneshot::channel();
            self.push(sink, Waiting::Turn(tx))?;
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

    /// An awaitable write of `payload` (`bytes` against the budget; `count`: a bulk call's,
    /// resolving to the count, else None). The budget's rule applies at the call
    /// (`MessageTooBigError`, or `ProducerQueueFullError` without `block_if_queue_full`);
    /// then it is handed over now when nothing waits before it and there is room, else
    /// queued in the lane.
    pub fn start<'py>(
        &self,
        py: Python<'py>,
        sink: &S,
        payload: S::Payload,
        bytes: u64,
        block_if_queue_full: bool,
        count: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if count == Some(0) {
            return aio::ready(py, 0usize.into_pyobject(py)?.into_any());
        }
        let reservation = try_reserve(sink.memory(), bytes, block_if_queue_full).map_err(to_py)?;
        let (fut, target) = aio::new_future(py)?;
        let slot = Slot::new(target, count);
        let item = match reservation {
            Some(r) if !self.is_busy() => {
                let bulk = slot.is_bulk();
                match sink.try_hand_over(payload, slot.done(), r) {
                    Ok(None) => {
                        if bulk {
                            hurry_soon(sink);
                        }
                        return Ok(fut);
                    }
                    // The engine's queue is full: wait for room in the lane, in order.
                    Ok(Some(rejected)) => Waiting::Submit(rejected, slot),
                    Err(e) => {
                        slot.forget();
                        return Err(to_py(e));
                    }
                }
            }
            // No room, or room but behind a busy lane: then the room is given back and the
            // lane reserves it in turn. Why not keep it: writes queued behind one waiting for
            // room must not hold the room it waits for (it could then never get it).
            reservation => {
                drop(reservation);
                Waiting::Write {
                    payload,
                    bytes,
                    slot,
                }
            }
        };
        self.push(sink, item).map_err(to_py)?;
        Ok(fut)
    }
}

/// Tell the writer to hurry (a bulk call's payload is handed over); from a task when that
/// cannot be said without waiting, still behind the payload.
fn hurry_soon<S: Sink>(sink: &S) {
    if !sink.try_hurry() {
        let sink = sink.clone();
        if let Ok(h) = runtime::handle() {
            h.spawn(async move { sink.hurry().await });
        }
    }
}

async fn run_waiting<S: Sink>(sink: &S, item: Waiting<S>) {
    let (res, slot) = match item {
        Waiting::Write {
            payload,
            bytes,
            slot,
        } => {
            let reservation = sink.memory().reserve(bytes).await;
            let res = match sink.try_hand_over(payload, slot.done(), reservation) {
                Ok(None) => Ok(()),
                Ok(Some(rejected)) => sink.hand_over(rejected).await,
                Err(e) => Err(e),
            };
            (res, slot)
        }
        Waiting::Submit(rejected, slot) => (sink.hand_over(rejected).await, slot),
        Waiting::Turn(tx) => {
            let _ = tx.send(());
            return;
        }
    };
    match res {
        Err(e) => slot.finish(Err(e)),
        Ok(()) if slot.is_bulk() => sink.hurry().await,
        Ok(()) => {}
    }
}
