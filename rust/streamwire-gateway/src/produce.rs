//! Producing: the three request bodies (PIP-64 JSON, the broker's own JSON dialect, a binary
//! single message), turned into engine messages (pure, tested), then sent pipelined and
//! answered in request order, one result per message.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::oneshot;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::producer::{Completion, EntryOptions, TopicProducer};

use crate::error::ApiError;
pub use crate::produce_reply::*;
pub use crate::schemas::{check_schemas, checked_schemas};
use crate::schemas::{encode_message, RecordSchema};
use crate::typed::kind;

/// How a message's `value` is written in the JSON body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueFormat {
    /// Bytes (no schema, or BYTES): base64 text.
    Base64,
    /// STRING: a JSON string, sent as UTF-8.
    Text,
    /// JSON: any JSON value, sent as its serialized text.
    Json,
    /// A typed schema's value (a JSON or AVRO record, PROTOBUF_NATIVE, a primitive, or
    /// KEY_VALUE): JSON in the body, checked and encoded by the schema (`schemas`,
    /// `typed`); read back decoded with the version it was written with.
    Record,
}

fn schema_type(schema: Option<&Value>) -> Option<String> {
    let s = schema?;
    // A schema is given as an object ({"type": "STRING", ...}) or as its JSON text.
    let obj = match s {
        Value::String(text) => serde_json::from_str::<Value>(text).ok()?,
        other => other.clone(),
    };
    obj.get("type")?.as_str().map(str::to_ascii_uppercase)
}

impl ValueFormat {
    pub fn from_schema(
        schema_type_field: Option<&str>,
        value_schema: Option<&Value>,
    ) -> Result<Self> {
        let t = schema_type_field
            .map(str::to_ascii_uppercase)
            .or_else(|| schema_type(value_schema));
        match t.as_deref() {
            None | Some("BYTES") | Some("NONE") => Ok(ValueFormat::Base64),
            Some("STRING") => Ok(ValueFormat::Text),
            Some("JSON") => Ok(ValueFormat::Json),
            Some(other) => Err(Error::new(
                ErrorKind::NotSupported,
                format!(
                    "schema type {other} is not supported by this gateway (BYTES, STRING, JSON, \
                     AVRO, PROTOBUF_NATIVE, KEY_VALUE and the primitive types are)"
                ),
            )),
        }
    }
}

/// One message of a PIP-64 produce request.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipMessage {
    /// A string, or under a KEY_VALUE schema the key half's JSON value.
    #[serde(default)]
    pub key: Option<Value>,
    pub value: Value,
    #[serde(default)]
    pub partition: Option<u32>,
    #[serde(default)]
    pub properties: Option<BTreeMap<String, String>>,
    #[serde(default, alias = "event_time", rename = "eventTime")]
    pub event_time: Option<u64>,
    #[serde(default, alias = "sequence_id", rename = "sequenceId")]
    pub sequence_id: Option<u64>,
    #[serde(
        default,
        alias = "replication_clusters",
        rename = "replicationClusters"
    )]
    pub replication_clusters: Option<Vec<String>>,
    #[serde(default, alias = "disable_replication", rename = "disableReplication")]
    pub disable_replication: Option<bool>,
    #[serde(default, alias = "deliver_at", rename = "deliverAt")]
    pub deliver_at: Option<i64>,
    #[serde(default, alias = "deliver_after_ms", rename = "deliverAfterMs")]
    pub deliver_after_ms: Option<i64>,
}

/// A PIP-64 produce request.
#[derive(Debug, Clone, Deserialize)]
pub struct PipRequest {
    pub messages: Vec<PipMessage>,
    #[serde(default, alias = "schemaType")]
    pub schema_type: Option<String>,
    #[serde(default, alias = "schemaVersion")]
    pub schema_version: Option<i64>,
    #[serde(default, alias = "keySchema")]
    pub key_schema: Option<Value>,
    #[serde(default, alias = "valueSchema")]
    pub value_schema: Option<Value>,
    /// A KEY_VALUE schema's encoding: `INLINE` (the default) or `SEPARATED`.
    #[serde(default, alias = "kvEncoding", alias = "kv_encoding_type")]
    pub kv_encoding: Option<String>,
}

