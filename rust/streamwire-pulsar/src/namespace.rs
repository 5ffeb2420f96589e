//! Namespace-level lookups: the topics of a namespace (for pattern subscriptions and Spark's
//! `topicsPattern`).

use streamwire_core::error::{Error, Result};

use crate::client::PulsarClient;
use crate::protocol::{commands, pb};

/// Which topics a namespace listing names: persistent ones (the broker's default),
/// non-persistent ones, or both (GET_TOPICS_OF_NAMESPACE's `mode`, Java's
/// `RegexSubscriptionMode`).
pub type TopicsMode = pb::command_get_topics_of_namespace::Mode;

impl PulsarClient {
    /// Every persistent topic of `namespace` (`tenant/ns`), as the broker lists them: partitions
    /// of partitioned topics appear as `...-partition-N`.
    pub async fn topics_of_namespace(&self, namespace: &str) -> Result<Vec<String>> {
        self.topics_of_namespace_in(namespace, TopicsMode::Persistent)
            .await
    }

    /// The topics of `namespace` of the kinds `mode` names (a non-persistent topic is listed
    /// while a broker has it loaded: it has no stored existence of its own).
    pub async fn topics_of_namespace_in(
        &self,
        namespace: &str,
        mode: TopicsMode,
    ) -> Result<Vec<String>> {
        if namespace.split('/').count() != 2 || namespace.split('/').any(str::is_empty) {
            return Err(Error::invalid(format!(
                "invalid namespace {namespace:?}: expected tenant/namespace"
            )));
        }
        if let Some(http) = self.http_service() {
            return http.namespace_topics(&self.config(), namespace, mode).await;
        }
        let conn = self.service_connection().await?;
        let rid = conn.new_request_id();
        let cmd = commands::get_topics_of_namespace(rid, namespace, mode, None, None);
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
