//! The client: a connection pool plus the service URL, and the lookups everything starts from.
//!
//! Lookup follows the binary protocol: ask any broker (the service URL) who owns a topic; a
//! `Redirect` names another broker to ask (with `authoritative` passed along), `Connect` names
//! the owner. `proxy_through_service_url` means the service URL is a proxy and we keep dialing
//! it, asking it to forward to the owner. Redirects are bounded so a loop ends in an error.
//! With a listener name configured every lookup asks for that advertised listener, so the
//! owner's address is the one published for the client's network. An `http(s)://` service
//! URL makes lookups, partition counts and namespace listings REST calls ([`http_lookup`]);
//! producers and consumers still speak the binary protocol to the owner it names.
//!
//! [`http_lookup`]: crate::http_lookup

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use streamwire_core::log::{event, Level};

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{self, EntityMetrics, Kind, Labels, C};

use crate::connection::pool::ConnectionPool;
use crate::connection::{Connection, ConnectionConfig, TlsConnector, TlsOptions};
use crate::http_lookup::{parse_http_service, HttpService};
use crate::protocol::{commands, pb};
use crate::server_error::server_error;
use crate::service_url::{BrokerAddr, ServiceUrl};
use crate::topic::TopicName;

/// Maximum redirects one lookup follows (the Java client's default is 20).
pub const MAX_LOOKUP_REDIRECTS: usize = 20;

/// Where a topic lives: the owner (`logical`) and where to dial for it (`physical`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicOwner {
    pub logical: BrokerAddr,
    pub physical: BrokerAddr,
}

struct Inner {
    service: ServiceUrl,
    /// Set for an `http(s)://` service URL (then `service` has no hosts).
    http: Option<HttpService>,
    pool: ConnectionPool,
    /// Round-robin over the service URL's hosts, moving on when one fails.
    next_host: AtomicUsize,
    /// Client metrics (lookups, connections; the registry adds its entities' totals).
    metrics: Arc<EntityMetrics>,
}

#[derive(Clone)]
pub struct PulsarClient {
    inner: Arc<Inner>,
}

impl PulsarClient {
    pub fn new(service_url: &str, mut config: ConnectionConfig) -> Result<PulsarClient> {
        let http = parse_http_service(service_url)?;
        let service = match &http {
            Some(_) => ServiceUrl { hosts: Vec::new() },
            None => ServiceUrl::parse(service_url)?,
        };
        let https = http.as_ref().is_some_and(|h| h.hosts.iter().any(|h| h.tls));
        if config.tls.is_none() && (https || service.hosts.iter().any(|h| h.tls)) {
            // System roots, full verification; built once instead of per connection.
            config.tls = Some(TlsConnector::new(&TlsOptions::default())?);
        }
        let metrics = EntityMetrics::register(Labels {
            protocol: "pulsar",
            kind: Kind::Client,
            client: metrics::next_client_id(),
            topic: String::new(),
            name: String::new(),
        });
        Ok(PulsarClient {
            inner: Arc::new(Inner {
                service,
                http,
                pool: ConnectionPool::new(config, Arc::clone(&metrics)),
                next_host: AtomicUsize::new(0),
                metrics,
            }),
        })
    }

    pub fn config(&self) -> &ConnectionConfig {
        self.inner.pool.config()
    }

    /// The client's metric cells (its `client` label is `metrics().client()`).
    pub fn metrics(&self) -> &Arc<EntityMetrics> {
        &self.inner.metrics
    }

    /// Labels for an entity this client creates.
    pub fn entity_labels(&self, kind: Kind, topic: String, name: String) -> Labels {
        Labels {
            protocol: "pulsar",
            kind,
            client: self.inner.metrics.client(),
            topic,
            name,
        }
    }

    pub fn pool(&self) -> &ConnectionPool {
        &self.inner.pool
    }

    /// The REST side of an `http(s)://` service URL (None for `pulsar://`).
    pub fn http_service(&self) -> Option<&HttpService> {
        self.inner.http.as_ref()
    }

    /// A connection to one of the service URL's hosts, trying each once.
    pub async fn service_connection(&self) -> Result<Connection> {
        if self.inner.http.is_some() {
            return Err(Error::new(
                ErrorKind::NotSupported,
                "this needs a pulsar:// or pulsar+ssl:// service URL (an http(s):// service \
                 URL only answers lookups)",
            ));
        }
        let hosts = &self.inner.service.hosts;
        let start = self.inner.next_host.load(Ordering::Relaxed);
        let mut last_err = None;
        for i in 0..hosts.len() {
            let idx = (start + i) % hosts.len();
            let h = &hosts[idx];
            match self.inner.pool.get(h, h).await {
                Ok(c) => {
                    self.inner.next_host.store(idx, Ordering::Relaxed);
                    return Ok(c);
                }
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| Error::new(ErrorKind::Config, "service URL has no hosts")))
    }