/// One message of the broker dialect (Apache's `ProducerMessage`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerMessage {
    pub payload: String,
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub properties: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub event_time: Option<Value>,
    #[serde(default)]
    pub sequence_id: Option<u64>,
    #[serde(default)]
    pub replication_clusters: Option<Vec<String>>,
    #[serde(default)]
    pub disable_replication: Option<bool>,
    #[serde(default)]
    pub deliver_at: Option<i64>,
    #[serde(default)]
    pub deliver_after_ms: Option<i64>,
}

/// The broker dialect's body (Apache's `ProducerMessages`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerRequest {
    pub messages: Vec<BrokerMessage>,
    #[serde(default)]
    pub key_schema: Option<Value>,
    #[serde(default)]
    pub value_schema: Option<Value>,
    #[serde(default)]
    pub producer_name: Option<String>,
    #[serde(default)]
    pub schema_version: Option<i64>,
    /// With both `keySchema` and `valueSchema`: the KEY_VALUE encoding (INLINE default).
    #[serde(default, alias = "kv_encoding")]
    pub kv_encoding: Option<String>,
}

/// A message ready for the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub msg: OutgoingMessage,
    pub entry: EntryOptions,
    pub user_sequence_id: bool,
    pub partition: Option<u32>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn value_bytes(v: &Value, format: ValueFormat, i: usize) -> std::result::Result<Bytes, ApiError> {
    match (format, v) {
        (ValueFormat::Base64, Value::String(s)) => {
            B64.decode(s.as_bytes()).map(Bytes::from).map_err(|e| {
                ApiError::invalid_messages(format!("messages[{i}].value is not base64: {e}"))
            })
        }
        (ValueFormat::Base64, other) => Err(ApiError::invalid_messages(format!(
            "messages[{i}].value must be a base64 string (no schema or BYTES), not {}",
            kind(other)
        ))),
        (ValueFormat::Text, Value::String(s)) => Ok(Bytes::copy_from_slice(s.as_bytes())),
        (ValueFormat::Text, other) => Err(ApiError::invalid_messages(format!(
            "messages[{i}].value must be a string (STRING schema), not {}",
            kind(other)
        ))),
        (ValueFormat::Json, v) => Ok(Bytes::from(v.to_string())),
        // Only the callers holding a typed schema (`typed_payload`) encode these.
        (ValueFormat::Record, _) => Err(ApiError::new(
            422,
            4,
            "typed schemas are taken by the JSON bodies, and by NDJSON with ?schema_version",
        )),
    }
}

/// A message key outside KEY_VALUE: a string (or none).
fn string_key(k: Option<Value>, i: usize) -> std::result::Result<Option<String>, ApiError> {
    match k {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ApiError::bad_request(format!(
            "messages[{i}].key must be a string, not {} (keys of other types need schema_type \
             KEY_VALUE)",
            kind(&other)
        ))),
    }
}

/// `messages[i]` encoded by a typed schema: its payload, and its key (a SEPARATED
/// key/value's base64 key half; the message's string key otherwise), whether the key is
/// base64, and whether the value is null (sent with `null_value`).
fn typed_payload(
    schema: &RecordSchema,
    key: Option<Value>,
    value: &Value,
    i: usize,
) -> std::result::Result<(Bytes, Option<String>, bool, bool), ApiError> {
    if !schema.codec.is_key_value() {
        let key = string_key(key, i)?;
        let e = encode_message(schema, None, value, i)?;
        return Ok((Bytes::from(e.payload), key, false, e.null_value));
    }
    let e = encode_message(schema, key.as_ref(), value, i)?;
    let b64 = e.key_b64.is_some();
    Ok((Bytes::from(e.payload), e.key_b64, b64, e.null_value))
}

#[allow(clippy::too_many_arguments)]
fn prepared(
    payload: Bytes,
    key: Option<String>,
    properties: Option<BTreeMap<String, String>>,
    event_time: Option<u64>,
    sequence_id: Option<u64>,
    replication_clusters: Option<Vec<String>>,
    disable_replication: Option<bool>,
    deliver_at: Option<i64>,
    deliver_after_ms: Option<i64>,
    partition: Option<u32>,
) -> Prepared {
    let mut msg = OutgoingMessage::new(payload, sequence_id.unwrap_or(0));
    msg.key = key;
    msg.properties = properties.unwrap_or_default().into_iter().collect();
    msg.event_time = event_time.filter(|t| *t > 0);
    let deliver_at = deliver_at.or_else(|| deliver_after_ms.map(|ms| now_ms() + ms));
    Prepared {
        msg,
        entry: EntryOptions {
            deliver_at,
            replicate_to: replication_clusters.unwrap_or_default(),
            disable_replication: disable_replication.unwrap_or(false),
            txn: None,
            schema_version: None,
        },
        user_sequence_id: sequence_id.is_some(),
        partition,
    }
}

