//! The blocking `read_arrow`'s events gathered straight from the reader's chunks: each
//! event is a range of a chunk (the chunk's reference count taken once per chunk, not once
//! per event), and the columns are then written once into the buffers pyarrow wraps. The
//! per-event `ReadEvent`s (a payload slice each, built and dropped) and the intermediate
//! vectors of the generic batch builder cost ~20% of a group reader's `read_arrow` profile.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use streamwire_pravega::reader::EventSink;

use crate::common::arrow::ArrowBuilder;

/// One event: where its payload is, and where it was read.
struct At {
    chunk: u32,
    range: Range<usize>,
    stream: u32,
    segment: i64,
    offset: i64,
}

/// Events of one `read_arrow` call, by reference into the chunks they came in.
#[derive(Default)]
pub(crate) struct ArrowSink {
    chunks: Vec<Bytes>,
    events: Vec<At>,
    /// Payload bytes in all (the value column's size).
    total: usize,
}

impl EventSink for ArrowSink {
    fn taken(&self) -> usize {
        self.events.len()
    }

    fn push(&mut self, stream: u32, segment: i64, offset: i64, data: &Bytes, range: Range<usize>) {
        // Consecutive events of a read come from the same chunk: one clone per chunk.
        let same = self
            .chunks
            .last()
            .is_some_and(|c| c.as_ptr() == data.as_ptr() && c.len() == data.len());
        if !same {
            self.chunks.push(data.clone());
        }
        self.total += range.len();
        self.events.push(At {
            chunk: (self.chunks.len() - 1) as u32,
            range,
            stream,
            segment,
            offset,
        });
    }
}

impl ArrowSink {
    pub fn with_capacity(n: usize) -> ArrowSink {
        ArrowSink {
            chunks: Vec::new(),
            events: Vec::with_capacity(n),
            total: 0,
        }
    }

    /// The `names` columns as a `pyarrow.RecordBatch` (`streams`: the names events'
    /// stream indexes refer to).
    pub fn batch<'py>(
        &self,
        py: Python<'py>,
        streams: &[Arc<str>],
        names: &[&str],
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = self.events.len();
        let b = ArrowBuilder::new(py, n)?;
        let mut arrays = Vec::with_capacity(names.len());
        for name in names {
            arrays.push(match *name {
                "value" => var_column(
                    &b,
                    false,
                    self.events.iter().map(|e| e.range.len()),
                    self.total,
                    |out| {
                        let mut at = 0;
                        for e in &self.events {
                            let v = &self.chunks[e.chunk as usize][e.range.clone()];
                            out[at..at + v.len()].copy_from_slice(v);
                            at += v.len();
                        }
                    },
                )?,
                "stream" => {
                    let name = |e: &At| streams[e.stream as usize].as_bytes();
                    let total = self.events.iter().map(|e| name(e).len()).sum();
                    var_column(
                        &b,
                        true,
                        self.events.iter().map(|e| name(e).len()),
                        total,
                        |out| {
                            let mut at = 0;
                            for e in &self.events {
                                let v = name(e);
                                out[at..at + v.len()].copy_from_slice(v);
                                at += v.len();
                            }
                        },
                    )?
                }
                "segment" => b.fixed(
                    "int64",
                    self.events.iter().map(|e| e.segment),
                    i64::to_le_bytes,
                    None,
                )?,
                "offset" => b.fixed(
                    "int64",
                    self.events.iter().map(|e| e.offset),
                    i64::to_le_bytes,
                    None,
                )?,
                other => unreachable!("column {other} is listed in ARROW_COLUMNS"),
            });
        }
        b.record_batch(arrays, names)
    }
}

/// A pyarrow buffer of `len` bytes filled by `fill`.
fn buffer<'py>(
    b: &ArrowBuilder<'py>,
    len: usize,
    fill: impl FnOnce(&mut [u8]),
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = PyBytes::new_with(b.pa().py(), len, |out| {
        fill(out);
        Ok(())
    })?;
    b.pa().call_method1("py_buffer", (bytes,))
}

/// A binary (utf8 with `string`) column without nulls of values of `lens` bytes, `total`
/// in all, written by `fill` one after the other (64-bit offsets past 2 GiB).
fn var_column<'py>(
    b: &ArrowBuilder<'py>,
    string: bool,
    lens: impl ExactSizeIterator<Item = usize>,
    total: usize,
    fill: impl FnOnce(&mut [u8]),
) -> PyResult<Bound<'py, PyAny>> {
    let n = lens.len();
    let large = total > i32::MAX as usize;
    let width = if large { 8 } else { 4 };
    let offsets = buffer(b, (n + 1) * width, |out| {
        let mut at = 0usize;
        out[..width].fill(0);
        for (i, len) in lens.enumerate() {
            at += len;
            let slot = &mut out[(i + 1) * width..(i + 2) * width];
            if large {
                slot.copy_from_slice(&(at as i64).to_le_bytes());
            } else {
                slot.copy_from_slice(&(at as i32).to_le_bytes());
            }
        }
    })?;
    let values = buffer(b, total, fill)?;
    let ty = match (string, large) {
        (true, false) => "string",
        (true, true) => "large_string",
        (false, false) => "binary",
        (false, true) => "large_binary",
    };
    let py = b.pa().py();
    let bufs = PyList::new(py, [py.None().into_bound(py), offsets, values])?;
    b.pa()
        .getattr("Array")?
        .call_method1("from_buffers", (b.pa().call_method0(ty)?, n, bufs))
}
