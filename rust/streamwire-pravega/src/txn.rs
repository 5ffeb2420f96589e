//! Transactional writes: a [`TransactionalWriter`] begins [`Transaction`]s on one stream;
//! a transaction's events go to its own segments and become visible all at once when it
//! commits, or never when it aborts or its lease runs out.
//!
//! The steps (the official clients' protocol, Pravega 0.13): `createTransaction` with a lease
//! answers the id and the stream's open segments; events are appended exactly as an ordinary
//! writer appends them (SETUP_APPEND, numbered blocks, DATA_APPENDED), to the transaction's
//! segments (`<segment>#transaction.<id>`, see `controller::txn`): so the writer here is the
//! ordinary [`EventWriter`] in transaction mode. A background task pings the controller
//! within the lease while the transaction is open. `commit` first waits until the store
//! holds every event written (a write that failed aborts the transaction instead: a commit
//! must never make part of it visible), then asks the controller to commit and, unless told
//! not to, waits until the state is COMMITTED.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use streamwire_core::budget::MemoryBudget;
use streamwire_core::completion::{Completion, Done, Group};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{EntityMetrics, Kind};

use crate::client::PravegaClient;
use crate::controller::{txn_id_text, ScopedStream, TxnState};
use crate::writer::{EventWriter, WriterConfig};

/// How often a committing transaction's state is asked for while `commit` waits.
const COMMIT_POLL: Duration = Duration::from_millis(20);

/// Settings of a transactional writer.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// How long a transaction lives without a ping (the controller aborts it then).
    pub lease: Duration,
    /// The appends' settings (blocks, window, how long an unreachable store is waited for).
    pub writer: WriterConfig,
}

