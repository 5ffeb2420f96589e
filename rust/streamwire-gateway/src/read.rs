//! `GET …/messages`: a stateless reader per request (a non-durable subscription that ends
//! with the request), from a position the request names, until `max_messages`, `max_bytes`
//! or `timeout` — or, once it has messages, until it has read everything written so far (an
//! empty read long-polls the tail until its timeout). The answer's `nextPosition` is the id to pass as `position` next time.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use streamwire_core::error::Result;
use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::consumer::entry::{ReceivedMessage, StartFilter};
use streamwire_pulsar::consumer::{Consumer, ConsumerConfig, InitialPosition, SubType};
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::protocol::commands::SeekTarget;
use streamwire_pulsar::topic::TopicName;

use crate::decode::{value_of, Resolved, SchemaEntry, WriterSchemas};
use crate::error::ApiError;
use crate::produce::id_base64;
use crate::schemas::version_number;

/// Where a read starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    Earliest,
    Latest,
    /// After this id (or at it, when inclusive).
    Id(MessageId, bool),
    /// At the first message published at or after this time (ms).
    PublishTime(u64),
}

/// A read's parameters (from the query string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadParams {
    pub timeout: Duration,
    pub max_messages: usize,
    pub max_bytes: usize,
    pub start: Start,
    /// Values written under a typed schema (JSON/AVRO records, PROTOBUF_NATIVE, primitives,
    /// KEY_VALUE with its key) answered as JSON, and the `schemas`.
    pub include_schema: bool,
}

fn query_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let dec =
                |s: &str| crate::route::percent_decode(&s.replace('+', " ")).unwrap_or_default();
            (dec(k), dec(v))
        })
        .collect()
}

impl ReadParams {
    /// Parse the query; `cap` bounds the timeout (the gateway's request timeout).
    pub fn parse(query: &str, cap: Duration) -> std::result::Result<ReadParams, ApiError> {
        let mut p = ReadParams {
            timeout: Duration::from_millis(1000).min(cap),
            max_messages: 100,
            max_bytes: 10 * 1024 * 1024,
            start: Start::Earliest,
            include_schema: false,
        };
        let mut inclusive = false;
        let mut position: Option<String> = None;
        let num = |k: &str, v: &str| {
            v.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("{k} must be a non-negative integer, got {v:?}"))
            })
        };
        for (k, v) in query_pairs(query) {
            match k.as_str() {
                "timeout" => p.timeout = Duration::from_millis(num(&k, &v)?).min(cap),
                "max_messages" => p.max_messages = num(&k, &v)?.clamp(1, 100_000) as usize,
                "max_bytes" => p.max_bytes = num(&k, &v)?.max(1) as usize,
                "position" => position = Some(v),
                "publish_time" => p.start = Start::PublishTime(num(&k, &v)?),
                "inclusive" => inclusive = v == "true" || v == "1",
                "include_schema" => {
                    p.include_schema = match v.as_str() {
                        "true" | "1" | "" => true,
                        "false" | "0" => false,
                        _ => {
                            return Err(ApiError::bad_request(format!(
                                "include_schema must be true or false, got {v:?}"
                            )))
                        }
                    }
                }
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unknown parameter {other:?} (timeout, max_messages, max_bytes, position, \
                         publish_time, inclusive, include_schema)"
                    )))
                }
            }
        }
        if let Some(pos) = position {
            p.start = match pos.as_str() {
                "earliest" => Start::Earliest,
                "latest" => Start::Latest,
                b64 => {
                    let raw = B64.decode(b64.as_bytes()).map_err(|e| {
                        ApiError::bad_request(format!("position is not base64: {e}"))
                    })?;
                    // A serialized MessageIdData starts with its ledger id (field 1, varint).
                    if raw.first() != Some(&0x08) {
                        return Err(ApiError::bad_request(
                            "position is not a serialized message id",
                        ));
                    }
                    let id = MessageId::deserialize(&raw).map_err(|e| {
                        ApiError::bad_request(format!("position is not a message id: {e}"))
                    })?;
                    Start::Id(id, inclusive)
                }
            };
        }
        Ok(p)
    }
}

/// One message of the answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadMessage {
    pub message_id: String,
    /// The message key; with `include_schema` and a KEY_VALUE writer schema, the key
    /// half's JSON value.
    pub key: Option<Value>,
    /// Base64, or with `include_schema` the JSON value by the writer's schema.
    pub value: Value,
    /// "base64" when `include_schema` was asked but the value could not be decoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_encoding: Option<&'static str>,
    /// The writer's schema version, with `include_schema`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<i64>,
    pub properties: BTreeMap<String, String>,
    pub event_time: Option<u64>,
    pub publish_time: u64,
    pub partition: i32,
    pub sequence_id: u64,
    pub producer_name: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResponse {
    /// With `include_schema`: the schemas the returned messages were written with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schemas: Option<Vec<SchemaEntry>>,
    pub messages: Vec<ReadMessage>,
    pub next_position: Option<String>,
}

