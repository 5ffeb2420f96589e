//! `streamwire.pravega.TransactionalWriter` and `Transaction`'s native halves, both faces
//! (one class each; `python/streamwire/pravega/transaction.py` and `aio/pravega.py` wrap them).
//!
//! A transaction's `write` hands the event to the transaction's writer and returns: the
//! store's acknowledgements are waited for by `flush` and `commit` (as the official clients
//! do; a failed write is reported there, and `commit` then aborts). The blocking face waits
//! only for memory-budget room; the awaitable face goes through the writer's `Lane` (a full
//! budget queues the write in call order instead of blocking the loop), resolving once the
//! write is handed over. Events are framed by the writer's functions (`frame_one`,
//! `event_batch`); every waiting call that is not a write is written once (`two_faces!`).
//! `TransactionHandle` ends a transaction known by its id only (begun by another process,
//! e.g. a Spark task whose driver commits it): the controller's commit, abort, status, ping.

use std::future::Future;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use streamwire_core::budget::{MemoryBudget, Reservation};
use streamwire_core::completion::Done;
use streamwire_core::error::{Error, Result};
use streamwire_pravega::controller::{parse_txn_id, txn_id_text};
use streamwire_pravega::txn::{random_writer_id, Transaction, TransactionalWriter, TxnHandle};
use streamwire_pravega::writer::large::refuse_in_transaction;
use streamwire_pravega::writer::{EventBatch, Rejected};

use super::writer::{event_batch, frame_one};
use crate::common::aio;
use crate::common::blocking::{positive_secs, timeout_arg, wait};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::common::lane::{Lane, Sink};
use crate::common::pickle::refuse_pickle;
use crate::common::reserve;

const PICKLE_HINT: &str = "begin the transaction inside the worker process";

/// Begins transactions on one stream. Made by `streamwire.pravega.Client.
/// create_transactional_writer` (and its asyncio twin).
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaTransactionalWriter {
    inner: TransactionalWriter,
    pid: u32,
    block_if_queue_full: bool,
}

impl PravegaTransactionalWriter {
    pub fn new(inner: TransactionalWriter, pid: u32, block_if_queue_full: bool) -> Self {
        PravegaTransactionalWriter {
            inner,
            pid,
            block_if_queue_full,
        }
    }

    fn live(&self, py: Python<'_>) -> PyResult<TransactionalWriter> {
        aio::check_same_process(py, self.pid, "Pravega transactional writer")?;
        if self.inner.is_closed() {
            return Err(to_py(Error::closed("Pravega transactional writer")));
        }
        Ok(self.inner.clone())
    }
}

#[pymethods]
impl PravegaTransactionalWriter {
    /// The stream's scope.
    #[getter]
    fn scope(&self) -> &str {
        &self.inner.stream().scope
    }

    /// The stream's name (without the scope).
    #[getter]
    fn stream(&self) -> &str {
        &self.inner.stream().stream
    }

    /// The writer id sent with each commit (the stream's watermarks are per writer).
    #[getter]
    fn writer_id(&self) -> &str {
        self.inner.writer_id()
    }

    /// Seconds a transaction lives without a ping.
    #[getter]
    fn lease(&self) -> f64 {
        self.inner.lease().as_secs_f64()
    }

    /// Whether the writer is closed (no more `begin`).
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The writer's metrics (all its transactions' writes); see docs/observability.md.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        crate::common::metrics::snapshot_dict(py, &self.inner.metrics().snapshot())
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.inner.close();
        false
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle("Pravega TransactionalWriter", PICKLE_HINT))
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.pravega.TransactionalWriter stream={} writer_id={:?}{}>",
            self.inner.stream(),
            self.inner.writer_id(),
            if self.inner.is_closed() {
                " closed"
            } else {
                ""
            }
        )
    }
}

