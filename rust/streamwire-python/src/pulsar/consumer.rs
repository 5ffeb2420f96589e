//! The `Consumer` and `Reader` classes (made by `Client.subscribe` / `create_reader`, in
//! `consumer_options`). Their waiting calls besides receives (seek, last ids, unsubscribe,
//! ...) are each written once for both faces with `two_faces!`; the receives keep a blocking
//! shell here and an awaitable one in `aio_consumer`, sharing `Handle`.
//!
//! Receiving takes a fast path first: if messages are queued they are taken under one short
//! lock without detaching from the interpreter or touching the runtime. Only when the queue
//! is empty does the call detach and wait (through `blocking::wait`, so Ctrl-C works).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::{PyStopIteration, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use streamwire_core::error::{Error, Result as EResult};
use streamwire_core::runtime;
use streamwire_pulsar::consumer::{Consumer as Engine, ReceivedMessage, SlotFinder};
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::protocol::commands::SeekTarget;

use crate::common::blocking::{timeout_arg, wait};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::common::untracked::untracked_list;
use crate::pulsar::aio_consumer::{Held, Want};
use crate::pulsar::deliver_time::DeliverAfter;
use crate::pulsar::listener::{has_listener, Listening};
use crate::pulsar::message::{column_list, Message};
use crate::pulsar::message_id::PyMessageId;
use crate::pulsar::schema::Typed;
use crate::pulsar::schema_arrow::typed_batch;
use crate::pulsar::transaction::txn_arg;

const PICKLE_HINT: &str = "create the consumer inside the worker process from a client made there";

/// What `Consumer` and `Reader` share.
pub(crate) struct Handle {
    pub(crate) engine: Engine,
    pub(crate) pid: u32,
    pub(crate) op_timeout: Duration,
    /// The schema messages are decoded with (`schema=`), or None.
    pub(crate) typed: Option<Arc<Typed>>,
    /// Its listener (`message_listener=` / `reader_listener=`), if any: its messages then go
    /// to the listener, and the receive calls raise.
    pub(crate) listening: Option<Listening>,
}

enum Target {
    Message(Option<u32>, MessageId),
}

impl Handle {
    pub(crate) fn live(&self, what: &str) -> PyResult<&Engine> {
        runtime::check_same_process(self.pid, what).py_err()?;
        if self.engine.is_closed() {
            return Err(to_py(Error::closed(what)));
        }
        Ok(&self.engine)
    }

    /// Refuse a receive on a consumer or reader whose messages go to a listener.
    pub(crate) fn no_listener(&self, what: &str) -> PyResult<()> {
        match self.listening {
            Some(_) => Err(has_listener(what)),
            None => Ok(()),
        }
    }

    /// Its listener state, or a `ConfigError` naming `call` when it has none.
    fn listening_for(&self, what: &str, call: &str) -> PyResult<&Listening> {
        self.listening.as_ref().ok_or_else(|| {
            to_py(Error::new(
                streamwire_core::error::ErrorKind::Config,
                format!("{call} needs a {what} made with a message listener"),
            ))
        })
    }

    fn receive(&self, py: Python<'_>, what: &str, timeout: Option<f64>) -> PyResult<Message> {
        self.no_listener(what)?;
        let t = timeout_arg("timeout", timeout).py_err()?;
        let engine = self.live(what)?;
        if let Some(m) = engine.try_receive_many(1).py_err()?.pop() {
            return Ok(self.message(m));
        }
        let e = engine.clone();
        let mut got = wait(py, "receive", t, async move { e.receive_many(1).await })?;
        got.pop()
            .map(|m| self.message(m))
            .ok_or_else(|| to_py(Error::timeout("receive")))
    }

    /// A received message as the Python `Message`, decoding with the schema if any.
    pub(crate) fn message(&self, m: ReceivedMessage) -> Message {
        Message::typed(m, self.typed.clone())
    }

    fn receive_many(
        &self,
        py: Python<'_>,
        what: &str,
        max: i64,
        timeout: Option<f64>,
        max_bytes: Option<i64>,
    ) -> PyResult<Vec<ReceivedMessage>> {
        let (max, max_bytes) = receive_limits(max, max_bytes)?;
        self.no_listener(what)?;
        let t = timeout_arg("timeout", timeout).py_err()?;
        let engine = self.live(what)?;
        let got = engine.try_receive_up_to(max, max_bytes).py_err()?;
        if !got.is_empty() || t == Some(Duration::ZERO) {
            return Ok(got);
        }
        let e = engine.clone();
        wait(py, "receive_many", None, async move {
            match t {
                None => e.receive_up_to(max, max_bytes).await,
                Some(t) => match tokio::time::timeout(t, e.receive_up_to(max, max_bytes)).await {
                    Ok(r) => r,
                    Err(_) => Ok(Vec::new()),
                },
            }
        })
    }

