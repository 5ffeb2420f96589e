//! One transaction: its id, its state, the partitions and subscriptions it was registered
//! on, and the sends and acks still in flight.
//!
//! Commit (and abort) first wait for every send receipt and ack response of the transaction,
//! as the Java client does: a message whose receipt has not come back may not be in the
//! broker's transaction buffer yet. If any of them failed, a commit is refused and the
//! transaction aborted instead, so nothing is committed half.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use streamwire_core::error::{Error, ErrorKind, Result};

use super::coordinator::Coordinator;
use super::state::{EndAction, EndStep, StateMachine, TxnState};
use super::wire::{self, TxnId};
use crate::message_id::MessageId;
use crate::producer::Completion;

struct Inner {
    id: TxnId,
    tc: u64,
    coordinator: Arc<Coordinator>,
    timeout: Duration,
    deadline: Instant,
    sm: Mutex<StateMachine>,
    /// Held across the registration request, so concurrent first sends register once.
    partitions: tokio::sync::Mutex<HashSet<String>>,
    subscriptions: tokio::sync::Mutex<HashSet<(String, String)>>,
    ops: AtomicUsize,
    ops_done: Notify,
    /// The first failure of a send or ack of this transaction.
    failure: Mutex<Option<Error>>,
    /// Serialises commit and abort.
    ending: tokio::sync::Mutex<()>,
}

/// A handle to one transaction (cheap to clone).
#[derive(Clone)]
pub struct Transaction {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.inner.id)
            .field("state", &self.state())
            .finish()
    }
}

/// Counts one send or ack of a transaction until its outcome is known.
pub struct OpGuard {
    inner: Arc<Inner>,
    done: bool,
}

impl OpGuard {
    /// Record the outcome (a failure makes a later commit abort instead).
    pub fn finish(mut self, res: std::result::Result<(), &Error>) {
        self.done = true;
        finish_op(&self.inner, res);
    }
}

impl Drop for OpGuard {
    fn drop(&mut self) {
        if !self.done {
            let e = Error::new(ErrorKind::Closed, "a transaction operation was abandoned");
            finish_op(&self.inner, Err(&e));
        }
    }
}

fn finish_op(inner: &Inner, res: std::result::Result<(), &Error>) {
    if let Err(e) = res {
        let mut f = inner.failure.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            *f = Some(e.clone());
        }
    }
    if inner.ops.fetch_sub(1, Ordering::AcqRel) == 1 {
        inner.ops_done.notify_waiters();
    }
}

impl Transaction {
    pub(crate) fn new(
        id: TxnId,
        tc: u64,
        coordinator: Arc<Coordinator>,
        timeout: Duration,
        deadline: Instant,
    ) -> Self {
        Transaction {
            inner: Arc::new(Inner {
                id,
                tc,
                coordinator,
                timeout,
                deadline,
                sm: Mutex::new(StateMachine::new(deadline)),
                partitions: tokio::sync::Mutex::new(HashSet::new()),
                subscriptions: tokio::sync::Mutex::new(HashSet::new()),
                ops: AtomicUsize::new(0),
                ops_done: Notify::new(),
                failure: Mutex::new(None),
                ending: tokio::sync::Mutex::new(()),
            }),
        }
    }

    fn sm(&self) -> MutexGuard<'_, StateMachine> {
        self.inner.sm.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn id(&self) -> TxnId {
        self.inner.id
    }

    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    pub fn state(&self) -> TxnState {
        self.sm().state(Instant::now())
    }

    /// Whether two handles are the same transaction.
    pub fn same(&self, other: &Transaction) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Fail unless the transaction is open (for a send or ack about to join it).
    pub fn check_open(&self, what: &str) -> Result<()> {
        self.sm().check_open(Instant::now(), what)
    }

    /// Start counting a send or ack; commit waits for its outcome.
    pub fn begin_op(&self, what: &str) -> Result<OpGuard> {
        let mut sm = self.sm();
        sm.check_open(Instant::now(), what)?;
        // Counted under the state lock: a commit that starts after this sees the count.
        self.inner.ops.fetch_add(1, Ordering::AcqRel);
        Ok(OpGuard {
            inner: Arc::clone(&self.inner),
            done: false,
        })
    }

    /// Wrap a send's completion so the transaction learns its outcome. The caller's
    /// completion runs first: once a commit returns, every send of the transaction has
    /// already reported its receipt.
    pub fn track_send(&self, guard: OpGuard, completion: Completion) -> Completion {
        Completion::Callback(Box::new(move |res: Result<MessageId>| {
            let outcome = res.as_ref().map(|_| ()).map_err(Clone::clone);
            completion.complete(res);
            guard.finish(outcome.as_ref().map(|_| ()));
        }))
    }

