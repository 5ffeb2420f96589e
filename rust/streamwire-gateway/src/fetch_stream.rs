//! Streaming fetch from a consumer instance, in one of two framings of the same JSON message
//! objects:
//!
//! - NDJSON (`?stream=ndjson`, or `Accept: application/x-ndjson`): one message per line.
//! - Server-sent events (`?stream=sse`, or `Accept: text/event-stream`): one `data:` event
//!   per message with the message id as the event `id`, a `: heartbeat` comment after each
//!   `heartbeat` ms without an event (so proxies and load balancers keep an idle stream open,
//!   and a client that left is noticed at the next write), and a last `end` event saying why
//!   the stream ended (`timeout`, `max_messages`, `shutdown`).
//!
//! Both run until `timeout` (default: the longest a request may take), `max_messages`
//! (default: no limit), the gateway shutting down, or the client going away.
//!
//! At most `IN_FLIGHT` events wait for the client at once: beyond that the stream waits and
//! takes nothing more from the consumer. A message that could not be handed to the response
//! (the client left, or the deadline came while waiting for room) goes back to the front of
//! what the instance holds, so the next fetch gets it: nothing is taken and dropped.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use streamwire_pulsar::topic::TopicName;

use crate::consume::{consumed, consumer_error, find, query_pairs, Reply};
use crate::consumers::InUse;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::produce::ValueFormat;
use crate::route::SubPath;
use crate::state::Gateway;

/// Events waiting for the client at most.
pub const IN_FLIGHT: usize = 64;

/// The default gap between SSE heartbeats (ms): under the 30–60 s idle timeouts common in
/// proxies and load balancers.
pub const HEARTBEAT_MS: u64 = 15_000;

/// The reconnection delay an SSE client is told (`retry:`, ms) for when the stream ends.
pub const RETRY_MS: u64 = 1_000;

/// The `stream` values a fetch takes (the OpenAPI document lists exactly these).
pub const FORMATS: [&str; 2] = ["ndjson", "sse"];

/// How a stream frames its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `application/x-ndjson`: one JSON object per line.
    Ndjson,
    /// `text/event-stream`: server-sent events.
    Sse,
}

impl Framing {
    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Framing::Ndjson => "application/x-ndjson",
            Framing::Sse => "text/event-stream",
        }
    }
}

/// Why a stream ended (the SSE `end` event says it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Timeout,
    MaxMessages,
    Shutdown,
}

impl End {
    fn name(self) -> &'static str {
        match self {
            End::Timeout => "timeout",
            End::MaxMessages => "max_messages",
            End::Shutdown => "shutdown",
        }
    }
}

/// A streaming fetch's query parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamParams {
    pub framing: Framing,
    pub timeout: Duration,
    pub max_messages: Option<usize>,
    /// SSE only: a comment after this long without an event.
    pub heartbeat: Duration,
}

/// The framing `Accept` asks for, if it names a streaming one (SSE first when both are).
fn accepted(accept: Option<&str>) -> Option<Framing> {
    let a = accept?.to_ascii_lowercase();
    if a.contains("text/event-stream") {
        Some(Framing::Sse)
    } else if a.contains("application/x-ndjson") {
        Some(Framing::Ndjson)
    } else {
        None
    }
}

impl StreamParams {
    /// Parse the query (`stream=` wins over `Accept`); `cap` bounds (and is the default of)
    /// the timeout.
    pub fn parse(
        query: &str,
        accept: Option<&str>,
        cap: Duration,
    ) -> Result<StreamParams, ApiError> {
        let mut p = StreamParams {
            framing: accepted(accept).unwrap_or(Framing::Ndjson),
            timeout: cap,
            max_messages: None,
            heartbeat: Duration::from_millis(HEARTBEAT_MS),
        };
        for (k, v) in query_pairs(query)? {
            let n = v.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("{k} must be a non-negative integer, got {v:?}"))
            });
            match k.as_str() {
                "stream" if v == "ndjson" => p.framing = Framing::Ndjson,
                "stream" if v == "sse" => p.framing = Framing::Sse,
                "stream" => {
                    return Err(ApiError::bad_request(format!(
                        "stream must be ndjson or sse, got {v:?}"
                    )))
                }
                "timeout" => p.timeout = Duration::from_millis(n?).min(cap),
                "max_messages" => p.max_messages = Some(n?.max(1) as usize),
                // At least 100 ms: a heartbeat is a write, not a busy loop.
                "heartbeat" => p.heartbeat = Duration::from_millis(n?.max(100)),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unknown parameter {other:?} for a stream (stream, timeout, \
                         max_messages, heartbeat)"
                    )))
                }
            }
        }
        Ok(p)
    }
}

/// Whether a fetch asks for a stream: `stream=` in the query, or NDJSON or server-sent
/// events accepted.
pub fn wanted(query: &str, accept: Option<&str>) -> bool {
    query
        .split('&')
        .any(|p| p == "stream" || p.starts_with("stream="))
        || accepted(accept).is_some()
}

