//! Engine errors → the Python exception hierarchy defined in `streamwire/exceptions.py`.
//!
//! The classes live in Python so they pickle by name and can inherit the built-in exception
//! they mean (`TimeoutError`, `ConnectionError`, ...). This is the one place that maps kinds.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use streamwire_core::error::{Error, ErrorKind};

pub fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Config => "ConfigError",
        ErrorKind::InvalidArgument => "InvalidArgumentError",
        ErrorKind::Connect => "ConnectError",
        ErrorKind::Disconnected => "DisconnectedError",
        ErrorKind::Timeout => "OperationTimeoutError",
        ErrorKind::Authentication => "AuthenticationError",
        ErrorKind::Authorization => "AuthorizationError",
        ErrorKind::Protocol => "ProtocolError",
        ErrorKind::Server => "ServerError",
        ErrorKind::TopicNotFound => "TopicNotFoundError",
        ErrorKind::ProducerBusy => "ProducerBusyError",
        ErrorKind::ProducerFenced => "ProducerFencedError",
        ErrorKind::MessageTooBig => "MessageTooBigError",
        ErrorKind::TopicTerminated => "TopicTerminatedError",
        ErrorKind::QueueFull => "ProducerQueueFullError",
        ErrorKind::Closed => "AlreadyClosedError",
        ErrorKind::ForkedProcess => "ForkedProcessError",
        ErrorKind::ConsumerBusy => "ConsumerBusyError",
        ErrorKind::ChecksumMismatch => "ChecksumError",
        ErrorKind::NotSupported => "NotSupportedError",
        ErrorKind::Interrupted => "InterruptedError_",
        ErrorKind::PartitionNotFound => "PartitionNotFoundError",
        ErrorKind::OutOfRange => "OutOfRangeError",
        ErrorKind::ReadOnly => "ReadOnlyError",
        ErrorKind::Transaction => "TransactionError",
        ErrorKind::TransactionConflict => "TransactionConflictError",
        ErrorKind::InvalidTransactionState => "InvalidTransactionStateError",
        ErrorKind::TransactionTimeout => "TransactionTimeoutError",
        ErrorKind::Crypto => "CryptoError",
    }
}

/// Build the Python exception for an engine error.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| match build(py, &err) {
        Ok(e) => e,
        // The exceptions module failing to import is a broken install; say so plainly.
        Err(import_err) => import_err,
    })
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    if err.kind() == ErrorKind::Interrupted {
        return Ok(pyo3::exceptions::PyKeyboardInterrupt::new_err(
            err.to_string(),
        ));
    }
    let module = py.import("streamwire.exceptions")?;
    // The broker refusing a schema has no engine kind of its own: its code says it.
    let name =
        if err.server_code() == Some(streamwire_pulsar::server_error::code::INCOMPATIBLE_SCHEMA) {
            "IncompatibleSchemaError"
        } else {
            class_name(err.kind())
        };
    let cls = module.getattr(name)?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("retriable", err.is_retriable())?;
    kwargs.set_item("server_code", err.server_code())?;
    if !err.details().is_empty() {
        let details = PyDict::new(py);
        for (name, value) in err.details() {
            details.set_item(*name, *value)?;
        }
        kwargs.set_item("details", details)?;
    }
    let value = cls.call((err.message(),), Some(&kwargs))?;
    Ok(PyErr::from_value(value))
}

/// Convenience for `map_err`.
pub trait IntoPyResult<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