fn to_json(m: &ReceivedMessage, schemas: Option<&Resolved>) -> ReadMessage {
    let typed = schemas.and_then(|s| value_of(m, s));
    let value_encoding = match (&typed, schemas) {
        (None, Some(s)) if m.schema_version().is_some_and(|v| s.contains_key(v)) => Some("base64"),
        _ => None,
    };
    let (key, value) = match typed {
        Some((Some(k), v)) => (Some(k), v),
        Some((None, v)) => (m.key().map(|k| Value::String(k.to_string())), v),
        None => (
            m.key().map(|k| Value::String(k.to_string())),
            Value::String(B64.encode(&m.payload)),
        ),
    };
    ReadMessage {
        message_id: id_base64(&m.id),
        key,
        value,
        value_encoding,
        schema_version: schemas.and(m.schema_version()).and_then(version_number),
        properties: m.properties().iter().cloned().collect(),
        event_time: m.event_time(),
        publish_time: m.publish_time(),
        partition: m.id.partition.max(0),
        sequence_id: m.sequence_id,
        producer_name: m.producer_name().to_string(),
    }
}

fn reader_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    format!("gateway-reader-{:012x}", h.finish() & 0xffff_ffff_ffff)
}

/// Read per `params` from `topic` (a partition, or a whole topic).
/// `stopping` (the gateway shutting down) ends the read with what it has, as the timeout
/// would.
pub async fn read(
    client: &PulsarClient,
    topic: TopicName,
    params: &ReadParams,
    writers: &WriterSchemas,
    stopping: impl std::future::Future<Output = ()>,
) -> Result<ReadResponse> {
    let deadline = Instant::now() + params.timeout;
    let (initial, filter) = match &params.start {
        Start::Earliest | Start::PublishTime(_) => (InitialPosition::Earliest, None),
        Start::Latest => (InitialPosition::Latest, None),
        Start::Id(id, inclusive) => (
            InitialPosition::Earliest,
            Some(StartFilter {
                id: *id,
                inclusive: *inclusive,
            }),
        ),
    };
    let cfg = ConsumerConfig {
        subscription: reader_name(),
        sub_type: SubType::Exclusive,
        initial_position: initial,
        durable: false,
        start: filter,
        receiver_queue_size: params.max_messages.clamp(1, 1000) as u32,
        ..ConsumerConfig::default()
    };
    let consumer = Consumer::subscribe(client, std::slice::from_ref(&topic), cfg).await?;
    let result = collect(&consumer, params, deadline, stopping).await;
    let _ = consumer.close().await;
    let received = result?;
    let resolved = match params.include_schema {
        true => Some(writers.resolve(client, &topic, &received).await?),
        false => None,
    };
    let messages: Vec<ReadMessage> = received
        .iter()
        .map(|m| to_json(m, resolved.as_ref()))
        .collect();
    let schemas = resolved.map(|r| {
        let mut all: Vec<SchemaEntry> = r.values().map(|w| w.entry()).collect();
        all.sort_by_key(|e| e.version);
        all
    });
    let next_position =
        messages
            .last()
            .map(|m| m.message_id.clone())
            .or_else(|| match &params.start {
                Start::Id(id, _) => Some(id_base64(id)),
                _ => None,
            });
    Ok(ReadResponse {
        schemas,
        messages,
        next_position,
    })
}

async fn collect(
    consumer: &Consumer,
    params: &ReadParams,
    deadline: Instant,
    stopping: impl std::future::Future<Output = ()>,
) -> Result<Vec<ReceivedMessage>> {
    tokio::pin!(stopping);
    if let Start::PublishTime(t) = params.start {
        consumer.seek(SeekTarget::PublishTime(t)).await?;
    }
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while out.len() < params.max_messages && bytes < params.max_bytes {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let got = tokio::select! {
            got = tokio::time::timeout(left, consumer.receive_many(params.max_messages - out.len())) => {
                match got {
                    Ok(r) => r?,
                    Err(_) => break,
                }
            }
            () = &mut stopping => break,
        };
        let asked = params.max_messages - out.len();
        let n = got.len();
        for m in got {
            bytes += m.payload.len() + m.key().map_or(0, str::len);
            out.push(m);
            if bytes >= params.max_bytes {
                break;
            }
        }
        // With something to return and nothing more written yet, answer now; an empty read
        // waits (a long poll at the tail) until its timeout.
        if !out.is_empty()
            && n < asked
            && consumer.queued() == 0
            && !consumer.has_message_available().await.unwrap_or(true)
        {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters() {
        let cap = Duration::from_secs(30);
        let p = ReadParams::parse("timeout=250&max_messages=5&max_bytes=10", cap).unwrap();
        assert_eq!(
            (p.timeout, p.max_messages, p.max_bytes, p.start),
            (Duration::from_millis(250), 5, 10, Start::Earliest)
        );
        assert_eq!(
            ReadParams::parse("timeout=999999", cap).unwrap().timeout,
            cap
        );
        assert_eq!(
            ReadParams::parse("position=latest", cap).unwrap().start,
            Start::Latest
        );
        let id = MessageId::new(7, 8, 0, -1, 0);
        let q = format!(
            "position={}&inclusive=true",
            id_base64(&id).replace('=', "%3D")
        );
        assert_eq!(
            ReadParams::parse(&q, cap).unwrap().start,
            Start::Id(id, true)
        );
        assert_eq!(
            ReadParams::parse("publish_time=5", cap).unwrap().start,
            Start::PublishTime(5)
        );
    }

    #[test]
    fn bad_parameters_are_400() {
        let cap = Duration::from_secs(30);
        for q in [
            "timeout=-1",
            "max_messages=x",
            "position=%%%",
            "position=AAAA",
            "what=1",
        ] {
            assert_eq!(ReadParams::parse(q, cap).unwrap_err().status, 400, "{q}");
        }
    }
}
