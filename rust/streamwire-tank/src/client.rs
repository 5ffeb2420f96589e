//! The TANK client: one logical connection (re-dialled with backoff) and the broker's
//! administrative calls. Producers and consumers share the client's connection: TANK
//! pipelines every request on one socket and matches replies by request id.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;

use streamwire_core::backoff::BackoffConfig;
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::redial::{Dialer, Redial};

use crate::codec::{self, RawFrame};
use crate::connection::{dial, Connection, DialConfig};
use crate::errors;
use crate::url::{self, BrokerAddr};

/// Settings of a client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub dial: DialConfig,
    /// Bound of every call that is not a long poll (a consume adds its `max_wait`).
    pub operation_timeout: Duration,
    pub backoff: BackoffConfig,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            dial: DialConfig::default(),
            operation_timeout: Duration::from_secs(30),
            backoff: BackoffConfig::default(),
        }
    }
}

/// One partition as `DiscoverPartitions` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionInfo {
    pub partition: u16,
    /// Sequence number of the oldest message still stored.
    pub first_available: u64,
    /// Sequence number of the newest message (0 when none was ever written).
    pub high_water: u64,
}

struct Inner {
    addr: BrokerAddr,
    config: ClientConfig,
    redial: Redial<RawFrame>,
    closed: AtomicBool,
    /// Request ids for every call on this client's connections (producers encode theirs
    /// into a request once, before they know which connection carries it).
    next_id: AtomicU32,
}

/// A cheap, cloneable handle to a TANK broker.
#[derive(Clone)]
pub struct TankClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TankClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TankClient")
            .field("addr", &self.inner.addr)
            .finish()
    }
}

impl TankClient {
    /// A client for `tank://host[:port]`. Nothing is dialled until the first call.
    pub fn new(service_url: &str, config: ClientConfig) -> Result<TankClient> {
        let addr = url::parse(service_url)?;
        let (a, d) = (addr.clone(), config.dial.clone());
        let dialer: Dialer<RawFrame> = Arc::new(move || {
            let (a, d) = (a.clone(), d.clone());
            Box::pin(async move { dial(&a, &d).await })
        });
        Ok(TankClient {
            inner: Arc::new(Inner {
                redial: Redial::new(dialer, config.backoff.clone())
                    .with_log("tank.connection", &addr.to_string()),
                addr,
                config,
                closed: AtomicBool::new(false),
                next_id: AtomicU32::new(1),
            }),
        })
    }

    pub fn addr(&self) -> &BrokerAddr {
        &self.inner.addr
    }

    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Close the client: the connection closes and every later call fails with `Closed`.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.redial.reset().await;
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::closed("TANK client"))
        } else {
            Ok(())
        }
    }

    /// A request id unique among this client's requests in flight.
    pub fn next_request_id(&self) -> u32 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The live connection, dialling if needed, before `deadline`.
    pub async fn connection(&self, deadline: Instant) -> Result<Connection> {
        self.check_open()?;
        self.inner.redial.get(deadline).await
    }

    /// Drop the current connection (a reply that never came); the next call re-dials.
    pub async fn reset_connection(&self) {
        self.inner.redial.reset().await;
    }

    /// One request/response exchange. `encode` writes the frame for the given request id.
    /// Idempotent calls are retried once on a fresh connection when the connection was lost
    /// before the reply (the deadline still bounds the whole call).
    pub async fn call(
        &self,
        what: &'static str,
        timeout: Duration,
        idempotent: bool,
        encode: impl Fn(&mut BytesMut, u32) -> Result<()>,
    ) -> Result<RawFrame> {
        let deadline = Instant::now() + timeout;
        let mut tries = 0;
        loop {
            tries += 1;
            let conn = self.connection(deadline).await?;
            let id = self.next_request_id();
            let mut out = BytesMut::with_capacity(64);
            encode(&mut out, id)?;
            let rx = conn
                .start_request(u64::from(id), out.freeze(), deadline, what)
                .await;
            let reply = match rx {
                Ok(rx) => rx.await.unwrap_or_else(|_| {
                    Err(Error::new(ErrorKind::Disconnected, "connection lost"))
                }),
                Err(e) => Err(e),
            };
            match reply {
                Err(e) if e.kind() == ErrorKind::Disconnected && idempotent && tries < 2 => {
                    continue
                }
                Err(e) if e.kind() == ErrorKind::Timeout => {
                    // A broker that never answered: do not reuse a connection that may be stuck.
                    self.reset_connection().await;
                    return Err(e.context(format!("TANK {what} on {}", self.inner.addr)));
                }
                other => return other,
            }
        }
    }

    fn timeout(&self) -> Duration {
        self.inner.config.operation_timeout
    }

    /// Create a topic with `partitions` partitions and an optional text configuration.
    pub async fn create_topic(&self, topic: &str, partitions: u16, config: &str) -> Result<()> {
        let frame = self
            .call("create topic", self.timeout(), false, |out, id| {
                codec::encode_create_topic(out, id, topic.as_bytes(), partitions, config.as_bytes())
                    .map_err(Error::from)
            })
            .await?;
        let resp = codec::decode_create_topic_response(&frame.payload).map_err(Error::from)?;
        errors::create_topic_result(topic, resp.status)
    }

    /// First available and high-water sequence numbers of every partition of `topic`.
    pub async fn partitions(&self, topic: &str) -> Result<Vec<PartitionInfo>> {
        let frame = self
            .call("discover partitions", self.timeout(), true, |out, id| {
                codec::encode_discover_partitions(out, id, topic.as_bytes(), &[])
                    .map_err(Error::from)
            })
            .await?;
        let resp =
            codec::decode_discover_partitions_response(&frame.payload).map_err(Error::from)?;
        errors::partitions_result(topic, resp)
    }

    /// Every topic the broker has: (name, partitions, enabled).
    pub async fn topics(&self) -> Result<Vec<codec::TopicInfo>> {
        let frame = self
            .call("discover topics", self.timeout(), true, |out, id| {
                codec::encode_discover_topics(out, id);
                Ok(())
            })
            .await?;
        Ok(codec::decode_discover_topics_response(&frame.payload)
            .map_err(Error::from)?
            .topics)
    }

    /// The broker's status report.
    pub async fn status(&self) -> Result<codec::StatusResponse> {
        let frame = self
            .call("status", self.timeout(), true, |out, id| {
                codec::encode_status(out, id);
                Ok(())
            })
            .await?;
        codec::decode_status_response(&frame.payload).map_err(Error::from)
    }

    /// Ask the broker to re-read a partition's `config` file.
    pub async fn reload_config(&self, topic: &str, partition: u16) -> Result<()> {
        let frame = self
            .call("reload config", self.timeout(), true, |out, id| {
                codec::encode_reload_conf(out, id, topic.as_bytes(), partition).map_err(Error::from)
            })
            .await?;
        let resp = codec::decode_reload_conf_response(&frame.payload).map_err(Error::from)?;
        errors::reload_conf_result(topic, partition, resp.status)
    }
}