    fn arrow<'py>(
        &self,
        py: Python<'py>,
        what: &str,
        max: i64,
        timeout: Option<f64>,
        columns: Option<Vec<String>>,
        max_bytes: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let names = column_list(columns.as_deref())?; // before anything is taken
        let got = self.receive_many(py, what, max, timeout, max_bytes)?;
        typed_batch(py, self.typed.as_deref(), &got, &names)
    }

    fn target(&self, obj: &Bound<'_, PyAny>) -> PyResult<Target> {
        self.target_in(&self.engine.slot_finder(), obj)
    }

    fn target_in(&self, finder: &SlotFinder, obj: &Bound<'_, PyAny>) -> PyResult<Target> {
        if let Ok(m) = obj.cast::<Message>() {
            let m = &m.get().m;
            return Ok(Target::Message(finder.slot_of(m), m.id));
        }
        if let Ok(id) = obj.extract::<PyMessageId>() {
            return Ok(Target::Message(None, id.id));
        }
        Err(PyTypeError::new_err(format!(
            "expected a Message or a MessageId, got {}",
            obj.get_type().name()?
        )))
    }

    /// A Message, a MessageId, or a list/tuple of them -> their (slot, id) pairs. Every item
    /// is resolved before any is acted on, so a bad item fails the call having changed nothing.
    pub(crate) fn targets(
        &self,
        obj: &Bound<'_, PyAny>,
    ) -> PyResult<Vec<(Option<u32>, MessageId)>> {
        let finder = self.engine.slot_finder();
        let pair = |item: &Bound<'_, PyAny>| -> PyResult<(Option<u32>, MessageId)> {
            let Target::Message(s, id) = self.target_in(&finder, item)?;
            Ok((s, id))
        };
        // Sized up front: collecting a `PyResult` iterator knows no length and grew the
        // vector by doubling (about 100 instructions per id on a 10,000-message list).
        if let Ok(list) = obj.cast::<PyList>() {
            let mut out = Vec::with_capacity(list.len());
            for item in list.iter() {
                out.push(pair(&item)?);
            }
            return Ok(out);
        }
        if let Ok(tuple) = obj.cast::<PyTuple>() {
            let mut out = Vec::with_capacity(tuple.len());
            for item in tuple.iter() {
                out.push(pair(&item)?);
            }
            return Ok(out);
        }
        Ok(vec![pair(obj)?])
    }

    fn block<T: Send + 'static>(
        &self,
        py: Python<'_>,
        what: &str,
        fut: impl std::future::Future<Output = EResult<T>> + Send + 'static,
    ) -> PyResult<T> {
        wait(py, what, Some(self.op_timeout * 2), fut)
    }

    /// A waiting call of this consumer or reader, with the time limit of a broker request
    /// (the face, blocking or awaitable, is chosen by `two_faces!`).
    fn op<T, F>(&self, what: &'static str, fut: F) -> Op<F>
    where
        F: Future<Output = EResult<T>> + Send + 'static,
        T: Send + 'static,
    {
        Op::new(what, Some(self.op_timeout * 2), fut)
    }

    fn seek(
        &self,
        what: &str,
        target: &Bound<'_, PyAny>,
    ) -> PyResult<Op<impl Future<Output = EResult<()>> + Send + 'static>> {
        let engine = self.live(what)?.clone();
        let t = seek_target(target)?;
        Ok(self.op("seek", async move { engine.seek(t).await }))
    }

    fn metrics<'py>(&self, py: Python<'py>, what: &str) -> PyResult<Bound<'py, PyDict>> {
        let s = self
            .live(what)?
            .metrics()
            .ok_or_else(|| to_py(Error::closed(what)))?;
        let d = crate::common::metrics::snapshot_dict(py, &s)?;
        if let Some(l) = &self.listening {
            d.set_item("listener_errors", l.errors())?;
        }
        Ok(d)
    }

    fn stats<'py>(
        &self,
        py: Python<'py>,
        what: &str,
        broker: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let engine = self.live(what)?.clone();
        let s = engine.stats();
        let d = PyDict::new(py);
        d.set_item("received", s.received)?;
        d.set_item("acknowledged", s.acked)?;
        d.set_item("negatively_acknowledged", s.nacked)?;
        d.set_item("skipped", s.skipped)?;
        d.set_item("invalid", s.invalid)?;
        d.set_item("reconnects", s.reconnects)?;
        d.set_item("reconnect_failures", s.reconnect_failures)?;
        d.set_item("reconnect_error", s.reconnect_error)?;
        d.set_item("redelivery_requests", s.redelivery_requests)?;
        d.set_item("dead_lettered", s.dead_lettered)?;
        d.set_item("queued", s.queued)?;
        d.set_item("partitions", s.partitions)?;
        if let Some(l) = &self.listening {
            d.set_item("listener_errors", l.errors())?;
        }
        if broker {
            let list = self.block(
                py,
                "consumer stats",
                async move { engine.broker_stats().await },
            )?;
            let out = PyList::empty(py);
            for r in list {
                let b = PyDict::new(py);
                b.set_item("msg_rate_out", r.msg_rate_out)?;
                b.set_item("msg_throughput_out", r.msg_throughput_out)?;
                b.set_item("msg_rate_redeliver", r.msg_rate_redeliver)?;
                b.set_item("consumer_name", r.consumer_name)?;
                b.set_item("available_permits", r.available_permits)?;
                b.set_item("unacked_messages", r.unacked_messages)?;
                b.set_item(
                    "blocked_consumer_on_unacked_msgs",
                    r.blocked_consumer_on_unacked_msgs,
                )?;
                b.set_item("type", r.r#type)?;
                b.set_item("msg_backlog", r.msg_backlog)?;
                out.append(b)?;
            }
            d.set_item("broker", out)?;
        }
        Ok(d)
    }

    pub(crate) fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.engine.is_closed() || self.pid != runtime::current_pid() {
            return Ok(());
        }
        let e = self.engine.clone();
        let res = self.block(py, "close", async move { e.close().await });
        // The listener thread drops a closed consumer when it looks at it next.
        if let Some(l) = &self.listening {
            l.wake();
        }
        res
    }

    fn next(&self, py: Python<'_>, what: &str) -> PyResult<Message> {
        match self.receive(py, what, None) {
            Err(_) if self.engine.has_reached_end_of_topic() && self.engine.queued() == 0 => {
                Err(PyStopIteration::new_err(()))
            }
            other => other,
        }
    }

    fn last_ids(
        &self,
        what: &str,
    ) -> PyResult<Op<impl Future<Output = EResult<Vec<PyMessageId>>> + Send + 'static>> {
        let e = self.live(what)?.clone();
        Ok(self.op("get last message id", async move {
            let ids = e.get_last_message_ids().await?;
            Ok(ids.into_iter().map(PyMessageId::from).collect())
        }))
    }

    fn last_id(
        &self,
        what: &str,
    ) -> PyResult<Op<impl Future<Output = EResult<PyMessageId>> + Send + 'static>> {
        let e = self.live(what)?.clone();
        Ok(self.op("get last message id", async move {
            single_last_id(e.get_last_message_ids().await?).map(PyMessageId::from)
        }))
    }
}