crate::two_faces! {
    impl PravegaTransactionalWriter {
        /// Begin a transaction at the controller; its lease is renewed in the background
        /// until it is committed or aborted.
        ///
        /// Args:
        ///     ping: renew the lease (False: the controller aborts the transaction when the
        ///         lease runs out before the commit). Default True.
        #[pyo3(signature = (*, ping=true))]
        fn begin / _abegin (&self, py, ping: bool) -> PravegaTransaction {
            let w = self.live(py)?;
            let (pid, block) = (self.pid, self.block_if_queue_full);
            Op::new("begin", None, async move {
                let t = w.begin(ping).await?;
                Ok(PravegaTransaction::new(t, pid, block))
            })
        }

        /// No more transactions; those begun stay usable. Idempotent.
        fn close / _aclose (&self, py) -> () as none {
            self.inner.close();
            Op::new("close", None, async move { Ok(()) })
        }
    }
}

/// The lane's view of a transaction: a write is settled (its awaitable resolved) once it is
/// handed over; the store's answer is the transaction's `flush`/`commit`'s business.
#[derive(Clone)]
struct TxnSink(Transaction);

impl Sink for TxnSink {
    type Payload = EventBatch;
    type Rejected = (Rejected, Done, usize);
    const NAME: &'static str = "Pravega transaction";

    fn memory(&self) -> &MemoryBudget {
        self.0.writer().budget()
    }

    fn try_hand_over(
        &self,
        batch: EventBatch,
        done: Done,
        reservation: Reservation,
    ) -> Result<Option<Self::Rejected>> {
        self.0.check_open()?;
        let n = batch.count;
        let own = self.0.done(n);
        match self.0.writer().try_write(batch, own, Some(reservation))? {
            None => {
                done.complete(Ok(()), n);
                Ok(None)
            }
            Some(r) => Ok(Some((r, done, n))),
        }
    }

    fn hand_over(&self, rejected: Self::Rejected) -> impl Future<Output = Result<()>> + Send {
        let w = self.0.writer().clone();
        async move {
            let (r, done, n) = rejected;
            w.submit(r).await?;
            done.complete(Ok(()), n);
            Ok(())
        }
    }
}

/// One transaction. Made by `TransactionalWriter.begin`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaTransaction {
    sink: TxnSink,
    pid: u32,
    block_if_queue_full: bool,
    lane: Lane<TxnSink>,
}

impl PravegaTransaction {
    fn new(inner: Transaction, pid: u32, block_if_queue_full: bool) -> Self {
        PravegaTransaction {
            sink: TxnSink(inner),
            pid,
            block_if_queue_full,
            lane: Lane::default(),
        }
    }

    fn txn(&self) -> &Transaction {
        &self.sink.0
    }

    /// The transaction, when events may still be written to it (in this process).
    fn live(&self, py: Python<'_>) -> PyResult<&Transaction> {
        aio::check_same_process(py, self.pid, "Pravega transaction")?;
        self.txn().check_open().py_err()?;
        Ok(self.txn())
    }

    /// The blocking face's hand-over: waits (interpreter released) only for budget room or
    /// room in the writer's queue.
    fn hand_over_waiting(&self, py: Python<'_>, batch: EventBatch) -> PyResult<()> {
        let t = self.live(py)?.clone();
        let bytes = batch.data.len() as u64;
        let budget = t.writer().budget().clone();
        let reservation =
            match reserve::try_reserve(&budget, bytes, self.block_if_queue_full).py_err()? {
                Some(r) => r,
                None => wait(py, "waiting for writer memory", None, async move {
                    Ok(budget.reserve(bytes).await)
                })?,
            };
        let done = t.done(batch.count);
        if let Some(rejected) = t
            .writer()
            .try_write(batch, done, Some(reservation))
            .py_err()?
        {
            let w = t.writer().clone();
            wait(py, "write", None, async move { w.submit(rejected).await })?;
        }
        Ok(())
    }

