//! `MessageIdRanges`: what `send_many(..., ids=False)` returns — the ids of a bulk send held
//! as one range per batch entry (ledger, entry, partition, batch indexes), not as one
//! `MessageId` object per message. Building and freeing 10,000 result objects cost ~150
//! instructions per message of a 100 B `send_many` (callgrind); a caller that only needs to
//! know every message was acknowledged now pays for a handful of ranges, and one that wants
//! an id takes it by position when it asks.

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use streamwire_pulsar::producer::bulk::IdRange;

use crate::common::untracked::untracked_list;
use crate::pulsar::message_id::PyMessageId;

/// The ids of one `send_many(..., ids=False)` call, in input order, kept as ranges: one per
/// batch entry the messages went in. A sequence: `len(r)` is the number of messages sent,
/// `r[i]` the `MessageId` of the i-th value (built when asked), iterating yields them in
/// order, and `r.ids()` makes the list `send_many` returns by default.
#[pyclass(frozen, module = "streamwire._native", name = "MessageIdRanges")]
pub struct MessageIdRanges {
    ranges: Vec<IdRange>,
    len: usize,
}

impl MessageIdRanges {
    pub(crate) fn new(ranges: Vec<IdRange>) -> Self {
        let len = ranges.iter().map(|r| r.count as usize).sum();
        MessageIdRanges { ranges, len }
    }
}

/// Every id of `ranges` (in input order, contiguous) as a list of `MessageId`s: sized once
/// up front, each id made straight from its range (what `send_many` returns by default, and
/// `MessageIdRanges.ids()`).
pub(crate) fn ids_list<'py>(py: Python<'py>, ranges: &[IdRange]) -> PyResult<Bound<'py, PyList>> {
    let n = ranges.iter().map(|r| r.count as usize).sum();
    let mut ids = Vec::with_capacity(n);
    for r in ranges {
        ids.extend((0..r.count).map(|k| PyMessageId::from(r.id(k))));
    }
    untracked_list(py, ids)
}

// Only Rust data inside: never part of a cycle (common::untracked).
impl crate::common::untracked::Acyclic for MessageIdRanges {}

#[pymethods]
impl MessageIdRanges {
    fn __len__(&self) -> usize {
        self.len
    }

    /// The id of the message at input position `index` (negative counts from the end).
    fn __getitem__(&self, index: isize) -> PyResult<PyMessageId> {
        let i = if index < 0 {
            index + self.len as isize
        } else {
            index
        };
        if i < 0 || i as usize >= self.len {
            return Err(PyIndexError::new_err("MessageIdRanges index out of range"));
        }
        let i = i as usize;
        // Ranges are in input order and contiguous: the last one starting at or before `i`.
        let at = self.ranges.partition_point(|r| r.start <= i) - 1;
        let r = &self.ranges[at];
        Ok(r.id((i - r.start) as u32).into())
    }

    /// Every id, in input order, as a list (what `send_many` returns with `ids=True`).
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        ids_list(py, &self.ranges)
    }

    /// The ranges as tuples `(ledger_id, entry_id, partition, first_batch_index, count)`, in
    /// input order (`first_batch_index` -1: one message sent unbatched).
    #[getter]
    fn ranges<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items: PyResult<Vec<Bound<'py, PyTuple>>> = self
            .ranges
            .iter()
            .map(|r| {
                PyTuple::new(
                    py,
                    [
                        r.ledger_id,
                        r.entry_id,
                        i64::from(r.partition),
                        i64::from(r.batch_start),
                        i64::from(r.count),
                    ],
                )
            })
            .collect();
        PyList::new(py, items?)
    }

    fn __repr__(&self) -> String {
        format!(
            "MessageIdRanges({} messages in {} entries)",
            self.len,
            self.ranges.len()
        )
    }
}