/// Start streaming from the instance `id`: the framing and the events to answer with, or an
/// answer now (a redirect, 404, 403).
pub async fn start(
    gw: Arc<Gateway>,
    sub: &SubPath,
    id: &str,
    query: &str,
    accept: Option<&str>,
    pq: &str,
    token: Option<&str>,
) -> Result<Result<(Framing, mpsc::Receiver<Bytes>), Reply>, ApiError> {
    let p = StreamParams::parse(query, accept, gw.config.request_timeout.mul_f64(0.9))?;
    let inst = match find(&gw, sub, id, pq, token) {
        Ok(i) => i,
        Err(r) => return Ok(Err(r)),
    };
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    let framing = p.framing;
    let stopping = gw.stopping();
    tokio::spawn(run(inst, p, tx, gw.clone(), stopping));
    Ok(Ok((framing, rx)))
}

/// One message as its framing writes it (the JSON object is the same in both).
pub fn frame(framing: Framing, id: &str, v: &impl serde::Serialize) -> Bytes {
    let json = serde_json::to_vec(v).unwrap_or_default();
    let mut b = Vec::with_capacity(json.len() + id.len() + 16);
    if framing == Framing::Sse {
        // Compact JSON has no newline, so one `data:` line carries it.
        b.extend_from_slice(b"id: ");
        b.extend_from_slice(id.as_bytes());
        b.extend_from_slice(b"\ndata: ");
        b.extend_from_slice(&json);
        b.extend_from_slice(b"\n\n");
    } else {
        b.extend_from_slice(&json);
        b.push(b'\n');
    }
    Bytes::from(b)
}

/// An error ending the stream: an `Error` object line, or an SSE `error` event.
fn error_frame(framing: Framing, e: &ApiError) -> Bytes {
    match framing {
        Framing::Ndjson => Bytes::from(e.body() + "\n"),
        Framing::Sse => Bytes::from(format!("event: error\ndata: {}\n\n", e.body())),
    }
}

/// The SSE `end` event (NDJSON streams just end).
fn end_frame(why: End) -> Bytes {
    Bytes::from(format!(
        "event: end\ndata: {{\"reason\":\"{}\"}}\n\n",
        why.name()
    ))
}

async fn run(
    inst: InUse,
    p: StreamParams,
    tx: mpsc::Sender<Bytes>,
    gw: Arc<Gateway>,
    stopping: impl std::future::Future<Output = ()>,
) {
    let sse = p.framing == Framing::Sse;
    if sse {
        // Sent at once: the client sees the stream open, and reconnects this soon after it ends.
        let hello = format!("retry: {RETRY_MS}\n: streaming\n\n");
        if tx.send(Bytes::from(hello)).await.is_err() {
            return;
        }
    }
    tokio::pin!(stopping);
    let why = stream(&inst, &p, &tx, &gw, stopping).await;
    if let (true, Some(why)) = (sse, why) {
        // Bounded: a client that stopped reading does not hold the task (or a shutdown).
        let _ = tokio::time::timeout(Duration::from_secs(1), tx.send(end_frame(why))).await;
    }
}