    /// The awaitable face's hand-over, in call order through the lane.
    fn start<'py>(
        &self,
        py: Python<'py>,
        batch: EventBatch,
        count: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let bytes = batch.data.len() as u64;
        self.lane.start(
            py,
            &self.sink,
            batch,
            bytes,
            self.block_if_queue_full,
            count,
        )
    }
}

#[pymethods]
impl PravegaTransaction {
    /// The transaction's id (a UUID's 128 bits).
    #[getter]
    fn id(&self) -> u128 {
        self.txn().id()
    }

    /// The stream's scope.
    #[getter]
    fn scope(&self) -> &str {
        &self.txn().stream().scope
    }

    /// The stream's name (without the scope).
    #[getter]
    fn stream(&self) -> &str {
        &self.txn().stream().stream
    }

    /// Whether events may still be written (no commit or abort started, lease not lost).
    #[getter]
    fn open(&self) -> bool {
        self.txn().is_open()
    }

    /// Hand one event to the transaction and return (it becomes visible when the
    /// transaction commits); waits only while the client's memory budget is full. A failed
    /// write is raised by `flush` and `commit`.
    ///
    /// Args:
    ///     event: the payload (bytes-like, or str sent as UTF-8).
    ///     routing_key: events with the same key go to the same segment, in order.
    ///         Default None: any segment.
    #[pyo3(signature = (event, routing_key=None))]
    fn write(
        &self,
        py: Python<'_>,
        event: &Bound<'_, PyAny>,
        routing_key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.live(py)?;
        let batch = frame_one(event, routing_key)?;
        refuse_in_transaction(&batch.data).py_err()?;
        self.hand_over_waiting(py, batch)
    }

    /// Hand many events to the transaction (a list of bytes/str or a pyarrow binary/string
    /// array) and return the count, as `write` does for one.
    ///
    /// Args:
    ///     events: the payloads.
    ///     routing_keys: one str for every event, or one str/None per event. Default None.
    #[pyo3(signature = (events, routing_keys=None))]
    fn write_many(
        &self,
        py: Python<'_>,
        events: &Bound<'_, PyAny>,
        routing_keys: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        self.live(py)?;
        let batch = event_batch(events, routing_keys)?;
        refuse_in_transaction(&batch.data).py_err()?;
        let n = batch.count;
        if n > 0 {
            self.hand_over_waiting(py, batch)?;
        }
        Ok(n)
    }

    /// `write` as an awaitable: resolves to None once the event is handed over.
    #[pyo3(signature = (event, routing_key=None))]
    fn _awrite<'py>(
        &self,
        py: Python<'py>,
        event: &Bound<'py, PyAny>,
        routing_key: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let batch = frame_one(event, routing_key)?;
        refuse_in_transaction(&batch.data).py_err()?;
        self.start(py, batch, None)
    }

    /// `write_many` as an awaitable: resolves to the count once all are handed over.
    #[pyo3(signature = (events, routing_keys=None))]
    fn _awrite_many<'py>(
        &self,
        py: Python<'py>,
        events: &Bound<'py, PyAny>,
        routing_keys: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.live(py)?;
        let batch = event_batch(events, routing_keys)?;
        refuse_in_transaction(&batch.data).py_err()?;
        let n = batch.count;
        self.start(py, batch, Some(n))
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Leaving the block: an exception aborts the transaction, else it is committed (and
    /// waited for); one that already ended (committed or aborted in the block) is left as is.
    #[pyo3(signature = (*args))]
    fn __exit__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        if !self.txn().is_open() {
            return Ok(false);
        }
        let failed = args.get_item(0).is_ok_and(|e| !e.is_none());
        if failed {
            self.abort(py)?;
        } else {
            self.commit(py, true, None, None)?;
        }
        Ok(false)
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle("Pravega Transaction", PICKLE_HINT))
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.pravega.Transaction {} stream={}{}>",
            txn_id_text(self.txn().id()),
            self.txn().stream(),
            if self.txn().is_open() { "" } else { " ended" }
        )
    }
}

