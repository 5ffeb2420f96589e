//! The writer's task: segment writers, their connections, and what happens on a lost
//! connection or a sealed segment. All state lives here, so routing, re-sends and successor
//! hand-overs happen in one order; connection set-ups and controller lookups run in tasks of
//! their own and report back as events, so a slow segment never holds up the others.
//!
//! A large event (over 8 MiB, `large`) is a barrier, as in the official writers: the events
//! handed over before it are settled first, then it is written through a transient segment
//! by a task of its own, and the events handed over after it wait (`held`) until it is
//! merged, so the order in which a caller hands events over is the order readers see.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use tokio::sync::{mpsc, oneshot};

use streamwire_core::backoff::Backoff;
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::log::{event, Level};
use streamwire_core::metrics::{EntityMetrics, C};

use super::batch::{route, split_large, Piece, Points};
use super::large::{has_large, split_at_large, Step};
use super::queue::{Acked, SegmentQueue};
use super::{Command, WriterConfig};
use crate::client::PravegaClient;
use crate::connection::{dial, Connection};
use crate::controller::{
    txn_id_text, txn_segment_name, CurrentSegments, ScopedStream, Segment, Successor,
};
use crate::routing::{segment_for, KeyRange};
use crate::wire::{self, Reply};

mod large_event;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No connection and nothing asked for one.
    Idle,
    Connecting,
    Ready,
    /// Waiting for a retry after a failed set-up.
    Backoff,
    /// The store said sealed: successors are being looked up.
    Sealed,
}

struct Seg {
    segment: Segment,
    name: String,
    writer_id: u128,
    queue: SegmentQueue,
    conn: Option<Connection>,
    generation: u64,
    state: State,
    backoff: Backoff,
    /// Since when events have waited without a connection.
    down_since: Option<Instant>,
    next_request: i64,
}

enum Event {
    Setup {
        seg: i64,
        generation: u64,
        result: Result<(Connection, i64)>,
    },
    Reply {
        seg: i64,
        generation: u64,
        reply: Reply,
    },
    Lost {
        seg: i64,
        generation: u64,
        error: Error,
    },
    Retry {
        seg: i64,
        generation: u64,
    },
    Successors {
        seg: i64,
        result: Result<Vec<Successor>>,
    },
    /// The large write under way ended.
    LargeDone(Result<()>),
}

struct Actor {
    client: PravegaClient,
    stream: ScopedStream,
    config: WriterConfig,
    segs: HashMap<i64, Seg>,
    ranges: Vec<KeyRange>,
    events: mpsc::Sender<Event>,
    outstanding: usize,
    pending: Arc<AtomicUsize>,
    metrics: Arc<EntityMetrics>,
    flushers: Vec<oneshot::Sender<Result<()>>>,
    closing: Option<oneshot::Sender<Result<()>>>,
    /// The first failure since the last flush.
    failure: Option<Error>,
    /// Set when the whole writer can no longer write (stream sealed or deleted).
    fatal: Option<Error>,
    rng: u64,
    /// Writing inside this transaction: appends go to its segments beside the stream's, and
    /// a sealed or missing one means the transaction is over (never a scale to follow).
    txn: Option<u128>,
    /// Events waiting behind a large event, in the order they were handed over.
    held: VecDeque<Step>,
    /// How many events `held` holds.
    held_events: usize,
    /// The large event being written (nothing else is routed meanwhile).
    large: Option<Piece>,
}

/// Large batches are cut into pieces of at most a block over this, at event boundaries.
const PIECES_PER_BLOCK: usize = 4;

