//! Streaming fetch from a consumer instance (`GET …/consumer/{id}/messages?stream=ndjson`, or
//! `Accept: application/x-ndjson`): one message per line as it arrives, until `timeout`
//! (default: the longest a request may take), `max_messages` (default: no limit), or the
//! client going away.
//!
//! At most `IN_FLIGHT` lines wait for the client at once: beyond that the stream waits and
//! takes nothing more from the consumer. A message that could not be handed to the response
//! (the client left, or the deadline came while waiting for room) goes back to the front of
//! what the instance holds, so the next fetch gets it: nothing is taken and dropped.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::consume::{consumed, consumer_error, find, query_pairs, Reply};
use crate::consumers::InUse;
use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::route::SubPath;
use crate::state::Gateway;

/// Lines waiting for the client at most.
pub const IN_FLIGHT: usize = 64;

/// A streaming fetch's query parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamParams {
    pub timeout: Duration,
    pub max_messages: Option<usize>,
}

impl StreamParams {
    /// Parse the query; `cap` bounds (and is the default of) the timeout.
    pub fn parse(query: &str, cap: Duration) -> Result<StreamParams, ApiError> {
        let mut p = StreamParams {
            timeout: cap,
            max_messages: None,
        };
        for (k, v) in query_pairs(query)? {
            let n = v.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("{k} must be a non-negative integer, got {v:?}"))
            });
            match k.as_str() {
                "stream" if v == "ndjson" => {}
                "stream" => {
                    return Err(ApiError::bad_request(format!(
                        "stream must be ndjson, got {v:?}"
                    )))
                }
                "timeout" => p.timeout = Duration::from_millis(n?).min(cap),
                "max_messages" => p.max_messages = Some(n?.max(1) as usize),
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unknown parameter {other:?} for a stream (stream, timeout, max_messages)"
                    )))
                }
            }
        }
        Ok(p)
    }
}

/// Whether a fetch asks for a stream: `stream=` in the query, or NDJSON accepted.
pub fn wanted(query: &str, accept: Option<&str>) -> bool {
    query
        .split('&')
        .any(|p| p == "stream" || p.starts_with("stream="))
        || accept.is_some_and(|a| a.to_ascii_lowercase().contains("application/x-ndjson"))
}

/// Start streaming from the instance `id`: the lines to answer with, or an answer now (a
/// redirect, 404, 403).
pub async fn start(
    gw: Arc<Gateway>,
    sub: &SubPath,
    id: &str,
    query: &str,
    pq: &str,
    token: Option<&str>,
) -> Result<Result<mpsc::Receiver<Bytes>, Reply>, ApiError> {
    let p = StreamParams::parse(query, gw.config.request_timeout.mul_f64(0.9))?;
    let inst = match find(&gw, sub, id, pq, token) {
        Ok(i) => i,
        Err(r) => return Ok(Err(r)),
    };
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    let metrics = gw.metrics.clone();
    tokio::spawn(run(inst, p, tx, metrics));
    Ok(Ok(rx))
}

fn line(v: &impl serde::Serialize) -> Bytes {
    let mut b = serde_json::to_vec(v).unwrap_or_default();
    b.push(b'\n');
    Bytes::from(b)
}

async fn run(inst: InUse, p: StreamParams, tx: mpsc::Sender<Bytes>, metrics: Arc<Metrics>) {
    let deadline = Instant::now() + p.timeout;
    let mut left = p.max_messages.unwrap_or(usize::MAX);
    // Held for the whole stream: fetches of one instance are serialized.
    let mut held = inst.held.lock().await;
    while left > 0 {
        let Some(m) = held.pop_front() else {
            let want = left.min(IN_FLIGHT);
            tokio::select! {
                // Cancel safe: nothing is taken from the consumer unless this completes.
                got = tokio::time::timeout_at(deadline, inst.consumer.receive_many(want)) => {
                    match got {
                        Ok(Ok(got)) => held.extend(got),
                        Ok(Err(e)) => {
                            let _ = tx.send(Bytes::from(consumer_error(e).body() + "\n")).await;
                            return;
                        }
                        Err(_) => return,
                    }
                }
                () = tx.closed() => return,
            }
            continue;
        };
        let out = line(&consumed(&m, inst.format));
        let permit = tokio::select! {
            p = tx.reserve() => p.ok(),
            () = tokio::time::sleep_until(deadline) => None,
        };
        let Some(permit) = permit else {
            held.push_front(m);
            return;
        };
        permit.send(out);
        inst.delivered.fetch_add(1, Ordering::Relaxed);
        Metrics::add(&metrics.delivered, 1);
        left -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_detection() {
        let cap = Duration::from_secs(27);
        let p = StreamParams::parse("stream=ndjson", cap).unwrap();
        assert_eq!((p.timeout, p.max_messages), (cap, None));
        let p = StreamParams::parse("stream=ndjson&timeout=500&max_messages=3", cap).unwrap();
        assert_eq!(
            (p.timeout, p.max_messages),
            (Duration::from_millis(500), Some(3))
        );
        assert_eq!(
            StreamParams::parse("timeout=999999999", cap)
                .unwrap()
                .timeout,
            cap
        );
        for bad in ["stream=csv", "max_bytes=10", "timeout=-1", "max_messages=x"] {
            assert_eq!(
                StreamParams::parse(bad, cap).unwrap_err().code,
                40001,
                "{bad}"
            );
        }
        assert!(wanted("timeout=1&stream=ndjson", None));
        assert!(wanted("", Some("Application/X-NDJSON")));
        assert!(!wanted("timeout=1", Some("application/json")));
        assert!(!wanted("streamx=1", None));
    }
}
