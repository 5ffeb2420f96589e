//! The awaitable side of `Producer` (used by `streamwire.aio.Producer`).
//!
//! A send is queued synchronously in call order and returns an `AioSendFuture` (an
//! asyncio-compatible future without an `asyncio.Future`, see `common::aio_future`) that the
//! broker's receipt resolves through the bridge in `common::aio` (receipts that arrive
//! together resolve together). When the producer is full, the send goes to this producer's
//! `Room`: one engine task that queues waiting sends strictly in order, and every later send
//! (and every `send_many`) queues behind it while it is busy, so sends gathered from many
//! coroutines keep their call order per producer even under back-pressure.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::runtime;
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::producer::{
    Completion, EntryOptions, Producer as PartitionProducer, Rejected, TopicProducer,
};
use streamwire_pulsar::transaction::Transaction;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use crate::common::aio::{self, Target, Value};
use crate::common::errors::{to_py, IntoPyResult};
use crate::pulsar::deliver_time::{DeliverAfter, DeliverAt};
use crate::pulsar::producer::Producer;
use crate::pulsar::send_many::ManyPlan;
use crate::pulsar::transaction::{txn_arg, PyTransaction};

/// Work that must wait its turn behind earlier sends.
// `One` is the common variant (a single send waiting for room); boxing its message to shrink
// the enum would add an allocation to that path for nothing.
#[allow(clippy::large_enum_variant)]
enum Waiting {
    One {
        p: PartitionProducer,
        msg: OutgoingMessage,
        user_seq: bool,
        entry: EntryOptions,
        target: Target,
    },
    /// A `send_many` (bulk or per-message, see `send_many::ManyPlan`).
    Many {
        tp: Arc<TopicProducer>,
        plan: ManyPlan,
        /// The caller asked for the list of ids rather than `MessageIdRanges`.
        ids: bool,
        target: Target,
    },
    /// `flush`/`close`: started once everything before it is queued.
    Then {
        tp: Arc<TopicProducer>,
        close: bool,
        target: Target,
    },
}

/// The in-order queue of sends waiting for room (created on first use).
#[derive(Default)]
pub struct Room {
    busy: Arc<AtomicUsize>,
    tx: Mutex<Option<UnboundedSender<Waiting>>>,
}

