//! `MessageId`: ordered, hashable, picklable, and serialized exactly as the Java client does.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};

use streamwire_pulsar::message_id::MessageId as Id;

use crate::common::errors::IntoPyResult;

/// Constructor arguments, for pickling.
type IdParts = (i64, i64, i32, i32, i32);

/// The position of a message in a topic. Ordered, hashable and picklable.
///
/// Args:
///     ledger_id: the BookKeeper ledger holding the entry.
///     entry_id: the entry in that ledger.
///     partition: the partition index (-1: a non-partitioned topic). Default -1.
///     batch_index: the message's index in its batch entry (-1: not batched). Default -1.
///     batch_size: the number of messages in that batch (0: not batched). Default 0.
#[pyclass(
    frozen,
    eq,
    ord,
    hash,
    module = "streamwire._native",
    name = "MessageId",
    from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PyMessageId {
    pub(crate) id: Id,
}

// Only Rust data inside: ids built in bulk skip the cyclic collector (common::untracked).
impl crate::common::untracked::Acyclic for PyMessageId {}

impl From<Id> for PyMessageId {
    fn from(id: Id) -> Self {
        PyMessageId { id }
    }
}

#[pymethods]
impl PyMessageId {
    #[new]
    #[pyo3(signature = (ledger_id, entry_id, partition=-1, batch_index=-1, batch_size=0))]
    fn new(
        ledger_id: i64,
        entry_id: i64,
        partition: i32,
        batch_index: i32,
        batch_size: i32,
    ) -> Self {
        Id::new(ledger_id, entry_id, partition, batch_index, batch_size).into()
    }

    /// The position before the first message of a topic.
    #[classattr]
    fn earliest() -> Self {
        Id::EARLIEST.into()
    }

    /// The position after the last message of a topic.
    #[classattr]
    fn latest() -> Self {
        Id::LATEST.into()
    }

    /// The BookKeeper ledger holding the entry.
    #[getter]
    fn ledger_id(&self) -> i64 {
        self.id.ledger_id
    }

    /// The entry in its ledger.
    #[getter]
    fn entry_id(&self) -> i64 {
        self.id.entry_id
    }

    /// The partition index (-1 for a non-partitioned topic).
    #[getter]
    fn partition(&self) -> i32 {
        self.id.partition
    }

    /// The index in its batch entry (-1 when not batched).
    #[getter]
    fn batch_index(&self) -> i32 {
        self.id.batch_index
    }

    /// The number of messages in its batch entry (0 when not batched).
    #[getter]
    fn batch_size(&self) -> i32 {
        self.id.batch_size
    }

    /// The protobuf `MessageIdData` bytes, as Java's `toByteArray()` writes them.
    fn serialize<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.id.serialize())
    }

    /// Parse bytes made by `serialize()` (or by the Java / official Python client).
    ///
    /// Args:
    ///     data: the serialized id. Raises `InvalidArgumentError` if it is not one.
    #[classmethod]
    fn deserialize(_cls: &Bound<'_, PyType>, data: &[u8]) -> PyResult<Self> {
        Ok(Id::deserialize(data).py_err()?.into())
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, IdParts)> {
        let cls = py.get_type::<PyMessageId>().into_any();
        let i = self.id;
        Ok((
            cls,
            (
                i.ledger_id,
                i.entry_id,
                i.partition,
                i.batch_index,
                i.batch_size,
            ),
        ))
    }

    fn __repr__(&self) -> String {
        let i = self.id;
        format!(
            "MessageId(ledger_id={}, entry_id={}, partition={}, batch_index={}, batch_size={})",
            i.ledger_id, i.entry_id, i.partition, i.batch_index, i.batch_size
        )
    }

    fn __str__(&self) -> String {
        self.id.to_string()
    }
}
