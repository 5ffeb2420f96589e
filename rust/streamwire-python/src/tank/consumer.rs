//! `streamwire.tank.Consumer` and `streamwire.aio.tank.Consumer`'s native half: one class,
//! per-message, bulk and Arrow reads on either face, positions and seeks; and why a cancelled
//! or interrupted receive loses nothing.
//!
//! Messages never travel inside a future's value (a value set on a cancelled future would
//! be dropped, a blocking wait cut short by Ctrl-C would drop its result). An engine task
//! (`fill`) waits for messages and moves them into this consumer's `held` queue, then
//! finishes; the caller takes what it asked for from `held` (`take_held`) - the blocking face
//! right after its wait, the awaitable face (`_take`) on the loop's thread when its future
//! resolved, with no await in between. When the receive was cancelled or interrupted
//! meanwhile, the messages simply stay in `held`, first in line for the next receive of
//! either face. Fills are serialised by one async lock, and a fill that finds messages
//! already held returns at once, so a waiting receive is never stuck behind messages that a
//! cancelled one left. The engine's `receive_many` takes nothing unless it returns, so
//! aborting a fill loses nothing either.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyList;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::runtime;
use streamwire_tank::consumer::{Consumer, TankMessage};

use crate::common::aio::{self, Value};
use crate::common::arrow::column_list;
use crate::common::blocking::{timeout_arg, wait};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::untracked::untracked_list;
use crate::tank::message::{to_record_batch, TankMessageObj, ARROW_COLUMNS};

const PICKLE_HINT: &str = "persist consumer.positions() and create a consumer with \
    start=positions inside the worker";

/// Messages the engine handed out and no caller has taken yet, oldest first.
type Held = Arc<Mutex<VecDeque<TankMessage>>>;

fn take_held(held: &Held, max: usize) -> Vec<TankMessage> {
    let mut q = held.lock().unwrap_or_else(|p| p.into_inner());
    let n = max.min(q.len());
    q.drain(..n).collect()
}

fn is_empty(held: &Held) -> bool {
    held.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
}

/// Wait (in turn) until messages are held or `deadline` passes: the one engine side of every
/// receive, blocking or awaited.
async fn fill(
    c: Consumer,
    held: Held,
    turn: Arc<tokio::sync::Mutex<()>>,
    max: usize,
    deadline: Option<Instant>,
) -> Result<()> {
    let _turn = turn.lock().await;
    if is_empty(&held) {
        let msgs = c.receive_many(max, deadline).await?;
        // No await after this point: the messages reach `held` whatever happens.
        held.lock().unwrap_or_else(|p| p.into_inner()).extend(msgs);
    }
    Ok(())
}

pub(crate) fn max_arg(max_messages: i64) -> PyResult<usize> {
    if max_messages < 1 {
        return Err(to_py(Error::invalid(format!(
            "max_messages must be at least 1, got {max_messages}"
        ))));
    }
    Ok(usize::try_from(max_messages).unwrap_or(usize::MAX))
}

/// Reads one TANK topic. Thread-safe. Made by `streamwire.tank.Client.create_consumer`
/// (blocking face; iterating yields messages as they arrive) or
/// `streamwire.aio.tank.Client.create_consumer` (the `_a` methods).
#[pyclass(frozen, module = "streamwire._native")]
pub struct TankConsumer {
    inner: Consumer,
    pid: u32,
    held: Held,
    turn: Arc<tokio::sync::Mutex<()>>,
}

crate::live_handle!(TankConsumer, "TANK Consumer", PICKLE_HINT, close_now);

impl TankConsumer {
    pub fn new(inner: Consumer, pid: u32) -> Self {
        TankConsumer {
            inner,
            pid,
            held: Held::default(),
            turn: Arc::default(),
        }
    }