/// A receive's `max_messages` and `max_bytes`, checked (each at least 1).
pub(crate) fn receive_limits(max: i64, max_bytes: Option<i64>) -> PyResult<(usize, Option<usize>)> {
    if max < 1 {
        return Err(to_py(Error::invalid(format!(
            "max_messages must be at least 1, got {max}"
        ))));
    }
    match max_bytes {
        Some(b) if b < 1 => Err(to_py(Error::invalid(format!(
            "max_bytes must be at least 1, got {b}"
        )))),
        b => Ok((max as usize, b.map(|b| b as usize))),
    }
}

/// The one last id of a single-partition consumer.
fn single_last_id<T>(mut ids: Vec<T>) -> EResult<T> {
    if ids.len() != 1 {
        return Err(Error::invalid(
            "this consumer reads several partitions or topics: use get_last_message_ids()",
        ));
    }
    Ok(ids.remove(0))
}

/// Where a `seek` goes: a MessageId (or a Message's id), or a publish time in ms.
fn seek_target(target: &Bound<'_, PyAny>) -> PyResult<SeekTarget> {
    let t = if let Ok(id) = target.extract::<PyMessageId>() {
        SeekTarget::MessageId(id.id.to_proto())
    } else if let Ok(m) = target.cast::<Message>() {
        SeekTarget::MessageId(m.get().m.id.to_proto())
    } else if target.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(
            "seek takes a MessageId or an int timestamp in ms",
        ));
    } else if let Ok(ms) = target.extract::<i64>() {
        if ms < 0 {
            return Err(to_py(Error::invalid("timestamp must not be negative")));
        }
        SeekTarget::PublishTime(ms as u64)
    } else {
        return Err(PyTypeError::new_err(
            "seek takes a MessageId or an int timestamp in milliseconds",
        ));
    };
    Ok(t)
}

