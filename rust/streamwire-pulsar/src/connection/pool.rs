//! Connections shared by everything a client does, keyed by (logical, physical) broker.
//!
//! The logical address is the broker that owns a topic; the physical one is where we dial
//! (the same, or a proxy). Concurrent callers for the same key wait for one connect attempt
//! instead of racing several.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Mutex as AsyncMutex;

use streamwire_core::error::{Error, Result};
use streamwire_core::metrics::{EntityMetrics, C};

use super::{Connection, ConnectionConfig};
use crate::service_url::BrokerAddr;

type Key = (BrokerAddr, BrokerAddr);

pub struct ConnectionPool {
    /// Replaced by a cluster failover when the clusters have their own credentials or TLS
    /// trust: connections made after the switch use the new cluster's.
    config: RwLock<Arc<ConnectionConfig>>,
    slots: Mutex<HashMap<Key, Arc<AsyncMutex<Option<Connection>>>>>,
    /// Set by `close_all`: no new connection is made afterwards, so producers and consumers
    /// of a closed client stop instead of reconnecting.
    closed: AtomicBool,
    /// The client's metrics (connections opened).
    metrics: Arc<EntityMetrics>,
}

impl ConnectionPool {
    pub fn new(config: ConnectionConfig, metrics: Arc<EntityMetrics>) -> Self {
        ConnectionPool {
            config: RwLock::new(Arc::new(config)),
            slots: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            metrics,
        }
    }

    /// The settings new connections are made with.
    pub fn config(&self) -> Arc<ConnectionConfig> {
        Arc::clone(&self.config.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Make later connections with `config` (a cluster failover, before it closes the
    /// connections to the cluster it leaves).
    pub fn set_config(&self, config: Arc<ConnectionConfig>) {
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = config;
    }

    /// A live connection to `logical` through `physical`, reusing one if it is still open.
    pub async fn get(&self, logical: &BrokerAddr, physical: &BrokerAddr) -> Result<Connection> {
        if self.is_closed() {
            return Err(Error::closed("client"));
        }
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            Arc::clone(
                slots
                    .entry((logical.clone(), physical.clone()))
                    .or_insert_with(|| Arc::new(AsyncMutex::new(None))),
            )
        };
        let mut guard = slot.lock().await;
        if let Some(c) = guard.as_ref() {
            if !c.is_closed() {
                return Ok(c.clone());
            }
        }
        let proxy_to = (logical != physical).then_some(logical);
        let config = self.config();
        let conn = Connection::connect(physical, proxy_to, &config).await?;
        self.metrics.add(C::Connections, 1);
        if self.is_closed() {
            conn.close();
            return Err(Error::closed("client"));
        }
        *guard = Some(conn.clone());
        Ok(conn)
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Number of open connections (for tests and stats).
    pub fn open_connections(&self) -> usize {
        let slots: Vec<_> = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        slots
            .iter()
            .filter(|s| {
                s.try_lock()
                    .map(|g| g.as_ref().is_some_and(|c| !c.is_closed()))
                    .unwrap_or(true)
            })
            .count()
    }

    /// Close every connection; none is made afterwards.
    pub fn close_all(&self) {
        self.closed.store(true, Ordering::Release);
        self.close_connections();
    }

    /// Close every open connection but stay usable: what a cluster failover does, so every
    /// producer and consumer reconnects (through a fresh lookup) on the new cluster.
    pub fn close_connections(&self) {
        let slots: Vec<_> = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, v)| v)
            .collect();
        for s in slots {
            if let Ok(g) = s.try_lock() {
                if let Some(c) = g.as_ref() {
                    c.close();
                }
            }
        }
    }
}
