//! `Client.transaction()` and the `Transaction` class (Pulsar transactions).
//!
//! The handle wraps the engine's `Transaction`; sends and acks take it as `txn=`
//! ([`txn_arg`] checks the type). Commit and abort detach from the interpreter while they
//! wait for the transaction's receipts and the coordinator.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use streamwire_core::error::Error;
use streamwire_core::runtime;
use streamwire_pulsar::transaction::{Coordinator, Transaction, TxnId, TxnState};

use crate::common::aio::{self, Value};
use crate::common::blocking::wait;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::common::pickle::refuse_pickle;
use crate::pulsar::client::Client;

/// A Pulsar transaction. Made by `Client.transaction()`; not constructed directly.
///
/// Messages sent with `txn=` become visible, and acknowledgements made with `txn=` take
/// effect, only when it commits; on abort (or when its timeout passes first, after which
/// the broker aborts it) the messages are discarded and the acknowledged messages are
/// delivered again. As a context manager it commits when the block ends normally and
/// aborts when it raises (the exception propagates).
#[pyclass(frozen, module = "streamwire._native", name = "Transaction")]
pub struct PyTransaction {
    pub(crate) inner: Transaction,
    pid: u32,
}

impl PyTransaction {
    fn live(&self) -> PyResult<Transaction> {
        runtime::check_same_process(self.pid, "transaction").py_err()?;
        Ok(self.inner.clone())
    }
}

/// The engine transaction of a `txn=` argument (None: not in a transaction).
pub(crate) fn txn_arg(txn: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Transaction>> {
    match txn {
        None => Ok(None),
        Some(t) if t.is_none() => Ok(None),
        Some(t) => match t.cast::<PyTransaction>() {
            Ok(t) => {
                let t = t.get();
                runtime::check_same_process(t.pid, "transaction").py_err()?;
                Ok(Some(t.inner.clone()))
            }
            Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "txn must be a streamwire Transaction (from Client.transaction()), not {}",
                t.get_type().name()?
            ))),
        },
    }
}

fn timeout_secs(timeout: f64) -> PyResult<Duration> {
    if timeout.is_finite() && timeout > 0.0 && timeout < 1e9 {
        Ok(Duration::from_secs_f64(timeout))
    } else {
        Err(to_py(Error::invalid(format!(
            "transaction timeout must be a positive number of seconds, got {timeout}"
        ))))
    }
}

impl Client {
    fn coordinator(&self) -> PyResult<Arc<Coordinator>> {
        let c = self.live()?;
        Ok(Arc::clone(
            self.txn_coordinator
                .get_or_init(|| Coordinator::new(c.clone())),
        ))
    }
}

crate::two_faces! {
    impl Client {
        /// Start a transaction (Apache Pulsar with `transactionCoordinatorEnabled=true`).
        ///
        /// Args:
        ///     timeout: seconds the transaction may stay open; after that the broker aborts it
        ///         and sends, acks and commit raise `TransactionTimeoutError`. Default 60.0.
        ///
        /// Raises:
        ///     InvalidArgumentError: `timeout` is not a positive number.
        ///     NotSupportedError: the cluster runs no transaction coordinator (pulsar-lite, or
        ///         transactions disabled).
        ///     AuthorizationError: the client's role may not look up the coordinators' topic
        ///         (in the `pulsar/system` namespace, which the role needs a grant on).
        ///     TransactionError: the coordinator did not answer within the operation timeout.
        #[pyo3(signature = (timeout=60.0))]
        fn transaction / _atransaction (&self, py, timeout: f64) -> PyTransaction {
            let t = timeout_secs(timeout)?;
            let tc = self.coordinator()?;
            let pid = runtime::current_pid();
            Op::new("new transaction", None, async move {
                let inner = tc.new_transaction(t).await?;
                Ok(PyTransaction { inner, pid })
            })
        }

        /// A handle on a transaction started by another client or process, by its id
        /// (`Transaction.id`): to send in it, or to commit or abort it, from here. The Spark
        /// sink's driver commits the transactions its tasks wrote in this way.
        ///
        /// Args:
        ///     id: `(most_significant_bits, least_significant_bits)`, as `Transaction.id`.
        ///     timeout: seconds this handle accepts sends and acks for (the broker keeps the
        ///         timeout the transaction was started with). Default 60.0.
        ///
        /// A transaction that has ended or never existed fails its commit or abort with the
        /// coordinator's error (`InvalidTransactionStateError`).
        ///
        /// Raises:
        ///     InvalidArgumentError: `timeout` is not a positive number, or the id names a
        ///         coordinator the cluster does not have.
        ///     NotSupportedError: the cluster runs no transaction coordinator (as for
        ///         `transaction()`).
        #[pyo3(signature = (id, timeout=60.0))]
        fn resume_transaction / _aresume_transaction (&self, py, id: (u64, u64), timeout: f64) -> PyTransaction {
            let t = timeout_secs(timeout)?;
            let tc = self.coordinator()?;
            let pid = runtime::current_pid();
            Op::new("resume transaction", None, async move {
                let inner = tc.resume(TxnId { most: id.0, least: id.1 }, t).await?;
                Ok(PyTransaction { inner, pid })
            })
        }
    }
}

