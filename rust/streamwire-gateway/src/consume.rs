//! The consumer-instance and cursor endpoints: create, fetch (long poll), delete, negative
//! acknowledgement, and the subscription's cursor (acknowledge; what this node can tell).
//!
//! Request bodies and query strings are parsed by pure functions (tested here); the handlers
//! only find the instance — or answer 307 towards the node that holds it — and call the
//! consumer.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use streamwire_core::error::ErrorKind;
use streamwire_pulsar::consumer::entry::ReceivedMessage;
use streamwire_pulsar::consumer::{Consumer, ConsumerConfig, InitialPosition, SubType};
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::topic::TopicName;

use crate::consumers::{
    decode_message_id, encode_segment, parse_sub_type, sub_type_name, valid_name, InUse, Instance,
    InstanceId, Key,
};
use crate::decode::{decoded, Resolved};
use crate::error::ApiError;
use crate::produce::{id_base64, ValueFormat};
use crate::route::{percent_decode, SubPath};
use crate::state::Gateway;

/// An answer: JSON with a status, or a redirect to the node holding an instance.
#[derive(Debug, PartialEq)]
pub enum Reply {
    Json(u16, String),
    Redirect(String, ApiError),
}

type Answer = Result<Reply, ApiError>;

fn ok(v: &impl Serialize) -> Answer {
    Ok(Reply::Json(
        200,
        serde_json::to_string(v).unwrap_or_default(),
    ))
}

/// 404 40403.
pub fn unknown_consumer(what: impl Into<String>) -> ApiError {
    ApiError::new(404, 3, what)
}

/// A creation request (every field optional; an empty body is an empty object).
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default, alias = "subscription_type")]
    #[serde(rename = "subscriptionType")]
    pub subscription_type: Option<String>,
    #[serde(default, alias = "subscription_initial_position")]
    #[serde(rename = "subscriptionInitialPosition")]
    pub initial_position: Option<String>,
    #[serde(default, alias = "schemaType")]
    pub schema_type: Option<String>,
    #[serde(default, alias = "schemaVersion")]
    pub schema_version: Option<i64>,
    #[serde(default, alias = "keySchema")]
    pub key_schema: Option<Value>,
    #[serde(default, alias = "valueSchema")]
    pub value_schema: Option<Value>,
    #[serde(default, rename = "receiverQueueSize")]
    pub receiver_queue_size: Option<u32>,
    #[serde(default, rename = "negativeAckRedeliveryDelayMs")]
    pub nack_delay_ms: Option<u64>,
}

/// A creation request, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateParams {
    /// The name asked for (by `name`, or inside `id`), else `None`.
    pub name: Option<String>,
    /// The node an `id` names, with its URL.
    pub id: Option<InstanceId>,
    pub sub_type: SubType,
    pub initial: InitialPosition,
    pub format: ValueFormat,
    pub receiver_queue_size: u32,
    pub nack_delay: Duration,
}

impl CreateParams {
    pub fn parse(body: &[u8]) -> Result<CreateParams, ApiError> {
        let r: CreateRequest = if body.iter().all(u8::is_ascii_whitespace) {
            CreateRequest::default()
        } else {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("invalid creation request: {e}")))?
        };
        let id = match &r.id {
            Some(s) => Some(InstanceId::decode(s).ok_or_else(|| {
                ApiError::bad_request(format!("id {s:?} is not an id this gateway returned"))
            })?),
            None => None,
        };
        let name = match (&r.name, &id) {
            (Some(n), Some(i)) if *n != i.name => {
                return Err(ApiError::bad_request(format!(
                    "name {n:?} and id {:?} disagree",
                    i.name
                )))
            }
            (Some(n), _) if !valid_name(n) => {
                return Err(ApiError::bad_request(format!(
                    "name must be 1 to 128 of A-Z a-z 0-9 . - _, got {n:?}"
                )))
            }
            (Some(n), _) => Some(n.clone()),
            (None, Some(i)) => Some(i.name.clone()),
            (None, None) => None,
        };
        let sub_type = match &r.subscription_type {
            Some(t) => parse_sub_type(t).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "subscriptionType must be Exclusive, Shared, Failover or Key_Shared, got {t:?}"
                ))
            })?,
            None => SubType::Exclusive,
        };
        let initial = match r.initial_position.as_deref().map(str::to_ascii_lowercase) {
            None => InitialPosition::Latest,
            Some(p) if p == "latest" => InitialPosition::Latest,
            Some(p) if p == "earliest" => InitialPosition::Earliest,
            Some(p) => {
                return Err(ApiError::bad_request(format!(
                    "subscriptionInitialPosition must be earliest or latest, got {p:?}"
                )))
            }
        };
        let format = crate::produce::check_schemas(
            r.schema_type.as_deref(),
            r.key_schema.as_ref(),
            r.value_schema.as_ref(),
        )?;
        let receiver_queue_size = match r.receiver_queue_size {
            Some(0) => {
                return Err(ApiError::bad_request(
                    "receiverQueueSize must be at least 1",
                ))
            }
            Some(n) => n.min(100_000),
            None => 1000,
        };
        Ok(CreateParams {
            name,
            id,
            sub_type,
            initial,
            format,
            receiver_queue_size,
            nack_delay: Duration::from_millis(r.nack_delay_ms.unwrap_or(60_000)),
        })
    }
}

