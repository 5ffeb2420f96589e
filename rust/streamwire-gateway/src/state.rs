//! What every request shares: the one Pulsar client (so every HTTP client reuses its
//! connections and lookups) and the producers, one per topic, created on first use and closed
//! after `producer_idle` without use; and the consumer instances of this node.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex;

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::Result;
use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::connection::ConnectionConfig;
use streamwire_pulsar::producer::{ProducerConfig, Routing, TopicProducer};
use streamwire_pulsar::topic::TopicName;

use crate::config::GatewayConfig;
use crate::consumers::{default_node_id, Registry};
use crate::metrics::{Gauges, Metrics};

struct Cached {
    producer: Arc<TopicProducer>,
    last_used: Instant,
}

/// The gateway's shared state.
pub struct Gateway {
    pub config: GatewayConfig,
    pub client: PulsarClient,
    budget: MemoryBudget,
    producers: Mutex<HashMap<String, Cached>>,
    pub consumers: Registry,
    /// This node's id inside instance ids.
    pub node_id: String,
    /// Where clients reach this node (`base_uri`s and redirects start with it).
    pub advertised_url: String,
    /// The counters `/metrics` shows.
    pub metrics: Arc<Metrics>,
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
            consumers: Registry::default(),
            node_id,
            advertised_url,
            metrics: Arc::new(Metrics::default()),
        }))
    }

    /// The producer of `topic` (all its partitions), created on first use. Keyed messages go
    /// by the Java client's key hash, the others round-robin, as the official clients do.
    pub async fn producer(&self, topic: &TopicName) -> Result<Arc<TopicProducer>> {
        let key = topic.to_string();
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
            ..ProducerConfig::default()
        };
        let p = Arc::new(
            TopicProducer::create(
                self.client.clone(),
                topic.clone(),
                config,
                self.budget.clone(),
            )
            .await?,
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
            let keys: Vec<String> = map
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
            let _ = i.consumer.close().await;
        }
        stale.len()
    }

    /// Close every producer (graceful shutdown: what they hold is flushed first) and every
    /// consumer instance (their acknowledgements are flushed first).
    pub async fn close(&self) {
        for i in self.consumers.take_all() {
            let _ = i.consumer.close().await;
        }
        let all: Vec<Arc<TopicProducer>> = {
            let mut map = self.producers.lock().await;
            map.drain().map(|(_, c)| c.producer).collect()
        };
        for p in all {
            let _ = p.close().await;
        }
        self.client.close();
    }
}