    /// Find the broker that owns `topic` (a single partition or a non-partitioned topic).
    pub async fn lookup_topic(&self, topic: &TopicName) -> Result<TopicOwner> {
        let topic_str = topic.to_string();
        self.inner.metrics.add(C::Lookups, 1);
        let listener = self.config().listener_name.as_deref();
        if let Some(http) = &self.inner.http {
            let owner = http
                .lookup(self.config(), topic)
                .await
                .map_err(|e| unknown_listener_error(e, listener, &topic_str))?;
            return Ok(TopicOwner {
                logical: owner.clone(),
                physical: owner,
            });
        }
        let mut conn = self.service_connection().await?;
        let mut authoritative = false;
        for _ in 0..=MAX_LOOKUP_REDIRECTS {
            let rid = conn.new_request_id();
            let frame = conn
                .request(
                    rid,
                    "lookup",
                    commands::lookup_topic(&topic_str, rid, authoritative, listener),
                )
                .await
                .map_err(|e| e.context(format!("lookup of {topic_str}")))?;
            let resp = frame.command.lookup_topic_response.unwrap_or_default();
            use pb::command_lookup_topic_response::LookupType;
            let via_proxy = resp.proxy_through_service_url.unwrap_or(false);
            match resp.response() {
                LookupType::Failed => {
                    let code = resp.error.unwrap_or(0);
                    let message = resp.message.as_deref().unwrap_or("");
                    let err = server_error(code, message).context(format!("lookup of {topic_str}"));
                    return Err(unknown_listener_error(err, listener, &topic_str));
                }
                kind @ (LookupType::Connect | LookupType::Redirect) => {
                    let url = self.pick_url(&resp)?;
                    let logical = BrokerAddr::parse(&url)?;
                    let physical = if via_proxy {
                        conn.addr().clone()
                    } else {
                        logical.clone()
                    };
                    if kind == LookupType::Connect {
                        return Ok(TopicOwner { logical, physical });
                    }
                    authoritative = resp.authoritative.unwrap_or(false);
                    event(Level::Debug, "pulsar.lookup", || {
                        (
                            format!("lookup of {topic_str} redirected to {logical}"),
                            vec![
                                ("topic", topic_str.clone()),
                                ("broker", logical.to_string()),
                            ],
                        )
                    });
                    conn = self.inner.pool.get(&logical, &physical).await?;
                }
            }
        }
        Err(Error::new(
            ErrorKind::Server,
            format!("lookup of {topic_str} was redirected more than {MAX_LOOKUP_REDIRECTS} times"),
        ))
    }

    fn pick_url(&self, resp: &pb::CommandLookupTopicResponse) -> Result<String> {
        let want_tls = self.inner.service.hosts.first().is_some_and(|h| h.tls);
        let url = if want_tls {
            resp.broker_service_url_tls.clone()
        } else {
            resp.broker_service_url.clone()
        };
        url.filter(|u| !u.is_empty()).ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                "lookup response names no broker URL for this scheme",
            )
        })
    }

    /// A connection to the broker that owns `topic`.
    pub async fn connection_for(&self, topic: &TopicName) -> Result<(Connection, TopicOwner)> {
        let owner = self.lookup_topic(topic).await?;
        let conn = self.inner.pool.get(&owner.logical, &owner.physical).await?;
        Ok((conn, owner))
    }

    /// Number of partitions of `topic` (0 for a non-partitioned topic).
    pub async fn partitions(&self, topic: &TopicName) -> Result<u32> {
        if let Some(http) = &self.inner.http {
            return http.partitions(self.config(), topic).await;
        }
        let topic_str = topic.to_string();
        let conn = self.service_connection().await?;
        let rid = conn.new_request_id();
        let frame = conn
            .request(
                rid,
                "partition metadata",
                commands::partitioned_metadata(&topic_str, rid),
            )
            .await
            .map_err(|e| e.context(format!("partition metadata of {topic_str}")))?;
        let resp = frame
            .command
            .partition_metadata_response
            .unwrap_or_default();
        use pb::command_partitioned_topic_metadata_response::LookupType;
        match resp.response() {
            LookupType::Failed => Err(server_error(
                resp.error.unwrap_or(0),
                resp.message.as_deref().unwrap_or(""),
            )
            .context(format!("partition metadata of {topic_str}"))),
            LookupType::Success => Ok(resp.partitions.unwrap_or(0)),
        }
    }

    pub fn close(&self) {
        self.inner.pool.close_all();
    }
}

/// Whether a failed lookup's message says the broker lacks the listener `name`. The broker
/// answers `ServiceNotReady` (HTTP: 500), which is retried like a broker in failover; a
/// listener that is not configured will never appear, so it is a configuration error instead.
fn unknown_listener(message: &str, name: &str) -> bool {
    // Pulsar 2.x-4.x: "the broker do not have {name} listener".
    message.contains(&format!("not have {name} listener"))
}

/// `err`, or a `Config` error naming the listener when that is what the broker refused.
fn unknown_listener_error(err: Error, listener: Option<&str>, topic: &str) -> Error {
    match listener {
        Some(name) if unknown_listener(err.message(), name) => Error::new(
            ErrorKind::Config,
            format!(
                "lookup of {topic}: the broker has no advertised listener named {name:?} \
                 (listener_name); it said: {}",
                err.message()
            ),
        ),
        _ => err,
    }
}

#[cfg(test)]
mod tests {
    use super::unknown_listener;

    #[test]
    fn the_brokers_unknown_listener_message_is_recognised() {
        let m = "the broker do not have bogus listener";
        assert!(unknown_listener(m, "bogus"));
        assert!(!unknown_listener(m, "external"));
        assert!(!unknown_listener(
            "Namespace bundle is being unloaded",
            "bogus"
        ));
    }
}
