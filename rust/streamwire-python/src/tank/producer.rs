//! `streamwire.tank.Producer` and `streamwire.aio.tank.Producer`'s native half: one class,
//! blocking, future-returning, bulk and awaited sends.
//!
//! `send_async` futures are completed by the engine directly (a mutex and condvar per
//! future, no task per message); `send_many` takes a list or a pyarrow array and crosses the
//! interpreter once for the whole call. Awaited sends (`_asend`, `_asend_many`) share every
//! check with them and go through the in-order lane of `common::lane` (this file says how a
//! TANK producer takes a payload: `impl Sink for Producer`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;

use streamwire_core::budget::{MemoryBudget, Reservation};
use streamwire_core::error::{Error, Result};
use streamwire_core::runtime;
use streamwire_tank::producer::{Done, Dones, Group, Outgoing, Prepared, Producer};

use crate::common::aio;
use crate::common::blocking::{timeout_arg, wait};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::common::lane::{Lane, Sink};
use crate::common::reserve::try_reserve;
use crate::common::write_future::FutureState;
use crate::tank::outgoing::{many_outgoing, outgoing};

const PICKLE_HINT: &str = "create the producer inside the worker process";

crate::write_future! {
    /// The outcome of `send_async`: `result()` waits for the broker's acknowledgement.
    TankSendFuture,
    "streamwire.tank.SendFuture",
    "send",
    "Wait until the message is acknowledged (returns None) or raise its error.",
    "The error the send failed with, or None once it succeeded (waits like `result`)."
}

/// The lane's view of a TANK producer: a payload is the checked messages of one call,
/// routed and handed to the producer's task.
impl Sink for Producer {
    type Payload = Vec<Outgoing>;
    type Rejected = Prepared;
    const NAME: &'static str = "TANK producer";

    fn memory(&self) -> &MemoryBudget {
        self.budget()
    }

    fn try_hand_over(
        &self,
        msgs: Vec<Outgoing>,
        done: Done,
        reservation: Reservation,
    ) -> Result<Option<Prepared>> {
        let dones = match done {
            Done::Group(g) => Dones::Group(g),
            one => Dones::Each(vec![one]),
        };
        self.prepare(msgs, dones, Some(reservation))
            .and_then(|prepared| self.try_submit(prepared))
    }

    fn hand_over(&self, prepared: Prepared) -> impl Future<Output = Result<()>> + Send {
        self.submit(prepared)
    }
}

/// Produces to one TANK topic. Thread-safe. Made by `streamwire.tank.Client.create_producer`
/// (blocking face) or `streamwire.aio.tank.Client.create_producer` (the `_a` methods).
#[pyclass(frozen, module = "streamwire._native")]
pub struct TankProducer {
    inner: Producer,
    pid: u32,
    block_if_queue_full: bool,
    timeout: Duration,
    /// Awaited sends waiting for budget or queue room, in call order (see `common::lane`).
    lane: Lane<Producer>,
}

crate::live_handle!(TankProducer, "TANK Producer", PICKLE_HINT);

impl TankProducer {
    pub fn new(inner: Producer, pid: u32, block_if_queue_full: bool, timeout: Duration) -> Self {
        TankProducer {
            inner,
            pid,
            block_if_queue_full,
            timeout,
            lane: Lane::default(),
        }
    }

    fn check_open(&self) -> PyResult<()> {
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("TANK producer")));
        }
        Ok(())
    }

    fn live(&self) -> PyResult<Producer> {
        runtime::check_same_process(self.pid, "TANK producer").py_err()?;
        self.check_open()?;
        Ok(self.inner.clone())
    }

    /// The awaitable face's check: the loop thread's cached pid, no system call.
    fn live_aio(&self, py: Python<'_>) -> PyResult<()> {
        aio::check_same_process(py, self.pid, "TANK producer")?;
        self.check_open()
    }

    /// Reserve `bytes` for a blocking send: waiting for room with the interpreter released.
    fn reserve(&self, py: Python<'_>, bytes: u64) -> PyResult<Reservation> {
        if let Some(r) =
            try_reserve(self.inner.budget(), bytes, self.block_if_queue_full).py_err()?
        {
            return Ok(r);
        }
        let budget = self.inner.budget().clone();
        wait(py, "waiting for producer memory", None, async move {
            Ok(budget.reserve(bytes).await)
        })
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
        let msg = outgoing(value, key, partition, timestamp)?;
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
        let msg = outgoing(value, key, partition, timestamp)?;
        let reservation = self.reserve(py, msg.msg.size() as u64)?;
        let state = Arc::<FutureState>::default();
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

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.tank.Producer topic={:?} partitions={} pending={}>",
            self.inner.topic(),
            self.inner.partitions(),
            self.inner.pending()
        )
    }
}

// The awaitable face's hot paths: the same checks and message building as the blocking
// `send` / `send_many` (`outgoing`, `many_outgoing`, the budget rule of `common::reserve`),
// handed over through the lane, which keeps awaited sends in call order and never blocks
// the loop.
#[pymethods]
impl TankProducer {
    /// `send` awaited: resolves to None once the broker acknowledged the message.
    #[pyo3(signature = (value, key=None, *, partition=None, timestamp=None))]
    fn _asend<'py>(
        &self,
        py: Python<'py>,
        value: &Bound<'py, PyAny>,
        key: Option<&Bound<'py, PyAny>>,
        partition: Option<i64>,
        timestamp: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live_aio(py)?;
        let msg = outgoing(value, key, partition, timestamp)?;
        let bytes = msg.msg.size() as u64;
        let block = self.block_if_queue_full;
        self.lane
            .start(py, &self.inner, vec![msg], bytes, block, None)
    }

    /// `send_many` awaited: resolves to the count once all are acknowledged.
    #[pyo3(signature = (values, *, keys=None, timestamps=None, partition=None))]
    fn _asend_many<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'py, PyAny>,
        keys: Option<&Bound<'py, PyAny>>,
        timestamps: Option<&Bound<'py, PyAny>>,
        partition: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live_aio(py)?;
        let (msgs, bytes) = many_outgoing(values, keys, timestamps, partition)?;
        let n = msgs.len();
        let block = self.block_if_queue_full;
        self.lane
            .start(py, &self.inner, msgs, bytes, block, Some(n))
    }
}

crate::two_faces! {
    impl TankProducer {
        /// Send what is gathered and wait for every earlier message's acknowledgement (awaited
        /// sends still waiting for room included); raises the first failure since the last
        /// flush.
        ///
        /// Args:
        ///     timeout: seconds to wait at most (None: no limit); then `OperationTimeoutError`.
        ///         Default None.
        #[pyo3(signature = (timeout=None))]
        fn flush / _aflush (&self, py, timeout: Option<f64>) -> () as none {
            let p = self.live()?;
            let timeout = timeout_arg("timeout", timeout).py_err()?;
            let turn = self.lane.turn(&p).py_err()?;
            Op::new("flush", timeout, async move {
                turn.await;
                p.flush().await
            })
        }

        /// Flush, then close; later sends raise `AlreadyClosedError`. Idempotent.
        fn close / _aclose (&self, py) -> () as none {
            // Closed already, or a forked child's copy of the parent's producer: nothing to do.
            let skip = runtime::check_same_process(self.pid, "TANK producer").is_err()
                || self.inner.is_closed();
            let p = self.inner.clone();
            let turn = if skip { None } else { Some(self.lane.turn(&p).py_err()?) };
            Op::new("close", None, async move {
                let Some(turn) = turn else {
                    return Ok(());
                };
                turn.await;
                p.close().await
            })
        }
    }
}
