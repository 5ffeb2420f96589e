//! `Lookup.schema`: a topic's schema from the broker's registry (GET_SCHEMA), for callers that
//! plan from the schema before reading or writing (the Spark Data Source builds its columns
//! from it on the driver).

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use streamwire_pulsar::schema::SchemaInfo;
use streamwire_pulsar::topic::TopicName;

use crate::common::blocking::wait;
use crate::pulsar::client::Lookup;

/// What `Lookup.schema` returns: type name, definition, properties, version.
type SchemaTuple<'py> = (
    &'static str,
    Bound<'py, PyBytes>,
    Vec<(String, String)>,
    Bound<'py, PyBytes>,
);

#[pymethods]
impl Lookup {
    /// The schema of `topic` in the registry: `(type, definition, properties, version)` with
    /// `type` the registry's name ("AVRO", "JSON", "STRING", "KEY_VALUE", ...), or None when
    /// the topic has no schema (or not that version). A partition's schema is its topic's.
    ///
    /// Args:
    ///     topic: a topic name (short or fully qualified; a partition is fine).
    ///     version: the registry version bytes (`Message.schema_version`); None: the latest.
    #[pyo3(signature = (topic, version=None))]
    fn schema<'py>(
        &self,
        py: Python<'py>,
        topic: &str,
        version: Option<Vec<u8>>,
    ) -> PyResult<Option<SchemaTuple<'py>>> {
        let client = self.client.get();
        let inner = client.live()?.clone();
        let timeout = client.operation_timeout * 2;
        let name = TopicName::parse(topic).map_err(crate::common::errors::to_py)?;
        let got = wait(py, "get schema", Some(timeout), async move {
            let (conn, _) = inner.connection_for(&name).await?;
            if keeps_no_registry(conn.server_version()) {
                return Ok(None);
            }
            inner.get_schema(&name, version.as_deref()).await
        })?;
        Ok(got.map(|(info, ver)| {
            (
                SchemaInfo::type_name(info.kind),
                PyBytes::new(py, &info.data),
                info.properties,
                PyBytes::new(py, &ver),
            )
        }))
    }
}

/// Brokers known to keep no schema registry: they take a schema with PRODUCER / SUBSCRIBE but
/// never answer GET_SCHEMA (the request would only time out), so their topics have no schema
/// to find. pulsar-lite names itself so in CONNECTED.
fn keeps_no_registry(server_version: &str) -> bool {
    server_version.starts_with("Pulsar-Lite")
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_pulsar_lite_is_taken_as_registry_less() {
        assert!(super::keeps_no_registry("Pulsar-Lite-0.1.0"));
        assert!(!super::keeps_no_registry("Pulsar Server4.0.7"));
        assert!(!super::keeps_no_registry(""));
    }
}
