//! Reading a TANK topic.
//!
//! One task per consumer keeps a Consume request outstanding for all its partitions (the
//! broker long-polls it at the tail, so an idle consumer costs nothing), decodes the chunks
//! into messages and queues them up to a byte bound (the read-ahead). The application takes
//! messages from the queue one at a time or in bulk; what it has been handed is what
//! `positions()` reports, so persisting positions and resuming from them neither skips nor
//! repeats a message.
//!
//! Chunks are not cut on bundle boundaries: when the first bundle a partition needs is larger
//! than its fetch size, the fetch size grows to fit it (as the C++ client does) up to
//! `max_fetch_size`, past which the consumer raises instead of looping.

mod fetch;
pub mod positions;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{EntityMetrics, Kind, G};

use crate::client::TankClient;
pub use positions::{OnOutOfRange, Positions, EARLIEST, TAIL};

/// Settings of a consumer.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    /// How long the broker holds a request at the tail before answering empty.
    pub max_wait: Duration,
    /// Bytes the broker waits for at the tail before answering (0 = any).
    pub min_bytes: u32,
    /// Bytes of bundles asked for per partition and request.
    pub fetch_size: u32,
    /// Ceiling for a fetch size grown to fit one large bundle.
    pub max_fetch_size: u32,
    /// Bytes of decoded messages queued ahead of the application.
    pub queue_bytes: usize,
    pub on_out_of_range: OnOutOfRange,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            max_wait: Duration::from_secs(1),
            min_bytes: 0,
            fetch_size: 1024 * 1024,
            max_fetch_size: 64 * 1024 * 1024,
            queue_bytes: 32 * 1024 * 1024,
            on_out_of_range: OnOutOfRange::Error,
        }
    }
}

/// Where a consumer starts.
#[derive(Debug, Clone)]
pub enum Start {
    Earliest,
    /// After the newest message at the time of the first request.
    Latest,
    /// The given next sequence number per partition; others start at the earliest.
    At(BTreeMap<u16, u64>),
}

/// One message as the application gets it.
#[derive(Debug, Clone)]
pub struct TankMessage {
    pub partition: u16,
    pub seq: u64,
    /// Milliseconds, as the producer set it.
    pub ts: u64,
    pub key: Option<Bytes>,
    pub value: Bytes,
}

pub(crate) enum Item {
    Msg(TankMessage),
    Err(Error),
}

pub(crate) struct State {
    pub queue: VecDeque<Item>,
    pub queued_bytes: usize,
    pub positions: Positions,
    pub closed: bool,
    /// The last error the fetch task met (retried), for `stats()`.
    pub last_error: Option<String>,
}

pub(crate) struct Shared {
    pub topic: Arc<str>,
    pub state: Mutex<State>,
    /// Messages (or an error) were queued, or the consumer closed.
    pub ready: Notify,
    /// The queue has room again, a seek happened, or the consumer closed.
    pub wake: Notify,
    /// Exported metrics (the receive-queue gauge is sampled from `state`).
    pub metrics: Arc<EntityMetrics>,
}

impl Shared {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A cheap, cloneable handle to a consumer.
#[derive(Clone)]
pub struct Consumer {
    shared: Arc<Shared>,
    partitions: Vec<u16>,
}

impl Consumer {
    /// Start reading `topic` (all partitions when `partitions` is `None`).
    pub async fn create(
        client: &TankClient,
        topic: &str,
        partitions: Option<Vec<u16>>,
        start: Start,
        config: ConsumerConfig,
    ) -> Result<Consumer> {
        if config.fetch_size == 0 || config.max_fetch_size < config.fetch_size {
            return Err(Error::new(
                ErrorKind::Config,
                "fetch_size must be at least 1 and at most max_fetch_size",
            ));
        }
        let known = client.partitions(topic).await?;
        let all: Vec<u16> = known.iter().map(|p| p.partition).collect();
        let chosen = match partitions {
            None => all,
            Some(list) => {
                for p in &list {
                    if !all.contains(p) {
                        return Err(Error::new(
                            ErrorKind::PartitionNotFound,
                            format!(
                                "partition {p} does not exist: topic {topic:?} has {} \
                                 partition(s)",
                                all.len()
                            ),
                        ));
                    }
                }
                let mut l = list;
                l.sort_unstable();
                l.dedup();
                l
            }
        };
        let positions = Positions::new(&chosen, config.fetch_size, |p| match &start {
            Start::Earliest => EARLIEST,
            Start::Latest => TAIL,
            Start::At(m) => m.get(&p).copied().unwrap_or(EARLIEST),
        });
        let shared = Arc::new(Shared {
            topic: Arc::from(topic),
            state: Mutex::new(State {
                queue: VecDeque::new(),
                queued_bytes: 0,
                positions,
                closed: false,
                last_error: None,
            }),
            ready: Notify::new(),
            wake: Notify::new(),
            metrics: EntityMetrics::register(client.entity_labels(Kind::Consumer, topic)),
        });
        let weak = Arc::downgrade(&shared);
        shared.metrics.set_sampler(Box::new(move |g| {
            g[G::ReceiveQueue as usize] = weak.upgrade().map(|s| s.lock().queue.len() as i64);
        }));
        tokio::spawn(fetch::run(client.clone(), shared.clone(), config));
        Ok(Consumer {
            shared,
            partitions: chosen,
        })
    }