/// How the streaming produce's lines carry their values: a value format, or the typed
/// schema the stream names by `schema_version` (which then encodes every line).
#[derive(Debug, Clone)]
pub struct LineFormat {
    pub format: ValueFormat,
    pub schema: Option<Arc<RecordSchema>>,
}

/// One PIP-64 message (as in `messages[i]`) into an engine message.
pub fn pip_message(
    m: PipMessage,
    line: &LineFormat,
    i: usize,
) -> std::result::Result<Prepared, ApiError> {
    let (payload, key, key_b64, null_value) = match &line.schema {
        Some(s) => typed_payload(s, m.key, &m.value, i)?,
        None => (
            value_bytes(&m.value, line.format, i)?,
            string_key(m.key, i)?,
            false,
            false,
        ),
    };
    let mut p = prepared(
        payload,
        key,
        m.properties,
        m.event_time,
        m.sequence_id,
        m.replication_clusters,
        m.disable_replication,
        m.deliver_at,
        m.deliver_after_ms,
        m.partition,
    );
    p.msg.partition_key_b64 = key_b64;
    p.msg.null_value = null_value;
    Ok(p)
}

/// A parsed PIP-64 body: its messages and the typed schema they were encoded with.
#[derive(Debug)]
pub struct PipBody {
    pub messages: Vec<Prepared>,
    pub schema: Option<Arc<RecordSchema>>,
    /// A typed body (JSON, AVRO, PROTOBUF_NATIVE, KEY_VALUE) naming its schema by
    /// `schema_version` alone: the caller fetches that version and parses again with
    /// [`parse_pip_with`] (`messages` is empty).
    pub wanted_version: Option<i64>,
}

/// Parse a PIP-64 body into messages (all or nothing: a bad message fails the request).
pub fn parse_pip(body: &[u8], max_messages: usize) -> std::result::Result<PipBody, ApiError> {
    parse_pip_with(body, max_messages, None)
}

/// [`parse_pip`], with `known` the typed schema of the body's `schema_version`.
pub fn parse_pip_with(
    body: &[u8],
    max_messages: usize,
    known: Option<Arc<RecordSchema>>,
) -> std::result::Result<PipBody, ApiError> {
    let req: PipRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("the body is not a PIP-64 produce request: {e}"))
    })?;
    if req.messages.len() > max_messages {
        return Err(ApiError::too_large(format!(
            "{} messages in one request; the limit is {max_messages}",
            req.messages.len()
        )));
    }
    let declared = req.schema_type.as_deref().map(str::to_ascii_uppercase);
    let by_version = req.value_schema.is_none()
        && matches!(
            declared.as_deref(),
            Some("JSON" | "AVRO" | "KEY_VALUE" | "PROTOBUF_NATIVE")
        )
        && req.schema_version.is_some();
    let (format, schema) = match (by_version, known) {
        (true, Some(k)) => {
            // The key schema is checked as usual (a key/value's halves are the version's);
            // the value's is the registry's version.
            if declared.as_deref() != Some("KEY_VALUE") {
                checked_schemas(None, req.key_schema.as_ref(), None, None)?;
            }
            let kind = streamwire_pulsar::schema::SchemaInfo::type_name(k.info.kind);
            if declared.as_deref() != Some(kind) {
                return Err(ApiError::new(
                    422,
                    4,
                    format!(
                        "schema_type {} but schema_version {} is a {kind} schema",
                        declared.unwrap_or_default(),
                        req.schema_version.unwrap_or_default()
                    ),
                ));
            }
            (ValueFormat::Record, Some(k))
        }
        (true, None) => {
            return Ok(PipBody {
                messages: Vec::new(),
                schema: None,
                wanted_version: req.schema_version,
            })
        }
        (false, _) => checked_schemas(
            req.schema_type.as_deref(),
            req.key_schema.as_ref(),
            req.value_schema.as_ref(),
            req.kv_encoding.as_deref(),
        )?,
    };
    // Each message as a streamed line would be: one conversion for both forms.
    let line = LineFormat {
        format,
        schema: schema.clone(),
    };
    let messages = req
        .messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| pip_message(m, &line, i))
        .collect::<std::result::Result<_, ApiError>>()?;
    Ok(PipBody {
        messages,
        schema,
        wanted_version: None,
    })
}