fn random_u64() -> u64 {
    rand::random::<u64>()
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    client: PravegaClient,
    stream: ScopedStream,
    current: CurrentSegments,
    txn: Option<u128>,
    config: WriterConfig,
    mut rx: mpsc::Receiver<Command>,
    pending: Arc<AtomicUsize>,
    metrics: Arc<EntityMetrics>,
) {
    let (events, mut events_rx) = mpsc::channel(4096);
    let mut actor = Actor {
        client,
        stream,
        config,
        segs: HashMap::new(),
        ranges: Vec::new(),
        events,
        outstanding: 0,
        pending,
        metrics,
        flushers: Vec::new(),
        closing: None,
        failure: None,
        fatal: None,
        rng: random_u64() | 1,
        txn,
        held: VecDeque::new(),
        held_events: 0,
        large: None,
    };
    for s in current.segments {
        actor.ranges.push(s.key_range());
        actor.add_segment(s);
    }
    let mut commands_open = true;
    loop {
        tokio::select! {
            biased;
            ev = events_rx.recv() => {
                if let Some(ev) = ev {
                    actor.on_event(ev).await;
                }
            }
            cmd = rx.recv(), if commands_open && actor.closing.is_none() => {
                match cmd {
                    None => commands_open = false,
                    Some(cmd) => {
                        actor.on_command(cmd);
                        while let Ok(cmd) = rx.try_recv() {
                            actor.on_command(cmd);
                            if actor.closing.is_some() { break; }
                        }
                    }
                }
            }
        }
        actor.advance();
        actor.pump().await;
        actor.pending.store(actor.outstanding, Ordering::Release);
        if actor.outstanding == 0 {
            let failure = actor.failure.take();
            for f in actor.flushers.drain(..) {
                let _ = f.send(match &failure {
                    Some(e) => Err(e.clone()),
                    None => Ok(()),
                });
            }
            if actor.closing.is_some() || !commands_open {
                if let Some(tx) = actor.closing.take() {
                    let _ = tx.send(match failure {
                        Some(e) => Err(e),
                        None => Ok(()),
                    });
                }
                break;
            }
        }
    }
    for seg in actor.segs.values() {
        if let Some(c) = &seg.conn {
            c.close();
        }
    }
    // Commands that raced with the close.
    rx.close();
    while let Ok(cmd) = rx.try_recv() {
        super::fail(cmd, super::closed());
    }
}

impl Actor {
    fn add_segment(&mut self, segment: Segment) {
        let id = segment.id;
        if self.segs.contains_key(&id) {
            return;
        }
        let name = match self.txn {
            Some(t) => txn_segment_name(&segment.qualified_name(), t),
            None => segment.qualified_name(),
        };
        self.segs.insert(
            id,
            Seg {
                segment,
                name,
                writer_id: rand::random::<u128>(),
                queue: SegmentQueue::default(),
                conn: None,
                generation: 0,
                state: State::Idle,
                backoff: Backoff::new(self.config.backoff.clone()),
                down_since: None,
                next_request: 1,
            },
        );
    }

    fn pick(&mut self) -> usize {
        // xorshift64: which segment an unkeyed run goes to.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        (x >> 11) as usize
    }

    /// Events the store holds now: count them (one append per acknowledgement) and their
    /// latency from the oldest one's hand-over.
    fn on_acked(&mut self, a: Acked) {
        self.outstanding -= a.events.min(self.outstanding);
        if a.events > 0 {
            let m = &self.metrics;
            m.add(C::Messages, a.events as u64);
            m.add(C::Bytes, a.bytes as u64);
            m.add(C::Batches, 1);
            if let Some(t) = a.oldest {
                m.record_latency(t.elapsed());
            }
        }
    }

    fn settle_failed(&mut self, n: usize, e: &Error) {
        self.metrics.add(C::Errors, n as u64);
        self.outstanding -= n.min(self.outstanding);
        if self.failure.is_none() {
            self.failure = Some(e.clone());
        }
    }

    fn on_command(&mut self, cmd: Command) {
        match cmd {
            Command::Write {
                batch,
                done,
                reservation,
            } => {
                self.outstanding += batch.count;
                let piece = Piece::new(batch, done, reservation);
                if self.held.is_empty() && self.large.is_none() && !has_large(&piece.data) {
                    self.enqueue(piece);
                } else {
                    for step in split_at_large(piece) {
                        self.held_events += match &step {
                            Step::Small(p) | Step::Large(p) => p.count,
                        };
                        self.held.push_back(step);
                    }
                }
            }
            Command::Flush(tx) => {
                self.hurry();
                self.flushers.push(tx);
            }
            Command::Close(tx) => {
                self.hurry();
                self.closing = Some(tx);
            }
            Command::Hurry => self.hurry(),
        }
    }

    fn hurry(&mut self) {
        for s in self.segs.values_mut() {
            s.queue.hurry();
        }
    }

    /// Move held events on: small runs to the segment queues, and a large event once every
    /// event handed over before it is settled.
    fn advance(&mut self) {
        while self.large.is_none() {
            let Some(front) = self.held.front() else {
                return;
            };
            if matches!(front, Step::Large(_)) && self.outstanding > self.held_events {
                // Events before it are still on their way: send them without waiting to
                // gather more, and come back when they are settled.
                self.hurry();
                return;
            }
            let step = self.held.pop_front().expect("front");
            match step {
                Step::Small(p) => {
                    self.held_events -= p.count;
                    self.enqueue(p);
                }
                Step::Large(p) => {
                    self.held_events -= p.count;
                    self.start_large(p);
                }
            }
        }
    }

