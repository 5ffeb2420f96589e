//! Reading a stream: every segment, successors after a scale, a position as a stream cut.
//! A reader group's reader reads the segments its group gives it, of every stream the group
//! reads: segments are then named by the stream's index among the reader's streams and
//! their id ([`SegRef`]), and each event says which stream it came from.
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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{EntityMetrics, Kind, C, G};

use crate::client::PravegaClient;
use crate::controller::{ScopedStream, Segment};
use crate::group::member::Member;
use crate::group::SegKey;
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
    /// The stream's index in [`StreamReader::streams`] (0 for a reader of one stream).
    pub stream: u32,
    pub segment: i64,
    pub offset: i64,
}

/// A segment of one of a reader's streams: the stream's index in
/// [`StreamReader::streams`] and the segment id (ids repeat across streams: every stream
/// has a segment 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegRef {
    pub stream: u32,
    pub id: i64,
}

impl SegRef {
    pub fn new(stream: u32, id: i64) -> SegRef {
        SegRef { stream, id }
    }
}

/// Where a read puts the events it hands out. A `Vec<ReadEvent>` keeps each payload as a
/// slice of the read (a reference count taken per event); a caller that copies payloads
/// out anyway (an Arrow batch) takes them by reference instead: the two atomic reference
/// count updates per event were 11% of a `read_arrow` profile.
pub trait EventSink {
    /// Events in the sink.
    fn taken(&self) -> usize;
    /// One event: its payload is `data[range]`.
    fn push(&mut self, stream: u32, segment: i64, offset: i64, data: &Bytes, range: Range<usize>);
}

impl EventSink for Vec<ReadEvent> {
    fn taken(&self) -> usize {
        self.len()
    }