/// A fetch's query parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchParams {
    pub timeout: Duration,
    pub max_messages: usize,
    pub max_bytes: usize,
}

/// `k=v&…` pairs, percent-decoded.
pub fn query_pairs(q: &str) -> Result<Vec<(String, String)>, ApiError> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let dec = |s: &str| {
                percent_decode(&s.replace('+', " "))
                    .ok_or_else(|| ApiError::bad_request(format!("malformed query part {p:?}")))
            };
            Ok((dec(k)?, dec(v)?))
        })
        .collect()
}

impl FetchParams {
    /// Parse the query; `cap` bounds the timeout (kept under the request timeout).
    pub fn parse(query: &str, cap: Duration) -> Result<FetchParams, ApiError> {
        let mut p = FetchParams {
            timeout: Duration::from_millis(1000).min(cap),
            max_messages: 100,
            max_bytes: 10 * 1024 * 1024,
        };
        for (k, v) in query_pairs(query)? {
            let n = v.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("{k} must be a non-negative integer, got {v:?}"))
            });
            match k.as_str() {
                "timeout" => p.timeout = Duration::from_millis(n?).min(cap),
                "max_messages" => p.max_messages = n?.clamp(1, 100_000) as usize,
                "max_bytes" => p.max_bytes = n?.max(1) as usize,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unknown parameter {other:?} (timeout, max_messages, max_bytes)"
                    )))
                }
            }
        }
        Ok(p)
    }
}

/// An acknowledgement request (`POST …/cursor`, and `…/nack` without `type`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AckRequest {
    #[serde(default)]
    r#type: Option<String>,
    #[serde(rename = "messageIds", alias = "message_ids")]
    message_ids: Vec<String>,
    #[serde(default)]
    consumer: Option<String>,
}

/// What to acknowledge.
#[derive(Debug, Clone, PartialEq)]
pub struct AckParams {
    pub cumulative: bool,
    pub ids: Vec<MessageId>,
    /// The instance to acknowledge through (`consumer` in the body or the query).
    pub consumer: Option<String>,
}

impl AckParams {
    pub fn parse(body: &[u8], query: &str, nack: bool) -> Result<AckParams, ApiError> {
        let r: AckRequest = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "invalid acknowledgement request (want {{\"messageIds\": [base64, …]}}): {e}"
            ))
        })?;
        let cumulative = match r.r#type.as_deref().map(str::to_ascii_lowercase) {
            None => false,
            Some(t) if t == "individual" && !nack => false,
            Some(t) if t == "cumulative" && !nack => true,
            Some(t) => {
                return Err(ApiError::bad_request(format!(
                    "type must be individual or cumulative{}, got {t:?}",
                    if nack {
                        " (and is not taken by nack)"
                    } else {
                        ""
                    }
                )))
            }
        };
        if r.message_ids.is_empty() {
            return Err(ApiError::bad_request("messageIds is empty"));
        }
        let ids = r
            .message_ids
            .iter()
            .map(|s| decode_message_id(s))
            .collect::<Result<Vec<_>, _>>()?;
        let mut consumer = r.consumer;
        for (k, v) in query_pairs(query)? {
            match k.as_str() {
                "consumer" => consumer = Some(v),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unknown parameter {other:?} (consumer)"
                    )))
                }
            }
        }
        Ok(AckParams {
            cumulative,
            ids,
            consumer,
        })
    }
}