/// The methods `Consumer` and `Reader` share, each written once: `what` names the class in
/// errors, `$sub` whether its repr shows a subscription.
macro_rules! handle_methods {
    (
        $ty:ident, $what:literal, $sub:literal,
        $one:ident, $many:ident, $arrow:ident, $areceive:ident
    ) => {
        crate::live_handle!($ty, stringify!($ty), PICKLE_HINT);

        #[pymethods]
        impl $ty {
            /// The next message; waits up to `timeout` seconds (None: forever), then raises
            /// `OperationTimeoutError`. Raises `TopicTerminatedError` at the end of a
            /// terminated topic.
            ///
            /// Args:
            ///     timeout: seconds to wait at most; None waits forever. Default None.
            #[pyo3(signature = (timeout=None))]
            fn $one(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Message> {
                self.h.receive(py, $what, timeout)
            }

            /// Up to `max_messages` messages in one call: waits until at least one is
            /// available (or `timeout` passes: then returns `[]`), then returns what is queued,
            /// up to the max.
            ///
            /// Args:
            ///     max_messages: the most messages to return (at least 1).
            ///     timeout: seconds to wait for the first message; None waits forever, 0
            ///         returns what is queued now. Default None.
            ///     max_bytes: the most payload bytes to return (at least 1): the first
            ///         message always comes, a later one only if it fits; the first that does
            ///         not fit is the first of the next call. Default None: no byte limit.
            #[pyo3(signature = (max_messages, timeout=None, *, max_bytes=None))]
            fn $many<'py>(
                &self,
                py: Python<'py>,
                max_messages: i64,
                timeout: Option<f64>,
                max_bytes: Option<i64>,
            ) -> PyResult<Bound<'py, PyList>> {
                let got = self
                    .h
                    .receive_many(py, $what, max_messages, timeout, max_bytes)?;
                untracked_list(py, got.into_iter().map(|m| self.h.message(m)))
            }

            /// Like the list receive, as a `pyarrow.RecordBatch` (no Python object per
            /// message). Acknowledge with `acknowledge_cumulative` or by `MessageId`s rebuilt
            /// from the columns. `columns` names the columns to build (default: all), checked
            /// before anything is taken.
            ///
            /// Args:
            ///     max_messages: the most messages (rows) to return (at least 1).
            ///     timeout: seconds to wait for the first message (then an empty batch); None
            ///         waits forever. Default None.
            ///     columns: a subset of value, key, topic, partition, ledger_id, entry_id,
            ///         batch_index, publish_time, event_time, properties, producer_name,
            ///         sequence_id, redelivery_count, message_id, in the order wanted. Default
            ///         None: all.
            ///     max_bytes: the most payload bytes (as the list receive's). Default None.
            #[pyo3(signature = (max_messages, timeout=None, *, columns=None, max_bytes=None))]
            fn $arrow<'py>(
                &self,
                py: Python<'py>,
                max_messages: i64,
                timeout: Option<f64>,
                columns: Option<Vec<String>>,
                max_bytes: Option<i64>,
            ) -> PyResult<Bound<'py, PyAny>> {
                self.h
                    .arrow(py, $what, max_messages, timeout, columns, max_bytes)
            }

            /// A receive as an awaitable (`streamwire.aio`): `kind` 0 one Message, 1 a list,
            /// 2 a RecordBatch; `held` and `orphan` keep what a cancelled one took.
            #[pyo3(signature = (held, orphan, kind, max_messages, timeout=None, columns=None, max_bytes=None))]
            #[allow(clippy::too_many_arguments)]
            fn $areceive<'py>(
                &self,
                py: Python<'py>,
                held: &Held,
                orphan: Py<PyAny>,
                kind: u8,
                max_messages: i64,
                timeout: Option<f64>,
                columns: Option<Vec<String>>,
                max_bytes: Option<i64>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let want = Want::parse(kind, max_messages, columns, max_bytes)?;
                self.h.no_listener($what)?;
                self.h.areceive(py, $what, held, want, timeout, orphan)
            }

            /// Up to `max_messages` queued messages, without waiting, for its listener thread
            /// (`streamwire._listeners`); the public receives raise when there is a listener.
            fn _listener_take<'py>(
                &self,
                py: Python<'py>,
                max_messages: usize,
            ) -> PyResult<Bound<'py, PyList>> {
                let got = self
                    .h
                    .live($what)?
                    .try_receive_many(max_messages)
                    .py_err()?;
                untracked_list(py, got.into_iter().map(|m| self.h.message(m)))
            }

            /// For its listener thread: 0 serve it, 1 paused, 2 closed (or no listener).
            #[getter]
            fn _listener_state(&self) -> u8 {
                match &self.h.listening {
                    Some(_) if self.h.engine.is_closed() => 2,
                    Some(_) if self.h.pid != runtime::current_pid() => 2,
                    Some(l) if l.is_paused() => 1,
                    Some(_) => 0,
                    None => 2,
                }
            }

            /// Its listener (None without one).
            #[getter]
            fn _listener(&self, py: Python<'_>) -> Option<Py<PyAny>> {
                self.h.listening.as_ref().map(|l| l.callback.clone_ref(py))
            }

            /// Count one call of its listener that raised (`metrics()["listener_errors"]`).
            fn _listener_failed(&self) {
                if let Some(l) = &self.h.listening {
                    l.failed();
                }
            }

            /// Its metrics (all partitions summed; a reader is a subscription-less consumer,
            /// kind "consumer"); see README "Metrics" for the keys.
            fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                self.h.metrics(py, $what)
            }

            /// Whether every partition has reached the end of a terminated topic (messages
            /// may still be queued for the next receive).
            fn has_reached_end_of_topic(&self) -> bool {
                self.h.engine.has_reached_end_of_topic()
            }

            /// The topic it reads (a consumer's label, for several topics or a pattern).
            #[getter]
            fn topic(&self) -> &str {
                self.h.engine.topic()
            }

            /// The partitions it reads now, over all its topics (1 for one topic without
            /// partitions); it grows when a topic gains partitions (see
            /// `auto_update_partitions_interval`).
            #[getter]
            fn num_partitions(&self) -> usize {
                self.h.engine.num_partitions()
            }

            /// Whether it is open and every partition is subscribed on a live connection
            /// (False while it reconnects after the broker went away, and once closed).
            fn is_connected(&self) -> bool {
                self.h.engine.is_connected()
            }

            /// Close (a consumer flushes its pending acknowledgements first). Idempotent.
            fn close(&self, py: Python<'_>) -> PyResult<()> {
                self.h.close(py)
            }

            /// `close` as an awaitable (`streamwire.aio`).
            fn _aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                self.h.aclose(py)
            }

            fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
                slf
            }

            fn __next__(&self, py: Python<'_>) -> PyResult<Message> {
                self.h.next(py, $what)
            }

            fn __repr__(&self) -> String {
                let e = &self.h.engine;
                format!(
                    "<streamwire.{} topic={:?}{}{}>",
                    stringify!($ty),
                    e.topic(),
                    if $sub {
                        format!(" subscription={:?}", e.subscription())
                    } else {
                        String::new()
                    },
                    if e.is_closed() { " closed" } else { "" }
                )
            }
        }
    };
}

