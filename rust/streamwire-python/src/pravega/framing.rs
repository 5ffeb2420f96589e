//! `write_many`'s arguments framed into events, handed to the writer piece by piece.
//!
//! Why pieces: a synchronous `write_many` waits for its events' acknowledgements, so every
//! microsecond spent framing before the first append leaves is added to each call. A list of
//! bytes is checked first (types, sizes: nothing can fail after that), then framed in pieces
//! of about [`PIECE_BYTES`], each handed to the writer's task as soon as it is framed, so
//! the task and the segment store work on the first piece while the rest is framed. Every
//! byte is copied once, from the Python object into the piece.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use tokio::sync::oneshot;

use streamwire_core::budget::Reservation;
use streamwire_core::completion::{Completion, Done, Group};
use streamwire_core::error::{Error, Result};
use streamwire_pravega::writer::batch::check_event;
use streamwire_pravega::writer::{BatchBuilder, EventBatch, EventWriter, Rejected};

use super::writer::key_arg;
use crate::common::columns::payloads;
use crate::common::errors::{to_py, IntoPyResult};

/// Framed bytes per hand-over when a list is framed in pieces.
pub const PIECE_BYTES: usize = 128 * 1024;

/// Where framed events go: told the totals once, then given the pieces in order.
pub(crate) trait Pieces {
    /// The call's events and framed bytes, before the first piece.
    fn begin(&mut self, events: usize, bytes: usize) -> PyResult<()>;
    fn piece(&mut self, batch: EventBatch) -> PyResult<()>;
}

/// A call's pieces on their way to the writer, under one completion and one reservation.
pub(crate) struct Handover<'a> {
    writer: EventWriter,
    group: Option<Arc<Group>>,
    /// The call's completion: a receiver to await (`write_many`), or None when the group
    /// settles a future directly (`write_many_async`).
    rx: Option<oneshot::Receiver<Result<()>>>,
    /// What the group settles, if not a receiver.
    target: Option<Arc<dyn Completion>>,
    reservation: Option<Reservation>,
    /// Pieces the writer's queue had no room for; every later piece queues behind them, so
    /// the order holds.
    later: Vec<Rejected>,
    events: usize,
    /// Reserves the call's bytes (waiting or failing as the writer is set up to).
    reserve: Box<dyn FnMut(u64) -> PyResult<Reservation> + 'a>,
}

impl<'a> Handover<'a> {
    pub fn new(
        writer: EventWriter,
        reserve: Box<dyn FnMut(u64) -> PyResult<Reservation> + 'a>,
    ) -> Self {
        Handover {
            writer,
            group: None,
            rx: None,
            target: None,
            reservation: None,
            later: Vec::new(),
            events: 0,
            reserve,
        }
    }

    /// Settle `target` once every event is written (or the first fails), on the engine
    /// thread, instead of a receiver: what a future needs (nothing runs between the last
    /// acknowledgement and the future being done, so a flush that returns finds it done).
    pub fn settling(mut self, target: Arc<dyn Completion>) -> Self {
        self.target = Some(target);
        self
    }

    /// The call's event count.
    pub fn events(&self) -> usize {
        self.events
    }

    /// What is left to do once framing is over: hand over the pieces that waited for room,
    /// then the completion of every event (None for an empty call, or one that settles its
    /// target directly).
    pub fn finish(
        self,
    ) -> (
        Vec<Rejected>,
        EventWriter,
        Option<oneshot::Receiver<Result<()>>>,
    ) {
        (self.later, self.writer, self.rx)
    }
}

impl Pieces for Handover<'_> {
    fn begin(&mut self, events: usize, bytes: usize) -> PyResult<()> {
        self.events = events;
        if events > 0 {
            self.reservation = Some((self.reserve)(bytes as u64)?);
            self.group = Some(match self.target.take() {
                Some(t) => Group::notifying(events, t),
                None => {
                    let (g, rx) = Group::new(events);
                    self.rx = Some(rx);
                    g
                }
            });
        }
        Ok(())
    }

    fn piece(&mut self, batch: EventBatch) -> PyResult<()> {
        let Some(group) = &self.group else {
            return Ok(());
        };
        let done = Done::Group(Arc::clone(group));
        // The piece's share of the call's reservation (the last piece takes what is left).
        let len = batch.data.len() as u64;
        let share = match self.reservation.as_mut() {
            Some(r) if r.amount() > len => r.split(len),
            _ => self.reservation.take(),
        };
        if !self.later.is_empty() {
            self.later.push(Rejected::write(batch, done, share));
            return Ok(());
        }
        if let Some(r) = self.writer.try_write(batch, done, share).py_err()? {
            self.later.push(r);
        }
        Ok(())
    }
}

