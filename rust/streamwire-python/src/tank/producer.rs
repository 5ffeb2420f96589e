//! `streamwire.tank.Producer`: blocking, future-returning and bulk sends.
//!
//! `send_async` futures are completed by the engine directly (a mutex and condvar per
//! future, no task per message); `send_many` takes a list or a pyarrow array and crosses the
//! interpreter once for the whole call.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::runtime;
use streamwire_tank::producer::{Completion, Done, Dones, Group, Outgoing, Pending, Producer};

use crate::common::blocking::{timeout_arg, wait};
use crate::common::columns::{payload_of, payloads};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::pickle::refuse_pickle;

const PICKLE_HINT: &str = "create the producer inside the worker process";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn key_arg(key: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Bytes>> {
    let Some(k) = key else { return Ok(None) };
    if k.is_none() {
        return Ok(None);
    }
    let b = payload_of(k).map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "key must be bytes or str, not {}",
            k.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    check_key(&b)?;
    Ok(Some(b))
}

fn check_key(b: &[u8]) -> PyResult<()> {
    if b.len() > 255 {
        return Err(to_py(Error::invalid(format!(
            "a TANK key is at most 255 bytes, got {}",
            b.len()
        ))));
    }
    Ok(())
}

fn partition_arg(p: Option<i64>) -> PyResult<Option<u16>> {
    p.map(|v| {
        u16::try_from(v).map_err(|_| {
            to_py(Error::new(
                ErrorKind::PartitionNotFound,
                format!("partition must be from 0 to 65535, got {v}"),
            ))
        })
    })
    .transpose()
}

fn ts_arg(ts: Option<i64>) -> PyResult<u64> {
    match ts {
        None => Ok(now_ms()),
        Some(t) if t >= 0 => Ok(t as u64),
        Some(t) => Err(to_py(Error::invalid(format!(
            "timestamp must be milliseconds since the epoch (>= 0), got {t}"
        )))),
    }
}

/// Filled once by the engine; waited on by Python.
#[derive(Default)]
struct FutureState {
    result: Mutex<Option<Result<()>>>,
    ready: Condvar,
}

impl Completion for FutureState {
    fn complete(&self, result: Result<()>) {
        *self.result.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        self.ready.notify_all();
    }
}

/// The outcome of `send_async`: `result()` waits for the broker's acknowledgement.
#[pyclass(frozen, module = "streamwire._native")]
pub struct TankSendFuture {
    state: Arc<FutureState>,
}

#[pymethods]
impl TankSendFuture {
    /// Whether the outcome is known (never waits).
    fn done(&self) -> bool {
        self.state
            .result
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Wait until the message is acknowledged (returns None) or raise its error.
    ///
    /// Args:
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError`.
    ///         Default None.
    #[pyo3(signature = (timeout=None))]
    fn result(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let st = Arc::clone(&self.state);
            let got = py.detach(move || {
                let guard = st.result.lock().unwrap_or_else(|p| p.into_inner());
                let (guard, _) = st
                    .ready
                    .wait_timeout_while(guard, Duration::from_millis(200), |r| r.is_none())
                    .unwrap_or_else(|p| p.into_inner());
                guard.clone()
            });
            if let Some(r) = got {
                return r.py_err();
            }
            py.check_signals()?;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(to_py(Error::timeout("waiting for the send result")));
            }
        }
    }

    /// The error the send failed with, or None once it succeeded (waits like `result`).
    ///
    /// Args:
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError` is
    ///         raised. Default None.
    #[pyo3(signature = (timeout=None))]
    fn exception(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Py<PyAny>>> {
        match self.result(py, timeout) {
            Ok(()) => Ok(None),
            Err(e) if !self.done() => Err(e),
            Err(e) => Ok(Some(e.into_value(py).into_any())),
        }
    }

    fn __repr__(&self) -> String {
        let done = if self.done() { "True" } else { "False" };
        format!("<streamwire.tank.SendFuture done={done}>")
    }
}

/// Produces to one TANK topic. Thread-safe. Made by `streamwire.tank.Client.create_producer`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct TankProducer {
    inner: Producer,
    pid: u32,
    block_if_queue_full: bool,
    timeout: Duration,
}

impl TankProducer {
    pub fn new(inner: Producer, pid: u32, block_if_queue_full: bool, timeout: Duration) -> Self {
        TankProducer {
            inner,
            pid,
            block_if_queue_full,
            timeout,
        }
    }

    fn live(&self) -> PyResult<Producer> {
        runtime::check_same_process(self.pid, "TANK producer").py_err()?;
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("TANK producer")));
        }
        Ok(self.inner.clone())
    }

    /// Reserve `bytes` of the client's budget: waiting (interpreter released) or raising
    /// `ProducerQueueFullError`, as configured.
    fn reserve(&self, py: Python<'_>, bytes: u64) -> PyResult<Reservation> {
        let budget = self.inner.budget().clone();
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
            Ok(r) => Ok(r),
            Err(full) if !self.block_if_queue_full => Err(to_py(Error::new(
                ErrorKind::QueueFull,
                format!(
                    "the client's memory budget is full ({} of {} bytes used)",
                    full.used, full.limit
                ),
            ))),
            Err(_) => wait(py, "waiting for producer memory", None, async move {
                Ok(budget.reserve(bytes).await)
            }),
        }
    }

    fn one(
        &self,
        value: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        partition: Option<i64>,
        timestamp: Option<i64>,
    ) -> PyResult<Outgoing> {
        outgoing(value, key, partition, timestamp)
    }
}

