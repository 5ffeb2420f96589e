//! Messages of a producer with a schema: values encoded in Rust into payloads (`send`,
//! `send_async`, `send_many`). Every value of a `send_many` call is encoded before any is
//! queued, so a value that does not fit its schema fails the call with nothing sent.

use bytes::BytesMut;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use streamwire_core::error::Error;
use streamwire_pulsar::engine::message::OutgoingMessage;

use crate::common::columns::{self, freeze_slices, Props};
use crate::common::errors::to_py;
use crate::pulsar::schema::Codec;

/// One message of `value`, with the caller's `key` (not allowed with a SEPARATED key/value
/// schema, whose key is the value's).
pub(crate) fn typed_message(
    codec: &Codec,
    value: &Bound<'_, PyAny>,
    key: Option<String>,
) -> PyResult<OutgoingMessage> {
    let e = codec.encode(value.py(), value)?;
    let mut m = OutgoingMessage::new(e.payload, 0);
    match (e.key_b64, key) {
        (Some(_), Some(_)) => {
            return Err(to_py(Error::invalid(
                "a SEPARATED key/value schema sends the value's key; do not also give key=",
            )))
        }
        (Some(k), None) => {
            m.key = Some(k);
            m.partition_key_b64 = true;
        }
        (None, k) => m.key = k,
    }
    Ok(m)
}

/// The messages of a typed `send_many`: `values` is a sequence of values of the schema.
pub(crate) fn typed_many(
    codec: &Codec,
    values: &Bound<'_, PyAny>,
    keys: Option<&Bound<'_, PyAny>>,
    properties: Option<&Bound<'_, PyAny>>,
    event_times: Option<&Bound<'_, PyAny>>,
    sequence_ids: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Vec<OutgoingMessage>, bool)> {
    let py = values.py();
    if values.is_instance_of::<PyBytes>() || values.is_instance_of::<PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "send_many takes a sequence of values, not a single value",
        ));
    }
    let iter = values.try_iter().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("send_many takes a sequence of values")
    })?;
    // One buffer for every payload: one allocation, sliced per message.
    let mut buf = BytesMut::new();
    let mut lens = Vec::new();
    let mut own_keys = Vec::new();
    for (i, v) in iter.enumerate() {
        let e = codec.encode(py, &v?).map_err(|err| {
            let msg = format!("value {i}: {}", err.value(py));
            crate::pulsar::schema_values::schema_error(py, msg)
        })?;
        buf.extend_from_slice(&e.payload);
        lens.push((e.payload.len(), false));
        own_keys.push(e.key_b64);
    }
    let n = lens.len();
    let keys = columns::opt_strings(keys, n, "keys")?;
    if keys.is_some() && own_keys.iter().any(Option::is_some) {
        return Err(to_py(Error::invalid(
            "a SEPARATED key/value schema sends the values' keys; do not also give keys=",
        )));
    }
    let event_times = columns::opt_u64s(event_times, n, "event_times")?;
    let sequence_ids = columns::opt_u64s(sequence_ids, n, "sequence_ids")?;
    if let Some(s) = &sequence_ids {
        if s.iter().any(Option::is_none) {
            return Err(to_py(Error::invalid("sequence_ids must not contain None")));
        }
    }
    let user_seq = sequence_ids.is_some();
    let props = columns::properties(properties, n)?;
    let mut msgs = Vec::with_capacity(n);
    for (i, ((payload, _), own_key)) in freeze_slices(buf, &lens)
        .into_iter()
        .zip(own_keys)
        .enumerate()
    {
        let mut m = OutgoingMessage::new(payload, 0);
        if let Some(k) = own_key {
            m.key = Some(k);
            m.partition_key_b64 = true;
        } else if let Some(k) = &keys {
            m.key = k[i].clone();
        }
        if let Some(t) = &event_times {
            m.event_time = t[i];
        }
        if let Some(s) = &sequence_ids {
            m.sequence_id = s[i].unwrap_or(0);
        }
        match &props {
            Props::None => {}
            Props::Same(p) => m.properties = p.clone(),
            Props::Each(v) => m.properties = v[i].clone(),
        }
        msgs.push(m);
    }
    Ok((msgs, user_seq))
}