/// Frame `events` (a list of bytes/str, a pyarrow binary/string array, or any sequence of
/// bytes-like values) with `routing_keys` (one str for all, or one str/None per event) into
/// `sink`: a list of bytes in pieces of about `piece_bytes`, anything else in one piece.
/// Everything that can fail is checked before the first piece.
pub(crate) fn frame_events(
    events: &Bound<'_, PyAny>,
    routing_keys: Option<&Bound<'_, PyAny>>,
    piece_bytes: usize,
    sink: &mut dyn Pieces,
) -> PyResult<()> {
    // One key for all events, or one per event (None entries allowed).
    let single_key = match routing_keys {
        Some(k) if k.is_instance_of::<PyString>() => Some(key_arg(Some(k))?),
        _ => None,
    };
    let keys: Option<Vec<Option<String>>> = match routing_keys {
        None => None,
        Some(k) if k.is_none() || single_key.is_some() => None,
        Some(k) => {
            let mut v = Vec::new();
            if k.hasattr("to_pylist").unwrap_or(false) {
                for item in k.call_method0("to_pylist")?.try_iter()? {
                    v.push(key_arg(Some(&item?))?);
                }
            } else {
                for item in k.try_iter().map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err(
                        "routing_keys is a str, or a sequence of str/None per event",
                    )
                })? {
                    v.push(key_arg(Some(&item?))?);
                }
            }
            Some(v)
        }
    };
    let key_of = |i: usize| -> Option<&str> {
        if let Some(k) = &single_key {
            return k.as_deref();
        }
        keys.as_ref().and_then(|ks| ks[i].as_deref())
    };
    let check_len = |n: usize| -> PyResult<()> {
        if let Some(ks) = &keys {
            if ks.len() != n {
                return Err(to_py(Error::invalid(format!(
                    "routing_keys has {} entries for {n} events",
                    ks.len()
                ))));
            }
        }
        Ok(())
    };
    // Fast path: a list of bytes, framed straight from the objects.
    if let Ok(list) = events.cast::<PyList>() {
        let n = list.len();
        check_len(n)?;
        let mut total = 0;
        let mut all_bytes = true;
        for it in list.iter() {
            match it.cast::<PyBytes>() {
                Ok(b) => {
                    // Sizes are checked here: nothing fails once pieces are handed over.
                    check_event(b.as_bytes().len()).py_err()?;
                    total += b.as_bytes().len();
                }
                Err(_) => {
                    all_bytes = false;
                    break;
                }
            }
        }
        if all_bytes {
            sink.begin(n, total + 8 * n)?;
            let cap = |from: usize| {
                let left = n - from;
                let per = (total / n.max(1)).max(1);
                let events = (piece_bytes / (per + 8)).clamp(1, left.max(1));
                BatchBuilder::with_capacity(events, events * per)
            };
            let mut b = cap(0);
            for (i, it) in list.iter().enumerate() {
                let bytes = it.cast::<PyBytes>().expect("checked above");
                b.push(bytes.as_bytes(), key_of(i)).py_err()?;
                if b.bytes() >= piece_bytes && i + 1 < n {
                    let full = std::mem::replace(&mut b, cap(i + 1));
                    sink.piece(full.finish())?;
                }
            }
            if !b.is_empty() {
                sink.piece(b.finish())?;
            }
            return Ok(());
        }
    }
    if events.is_instance_of::<PyBytes>() || events.is_instance_of::<PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "write_many takes a sequence of events (or a pyarrow array), not a single event",
        ));
    }
    let vals = payloads(events)?;
    check_len(vals.len())?;
    let total: usize = vals.iter().map(|(v, _)| v.len()).sum();
    let mut b = BatchBuilder::with_capacity(vals.len(), total);
    for (i, (v, null)) in vals.iter().enumerate() {
        if *null {
            return Err(to_py(Error::invalid(format!(
                "events[{i}] is None: a Pravega event always has a value"
            ))));
        }
        b.push(v, key_of(i)).py_err()?;
    }
    // Not a list of bytes: framed whole (a bad value anywhere fails the call before any
    // event is handed over).
    sink.begin(b.len(), b.bytes())?;
    if !b.is_empty() {
        sink.piece(b.finish())?;
    }
    Ok(())
}
