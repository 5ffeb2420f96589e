//! What every request shares: the one Pulsar client (so every HTTP client reuses its
//! connections and lookups) and the producers, one per topic, created on first use and closed
//! after `producer_idle` without use; and the consumer instances of this node. Callers that
//! bring their own token (`Authorization: Bearer`) get a client of their own (see `callers`)
//! and producers of their own: a producer is never shared between credentials.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex;

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::Result;
use streamwire_pulsar::auth::Auth;
use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::connection::ConnectionConfig;
use streamwire_pulsar::producer::{ProducerConfig, Routing, TopicProducer};
use streamwire_pulsar::schema::SchemaInfo;
use streamwire_pulsar::topic::TopicName;

use crate::callers::{Lru, MAX_CALLERS};
use crate::config::GatewayConfig;
use crate::consumers::{default_node_id, Registry};
use crate::decode::WriterSchemas;
use crate::metrics::{Gauges, Metrics};

type ProducerKey = (Option<String>, String, Option<(i32, Vec<u8>)>);

struct Cached {
    producer: Arc<TopicProducer>,
    last_used: Instant,
}

/// The gateway's shared state.
pub struct Gateway {
    pub config: GatewayConfig,
    pub client: PulsarClient,
    budget: MemoryBudget,
    /// Keyed by (the caller's token, or `None` for the gateway's own client; the topic; the
    /// schema's type and definition): a producer registers one schema, so another schema
    /// on the same topic gets a producer of its own.
    producers: Mutex<HashMap<ProducerKey, Cached>>,
    /// The clients of callers that brought a token.
    callers: Lru<PulsarClient>,
    pub consumers: Registry,
    /// The writer schema versions fetched for decoding reads, per (topic, version).
    pub writer_schemas: WriterSchemas,
    /// This node's id inside instance ids.
    pub node_id: String,
    /// Where clients reach this node (`base_uri`s and redirects start with it).
    pub advertised_url: String,
    /// The counters `/metrics` shows.
    pub metrics: Arc<Metrics>,
    /// Set once shutdown begins: long polls answer what they have and streams end, so the
    /// requests in flight finish promptly instead of at their own timeouts.
    stop: tokio::sync::watch::Sender<bool>,
}

impl Gateway {
    pub fn new(config: GatewayConfig) -> Result<Arc<Gateway>> {
        let conn = ConnectionConfig {
            operation_timeout: config.request_timeout,
            ..ConnectionConfig::default()
        };
        let client = PulsarClient::new(&config.service_url, conn)?;
        let advertised_url = config
            .advertised_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", config.listen));
        let node_id = config
            .node_id
            .clone()
            .unwrap_or_else(|| default_node_id(&advertised_url));
        Ok(Arc::new(Gateway {
            config,
            client,
            budget: MemoryBudget::default(),
            producers: Mutex::new(HashMap::new()),
            callers: Lru::new(MAX_CALLERS),
            consumers: Registry::default(),
            writer_schemas: WriterSchemas::default(),
            node_id,
            advertised_url,
            metrics: Arc::new(Metrics::default()),
            stop: tokio::sync::watch::Sender::new(false),
        }))
    }

    /// Resolves once shutdown has begun (at once if it has).
    pub fn stopping(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.stop.subscribe();
        async move {
            // An error means the gateway is gone: stopped too.
            let _ = rx.wait_for(|stopped| *stopped).await;
        }
    }

    /// Begin shutdown: every `stopping()` resolves.
    pub fn begin_stop(&self) {
        self.stop.send_replace(true);
    }

    /// The client a request talks to the broker through: the gateway's own without a token,
    /// else the caller's (made with the token on first use; the least recently used caller's
    /// client is closed when there are too many).
    pub async fn client_for(&self, token: Option<&str>) -> Result<PulsarClient> {
        let Some(token) = token else {
            return Ok(self.client.clone());
        };
        let make = || self.make_client(token);
        let (client, evicted) = self.callers.get_or_make(token, Instant::now(), make)?;
        if let Some((t, c)) = evicted {
            self.retire(t, c).await;
        }
        Ok(client)
    }

    /// A new client that authenticates with `token` (not pooled: the caller closes it).
    pub fn make_client(&self, token: &str) -> Result<PulsarClient> {
        let conn = ConnectionConfig {
            operation_timeout: self.config.request_timeout,
            auth: Some(Auth::token(token)?),
            ..ConnectionConfig::default()
        };
        PulsarClient::new(&self.config.service_url, conn)
    }

