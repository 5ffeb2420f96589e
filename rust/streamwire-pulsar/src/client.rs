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
//! With automatic cluster failover ([`PulsarClient::with_failover`]) the service URL in use
//! can change: a task probes every cluster's URL and, when [`failover`] says so, swaps the
//! URL and closes every connection, so producers and consumers reconnect (and look their
//! topics up again) on the other cluster.
//!
//! [`http_lookup`]: crate::http_lookup
//! [`failover`]: crate::failover

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;
use streamwire_core::log::{event, Level};

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::metrics::{self, EntityMetrics, Kind, Labels, C};

use crate::connection::pool::ConnectionPool;
use crate::connection::{Connection, ConnectionConfig, TlsConnector, TlsOptions};
use crate::failover::{FailoverPolicy, FailoverState};
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

/// One cluster of a client given several ([`PulsarClient::with_failover`]): its service URL
/// and the connection settings for it (its own credentials and TLS trust, as the official
/// clients' `ServiceInfo`).
pub struct Cluster {
    pub url: String,
    pub config: ConnectionConfig,
}

/// One service URL, parsed, with the settings its connections are made with.
struct Endpoint {
    url: String,
    service: ServiceUrl,
    /// Set for an `http(s)://` service URL (then `service` has no hosts).
    http: Option<HttpService>,
    config: Arc<ConnectionConfig>,
}

impl Endpoint {
    fn new(url: &str, mut config: ConnectionConfig) -> Result<Endpoint> {
        let http = parse_http_service(url)?;
        let service = match &http {
            Some(_) => ServiceUrl { hosts: Vec::new() },
            None => ServiceUrl::parse(url)?,
        };
        let wants_tls = http.as_ref().is_some_and(|h| h.hosts.iter().any(|h| h.tls))
            || service.hosts.iter().any(|h| h.tls);
        if config.tls.is_none() && wants_tls {
            // System roots, full verification; built once instead of per connection.
            config.tls = Some(TlsConnector::new(&TlsOptions::default())?);
        }
        Ok(Endpoint {
            url: url.to_owned(),
            service,
            http,
            config: Arc::new(config),
        })
    }

    /// Where a reachability probe dials.
    fn hosts(&self) -> &[BrokerAddr] {
        match &self.http {
            Some(h) => &h.hosts,
            None => &self.service.hosts,
        }
    }
}

struct Inner {
    /// The service URL in use (replaced by a cluster failover).
    endpoint: RwLock<Arc<Endpoint>>,
    /// Cluster failovers so far: message ids of one cluster mean nothing on another, so a
    /// consumer that finds this changed forgets the ids it holds.
    epoch: AtomicU64,
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
    pub fn new(service_url: &str, config: ConnectionConfig) -> Result<PulsarClient> {
        PulsarClient::build(vec![Arc::new(Endpoint::new(service_url, config)?)])
    }