/// One message of a fetch answer (PIP-64's fields, plus what Pulsar adds), borrowing from
/// the received message (a fetch answers up to thousands: no copies but the base64).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumedMessage<'a> {
    pub message_id: String,
    /// The message key; for a KEY_VALUE value decoded by its writer's schema, the key
    /// half's JSON value.
    pub key: Option<ConsumedValue<'a>>,
    pub value: ConsumedValue<'a>,
    /// Present (`"base64"`) only when the instance's schema is STRING or JSON and this value
    /// is not that: it is then given as base64 rather than altered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_encoding: Option<&'static str>,
    pub properties: BTreeMap<&'a str, &'a str>,
    pub event_time: Option<u64>,
    pub publish_time: u64,
    pub partition: i32,
    pub sequence_id: u64,
    pub producer_name: &'a str,
    pub redelivery_count: u32,
}

/// A value as the instance's schema writes it.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ConsumedValue<'a> {
    Base64(String),
    Text(&'a str),
    Json(Value),
}

#[derive(Serialize)]
struct FetchAnswer<'a> {
    messages: Vec<ConsumedMessage<'a>>,
}

/// `m` as a fetch answer writes it. `schemas`: the writer schemas of a typed
/// instance's batch (`decode`), by which its values are answered as JSON.
pub fn consumed<'a>(
    m: &'a ReceivedMessage,
    format: ValueFormat,
    schemas: Option<&Resolved>,
) -> ConsumedMessage<'a> {
    let b64 = || ConsumedValue::Base64(B64.encode(&m.payload));
    let json_or_b64 = || match serde_json::from_slice::<Value>(&m.payload) {
        Ok(v) => (ConsumedValue::Json(v), None),
        Err(_) => (b64(), Some("base64")),
    };
    let mut key = m.key().map(ConsumedValue::Text);
    let (value, value_encoding) = match format {
        ValueFormat::Base64 => (b64(), None),
        ValueFormat::Text => match std::str::from_utf8(&m.payload) {
            Ok(s) => (ConsumedValue::Text(s), None),
            Err(_) => (b64(), Some("base64")),
        },
        // A typed value by its writer's schema; a payload that does not decode by it stays
        // base64, flagged; without a writer schema, JSON payloads still read as JSON.
        ValueFormat::Record => match schemas.and_then(|s| s.get(m.schema_version()?)) {
            Some(w) => match w.codec.as_ref().and_then(|c| decoded(c, m)) {
                Some((k, v)) => {
                    if let Some(k) = k {
                        key = Some(ConsumedValue::Json(k));
                    }
                    (ConsumedValue::Json(v), None)
                }
                None => (b64(), Some("base64")),
            },
            None => json_or_b64(),
        },
        ValueFormat::Json => json_or_b64(),
    };
    ConsumedMessage {
        message_id: id_base64(&m.id),
        key,
        value,
        value_encoding,
        properties: m
            .properties()
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        event_time: m.event_time(),
        publish_time: m.publish_time(),
        partition: m.id.partition.max(0),
        sequence_id: m.sequence_id,
        producer_name: m.producer_name(),
        redelivery_count: m.redelivery_count(),
    }
}

fn size(m: &ReceivedMessage) -> usize {
    m.payload.len() + m.key().map_or(0, str::len)
}

/// The instance an id names on `sub`: here, or a redirect to its node, or 404 40403.
/// A request whose credential is not the instance's is 403 40302.
pub(crate) fn find(
    gw: &Gateway,
    sub: &SubPath,
    id: &str,
    path_and_query: &str,
    token: Option<&str>,
) -> Result<InUse, Reply> {
    let not_found = || {
        Reply::Json(
            404,
            unknown_consumer(format!(
                "consumer instance {id:?} not found on subscription {:?} of {} (deleted, \
                 expired after being idle, or its gateway restarted)",
                sub.subscription,
                sub.topic.name()
            ))
            .body(),
        )
    };
    let Some(parsed) = InstanceId::decode(id) else {
        return Err(not_found());
    };
    if parsed.node != gw.node_id {
        return Err(redirect(&parsed, path_and_query));
    }
    let inst = gw
        .consumers
        .get(&key(sub, &parsed.name))
        .ok_or_else(not_found)?;
    if !inst.allows(token) {
        return Err(Reply::Json(403, not_yours(id).body()));
    }
    Ok(inst)
}