    /// Route a piece onto segment queues (or fail it).
    fn enqueue(&mut self, piece: Piece) {
        if let Some(e) = self.fatal.clone() {
            let n = piece.count;
            piece.settle(Err(e.clone()));
            self.settle_failed(n, &e);
            return;
        }
        let r = self.pick();
        let cut = (self.config.max_block / PIECES_PER_BLOCK).max(1);
        // The per-event path (`write_async`, a small batch without keys or with one key):
        // one segment, nothing to cut, so no routing or cutting vectors. Measured with
        // callgrind: `enqueue` cost ~700 instructions per `write_async` event, most of them
        // allocating and freeing the one-element vectors of `route` and `split_large`.
        if piece.data.len() <= cut && !self.ranges.is_empty() {
            let seg = match &piece.points {
                Points::NoKey => Some(self.ranges[r % self.ranges.len()].segment),
                Points::Same(p) => segment_for(*p, &self.ranges),
                Points::Each(_) => None,
            };
            if let Some(s) = seg.and_then(|seg| self.segs.get_mut(&seg)) {
                s.queue.push(piece);
                return;
            }
        }
        match route(piece, &self.ranges, || r) {
            Ok(parts) => {
                for (seg, p) in parts {
                    match self.segs.get_mut(&seg) {
                        Some(s) => {
                            // Quarter-block pieces: a block is filled from several
                            // pieces, so a batch just over a block does not leave a
                            // sliver block taking one of the few in-flight slots.
                            for p in split_large(p, cut) {
                                s.queue.push(p);
                            }
                        }
                        None => {
                            let e = Error::new(
                                ErrorKind::Protocol,
                                format!("routed to unknown segment {seg}"),
                            );
                            let k = p.count;
                            p.settle(Err(e.clone()));
                            self.settle_failed(k, &e);
                        }
                    }
                }
            }
            Err((e, piece)) => {
                let n = piece.count;
                piece.settle(Err(e.clone()));
                self.settle_failed(n, &e);
            }
        }
    }

    /// Connect segments that have events, and send what the windows allow.
    async fn pump(&mut self) {
        let ids: Vec<i64> = self.segs.keys().copied().collect();
        for id in ids {
            let seg = self.segs.get_mut(&id).expect("listed");
            if !seg.queue.has_queued() {
                continue;
            }
            match seg.state {
                State::Idle => self.connect(id),
                State::Ready => {
                    let mut lost = None;
                    let conn = seg.conn.clone().expect("ready has a connection");
                    let limits = (
                        self.config.max_block,
                        self.config.window,
                        self.config.max_blocks_in_flight,
                    );
                    while let Some(block) =
                        seg.queue
                            .next_block(seg.writer_id, seg.next_request, limits)
                    {
                        seg.next_request += 1;
                        if let Err(e) = conn.send(block.frame.freeze()).await {
                            lost = Some(e);
                            break;
                        }
                    }
                    if let Some(e) = lost {
                        self.on_lost(id, e);
                    }
                }
                State::Connecting | State::Backoff | State::Sealed => {}
            }
        }
    }

    fn connect(&mut self, id: i64) {
        let seg = self.segs.get_mut(&id).expect("known segment");
        seg.generation += 1;
        seg.state = State::Connecting;
        if seg.down_since.is_none() {
            seg.down_since = Some(Instant::now());
        }
        let generation = seg.generation;
        let client = self.client.clone();
        let stream = self.stream.clone();
        let name = seg.name.clone();
        let writer_id = seg.writer_id;
        let events = self.events.clone();
        tokio::spawn(async move {
            match setup(&client, &stream, id, &name, writer_id).await {
                Ok((conn, mut replies, last)) => {
                    let c = conn.clone();
                    if events
                        .send(Event::Setup {
                            seg: id,
                            generation,
                            result: Ok((conn, last)),
                        })
                        .await
                        .is_err()
                    {
                        c.close();
                        return;
                    }
                    while let Some(reply) = replies.recv().await {
                        if events
                            .send(Event::Reply {
                                seg: id,
                                generation,
                                reply,
                            })
                            .await
                            .is_err()
                        {
                            c.close();
                            return;
                        }
                    }
                    let error = c.end_reason().unwrap_or_else(|| {
                        Error::new(ErrorKind::Disconnected, "segment store connection lost")
                    });
                    let _ = events
                        .send(Event::Lost {
                            seg: id,
                            generation,
                            error,
                        })
                        .await;
                }
                Err(e) => {
                    let _ = events
                        .send(Event::Setup {
                            seg: id,
                            generation,
                            result: Err(e),
                        })
                        .await;
                }
            }
        });
    }