    fn check_open(&self) -> PyResult<()> {
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("TANK consumer")));
        }
        Ok(())
    }

    /// The blocking face's receive: up to `max` messages, waiting (interpreter released) for
    /// the first at most `timeout` seconds; an empty list then.
    fn take(
        &self,
        py: Python<'_>,
        max: usize,
        timeout: Option<f64>,
        what: &str,
    ) -> PyResult<Vec<TankMessage>> {
        runtime::check_same_process(self.pid, "TANK consumer").py_err()?;
        self.check_open()?;
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let got = take_held(&self.held, max);
            // Another thread may take what this fill held: then wait again, until the deadline.
            if !got.is_empty() || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(got);
            }
            let (c, held, turn) = (self.inner.clone(), self.held.clone(), self.turn.clone());
            wait(py, what, None, fill(c, held, turn, max, deadline))?;
        }
    }

    fn wrap(&self, m: TankMessage) -> TankMessageObj {
        TankMessageObj {
            m,
            topic: self.inner.topic().clone(),
        }
    }
}

#[pymethods]
impl TankConsumer {
    /// This consumer's metrics; see README "Metrics" for the keys.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        runtime::check_same_process(self.pid, "TANK consumer").py_err()?;
        self.check_open()?;
        crate::common::metrics::snapshot_dict(py, &self.inner.metrics().snapshot())
    }

    /// The topic this consumer reads.
    #[getter]
    fn topic(&self) -> &str {
        self.inner.topic()
    }

    /// The partitions this consumer reads.
    #[getter]
    fn partitions(&self) -> Vec<u16> {
        self.inner.partitions().to_vec()
    }

    /// The next message; raises `OperationTimeoutError` when `timeout` passes first.
    ///
    /// Args:
    ///     timeout: seconds to wait at most; None waits forever. Default None.
    #[pyo3(signature = (timeout=None))]
    fn receive(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<TankMessageObj> {
        match self.take(py, 1, timeout, "receive")?.pop() {
            Some(m) => Ok(self.wrap(m)),
            None => Err(to_py(Error::new(
                ErrorKind::Timeout,
                "no message arrived before the timeout",
            ))),
        }
    }

    /// Up to `max_messages` messages: waits for the first (at most `timeout`; then an empty
    /// list), and takes what else is already there.
    ///
    /// Args:
    ///     max_messages: the most messages to return. Default 1000.
    ///     timeout: seconds to wait for the first message; None waits forever. Default None.
    #[pyo3(signature = (max_messages=1000, timeout=None))]
    fn receive_many<'py>(
        &self,
        py: Python<'py>,
        max_messages: i64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let got = self.take(py, max_arg(max_messages)?, timeout, "receive_many")?;
        untracked_list(py, got.into_iter().map(|m| self.wrap(m)))
    }

    /// Like `receive_many`, as a `pyarrow.RecordBatch` with the named `columns` (default:
    /// value, key, timestamp, topic, partition, seq).
    ///
    /// Args:
    ///     max_messages: the most messages (rows) to return. Default 10,000.
    ///     timeout: seconds to wait for the first message (then an empty batch); None waits
    ///         forever. Default None.
    ///     columns: the column names wanted, in order. Default None: all.
    #[pyo3(signature = (max_messages=10_000, timeout=None, columns=None))]
    fn receive_arrow<'py>(
        &self,
        py: Python<'py>,
        max_messages: i64,
        timeout: Option<f64>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let names = column_list(&ARROW_COLUMNS, columns.as_deref())?;
        let max = max_arg(max_messages)?;
        let got = self.take(py, max, timeout, "receive_arrow")?;
        to_record_batch(py, self.inner.topic(), &got, &names)
    }

    /// Continue `partition` from `seq` (0 = its first available message); messages of it
    /// read ahead or held are dropped.
    ///
    /// Args:
    ///     partition: one of this consumer's partitions.
    ///     seq: the sequence number of the next message to read.
    fn seek(&self, partition: i64, seq: i64) -> PyResult<()> {
        runtime::check_same_process(self.pid, "TANK consumer").py_err()?;
        self.check_open()?;
        let seq = u64::try_from(seq).map_err(|_| {
            to_py(Error::invalid(format!(
                "seq must be a non-negative sequence number, got {seq}"
            )))
        })?;
        let p = u16::try_from(partition).map_err(|_| {
            to_py(Error::new(
                ErrorKind::PartitionNotFound,
                format!("partition must be from 0 to 65535, got {partition}"),
            ))
        })?;
        self.inner.seek(p, seq).py_err()?;
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|m| m.partition != p);
        Ok(())
    }

    /// `{partition: next seq}` not yet taken (held messages count as not taken): what to
    /// persist and pass back as `start=` to resume.
    fn positions(&self) -> PyResult<BTreeMap<u16, u64>> {
        runtime::check_same_process(self.pid, "TANK consumer").py_err()?;
        let mut pos = self.inner.positions();
        for m in self.held.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let e = pos.entry(m.partition).or_insert(m.seq);
            *e = (*e).min(m.seq);
        }
        Ok(pos)
    }

    /// Messages read ahead (or left by a cancelled receive) and not yet taken.
    #[getter]
    fn queued(&self) -> usize {
        self.inner.queued() + self.held.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether the consumer is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Stop reading; messages read ahead are dropped, later calls raise `AlreadyClosedError`.
    /// Idempotent.
    fn close(&self) {
        self.inner.close();
        self.held.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<TankMessageObj>> {
        if self.inner.is_closed() {
            return Ok(None);
        }
        match self.take(py, 1, None, "receive") {
            Ok(mut v) => Ok(v.pop().map(|m| self.wrap(m))),
            Err(e) if self.inner.is_closed() => {
                drop(e);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.tank.Consumer topic={:?} partitions={:?}>",
            &**self.inner.topic(),
            self.inner.partitions()
        )
    }
}

// The awaitable face: `streamwire.aio.tank.Consumer` awaits `_await_messages`, then takes
// with `_take` at once (the same `fill` and `held` as the blocking `take`).
#[pymethods]
impl TankConsumer {
    /// Wait until messages are held for `_take` (or `timeout` seconds pass): a future that
    /// resolves to None either way. `max_messages` and `columns` are checked here, at the
    /// call, as the blocking calls check them.
    #[pyo3(signature = (max_messages, timeout=None, columns=None))]
    fn _await_messages<'py>(
        &self,
        py: Python<'py>,
        max_messages: i64,
        timeout: Option<f64>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        aio::check_same_process(py, self.pid, "TANK consumer")?;
        self.check_open()?;
        let max = max_arg(max_messages)?;
        column_list(&ARROW_COLUMNS, columns.as_deref())?;
        let t = timeout_arg("timeout", timeout).py_err()?;
        if !is_empty(&self.held) {
            return aio::ready(py, py.None().into_bound(py));
        }
        let deadline = t.map(|t| Instant::now() + t);
        let (c, held, turn) = (self.inner.clone(), self.held.clone(), self.turn.clone());
        let (fut, task) = aio::spawn(
            py,
            "receive",
            None,
            fill(c, held, turn, max, deadline),
            |()| Value::None,
        )?;
        aio::abort_on_cancel(&fut, task)?;
        Ok(fut)
    }

    /// Take held messages now: `kind` 0 one message (or None), 1 a list, 2 a RecordBatch.
    #[pyo3(signature = (kind, max_messages, columns=None))]
    fn _take(
        &self,
        py: Python<'_>,
        kind: u8,
        max_messages: i64,
        columns: Option<Vec<String>>,
    ) -> PyResult<Py<PyAny>> {
        let max = if kind == 0 { 1 } else { max_arg(max_messages)? };
        let names = column_list(&ARROW_COLUMNS, columns.as_deref())?;
        let got = take_held(&self.held, max);
        Ok(match kind {
            0 => match got.into_iter().next() {
                Some(m) => Py::new(py, self.wrap(m))?.into_any(),
                None => py.None(),
            },
            1 => untracked_list(py, got.into_iter().map(|m| self.wrap(m)))?
                .into_any()
                .unbind(),
            _ => to_record_batch(py, self.inner.topic(), &got, &names)?.unbind(),
        })
    }
}
