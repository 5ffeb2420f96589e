//! One reader's membership of a group: what its `StreamReader` does between reads, every
//! `refresh` (and at its first read), over the segments of every stream the group reads:
//!
//! 1. report segments it read to their end (sealed), with their successors, so that those
//!    become assignable once all their predecessors are read;
//! 2. record its positions (the offset after the last event handed out, per segment), so
//!    that a reader that dies hands its segments over near where it stopped;
//! 3. rebalance: acquire unassigned segments up to its fair share, or release one when it
//!    holds more (the official readers' rule, so both kinds converge on the same split).
//!
//! Reads happen in between, on the segments held; the segment reading itself is the plain
//! reader's (fetch tasks, chunks, read-ahead).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use streamwire_core::error::{Error, ErrorKind, Result};

use super::state;
use super::{GroupTable, SegKey};
use crate::controller::Segment;
use crate::reader::{SegRef, StreamReader};

#[derive(Debug, Clone)]
pub struct Member {
    pub(crate) table: GroupTable,
    pub(crate) reader: String,
    refresh: Duration,
    pub(crate) next_sync: Instant,
    /// The positions last recorded in the group.
    recorded: BTreeMap<SegRef, i64>,
    pub(crate) offline: bool,
}

impl Member {
    pub fn new(table: GroupTable, reader: String, refresh: Duration) -> Member {
        Member {
            table,
            reader,
            refresh,
            next_sync: Instant::now(),
            recorded: BTreeMap::new(),
            offline: false,
        }
    }

    pub fn reader(&self) -> &str {
        &self.reader
    }

    pub(crate) fn due(&self) -> bool {
        Instant::now() >= self.next_sync
    }

    fn offline_error(&self) -> Error {
        Error::new(
            ErrorKind::Closed,
            format!("Pravega group reader {} is offline", self.reader),
        )
    }

    /// One round of the membership work (see the module comment).
    pub(crate) async fn sync(&mut self, r: &mut StreamReader) -> Result<()> {
        if self.offline {
            return Err(self.offline_error());
        }
        self.next_sync = Instant::now() + self.refresh;
        let result = self.sync_inner(r).await;
        if let Err(e) = &result {
            if e.kind() == ErrorKind::Closed {
                // Taken offline by someone else: its segments are no longer ours to read.
                self.offline = true;
                r.drop_all();
            }
        }
        result
    }

    async fn sync_inner(&mut self, r: &mut StreamReader) -> Result<()> {
        let reader = self.reader.clone();
        for seg in r.take_completed() {
            let Some(key) = r.seg_key(seg) else { continue };
            let successors = r
                .client()
                .controller()
                .get_successors(&Segment {
                    stream: key.stream.clone(),
                    id: seg.id,
                    low: 0.0,
                    high: 0.0,
                })
                .await?;
            let succ: Vec<(SegKey, Vec<i64>)> = successors
                .into_iter()
                .map(|s| (SegKey::new(&key.stream, s.segment.id), s.predecessors))
                .collect();
            self.table
                .update(|snap| {
                    state::segment_completed(snap, &reader, &key, &succ).map(|c| Some((c, ())))
                })
                .await?;
            r.forget_segment(seg);
        }
        let now = r.held_positions();
        if now != self.recorded {
            let positions: BTreeMap<SegKey, i64> = now
                .iter()
                .filter_map(|(s, o)| Some((r.seg_key(*s)?, *o)))
                .collect();
            self.table
                .update(|snap| {
                    state::update_positions(snap, &reader, &positions).map(|c| Some((c, ())))
                })
                .await?;
            self.recorded = now;
        }
        // Only segments of the streams this reader reads are taken (a group whose streams
        // changed since it joined keeps the others free for readers that read them).
        let streams = r.streams().to_vec();
        let took = self
            .table
            .update(|snap| {
                let n = snap.to_acquire(&reader)?;
                if n <= 0 {
                    // Not online any more shows here as an error too.
                    state::update_positions(snap, &reader, &BTreeMap::new())?;
                    return Ok(Some((state::Change::default(), (Vec::new(), n))));
                }
                let (c, took) =
                    state::acquire(snap, &reader, n as usize, |k| streams.contains(&k.stream))?;
                Ok(Some((c, (took, n))))
            })
            .await?;
        let Some((took, n)) = took else {
            return Ok(());
        };
        for (key, off) in took {
            if let Some(seg) = r.seg_ref(&key) {
                r.add_segment(seg, off);
                self.recorded.insert(seg, off);
            }
        }
        if n < 0 {
            if let Some((&seg, _)) = r.held_positions().iter().next_back() {
                let off = r.drop_segment(seg).await.unwrap_or(0);
                if let Some(key) = r.seg_key(seg) {
                    self.table
                        .update(|snap| {
                            state::release(snap, &reader, &key, off).map(|c| Some((c, ())))
                        })
                        .await?;
                }
                self.recorded.remove(&seg);
            }
        }
        Ok(())
    }

    /// Leave the group: the segments go back at `positions` (the recorded ones for segments
    /// missing there). False when it was offline already.
    pub(crate) async fn leave(&mut self, positions: &BTreeMap<SegKey, i64>) -> Result<bool> {
        if self.offline {
            return Ok(false);
        }
        self.offline = true;
        let reader = self.reader.clone();
        let done = self
            .table
            .update(|snap| {
                Ok(state::remove_reader(snap, &reader, Some(positions))?.map(|c| (c, ())))
            })
            .await?;
        Ok(done.is_some())
    }
}
