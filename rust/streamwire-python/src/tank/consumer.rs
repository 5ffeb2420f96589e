//! `streamwire.tank.Consumer`: per-message, bulk and Arrow reads, positions and seeks.

use std::collections::BTreeMap;
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use streamwire_core::error::{Error, ErrorKind};
use streamwire_core::runtime;
use streamwire_tank::consumer::{Consumer, TankMessage};

use crate::common::arrow::column_list;
use crate::common::blocking::{timeout_arg, wait};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::pickle::refuse_pickle;
use crate::common::untracked::untracked_list;
use crate::tank::message::{to_record_batch, TankMessageObj, ARROW_COLUMNS};

const PICKLE_HINT: &str = "persist consumer.positions() and create a consumer with \
    start=positions inside the worker";

/// Reads one TANK topic. Thread-safe. Made by `streamwire.tank.Client.create_consumer`;
/// iterating yields messages as they arrive.
#[pyclass(frozen, module = "streamwire._native")]
pub struct TankConsumer {
    inner: Consumer,
    pid: u32,
}

impl TankConsumer {
    pub fn new(inner: Consumer, pid: u32) -> Self {
        TankConsumer { inner, pid }
    }

    fn live(&self) -> PyResult<Consumer> {
        runtime::check_same_process(self.pid, "TANK consumer").py_err()?;
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("TANK consumer")));
        }
        Ok(self.inner.clone())
    }

    fn take(
        &self,
        py: Python<'_>,
        max: usize,
        timeout: Option<f64>,
        what: &str,
    ) -> PyResult<Vec<TankMessage>> {
        let c = self.live()?;
        let timeout = timeout_arg("timeout", timeout).py_err()?;
        let deadline = timeout.map(|t| Instant::now() + t);
        wait(py, what, None, async move {
            c.receive_many(max, deadline).await
        })
    }

    fn wrap(&self, m: TankMessage) -> TankMessageObj {
        TankMessageObj {
            m,
            topic: self.inner.topic().clone(),
        }
    }
}

pub(crate) fn max_arg(max_messages: i64) -> PyResult<usize> {
    if max_messages < 1 {
        return Err(to_py(Error::invalid(format!(
            "max_messages must be at least 1, got {max_messages}"
        ))));
    }
    Ok(usize::try_from(max_messages).unwrap_or(usize::MAX))
}

#[pymethods]
impl TankConsumer {
    /// This consumer's metrics; see README "Metrics" for the keys.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let c = self.live()?;
        crate::common::metrics::snapshot_dict(py, &c.metrics().snapshot())
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

    /// Continue `partition` from `seq` (0 = its first available message).
    ///
    /// Args:
    ///     partition: one of this consumer's partitions.
    ///     seq: the sequence number of the next message to read.
    fn seek(&self, partition: i64, seq: i64) -> PyResult<()> {
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
        self.live()?.seek(p, seq).py_err()
    }

    /// `{partition: next seq}`: what to persist and pass back as `start=` to resume.
    fn positions(&self) -> PyResult<BTreeMap<u16, u64>> {
        runtime::check_same_process(self.pid, "TANK consumer").py_err()?;
        Ok(self.inner.positions())
    }

    /// Messages read ahead and not yet taken.
    #[getter]
    fn queued(&self) -> usize {
        self.inner.queued()
    }

    /// Stop reading; messages read ahead are dropped, later calls raise `AlreadyClosedError`.
    fn close(&self) {
        self.inner.close();
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

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle("TANK Consumer", PICKLE_HINT))
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.tank.Consumer topic={:?} partitions={:?}>",
            &**self.inner.topic(),
            self.inner.partitions()
        )
    }
}
