//! The client of the brokers' transaction coordinators (TCs).
//!
//! Coordinators are the partitions of `persistent://pulsar/system/transaction_coordinator_assign`:
//! coordinator N is served by the broker that owns partition N. A request for coordinator N
//! goes to that broker, on a pooled connection that first said TC_CLIENT_CONNECT_REQUEST(N)
//! (which makes the broker load the coordinator). New transactions are spread over the
//! coordinators round robin, as the Java client does.
//!
//! Retries: a coordinator that is still loading (right after a broker start or a failover)
//! answers `TransactionCoordinatorNotFound`; that, and a lost connection, are retried with
//! the core's backoff until the operation timeout.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use streamwire_core::backoff::{Backoff, BackoffConfig};
use streamwire_core::error::{Error, ErrorKind, Result};

use super::txn::Transaction;
use super::wire::{self, TxnId, TxnReply};
use crate::client::PulsarClient;
use crate::connection::Connection;
use crate::protocol::pb;
use crate::topic::TopicName;

/// The partitioned system topic whose partitions are the coordinators.
pub const TC_ASSIGN_TOPIC: &str = "persistent://pulsar/system/transaction_coordinator_assign";

/// One client's view of the transaction coordinators; shared by its transactions.
pub struct Coordinator {
    client: PulsarClient,
    /// Number of coordinators, asked once.
    count: tokio::sync::Mutex<Option<u32>>,
    next: AtomicU64,
    /// Connections that said TC_CLIENT_CONNECT for a coordinator, by coordinator id.
    connected: tokio::sync::Mutex<HashMap<u64, Connection>>,
    op_timeout: Duration,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator").finish_non_exhaustive()
    }
}

fn backoff() -> Backoff {
    Backoff::new(BackoffConfig {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(2),
        ..BackoffConfig::default()
    })
}

impl Coordinator {
    pub fn new(client: PulsarClient) -> Arc<Coordinator> {
        let op_timeout = client.config().operation_timeout;
        Arc::new(Coordinator {
            client,
            count: tokio::sync::Mutex::new(None),
            next: AtomicU64::new(0),
            connected: tokio::sync::Mutex::new(HashMap::new()),
            op_timeout,
        })
    }

    /// How many coordinators the cluster runs. A cluster without transactions has no
    /// (partitioned) assign topic: that is `NotSupported`.
    async fn coordinators(&self) -> Result<u32> {
        let mut count = self.count.lock().await;
        if let Some(n) = *count {
            return Ok(n);
        }
        let topic = TopicName::parse(TC_ASSIGN_TOPIC)?;
        // A broker without transactions has no such topic (or refuses to say): anything but
        // a passing network failure, or a refusal of our credentials or role, means there is
        // no coordinator to talk to. A role that may not look the coordinators' topic up
        // (it lives in `pulsar/system`) is told so, not that transactions are off.
        let n = self.client.partitions(&topic).await.map_err(|e| {
            let refused = matches!(
                e.kind(),
                ErrorKind::Authentication | ErrorKind::Authorization
            );
            if e.is_retriable() || refused {
                e
            } else {
                not_enabled(&e.to_string())
            }
        })?;
        if n == 0 {
            return Err(not_enabled("the broker has no transaction coordinator"));
        }
        *count = Some(n);
        Ok(n)
    }

    /// A connection to the broker serving coordinator `tc`, connected to it.
    async fn connection(&self, tc: u64) -> Result<Connection> {
        let mut map = self.connected.lock().await;
        if let Some(c) = map.get(&tc).filter(|c| !c.is_closed()) {
            return Ok(c.clone());
        }
        map.remove(&tc);
        let topic = TopicName::parse(&format!("{TC_ASSIGN_TOPIC}-partition-{tc}"))?;
        let (conn, _) = self.client.connection_for(&topic).await?;
        let rid = conn.new_request_id();
        let frame = conn
            .request(
                rid,
                "transaction coordinator connect",
                wire::tc_client_connect(rid, tc),
            )
            .await?;
        match wire::check_response(&frame.command) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::NotSupported => {
                return Err(not_enabled(e.message()));
            }
            Err(e) => return Err(e),
        }
        map.insert(tc, conn.clone());
        Ok(conn)
    }

    /// Send a request to coordinator `tc` and decode its answer, retrying what is worth
    /// retrying until the operation timeout.
    pub(crate) async fn request(
        &self,
        tc: u64,
        what: &'static str,
        build: impl Fn(u64) -> pb::BaseCommand,
    ) -> Result<TxnReply> {
        let deadline = Instant::now() + self.op_timeout;
        let mut backoff = backoff();
        loop {
            let res = async {
                let conn = self.connection(tc).await?;
                let rid = conn.new_request_id();
                let frame = conn.request(rid, what, build(rid)).await?;
                wire::check_response(&frame.command)
            }
            .await;
            match res {
                Ok(r) => return Ok(r),
                Err(e) if e.is_retriable() => {
                    let delay = backoff.next_delay();
                    if Instant::now() + delay >= deadline {
                        return Err(e.context(format!(
                            "{what}: gave up after {:.0}s of retries",
                            self.op_timeout.as_secs_f64()
                        )));
                    }
                    if matches!(e.kind(), ErrorKind::Disconnected | ErrorKind::Connect) {
                        self.connected.lock().await.remove(&tc);
                    }
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Start a transaction that the coordinator aborts on its own after `timeout`.
    pub async fn new_transaction(self: &Arc<Self>, timeout: Duration) -> Result<Transaction> {
        if timeout.is_zero() {
            return Err(Error::invalid("a transaction timeout must be positive"));
        }
        let n = self.coordinators().await?;
        let tc = self.next.fetch_add(1, Ordering::Relaxed) % u64::from(n);
        let ttl_ms = (timeout.as_millis() as u64).max(1);
        let started = Instant::now();
        match self
            .request(tc, "new transaction", |rid| wire::new_txn(rid, tc, ttl_ms))
            .await?
        {
            TxnReply::NewTxn(id) => Ok(Transaction::new(
                id,
                tc,
                Arc::clone(self),
                timeout,
                started + timeout,
            )),
            other => Err(Error::new(
                ErrorKind::Protocol,
                format!("unexpected answer to NEW_TXN: {other:?}"),
            )),
        }
    }
}

impl Coordinator {
    /// A handle on a transaction started elsewhere (another client, another process), by its
    /// id: the Spark sink's driver commits or aborts the transactions its tasks wrote in. The
    /// coordinator is the id's high part. `timeout` only bounds what this handle lets through
    /// locally: the coordinator keeps the timeout the transaction was started with.
    ///
    /// Only the number of coordinators is asked (once per client: a cluster without
    /// transactions fails here, as `new_transaction` does); a transaction that does not exist
    /// (or has ended) shows when the handle is used, as the coordinator's typed error.
    pub async fn resume(self: &Arc<Self>, id: TxnId, timeout: Duration) -> Result<Transaction> {
        if timeout.is_zero() {
            return Err(Error::invalid("a transaction timeout must be positive"));
        }
        let n = self.coordinators().await?;
        if id.most >= u64::from(n) {
            return Err(Error::invalid(format!(
                "transaction {id} names coordinator {}, but the cluster has {n}",
                id.most
            )));
        }
        Ok(Transaction::new(
            id,
            id.most,
            Arc::clone(self),
            timeout,
            Instant::now() + timeout,
        ))
    }
}

fn not_enabled(why: &str) -> Error {
    Error::new(
        ErrorKind::NotSupported,
        format!("transactions are not available on this cluster (transactionCoordinatorEnabled=false, or not Apache Pulsar): {why}"),
    )
}