handle_methods!(
    Consumer,
    "consumer",
    true,
    receive,
    receive_many,
    receive_arrow,
    _areceive
);
handle_methods!(Reader, "reader", false, read_next, read_many, read_arrow, _aread);

/// A subscription's consumer. Thread-safe. Made by `Client.subscribe`; iterating yields
/// messages until the end of a terminated topic.
#[pyclass(frozen, module = "streamwire._native")]
pub struct Consumer {
    pub(crate) h: Handle,
}

#[pymethods]
impl Consumer {
    /// Acknowledge a Message, a MessageId, or a list of them.
    ///
    /// Without `txn` the ack is grouped and the call never waits. With `txn` it is sent at
    /// once and the call waits for the broker to accept it; it takes effect when the
    /// transaction commits (on abort the messages are delivered again).
    ///
    /// Args:
    ///     message: a `Message`, a `MessageId`, or a list/tuple of them (every item is
    ///         checked before any is acknowledged).
    ///     txn: a `Transaction` (from `Client.transaction()`). Default None.
    ///
    /// Raises:
    ///     TransactionConflictError: a message is already acknowledged in another
    ///         transaction.
    ///     InvalidTransactionStateError: `txn` is no longer open.
    #[pyo3(signature = (message, *, txn=None))]
    fn acknowledge(
        &self,
        py: Python<'_>,
        message: &Bound<'_, PyAny>,
        txn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let e = self.h.live("consumer")?;
        if let Some(t) = txn_arg(txn)? {
            let ids = if message.is_instance_of::<PyList>() || message.is_instance_of::<PyTuple>() {
                self.h.targets(message)?
            } else {
                let Target::Message(s, id) = self.h.target(message)?;
                vec![(s, id)]
            };
            let e = e.clone();
            return self.h.block(py, "acknowledge in transaction", async move {
                e.acknowledge_in_txn(&ids, false, &t).await
            });
        }
        if message.is_instance_of::<PyList>() || message.is_instance_of::<PyTuple>() {
            // A list is one call into the engine: each partition's trackers are locked once.
            return e.acknowledge_many(&self.h.targets(message)?).py_err();
        }
        // One message or id: the per-message hot path, no allocation.
        let Target::Message(s, id) = self.h.target(message)?;
        e.acknowledge(s, id).py_err()
    }