/// A parsed broker-dialect body: its messages and the typed schema they were encoded with.
#[derive(Debug)]
pub struct BrokerBody {
    pub messages: Vec<Prepared>,
    pub schema: Option<Arc<RecordSchema>>,
}

/// The typed schema of a broker-dialect body: `keySchema` with `valueSchema` is a KEY_VALUE
/// schema (`kvEncoding`, INLINE by default) — in Pulsar a key schema exists only as a
/// key/value's half —, `valueSchema` alone types the value.
fn broker_schema(req: &BrokerRequest) -> std::result::Result<Option<Arc<RecordSchema>>, ApiError> {
    let kv = req.key_schema.is_some() && req.value_schema.is_some();
    let (_, schema) = checked_schemas(
        kv.then_some("KEY_VALUE"),
        req.key_schema.as_ref().filter(|_| kv),
        req.value_schema.as_ref(),
        req.kv_encoding.as_deref(),
    )?;
    Ok(schema)
}

/// Parse the broker dialect's body: `payload` is text — base64 for a BYTES schema, the
/// string itself for STRING (or no schema), the value's JSON text for typed schemas; under
/// a KEY_VALUE schema `key` is the key half's text the same way.
pub fn parse_broker(body: &[u8], max_messages: usize) -> std::result::Result<BrokerBody, ApiError> {
    let req: BrokerRequest = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not a produce request: {e}")))?;
    if req.messages.len() > max_messages {
        return Err(ApiError::too_large(format!(
            "{} messages in one request; the limit is {max_messages}",
            req.messages.len()
        )));
    }
    let schema = broker_schema(&req)?;
    let format = match schema_type(req.value_schema.as_ref()).as_deref() {
        Some("BYTES") => ValueFormat::Base64,
        _ => ValueFormat::Text,
    };
    let messages = req
        .messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let event_time = match &m.event_time {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => n.as_u64(),
                Some(Value::String(s)) if s.is_empty() => None,
                Some(Value::String(s)) => Some(s.parse::<u64>().map_err(|_| {
                    ApiError::invalid_messages(format!("messages[{i}].eventTime is not a number"))
                })?),
                Some(other) => {
                    return Err(ApiError::invalid_messages(format!(
                        "messages[{i}].eventTime must be a number, not {}",
                        kind(other)
                    )))
                }
            };
            let (payload, key, key_b64, null_value) = match &schema {
                Some(s) => {
                    let text = |part: &str, h: &crate::typed::Half, t: &str| {
                        h.from_text(t).map_err(|e| {
                            ApiError::invalid_messages(format!("messages[{i}].{part}: {}", e.0))
                        })
                    };
                    match &s.codec {
                        crate::typed::Shape::KeyValue { key, value, .. } => {
                            let k = m.key.as_deref().map(|t| text("key", key, t)).transpose()?;
                            let v = text("payload", value, &m.payload)?;
                            typed_payload(s, k, &v, i)?
                        }
                        crate::typed::Shape::One(h) => {
                            let v = text("payload", h, &m.payload)?;
                            typed_payload(s, m.key.map(Value::String), &v, i)?
                        }
                    }
                }
                None => (
                    value_bytes(&Value::String(m.payload), format, i)?,
                    m.key,
                    false,
                    false,
                ),
            };
            let mut p = prepared(
                payload,
                key,
                m.properties,
                event_time,
                m.sequence_id,
                m.replication_clusters,
                m.disable_replication,
                m.deliver_at,
                m.deliver_after_ms,
                None,
            );
            p.msg.partition_key_b64 = key_b64;
            p.msg.null_value = null_value;
            Ok(p)
        })
        .collect::<std::result::Result<_, ApiError>>()?;
    Ok(BrokerBody { messages, schema })
}