fn redirect(id: &InstanceId, path_and_query: &str) -> Reply {
    Reply::Redirect(
        format!("{}{path_and_query}", id.url),
        ApiError::new(
            307,
            1,
            format!(
                "consumer instance {} is held by gateway node {} at {}",
                id.name, id.node, id.url
            ),
        ),
    )
}

fn key(sub: &SubPath, name: &str) -> Key {
    Key {
        topic: sub.topic.name(),
        subscription: sub.subscription.clone(),
        name: name.to_string(),
    }
}

fn instance_name() -> String {
    format!("c{:012x}", rand_u64() & 0xffff_ffff_ffff)
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

/// A consumer's error as an answer: a subscription held by another consumer is 409 40902,
/// an instance closed meanwhile (deleted, expired) 404 40403, the rest as any engine error.
pub(crate) fn consumer_error(e: streamwire_core::error::Error) -> ApiError {
    match e.kind() {
        ErrorKind::ConsumerBusy => ApiError::new(409, 2, e.to_string()),
        ErrorKind::Closed => unknown_consumer(format!("the consumer instance was closed: {e}")),
        _ => e.into(),
    }
}

/// `POST …/subscription/{subscription}`.
pub async fn create(
    gw: &Gateway,
    sub: &SubPath,
    body: &[u8],
    path_and_query: &str,
    token: Option<&str>,
) -> Answer {
    let p = CreateParams::parse(body)?;
    if let Some(id) = &p.id {
        if id.node != gw.node_id {
            return Ok(redirect(id, path_and_query));
        }
    }
    let name = p.name.clone().unwrap_or_else(instance_name);
    let conflict = || {
        ApiError::new(
            409,
            1,
            format!(
                "consumer {name:?} already exists on subscription {:?} of {}",
                sub.subscription,
                sub.topic.name()
            ),
        )
    };
    let reservation = gw.consumers.reserve(key(sub, &name)).ok_or_else(conflict)?;
    let topic =
        TopicName::parse(&sub.topic.name()).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let cfg = ConsumerConfig {
        subscription: sub.subscription.clone(),
        sub_type: p.sub_type,
        initial_position: p.initial,
        consumer_name: Some(name.clone()),
        receiver_queue_size: p.receiver_queue_size,
        // An acknowledgement answered 200 has been handed to the connection.
        ack_group_time: Duration::ZERO,
        nack_delay: p.nack_delay,
        ..ConsumerConfig::default()
    };
    // A caller's instance gets a client of its own, closed with it (a pooled caller client
    // could be closed under it when the pool evicts it).
    let own = match token {
        Some(t) => Some(gw.make_client(t)?),
        None => None,
    };
    let subscribed = Consumer::subscribe(own.as_ref().unwrap_or(&gw.client), &[topic], cfg).await;
    let consumer = match subscribed {
        Ok(c) => c,
        Err(e) => {
            if let Some(c) = &own {
                c.close();
            }
            return Err(consumer_error(e));
        }
    };
    let id = InstanceId {
        name,
        node: gw.node_id.clone(),
        url: gw.advertised_url.clone(),
    }
    .encode();
    let t = &sub.topic;
    let base_uri = format!(
        "{}/topics/{}/{}/{}/subscription/{}/consumer/{}",
        gw.advertised_url,
        encode_segment(&t.tenant),
        encode_segment(&t.namespace),
        encode_segment(&t.topic),
        encode_segment(&sub.subscription),
        encode_segment(&id)
    );
    let inst = Arc::new(
        Instance::new(
            reservation.key().clone(),
            id.clone(),
            base_uri.clone(),
            p.sub_type,
            p.format,
            consumer,
        )
        .owned_by(token.map(str::to_string), own),
    );
    gw.consumers.insert(reservation, inst);
    ok(&json!({"id": id, "base_uri": base_uri}))
}

/// `GET …/consumer/{id}/messages`: what is held or queued, else wait for the first message
/// up to `timeout`; at most `max_messages`, and `max_bytes` of keys and values (one message
/// more than `max_bytes` is still answered alone).
pub async fn fetch(
    gw: &Gateway,
    sub: &SubPath,
    id: &str,
    query: &str,
    pq: &str,
    token: Option<&str>,
) -> Answer {
    let cap = gw.config.request_timeout.mul_f64(0.9);
    let p = FetchParams::parse(query, cap)?;
    let inst = match find(gw, sub, id, pq, token) {
        Ok(i) => i,
        Err(r) => return Ok(r),
    };
    let deadline = Instant::now() + p.timeout;
    let mut held = inst.held.lock().await;
    if held.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        // Cancel safe: nothing is taken from the consumer unless this completes. Shutdown
        // ends the wait as the timeout would: an empty answer, promptly.
        let got = tokio::select! {
            got = tokio::time::timeout(left, inst.consumer.receive_many(p.max_messages)) => got,
            () = gw.stopping() => Ok(Ok(Vec::new())),
        };
        match got {
            Ok(Ok(got)) => held.extend(got),
            Ok(Err(e)) if inst.consumer.is_closed() => {
                return Err(unknown_consumer(format!(
                    "consumer instance {id:?} was closed: {e}"
                )))
            }
            Ok(Err(e)) => return Err(consumer_error(e)),
            Err(_) => {}
        }
    } else if held.len() < p.max_messages {
        if let Ok(more) = inst.consumer.try_receive_many(p.max_messages - held.len()) {
            held.extend(more);
        }
    }
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while out.len() < p.max_messages {
        let Some(m) = held.front() else { break };
        if !out.is_empty() && bytes + size(m) > p.max_bytes {
            break;
        }
        bytes += size(m);
        out.extend(held.pop_front());
    }
    drop(held);
    inst.delivered
        .fetch_add(out.len() as u64, Ordering::Relaxed);
    crate::metrics::Metrics::add(&gw.metrics.delivered, out.len());
    let schemas = match inst.format {
        ValueFormat::Record => {
            let client = inst.client.as_ref().unwrap_or(&gw.client);
            let topic = TopicName::parse(&inst.key.topic)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            // Failing to fetch a writer schema leaves those values base64 (flagged): the
            // messages are handed out either way and must not be lost.
            gw.writer_schemas.resolve(client, &topic, &out).await.ok()
        }
        _ => None,
    };
    let messages = out
        .iter()
        .map(|m| consumed(m, inst.format, schemas.as_ref()))
        .collect();
    ok(&FetchAnswer { messages })
}

