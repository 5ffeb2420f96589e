//! `streamwire.tank.Message` and the Arrow form of many messages.
//!
//! The attribute names are the Arrow column names (`value`, `key`, `timestamp`, `topic`,
//! `partition`, `seq`), so code moves between per-message and columnar reads unchanged.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use streamwire_tank::consumer::TankMessage;

use crate::common::arrow::ArrowBuilder;
use crate::common::pickle::refuse_pickle;
use crate::common::repr::{bytes_repr, str_repr};
use crate::common::untracked::Acyclic;

/// The columns of `receive_arrow`, in their default order.
pub const ARROW_COLUMNS: [&str; 6] = ["value", "key", "timestamp", "topic", "partition", "seq"];

/// One message read from a TANK partition.
#[pyclass(frozen, name = "TankMessage", module = "streamwire._native")]
pub struct TankMessageObj {
    pub(crate) m: TankMessage,
    pub(crate) topic: Arc<str>,
}

// Only Rust data inside (the topic is a Rust `Arc<str>`): instances skip the cyclic
// collector (see common::untracked).
impl Acyclic for TankMessageObj {}

#[pymethods]
impl TankMessageObj {
    /// The payload as `bytes`.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.m.value)
    }

    /// The key as `bytes`, or None.
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.m.key.as_ref().map(|k| PyBytes::new(py, k))
    }

    /// Milliseconds since the epoch, as the producer set it.
    #[getter]
    fn timestamp(&self) -> u64 {
        self.m.ts
    }

    /// The topic the message was read from.
    #[getter]
    fn topic(&self) -> &str {
        &self.topic
    }

    /// The partition the message was read from.
    #[getter]
    fn partition(&self) -> u16 {
        self.m.partition
    }

    /// The message's sequence number in its partition.
    #[getter]
    fn seq(&self) -> u64 {
        self.m.seq
    }

    fn __len__(&self) -> usize {
        self.m.value.len()
    }

    fn __reduce__(&self) -> PyResult<()> {
        Err(refuse_pickle(
            "TANK Message",
            "pickle its value, key, partition and seq instead",
        ))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let key = bytes_repr(py, self.m.key.as_deref());
        format!(
            "<streamwire.tank.Message topic={} partition={} seq={} {} bytes key={key}>",
            str_repr(py, Some(&self.topic)),
            self.m.partition,
            self.m.seq,
            self.m.value.len()
        )
    }
}

/// Build the `names` columns of `msgs`, in that order.
pub fn to_record_batch<'py>(
    py: Python<'py>,
    topic: &str,
    msgs: &[TankMessage],
    names: &[&str],
) -> PyResult<Bound<'py, PyAny>> {
    let b = ArrowBuilder::new(py, msgs.len())?;
    let mut arrays = Vec::with_capacity(names.len());
    for name in names {
        arrays.push(match *name {
            "value" => b.var(
                &msgs.iter().map(|m| Some(&m.value[..])).collect::<Vec<_>>(),
                false,
            )?,
            "key" => b.var(
                &msgs.iter().map(|m| m.key.as_deref()).collect::<Vec<_>>(),
                false,
            )?,
            "timestamp" => b.fixed(
                "ts",
                msgs.iter().map(|m| m.ts as i64),
                i64::to_le_bytes,
                None,
            )?,
            "topic" => b.var(
                &msgs
                    .iter()
                    .map(|_| Some(topic.as_bytes()))
                    .collect::<Vec<_>>(),
                true,
            )?,
            "partition" => b.fixed(
                "int32",
                msgs.iter().map(|m| i32::from(m.partition)),
                i32::to_le_bytes,
                None,
            )?,
            "seq" => b.fixed(
                "int64",
                msgs.iter().map(|m| m.seq as i64),
                i64::to_le_bytes,
                None,
            )?,
            other => unreachable!("column {other} is listed in ARROW_COLUMNS"),
        });
    }
    b.record_batch(arrays, names)
}
