//! TableView: a topic read as a key → latest value map (Java's `client.newTableView()`).
//!
//! One non-durable reader over every partition of the topic reads from the earliest position
//! with `read_compacted`, so the broker hands the compacted ledger first and then the live
//! tail. Each keyed message sets its key to the message; an empty payload (the tombstone a
//! producer sends as a null value) removes the key; a message without a key is skipped. That
//! is what Java's `TableViewImpl.handleMessage` does (`msg.hasKey()`, `msg.size() > 0 ?
//! msg.getValue() : null`, then `data.remove` / `data.put` and every listener told).
//!
//! [`TableView::create`] returns once the reader has caught up with the topic as it was when
//! it started (as Java: read until `hasMessageAvailable()` is false); from then on a Tokio task
//! applies the tail. The map is behind one short lock and holds the received messages, not
//! decoded values: decoding needs the caller's schema and writer versions, which the binding
//! has, and the engine stays free of any interpreter. Listeners are not called from here:
//! once [`TableView::listen`] was called the task also queues each change as an [`Update`]
//! numbered in order, and the caller takes them ([`TableView::take_updates`]) on a thread of
//! its own, so a slow listener never holds up the reader or `get`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::client::PulsarClient;
use crate::consumer::{Consumer, ConsumerConfig, InitialPosition, ReceivedMessage, StartFilter};
use crate::message_id::MessageId;
use crate::protocol::pb;
use crate::topic::TopicName;

/// Messages taken from the receiver queue at once.
const BATCH: usize = 1000;

/// How long the catch-up waits for a message it expects before asking the broker again
/// whether any is left (a last message the compaction removed never arrives).
const EXPECT_WAIT: Duration = Duration::from_millis(50);

/// How a table view reads its topic.
#[derive(Debug, Clone)]
pub struct TableViewConfig {
    /// The reader's subscription name (None: a random one, as Java's default).
    pub subscription: Option<String>,
    pub receiver_queue_size: u32,
    /// The schema the reader declares to the broker (checked against the topic's).
    pub schema: Option<pb::Schema>,
    /// How often the view asks whether its partitioned topic gained partitions, and reads
    /// the new ones from their start (Java's `autoUpdatePartitionsInterval`, 60 s by
    /// default). Zero: never.
    pub auto_update_partitions: Duration,
}

impl Default for TableViewConfig {
    fn default() -> Self {
        TableViewConfig {
            subscription: None,
            receiver_queue_size: 1000,
            schema: None,
            auto_update_partitions: Duration::from_secs(60),
        }
    }
}

/// One change of the map: `value` None means the key was removed.
#[derive(Debug, Clone)]
pub struct Update {
    /// Changes are numbered from 1 in the order they were applied.
    pub seq: u64,
    pub key: String,
    pub value: Option<ReceivedMessage>,
}

/// The map and its change log (pure: no I/O, unit-tested below).
#[derive(Debug, Default)]
pub struct Table {
    map: HashMap<String, ReceivedMessage>,
    /// The number of changes applied so far.
    seq: u64,
    /// Whether changes are queued for listeners (only once someone listens: a view nobody
    /// listens to must not grow a queue nobody takes).
    listening: bool,
    pending: Vec<Update>,
    /// Per reader slot (partition): the position of the last message applied.
    applied: HashMap<u32, (i64, i64, i32)>,
    /// Messages skipped because a later one of their partition was already applied.
    duplicates: u64,
}