/// `DELETE …/consumers/{id}`: close the instance (what it was given and did not acknowledge
/// goes back to the subscription).
pub async fn delete(
    gw: &Gateway,
    sub: &SubPath,
    id: &str,
    pq: &str,
    token: Option<&str>,
) -> Answer {
    let inst = match find(gw, sub, id, pq, token) {
        Ok(i) => i,
        Err(r) => return Ok(r),
    };
    let removed = gw.consumers.remove(&inst.key);
    drop(inst);
    if let Some(i) = removed {
        i.close().await;
    }
    Ok(Reply::Json(204, String::new()))
}

/// `POST …/consumer/{id}/nack`: redeliver these after the instance's negative-ack delay.
pub async fn nack(
    gw: &Gateway,
    sub: &SubPath,
    id: &str,
    body: &[u8],
    pq: &str,
    token: Option<&str>,
) -> Answer {
    let p = AckParams::parse(body, "", true)?;
    let inst = match find(gw, sub, id, pq, token) {
        Ok(i) => i,
        Err(r) => return Ok(r),
    };
    for m in &p.ids {
        inst.consumer
            .negative_acknowledge(None, *m)
            .map_err(consumer_error)?;
    }
    inst.ack_log().negative += p.ids.len() as u64;
    ok(&json!({ "negativelyAcknowledged": p.ids.len() }))
}