impl Room {
    fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire) > 0
    }

    fn push(&self, w: Waiting) -> Result<()> {
        let mut tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if tx.is_none() {
            let (t, mut rx) = unbounded_channel::<Waiting>();
            let busy = Arc::clone(&self.busy);
            runtime::handle()?.spawn(async move {
                while let Some(w) = rx.recv().await {
                    run_waiting(w).await;
                    // Only after the send is queued: a send made now comes after it.
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
            fail(w, Error::closed("producer"));
        }
        Ok(())
    }
}

fn fail(w: Waiting, e: Error) {
    match w {
        Waiting::One { target, .. }
        | Waiting::Many { target, .. }
        | Waiting::Then { target, .. } => aio::complete(target, Err(e)),
    }
}

/// A send completion that resolves `target`, and a way to fail it if the send never queued.
fn completion_for(target: Target) -> (Completion, Arc<Mutex<Option<Target>>>) {
    let slot = Arc::new(Mutex::new(Some(target)));
    let s = Arc::clone(&slot);
    let completion = Completion::Callback(Box::new(move |res: Result<MessageId>| {
        if let Some(t) = s.lock().unwrap_or_else(|p| p.into_inner()).take() {
            aio::complete(t, res.map(Value::Id));
        }
    }));
    (completion, slot)
}

async fn run_waiting(w: Waiting) {
    match w {
        Waiting::One {
            p,
            msg,
            user_seq,
            entry,
            target,
        } => {
            let (completion, slot) = completion_for(target);
            if let Err(e) = p.send(msg, user_seq, entry, completion).await {
                if let Some(t) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    aio::complete(t, Err(e));
                }
            }
        }
        Waiting::Many {
            tp,
            plan,
            ids,
            target,
        } => {
            let queued = plan.queue(&tp).await;
            let Ok(handle) = runtime::handle() else {
                return;
            };
            handle.spawn(async move {
                let sent = queued.wait().await;
                aio::complete(target, sent.map(|s| s.into_value(ids)));
            });
        }
        Waiting::Then { tp, close, target } => {
            let Ok(handle) = runtime::handle() else {
                return;
            };
            handle.spawn(async move {
                let res = if close {
                    tp.close().await
                } else {
                    tp.flush().await
                };
                aio::complete(target, res.map(|()| Value::None));
            });
        }
    }
}

/// `txn=` of an awaitable send: a `streamwire.aio.Transaction` (whose `_native` is the
/// engine transaction) or anything `txn_arg` takes. Done here, not in a Python wrapper, so
/// `streamwire.aio.Producer.send` can be this call itself (no Python frame per send).
fn aio_txn_arg(txn: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Transaction>> {
    if let Some(t) = txn {
        if !t.is_none() && t.cast::<PyTransaction>().is_err() {
            if let Ok(native) = t.getattr(pyo3::intern!(t.py(), "_native")) {
                if native.cast::<PyTransaction>().is_ok() {
                    return txn_arg(Some(&native));
                }
            }
        }
    }
    txn_arg(txn)
}

#[pymethods]
impl Producer {
    /// `send` as an awaitable (see `streamwire.aio.Producer.send`).
    #[pyo3(signature = (value, *, key=None, ordering_key=None, properties=None, event_time=None,
        sequence_id=None, deliver_after=None, deliver_at=None, replication_clusters=None,
        disable_replication=false, txn=None, schema=None))]
    #[allow(clippy::too_many_arguments)]
    fn _asend<'py>(
        &self,
        py: Python<'py>,
        value: &Bound<'py, PyAny>,
        key: Option<String>,
        ordering_key: Option<Vec<u8>>,
        properties: Option<&Bound<'py, PyAny>>,
        event_time: Option<i64>,
        sequence_id: Option<i64>,
        deliver_after: Option<DeliverAfter>,
        deliver_at: Option<DeliverAt>,
        replication_clusters: Option<Vec<String>>,
        disable_replication: bool,
        txn: Option<&Bound<'py, PyAny>>,
        schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let tp = self.alive(py)?;
        let txn = aio_txn_arg(txn)?;
        // A schema met for the first time is registered here, blocking this call for one
        // round trip (the message must be queued now, in order); `await
        // producer.register_schema(schema)` beforehand avoids it.
        let (msg, user_seq, entry) = self.message(
            py,
            value,
            key,
            ordering_key,
            properties,
            event_time,
            sequence_id,
            deliver_after,
            deliver_at,
            replication_clusters,
            disable_replication,
            schema,
        )?;
        let (fut, target) = aio::new_send_future(py)?;
        let fut = fut.into_any();
        if let Some(t) = txn {
            // Raised at the call, as for any bad argument, when the transaction is not open.
            t.check_open("send").py_err()?;
            // Registering the partition with the coordinator waits on the network: done on
            // the runtime, the outcome lands in the future.
            let handle = runtime::handle().map_err(to_py)?;
            handle.spawn(async move {
                let (completion, slot) = completion_for(target);
                if let Err(e) = tp.send_in_txn(msg, user_seq, entry, completion, &t).await {
                    if let Some(t) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                        aio::complete(t, Err(e));
                    }
                }
            });
            return Ok(fut);
        }
        let p = tp.producer_for_msg(&msg);
        if self.room.is_busy() {
            self.room
                .push(Waiting::One {
                    p,
                    msg,
                    user_seq,
                    entry,
                    target,
                })
                .map_err(to_py)?;
            return Ok(fut);
        }
        let (completion, slot) = completion_for(target);
        if let Err(rejected) = p.try_send(msg, user_seq, entry.clone(), completion) {
            let Rejected {
                error: e,
                completion,
                msg,
            } = *rejected;
            if e.kind() == ErrorKind::QueueFull && self.block_if_queue_full {
                // The completion was never armed: take its target back for the room.
                drop(completion);
                let target = slot
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
                    .ok_or_else(|| to_py(Error::closed("producer")))?;
                self.room
                    .push(Waiting::One {
                        p,
                        msg,
                        user_seq,
                        entry,
                        target,
                    })
                    .map_err(to_py)?;
            } else {
                // Raised at once (as the sync `send_async` does), the future is dropped.
                drop(completion);
                slot.lock().unwrap_or_else(|p| p.into_inner()).take();
                return Err(to_py(e));
            }
        }
        Ok(fut)
    }

    /// `send_many` as an awaitable: the ids in input order (a `MessageIdRanges` with
    /// `ids=False`).
    #[pyo3(signature = (values, *, keys=None, properties=None, event_times=None,
        sequence_ids=None, txn=None, schema=None, ids=true))]
    #[allow(clippy::too_many_arguments)]
    fn _asend_many<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'py, PyAny>,
        keys: Option<&Bound<'py, PyAny>>,
        properties: Option<&Bound<'py, PyAny>>,
        event_times: Option<&Bound<'py, PyAny>>,
        sequence_ids: Option<&Bound<'py, PyAny>>,
        txn: Option<&Bound<'py, PyAny>>,
        schema: Option<&Bound<'py, PyAny>>,
        ids: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let tp = self.alive(py)?;
        let txn = txn_arg(txn)?;
        // As `_asend`: a schema met for the first time is registered here (one blocking
        // round trip, after every value is encoded, so a bad value registers nothing).
        let plan = self.plan_many(
            py,
            values,
            keys,
            properties,
            event_times,
            sequence_ids,
            txn,
            schema,
        )?;
        if plan.is_txn() {
            // Registering the partitions with the coordinator waits on the network: not in
            // the room, where it would hold up every later send.
            let (fut, _) = aio::spawn(
                py,
                "send_many in transaction",
                None,
                async move { Ok(plan.send(tp).await?.into_value(ids)) },
                |v: Value| v,
            )?;
            return Ok(fut);
        }
        let (fut, target) = aio::new_future(py)?;
        self.room
            .push(Waiting::Many {
                tp,
                plan,
                ids,
                target,
            })
            .map_err(to_py)?;
        Ok(fut)
    }

    /// `flush` as an awaitable (after every send made so far has been queued).
    fn _aflush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let tp = self.alive(py)?;
        self.raise_callback_error()?;
        self.then(py, tp, false)
    }

    /// `close` as an awaitable. Idempotent.
    fn _aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.closed.swap(true, Ordering::AcqRel) || self.pid != runtime::current_pid() {
            return aio::ready(py, py.None().into_bound(py));
        }
        self.then(py, Arc::clone(&self.inner), true)
    }
}

impl Producer {
    /// `live` for the awaitable calls: the same checks, the process one without a syscall.
    fn alive(&self, py: Python<'_>) -> PyResult<Arc<TopicProducer>> {
        aio::check_same_process(py, self.pid, "producer")?;
        if self.closed.load(Ordering::Acquire) || self.inner.is_closed() {
            return Err(to_py(Error::closed("producer")));
        }
        Ok(Arc::clone(&self.inner))
    }

    /// Flush or close after every send made so far has been queued.
    fn then<'py>(
        &self,
        py: Python<'py>,
        tp: Arc<TopicProducer>,
        close: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (fut, target) = aio::new_future(py)?;
        self.room
            .push(Waiting::Then { tp, close, target })
            .map_err(to_py)?;
        Ok(fut)
    }
}
