//! Writing events to one stream.
//!
//! The handle frames events and computes their routing-key points on the caller's thread
//! (`batch`), then hands them to the writer's task (`actor`), which owns one segment writer
//! per open segment: its own writer id, event numbers and connection (`queue` holds the
//! numbered events). Events are cut into APPEND_BLOCK_END frames, pipelined within a bounded
//! window, and settled by DATA_APPENDED. A lost connection is set up again and what the store
//! does not hold is re-sent under the same numbers (the store de-duplicates); a sealed segment
//! (a scale) hands its unsettled events, in order, to its successors before anything newer.

mod actor;
pub(crate) use actor::setup;
pub mod batch;
pub mod large;
pub mod queue;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use streamwire_core::backoff::BackoffConfig;
use streamwire_core::budget::{MemoryBudget, Reservation};
use streamwire_core::completion::{Done, Group};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{EntityMetrics, Kind, G};

use crate::client::PravegaClient;
use crate::controller::{CurrentSegments, ScopedStream};
pub use batch::{one_event, BatchBuilder, EventBatch, Points};

/// Settings of a writer.
#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Largest append block (bytes of whole events; one event may exceed it).
    pub max_block: usize,
    /// Bytes in flight per segment before the writer waits for acknowledgements.
    pub window: usize,
    /// Append blocks unacknowledged per segment before new events wait to go out together.
    pub max_blocks_in_flight: usize,
    /// How long events may wait on a segment that cannot be reached before they fail.
    pub send_timeout: Duration,
    pub backoff: BackoffConfig,
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            // The store's cost is per block as much as per byte: with a call's blocks all in
            // flight at once (`SegmentQueue::next_block`), 1 MiB blocks beat 256 KiB ones
            // for `write_many` on the 0.13.0 standalone (100 B events: 3.28M against 2.11M
            // events/s; 1 KiB: 0.99M against 0.73M; medians of 5, load ~3) and are no
            // worse for `write_async`.
            max_block: 1024 * 1024,
            window: 8 * 1024 * 1024,
            max_blocks_in_flight: 4,
            send_timeout: Duration::from_secs(60),
            backoff: BackoffConfig {
                initial: Duration::from_millis(50),
                max: Duration::from_secs(5),
                ..BackoffConfig::default()
            },
        }
    }
}

pub(crate) enum Command {
    Write {
        batch: EventBatch,
        done: Done,
        reservation: Option<Reservation>,
    },
    Flush(oneshot::Sender<Result<()>>),
    Close(oneshot::Sender<Result<()>>),
    /// A caller waits for everything handed over so far: send it without holding partial
    /// blocks back to gather later events.
    Hurry,
}

/// A write the writer's queue had no room for, given back.
pub struct Rejected(Command);

impl Rejected {
    /// A write to hand over later with [`EventWriter::submit`] (behind others that waited).
    pub fn write(batch: EventBatch, done: Done, reservation: Option<Reservation>) -> Self {
        Rejected(Command::Write {
            batch,
            done,
            reservation,
        })
    }
}

struct Inner {
    stream: ScopedStream,
    tx: mpsc::Sender<Command>,
    pending: Arc<AtomicUsize>,
    budget: MemoryBudget,
    metrics: Arc<EntityMetrics>,
    /// Set when `close` starts: the writer counts as closed from then on, not only once its
    /// task has dropped the command channel (which happens a moment after `close` returns).
    closing: AtomicBool,
}

/// A cheap, cloneable handle to a stream writer.
#[derive(Clone)]
pub struct EventWriter {
    inner: Arc<Inner>,
}

fn closed() -> Error {
    Error::closed("Pravega writer")
}

fn fail(cmd: Command, e: Error) {
    match cmd {
        Command::Write { batch, done, .. } => done.complete(Err(e), batch.count),
        Command::Flush(tx) | Command::Close(tx) => {
            let _ = tx.send(Err(e));
        }
        Command::Hurry => {}
    }
}

impl EventWriter {
    /// Look up the stream's segments and start the writer's task.
    pub async fn create(
        client: &PravegaClient,
        stream: ScopedStream,
        config: WriterConfig,
        budget: MemoryBudget,
    ) -> Result<EventWriter> {
        let current = client.controller().get_current_segments(&stream).await?;
        if current.segments.is_empty() {
            return Err(Error::new(
                ErrorKind::ReadOnly,
                format!("stream {}/{} is sealed", stream.scope, stream.stream),
            ));
        }
        let metrics = EntityMetrics::register(client.entity_labels(
            Kind::Writer,
            format!("{}/{}", stream.scope, stream.stream),
            String::new(),
        ));
        let w = Self::start(client, stream, current, None, config, budget, metrics);
        let p = Arc::clone(&w.inner.pending);
        w.inner.metrics.set_sampler(Box::new(move |g| {
            g[G::PendingMessages as usize] = Some(p.load(Ordering::Relaxed) as i64);
        }));
        Ok(w)
    }