crate::two_faces! {
    impl PravegaTransaction {
        /// Wait until the segment stores hold every event written so far; raises the first
        /// write's failure.
        ///
        /// Args:
        ///     timeout: seconds to wait at most (None: no limit); then
        ///         `OperationTimeoutError`. Default None.
        #[pyo3(signature = (timeout=None))]
        fn flush / _aflush (&self, py, timeout: Option<f64>) -> () as none {
            let t = self.live(py)?.clone();
            let timeout = timeout_arg("timeout", timeout).py_err()?;
            let turn = self.lane.turn(&self.sink).py_err()?;
            Op::new("flush", timeout, async move {
                turn.await;
                t.flush().await
            })
        }

        /// Commit: the events become visible together. First waits until the segment
        /// stores hold every event written; if a write failed, the transaction is aborted
        /// instead and that error raised (nothing of it becomes visible). A transaction that
        /// already ended raises `InvalidTransactionStateError`; one whose lease ran out
        /// `TransactionTimeoutError`.
        ///
        /// Args:
        ///     wait: return once the controller reports COMMITTED (False: once it accepted
        ///         the commit; the events become visible moments later). Default True.
        ///     timestamp: the writer's time mark (ms) for the stream's watermarks. Default
        ///         None.
        ///     timeout: seconds to wait at most (None: no limit); then
        ///         `OperationTimeoutError`. Default None.
        #[pyo3(signature = (*, wait=true, timestamp=None, timeout=None))]
        fn commit / _acommit (
            &self,
            py,
            wait: bool,
            timestamp: Option<i64>,
            timeout: Option<f64>,
        ) -> () as none {
            aio::check_same_process(py, self.pid, "Pravega transaction")?;
            self.txn().check_open().py_err()?;
            let timeout = timeout_arg("timeout", timeout).py_err()?;
            let t = self.txn().clone();
            let turn = self.lane.turn(&self.sink).py_err()?;
            Op::new("commit", timeout, async move {
                turn.await;
                t.commit(wait, timestamp).await
            })
        }

        /// Abort: nothing written becomes visible. Idempotent; a committed transaction
        /// raises `InvalidTransactionStateError`.
        fn abort / _aabort (&self, py) -> () as none {
            aio::check_same_process(py, self.pid, "Pravega transaction")?;
            let t = self.txn().clone();
            Op::new("abort", None, async move { t.abort().await })
        }

        /// The state at the controller: OPEN, COMMITTING, COMMITTED, ABORTING, ABORTED or
        /// UNKNOWN.
        fn status / _astatus (&self, py) -> String {
            aio::check_same_process(py, self.pid, "Pravega transaction")?;
            let t = self.txn().clone();
            Op::new("status", None, async move {
                Ok(t.status().await?.name().to_string())
            })
        }
    }
}

/// A transaction id from Python: the int `Transaction.id` gives, or the UUID's text.
pub fn txn_id_arg(id: &Bound<'_, PyAny>) -> PyResult<u128> {
    if let Ok(text) = id.extract::<String>() {
        return parse_txn_id(&text).py_err();
    }
    match id.extract::<u128>() {
        Ok(n) => Ok(n),
        Err(_) => Err(to_py(Error::invalid(format!(
            "a transaction id is an int from 0 to 2**128 - 1 or a UUID's text, not {}",
            id.repr().map(|r| r.to_string()).unwrap_or_default()
        )))),
    }
}

/// A transaction known by its id only (begun by another process, e.g. a Spark task):
/// commit, abort, status and lease renewal through the controller. Made by
/// `streamwire.pravega.Client.transaction`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct PravegaTransactionHandle {
    inner: TxnHandle,
    pid: u32,
}

impl PravegaTransactionHandle {
    pub fn new(inner: TxnHandle, pid: u32) -> Self {
        PravegaTransactionHandle { inner, pid }
    }