impl Table {
    /// Apply one message; whether it changed anything.
    ///
    /// A reader gets each partition's messages in order, so a message at or before the last
    /// one applied from its partition is a redelivery (a broker may dispatch an entry again,
    /// pulsar-lite does to fast readers); applying it would bring back an older value.
    pub fn apply(&mut self, m: ReceivedMessage) -> bool {
        let pos = (m.id.ledger_id, m.id.entry_id, m.id.batch_index);
        match self.applied.get_mut(&m.slot()) {
            Some(last) if pos <= *last => {
                self.duplicates += 1;
                return false;
            }
            Some(last) => *last = pos,
            None => {
                self.applied.insert(m.slot(), pos);
            }
        }
        let Some(key) = m.key().map(str::to_owned) else {
            return false; // Java skips messages without a key
        };
        // An empty payload is a deletion, whether or not the producer flagged a null value.
        let value = if m.payload.is_empty() {
            self.map.remove(&key);
            None
        } else {
            self.map.insert(key.clone(), m.clone());
            Some(m)
        };
        self.seq += 1;
        if self.listening {
            self.pending.push(Update {
                seq: self.seq,
                key,
                value,
            });
        }
        true
    }

    pub fn get(&self, key: &str) -> Option<&ReceivedMessage> {
        self.map.get(key)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn keys(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    pub fn entries(&self) -> Vec<(String, ReceivedMessage)> {
        self.map
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Start queueing changes; the entries as of now and the number of the last change they
    /// include (a listener is told about later changes only).
    pub fn listen(&mut self) -> (u64, Vec<(String, ReceivedMessage)>) {
        self.listening = true;
        (self.seq, self.entries())
    }

    /// The queued changes, oldest first.
    pub fn take_updates(&mut self) -> Vec<Update> {
        std::mem::take(&mut self.pending)
    }

    pub fn has_updates(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Redelivered messages skipped so far.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }
}

/// What catching up took (logged).
#[derive(Debug, Default)]
struct CatchUp {
    messages: usize,
    /// `has_message_available` round trips.
    checks: usize,
    /// Waits for the receiver queue.
    waits: usize,
}

struct Inner {
    topic: String,
    reader: Consumer,
    table: Mutex<Table>,
    /// Notified when changes are queued, when the view closes and when the reader stops.
    changed: Notify,
    closed: AtomicBool,
    /// Why the tail stopped, if it failed (kept for `error()`).
    failed: Mutex<Option<Error>>,
    tail: Mutex<Option<JoinHandle<()>>>,
    /// The task adding the partitions the topic gains (None: not watching).
    watch: Mutex<Option<JoinHandle<()>>>,
}

/// A topic as a key → latest message map, kept up to date (see the module docs).
#[derive(Clone)]
pub struct TableView {
    inner: Arc<Inner>,
}

impl TableView {
    /// Read `topic` (all its partitions) up to its last message, then follow it.
    pub async fn create(
        client: &PulsarClient,
        topic: &TopicName,
        cfg: TableViewConfig,
    ) -> Result<TableView> {
        if let Some(s) = &cfg.subscription {
            if s.is_empty() {
                return Err(Error::new(
                    ErrorKind::Config,
                    "subscription_name must not be empty",
                ));
            }
        }
        let subscription = cfg.subscription.unwrap_or_else(|| {
            let n: u64 = rand::random();
            format!("tableview-{:010x}", n & 0xff_ffff_ffff)
        });
        let reader_cfg = ConsumerConfig {
            subscription,
            initial_position: InitialPosition::Earliest,
            receiver_queue_size: cfg.receiver_queue_size,
            read_compacted: true,
            durable: false,
            start: Some(StartFilter {
                id: MessageId::EARLIEST,
                inclusive: false,
            }),
            schema: cfg.schema,
            // The view follows new partitions itself (`watch_partitions`), at its own interval.
            auto_update_partitions: Duration::ZERO,
            ..ConsumerConfig::default()
        };
        let reader = Consumer::subscribe(client, std::slice::from_ref(topic), reader_cfg).await?;
        let view = TableView {
            inner: Arc::new(Inner {
                topic: topic.to_string(),
                reader,
                table: Mutex::new(Table::default()),
                changed: Notify::new(),
                closed: AtomicBool::new(false),
                failed: Mutex::new(None),
                tail: Mutex::new(None),
                watch: Mutex::new(None),
            }),
        };
        let started = std::time::Instant::now();
        let stats = match view.catch_up().await {
            Ok(stats) => stats,
            Err(e) => {
                let _ = view.inner.reader.close().await;
                return Err(e);
            }
        };
        // One lock for both figures (two guards in one expression would deadlock).
        let (keys, duplicates) = {
            let t = view.lock();
            (t.len(), t.duplicates())
        };
        streamwire_core::log::event(
            streamwire_core::log::Level::Info,
            "pulsar.table_view",
            || {
                (
                    "table view caught up".to_owned(),
                    vec![
                        ("topic", view.inner.topic.clone()),
                        ("messages", stats.messages.to_string()),
                        ("keys", keys.to_string()),
                        ("duplicates", duplicates.to_string()),
                        ("availability_checks", stats.checks.to_string()),
                        ("waits", stats.waits.to_string()),
                        ("ms", started.elapsed().as_millis().to_string()),
                    ],
                )
            },
        );
        let follower = view.clone();
        let task = tokio::spawn(async move { follower.follow().await });
        *view.lock_tail() = Some(task);
        if !cfg.auto_update_partitions.is_zero() && topic.partition_index().is_none() {
            let watch = tokio::spawn(watch_partitions(
                Arc::downgrade(&view.inner),
                topic.clone(),
                cfg.auto_update_partitions,
            ));
            *view.inner.watch.lock().unwrap_or_else(|p| p.into_inner()) = Some(watch);
        }
        Ok(view)
    }

    /// Stop the background tasks (the tail and the partition watch).
    fn stop_tasks(&self) {
        for slot in [&self.inner.tail, &self.inner.watch] {
            if let Some(task) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                task.abort();
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.inner.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_tail(&self) -> MutexGuard<'_, Option<JoinHandle<()>>> {
        self.inner.tail.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn apply(&self, msgs: Vec<ReceivedMessage>) {
        let queued = {
            let mut t = self.lock();
            for m in msgs {
                t.apply(m);
            }
            t.has_updates()
        };
        if queued {
            self.inner.changed.notify_waiters();
        }
    }

    /// Read until the broker says nothing is left (Java's `hasMessageAvailable()` loop).
    /// Asking costs a round trip per partition, so it is asked only when the receiver queue
    /// is empty and no partition is known to be behind the last ids read at the start.
    async fn catch_up(&self) -> Result<CatchUp> {
        let mut stats = CatchUp::default();
        let r = &self.inner.reader;
        let lasts: Vec<MessageId> = r.get_last_message_ids().await?;
        // Per reader slot: the (ledger, entry) of the last message taken.
        let mut seen: Vec<(i64, i64)> = vec![(-1, -1); lasts.len()];
        let behind = |seen: &[(i64, i64)]| {
            lasts
                .iter()
                .zip(seen)
                .any(|(l, s)| l.ledger_id >= 0 && l.entry_id >= 0 && *s < (l.ledger_id, l.entry_id))
        };
        loop {
            let got = match r.try_receive_many(BATCH) {
                Ok(got) => got,
                Err(e) if e.kind() == ErrorKind::TopicTerminated => return Ok(stats),
                Err(e) => return Err(e),
            };
            if !got.is_empty() {
                stats.messages += got.len();
                for m in &got {
                    if let Some(s) = seen.get_mut(m.slot() as usize) {
                        *s = (*s).max((m.id.ledger_id, m.id.entry_id));
                    }
                }
                self.apply(got);
                continue;
            }
            if behind(&seen) {
                stats.waits += 1;
                if let Ok(got) = tokio::time::timeout(EXPECT_WAIT, r.receive_many(BATCH)).await {
                    let got = got?;
                    stats.messages += got.len();
                    for m in &got {
                        if let Some(s) = seen.get_mut(m.slot() as usize) {
                            *s = (*s).max((m.id.ledger_id, m.id.entry_id));
                        }
                    }
                    self.apply(got);
                    continue;
                }
            }
            stats.checks += 1;
            if !r.has_message_available().await? {
                return Ok(stats);
            }
            stats.waits += 1;
            match r.receive_many(BATCH).await {
                Ok(got) => {
                    stats.messages += got.len();
                    self.apply(got)
                }
                Err(e) if e.kind() == ErrorKind::TopicTerminated => return Ok(stats),
                Err(e) => return Err(e),
            }
        }
    }

    /// Apply the tail until the view closes or the reader fails for good.
    async fn follow(&self) {
        loop {
            match self.inner.reader.receive_many(BATCH).await {
                Ok(got) => self.apply(got),
                Err(e) => {
                    // Closed by `close` is the normal end; a terminated topic has no tail.
                    if !self.inner.closed.load(Ordering::Acquire)
                        && e.kind() != ErrorKind::TopicTerminated
                    {
                        *self.inner.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    }
                    self.inner.changed.notify_waiters();
                    return;
                }
            }
        }
    }

    pub fn topic(&self) -> &str {
        &self.inner.topic
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::closed("table view"))
        } else {
            Ok(())
        }
    }

    /// Why the view stopped following the topic, if it failed (its map stays readable).
    pub fn error(&self) -> Option<Error> {
        self.inner
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn get(&self, key: &str) -> Result<Option<ReceivedMessage>> {
        self.check_open()?;
        Ok(self.lock().get(key).cloned())
    }

    pub fn contains(&self, key: &str) -> Result<bool> {
        self.check_open()?;
        Ok(self.lock().get(key).is_some())
    }

    pub fn len(&self) -> Result<usize> {
        self.check_open()?;
        Ok(self.lock().len())
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    pub fn keys(&self) -> Result<Vec<String>> {
        self.check_open()?;
        Ok(self.lock().keys())
    }

    pub fn entries(&self) -> Result<Vec<(String, ReceivedMessage)>> {
        self.check_open()?;
        Ok(self.lock().entries())
    }

    /// The entries as of now and the number of the last change in them; from now on changes
    /// are queued for [`Self::take_updates`].
    pub fn listen(&self) -> Result<(u64, Vec<(String, ReceivedMessage)>)> {
        self.check_open()?;
        Ok(self.lock().listen())
    }

    /// The changes queued since the last call (empty if none).
    pub fn take_updates(&self) -> Vec<Update> {
        self.lock().take_updates()
    }

    /// Wait until changes are queued, the view is closed or its reader stopped.
    pub async fn wait_updates(&self) {
        loop {
            let notified = self.inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.lock().has_updates() || self.is_closed() || self.error().is_some() {
                return;
            }
            notified.await;
        }
    }

    /// Mark the view closed at once (reads raise, waiters of updates return); the reader is
    /// closed by [`Self::close`]. Whether this call closed it.
    pub fn begin_close(&self) -> bool {
        let first = !self.inner.closed.swap(true, Ordering::AcqRel);
        self.inner.changed.notify_waiters();
        first
    }

    /// Close without waiting (the handle was dropped unclosed): the tail task ends, and with
    /// it the last reference to the reader, whose own drop lets go of its partitions.
    pub fn abandon(&self) {
        self.begin_close();
        self.stop_tasks();
    }

    /// Stop following the topic and close the reader. Idempotent.
    pub async fn close(&self) -> Result<()> {
        self.begin_close();
        self.stop_tasks();
        self.inner.reader.close().await
    }
}

/// Every `period`, subscribe the view's reader to the partitions `topic` gained (their keys
/// then come in with the tail, as Java's TableView sees them through its multi-topic reader's
/// partition auto-update). Holds the view weakly: a dropped view ends it. A failed round
/// (broker away) is logged and tried again next period.
async fn watch_partitions(view: std::sync::Weak<Inner>, topic: TopicName, period: Duration) {
    let start = tokio::time::Instant::now() + period;
    let mut tick = tokio::time::interval_at(start, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = view.upgrade() else {
            return;
        };
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        match inner.reader.add_grown_partitions(&topic).await {
            Ok(0) => {}
            Ok(n) => streamwire_core::log::event(
                streamwire_core::log::Level::Info,
                "pulsar.table_view",
                || {
                    (
                        "table view reads new partitions".to_owned(),
                        vec![("topic", inner.topic.clone()), ("added", n.to_string())],
                    )
                },
            ),
            Err(e) if !inner.closed.load(Ordering::Acquire) => streamwire_core::log::event(
                streamwire_core::log::Level::Warning,
                "pulsar.table_view",
                || {
                    (
                        format!("checking for new partitions failed ({e}); again later"),
                        vec![("topic", inner.topic.clone())],
                    )
                },
            ),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::entry::{EntryInfo, Extras};
    use bytes::Bytes;

    fn msg(key: Option<&str>, payload: &'static [u8]) -> ReceivedMessage {
        static NEXT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);
        let entry = NEXT.fetch_add(1, Ordering::Relaxed);
        at(key, payload, entry)
    }

    fn at(key: Option<&str>, payload: &'static [u8], entry: i64) -> ReceivedMessage {
        ReceivedMessage {
            id: MessageId {
                ledger_id: 7,
                entry_id: entry,
                partition: -1,
                batch_index: -1,
                batch_size: 0,
                first_chunk: None,
            },
            payload: Bytes::from_static(payload),
            sequence_id: 0,
            entry: Arc::new(EntryInfo {
                slot: 0,
                topic: Arc::from("persistent://public/default/t"),
                publish_time: 0,
                producer_name: Arc::from("p"),
                redelivery_count: 0,
                schema_version: None,
            }),
            extras: Extras {
                key: key.map(str::to_owned),
                null_value: payload.is_empty(),
                ..Extras::default()
            }
            .boxed(),
        }
    }

    #[test]
    fn later_values_replace_earlier_ones_and_empty_payloads_remove() {
        let mut t = Table::default();
        assert!(t.apply(msg(Some("a"), b"1")));
        assert!(t.apply(msg(Some("b"), b"2")));
        assert!(t.apply(msg(Some("a"), b"3")));
        assert_eq!(&t.get("a").unwrap().payload[..], b"3");
        assert!(t.apply(msg(Some("b"), b"")));
        assert!(t.get("b").is_none());
        assert_eq!(t.len(), 1);
        // Removing a key that is not there is still a change listeners are told about.
        assert!(t.apply(msg(Some("zz"), b"")));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn messages_without_a_key_are_skipped() {
        let mut t = Table::default();
        assert!(!t.apply(msg(None, b"x")));
        assert!(t.is_empty());
        assert!(t.keys().is_empty());
    }

    #[test]
    fn changes_are_queued_only_after_listen_and_numbered_in_order() {
        let mut t = Table::default();
        t.apply(msg(Some("a"), b"1"));
        assert!(!t.has_updates());
        let (seq, snapshot) = t.listen();
        assert_eq!(seq, 1);
        assert_eq!(snapshot.len(), 1);
        t.apply(msg(Some("a"), b"2"));
        t.apply(msg(Some("a"), b""));
        let ups = t.take_updates();
        assert_eq!(ups.iter().map(|u| u.seq).collect::<Vec<_>>(), vec![2, 3]);
        assert_eq!(&ups[0].value.as_ref().unwrap().payload[..], b"2");
        assert!(ups[1].value.is_none());
        assert!(t.take_updates().is_empty());
    }

    #[test]
    fn a_redelivered_older_message_does_not_bring_back_its_value() {
        let mut t = Table::default();
        assert!(t.apply(at(Some("a"), b"old", 1_000_000)));
        assert!(t.apply(at(Some("a"), b"new", 1_000_001)));
        assert!(!t.apply(at(Some("a"), b"old", 1_000_000)));
        assert!(!t.apply(at(Some("a"), b"new", 1_000_001)));
        assert_eq!(&t.get("a").unwrap().payload[..], b"new");
        assert_eq!(t.duplicates(), 2);
    }
}