    /// Register `topic` (one partition) before the transaction's first send to it.
    pub async fn register_partition(&self, topic: &str) -> Result<()> {
        let mut set = self.inner.partitions.lock().await;
        // No state check here: the caller holds an `OpGuard`, taken while the transaction
        // was open; a commit that started since waits for this operation.
        if set.contains(topic) {
            return Ok(());
        }
        let id = self.inner.id;
        let parts = vec![topic.to_owned()];
        self.inner
            .coordinator
            .request(self.inner.tc, "add partition to transaction", |rid| {
                wire::add_partition_to_txn(rid, id, parts.clone())
            })
            .await?;
        set.insert(topic.to_owned());
        Ok(())
    }

    /// Register `subscription` on `topic` (one partition) before the transaction's first
    /// ack there.
    pub async fn register_subscription(&self, topic: &str, subscription: &str) -> Result<()> {
        let key = (topic.to_owned(), subscription.to_owned());
        let mut set = self.inner.subscriptions.lock().await;
        if set.contains(&key) {
            return Ok(());
        }
        let id = self.inner.id;
        let subs = vec![key.clone()];
        self.inner
            .coordinator
            .request(self.inner.tc, "add subscription to transaction", |rid| {
                wire::add_subscription_to_txn(rid, id, subs.clone())
            })
            .await?;
        set.insert(key);
        Ok(())
    }

    async fn ops_finished(&self) {
        loop {
            let n = self.inner.ops_done.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.inner.ops.load(Ordering::Acquire) == 0 {
                return;
            }
            n.await;
        }
    }

    async fn send_end(&self, commit: bool) -> Result<()> {
        let id = self.inner.id;
        let what = if commit {
            "commit transaction"
        } else {
            "abort transaction"
        };
        self.inner
            .coordinator
            .request(self.inner.tc, what, |rid| wire::end_txn(rid, id, commit))
            .await
            .map(|_| ())
    }

    fn timed_out_error(&self, e: &Error) -> Error {
        Error::new(
            ErrorKind::TransactionTimeout,
            format!(
                "transaction {} ran past its timeout of {:.1}s and was aborted by the coordinator ({e})",
                self.inner.id,
                self.inner.timeout.as_secs_f64()
            ),
        )
    }

    /// Commit: wait for the transaction's sends and acks, then ask the coordinator.
    pub async fn commit(&self) -> Result<()> {
        let _one = self.inner.ending.lock().await;
        self.sm().begin_end(EndAction::Commit, Instant::now())?;
        self.ops_finished().await;
        let failure = self
            .inner
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(f) = failure {
            self.sm().fail_to_aborting();
            let aborted = self.send_end(false).await;
            let late = Instant::now() >= self.inner.deadline;
            self.sm().finish(EndAction::Abort, aborted.is_ok(), late);
            return Err(Error::new(
                ErrorKind::Transaction,
                format!(
                    "transaction {} not committed: one of its operations failed ({f}); it was aborted{}",
                    self.inner.id,
                    match aborted {
                        Ok(()) => String::new(),
                        Err(e) => format!(" (the abort failed too: {e})"),
                    }
                ),
            ));
        }
        let res = self.send_end(true).await;
        let late = Instant::now() >= self.inner.deadline;
        self.sm().finish(EndAction::Commit, res.is_ok(), late);
        match res {
            Ok(()) => Ok(()),
            Err(e) if late && e.kind() == ErrorKind::InvalidTransactionState => {
                Err(self.timed_out_error(&e))
            }
            Err(e) => Err(e.context(format!("commit of transaction {}", self.inner.id))),
        }
    }

    /// Abort: wait for the transaction's sends and acks, then ask the coordinator. Aborting
    /// an aborted transaction does nothing.
    pub async fn abort(&self) -> Result<()> {
        let _one = self.inner.ending.lock().await;
        if self.sm().begin_end(EndAction::Abort, Instant::now())? == EndStep::AlreadyDone {
            return Ok(());
        }
        self.ops_finished().await;
        let res = self.send_end(false).await;
        let late = Instant::now() >= self.inner.deadline;
        // Past the deadline the coordinator has aborted it already: "not found" then means
        // the abort happened, so the transaction is aborted either way.
        let done = res.is_ok()
            || (late
                && res
                    .as_ref()
                    .is_err_and(|e| e.kind() == ErrorKind::InvalidTransactionState));
        self.sm().finish(EndAction::Abort, done, late);
        if done {
            Ok(())
        } else {
            res.map_err(|e| e.context(format!("abort of transaction {}", self.inner.id)))
        }
    }
}