    fn live(&self, py: Python<'_>) -> PyResult<TxnHandle> {
        aio::check_same_process(py, self.pid, "Pravega transaction handle")?;
        Ok(self.inner.clone())
    }
}

#[pymethods]
impl PravegaTransactionHandle {
    /// The transaction's id (a UUID's 128 bits).
    #[getter]
    fn id(&self) -> u128 {
        self.inner.id()
    }

    /// The stream's scope.
    #[getter]
    fn scope(&self) -> &str {
        &self.inner.stream().scope
    }

    /// The stream's name (without the scope).
    #[getter]
    fn stream(&self) -> &str {
        &self.inner.stream().stream
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "Pravega TransactionHandle",
            "pass the transaction's id and call Client.transaction in the other process",
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "<streamwire.pravega.TransactionHandle {} stream={}>",
            txn_id_text(self.inner.id()),
            self.inner.stream()
        )
    }
}

crate::two_faces! {
    impl PravegaTransactionHandle {
        /// Commit the transaction (whoever wrote it must have flushed it first). One already
        /// committing or committed: nothing is asked, so a commit asked again succeeds. One
        /// aborted (its lease ran out) raises `TransactionTimeoutError`; one the controller
        /// does not know (never begun, or forgotten: completed transactions are kept about a
        /// day) `InvalidTransactionStateError`.
        ///
        /// Args:
        ///     writer_id: the writer id sent with the commit (the stream's watermarks are per
        ///         writer). Default None: a random UUID.
        ///     wait: return once the controller reports COMMITTED. Default True.
        ///     timestamp: the writer's time mark (ms) for the stream's watermarks. Default
        ///         None.
        ///     timeout: seconds to wait at most (None: no limit). Default None.
        #[pyo3(signature = (*, writer_id=None, wait=true, timestamp=None, timeout=None))]
        fn commit / _acommit (
            &self,
            py,
            writer_id: Option<String>,
            wait: bool,
            timestamp: Option<i64>,
            timeout: Option<f64>,
        ) -> () as none {
            let t = self.live(py)?;
            let timeout = timeout_arg("timeout", timeout).py_err()?;
            let writer_id = match writer_id {
                Some(w) if w.is_empty() => {
                    return Err(to_py(Error::invalid("writer_id must not be empty")))
                }
                Some(w) => w,
                None => random_writer_id(),
            };
            Op::new("commit", timeout, async move {
                t.commit(&writer_id, wait, timestamp).await
            })
        }

        /// Abort the transaction: nothing of it becomes visible. Idempotent; a committed
        /// (or unknown) transaction raises `InvalidTransactionStateError`.
        fn abort / _aabort (&self, py) -> () as none {
            let t = self.live(py)?;
            Op::new("abort", None, async move { t.abort().await })
        }

        /// The state at the controller: OPEN, COMMITTING, COMMITTED, ABORTING, ABORTED or
        /// UNKNOWN (never begun, or forgotten since it ended).
        fn status / _astatus (&self, py) -> String {
            let t = self.live(py)?;
            Op::new("status", None, async move {
                Ok(t.status().await?.name().to_string())
            })
        }

        /// Renew the transaction's lease: it lives `lease` seconds from now (the controller
        /// refuses a lease outside its bounds, 10 to 600 s by default).
        ///
        /// Args:
        ///     lease: seconds.
        #[pyo3(signature = (lease))]
        fn ping / _aping (&self, py, lease: f64) -> () as none {
            let t = self.live(py)?;
            let lease = positive_secs("lease", lease).py_err()?;
            Op::new("ping", None, async move { t.ping(lease).await })
        }
    }
}

/// The handle of transaction `id` of `stream` (no call to the controller yet).
pub fn handle(
    client: &streamwire_pravega::client::PravegaClient,
    stream: streamwire_pravega::controller::ScopedStream,
    id: u128,
    pid: u32,
) -> PravegaTransactionHandle {
    PravegaTransactionHandle::new(TxnHandle::new(client, stream, id), pid)
}