    /// A client that starts on `clusters[0]` (the primary) and moves between `clusters` as
    /// `policy` says (see [`crate::failover`]), connecting to each with its own settings.
    /// Every URL is checked now.
    pub fn with_failover(clusters: Vec<Cluster>, policy: FailoverPolicy) -> Result<PulsarClient> {
        if clusters.len() < 2 {
            return Err(Error::new(
                ErrorKind::Config,
                "cluster failover needs a primary and at least one secondary service URL",
            ));
        }
        let endpoints = clusters
            .into_iter()
            .map(|c| Endpoint::new(&c.url, c.config).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        let client = PulsarClient::build(endpoints.clone())?;
        let handle = streamwire_core::runtime::handle()?;
        handle.spawn(monitor(Arc::downgrade(&client.inner), endpoints, policy));
        Ok(client)
    }

    fn build(endpoints: Vec<Arc<Endpoint>>) -> Result<PulsarClient> {
        let config = ConnectionConfig::clone(&endpoints[0].config);
        let metrics = EntityMetrics::register(Labels {
            protocol: "pulsar",
            kind: Kind::Client,
            client: metrics::next_client_id(),
            topic: String::new(),
            name: String::new(),
        });
        Ok(PulsarClient {
            inner: Arc::new(Inner {
                endpoint: RwLock::new(Arc::clone(&endpoints[0])),
                epoch: AtomicU64::new(0),
                pool: ConnectionPool::new(config, Arc::clone(&metrics)),
                next_host: AtomicUsize::new(0),
                metrics,
            }),
        })
    }

    fn endpoint(&self) -> Arc<Endpoint> {
        Arc::clone(
            &self
                .inner
                .endpoint
                .read()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// How many cluster failovers this client has made (see [`crate::failover`]).
    pub fn cluster_epoch(&self) -> u64 {
        self.inner.epoch.load(Ordering::Acquire)
    }

    /// The service URL in use (it changes after a cluster failover).
    pub fn service_url(&self) -> String {
        self.endpoint().url.clone()
    }

    /// The connection settings in use (those of the cluster in use, after a failover).
    pub fn config(&self) -> Arc<ConnectionConfig> {
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
    pub fn http_service(&self) -> Option<HttpRef> {
        let e = self.endpoint();
        e.http.is_some().then_some(HttpRef(e))
    }

    /// A connection to one of the service URL's hosts, trying each once.
    pub async fn service_connection(&self) -> Result<Connection> {
        let endpoint = self.endpoint();
        if endpoint.http.is_some() {
            return Err(Error::new(
                ErrorKind::NotSupported,
                "this needs a pulsar:// or pulsar+ssl:// service URL (an http(s):// service \
                 URL only answers lookups)",
            ));
        }
        let hosts = &endpoint.service.hosts;
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
        let config = self.config();
        let listener = config.listener_name.as_deref();
        if let Some(http) = self.http_service() {
            let owner = http
                .lookup(&config, topic)
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
        let want_tls = self.endpoint().service.hosts.first().is_some_and(|h| h.tls);
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

    /// Number of partitions of `topic` (0 for a non-partitioned topic). A transient answer
    /// (see [`crate::reconnect::transient_answer`]) is asked again until the operation
    /// timeout, then raised.
    pub async fn partitions(&self, topic: &TopicName) -> Result<u32> {
        let deadline = std::time::Instant::now() + self.config().operation_timeout;
        let mut backoff = streamwire_core::backoff::Backoff::default();
        loop {
            match self.partitions_once(topic).await {
                Err(e) if crate::reconnect::transient_answer(&e) => {
                    let delay = crate::reconnect::retry_delay(&mut backoff, &e);
                    if std::time::Instant::now() + delay >= deadline {
                        return Err(e);
                    }
                    tokio::time::sleep(delay).await;
                }
                res => return res,
            }
        }
    }

    async fn partitions_once(&self, topic: &TopicName) -> Result<u32> {
        if let Some(http) = self.http_service() {
            return http.partitions(&self.config(), topic).await;
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
        partition_count(frame.command)
            .map_err(|e| e.context(format!("partition metadata of {topic_str}")))
    }

    pub fn close(&self) {
        self.inner.pool.close_all();
    }
}

/// The REST side of the service URL in use, held while a call uses it (a failover may
/// replace the URL meanwhile).
pub struct HttpRef(Arc<Endpoint>);

impl std::ops::Deref for HttpRef {
    type Target = HttpService;
    fn deref(&self) -> &HttpService {
        match &self.0.http {
            Some(h) => h,
            None => unreachable!("HttpRef is only made for an http(s) endpoint"),
        }
    }
}

impl Inner {
    /// Move the client to `to`: new lookups go there, and every connection is closed so
    /// producers and consumers reconnect through it.
    fn switch_to(&self, to: Arc<Endpoint>) {
        let from = {
            let mut e = self.endpoint.write().unwrap_or_else(|p| p.into_inner());
            let from = std::mem::replace(&mut *e, to.clone());
            self.epoch.fetch_add(1, Ordering::AcqRel);
            from
        };
        self.next_host.store(0, Ordering::Relaxed);
        self.pool.set_config(Arc::clone(&to.config));
        event(Level::Warning, "pulsar.failover", || {
            (
                format!("cluster failover: {} -> {}", from.url, to.url),
                vec![("from", from.url.clone()), ("to", to.url.clone())],
            )
        });
        self.pool.close_connections();
    }
}

/// Whether one of `endpoint`'s hosts accepts a TCP connection within `timeout` (what the
/// Java client's failover probes too: reachability, not health).
async fn reachable(endpoint: &Endpoint, timeout: Duration) -> bool {
    for h in endpoint.hosts() {
        let dial = tokio::net::TcpStream::connect((h.host.as_str(), h.port));
        if let Ok(Ok(_)) = tokio::time::timeout(timeout, dial).await {
            return true;
        }
    }
    false
}

/// The failover task of one client: probes every URL each `check_interval` and switches
/// when the policy says so. Ends when the client is closed or dropped.
async fn monitor(client: Weak<Inner>, endpoints: Vec<Arc<Endpoint>>, policy: FailoverPolicy) {
    let mut state = FailoverState::new();
    let mut tick = tokio::time::interval(policy.check_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A probe never takes longer than a round (a dead host that drops packets).
    let timeout = policy.check_interval.max(Duration::from_millis(100));
    loop {
        tick.tick().await;
        match client.upgrade() {
            Some(c) if !c.pool.is_closed() => {}
            _ => return,
        }
        let mut probes = tokio::task::JoinSet::new();
        for (i, e) in endpoints.iter().enumerate() {
            let e = Arc::clone(e);
            probes.spawn(async move { (i, reachable(&e, timeout).await) });
        }
        let mut up = vec![false; endpoints.len()];
        while let Some(Ok((i, ok))) = probes.join_next().await {
            up[i] = ok;
        }
        if let Some(t) = state.observe(&up, &policy) {
            match client.upgrade() {
                Some(c) if !c.pool.is_closed() => c.switch_to(Arc::clone(&endpoints[t])),
                _ => return,
            }
        }
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

/// The partition count a PARTITIONED_METADATA request was answered with.
///
/// Pulsar's proxy (4.0) answers such a request it could not serve (the client's role may
/// not look the topic up, say) with a failed LOOKUP_RESPONSE carrying the request id, not
/// with a PARTITIONED_METADATA_RESPONSE; the Java and C++ clients, which match responses by
/// request id alone, report its error. Reading the absent partition response as its default
/// (Success, 0 partitions) would silently call a partitioned topic non-partitioned.
fn partition_count(cmd: pb::BaseCommand) -> Result<u32> {
    let kind = cmd.r#type();
    if let Some(resp) = cmd.partition_metadata_response {
        use pb::command_partitioned_topic_metadata_response::LookupType;
        return match resp.response() {
            LookupType::Failed => Err(server_error(
                resp.error.unwrap_or(0),
                resp.message.as_deref().unwrap_or(""),
            )),
            LookupType::Success => Ok(resp.partitions.unwrap_or(0)),
        };
    }
    if let Some(resp) = cmd.lookup_topic_response {
        use pb::command_lookup_topic_response::LookupType;
        if resp.response() == LookupType::Failed {
            return Err(server_error(
                resp.error.unwrap_or(0),
                resp.message.as_deref().unwrap_or(""),
            ));
        }
    }
    Err(Error::new(
        ErrorKind::Protocol,
        format!("partition metadata request answered with {kind:?}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::{partition_count, pb, unknown_listener};
    use streamwire_core::error::ErrorKind;

    fn command(build: impl FnOnce(&mut pb::BaseCommand)) -> pb::BaseCommand {
        let mut cmd = pb::BaseCommand::default();
        build(&mut cmd);
        cmd
    }

    #[test]
    fn partition_metadata_answers() {
        use pb::base_command::Type;
        let ok = command(|c| {
            c.set_type(Type::PartitionedMetadataResponse);
            c.partition_metadata_response =
                Some(Box::new(pb::CommandPartitionedTopicMetadataResponse {
                    partitions: Some(6),
                    request_id: 7,
                    ..Default::default()
                }));
        });
        assert_eq!(partition_count(ok).unwrap(), 6);
        // What Pulsar's proxy sends when the broker refused the role: a failed lookup answer.
        let refused = command(|c| {
            c.set_type(Type::LookupResponse);
            let mut r = pb::CommandLookupTopicResponse {
                request_id: 7,
                message: Some("Client is not authorized to Get Partition Metadata".into()),
                ..Default::default()
            };
            r.set_response(pb::command_lookup_topic_response::LookupType::Failed);
            r.set_error(pb::ServerError::AuthorizationError);
            c.lookup_topic_response = Some(Box::new(r));
        });
        let e = partition_count(refused).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Authorization);
        assert!(e.to_string().contains("not authorized"), "{e}");
        let odd = command(|c| c.set_type(Type::Success));
        assert_eq!(
            partition_count(odd).unwrap_err().kind(),
            ErrorKind::Protocol
        );
    }

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
