//! Schema-typed values read back: a message written under a JSON or AVRO (with its record
//! definition), PROTOBUF_NATIVE, primitive or KEY_VALUE schema version is answered as its
//! JSON value (and a key/value's key as the key's) when the request asks (`include_schema`,
//! or a consumer instance created with a value schema), decoded with the version it was
//! written with.
//! Versions are fetched with GET_SCHEMA once per (topic, version) and cached; the decoding
//! itself is pure (`decoded`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use streamwire_core::error::Result;
use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::consumer::ReceivedMessage;
use streamwire_pulsar::schema::{SchemaInfo, SchemaType};
use streamwire_pulsar::topic::TopicName;

use crate::schemas::version_number;
use crate::typed::Shape;

/// A writer's schema version: what the registry holds, and its codec when it is a typed
/// schema the gateway decodes (not BYTES or STRING, whose values are answered as before).
#[derive(Debug)]
pub struct WriterSchema {
    pub info: SchemaInfo,
    pub version: Vec<u8>,
    pub codec: Option<Shape>,
}

/// PIP-64's `schemas[i]` of a read answer.
#[derive(Debug, Serialize, PartialEq)]
pub struct SchemaEntry {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub version: Option<i64>,
    /// Base64 of the schema data.
    pub data: String,
    pub properties: HashMap<String, String>,
}

impl WriterSchema {
    pub fn new(info: SchemaInfo, version: Vec<u8>) -> WriterSchema {
        let codec = match info.kind {
            SchemaType::None | SchemaType::String => None,
            // A definition the codec cannot parse leaves the values base64, as without a
            // schema (so does a JSON schema without one).
            SchemaType::Json if info.data.is_empty() => None,
            _ => Shape::from_info(&info).ok(),
        };
        WriterSchema {
            info,
            version,
            codec,
        }
    }

    pub fn entry(&self) -> SchemaEntry {
        SchemaEntry {
            kind: SchemaInfo::type_name(self.info.kind),
            version: version_number(&self.version),
            data: B64.encode(&self.info.data),
            properties: self.info.properties.iter().cloned().collect(),
        }
    }
}

/// The message's (key for a key/value, value) as JSON by `codec`, or `None` when it does
/// not decode (the caller answers base64 then, flagged).
pub fn decoded(codec: &Shape, m: &ReceivedMessage) -> Option<(Option<Value>, Value)> {
    codec.decode(&m.payload, m.key(), m.null_value())
}

/// More distinct (topic, version) pairs than this and the cache starts over (a bound on
/// memory for gateways reading many topics; refetching is one round trip).
const MAX_CACHED: usize = 4096;

type Cache = HashMap<(String, Vec<u8>), Option<Arc<WriterSchema>>>;

/// The writer schemas fetched so far, per (topic, version).
#[derive(Default)]
pub struct WriterSchemas {
    cache: Mutex<Cache>,
}

/// The writer schemas of a batch of messages, by version.
pub type Resolved = HashMap<Vec<u8>, Arc<WriterSchema>>;

impl WriterSchemas {
    fn cached(&self, key: &(String, Vec<u8>)) -> Option<Option<Arc<WriterSchema>>> {
        self.cache.lock().ok()?.get(key).cloned()
    }

    /// The schema `version` of `topic` (cached; `None` when the registry has no such
    /// version).
    pub async fn get(
        &self,
        client: &PulsarClient,
        topic: &TopicName,
        version: &[u8],
    ) -> Result<Option<Arc<WriterSchema>>> {
        // Partitions share their topic's schemas.
        let base = topic.base().to_string();
        let key = (base, version.to_vec());
        if let Some(hit) = self.cached(&key) {
            return Ok(hit);
        }
        let got = client
            .get_schema(topic, Some(version))
            .await?
            .map(|(info, v)| Arc::new(WriterSchema::new(info, v)));
        if let Ok(mut map) = self.cache.lock() {
            if map.len() >= MAX_CACHED {
                map.clear();
            }
            map.insert(key, got.clone());
        }
        Ok(got)
    }

    /// The writer schemas of every version among `messages`.
    pub async fn resolve<'a>(
        &self,
        client: &PulsarClient,
        topic: &TopicName,
        messages: impl IntoIterator<Item = &'a ReceivedMessage>,
    ) -> Result<Resolved> {
        let mut out = Resolved::new();
        for m in messages {
            let Some(v) = m.schema_version() else {
                continue;
            };
            if out.contains_key(v) {
                continue;
            }
            if let Some(s) = self.get(client, topic, v).await? {
                out.insert(v.to_vec(), s);
            }
        }
        Ok(out)
    }
}

/// The JSON (key, value) of `m` by its writer's schema, if it has one the gateway decodes
/// (the key is `Some` for key/value schemas only).
pub fn value_of(m: &ReceivedMessage, schemas: &Resolved) -> Option<(Option<Value>, Value)> {
    let codec = schemas.get(m.schema_version()?)?.codec.as_ref()?;
    decoded(codec, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REC: &str = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","bytes"]},{"name":"c","type":{"type":"enum","name":"E","symbols":["x","y"]}}]}"#;

    fn decoded(c: &Shape, b: &[u8]) -> Option<Value> {
        c.decode(b, None, false).map(|(_, v)| v)
    }

    fn info(kind: SchemaType) -> SchemaInfo {
        SchemaInfo {
            name: "t".into(),
            kind,
            data: REC.as_bytes().to_vec(),
            properties: vec![("k".into(), "v".into())],
        }
    }

    #[test]
    fn avro_payloads_decode_to_their_json_values() {
        let w = WriterSchema::new(info(SchemaType::Avro), 3i64.to_be_bytes().to_vec());
        let codec = w.codec.as_ref().unwrap();
        // a = 1, b = "hi" (union branch 1), c = y
        let v = decoded(codec, &[2, 2, 4, b'h', b'i', 2]).unwrap();
        assert_eq!(v, serde_json::json!({"a": 1, "b": "hi", "c": "y"}));
        assert_eq!(decoded(codec, &[2]), None, "truncated");
        let e = w.entry();
        assert_eq!((e.kind, e.version), ("AVRO", Some(3)));
        assert_eq!(B64.decode(e.data).unwrap(), REC.as_bytes());
    }

    #[test]
    fn json_payloads_are_their_text_and_other_types_have_no_codec() {
        let w = WriterSchema::new(info(SchemaType::Json), vec![0; 8]);
        let v = decoded(w.codec.as_ref().unwrap(), br#"{"a":1}"#).unwrap();
        assert_eq!(v, serde_json::json!({"a": 1}));
        assert!(WriterSchema::new(info(SchemaType::String), vec![])
            .codec
            .is_none());
        let mut bad = info(SchemaType::Avro);
        bad.data = b"{".to_vec();
        assert!(WriterSchema::new(bad, vec![]).codec.is_none());
    }
}