    /// Acknowledge this message and every earlier one (not on shared subscriptions).
    ///
    /// Args:
    ///     message: a `Message` or a `MessageId`.
    ///     txn: a `Transaction`: the ack is sent at once, waited for, and takes effect
    ///         when the transaction commits. Default None.
    #[pyo3(signature = (message, *, txn=None))]
    fn acknowledge_cumulative(
        &self,
        py: Python<'_>,
        message: &Bound<'_, PyAny>,
        txn: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let e = self.h.live("consumer")?;
        let Target::Message(s, id) = self.h.target(message)?;
        if let Some(t) = txn_arg(txn)? {
            let e = e.clone();
            return self.h.block(py, "acknowledge in transaction", async move {
                e.acknowledge_in_txn(&[(s, id)], true, &t).await
            });
        }
        e.acknowledge_cumulative(s, id).py_err()
    }

    /// Have the message redelivered after `negative_ack_redelivery_delay`.
    ///
    /// Args:
    ///     message: a `Message`, a `MessageId`, or a list/tuple of them.
    fn negative_acknowledge(&self, message: &Bound<'_, PyAny>) -> PyResult<()> {
        let e = self.h.live("consumer")?;
        for (s, id) in self.h.targets(message)? {
            e.negative_acknowledge(s, id).py_err()?;
        }
        Ok(())
    }

    /// Local counters; with `broker=True` also the broker's CONSUMER_STATS per partition.
    ///
    /// Args:
    ///     broker: also ask the broker (under the `"broker"` key, one dict per partition).
    ///         Default False.
    #[pyo3(signature = (broker=false))]
    fn stats<'py>(&self, py: Python<'py>, broker: bool) -> PyResult<Bound<'py, PyDict>> {
        self.h.stats(py, "consumer", broker)
    }

    /// Stop calling the message listener: messages stay queued (once the receiver queue is
    /// full the broker stops sending) until `resume_message_listener`. A call running now
    /// finishes.
    ///
    /// Raises:
    ///     ConfigError: the consumer has no `message_listener`.
    fn pause_message_listener(&self) -> PyResult<()> {
        self.h
            .listening_for("consumer", "pause_message_listener")?
            .pause(true);
        Ok(())
    }

    /// Call the message listener again, from the first message not yet handed to it.
    ///
    /// Raises:
    ///     ConfigError: the consumer has no `message_listener`.
    fn resume_message_listener(&self) -> PyResult<()> {
        self.h
            .listening_for("consumer", "resume_message_listener")?
            .pause(false);
        Ok(())
    }

    /// The subscription's name.
    #[getter]
    fn subscription_name(&self) -> &str {
        self.h.engine.subscription()
    }

    /// The consumer's name: the one given to `subscribe`, else a random one.
    #[getter]
    fn consumer_name(&self) -> Option<String> {
        self.h.engine.config().consumer_name.clone()
    }
}

