//! Building the messages of the Pulsar producer's send calls from their Python arguments:
//! one message (`send`, `send_async`, `_asend`) and the many of a `send_many`, and the ids of
//! a `send_many` in input order. Shared by the blocking and the asyncio shells (see
//! `producer.rs` and `aio_producer.rs`), so both check the same arguments the same way.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use pyo3::prelude::*;

use streamwire_core::error::{Error, Result};
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::producer::EntryOptions;

use crate::common::errors::to_py;
use crate::pulsar::many::ManyOptions;
use crate::pulsar::schema::Codec as SchemaCodec;
use crate::pulsar::schema_send::{typed_many, typed_message};

fn secs_to_ms(name: &str, v: f64) -> PyResult<i64> {
    if !v.is_finite() || v < 0.0 {
        return Err(to_py(Error::invalid(format!(
            "{name} must be a non-negative number"
        ))));
    }
    Ok((v * 1000.0) as i64)
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Everything `send`/`send_async` accept besides the value.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_message(
    codec: Option<&SchemaCodec>,
    value: &Bound<'_, PyAny>,
    key: Option<String>,
    ordering_key: Option<Vec<u8>>,
    properties: Option<&Bound<'_, PyAny>>,
    event_time: Option<i64>,
    sequence_id: Option<i64>,
    deliver_after: Option<f64>,
    deliver_at: Option<i64>,
    replication_clusters: Option<Vec<String>>,
    disable_replication: bool,
) -> PyResult<(OutgoingMessage, bool, EntryOptions)> {
    let mut msg = match codec {
        Some(c) => typed_message(c, value, key)?,
        None => {
            let mut m = OutgoingMessage::new(crate::common::columns::payload_of(value)?, 0);
            m.key = key;
            m
        }
    };
    msg.ordering_key = ordering_key.map(Bytes::from);
    msg.properties = match properties {
        Some(p) => crate::common::columns::one_props(p)?,
        None => Vec::new(),
    };
    msg.event_time = match event_time {
        Some(t) if t < 0 => {
            return Err(to_py(Error::invalid(format!(
                "event_time must be milliseconds since the epoch (>= 0), got {t}"
            ))))
        }
        t => t.map(|t| t as u64),
    };
    let user_seq = match sequence_id {
        Some(s) if s < 0 => {
            return Err(to_py(Error::invalid("sequence_id must be non-negative")));
        }
        Some(s) => {
            msg.sequence_id = s as u64;
            true
        }
        None => false,
    };
    let deliver_at = match (deliver_after, deliver_at) {
        (Some(_), Some(_)) => {
            return Err(to_py(Error::invalid(
                "give deliver_after or deliver_at, not both",
            )));
        }
        (Some(after), None) => Some(unix_ms() + secs_to_ms("deliver_after", after)?),
        (None, at) => at,
    };
    let entry = EntryOptions {
        deliver_at,
        replicate_to: replication_clusters.unwrap_or_default(),
        disable_replication,
        txn: None,
        schema_version: None,
    };
    Ok((msg, user_seq, entry))
}

/// The messages of a `send_many` call, and whether they carry caller-given sequence ids.
pub(crate) fn many_messages(
    codec: Option<&SchemaCodec>,
    values: &Bound<'_, PyAny>,
    keys: Option<&Bound<'_, PyAny>>,
    properties: Option<&Bound<'_, PyAny>>,
    event_times: Option<&Bound<'_, PyAny>>,
    sequence_ids: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Vec<OutgoingMessage>, bool)> {
    if let Some(c) = codec {
        return typed_many(c, values, keys, properties, event_times, sequence_ids);
    }
    let payloads = crate::common::columns::payloads(values)?;
    let opts = ManyOptions::parse(payloads.len(), keys, properties, event_times, sequence_ids)?;
    let plain = opts.is_empty(); // the common bulk call: values only
    let mut msgs = Vec::with_capacity(payloads.len());
    // Built by `extend` from a mapping closure, so each 144-byte message is written straight
    // into the vector rather than built on the stack and copied in (callgrind: two copies a
    // message with a push loop).
    msgs.extend(
        payloads
            .into_iter()
            .enumerate()
            .map(|(i, (payload, null))| {
                let mut m = OutgoingMessage::new(payload, 0);
                m.null_value = null;
                if !plain {
                    opts.apply(i, &mut m);
                }
                m
            }),
    );
    Ok((msgs, opts.user_seq()))
}

/// The ids of a `send_many` in input order, or its first error noting how many of the `n`
/// messages were not sent (the blocking and the awaitable call).
pub(crate) fn all_sent(results: Vec<Result<MessageId>>, n: usize) -> Result<Vec<MessageId>> {
    let mut ids = Vec::with_capacity(n);
    let mut failed = 0usize;
    let mut first_err: Option<Error> = None;
    for r in results {
        match r {
            Ok(id) => ids.push(id),
            Err(e) => {
                failed += 1;
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e.context(format!("{failed} of {n} messages were not sent"))),
        None => Ok(ids),
    }
}