/// A binary single message: the body is the value; key, properties and times in headers.
pub fn parse_binary(
    body: Bytes,
    header: impl Fn(&str) -> Option<String>,
    properties: Vec<(String, String)>,
) -> std::result::Result<Prepared, ApiError> {
    let num = |name: &str| -> std::result::Result<Option<u64>, ApiError> {
        match header(name) {
            None => Ok(None),
            Some(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
                ApiError::bad_request(format!("header {name} must be a number, got {v:?}"))
            }),
        }
    };
    let mut props: BTreeMap<String, String> = match header("x-pulsar-properties") {
        None => BTreeMap::new(),
        Some(json) => serde_json::from_str(&json).map_err(|e| {
            ApiError::bad_request(format!(
                "X-Pulsar-Properties must be a JSON object of strings: {e}"
            ))
        })?,
    };
    props.extend(properties);
    let partition = num("x-pulsar-partition")?.map(|p| p as u32);
    Ok(prepared(
        body,
        header("x-pulsar-key"),
        Some(props),
        num("x-pulsar-event-time")?,
        num("x-pulsar-sequence-id")?,
        None,
        None,
        num("x-pulsar-deliver-at")?.map(|v| v as i64),
        num("x-pulsar-deliver-after-ms")?.map(|v| v as i64),
        partition,
    ))
}

/// The outcome of one message.
pub type Outcome = Result<MessageId>;