/// Hand messages to `tx` until the stream ends; why it ended (`None`: the client left or the
/// instance failed, nothing more to say).
async fn stream(
    inst: &InUse,
    p: &StreamParams,
    tx: &mpsc::Sender<Bytes>,
    gw: &Gateway,
    mut stopping: std::pin::Pin<&mut impl std::future::Future<Output = ()>>,
) -> Option<End> {
    let deadline = Instant::now() + p.timeout;
    let sse = p.framing == Framing::Sse;
    let mut left = p.max_messages.unwrap_or(usize::MAX);
    // Held for the whole stream: fetches of one instance are serialized.
    let mut held = inst.held.lock().await;
    let mut beat = Instant::now() + p.heartbeat;
    let topic = match inst.format {
        ValueFormat::Record => TopicName::parse(&inst.key.topic).ok(),
        _ => None,
    };
    while left > 0 {
        let Some(m) = held.pop_front() else {
            let want = left.min(IN_FLIGHT);
            tokio::select! {
                // Cancel safe: nothing is taken from the consumer unless this completes.
                got = tokio::time::timeout_at(deadline, inst.consumer.receive_many(want)) => {
                    match got {
                        Ok(Ok(got)) => held.extend(got),
                        Ok(Err(e)) => {
                            let _ = tx.send(error_frame(p.framing, &consumer_error(e))).await;
                            return None;
                        }
                        Err(_) => return Some(End::Timeout),
                    }
                }
                () = tokio::time::sleep_until(beat), if sse => {
                    // Skipped when events are waiting: the client is not reading anyway.
                    if let Err(mpsc::error::TrySendError::Closed(_)) =
                        tx.try_send(Bytes::from_static(b": heartbeat\n\n"))
                    {
                        return None;
                    }
                    beat = Instant::now() + p.heartbeat;
                }
                () = tx.closed() => return None,
                () = &mut stopping => return Some(End::Shutdown),
            }
            continue;
        };
        // A typed instance decodes by the writer's version: a cache hit after the
        // first message of each version. A failed lookup leaves the value base64, flagged.
        let schemas = match (inst.format, &topic) {
            (ValueFormat::Record, Some(t)) => {
                let client = inst.client.as_ref().unwrap_or(&gw.client);
                gw.writer_schemas
                    .resolve(client, t, std::iter::once(&m))
                    .await
                    .ok()
            }
            _ => None,
        };
        let out = {
            let c = consumed(&m, inst.format, schemas.as_ref());
            frame(p.framing, &c.message_id, &c)
        };
        let permit = tokio::select! {
            p = tx.reserve() => p.ok(),
            () = tokio::time::sleep_until(deadline) => None,
            () = &mut stopping => None,
        };
        let Some(permit) = permit else {
            held.push_front(m);
            return if tx.is_closed() {
                None
            } else if Instant::now() >= deadline {
                Some(End::Timeout)
            } else {
                Some(End::Shutdown)
            };
        };
        permit.send(out);
        beat = Instant::now() + p.heartbeat;
        inst.delivered.fetch_add(1, Ordering::Relaxed);
        Metrics::add(&gw.metrics.delivered, 1);
        left -= 1;
    }
    Some(End::MaxMessages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_detection() {
        let cap = Duration::from_secs(27);
        let p = StreamParams::parse("stream=ndjson", None, cap).unwrap();
        assert_eq!(
            (p.framing, p.timeout, p.max_messages),
            (Framing::Ndjson, cap, None)
        );
        let p = StreamParams::parse("stream=ndjson&timeout=500&max_messages=3", None, cap).unwrap();
        assert_eq!(
            (p.timeout, p.max_messages),
            (Duration::from_millis(500), Some(3))
        );
        assert_eq!(
            StreamParams::parse("timeout=999999999", None, cap)
                .unwrap()
                .timeout,
            cap
        );
        for bad in [
            "stream=csv",
            "max_bytes=10",
            "timeout=-1",
            "max_messages=x",
            "heartbeat=x",
        ] {
            assert_eq!(
                StreamParams::parse(bad, None, cap).unwrap_err().code,
                40001,
                "{bad}"
            );
        }
        assert!(wanted("timeout=1&stream=ndjson", None));
        assert!(wanted("", Some("Application/X-NDJSON")));
        assert!(wanted("", Some("text/event-stream")));
        assert!(!wanted("timeout=1", Some("application/json")));
        assert!(!wanted("streamx=1", None));
    }

    #[test]
    fn sse_is_chosen_by_query_or_accept_and_the_query_wins() {
        let cap = Duration::from_secs(27);
        let framing = |q: &str, a: Option<&str>| StreamParams::parse(q, a, cap).unwrap().framing;
        assert_eq!(framing("stream=sse", None), Framing::Sse);
        assert_eq!(framing("", Some("text/event-stream")), Framing::Sse);
        assert_eq!(
            framing("", Some("application/x-ndjson, text/event-stream;q=0.9")),
            Framing::Sse
        );
        assert_eq!(
            framing("stream=ndjson", Some("text/event-stream")),
            Framing::Ndjson
        );
        assert_eq!(
            framing("stream=sse", Some("application/x-ndjson")),
            Framing::Sse
        );
        let p = StreamParams::parse("stream=sse&heartbeat=5", None, cap).unwrap();
        assert_eq!(p.heartbeat, Duration::from_millis(100));
        assert_eq!(
            StreamParams::parse("stream=sse", None, cap)
                .unwrap()
                .heartbeat,
            Duration::from_millis(HEARTBEAT_MS)
        );
        assert_eq!(Framing::Sse.content_type(), "text/event-stream");
    }

    #[test]
    fn frames_carry_the_same_json_object() {
        let v = serde_json::json!({"messageId": "CAE=", "value": "aGk="});
        let line = frame(Framing::Ndjson, "CAE=", &v);
        assert_eq!(&line[..], b"{\"messageId\":\"CAE=\",\"value\":\"aGk=\"}\n");
        let event = frame(Framing::Sse, "CAE=", &v);
        assert_eq!(
            &event[..],
            b"id: CAE=\ndata: {\"messageId\":\"CAE=\",\"value\":\"aGk=\"}\n\n"
        );
        let e = ApiError::new(404, 3, "gone");
        assert_eq!(
            &error_frame(Framing::Sse, &e)[..],
            b"event: error\ndata: {\"code\":40403,\"message\":\"gone\"}\n\n"
        );
        assert_eq!(
            &end_frame(End::MaxMessages)[..],
            b"event: end\ndata: {\"reason\":\"max_messages\"}\n\n"
        );
    }
}