/// A random writer id, as a UUID's text (the official clients' default is a random UUID).
pub fn random_writer_id() -> String {
    // Version 4, variant 2 bits set, so it reads as a UUID any tool accepts.
    let r = rand::random::<u128>();
    let v4 = (r & !(0xf << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62);
    txn_id_text(v4)
}

struct WriterInner {
    client: PravegaClient,
    stream: ScopedStream,
    writer_id: String,
    config: TxnConfig,
    budget: MemoryBudget,
    metrics: Arc<EntityMetrics>,
    closed: std::sync::atomic::AtomicBool,
}

/// Begins transactions on one stream. Cheap to clone.
#[derive(Clone)]
pub struct TransactionalWriter {
    inner: Arc<WriterInner>,
}

impl TransactionalWriter {
    /// Check the stream exists (and is not sealed) and make the writer.
    pub async fn create(
        client: &PravegaClient,
        stream: ScopedStream,
        writer_id: String,
        config: TxnConfig,
        budget: MemoryBudget,
    ) -> Result<TransactionalWriter> {
        let current = client.controller().get_current_segments(&stream).await?;
        if current.segments.is_empty() {
            return Err(Error::new(
                ErrorKind::ReadOnly,
                format!("stream {stream} is sealed"),
            ));
        }
        let metrics = EntityMetrics::register(client.entity_labels(
            Kind::Writer,
            stream.to_string(),
            writer_id.clone(),
        ));
        Ok(TransactionalWriter {
            inner: Arc::new(WriterInner {
                client: client.clone(),
                stream,
                writer_id,
                config,
                budget,
                metrics,
                closed: Default::default(),
            }),
        })
    }

    pub fn stream(&self) -> &ScopedStream {
        &self.inner.stream
    }

    pub fn writer_id(&self) -> &str {
        &self.inner.writer_id
    }

    pub fn lease(&self) -> Duration {
        self.inner.config.lease
    }

    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.inner.metrics
    }

    pub fn budget(&self) -> &MemoryBudget {
        &self.inner.budget
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// No more transactions from this writer (those begun stay usable until they end).
    pub fn close(&self) {
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Begin a transaction; `ping`: renew its lease in the background until it ends (false:
    /// the controller aborts it when the lease runs out before the commit).
    pub async fn begin(&self, ping: bool) -> Result<Transaction> {
        if self.is_closed() {
            return Err(Error::closed("Pravega transactional writer"));
        }
        let w = &self.inner;
        let lease_ms = w.config.lease.as_millis() as i64;
        let created = w
            .client
            .controller()
            .create_transaction(&w.stream, lease_ms)
            .await?;
        let writer = EventWriter::in_transaction(
            &w.client,
            w.stream.clone(),
            created.segments,
            created.id,
            w.config.writer.clone(),
            w.budget.clone(),
            Arc::clone(&w.metrics),
        );
        let inner = Arc::new(TxnInner {
            id: created.id,
            client: w.client.clone(),
            stream: w.stream.clone(),
            writer_id: w.writer_id.clone(),
            writer,
            state: Mutex::new(Local::Open),
            failed: Arc::new(FirstError::default()),
            pinger: Mutex::new(None),
        });
        if ping {
            let task = tokio::spawn(keep_alive(Arc::downgrade(&inner), w.config.lease));
            *lock(&inner.pinger) = Some(task.abort_handle());
        }
        Ok(Transaction { inner })
    }
}

/// Where the transaction stands as this client knows it.
#[derive(Debug, Clone)]
enum Local {
    Open,
    /// `commit` has started: no more writes.
    Committing,
    Committed,
    Aborted,
    /// The controller ended it behind our back (the lease ran out): the ping's error.
    Lost(Error),
}

/// The first failure among a transaction's writes (each write settles into it).
#[derive(Default)]
struct FirstError(Mutex<Option<Error>>);

impl Completion for FirstError {
    fn complete(&self, result: Result<()>) {
        if let Err(e) = result {
            lock(&self.0).get_or_insert(e);
        }
    }
}

struct TxnInner {
    id: u128,
    client: PravegaClient,
    stream: ScopedStream,
    writer_id: String,
    writer: EventWriter,
    state: Mutex<Local>,
    failed: Arc<FirstError>,
    pinger: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Drop for TxnInner {
    fn drop(&mut self) {
        // Forgotten while open: its lease runs out and the controller aborts it.
        if let Some(p) = lock(&self.pinger).take() {
            p.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The data under these locks is valid whatever a panicking holder did.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Renew the lease at a third of it (two chances before it runs out) while the transaction
/// is alive; stop at the first answer that says it can no longer be written.
async fn keep_alive(txn: Weak<TxnInner>, lease: Duration) {
    let every = (lease / 3).max(Duration::from_millis(100));
    let lease_ms = lease.as_millis() as i64;
    loop {
        tokio::time::sleep(every).await;
        let Some(t) = txn.upgrade() else { return };
        match t
            .client
            .controller()
            .ping_transaction(&t.stream, t.id, lease_ms)
            .await
        {
            Ok(()) => {}
            // Unreachable for a moment: the next ping may still be within the lease.
            Err(e) if e.is_retriable() || e.kind() == ErrorKind::Timeout => {}
            Err(e) => {
                let mut s = lock(&t.state);
                match *s {
                    Local::Open => {
                        *s = Local::Lost(e);
                        return;
                    }
                    // A commit under way answers the ping "committed": the commit decides
                    // (it stops the pings when it succeeds; if it fails, they go on).
                    Local::Committing => {}
                    _ => return,
                }
            }
        }
    }
}

/// One transaction. Cheap to clone; every clone is the same transaction.
#[derive(Clone)]
pub struct Transaction {
    inner: Arc<TxnInner>,
}

impl Transaction {
    pub fn id(&self) -> u128 {
        self.inner.id
    }

    pub fn stream(&self) -> &ScopedStream {
        &self.inner.stream
    }

    /// The writer its events are handed to (after [`check_open`](Self::check_open)).
    pub fn writer(&self) -> &EventWriter {
        &self.inner.writer
    }

    /// What a write of `count` events settles into: the first failure is what `flush` and
    /// `commit` report. A group, because the writer splits a write between segments by its
    /// routing keys only when its completion can be shared (a per-event one stays whole).
    pub fn done(&self, count: usize) -> Done {
        Done::Group(Group::notifying(count, self.inner.failed.clone()))
    }

    /// Whether it is still open here (no commit or abort started, no lost lease seen).
    pub fn is_open(&self) -> bool {
        matches!(*lock(&self.inner.state), Local::Open)
    }

    /// `Ok` while events may still be written to it; else why not (typed).
    pub fn check_open(&self) -> Result<()> {
        let s = lock(&self.inner.state).clone();
        self.refuse(&s)
    }

    fn refuse(&self, s: &Local) -> Result<()> {
        let text = txn_id_text(self.inner.id);
        let why = match s {
            Local::Open => return Ok(()),
            Local::Committing | Local::Committed => "is committed",
            Local::Aborted => "was aborted",
            Local::Lost(e) => return Err(e.clone()),
        };
        Err(Error::new(
            ErrorKind::InvalidTransactionState,
            format!("transaction {text} {why}"),
        ))
    }

    fn stop_pinging(&self) {
        if let Some(p) = lock(&self.inner.pinger).take() {
            p.abort();
        }
    }

    fn first_failure(&self) -> Option<Error> {
        lock(&self.inner.failed.0).clone()
    }

    /// Wait until the store holds every event written so far; the first failed write raises.
    pub async fn flush(&self) -> Result<()> {
        self.check_open()?;
        self.inner.writer.flush().await?;
        match self.first_failure() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Commit: every event written must be held by the store first (else the transaction is
    /// aborted and the write's error raised); then the controller commits it, and with
    /// `wait`, this returns once it is COMMITTED. `timestamp` (ms) is the writer's time mark
    /// for the stream's watermarks.
    pub async fn commit(&self, wait: bool, timestamp: Option<i64>) -> Result<()> {
        {
            let mut s = lock(&self.inner.state);
            self.refuse(&s)?;
            *s = Local::Committing;
        }
        let t = &self.inner;
        let flushed = match t.writer.flush().await {
            Ok(()) => self.first_failure().map_or(Ok(()), Err),
            Err(e) => Err(e),
        };
        if let Err(e) = flushed {
            // Part of it is not in the store: it must never become visible.
            self.stop_pinging();
            *lock(&t.state) = Local::Aborted;
            // Its segments gone because the lease ran out: say that, not the append's error.
            if let Ok(s) = t
                .client
                .controller()
                .transaction_state(&t.stream, t.id)
                .await
            {
                if s.is_aborted() {
                    self.close_writer();
                    return Err(self.timed_out(s));
                }
            }
            let _ = t
                .client
                .controller()
                .abort_transaction(&t.stream, t.id)
                .await;
            self.close_writer();
            return Err(Error::new(
                e.kind(),
                format!(
                    "transaction {} aborted: a write failed: {}",
                    txn_id_text(t.id),
                    e.message()
                ),
            ));
        }
        let controller = t.client.controller();
        let asked = controller
            .commit_transaction(&t.stream, t.id, &t.writer_id, timestamp.unwrap_or(i64::MIN))
            .await;
        if let Err(e) = asked {
            // The usual cause: the lease ran out before the commit, and it is aborted.
            let state = controller.transaction_state(&t.stream, t.id).await;
            if let Ok(s) = state {
                if s.is_aborted() {
                    *lock(&t.state) = Local::Aborted;
                    self.stop_pinging();
                    self.close_writer();
                    return Err(self.timed_out(s));
                }
            }
            // Still open (the controller unreachable, say): the pings and the writer go on,
            // so the commit can be asked again with everything written still held.
            *lock(&t.state) = Local::Open;
            return Err(e);
        }
        // Only now: a commit that failed above leaves the transaction usable.
        self.stop_pinging();
        self.close_writer();
        *lock(&t.state) = Local::Committed;
        if !wait {
            return Ok(());
        }
        wait_committed(&t.client, &t.stream, t.id).await
    }

    fn timed_out(&self, s: TxnState) -> Error {
        timed_out(self.inner.id, s)
    }

    fn close_writer(&self) {
        let w = self.inner.writer.clone();
        tokio::spawn(async move {
            let _ = w.close().await;
        });
    }

    /// Abort: nothing written becomes visible. Aborting an aborted one does nothing; a
    /// committed one raises `InvalidTransactionState`.
    pub async fn abort(&self) -> Result<()> {
        let lost = {
            let mut s = lock(&self.inner.state);
            let lost = match &*s {
                Local::Aborted => return Ok(()),
                Local::Committing | Local::Committed => return self.refuse(&s),
                Local::Open => false,
                Local::Lost(_) => true,
            };
            *s = Local::Aborted;
            lost
        };
        self.stop_pinging();
        let t = &self.inner;
        let r = t
            .client
            .controller()
            .abort_transaction(&t.stream, t.id)
            .await;
        // Its segments are gone: whatever waits on them fails at once.
        self.close_writer();
        match r {
            // Already ended by the controller (its lease ran out): aborted all the same.
            Err(_) if lost => Ok(()),
            Err(e) if e.kind() == ErrorKind::InvalidTransactionState => Ok(()),
            other => other,
        }
    }

    /// Its state at the controller now.
    pub async fn status(&self) -> Result<TxnState> {
        let t = &self.inner;
        t.client
            .controller()
            .transaction_state(&t.stream, t.id)
            .await
    }
}

/// The error of a transaction that ended aborted when it was to commit.
fn timed_out(id: u128, s: TxnState) -> Error {
    Error::new(
        ErrorKind::TransactionTimeout,
        format!(
            "transaction {} is {} (its lease ran out, or it was aborted elsewhere): \
             nothing of it is visible",
            txn_id_text(id),
            s.name()
        ),
    )
}

/// Poll the controller until transaction `id` is COMMITTED (an abort raises).
async fn wait_committed(client: &PravegaClient, stream: &ScopedStream, id: u128) -> Result<()> {
    loop {
        let s = client.controller().transaction_state(stream, id).await?;
        match s {
            TxnState::Committed => return Ok(()),
            s if s.is_aborted() => return Err(timed_out(id, s)),
            _ => tokio::time::sleep(COMMIT_POLL).await,
        }
    }
}

/// A transaction known by its id only: begun elsewhere (another process, or before a
/// restart), ended here through the controller. Commit, abort and status are controller
/// calls by (stream, id), so the process that ends a transaction need not be the one that
/// wrote it: a Spark driver commits what its tasks wrote. It writes nothing, so its `commit`
/// cannot wait for the events to be stored: the writer must have flushed before handing the
/// id on (an event not yet stored when the commit lands is lost with the transaction's
/// segments, as with the official clients' `getTxn`).
#[derive(Clone)]
pub struct TxnHandle {
    client: PravegaClient,
    stream: ScopedStream,
    id: u128,
}

impl TxnHandle {
    pub fn new(client: &PravegaClient, stream: ScopedStream, id: u128) -> TxnHandle {
        TxnHandle {
            client: client.clone(),
            stream,
            id,
        }
    }

    pub fn id(&self) -> u128 {
        self.id
    }

    pub fn stream(&self) -> &ScopedStream {
        &self.stream
    }

    /// Its state at the controller now (UNKNOWN: no such transaction, or one the controller
    /// has forgotten: completed transactions are kept for `controller.transaction.ttl.hours`,
    /// 24 by default, and dropped in daily batches).
    pub async fn status(&self) -> Result<TxnState> {
        self.client
            .controller()
            .transaction_state(&self.stream, self.id)
            .await
    }

    /// Renew its lease for `lease` from now (the controller's bounds apply).
    pub async fn ping(&self, lease: Duration) -> Result<()> {
        let ms = lease.as_millis() as i64;
        self.client
            .controller()
            .ping_transaction(&self.stream, self.id, ms)
            .await
    }

    /// Commit it. Already committing or committed: nothing is asked (so a commit asked again
    /// after a lost answer succeeds). Aborting or aborted: `TransactionTimeout` (nothing of it
    /// is visible). Unknown to the controller: `InvalidTransactionState`. With `wait`, returns
    /// once it is COMMITTED.
    pub async fn commit(&self, writer_id: &str, wait: bool, timestamp: Option<i64>) -> Result<()> {
        let controller = self.client.controller();
        match self.status().await? {
            TxnState::Open => {
                let asked = controller
                    .commit_transaction(
                        &self.stream,
                        self.id,
                        writer_id,
                        timestamp.unwrap_or(i64::MIN),
                    )
                    .await;
                if let Err(e) = asked {
                    // Its lease ran out between the two calls, most likely.
                    return match self.status().await? {
                        s if s.is_aborted() => Err(timed_out(self.id, s)),
                        s if s.is_committed() => Ok(()),
                        _ => Err(e),
                    };
                }
            }
            s if s.is_committed() => {}
            s if s.is_aborted() => return Err(timed_out(self.id, s)),
            _ => return Err(self.unknown()),
        }
        if wait {
            wait_committed(&self.client, &self.stream, self.id).await
        } else {
            Ok(())
        }
    }

    /// Abort it: nothing of it becomes visible. Already aborting or aborted: nothing to do.
    /// Committing or committed: `InvalidTransactionState`; unknown: the same.
    pub async fn abort(&self) -> Result<()> {
        let refused = |s: TxnState| {
            Error::new(
                ErrorKind::InvalidTransactionState,
                format!(
                    "transaction {} is {}: it cannot be aborted",
                    txn_id_text(self.id),
                    s.name()
                ),
            )
        };
        match self.status().await? {
            TxnState::Open => {}
            s if s.is_aborted() => return Ok(()),
            TxnState::Unknown => return Err(self.unknown()),
            s => return Err(refused(s)),
        }
        let r = self
            .client
            .controller()
            .abort_transaction(&self.stream, self.id)
            .await;
        match r {
            Ok(()) => Ok(()),
            Err(e) => match self.status().await? {
                // Its lease ran out meanwhile: aborted all the same.
                s if s.is_aborted() => Ok(()),
                s if s.is_committed() => Err(refused(s)),
                _ => Err(e),
            },
        }
    }

    fn unknown(&self) -> Error {
        Error::new(
            ErrorKind::InvalidTransactionState,
            format!(
                "transaction {} of {} is unknown to the controller (never begun, or ended \
                 longer ago than the controller keeps completed transactions: \
                 controller.transaction.ttl.hours, 24 by default)",
                txn_id_text(self.id),
                self.stream
            ),
        )
    }
}