    async fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Setup {
                seg,
                generation,
                result,
            } => {
                let Some(s) = self.segs.get_mut(&seg) else {
                    if let Ok((c, _)) = result {
                        c.close();
                    }
                    return;
                };
                if s.generation != generation {
                    if let Ok((c, _)) = result {
                        c.close();
                    }
                    return;
                }
                match result {
                    Ok((conn, last)) => {
                        let again = s.down_since.is_some_and(|_| !s.queue.is_empty());
                        event(Level::Info, "pravega.writer", || {
                            let what = if again { "re-set up" } else { "set up" };
                            (
                                format!("append to segment {} {what}", s.name),
                                vec![
                                    ("stream", self.stream.to_string()),
                                    ("segment", s.name.to_string()),
                                    ("last_event_number", last.to_string()),
                                ],
                            )
                        });
                        s.conn = Some(conn);
                        s.state = State::Ready;
                        s.down_since = None;
                        s.backoff.reset();
                        // Everything up to `last` is in the store: settle it; the rest was
                        // rewound and goes out again under the same numbers.
                        let a = s.queue.ack(last);
                        self.on_acked(a);
                    }
                    Err(e) => self.on_setup_failed(seg, e),
                }
            }
            Event::Reply {
                seg,
                generation,
                reply,
            } => {
                let Some(s) = self.segs.get_mut(&seg) else {
                    return;
                };
                if s.generation != generation {
                    return;
                }
                self.on_reply(seg, reply);
            }
            Event::Lost {
                seg,
                generation,
                error,
            } => {
                if self
                    .segs
                    .get(&seg)
                    .is_some_and(|s| s.generation == generation && s.state == State::Ready)
                {
                    self.on_lost(seg, error);
                }
            }
            Event::Retry { seg, generation } => {
                if let Some(s) = self.segs.get_mut(&seg) {
                    if s.generation == generation && s.state == State::Backoff {
                        if s.queue.is_empty() {
                            s.state = State::Idle;
                            s.down_since = None;
                        } else {
                            self.connect(seg);
                        }
                    }
                }
            }
            Event::Successors { seg, result } => self.on_successors(seg, result),
            Event::LargeDone(result) => self.on_large_done(result),
        }
    }

    fn on_reply(&mut self, seg: i64, reply: Reply) {
        match reply {
            Reply::DataAppended { event_number, .. } => {
                let s = self.segs.get_mut(&seg).expect("checked");
                let a = s.queue.ack(event_number);
                self.on_acked(a);
            }
            Reply::KeepAlive | Reply::ConditionalCheckFailed { .. } | Reply::Other { .. } => {}
            Reply::SegmentIsSealed { .. } => self.on_sealed(seg),
            Reply::NoSuchSegment { .. } | Reply::AuthTokenCheckFailed { .. } => {
                let e = reply.error().expect("an error reply");
                self.on_fatal(e);
            }
            other => {
                // Wrong host, a refused event number, an error message: set the append up
                // again (on the owner the controller names now).
                let e = other.error().unwrap_or_else(|| {
                    Error::new(
                        ErrorKind::Protocol,
                        format!("unexpected reply to an append: {other:?}"),
                    )
                });
                self.on_lost(seg, e);
            }
        }
    }

    fn on_lost(&mut self, seg: i64, error: Error) {
        let Some(s) = self.segs.get_mut(&seg) else {
            return;
        };
        event(Level::Warning, "pravega.writer", || {
            (
                format!(
                    "connection for segment {} lost ({error}); reconnecting",
                    s.name
                ),
                vec![
                    ("stream", self.stream.to_string()),
                    ("segment", s.name.to_string()),
                ],
            )
        });
        self.metrics.add(C::Reconnects, 1);
        if let Some(c) = s.conn.take() {
            c.close();
        }
        s.queue.rewind();
        s.generation += 1;
        if s.down_since.is_none() {
            s.down_since = Some(Instant::now());
        }
        if s.queue.is_empty() {
            s.state = State::Idle;
            s.down_since = None;
        } else {
            self.schedule_retry(seg, &error);
        }
    }

    fn on_setup_failed(&mut self, seg: i64, e: Error) {
        event(Level::Warning, "pravega.writer", || {
            (
                format!("setting up the append failed: {e}"),
                vec![
                    ("stream", self.stream.to_string()),
                    ("segment", self.segs[&seg].name.to_string()),
                ],
            )
        });
        match e.kind() {
            ErrorKind::ReadOnly => self.on_sealed(seg),
            ErrorKind::PartitionNotFound
            | ErrorKind::Authentication
            | ErrorKind::Authorization
            | ErrorKind::TopicNotFound => self.on_fatal(e),
            _ => self.schedule_retry(seg, &e),
        }
    }

    /// Wait before setting the segment up again; events that waited past the send timeout
    /// fail with `e`.
    fn schedule_retry(&mut self, seg: i64, e: &Error) {
        let timeout = self.config.send_timeout;
        let s = self.segs.get_mut(&seg).expect("known segment");
        s.state = State::Backoff;
        if s.down_since.is_some_and(|t| t.elapsed() >= timeout) {
            let e = Error::new(
                e.kind(),
                format!(
                    "segment {} unreachable for {:?}: {}",
                    s.name,
                    timeout,
                    e.message()
                ),
            )
            .with_retriable(e.is_retriable());
            let n = s.queue.fail_all(&e);
            s.down_since = None;
            event(Level::Error, "pravega.writer", || {
                (
                    format!("failing {n} events: {e}"),
                    vec![
                        ("stream", self.stream.to_string()),
                        ("segment", s.name.to_string()),
                    ],
                )
            });
            self.settle_failed(n, &e);
        }
        let s = self.segs.get_mut(&seg).expect("known segment");
        let delay = s.backoff.next_delay();
        let generation = s.generation;
        let events = self.events.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = events.send(Event::Retry { seg, generation }).await;
        });
    }

    fn on_sealed(&mut self, seg: i64) {
        if let Some(t) = self.txn {
            // A transaction's segment is sealed by its commit or abort, not by a scale.
            return self.on_fatal(txn_over(t, "its segment is sealed"));
        }
        let Some(s) = self.segs.get_mut(&seg) else {
            return;
        };
        if s.state == State::Sealed {
            return;
        }
        if let Some(c) = s.conn.take() {
            c.close();
        }
        s.generation += 1;
        s.state = State::Sealed;
        event(Level::Info, "pravega.writer", || {
            (
                format!("segment {} sealed; looking up its successors", s.name),
                vec![
                    ("stream", self.stream.to_string()),
                    ("segment", s.name.to_string()),
                ],
            )
        });
        self.lookup_successors(seg);
    }

    fn lookup_successors(&mut self, seg: i64) {
        let segment = self.segs[&seg].segment.clone();
        let client = self.client.clone();
        let events = self.events.clone();
        tokio::spawn(async move {
            let result = client.controller().get_successors(&segment).await;
            let _ = events.send(Event::Successors { seg, result }).await;
        });
    }

    fn on_successors(&mut self, seg: i64, result: Result<Vec<Successor>>) {
        let successors = match result {
            Ok(s) => s,
            Err(e) if e.kind() == ErrorKind::TopicNotFound => return self.on_fatal(e),
            Err(e) => {
                event(Level::Warning, "pravega.writer", || {
                    (
                        format!("successor lookup failed ({e}); asking again"),
                        vec![("stream", self.stream.to_string())],
                    )
                });
                // Ask again shortly (the controller may be restarting).
                let events = self.events.clone();
                let client = self.client.clone();
                let segment = self.segs[&seg].segment.clone();
                let delay = self.segs.get_mut(&seg).expect("known").backoff.next_delay();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let result = client.controller().get_successors(&segment).await;
                    let _ = events.send(Event::Successors { seg, result }).await;
                });
                return;
            }
        };
        let Some(mut sealed) = self.segs.remove(&seg) else {
            return;
        };
        // The sealed segment's part of the key space goes to its successors; a successor
        // that also covers another, still open, segment's keys (a merge) takes those only
        // when that segment is sealed in turn, so per-key order holds.
        let mut ranges = Vec::with_capacity(self.ranges.len() + successors.len());
        for r in &self.ranges {
            if r.segment != seg {
                ranges.push(*r);
                continue;
            }
            for s in &successors {
                let low = r.low.max(s.segment.low);
                let high = r.high.min(s.segment.high);
                if low < high {
                    ranges.push(KeyRange {
                        segment: s.segment.id,
                        low,
                        high,
                    });
                }
            }
        }
        self.ranges = ranges;
        for s in successors {
            self.add_segment(s.segment);
        }
        let pieces = sealed.queue.take_all();
        if self.ranges.is_empty() {
            let e = Error::new(
                ErrorKind::ReadOnly,
                format!(
                    "stream {}/{} is sealed",
                    self.stream.scope, self.stream.stream
                ),
            );
            for p in pieces {
                let n = p.count;
                p.settle(Err(e.clone()));
                self.settle_failed(n, &e);
            }
            self.fatal = Some(e);
            return;
        }
        for p in pieces {
            self.enqueue(p);
        }
    }

    /// The writer can no longer write: fail everything held and every later write.
    fn on_fatal(&mut self, e: Error) {
        let e = match self.txn {
            // A transaction's segment gone: the transaction was aborted (or timed out).
            Some(t) if e.kind() == ErrorKind::PartitionNotFound => txn_over(t, e.message()),
            _ => e,
        };
        event(Level::Error, "pravega.writer", || {
            (
                format!("writer failed: {e}"),
                vec![("stream", self.stream.to_string())],
            )
        });
        let ids: Vec<i64> = self.segs.keys().copied().collect();
        for id in ids {
            let s = self.segs.get_mut(&id).expect("listed");
            if let Some(c) = s.conn.take() {
                c.close();
            }
            s.generation += 1;
            s.state = State::Idle;
            let n = s.queue.fail_all(&e);
            self.settle_failed(n, &e);
        }
        self.fatal = Some(e);
    }
}