/// The instance a cursor request goes through: the one named, else the first of this node's
/// instances on the subscription.
fn through(
    gw: &Gateway,
    sub: &SubPath,
    named: Option<&str>,
    pq: &str,
    token: Option<&str>,
) -> Result<InUse, Reply> {
    if let Some(id) = named {
        return find(gw, sub, id, pq, token);
    }
    gw.consumers
        .on_subscription(&sub.topic.name(), &sub.subscription)
        .into_iter()
        .find(|i| i.allows(token))
        .ok_or_else(|| Reply::Json(404, no_instance(sub).body()))
}

fn not_yours(id: &str) -> ApiError {
    ApiError::new(
        403,
        2,
        format!("consumer instance {id:?} was created with another Authorization credential"),
    )
}

fn no_instance(sub: &SubPath) -> ApiError {
    unknown_consumer(format!(
        "no consumer instance on subscription {:?} of {} at this gateway node: create one \
         (POST …/subscription/{}) or name it with ?consumer=<id>",
        sub.subscription,
        sub.topic.name(),
        sub.subscription
    ))
}

/// `POST …/subscription/{subscription}/cursor`: acknowledge ids, individually or cumulatively.
pub async fn ack(
    gw: &Gateway,
    sub: &SubPath,
    body: &[u8],
    query: &str,
    pq: &str,
    token: Option<&str>,
) -> Answer {
    let p = AckParams::parse(body, query, false)?;
    let inst = match through(gw, sub, p.consumer.as_deref(), pq, token) {
        Ok(i) => i,
        Err(r) => return Ok(r),
    };
    if p.cumulative {
        for m in &p.ids {
            inst.consumer
                .acknowledge_cumulative(None, *m)
                .map_err(consumer_error)?;
            inst.ack_log().cumulative(*m);
        }
    } else {
        let ids: Vec<(Option<u32>, MessageId)> = p.ids.iter().map(|m| (None, *m)).collect();
        inst.consumer
            .acknowledge_many(&ids)
            .map_err(consumer_error)?;
        inst.ack_log().individual(&p.ids);
    }
    ok(&json!({ "acknowledged": p.ids.len(), "consumer": inst.id }))
}

/// `GET …/subscription/{subscription}/cursor`: per instance of this node on the
/// subscription, what was acknowledged through it and the broker's view of its consumer.
pub async fn cursor(
    gw: &Gateway,
    sub: &SubPath,
    query: &str,
    pq: &str,
    token: Option<&str>,
) -> Answer {
    let mut named = None;
    for (k, v) in query_pairs(query)? {
        match k.as_str() {
            "consumer" => named = Some(v),
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter {other:?} (consumer)"
                )))
            }
        }
    }
    let insts = match &named {
        Some(id) => match find(gw, sub, id, pq, token) {
            Ok(i) => vec![i],
            Err(r) => return Ok(r),
        },
        None => gw
            .consumers
            .on_subscription(&sub.topic.name(), &sub.subscription)
            .into_iter()
            .filter(|i| i.allows(token))
            .collect(),
    };
    if insts.is_empty() {
        return Err(no_instance(sub));
    }
    let consumers: Vec<Value> = insts.iter().map(|i| describe(i)).collect();
    ok(&json!({
        "cursor": {
            "topic": sub.topic.name(),
            "subscription": sub.subscription,
            "consumers": consumers,
        }
    }))
}