#[pymethods]
impl TankProducer {
    /// This producer's metrics; see README "Metrics" for the keys.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let p = self.live()?;
        crate::common::metrics::snapshot_dict(py, &p.metrics().snapshot())
    }

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

    fn __len__(&self) -> usize {
        self.inner.pending()
    }

    /// Send one message and wait for the broker's acknowledgement.
    ///
    /// Args:
    ///     value: the payload (bytes-like, or str sent as UTF-8).
    ///     key: bytes or str; routes the message to `fnv1a_32(key) % partitions` unless
    ///         `partition` is given. Default None: round-robin.
    ///     partition: send to this partition. Default None.
    ///     timestamp: milliseconds since the epoch. Default None: now.
    ///     timeout: seconds to wait for the acknowledgement (None: no limit, the producer's
    ///         `send_timeout` still applies). Default None.
    ///
    /// Raises:
    ///     PartitionNotFoundError: `partition` is out of range.
    ///     ProducerQueueFullError: the client's memory budget is full and the producer was
    ///         made with `block_if_queue_full=False`.
    #[pyo3(signature = (value, key=None, *, partition=None, timestamp=None, timeout=None))]
    fn send(
        &self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        partition: Option<i64>,
        timestamp: Option<i64>,
        timeout: Option<f64>,
    ) -> PyResult<()> {
        let p = self.live()?;
        let msg = self.one(value, key, partition, timestamp)?;
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let reservation = self.reserve(py, msg.msg.size() as u64)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let prepared = p
            .prepare(
                vec![msg],
                Dones::Each(vec![Done::One(tx)]),
                Some(reservation),
            )
            .py_err()?;
        wait(py, "send", timeout, async move {
            p.submit(prepared).await?;
            rx.await
                .unwrap_or_else(|_| Err(Error::closed("TANK producer")))
        })
    }

    /// Hand one message over and return a future of its acknowledgement.
    ///
    /// Args:
    ///     value, key, partition, timestamp: as for `send`.
    #[pyo3(signature = (value, key=None, *, partition=None, timestamp=None))]
    fn send_async(
        &self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        key: Option<&Bound<'_, PyAny>>,
        partition: Option<i64>,
        timestamp: Option<i64>,
    ) -> PyResult<TankSendFuture> {
        let p = self.live()?;
        let msg = self.one(value, key, partition, timestamp)?;
        let reservation = self.reserve(py, msg.msg.size() as u64)?;
        let state = Arc::new(FutureState::default());
        let dones = Dones::Each(vec![Done::Notify(state.clone())]);
        let prepared = p.prepare(vec![msg], dones, Some(reservation)).py_err()?;
        // The common case hands the message over without waiting; a full queue waits with
        // the interpreter released.
        if let Some(prepared) = p.try_submit(prepared).py_err()? {
            wait(py, "send_async", Some(self.timeout), async move {
                p.submit(prepared).await
            })?;
        }
        Ok(TankSendFuture { state })
    }

    /// Send many messages (a list of bytes/str or a pyarrow binary/string array) and wait
    /// until all are acknowledged. `keys` and `timestamps` are per message (None entries
    /// allowed); `partition` sends them all to one partition. Returns the count.
    ///
    /// Args:
    ///     values: the payloads.
    ///     keys: one key (bytes, str or None) per value. Default None.
    ///     timestamps: one time in milliseconds since the epoch (or None: now) per value.
    ///         Default None.
    ///     partition: send every message to this partition. Default None.
    ///     timeout: seconds to wait for the acknowledgements (None: no limit). Default None.
    #[pyo3(signature = (values, *, keys=None, timestamps=None, partition=None, timeout=None))]
    fn send_many(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
        keys: Option<&Bound<'_, PyAny>>,
        timestamps: Option<&Bound<'_, PyAny>>,
        partition: Option<i64>,
        timeout: Option<f64>,
    ) -> PyResult<usize> {
        let p = self.live()?;
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let (msgs, bytes) = many_outgoing(values, keys, timestamps, partition)?;
        let n = msgs.len();
        let reservation = self.reserve(py, bytes)?;
        let (group, rx) = Group::new(n);
        let prepared = p
            .prepare(msgs, Dones::Group(group), Some(reservation))
            .py_err()?;
        wait(py, "send_many", timeout, async move {
            p.submit(prepared).await?;
            rx.await
                .unwrap_or_else(|_| Err(Error::closed("TANK producer")))
        })?;
        Ok(n)
    }

    /// Send what is gathered and wait for every earlier message's acknowledgement; raises
    /// the first failure since the last flush.
    ///
    /// Args:
    ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError`.
    ///         Default None.
    #[pyo3(signature = (timeout=None))]
    fn flush(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let p = self.live()?;
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        wait(py, "flush", timeout, async move { p.flush().await })
    }

    /// Flush, then close; later sends raise `AlreadyClosedError`. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if runtime::check_same_process(self.pid, "TANK producer").is_err() || self.inner.is_closed()
        {
            return Ok(());
        }
        let p = self.inner.clone();
        wait(py, "close", None, async move { p.close().await })
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle("TANK Producer", PICKLE_HINT))
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.tank.Producer topic={:?} partitions={} pending={}>",
            self.inner.topic(),
            self.inner.partitions(),
            self.inner.pending()
        )
    }
}

/// One checked message of `send`'s arguments (shared with the awaitable send).
pub(crate) fn outgoing(
    value: &Bound<'_, PyAny>,
    key: Option<&Bound<'_, PyAny>>,
    partition: Option<i64>,
    timestamp: Option<i64>,
) -> PyResult<Outgoing> {
    Ok(Outgoing {
        partition: partition_arg(partition)?,
        msg: Pending {
            key: key_arg(key)?,
            ts: ts_arg(timestamp)?,
            value: payload_of(value)?,
        },
    })
}

/// The checked messages of `send_many`'s arguments and their payload bytes (shared with the
/// awaitable send_many).
pub(crate) fn many_outgoing(
    values: &Bound<'_, PyAny>,
    keys: Option<&Bound<'_, PyAny>>,
    timestamps: Option<&Bound<'_, PyAny>>,
    partition: Option<i64>,
) -> PyResult<(Vec<Outgoing>, u64)> {
    let partition = partition_arg(partition)?;
    let vals = payloads(values)?;
    let n = vals.len();
    let keys = match keys {
        Some(k) => {
            let ks = payloads(k)?;
            if ks.len() != n {
                return Err(to_py(Error::invalid(format!(
                    "keys has {} entries for {n} values",
                    ks.len()
                ))));
            }
            for (k, _) in &ks {
                check_key(k)?;
            }
            Some(ks)
        }
        None => None,
    };
    let ts = crate::common::columns::opt_u64s(timestamps, n, "timestamps")?;
    let now = now_ms();
    let mut msgs = Vec::with_capacity(n);
    let mut bytes = 0u64;
    for (i, (value, null)) in vals.into_iter().enumerate() {
        if null {
            return Err(to_py(Error::invalid(format!(
                "values[{i}] is None: TANK messages always have a value"
            ))));
        }
        let key = keys
            .as_ref()
            .and_then(|k| (!k[i].1).then(|| k[i].0.clone()));
        let msg = Pending {
            key,
            ts: ts.as_ref().and_then(|t| t[i]).unwrap_or(now),
            value,
        };
        bytes += msg.size() as u64;
        msgs.push(Outgoing { partition, msg });
    }
    Ok((msgs, bytes))
}