    fn push(&mut self, stream: u32, segment: i64, offset: i64, data: &Bytes, range: Range<usize>) {
        Vec::push(
            self,
            ReadEvent {
                data: data.slice(range),
                stream,
                segment,
                offset,
            },
        );
    }
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
    /// The streams read: one for a stream's reader, the group's for a group's reader
    /// (events and segments name them by their index here).
    streams: Vec<ScopedStream>,
    config: ReaderConfig,
    tx: mpsc::Sender<Fetched>,
    rx: mpsc::Receiver<Fetched>,
    /// Segments read or ended (with successors not started yet): offset past the last event
    /// handed out.
    positions: BTreeMap<SegRef, i64>,
    ended: HashSet<SegRef>,
    /// Successor → its predecessors, until all have ended.
    waiting: HashMap<SegRef, Vec<SegRef>>,
    tasks: HashMap<SegRef, JoinHandle<()>>,
    /// The chunk being handed out, and how far.
    current: Option<(Chunk, usize)>,
    /// Exported metrics: events and bytes handed out, chunks fetched, re-dials; the
    /// receive-queue gauge is the number of chunks read ahead, set after each read.
    metrics: Arc<EntityMetrics>,
    /// A reader group member: the group gives and takes its segments (`group::member`);
    /// ended segments are reported to the group instead of followed here.
    group: Option<Box<Member>>,
    /// The membership as it was at creation: put back if `group` was lost (a read dropped
    /// while its membership round awaited), so the reader can still read and leave.
    group_seed: Option<Box<Member>>,
    /// Fetched items put back while a released segment's were picked out of the queue.
    pending: VecDeque<Fetched>,
    /// Segments read to their end, not yet reported to the group.
    completed: Vec<SegRef>,
    /// Payload bytes handed out by the read under way (for the metrics).
    handed_bytes: usize,
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
        let mut reader = StreamReader::empty(client, vec![stream], config, String::new());
        for (seg, off) in positions {
            reader.start_segment(SegRef::new(0, seg), off);
        }
        Ok(reader)
    }

    /// A reader of `streams` holding no segment yet.
    fn empty(
        client: &PravegaClient,
        streams: Vec<ScopedStream>,
        config: ReaderConfig,
        name: String,
    ) -> StreamReader {
        let (tx, rx) = mpsc::channel(config.read_ahead.max(1));
        let label: Vec<String> = streams.iter().map(ToString::to_string).collect();
        let metrics =
            EntityMetrics::register(client.entity_labels(Kind::Reader, label.join(","), name));
        StreamReader {
            client: client.clone(),
            streams,
            config,
            tx,
            rx,
            positions: BTreeMap::new(),
            ended: HashSet::new(),
            waiting: HashMap::new(),
            tasks: HashMap::new(),
            current: None,
            metrics,
            group: None,
            group_seed: None,
            pending: VecDeque::new(),
            completed: Vec::new(),
            handed_bytes: 0,
        }
    }

    /// A reader group member reading the group's `streams`: no segment until its first
    /// read, where the group gives it its share.
    pub async fn create_member(
        client: &PravegaClient,
        streams: Vec<ScopedStream>,
        member: Member,
        config: ReaderConfig,
    ) -> Result<StreamReader> {
        if streams.is_empty() || streams.len() > u32::MAX as usize {
            return Err(Error::invalid("a group reader reads at least one stream"));
        }
        // Asked once here so that refused credentials fail the reader's creation.
        for s in &streams {
            client.delegation_token(s).await?;
        }
        let name = member.reader().to_owned();
        let mut r = StreamReader::empty(client, streams, config, name);
        r.group_seed = Some(Box::new(member.clone()));
        r.group = Some(Box::new(member));
        Ok(r)
    }

    pub(crate) fn client(&self) -> &PravegaClient {
        &self.client
    }

    /// The group reader's id, for a group member.
    pub fn group_reader(&self) -> Option<&str> {
        self.group_seed.as_deref().map(Member::reader)
    }

    /// Start reading a segment the group gave.
    pub(crate) fn add_segment(&mut self, seg: SegRef, offset: i64) {
        if !self.positions.contains_key(&seg) {
            self.start_segment(seg, offset);
        }
    }

    /// The offsets of the segments held (after the last event handed out).
    pub(crate) fn held_positions(&self) -> BTreeMap<SegRef, i64> {
        self.positions
            .iter()
            .filter(|(s, _)| !self.completed.contains(s))
            .map(|(s, o)| (*s, *o))
            .collect()
    }

    pub(crate) fn take_completed(&mut self) -> Vec<SegRef> {
        std::mem::take(&mut self.completed)
    }

    /// Forget a segment reported complete.
    pub(crate) fn forget_segment(&mut self, seg: SegRef) {
        self.positions.remove(&seg);
    }

    /// Stop reading `seg` (released to the group): its offset after the last event handed
    /// out. Its fetch task is ended and joined first, so that nothing it fetched is left
    /// queued to be mistaken for a later fetch of the same segment.
    pub(crate) async fn drop_segment(&mut self, seg: SegRef) -> Option<i64> {
        if let Some(t) = self.tasks.remove(&seg) {
            t.abort();
            let _ = t.await;
        }
        let mut keep = VecDeque::new();
        for f in self.pending.drain(..) {
            if f.seg() != seg {
                keep.push_back(f);
            }
        }
        while let Ok(f) = self.rx.try_recv() {
            if f.seg() != seg {
                keep.push_back(f);
            }
        }
        self.pending = keep;
        if matches!(&self.current, Some((c, _)) if c.stream == seg.stream && c.segment == seg.id) {
            self.current = None;
        }
        self.completed.retain(|s| *s != seg);
        self.positions.remove(&seg)
    }

    /// Stop reading every segment (offline).
    pub(crate) fn drop_all(&mut self) {
        for t in self.tasks.values() {
            t.abort();
        }
        self.tasks.clear();
        self.pending.clear();
        while self.rx.try_recv().is_ok() {}
        self.current = None;
        self.completed.clear();
        self.positions.clear();
    }

    /// Leave the reader's group, handing its segments over at `positions` (its own
    /// positions when `None`): false when it was offline already. Reads then fail with
    /// `AlreadyClosedError`.
    pub async fn leave_group(&mut self, positions: Option<BTreeMap<SegRef, i64>>) -> Result<bool> {
        if self.group_seed.is_none() {
            return Err(Error::invalid("this reader is not a reader group's member"));
        }
        if self.group.is_none() {
            self.group = self.group_seed.clone();
        }
        let positions = positions.unwrap_or_else(|| self.positions.clone());
        let keyed: BTreeMap<SegKey, i64> = positions
            .iter()
            .filter_map(|(s, o)| Some((self.seg_key(*s)?, *o)))
            .collect();
        self.drop_all();
        match self.group.as_mut() {
            Some(member) => member.leave(&keyed).await,
            None => Ok(false),
        }
    }

    /// The stream read (the first of a group reader's streams).
    pub fn stream(&self) -> &ScopedStream {
        &self.streams[0]
    }

    /// Every stream read; events and [`SegRef`]s name them by their index here.
    pub fn streams(&self) -> &[ScopedStream] {
        &self.streams
    }

    /// The group's name of one of this reader's segments.
    pub fn seg_key(&self, seg: SegRef) -> Option<SegKey> {
        self.streams
            .get(seg.stream as usize)
            .map(|s| SegKey::new(s, seg.id))
    }

    /// One of this reader's segments by the group's name (`None`: a stream it does not
    /// read).
    pub fn seg_ref(&self, key: &SegKey) -> Option<SegRef> {
        self.streams
            .iter()
            .position(|s| *s == key.stream)
            .map(|i| SegRef::new(i as u32, key.id))
    }

    /// This reader's metric cells.
    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.metrics
    }

    fn start_segment(&mut self, seg: SegRef, offset: i64) {
        self.positions.insert(seg, offset);
        let task = tokio::spawn(fetch::run(
            self.client.clone(),
            self.streams[seg.stream as usize].clone(),
            seg,
            offset,
            self.config.fetch.clone(),
            self.tx.clone(),
            Arc::clone(&self.metrics),
        ));
        self.tasks.insert(seg, task);
    }

    /// The position after the last event handed out, in the first stream (the only one
    /// of a stream's reader; see [`StreamReader::cuts`] for a group reader's streams).
    pub fn position(&self) -> StreamCut {
        self.cuts_with(&BTreeMap::new()).swap_remove(0)
    }

    /// The offsets after the last event handed out, every stream's segments.
    pub fn positions(&self) -> &BTreeMap<SegRef, i64> {
        &self.positions
    }

    /// One stream cut per stream read, in the order of [`StreamReader::streams`]: the
    /// position after the last event handed out, `over` taking precedence (events held
    /// back by a caller put back).
    pub fn cuts_with(&self, over: &BTreeMap<SegRef, i64>) -> Vec<StreamCut> {
        let mut cuts: Vec<StreamCut> = self
            .streams
            .iter()
            .map(|s| StreamCut {
                stream: s.clone(),
                positions: BTreeMap::new(),
            })
            .collect();
        for (seg, off) in self.positions.iter().chain(over) {
            if let Some(c) = cuts.get_mut(seg.stream as usize) {
                c.positions.insert(seg.id, *off);
            }
        }
        cuts
    }

    /// Every segment ended and none follows (a sealed stream read to its end). Never for a
    /// group member: the group may give it segments at any time.
    pub fn at_end(&self) -> bool {
        self.group_seed.is_none()
            && self.current.is_none()
            && self.tasks.is_empty()
            && self.waiting.is_empty()
    }

    /// Hand out up to `max` events, waiting up to `timeout` for the first; `out` gets them.
    pub async fn read<S: EventSink>(
        &mut self,
        max: usize,
        timeout: Duration,
        out: &mut S,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let start = out.taken();
        self.handed_bytes = 0;
        let res = if self.group_seed.is_some() {
            self.read_member(max, deadline, start, out).await
        } else {
            self.read_into(max, deadline, start, out).await
        };
        let handed = out.taken() - start;
        if handed > 0 {
            self.metrics.add(C::Messages, handed as u64);
            self.metrics.add(C::Bytes, self.handed_bytes as u64);
        }
        self.metrics
            .gauge(G::ReceiveQueue)
            .set(self.rx.len() as i64);
        res
    }

    /// A group member's read: the membership work when due, then reads of the segments held
    /// until events come, `deadline`, or the next membership round.
    async fn read_member<S: EventSink>(
        &mut self,
        max: usize,
        deadline: Instant,
        start: usize,
        out: &mut S,
    ) -> Result<()> {
        loop {
            if self.group.is_none() {
                self.group = self.group_seed.clone();
            }
            let next_sync = match self.group.as_mut() {
                Some(m) if m.due() || m.offline => {
                    let mut m = self.group.take().expect("checked");
                    let res = m.sync(self).await;
                    let next = m.next_sync;
                    self.group = Some(m);
                    res?;
                    next
                }
                Some(m) => m.next_sync,
                None => return Err(Error::invalid("not a group member")),
            };
            self.read_into(max, deadline.min(next_sync), start, out)
                .await?;
            if out.taken() > start || Instant::now() >= deadline {
                return Ok(());
            }
        }
    }

    async fn read_into<S: EventSink>(
        &mut self,
        max: usize,
        deadline: Instant,
        start: usize,
        out: &mut S,
    ) -> Result<()> {
        loop {
            self.take_current(max - (out.taken() - start), out);
            if out.taken() - start >= max {
                return Ok(());
            }
            // More already fetched: keep filling without waiting.
            let queued = match self.pending.pop_front() {
                Some(f) => Ok(f),
                None => self.rx.try_recv(),
            };
            let next = match queued {
                Ok(f) => f,
                Err(_) if out.taken() > start => return Ok(()),
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

    fn take_current<S: EventSink>(&mut self, max: usize, out: &mut S) {
        let Some((chunk, pos)) = &mut self.current else {
            return;
        };
        let d = &chunk.data;
        let mut n = 0;
        let mut bytes = 0;
        while n < max && d.len() - *pos >= 8 {
            let len =
                u32::from_be_bytes([d[*pos + 4], d[*pos + 5], d[*pos + 6], d[*pos + 7]]) as usize;
            out.push(
                chunk.stream,
                chunk.segment,
                chunk.offset + *pos as i64,
                d,
                *pos + 8..*pos + 8 + len,
            );
            *pos += 8 + len;
            bytes += len;
            n += 1;
        }
        self.handed_bytes += bytes;
        let seg = SegRef::new(chunk.stream, chunk.segment);
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
                if self
                    .positions
                    .contains_key(&SegRef::new(c.stream, c.segment))
                {
                    self.current = Some((c, 0));
                }
                Ok(())
            }
            Fetched::Failed { seg, error } => {
                self.tasks.remove(&seg);
                Err(error)
            }
            Fetched::End { seg, offset } if self.group_seed.is_some() => {
                // The group decides who reads the successors (once all predecessors end).
                self.tasks.remove(&seg);
                if let Some(at) = self.positions.get_mut(&seg) {
                    *at = offset;
                    self.completed.push(seg);
                }
                Ok(())
            }
            Fetched::End { seg, offset } => {
                self.tasks.remove(&seg);
                self.positions.insert(seg, offset);
                self.ended.insert(seg);
                let successors = self
                    .client
                    .controller()
                    .get_successors(&Segment {
                        stream: self.streams[seg.stream as usize].clone(),
                        id: seg.id,
                        low: 0.0,
                        high: 0.0,
                    })
                    .await?;
                for s in successors {
                    let id = SegRef::new(seg.stream, s.segment.id);
                    if self.positions.contains_key(&id) || self.ended.contains(&id) {
                        continue;
                    }
                    let preds = s
                        .predecessors
                        .iter()
                        .map(|p| SegRef::new(seg.stream, *p))
                        .collect();
                    self.waiting.insert(id, preds);
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
        let ready: Vec<SegRef> = self
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
        let still_needed: HashSet<SegRef> = self.waiting.values().flatten().copied().collect();
        let done: Vec<SegRef> = self
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