/// One instance as the cursor reports it. (Not the broker's consumer statistics: a broker
/// that does not answer that request, as pulsar-lite, would stall the consumer meanwhile.)
fn describe(i: &Instance) -> Value {
    let log = i.ack_log().clone();
    let held = i.held.try_lock().map_or(0, |h| h.len());
    let st = i.consumer.stats();
    json!({
        "id": i.id,
        "name": i.key.name,
        "subscriptionType": sub_type_name(i.sub_type),
        "connected": i.consumer.is_connected(),
        "partitions": st.partitions,
        "delivered": i.delivered.load(Ordering::Relaxed),
        "buffered": st.queued as usize + held,
        "acknowledged": log.individual,
        "recentlyAcknowledged": log.recent.iter().map(id_base64).collect::<Vec<_>>(),
        "cumulativelyAcknowledged": log.cumulative.values().map(id_base64).collect::<Vec<_>>(),
        "negativelyAcknowledged": log.negative,
        "reconnects": st.reconnects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_errors_become_answers() {
        use streamwire_core::error::Error;
        let e = consumer_error(Error::new(ErrorKind::ConsumerBusy, "exclusive"));
        assert_eq!((e.status, e.code), (409, 40902));
        assert_eq!(consumer_error(Error::closed("consumer")).code, 40403);
        assert_eq!(consumer_error(Error::timeout("subscribe")).code, 50401);
        assert_eq!(consumer_error(Error::invalid("cumulative")).code, 40001);
    }

    #[test]
    fn creation_requests() {
        let p = CreateParams::parse(b"").unwrap();
        assert_eq!(
            (p.name, p.sub_type, p.initial, p.format),
            (
                None,
                SubType::Exclusive,
                InitialPosition::Latest,
                ValueFormat::Base64
            )
        );
        let p = CreateParams::parse(
            br#"{"name":"c1","subscriptionType":"Shared","subscriptionInitialPosition":"Earliest",
                 "value_schema":{"type":"STRING"},"negativeAckRedeliveryDelayMs":200}"#,
        )
        .unwrap();
        assert_eq!(p.name.as_deref(), Some("c1"));
        assert_eq!(
            (p.sub_type, p.initial, p.format, p.nack_delay),
            (
                SubType::Shared,
                InitialPosition::Earliest,
                ValueFormat::Text,
                Duration::from_millis(200)
            )
        );
        let id = InstanceId {
            name: "c2".into(),
            node: "n1".into(),
            url: "http://h:1".into(),
        };
        let p = CreateParams::parse(format!(r#"{{"id":"{}"}}"#, id.encode()).as_bytes()).unwrap();
        assert_eq!((p.name.as_deref(), p.id), (Some("c2"), Some(id)));
    }

    #[test]
    fn bad_creation_requests() {
        for (body, code) in [
            (&b"{not json"[..], 40001),
            (br#"{"name":"a b"}"#, 40001),
            (br#"{"subscriptionType":"Weird"}"#, 40001),
            (br#"{"subscriptionInitialPosition":"middle"}"#, 40001),
            (br#"{"id":"nope"}"#, 40001),
            (br#"{"what":1}"#, 40001),
            (br#"{"receiverQueueSize":0}"#, 40001),
            (br#"{"schema_type":"AVRO"}"#, 42202),
            (br#"{"value_schema":{"type":"AVRO","schema":"{}"}}"#, 42204),
            (br#"{"key_schema":"nope"}"#, 42203),
        ] {
            let e = CreateParams::parse(body).unwrap_err();
            assert_eq!(e.code, code, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn fetch_and_ack_parameters() {
        let cap = Duration::from_secs(27);
        let p = FetchParams::parse("timeout=250&max_messages=5&max_bytes=10", cap).unwrap();
        assert_eq!(
            (p.timeout, p.max_messages, p.max_bytes),
            (Duration::from_millis(250), 5, 10)
        );
        assert_eq!(
            FetchParams::parse("timeout=99999999", cap).unwrap().timeout,
            cap
        );
        for q in ["timeout=-1", "max_messages=x", "position=earliest", "a=%zz"] {
            assert_eq!(FetchParams::parse(q, cap).unwrap_err().status, 400, "{q}");
        }
        let id = MessageId::new(3, 4, -1, -1, 0);
        let body = format!(
            r#"{{"type":"Cumulative","messageIds":["{}"]}}"#,
            id_base64(&id)
        );
        let a = AckParams::parse(body.as_bytes(), "consumer=x~n~aHR0cDovL2g", false).unwrap();
        assert_eq!(
            (a.cumulative, a.ids, a.consumer.as_deref()),
            (true, vec![id], Some("x~n~aHR0cDovL2g"))
        );
        for (body, q, nack) in [
            (r#"{"messageIds":[]}"#, "", false),
            (r#"{"messageIds":["AAAA"]}"#, "", false),
            (r#"{"type":"some","messageIds":["CAE="]}"#, "", false),
            (r#"{"type":"cumulative","messageIds":["CAE="]}"#, "", true),
            (r#"{"messageIds":["CAE="]}"#, "x=1", false),
            (r#"{"ids":["CAE="]}"#, "", false),
        ] {
            let e = AckParams::parse(body.as_bytes(), q, nack).unwrap_err();
            assert_eq!(e.code, 40001, "{body} {q}");
        }
    }
}