crate::two_faces! {
    impl PyTransaction {
        /// Commit: wait for the receipts of the transaction's sends and the broker's answers to
        /// its acks, then make them take effect together.
        ///
        /// Raises:
        ///     InvalidTransactionStateError: the transaction was already committed or aborted.
        ///     TransactionTimeoutError: its timeout passed (the broker aborted it).
        ///     TransactionError: a send or ack of it failed (it was aborted instead), or the
        ///         coordinator refused.
        fn commit / _acommit (&self, py) -> () as none {
            let t = self.live()?;
            Op::new("commit transaction", None, async move { t.commit().await })
        }

        /// Abort: the transaction's messages are discarded and its acknowledged messages are
        /// delivered again. Aborting an aborted transaction does nothing.
        ///
        /// Raises:
        ///     InvalidTransactionStateError: the transaction was already committed.
        ///     TransactionError: the coordinator refused.
        fn abort / _aabort (&self, py) -> () as none {
            let t = self.live()?;
            Op::new("abort transaction", None, async move { t.abort().await })
        }
    }
}

#[pymethods]
impl PyTransaction {
    /// The transaction id as `(most_significant_bits, least_significant_bits)`, as the
    /// Java client's `TxnID` (the high part is the coordinator's id).
    #[getter]
    fn id(&self) -> (u64, u64) {
        let id = self.inner.id();
        (id.most, id.least)
    }

    /// `"OPEN"`, `"COMMITTING"`, `"ABORTING"`, `"COMMITTED"`, `"ABORTED"`, `"ERROR"` or
    /// `"TIMED_OUT"`.
    #[getter]
    fn state(&self) -> &'static str {
        self.inner.state().name()
    }

    /// The timeout the transaction was started with, in seconds.
    #[getter]
    fn timeout(&self) -> f64 {
        self.inner.timeout().as_secs_f64()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Commit if the block ended normally, else abort; the block's exception propagates.
    #[pyo3(signature = (*args))]
    fn __exit__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        let raised = args.get_item(0).map(|e| !e.is_none()).unwrap_or(false);
        let t = self.live()?;
        if raised {
            // The block's own error matters more than a failed abort (the broker aborts the
            // transaction at its timeout anyway).
            if t.state() != TxnState::Aborted {
                let _ = wait(
                    py,
                    "abort transaction",
                    None,
                    async move { t.abort().await },
                );
            }
            return Ok(false);
        }
        match t.state() {
            // Ended inside the block by an explicit commit or abort: nothing left to do.
            TxnState::Committed | TxnState::Aborted => Ok(false),
            _ => {
                wait(
                    py,
                    "commit transaction",
                    None,
                    async move { t.commit().await },
                )?;
                Ok(false)
            }
        }
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "transaction",
            "end it in the process that started it",
        ))
    }

    fn __repr__(&self) -> String {
        let id = self.inner.id();
        format!(
            "<streamwire.Transaction ({},{}) {}>",
            id.most,
            id.least,
            self.inner.state().name()
        )
    }
}

#[pymethods]
impl crate::pulsar::consumer::Consumer {
    /// The awaitable form of an acknowledgement in a transaction (`streamwire.aio`).
    fn _aacknowledge_txn<'py>(
        &self,
        py: Python<'py>,
        message: &Bound<'py, PyAny>,
        txn: &Bound<'py, PyAny>,
        cumulative: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let e = self.h.live("consumer")?.clone();
        let ids = self.h.targets(message)?;
        if cumulative && ids.len() != 1 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "acknowledge_cumulative takes one Message or MessageId",
            ));
        }
        let t = txn_arg(Some(txn))?.ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err("txn must be a streamwire Transaction")
        })?;
        let timeout = Some(self.h.op_timeout * 2);
        let (fut, _) = aio::spawn(
            py,
            "acknowledge in transaction",
            timeout,
            async move { e.acknowledge_in_txn(&ids, cumulative, &t).await },
            |()| Value::None,
        )?;
        Ok(fut)
    }
}