    /// A writer of transaction `txn`'s events: appends to the transaction's segments beside
    /// `segments` (the ones `createTransaction` answered), counted in `metrics` (the
    /// transactional writer's).
    pub fn in_transaction(
        client: &PravegaClient,
        stream: ScopedStream,
        segments: Vec<crate::controller::Segment>,
        txn: u128,
        config: WriterConfig,
        budget: MemoryBudget,
        metrics: Arc<EntityMetrics>,
    ) -> EventWriter {
        let current = CurrentSegments {
            segments,
            delegation_token: String::new(),
        };
        Self::start(client, stream, current, Some(txn), config, budget, metrics)
    }

    fn start(
        client: &PravegaClient,
        stream: ScopedStream,
        current: CurrentSegments,
        txn: Option<u128>,
        config: WriterConfig,
        budget: MemoryBudget,
        metrics: Arc<EntityMetrics>,
    ) -> EventWriter {
        let (tx, rx) = mpsc::channel(4096);
        let pending = Arc::new(AtomicUsize::new(0));
        tokio::spawn(actor::run(
            client.clone(),
            stream.clone(),
            current,
            txn,
            config,
            rx,
            pending.clone(),
            Arc::clone(&metrics),
        ));
        EventWriter {
            inner: Arc::new(Inner {
                stream,
                tx,
                pending,
                budget,
                metrics,
                closing: AtomicBool::new(false),
            }),
        }
    }

    /// This writer's metric cells.
    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.inner.metrics
    }

    pub fn stream(&self) -> &ScopedStream {
        &self.inner.stream
    }

    pub fn budget(&self) -> &MemoryBudget {
        &self.inner.budget
    }

    /// Events handed over and not yet acknowledged or failed.
    pub fn pending(&self) -> usize {
        self.inner.pending.load(Ordering::Acquire)
    }

    /// Hand events over without waiting; `Ok(Some(_))` gives them back when the queue is full.
    pub fn try_write(
        &self,
        batch: EventBatch,
        done: Done,
        reservation: Option<Reservation>,
    ) -> Result<Option<Rejected>> {
        self.try_submit(Rejected(Command::Write {
            batch,
            done,
            reservation,
        }))
    }

    /// Try again with a write given back by [`try_write`](Self::try_write).
    pub fn try_submit(&self, r: Rejected) -> Result<Option<Rejected>> {
        let n = count(&r.0);
        self.inner.pending.fetch_add(n, Ordering::AcqRel);
        match self.inner.tx.try_send(r.0) {
            Ok(()) => Ok(None),
            Err(mpsc::error::TrySendError::Full(cmd)) => {
                self.inner.pending.fetch_sub(n, Ordering::AcqRel);
                Ok(Some(Rejected(cmd)))
            }
            Err(mpsc::error::TrySendError::Closed(cmd)) => {
                self.inner.pending.fetch_sub(n, Ordering::AcqRel);
                fail(cmd, closed());
                Err(closed())
            }
        }
    }

    /// Hand events over, waiting for room in the queue.
    pub async fn submit(&self, r: Rejected) -> Result<()> {
        let n = count(&r.0);
        self.inner.pending.fetch_add(n, Ordering::AcqRel);
        if let Err(mpsc::error::SendError(cmd)) = self.inner.tx.send(r.0).await {
            self.inner.pending.fetch_sub(n, Ordering::AcqRel);
            fail(cmd, closed());
            return Err(closed());
        }
        Ok(())
    }

    /// Everything handed over so far has a caller waiting for it (the end of a synchronous
    /// bulk call): the writer sends it at once instead of gathering later events into its
    /// last block. A hint only; a closed writer fails the waiting events anyway.
    pub async fn hurry(&self) {
        let _ = self.inner.tx.send(Command::Hurry).await;
    }

    /// [`hurry`](Self::hurry) without waiting: `false` when the command queue is full (the
    /// caller then sends it with `hurry` from a task). A closed writer counts as done.
    pub fn try_hurry(&self) -> bool {
        !matches!(
            self.inner.tx.try_send(Command::Hurry),
            Err(mpsc::error::TrySendError::Full(_))
        )
    }

    /// Write events and wait until the store holds them.
    pub async fn write(&self, batch: EventBatch, reservation: Option<Reservation>) -> Result<()> {
        let (group, rx) = Group::new(batch.count);
        self.submit(Rejected(Command::Write {
            batch,
            done: Done::Group(group),
            reservation,
        }))
        .await?;
        self.hurry().await;
        rx.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Wait until every event handed over so far is settled; the first failure since the
    /// previous flush is reported.
    pub async fn flush(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.inner
            .tx
            .send(Command::Flush(tx))
            .await
            .map_err(|_| closed())?;
        rx.await.unwrap_or_else(|_| Err(closed()))
    }

    /// Settle what is pending, then stop the task and its connections.
    pub async fn close(&self) -> Result<()> {
        self.inner.closing.store(true, Ordering::Release);
        let (tx, rx) = oneshot::channel();
        if self.inner.tx.send(Command::Close(tx)).await.is_err() {
            return Ok(());
        }
        rx.await.unwrap_or(Ok(()))
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closing.load(Ordering::Acquire) || self.inner.tx.is_closed()
    }
}

fn count(cmd: &Command) -> usize {
    match cmd {
        Command::Write { batch, .. } => batch.count,
        _ => 0,
    }
}