    /// Close a caller's producers, then its client.
    async fn retire(&self, token: String, client: PulsarClient) {
        let theirs: Vec<Arc<TopicProducer>> = {
            let mut map = self.producers.lock().await;
            let keys: Vec<_> = map
                .keys()
                .filter(|(t, _, _)| t.as_deref() == Some(token.as_str()))
                .cloned()
                .collect();
            keys.iter()
                .filter_map(|k| map.remove(k))
                .map(|c| c.producer)
                .collect()
        };
        for p in theirs {
            let _ = p.close().await;
        }
        client.close();
    }

    /// Close the clients of callers idle for longer than `producer_idle`; returns how many.
    pub async fn expire_idle_callers(&self) -> usize {
        let stale = self
            .callers
            .take_idle(Instant::now(), self.config.producer_idle);
        let n = stale.len();
        for (t, c) in stale {
            self.retire(t, c).await;
        }
        n
    }

    /// The producer of `topic` (all its partitions) for the gateway itself, created on first
    /// use.
    pub async fn producer(&self, topic: &TopicName) -> Result<Arc<TopicProducer>> {
        self.producer_as(None, topic, None).await
    }

    /// The producer of `topic` for the caller with `token` (`None`: the gateway itself),
    /// created on first use. Keyed messages go by the Java client's key hash, the others
    /// round-robin, as the official clients do. With `schema` the producer registers it
    /// (the broker refuses one incompatible with the topic's).
    pub async fn producer_as(
        &self,
        token: Option<&str>,
        topic: &TopicName,
        schema: Option<&SchemaInfo>,
    ) -> Result<Arc<TopicProducer>> {
        let client = self.client_for(token).await?;
        let key = (
            token.map(str::to_string),
            topic.to_string(),
            schema.map(|s| (s.kind as i32, s.data.clone())),
        );
        let mut map = self.producers.lock().await;
        if let Some(c) = map.get_mut(&key) {
            if !c.producer.is_closed() {
                c.last_used = Instant::now();
                return Ok(c.producer.clone());
            }
        }
        let config = ProducerConfig {
            routing: Routing::RoundRobin,
            block_if_queue_full: false,
            send_timeout: self.config.request_timeout,
            // Many HTTP callers share one producer per topic: the client's default of 10,000
            // pending messages answered a third of the messages of 32 concurrent 500-message
            // bodies "queue full" (benches/gateway_faults.py). The memory budget still bounds
            // what is pending; past it callers get 429/error_code 2 as before.
            max_pending_messages: self.config.max_pending_messages,
            schema: schema.map(SchemaInfo::to_proto),
            ..ProducerConfig::default()
        };
        let p = Arc::new(
            TopicProducer::create(client, topic.clone(), config, self.budget.clone()).await?,
        );
        map.insert(
            key,
            Cached {
                producer: p.clone(),
                last_used: Instant::now(),
            },
        );
        Ok(p)
    }

    /// The `/metrics` exposition, with the live producers and consumer instances counted now.
    pub async fn render_metrics(&self) -> String {
        let producers = self.producers.lock().await.len();
        self.metrics.render(Gauges {
            producers,
            consumer_instances: self.consumers.len(),
        })
    }

    /// Close producers idle for longer than `producer_idle`; returns how many.
    pub async fn expire_idle(&self) -> usize {
        let idle = self.config.producer_idle;
        let stale: Vec<Arc<TopicProducer>> = {
            let mut map = self.producers.lock().await;
            let keys: Vec<ProducerKey> = map
                .iter()
                .filter(|(_, c)| c.last_used.elapsed() > idle)
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter()
                .filter_map(|k| map.remove(k))
                .map(|c| c.producer)
                .collect()
        };
        for p in &stale {
            let _ = p.close().await;
        }
        stale.len()
    }

    /// Close consumer instances idle for longer than `consumer_idle`; returns how many.
    pub async fn expire_idle_consumers(&self) -> usize {
        let stale = self
            .consumers
            .take_idle(Instant::now(), self.config.consumer_idle);
        for i in &stale {
            i.close().await;
        }
        stale.len()
    }

    /// Close every producer (graceful shutdown: what they hold is flushed first) and every
    /// consumer instance (their acknowledgements are flushed first).
    pub async fn close(&self) {
        for i in self.consumers.take_all() {
            i.close().await;
        }
        let all: Vec<Arc<TopicProducer>> = {
            let mut map = self.producers.lock().await;
            map.drain().map(|(_, c)| c.producer).collect()
        };
        for p in all {
            let _ = p.close().await;
        }
        for (_, c) in self.callers.take_all() {
            c.close();
        }
        self.client.close();
    }
}
