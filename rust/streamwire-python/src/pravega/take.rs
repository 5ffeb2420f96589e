//! The one take path of `streamwire.pravega.Reader` (both faces), and why a cancelled
//! awaitable read loses nothing.
//!
//! The engine's `StreamReader::read` is not cancel-safe (a chunk fetched but not yet parsed
//! would be lost if the call were dropped), so an awaitable read is never aborted: a read
//! whose coroutine is cancelled runs to its end. Its events go into the reader's `held`
//! queue, never into a future's value; the future only says "look" (None), and the woken
//! coroutine takes what it asked for from `held` (`_take`) on the loop's thread with no
//! await in between, so events of a cancelled read stay first in line. A blocking read
//! takes held events first too (a program may use both faces), and otherwise reads straight
//! into its own vector (no queue in between on the hot path). Reads are serialised by the
//! reader's lock. `position()` puts held events back (their segment's offset is the first
//! held event's), so a persisted position resumes with no gap. `close` ends a pending
//! awaitable read (its events are dropped with the reader); a blocking read ends first.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use streamwire_core::error::{Error, Result};
use streamwire_pravega::reader::{EventSink, ReadEvent, SegRef, StreamReader};

/// Room an awaitable read gathers events in up front.
const HELD_CAP: usize = 65_536;

/// A reader's state shared by both faces and the engine tasks of awaitable reads.
pub(crate) struct Source {
    reader: tokio::sync::Mutex<Option<StreamReader>>,
    held: Mutex<VecDeque<ReadEvent>>,
    /// The engine reader's `at_end` after its last read (it changes only in reads).
    at_end: AtomicBool,
    closing: watch::Sender<bool>,
    /// Where the events held when the reader was stopped were (segment → offset of the
    /// oldest): a group reader leaving at close hands its segments over from there.
    dropped_at: Mutex<BTreeMap<SegRef, i64>>,
}

impl Source {
    pub fn new(r: StreamReader) -> Arc<Self> {
        Arc::new(Source {
            at_end: AtomicBool::new(r.at_end()),
            reader: tokio::sync::Mutex::new(Some(r)),
            held: Mutex::default(),
            closing: watch::channel(false).0,
            dropped_at: Mutex::default(),
        })
    }

    fn held(&self) -> MutexGuard<'_, VecDeque<ReadEvent>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn is_closing(&self) -> bool {
        *self.closing.borrow()
    }

    pub fn has_held(&self) -> bool {
        !self.held().is_empty()
    }

    /// True once closed, or once a sealed stream is read to its end with nothing held.
    pub fn at_end(&self) -> bool {
        self.is_closing() || (self.at_end.load(Ordering::Acquire) && !self.has_held())
    }

    /// Up to `max` held events, oldest first (the awaitable face's take, on the loop).
    pub fn take_held(&self, max: usize) -> Vec<ReadEvent> {
        let mut q = self.held();
        let n = max.min(q.len());
        q.drain(..n).collect()
    }

    /// The blocking face's read, under the reader's lock: events already held come first
    /// (a program may use both faces), else one engine read, waiting up to `timeout` for
    /// the first event, straight into `out` (no queue in between on the hot path; no watch
    /// per call either: a single-event `read` measured ~30% slower with one, so `close`
    /// waits for the read to end instead).
    pub async fn read<S: EventSink>(
        &self,
        max: usize,
        timeout: Duration,
        out: &mut S,
    ) -> Result<()> {
        let mut guard = self.reader.lock().await;
        {
            let mut held = self.held();
            if !held.is_empty() {
                let n = max.min(held.len());
                for e in held.drain(..n) {
                    let len = e.data.len();
                    out.push(e.stream, e.segment, e.offset, &e.data, 0..len);
                }
                return Ok(());
            }
        }
        let r = guard
            .as_mut()
            .ok_or_else(|| Error::closed("Pravega reader"))?;
        let start = out.taken();
        let res = r.read(max, timeout, out).await;
        self.at_end.store(r.at_end(), Ordering::Release);
        // Events taken are handed out even if the read then failed (it fails again).
        if out.taken() > start {
            Ok(())
        } else {
            res
        }
    }

    /// The awaitable face's read: one engine read into `held` (none when events are held
    /// already), whose future only says "look"; `close` ends it with `AlreadyClosedError`.
    pub async fn read_held(&self, max: usize, timeout: Duration) -> Result<()> {
        let read = async {
            let mut guard = self.reader.lock().await;
            if !self.held().is_empty() {
                return Ok(());
            }
            let r = guard
                .as_mut()
                .ok_or_else(|| Error::closed("Pravega reader"))?;
            let mut out = Vec::with_capacity(max.min(HELD_CAP));
            let res = r.read(max, timeout, &mut out).await;
            self.at_end.store(r.at_end(), Ordering::Release);
            let got = !out.is_empty();
            // No await after this point: the events reach `held` whatever happens.
            self.held().extend(out.drain(..));
            if got {
                Ok(())
            } else {
                res
            }
        };
        let mut closing = self.closing.subscribe();
        tokio::select! {
            biased;
            r = read => r,
            _ = closing.wait_for(|c| *c) => Err(Error::closed("Pravega reader")),
        }
    }

    /// The position after the last event handed out, held events put back: one stream
    /// cut's text per stream read (one but for a reader of a multi-stream group).
    pub async fn positions(&self) -> Result<Vec<String>> {
        let guard = self.reader.lock().await;
        let r = guard
            .as_ref()
            .ok_or_else(|| Error::closed("Pravega reader"))?;
        let cuts = r.cuts_with(&self.held_positions());
        Ok(cuts.iter().map(|c| c.to_text()).collect())
    }

    /// Each segment's offset of its oldest held event.
    fn held_positions(&self) -> BTreeMap<SegRef, i64> {
        let mut out = BTreeMap::new();
        for e in self.held().iter().rev() {
            // Walking back from the newest, the oldest held event of a segment wins.
            out.insert(SegRef::new(e.stream, e.segment), e.offset);
        }
        out
    }

    /// Mark the reader closed: pending reads end, held events are dropped (where they
    /// were is kept for a group reader's hand-over).
    pub fn stop(&self) {
        self.closing.send_replace(true);
        let at = self.held_positions();
        self.dropped_at
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(at);
        self.held().clear();
    }

    /// Take a group reader offline: its segments go back to the group at the position
    /// after the last event handed out (held events put back). False when it was offline.
    pub async fn offline(&self) -> Result<bool> {
        let mut guard = self.reader.lock().await;
        let r = guard
            .as_mut()
            .ok_or_else(|| Error::closed("Pravega reader"))?;
        let mut at = r.positions().clone();
        at.extend(self.held_positions());
        at.extend(std::mem::take(
            &mut *self.dropped_at.lock().unwrap_or_else(|p| p.into_inner()),
        ));
        self.held().clear();
        r.leave_group(Some(at)).await
    }

    /// Drop the engine reader (after `stop`; waits for a read in progress to end). A group
    /// reader leaves its group first, as the official readers do when dropped.
    pub async fn close(&self) -> Result<()> {
        let grouped = matches!(&*self.reader.lock().await, Some(r) if r.group_reader().is_some());
        let res = if grouped {
            self.offline().await.map(|_| ())
        } else {
            Ok(())
        };
        self.reader.lock().await.take();
        res
    }
}
