//! Producing to one TANK topic.
//!
//! The handle routes each message to a partition (explicit, by key hash, or round-robin),
//! holds its bytes against the client's memory budget, and hands it to the producer's task,
//! which gathers messages into one bundle per partition and sends them as pipelined Produce
//! requests on the client's connection (see `actor`). A message's future completes when the
//! broker acknowledged the request that carried it, or fails with the reason: nothing is
//! dropped silently. After a lost connection the unacknowledged requests are sent again in
//! order (at-least-once: TANK has no producer sequence numbers to de-duplicate by).

mod actor;
pub mod batch;
pub mod routing;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use streamwire_core::budget::{MemoryBudget, Reservation};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{EntityMetrics, Kind, G};

use crate::client::TankClient;
pub use batch::{BatchLimits, CompressionChoice, Pending};
pub use streamwire_core::completion::{Completion, Done, Dones, Group};

/// Settings of a producer.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    pub batch: BatchLimits,
    pub compression: CompressionChoice,
    /// Produce requests awaiting their acknowledgement before the producer waits.
    pub max_in_flight: usize,
    /// How long a message may wait for its acknowledgement (re-sends included).
    pub send_timeout: Duration,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            batch: BatchLimits::default(),
            compression: CompressionChoice::None,
            max_in_flight: 32,
            send_timeout: Duration::from_secs(30),
        }
    }
}

/// One message for `send`, routed by the handle.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub partition: Option<u16>,
    pub msg: Pending,
}

pub(crate) enum Command {
    Send {
        items: Vec<(u16, Pending)>,
        dones: Dones,
        reservation: Option<Reservation>,
    },
    Flush(oneshot::Sender<Result<()>>),
    Close(oneshot::Sender<Result<()>>),
}

/// Messages routed and checked, ready for the producer's task.
pub struct Prepared(Command);

impl Prepared {
    fn len(&self) -> usize {
        match &self.0 {
            Command::Send { items, .. } => items.len(),
            _ => 0,
        }
    }
}

/// Fail every completion of a command that never reached the task.
fn fail(cmd: Command, e: Error) {
    match cmd {
        Command::Send { items, dones, .. } => match dones {
            Dones::Each(ds) => ds.into_iter().for_each(|d| d.complete(Err(e.clone()), 1)),
            Dones::Group(g) => g.finish(Err(e), items.len()),
        },
        Command::Flush(tx) | Command::Close(tx) => {
            let _ = tx.send(Err(e));
        }
    }
}

struct Inner {
    topic: String,
    partitions: u16,
    tx: mpsc::Sender<Command>,
    budget: MemoryBudget,
    router: routing::Router,
    /// Messages handed over and not yet acknowledged or failed.
    pending: Arc<AtomicUsize>,
    metrics: Arc<EntityMetrics>,
    /// Set when `close` starts: closed from then on, not only once the task has dropped the
    /// command channel (a moment after `close` returns).
    closing: AtomicBool,
}

/// A cheap, cloneable handle to a producer task.
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Inner>,
}

impl Producer {
    /// Discover the topic's partitions and start the producer's task.
    pub async fn create(
        client: &TankClient,
        topic: &str,
        config: ProducerConfig,
        budget: MemoryBudget,
    ) -> Result<Producer> {
        let partitions = client.partitions(topic).await?;
        let count = u16::try_from(partitions.len())
            .map_err(|_| Error::new(ErrorKind::Protocol, "too many partitions"))?;
        let (tx, rx) = mpsc::channel(1024);
        let pending = Arc::new(AtomicUsize::new(0));
        let metrics = EntityMetrics::register(client.entity_labels(Kind::Producer, topic));
        let p = Arc::clone(&pending);
        metrics.set_sampler(Box::new(move |g| {
            g[G::PendingMessages as usize] = Some(p.load(Ordering::Relaxed) as i64);
        }));
        tokio::spawn(actor::run(
            client.clone(),
            topic.to_string(),
            count,
            config,
            rx,
            pending.clone(),
            Arc::clone(&metrics),
        ));
        Ok(Producer {
            inner: Arc::new(Inner {
                topic: topic.to_string(),
                partitions: count,
                tx,
                budget,
                router: routing::Router::new(count),
                pending,
                metrics,
                closing: AtomicBool::new(false),
            }),
        })
    }

    pub fn topic(&self) -> &str {
        &self.inner.topic
    }

    pub fn partitions(&self) -> u16 {
        self.inner.partitions
    }

    /// Messages handed over and not yet acknowledged or failed.
    pub fn pending(&self) -> usize {
        self.inner.pending.load(Ordering::Acquire)
    }

