//! Reading a stream: every segment, successors after a scale, a position as a stream cut.
//!
//! Each segment being read has a fetch task (`fetch`) that long-polls its store and queues
//! chunks of whole events (`chunk`) into one bounded queue, the read-ahead. The stream reader
//! hands events out in segment order, records each segment's offset past the last event it
//! handed out (its `position`, a [`StreamCut`]), and when a sealed segment ends, starts the
//! successors whose predecessors have all ended (so a key's events, which move to a successor
//! at a scale, stay in order).

pub mod chunk;
pub mod cut;
pub mod fetch;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{EntityMetrics, Kind, C, G};

use crate::client::PravegaClient;
use crate::controller::{ScopedStream, Segment};
pub use chunk::Chunk;
pub use cut::StreamCut;
pub use fetch::{FetchConfig, Fetched};

/// Where a reader starts.
#[derive(Debug, Clone)]
pub enum Start {
    /// The oldest events the stream holds.
    Head,
    /// Only events written from now on.
    Tail,
    Cut(StreamCut),
}

/// Settings of a reader.
#[derive(Debug, Clone)]
pub struct ReaderConfig {
    pub fetch: FetchConfig,
    /// Chunks fetched ahead of the caller (each up to `fetch.read_length` bytes).
    pub read_ahead: usize,
}

impl Default for ReaderConfig {
    fn default() -> Self {
        ReaderConfig {
            fetch: FetchConfig::default(),
            read_ahead: 16,
        }
    }
}

/// One event read: its payload (a slice of the read, no copy) and where it was.
#[derive(Debug, Clone)]
pub struct ReadEvent {
    pub data: Bytes,
    pub segment: i64,
    pub offset: i64,
}

/// The stream's head: its oldest segments at their first readable offsets.
pub async fn head_cut(client: &PravegaClient, stream: &ScopedStream) -> Result<StreamCut> {
    let positions = client.controller().get_segments(stream, 0).await?.positions;
    Ok(StreamCut {
        stream: stream.clone(),
        positions,
    })
}

/// The stream's tail now: its open segments at their write offsets.
pub async fn tail_cut(client: &PravegaClient, stream: &ScopedStream) -> Result<StreamCut> {
    let ctl = client.controller();
    let current = ctl.get_current_segments(stream).await?;
    let mut positions = BTreeMap::new();
    for s in &current.segments {
        let info = client
            .segment_info(stream, s.id, &current.delegation_token)
            .await?;
        positions.insert(s.id, info.write_offset);
    }
    Ok(StreamCut {
        stream: stream.clone(),
        positions,
    })
}

