//! Namespace-level lookups: the topics of a namespace (for pattern subscriptions and Spark's
//! `topicsPattern`).

use streamwire_core::error::{Error, Result};

use crate::client::PulsarClient;
use crate::protocol::{commands, pb};

impl PulsarClient {
    /// Every persistent topic of `namespace` (`tenant/ns`), as the broker lists them: partitions
    /// of partitioned topics appear as `...-partition-N`.
    pub async fn topics_of_namespace(&self, namespace: &str) -> Result<Vec<String>> {
        if namespace.split('/').count() != 2 || namespace.split('/').any(str::is_empty) {
            return Err(Error::invalid(format!(
                "invalid namespace {namespace:?}: expected tenant/namespace"
            )));
        }
        if let Some(http) = self.http_service() {
            return http.namespace_topics(self.config(), namespace).await;
        }
        let conn = self.service_connection().await?;
        let rid = conn.new_request_id();
        let cmd = commands::get_topics_of_namespace(
            rid,
            namespace,
            pb::command_get_topics_of_namespace::Mode::Persistent,
            None,
            None,
        );
        let frame = conn
            .request(rid, "topics of namespace", cmd)
            .await
            .map_err(|e| e.context(format!("listing topics of {namespace}")))?;
        Ok(frame
            .command
            .get_topics_of_namespace_response
            .map(|r| r.topics)
            .unwrap_or_default())
    }
}