    /// This consumer's metric cells.
    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.shared.metrics
    }

    pub fn topic(&self) -> &Arc<str> {
        &self.shared.topic
    }

    pub fn partitions(&self) -> &[u16] {
        &self.partitions
    }

    /// Up to `max` messages, waiting until at least one is there or `deadline` passes
    /// (then an empty list). An error queued by the fetch task is raised once, after the
    /// messages queued before it.
    ///
    /// Cancel safety: messages are taken from the queue only when the call returns them, so
    /// a dropped call loses nothing.
    pub async fn receive_many(
        &self,
        max: usize,
        deadline: Option<Instant>,
    ) -> Result<Vec<TankMessage>> {
        loop {
            let notified = self.shared.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut st = self.shared.lock();
                if !st.queue.is_empty() {
                    return take(&mut st, max, &self.shared);
                }
                if st.closed {
                    return Err(Error::closed("TANK consumer"));
                }
            }
            match deadline {
                Some(d) => {
                    if tokio::time::timeout_at(d.into(), notified).await.is_err() {
                        return Ok(Vec::new());
                    }
                }
                None => notified.await,
            }
        }
    }

    /// One message, or `Timeout` when `deadline` passes first.
    pub async fn receive(&self, deadline: Option<Instant>) -> Result<TankMessage> {
        let mut v = self.receive_many(1, deadline).await?;
        v.pop()
            .ok_or_else(|| Error::timeout("receiving from TANK topic"))
    }

    /// Continue `partition` from `seq` (0 = earliest, u64::MAX = tail): messages of it that
    /// were read ahead are dropped.
    pub fn seek(&self, partition: u16, seq: u64) -> Result<()> {
        let mut st = self.shared.lock();
        if st.closed {
            return Err(Error::closed("TANK consumer"));
        }
        if !st.positions.seek(partition, seq) {
            return Err(Error::new(
                ErrorKind::PartitionNotFound,
                format!("this consumer does not read partition {partition}"),
            ));
        }
        let mut freed = 0;
        st.queue.retain(|i| match i {
            Item::Msg(m) if m.partition == partition => {
                freed += m.value.len() + m.key.as_ref().map_or(0, Bytes::len);
                false
            }
            _ => true,
        });
        st.queued_bytes -= freed;
        drop(st);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// The next sequence number per partition that the application has not been handed
    /// (persist it and pass it back as `Start::At` to resume).
    pub fn positions(&self) -> BTreeMap<u16, u64> {
        self.shared.lock().positions.committed()
    }

    /// Messages read ahead and not yet taken.
    pub fn queued(&self) -> usize {
        self.shared.lock().queue.len()
    }

    pub fn last_error(&self) -> Option<String> {
        self.shared.lock().last_error.clone()
    }

    pub fn is_closed(&self) -> bool {
        self.shared.lock().closed
    }

    /// Stop reading; queued messages are dropped and later calls fail with `Closed`.
    pub fn close(&self) {
        let mut st = self.shared.lock();
        st.closed = true;
        st.queue.clear();
        st.queued_bytes = 0;
        drop(st);
        self.shared.ready.notify_waiters();
        self.shared.wake.notify_one();
    }
}

/// Take up to `max` messages from the front; an error at the very front is returned (once)
/// instead, and one behind messages waits for the next call.
fn take(st: &mut State, max: usize, shared: &Shared) -> Result<Vec<TankMessage>> {
    if let Some(Item::Err(_)) = st.queue.front() {
        if let Some(Item::Err(e)) = st.queue.pop_front() {
            return Err(e);
        }
    }
    let mut out = Vec::with_capacity(max.min(st.queue.len()));
    let mut freed = 0;
    while out.len() < max {
        match st.queue.front() {
            Some(Item::Msg(_)) => {
                if let Some(Item::Msg(m)) = st.queue.pop_front() {
                    freed += m.value.len() + m.key.as_ref().map_or(0, Bytes::len);
                    st.positions.delivered(m.partition, m.seq);
                    out.push(m);
                }
            }
            _ => break,
        }
    }
    st.queued_bytes -= freed;
    if freed > 0 {
        shared.wake.notify_one();
    }
    Ok(out)
}