/// Every segment's byte range between two cuts, `(segment, from, to)` (`to` exclusive): the
/// segments of `start`, and the successors of those sealed before `end`, up to `end`'s
/// offsets (segments absent from `end` are read to their sealed length).
pub async fn segments_between(
    client: &PravegaClient,
    stream: &ScopedStream,
    start: &StreamCut,
    end: &StreamCut,
) -> Result<Vec<(i64, i64, i64)>> {
    let token = client.delegation_token(stream).await?;
    let mut todo: std::collections::VecDeque<(i64, i64)> =
        start.positions.iter().map(|(s, o)| (*s, *o)).collect();
    let mut seen: HashSet<i64> = start.positions.keys().copied().collect();
    let mut out = Vec::new();
    while let Some((seg, from)) = todo.pop_front() {
        if let Some(to) = end.positions.get(&seg) {
            if *to > from {
                out.push((seg, from, *to));
            }
            continue;
        }
        let info = client.segment_info(stream, seg, &token).await?;
        if !info.sealed {
            // Open but not in the end cut: the end cut is older than this segment's data.
            continue;
        }
        if info.write_offset > from {
            out.push((seg, from.max(info.start_offset), info.write_offset));
        }
        let successors = client
            .controller()
            .get_successors(&Segment {
                stream: stream.clone(),
                id: seg,
                low: 0.0,
                high: 0.0,
            })
            .await?;
        for s in successors {
            if seen.insert(s.segment.id) {
                todo.push_back((s.segment.id, 0));
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub struct StreamReader {
    client: PravegaClient,
    stream: ScopedStream,
    config: ReaderConfig,
    tx: mpsc::Sender<Fetched>,
    rx: mpsc::Receiver<Fetched>,
    /// Segments read or ended (with successors not started yet): offset past the last event
    /// handed out.
    positions: BTreeMap<i64, i64>,
    ended: HashSet<i64>,
    /// Successor → its predecessors, until all have ended.
    waiting: HashMap<i64, Vec<i64>>,
    tasks: HashMap<i64, JoinHandle<()>>,
    /// The chunk being handed out, and how far.
    current: Option<(Chunk, usize)>,
    /// Exported metrics: events and bytes handed out, chunks fetched, re-dials; the
    /// receive-queue gauge is the number of chunks read ahead, set after each read.
    metrics: Arc<EntityMetrics>,
}

impl Drop for StreamReader {
    fn drop(&mut self) {
        for t in self.tasks.values() {
            t.abort();
        }
    }
}

impl StreamReader {
    /// Resolve `start` to a stream cut and start reading there.
    pub async fn create(
        client: &PravegaClient,
        stream: ScopedStream,
        start: Start,
        config: ReaderConfig,
    ) -> Result<StreamReader> {
        let ctl = client.controller();
        // Asked once here so that refused credentials fail the reader's creation; the fetch
        // tasks take it (renewed when due) from the client's cache.
        client.delegation_token(&stream).await?;
        let positions = match start {
            Start::Head => head_cut(client, &stream).await?.positions,
            Start::Tail => tail_cut(client, &stream).await?.positions,
            Start::Cut(cut) => {
                if cut.stream != stream {
                    return Err(Error::invalid(format!(
                        "the stream cut is of {}/{}, not of {}/{}",
                        cut.stream.scope, cut.stream.stream, stream.scope, stream.stream
                    )));
                }
                cut.positions
            }
        };
        if positions.is_empty() && !ctl.check_stream_exists(&stream).await? {
            return Err(Error::new(
                ErrorKind::TopicNotFound,
                format!("stream {}/{} does not exist", stream.scope, stream.stream),
            ));
        }
        let (tx, rx) = mpsc::channel(config.read_ahead.max(1));
        let metrics = EntityMetrics::register(client.entity_labels(
            Kind::Reader,
            format!("{}/{}", stream.scope, stream.stream),
            String::new(),
        ));
        let mut reader = StreamReader {
            client: client.clone(),
            stream,
            config,
            tx,
            rx,
            positions: BTreeMap::new(),
            ended: HashSet::new(),
            waiting: HashMap::new(),
            tasks: HashMap::new(),
            current: None,
            metrics,
        };
        for (seg, off) in positions {
            reader.start_segment(seg, off);
        }
        Ok(reader)
    }

    pub fn stream(&self) -> &ScopedStream {
        &self.stream
    }

    /// This reader's metric cells.
    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.metrics
    }

    fn start_segment(&mut self, segment: i64, offset: i64) {
        self.positions.insert(segment, offset);
        let task = tokio::spawn(fetch::run(
            self.client.clone(),
            self.stream.clone(),
            segment,
            offset,
            self.config.fetch.clone(),
            self.tx.clone(),
            Arc::clone(&self.metrics),
        ));
        self.tasks.insert(segment, task);
    }

    /// The position after the last event handed out.
    pub fn position(&self) -> StreamCut {
        StreamCut {
            stream: self.stream.clone(),
            positions: self.positions.clone(),
        }
    }

    /// Every segment ended and none follows (a sealed stream read to its end).
    pub fn at_end(&self) -> bool {
        self.current.is_none() && self.tasks.is_empty() && self.waiting.is_empty()
    }

    /// Hand out up to `max` events, waiting up to `timeout` for the first; `out` gets them.
    pub async fn read(
        &mut self,
        max: usize,
        timeout: Duration,
        out: &mut Vec<ReadEvent>,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let start = out.len();
        let res = self.read_into(max, deadline, start, out).await;
        let handed = &out[start..];
        if !handed.is_empty() {
            let bytes: usize = handed.iter().map(|e| e.data.len()).sum();
            self.metrics.add(C::Messages, handed.len() as u64);
            self.metrics.add(C::Bytes, bytes as u64);
        }
        self.metrics
            .gauge(G::ReceiveQueue)
            .set(self.rx.len() as i64);
        res
    }

    async fn read_into(
        &mut self,
        max: usize,
        deadline: Instant,
        start: usize,
        out: &mut Vec<ReadEvent>,
    ) -> Result<()> {
        loop {
            self.take_current(max - (out.len() - start), out);
            if out.len() - start >= max {
                return Ok(());
            }
            // More already fetched: keep filling without waiting.
            let next = match self.rx.try_recv() {
                Ok(f) => f,
                Err(_) if out.len() > start => return Ok(()),
                Err(_) if self.at_end() => return Ok(()),
                Err(_) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, self.rx.recv()).await {
                        Ok(Some(f)) => f,
                        Ok(None) => return Err(Error::closed("Pravega reader")),
                        Err(_) => return Ok(()),
                    }
                }
            };
            self.on_fetched(next).await?;
        }
    }

    fn take_current(&mut self, max: usize, out: &mut Vec<ReadEvent>) {
        let Some((chunk, pos)) = &mut self.current else {
            return;
        };
        let d = &chunk.data;
        let mut n = 0;
        while n < max && d.len() - *pos >= 8 {
            let len =
                u32::from_be_bytes([d[*pos + 4], d[*pos + 5], d[*pos + 6], d[*pos + 7]]) as usize;
            out.push(ReadEvent {
                data: d.slice(*pos + 8..*pos + 8 + len),
                segment: chunk.segment,
                offset: chunk.offset + *pos as i64,
            });
            *pos += 8 + len;
            n += 1;
        }
        let seg = chunk.segment;
        let after = chunk.offset + *pos as i64;
        if *pos >= d.len() {
            self.current = None;
        }
        if n > 0 {
            self.positions.insert(seg, after);
        }
    }

    async fn on_fetched(&mut self, f: Fetched) -> Result<()> {
        match f {
            Fetched::Chunk(c) => {
                self.metrics.add(C::Batches, 1);
                if self.positions.contains_key(&c.segment) {
                    self.current = Some((c, 0));
                }
                Ok(())
            }
            Fetched::Failed { segment, error } => {
                self.tasks.remove(&segment);
                Err(error)
            }
            Fetched::End { segment, offset } => {
                self.tasks.remove(&segment);
                self.positions.insert(segment, offset);
                self.ended.insert(segment);
                let successors = self
                    .client
                    .controller()
                    .get_successors(&Segment {
                        stream: self.stream.clone(),
                        id: segment,
                        low: 0.0,
                        high: 0.0,
                    })
                    .await?;
                for s in successors {
                    let id = s.segment.id;
                    if self.positions.contains_key(&id) || self.ended.contains(&id) {
                        continue;
                    }
                    self.waiting.insert(id, s.predecessors);
                }
                self.start_ready();
                Ok(())
            }
        }
    }

    /// Start successors whose predecessors have all ended (a predecessor this reader never
    /// had counts as ended: its events were not part of the cut it started from), and
    /// forget ended segments nothing waits for any more.
    fn start_ready(&mut self) {
        let ready: Vec<i64> = self
            .waiting
            .iter()
            .filter(|(_, preds)| {
                preds
                    .iter()
                    .all(|p| self.ended.contains(p) || !self.positions.contains_key(p))
            })
            .map(|(s, _)| *s)
            .collect();
        if ready.is_empty() {
            return;
        }
        for s in &ready {
            self.waiting.remove(s);
            self.start_segment(*s, 0);
        }
        let still_needed: HashSet<i64> = self.waiting.values().flatten().copied().collect();
        let done: Vec<i64> = self
            .ended
            .iter()
            .filter(|e| !still_needed.contains(e))
            .copied()
            .collect();
        for e in done {
            self.positions.remove(&e);
        }
    }
}