/// Send every message pipelined (to `partition` when given: the path's or the message's),
/// then wait for all the receipts; outcomes come back in request order.
pub async fn send_all(
    producer: &TopicProducer,
    path_partition: Option<u32>,
    msgs: Vec<Prepared>,
) -> std::result::Result<Vec<Outcome>, ApiError> {
    let parts = producer.partition_producers();
    let partitioned = parts
        .first()
        .is_some_and(|p| p.topic().partition_index().is_some());
    let count = if partitioned { parts.len() } else { 0 };
    if let Some(p) = path_partition {
        if p as usize >= count {
            return Err(ApiError::new(
                404,
                2,
                format!(
                    "partition {p} does not exist: {} has {} partition(s)",
                    producer.topic(),
                    count
                ),
            ));
        }
    }
    let mut waits: Vec<std::result::Result<oneshot::Receiver<Outcome>, Error>> =
        Vec::with_capacity(msgs.len());
    for m in msgs {
        let (tx, rx) = oneshot::channel();
        let target = m.partition.or(path_partition);
        let sent = match target {
            Some(p) if (p as usize) < count => {
                parts[p as usize]
                    .send(m.msg, m.user_sequence_id, m.entry, Completion::Once(tx))
                    .await
            }
            Some(p) => Err(Error::new(
                ErrorKind::PartitionNotFound,
                format!(
                    "partition {p} does not exist: {} has {count} partition(s)",
                    producer.topic()
                ),
            )),
            None => {
                producer
                    .send(m.msg, m.user_sequence_id, m.entry, Completion::Once(tx))
                    .await
            }
        };
        waits.push(sent.map(|()| rx));
    }
    // The caller waits for these receipts: the open batches go out now, not at the delay.
    producer.trigger_flush();
    let mut out = Vec::with_capacity(waits.len());
    for w in waits {
        out.push(match w {
            Ok(rx) => rx.await.unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorKind::Disconnected,
                    "the producer went away",
                ))
            }),
            Err(e) => Err(e),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_bodies_parse_with_every_field() {
        let body = br#"{"messages":[{"key":"k1","value":"aGVsbG8=","properties":{"a":"1"},
            "eventTime":1700000000000,"sequenceId":7,"deliverAfterMs":1000,"partition":2}]}"#;
        let m = &parse_pip(body, 10).unwrap().messages[0];
        assert_eq!(&m.msg.payload[..], b"hello");
        assert_eq!(m.msg.key.as_deref(), Some("k1"));
        assert_eq!(m.msg.properties, vec![("a".to_string(), "1".to_string())]);
        assert_eq!(m.msg.event_time, Some(1_700_000_000_000));
        assert_eq!((m.msg.sequence_id, m.user_sequence_id), (7, true));
        assert!(m.entry.deliver_at.unwrap() > now_ms());
        assert_eq!(m.partition, Some(2));
    }

    #[test]
    fn schemas_pick_the_value_format() {
        let s = br#"{"value_schema":{"type":"STRING"},"messages":[{"value":"plain"}]}"#;
        assert_eq!(
            &parse_pip(s, 10).unwrap().messages[0].msg.payload[..],
            b"plain"
        );
        let j = br#"{"schema_type":"JSON","messages":[{"value":{"x":1}}]}"#;
        assert_eq!(
            &parse_pip(j, 10).unwrap().messages[0].msg.payload[..],
            br#"{"x":1}"#
        );
    }

    #[test]
    fn records_are_encoded_or_named_by_version() {
        let rec = r#"{"type":"record","name":"R","fields":[{"name":"n","type":"int"}]}"#;
        let body = format!(
            r#"{{"schema_type":"AVRO","value_schema":{{"type":"AVRO","schema":{}}},"messages":[{{"value":{{"n":1}}}}]}}"#,
            serde_json::to_string(rec).unwrap()
        );
        let b = parse_pip(body.as_bytes(), 10).unwrap();
        assert_eq!(&b.messages[0].msg.payload[..], &[2]);
        let known = b.schema.unwrap();
        let by_version =
            br#"{"schema_type":"AVRO","schema_version":3,"messages":[{"value":{"n":2}}]}"#;
        let first = parse_pip(by_version, 10).unwrap();
        assert_eq!((first.wanted_version, first.messages.len()), (Some(3), 0));
        let again = parse_pip_with(by_version, 10, Some(known.clone())).unwrap();
        assert_eq!(&again.messages[0].msg.payload[..], &[4]);
        let json = br#"{"schema_type":"JSON","schema_version":3,"messages":[{"value":{"n":2}}]}"#;
        assert_eq!(
            parse_pip_with(json, 10, Some(known)).unwrap_err().code,
            42204
        );
    }

    #[test]
    fn stream_lines_take_a_typed_schema() {
        let kv = br#"{"schema_type":"KEY_VALUE","key_schema":{"type":"INT32"},
            "value_schema":{"type":"STRING"},"kv_encoding":"SEPARATED","messages":[]}"#;
        let schema = parse_pip(kv, 10).unwrap().schema.unwrap();
        let line = LineFormat {
            format: ValueFormat::Record,
            schema: Some(schema),
        };
        let m: PipMessage = serde_json::from_str(r#"{"key": 1, "value": "v"}"#).unwrap();
        let p = pip_message(m, &line, 0).unwrap();
        assert_eq!(&p.msg.payload[..], b"v");
        assert_eq!(p.msg.key.as_deref(), Some("AAAAAQ=="));
        assert!(p.msg.partition_key_b64);
        let bad: PipMessage = serde_json::from_str(r#"{"key": "one", "value": "v"}"#).unwrap();
        assert_eq!(pip_message(bad, &line, 0).unwrap_err().code, 42205);
        let plain = LineFormat {
            format: ValueFormat::Text,
            schema: None,
        };
        let m: PipMessage = serde_json::from_str(r#"{"key": "k", "value": "v"}"#).unwrap();
        let p = pip_message(m, &plain, 0).unwrap();
        assert_eq!(
            (p.msg.key.as_deref(), p.msg.partition_key_b64),
            (Some("k"), false)
        );
        let m: PipMessage = serde_json::from_str(r#"{"key": 5, "value": "v"}"#).unwrap();
        assert_eq!(pip_message(m, &plain, 0).unwrap_err().status, 400);
    }

    #[test]
    fn bad_bodies_are_typed() {
        assert_eq!(parse_pip(b"{", 10).unwrap_err().code, 40001);
        assert_eq!(parse_pip(br#"{"nope":1}"#, 10).unwrap_err().code, 40001);
        assert_eq!(
            parse_pip(br#"{"messages":[{"value":"!!"}]}"#, 10)
                .unwrap_err()
                .code,
            42205
        );
        assert_eq!(
            parse_pip(br#"{"messages":[{"value":5}]}"#, 10)
                .unwrap_err()
                .code,
            42205
        );
        let two = br#"{"messages":[{"value":""},{"value":""}]}"#;
        assert_eq!(parse_pip(two, 1).unwrap_err().status, 413);
        assert_eq!(
            parse_pip(br#"{"schema_type":"AVRO","messages":[]}"#, 1)
                .unwrap_err()
                .code,
            42202
        );
    }

    #[test]
    fn the_broker_dialect_takes_text_payloads() {
        let body = br#"{"messages":[{"payload":"hi","key":"k","eventTime":"5"}]}"#;
        let m = &parse_broker(body, 10).unwrap().messages[0];
        assert_eq!(
            (&m.msg.payload[..], m.msg.key.as_deref()),
            (&b"hi"[..], Some("k"))
        );
        assert_eq!(m.msg.event_time, Some(5));
        let bytes = br#"{"valueSchema":"{\"type\":\"BYTES\"}","messages":[{"payload":"aGk="}]}"#;
        assert_eq!(
            &parse_broker(bytes, 10).unwrap().messages[0].msg.payload[..],
            b"hi"
        );
    }

    #[test]
    fn binary_messages_read_their_headers() {
        let h = |n: &str| match n {
            "x-pulsar-key" => Some("k".to_string()),
            "x-pulsar-event-time" => Some("42".to_string()),
            "x-pulsar-properties" => Some(r#"{"a":"1"}"#.to_string()),
            _ => None,
        };
        let m = parse_binary(
            Bytes::from_static(b"raw"),
            h,
            vec![("b".into(), "2".into())],
        )
        .unwrap();
        assert_eq!(&m.msg.payload[..], b"raw");
        assert_eq!(m.msg.event_time, Some(42));
        assert_eq!(m.msg.properties.len(), 2);
        let bad = |n: &str| (n == "x-pulsar-event-time").then(|| "soon".to_string());
        assert_eq!(
            parse_binary(Bytes::new(), bad, vec![]).unwrap_err().status,
            400
        );
    }

    #[test]
    fn schema_fields_are_checked_with_pip64s_codes() {
        let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        let code = |t: Option<&str>, k: Option<&str>, val: Option<&str>| {
            check_schemas(t, k.map(v).as_ref(), val.map(v).as_ref()).map_err(|e| e.code)
        };
        assert_eq!(code(None, None, None), Ok(ValueFormat::Base64));
        assert_eq!(
            code(None, None, Some(r#"{"type":"STRING"}"#)),
            Ok(ValueFormat::Text)
        );
        assert_eq!(
            code(
                None,
                Some(r#""{\"type\":\"STRING\"}""#),
                Some(r#""{\"type\":\"json\"}""#)
            ),
            Ok(ValueFormat::Json)
        );
        assert_eq!(
            code(Some("KEY_VALUE"), None, Some(r#"{"type":"STRING"}"#)),
            Err(42201)
        );
        assert_eq!(code(Some("AVRO"), None, None), Err(42202));
        assert_eq!(code(Some("PROTOBUF"), None, None), Err(42202));
        assert_eq!(code(None, Some(r#""not json""#), None), Err(42203));
        assert_eq!(code(None, Some(r#"{"type":"AVRO"}"#), None), Err(42203));
        assert_eq!(code(None, None, Some(r#"{"schema":"x"}"#)), Err(42204));
        assert_eq!(code(None, None, Some("5")), Err(42204));
        assert_eq!(
            code(Some("STRING"), None, Some(r#"{"type":"JSON"}"#)),
            Err(42204)
        );
        assert_eq!(
            code(None, None, Some(r#"{"type":"AVRO","schema":"{}"}"#)),
            Err(42204)
        );
    }

    #[test]
    fn a_full_queue_is_back_pressure() {
        let id = MessageId::new(3, 4, 1, -1, 0);
        let full = || Err(Error::new(ErrorKind::QueueFull, "full"));
        assert_eq!(
            pressure(&[Ok(id), Err(Error::timeout("x"))]),
            Pressure::None
        );
        assert_eq!(pressure(&[Ok(id), full()]), Pressure::Some);
        assert_eq!(pressure(&[full(), full()]), Pressure::Full);
        assert_eq!(pressure(&[]), Pressure::None);
    }

    #[test]
    fn responses_have_the_pip_and_broker_shapes() {
        let id = MessageId::new(3, 4, 1, -1, 0);
        let outcomes = vec![Ok(id), Err(Error::timeout("send"))];
        let pip = serde_json::to_value(pip_response(&outcomes, None)).unwrap();
        assert_eq!(pip["messageIds"][0]["partition"], 1);
        assert_eq!(pip["messageIds"][0]["messageId"], id_base64(&id));
        assert_eq!(pip["messageIds"][1]["error_code"], 2);
        let broker = serde_json::to_value(broker_response(&outcomes)).unwrap();
        assert_eq!(broker["messagePublishResults"][0]["messageId"], "3:4:1");
        assert_eq!(broker["messagePublishResults"][1]["errorCode"], 2);
    }
}
