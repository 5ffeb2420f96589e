//! The awaitable TANK consumer (`streamwire.aio.tank.Consumer`'s native half), and why a
//! cancelled receive loses nothing.
//!
//! Messages never travel inside a future's value (a value set on a cancelled future would
//! be dropped). An engine task waits for messages and moves them into this consumer's
//! `held` queue, then resolves its future with None; the coroutine, woken, takes what it
//! asked for from `held` (`_take`), on the loop's thread, with no await in between. When the
//! receive was cancelled meanwhile, the messages simply stay in `held`, first in line for
//! the next receive. Receives are serialised by one async lock, and a task that finds
//! messages already held returns at once, so a waiting receive is never stuck behind
//! messages that a cancelled one left. The engine's `receive_many` takes nothing unless it
//! returns, so aborting the task of a cancelled receive loses nothing either.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use streamwire_core::error::Error;
use streamwire_tank::consumer::{Consumer, TankMessage};

use crate::common::aio::{self, Value};
use crate::common::arrow::column_list;
use crate::common::blocking::timeout_arg;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::pickle::refuse_pickle;
use crate::common::untracked::untracked_list;
use crate::tank::client::{consumer_config, TankNativeClient};
use crate::tank::consumer::max_arg;
use crate::tank::message::{to_record_batch, TankMessageObj, ARROW_COLUMNS};

/// Messages the engine handed out and no coroutine has taken yet, oldest first.
type Held = Arc<Mutex<VecDeque<TankMessage>>>;

fn take_held(held: &Held, max: usize) -> Vec<TankMessage> {
    let mut q = held.lock().unwrap_or_else(|p| p.into_inner());
    let n = max.min(q.len());
    q.drain(..n).collect()
}

/// Reads one TANK topic from coroutines. Made by `streamwire.aio.tank.Client`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct TankAioConsumer {
    inner: Consumer,
    pid: u32,
    held: Held,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl TankAioConsumer {
    fn live(&self, py: Python<'_>) -> PyResult<()> {
        aio::check_same_process(py, self.pid, "TANK consumer")?;
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("TANK consumer")));
        }
        Ok(())
    }

    fn wrap(&self, m: TankMessage) -> TankMessageObj {
        TankMessageObj {
            m,
            topic: self.inner.topic().clone(),
        }
    }
}

#[pymethods]
impl TankAioConsumer {
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

    /// Messages read ahead (and handed back by cancelled receives) not yet taken.
    #[getter]
    fn queued(&self) -> usize {
        self.inner.queued() + self.held.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

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
        self.live(py)?;
        let max = max_arg(max_messages)?;
        column_list(&ARROW_COLUMNS, columns.as_deref())?;
        let t = timeout_arg("timeout", timeout).py_err()?;
        if !self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
        {
            return aio::ready(py, py.None().into_bound(py));
        }
        let deadline = t.map(|t| Instant::now() + t);
        let (c, held, turn) = (self.inner.clone(), self.held.clone(), self.turn.clone());
        let (pyfut, target) = aio::new_future(py)?;
        let handle = streamwire_core::runtime::handle().map_err(to_py)?;
        let task = handle.spawn(async move {
            let _turn = turn.lock().await;
            let res = if held.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
                c.receive_many(max, deadline).await.map(|msgs| {
                    // No await after this point: the messages reach `held` whatever happens.
                    held.lock().unwrap_or_else(|p| p.into_inner()).extend(msgs);
                })
            } else {
                Ok(())
            };
            aio::complete(target, res.map(|()| Value::None));
        });
        aio::abort_on_cancel(&pyfut, task.abort_handle())?;
        Ok(pyfut)
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

    /// Continue `partition` from `seq`; messages of it already held are dropped.
    fn seek(&self, py: Python<'_>, partition: i64, seq: i64) -> PyResult<()> {
        self.live(py)?;
        let seq = u64::try_from(seq).map_err(|_| {
            to_py(Error::invalid(format!(
                "seq must be a non-negative sequence number, got {seq}"
            )))
        })?;
        let p = u16::try_from(partition).map_err(|_| {
            to_py(Error::new(
                streamwire_core::error::ErrorKind::PartitionNotFound,
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

    /// `{partition: next seq}` not yet taken by a coroutine (held messages count as not
    /// taken): what to persist and pass back as `start=` to resume.
    fn positions(&self, py: Python<'_>) -> PyResult<BTreeMap<u16, u64>> {
        aio::check_same_process(py, self.pid, "TANK consumer")?;
        let mut pos = self.inner.positions();
        for m in self.held.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let e = pos.entry(m.partition).or_insert(m.seq);
            *e = (*e).min(m.seq);
        }
        Ok(pos)
    }

    /// Stop reading; held and read-ahead messages are dropped. Idempotent.
    fn close(&self) {
        self.inner.close();
        self.held.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Whether the consumer is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "TANK Consumer",
            "persist consumer.positions() and create a consumer with start=positions \
             inside the worker",
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.aio.tank.Consumer topic={:?} partitions={:?}>",
            &**self.inner.topic(),
            self.inner.partitions()
        )
    }
}

#[pymethods]
impl TankNativeClient {
    /// `create_consumer` as an awaitable: the same options, checked the same way.
    #[pyo3(signature = (topic, *, partitions=None, start=None, max_wait=1.0, min_bytes=0,
                        fetch_size=1_048_576, max_fetch_size=67_108_864,
                        queue_bytes=33_554_432, on_out_of_range="error"))]
    #[allow(clippy::too_many_arguments)]
    fn _acreate_consumer<'py>(
        &self,
        py: Python<'py>,
        topic: &str,
        partitions: Option<Vec<i64>>,
        start: Option<&Bound<'py, PyAny>>,
        max_wait: f64,
        min_bytes: i64,
        fetch_size: i64,
        max_fetch_size: i64,
        queue_bytes: i64,
        on_out_of_range: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (partitions, start, config) = consumer_config(
            topic,
            partitions,
            start,
            max_wait,
            min_bytes,
            fetch_size,
            max_fetch_size,
            queue_bytes,
            on_out_of_range,
        )?;
        let c = self.live()?.clone();
        let (t, pid) = (topic.to_string(), self.pid);
        let open = async move {
            let consumer = Consumer::create(&c, &t, partitions, start, config).await?;
            Ok((consumer, pid))
        };
        let timeout: Option<Duration> = Some(self.timeout());
        let (fut, _) = aio::spawn(py, "create consumer", timeout, open, |(inner, pid)| {
            Value::Build(Box::new(move |py| {
                let c = TankAioConsumer {
                    inner,
                    pid,
                    held: Held::default(),
                    turn: Arc::default(),
                };
                Ok(Py::new(py, c)?.into_any())
            }))
        })?;
        Ok(fut)
    }
}