crate::two_faces! {
    impl Consumer {
        /// Redeliver every message received but not acknowledged.
        fn redeliver_unacknowledged_messages / _aredeliver_unacknowledged_messages (
            &self,
            py,
        ) -> () as none {
            let e = self.h.live("consumer")?.clone();
            self.h.op("redeliver", async move { e.redeliver_unacknowledged().await })
        }

        /// Move the subscription to a MessageId or to a publish time (int, ms since the epoch).
        ///
        /// Args:
        ///     target: a `MessageId`, a `Message`, or a publish time in milliseconds since the
        ///         epoch.
        fn seek / _aseek (&self, py, target: &Bound<'_, PyAny>) -> () as none {
            self.h.seek("consumer", target)?
        }

        /// Hand `message` back for later: a copy goes to the retry-letter topic, delivered
        /// after `delay`, and `message` is acknowledged once the copy is written (as the Java
        /// client's `reconsumeLater`). After `dead_letter_policy`'s `max_redeliver_count`
        /// rounds (16 by default) the copy goes to the dead-letter topic instead. Needs
        /// `retry_enable=True` at `subscribe` (and a shared subscription for the delay to hold).
        ///
        /// Args:
        ///     message: a `Message` this consumer received.
        ///     delay: seconds (a number) or a `datetime.timedelta`. Default 0: at once.
        ///     properties: extra properties for the copy. Default None.
        ///
        /// Raises:
        ///     ConfigError: the consumer was not subscribed with `retry_enable=True`.
        ///     InvalidArgumentError: a negative delay.
        ///     TypeError: `message` is not a `Message`.
        #[pyo3(signature = (message, delay=DeliverAfter(0.0), properties=None))]
        fn reconsume_later / _areconsume_later (
            &self,
            py,
            message: &Bound<'_, PyAny>,
            delay: DeliverAfter,
            properties: Option<std::collections::HashMap<String, String>>,
        ) -> () as none {
            let e = self.h.live("consumer")?.clone();
            let m = message
                .cast::<Message>()
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "reconsume_later takes a Message, got {}",
                        message.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                    ))
                })?
                .get()
                .m
                .clone();
            if !(delay.0.is_finite() && delay.0 >= 0.0) {
                return Err(to_py(Error::invalid(format!(
                    "delay must be a non-negative number of seconds, got {}",
                    delay.0
                ))));
            }
            let delay = Duration::from_secs_f64(delay.0);
            let slot = e.slot_finder().slot_of(&m);
            let extra: Vec<(String, String)> = properties.unwrap_or_default().into_iter().collect();
            self.h.op("reconsume later", async move {
                e.reconsume_later(slot, &m, delay, extra).await
            })
        }

        /// Delete the subscription and close the consumer.
        fn unsubscribe / _aunsubscribe (&self, py) -> () as none {
            let e = self.h.live("consumer")?.clone();
            self.h.op("unsubscribe", async move { e.unsubscribe().await })
        }

        /// The id of the last message of the topic (one partition; else see
        /// get_last_message_ids).
        fn get_last_message_id / _aget_last_message_id (&self, py) -> PyMessageId {
            self.h.last_id("consumer")?
        }

        /// The id of the last message of every partition / topic.
        fn get_last_message_ids / _aget_last_message_ids (&self, py) -> Vec<PyMessageId> {
            self.h.last_ids("consumer")?
        }
    }
}

/// A reader: reads a topic from a position without a durable subscription. Made by
/// `Client.create_reader`; iterating yields messages until the end of a terminated topic.
#[pyclass(frozen, module = "streamwire._native")]
pub struct Reader {
    pub(crate) h: Handle,
}

crate::two_faces! {
    impl Reader {
        /// Whether there are messages after the last one read (asks the broker).
        fn has_message_available / _ahas_message_available (&self, py) -> bool {
            let e = self.h.live("reader")?.clone();
            self.h.op("has_message_available", async move { e.has_message_available().await })
        }

        /// Move to a MessageId (the next message read is that one).
        ///
        /// Args:
        ///     target: a `MessageId`, a `Message`, or a publish time in milliseconds since the
        ///         epoch.
        fn seek / _aseek (&self, py, target: &Bound<'_, PyAny>) -> () as none {
            self.h.seek("reader", target)?
        }

        /// The id of the last message of the topic (asks the broker).
        fn get_last_message_id / _aget_last_message_id (&self, py) -> PyMessageId {
            self.h.last_id("reader")?
        }
    }
}