    /// This producer's metric cells.
    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.inner.metrics
    }

    pub fn budget(&self) -> &MemoryBudget {
        &self.inner.budget
    }

    fn route(&self, partition: Option<u16>, key: Option<&[u8]>) -> Result<u16> {
        match partition {
            Some(p) if p < self.inner.partitions => Ok(p),
            Some(p) => Err(Error::new(
                ErrorKind::PartitionNotFound,
                format!(
                    "partition {p} does not exist: topic {:?} has {} partition(s)",
                    self.inner.topic, self.inner.partitions
                ),
            )),
            None => Ok(self.inner.router.choose(key)),
        }
    }

    /// Route and check messages (reserved bytes already held) into a command for the task.
    /// Routing errors fail the whole call before anything is queued.
    pub fn prepare(
        &self,
        msgs: Vec<Outgoing>,
        dones: Dones,
        reservation: Option<Reservation>,
    ) -> Result<Prepared> {
        if let Dones::Each(d) = &dones {
            if d.len() != msgs.len() {
                return Err(Error::invalid("one completion per message"));
            }
        }
        let mut items = Vec::with_capacity(msgs.len());
        for m in msgs {
            if m.msg.key.as_ref().is_some_and(|k| k.len() > 255) {
                return Err(Error::invalid("a TANK key is at most 255 bytes"));
            }
            if m.msg.value.len() > u32::MAX as usize {
                return Err(Error::new(
                    ErrorKind::MessageTooBig,
                    "a TANK message is under 4 GiB",
                ));
            }
            let p = self.route(m.partition, m.msg.key.as_deref())?;
            items.push((p, m.msg));
        }
        Ok(Prepared(Command::Send {
            items,
            dones,
            reservation,
        }))
    }

    /// Hand a prepared command to the task if its queue has room, without waiting;
    /// `Ok(Some(_))` gives it back when the queue is full.
    pub fn try_submit(&self, prepared: Prepared) -> Result<Option<Prepared>> {
        let n = prepared.len();
        self.inner.pending.fetch_add(n, Ordering::AcqRel);
        match self.inner.tx.try_send(prepared.0) {
            Ok(()) => Ok(None),
            Err(mpsc::error::TrySendError::Full(cmd)) => {
                self.inner.pending.fetch_sub(n, Ordering::AcqRel);
                Ok(Some(Prepared(cmd)))
            }
            Err(mpsc::error::TrySendError::Closed(cmd)) => {
                self.inner.pending.fetch_sub(n, Ordering::AcqRel);
                fail(cmd, Error::closed("TANK producer"));
                Err(Error::closed("TANK producer"))
            }
        }
    }

    /// Hand a prepared command to the task, waiting for room in its queue.
    pub async fn submit(&self, prepared: Prepared) -> Result<()> {
        let n = prepared.len();
        self.inner.pending.fetch_add(n, Ordering::AcqRel);
        if let Err(mpsc::error::SendError(cmd)) = self.inner.tx.send(prepared.0).await {
            self.inner.pending.fetch_sub(n, Ordering::AcqRel);
            fail(cmd, Error::closed("TANK producer"));
            return Err(Error::closed("TANK producer"));
        }
        Ok(())
    }

    /// Send one message and return the receiver of its acknowledgement.
    pub async fn send(&self, msg: Outgoing) -> Result<oneshot::Receiver<Result<()>>> {
        let reservation = self.inner.budget.reserve(msg.msg.size() as u64).await;
        let (tx, rx) = oneshot::channel();
        let prepared = self.prepare(
            vec![msg],
            Dones::Each(vec![Done::One(tx)]),
            Some(reservation),
        )?;
        self.submit(prepared).await?;
        Ok(rx)
    }

    /// Send many messages; the receiver completes once all are acknowledged (or with the
    /// first failure).
    pub async fn send_many(&self, msgs: Vec<Outgoing>) -> Result<oneshot::Receiver<Result<()>>> {
        let bytes: u64 = msgs.iter().map(|m| m.msg.size() as u64).sum();
        let reservation = self.inner.budget.reserve(bytes).await;
        let (group, rx) = Group::new(msgs.len());
        let prepared = self.prepare(msgs, Dones::Group(group), Some(reservation))?;
        self.submit(prepared).await?;
        Ok(rx)
    }

    /// Send everything gathered now and wait until every message handed over before this
    /// call is acknowledged (an error if any of them failed).
    pub async fn flush(&self) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        self.inner
            .tx
            .send(Command::Flush(tx))
            .await
            .map_err(|_| Error::closed("TANK producer"))?;
        rx.await
            .unwrap_or_else(|_| Err(Error::closed("TANK producer")))
    }

    /// Flush, then stop the task. Later sends fail with `Closed`.
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