/// The error of writes to a transaction that is no longer open.
fn txn_over(txn: u128, why: &str) -> Error {
    Error::new(
        ErrorKind::InvalidTransactionState,
        format!(
            "transaction {} is no longer open ({why}): committed, aborted or timed out",
            txn_id_text(txn)
        ),
    )
}

/// Connect to the segment's store and set the append up; the store answers the last event
/// number it holds for this writer. Every later frame of the connection arrives on the
/// receiver (appends are acknowledged by event number, one answer for several blocks).
pub(crate) async fn setup(
    client: &PravegaClient,
    stream: &ScopedStream,
    id: i64,
    name: &str,
    writer_id: u128,
) -> Result<(Connection, mpsc::Receiver<Reply>, i64)> {
    // The store checks the delegation token here only (not on each append): a fresh one per
    // set-up, renewed before its expiry and forgotten when the store refuses it.
    let token = client.delegation_token(stream).await?;
    let result = setup_with(client, stream, id, name, writer_id, &token).await;
    if matches!(&result, Err(e) if e.kind() == ErrorKind::Authentication) {
        client.forget_token(stream);
    }
    result
}

async fn setup_with(
    client: &PravegaClient,
    stream: &ScopedStream,
    id: i64,
    name: &str,
    writer_id: u128,
    token: &str,
) -> Result<(Connection, mpsc::Receiver<Reply>, i64)> {
    let node = client.controller().get_uri(stream, id).await?;
    let (conn, mut replies) = dial::<false>(&node, &client.config().dial).await?;
    let request_id = 0;
    let mut buf = BytesMut::with_capacity(64 + name.len());
    wire::encode_setup_append(&mut buf, request_id, writer_id, name, token).map_err(Error::from)?;
    conn.send(buf.freeze()).await?;
    let timeout = client.config().request_timeout;
    let answer = tokio::time::timeout(timeout, async {
        loop {
            match replies.recv().await {
                Some(Reply::KeepAlive) => continue,
                other => return other,
            }
        }
    })
    .await;
    match answer {
        Err(_) => {
            conn.close();
            Err(Error::timeout(format!("SETUP_APPEND on {name}")))
        }
        Ok(None) => Err(conn.end_reason().unwrap_or_else(|| {
            Error::new(
                ErrorKind::Disconnected,
                format!("segment store closed the connection during SETUP_APPEND on {name}"),
            )
        })),
        Ok(Some(Reply::AppendSetup {
            last_event_number, ..
        })) => Ok((conn, replies, last_event_number)),
        Ok(Some(other)) => {
            conn.close();
            Err(other.error().unwrap_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("unexpected answer to SETUP_APPEND on {name}: {other:?}"),
                )
            }))
        }
    }
}
