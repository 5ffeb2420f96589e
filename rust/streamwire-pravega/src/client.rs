//! `PravegaClient`: the controller connection, the segment store connections shared by
//! readers and info calls (one per store, requests matched by id), and the settings writers
//! and readers start from.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::BytesMut;
use tokio::sync::Mutex;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{self, EntityMetrics, Kind, Labels, C};
use streamwire_core::tls::{TlsConnector, TlsOptions};

use crate::connection::{dial, Connection, DialConfig};
use crate::controller::{Controller, NodeUri, ScopedStream};
use crate::security::{ControllerUri, Credentials, TokenCache};
use crate::wire::{self, Reply};

/// Settings of a client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Bound on each controller call (and on connecting to it).
    pub controller_timeout: Duration,
    /// Bound on each segment store request that is not a long poll.
    pub request_timeout: Duration,
    pub dial: DialConfig,
    /// TLS settings for a `tls://` controller and its segment stores (`None`: the system's
    /// roots, host names checked). Ignored for `tcp://`.
    pub tls: Option<TlsConnector>,
    /// Sent to the controller with every call.
    pub credentials: Option<Credentials>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            controller_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            dial: DialConfig::default(),
            tls: None,
            credentials: None,
        }
    }
}

/// What the segment store says about a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentInfo {
    /// The first readable offset (after truncation).
    pub start_offset: i64,
    /// The offset the next append lands at.
    pub write_offset: i64,
    pub sealed: bool,
}

struct Inner {
    controller: Controller,
    config: ClientConfig,
    uri: String,
    /// Request/response connections per segment store.
    pool: Mutex<HashMap<(String, u16), Connection>>,
    /// Client metrics (the registry adds its writers' and readers' totals).
    metrics: Arc<EntityMetrics>,
    /// Delegation tokens per stream and when each expires.
    tokens: std::sync::Mutex<TokenCache>,
}

/// A cheap, cloneable Pravega client.
#[derive(Clone)]
pub struct PravegaClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PravegaClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PravegaClient")
            .field("controller", &self.inner.uri)
            .finish()
    }
}

impl PravegaClient {
    /// Connect to the controller at `tcp://host:port` or `tls://host:port` (then the
    /// segment stores are reached over TLS too, as the official clients do).
    pub async fn connect(uri: &str, mut config: ClientConfig) -> Result<PravegaClient> {
        if ControllerUri::parse(uri)?.tls {
            let tls = match config.tls.take() {
                Some(t) => t,
                None => TlsConnector::new(&TlsOptions::default())?,
            };
            config.dial.tls = Some(tls.clone());
            config.tls = Some(tls);
        } else {
            config.tls = None;
            config.dial.tls = None;
        }
        let controller = Controller::connect(
            uri,
            config.controller_timeout,
            config.tls.as_ref(),
            config.credentials.as_ref(),
        )
        .await?;
        Ok(PravegaClient {
            inner: Arc::new(Inner {
                controller,
                config,
                uri: uri.to_string(),
                pool: Mutex::new(HashMap::new()),
                tokens: std::sync::Mutex::new(TokenCache::default()),
                metrics: EntityMetrics::register(Labels {
                    protocol: "pravega",
                    kind: Kind::Client,
                    client: metrics::next_client_id(),
                    topic: String::new(),
                    name: String::new(),
                }),
            }),
        })
    }

    /// The client's metric cells.
    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.inner.metrics
    }

    /// Labels for a writer or reader of `stream` this client creates.
    pub fn entity_labels(&self, kind: Kind, stream: String, name: String) -> Labels {
        Labels {
            protocol: "pravega",
            kind,
            client: self.inner.metrics.client(),
            topic: stream,
            name,
        }
    }

    pub fn controller(&self) -> &Controller {
        &self.inner.controller
    }

    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    pub fn uri(&self) -> &str {
        &self.inner.uri
    }

    /// The delegation token the segment stores want for `stream` (empty when auth is off):
    /// the cached one, or a fresh one from the controller when it expires within
    /// [`REFRESH_BEFORE`](crate::security::REFRESH_BEFORE) or was forgotten.
    pub async fn delegation_token(&self, stream: &ScopedStream) -> Result<String> {
        if let Some(token) = self.lock_tokens().get(stream, SystemTime::now()) {
            return Ok(token.to_owned());
        }
        let token = self.inner.controller.get_delegation_token(stream).await?;
        self.lock_tokens().put(stream, token.clone());
        Ok(token)
    }

    /// Drop `stream`'s cached token (a segment store refused it): the next use asks anew.
    pub fn forget_token(&self, stream: &ScopedStream) {
        self.lock_tokens().forget(stream);
    }

    fn lock_tokens(&self) -> std::sync::MutexGuard<'_, TokenCache> {
        // A panic while holding this lock leaves a map that is still valid.
        self.inner
            .tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The shared request/response connection to `node` (dialled again when it was lost).
    pub async fn connection(&self, node: &NodeUri) -> Result<Connection> {
        let key = (node.host.clone(), node.port);
        let mut pool = self.inner.pool.lock().await;
        if let Some(c) = pool.get(&key) {
            if !c.is_closed() {
                return Ok(c.clone());
            }
        }
        let (conn, _unsolicited) = dial::<true>(node, &self.inner.config.dial).await?;
        self.inner.metrics.add(C::Connections, 1);
        pool.insert(key, conn.clone());
        Ok(conn)
    }

    /// The segment store's view of segment `id` of `stream`.
    pub async fn segment_info(
        &self,
        stream: &ScopedStream,
        id: i64,
        token: &str,
    ) -> Result<SegmentInfo> {
        let node = self.inner.controller.get_uri(stream, id).await?;
        let conn = self.connection(&node).await?;
        let name = crate::controller::segment_name(stream, id);
        let rid = conn.next_request_id();
        let mut buf = BytesMut::with_capacity(64 + name.len());
        wire::encode_get_stream_segment_info(&mut buf, rid as i64, &name, token)
            .map_err(Error::from)?;
        let reply = conn
            .request(
                rid,
                buf.freeze(),
                self.inner.config.request_timeout,
                "GET_STREAM_SEGMENT_INFO",
            )
            .await?;
        match reply {
            Reply::StreamSegmentInfo {
                exists: true,
                deleted: false,
                sealed,
                write_offset,
                start_offset,
                ..
            } => Ok(SegmentInfo {
                start_offset,
                write_offset,
                sealed,
            }),
            Reply::StreamSegmentInfo { .. } => Err(Error::new(
                ErrorKind::PartitionNotFound,
                format!("segment {name} does not exist"),
            )),
            other => Err(other.error().unwrap_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("unexpected answer to GET_STREAM_SEGMENT_INFO: {other:?}"),
                )
            })),
        }
    }
}
