//! Messages of a producer with a schema: values encoded in Rust into payloads (`send`,
//! `send_async`, `send_many`). Every value of a `send_many` call is encoded before any is
//! queued, so a value that does not fit its schema fails the call with nothing sent.

use bytes::BytesMut;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use streamwire_core::error::Error;
use streamwire_pulsar::engine::message::OutgoingMessage;

use crate::common::arrow::is_arrow_records;
use crate::common::columns::freeze_slices;
use crate::common::errors::to_py;
use crate::pulsar::many::ManyOptions;
use crate::pulsar::schema::Codec;
use crate::pulsar::schema_encode_halves::arrow_payloads;

/// One message of `value`, with the caller's `key` (not allowed with a SEPARATED key/value
/// schema, whose key is the value's).
pub(crate) fn typed_message(
    codec: &Codec,
    value: &Bound<'_, PyAny>,
    key: Option<String>,
) -> PyResult<OutgoingMessage> {
    let e = codec.encode(value.py(), value)?;
    let mut m = OutgoingMessage::new(e.payload, 0);
    m.null_value = e.null_value;
    if !e.own_key {
        m.key = key;
    } else if key.is_some() {
        return Err(to_py(Error::invalid(
            "a SEPARATED key/value schema sends the value's key; do not also give key=",
        )));
    } else {
        m.partition_key_b64 = e.key_b64.is_some();
        m.key = e.key_b64;
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
    // One buffer for every payload: one allocation, sliced per message.
    let mut buf = BytesMut::new();
    let mut lens = Vec::new();
    let mut own_keys = Vec::new();
    if is_arrow_records(values) {
        // Arrow columns (a record batch or struct array): read in Rust, no Python per row.
        if let Some(p) = arrow_payloads(py, codec, values)? {
            let lens = p.lens.iter().map(|&n| (n, false)).collect();
            // The Vec becomes the buffer as it is (no copy).
            return finish(
                BytesMut::from(bytes::Bytes::from(p.buf)),
                lens,
                p.keys,
                keys,
                properties,
                event_times,
                sequence_ids,
            );
        }
    }
    if values.is_instance_of::<PyBytes>() || values.is_instance_of::<PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "send_many takes a sequence of values, not a single value",
        ));
    }
    let iter = values.try_iter().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err("send_many takes a sequence of values")
    })?;
    for (i, v) in iter.enumerate() {
        let e = codec.encode(py, &v?).map_err(|err| {
            let msg = format!("value {i}: {}", err.value(py));
            crate::pulsar::schema_values::schema_error(py, msg)
        })?;
        buf.extend_from_slice(&e.payload);
        lens.push((e.payload.len(), e.null_value));
        // A SEPARATED key/value's None key half: no key (None here), and keys= still
        // refused, as for the values that have a key.
        if e.own_key && keys.is_some() {
            return Err(to_py(Error::invalid(
                "a SEPARATED key/value schema sends the values' keys; do not also give keys=",
            )));
        }
        own_keys.push(e.key_b64);
    }
    finish(
        buf,
        lens,
        own_keys,
        keys,
        properties,
        event_times,
        sequence_ids,
    )
}

/// The messages of encoded payloads (`buf` cut at `lens`, each with its null-value flag)
/// with the per-message options.
fn finish(
    buf: BytesMut,
    lens: Vec<(usize, bool)>,
    own_keys: Vec<Option<String>>,
    keys: Option<&Bound<'_, PyAny>>,
    properties: Option<&Bound<'_, PyAny>>,
    event_times: Option<&Bound<'_, PyAny>>,
    sequence_ids: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Vec<OutgoingMessage>, bool)> {
    let opts = ManyOptions::parse(lens.len(), keys, properties, event_times, sequence_ids)?;
    if opts.keys.is_some() && own_keys.iter().any(Option::is_some) {
        return Err(to_py(Error::invalid(
            "a SEPARATED key/value schema sends the values' keys; do not also give keys=",
        )));
    }
    let mut msgs = Vec::with_capacity(lens.len());
    for (i, ((payload, null), own_key)) in freeze_slices(buf, &lens)
        .into_iter()
        .zip(own_keys)
        .enumerate()
    {
        let mut m = OutgoingMessage::new(payload, 0);
        opts.apply(i, &mut m);
        m.null_value = null;
        if let Some(k) = own_key {
            m.key = Some(k);
            m.partition_key_b64 = true;
        }
        msgs.push(m);
    }
    Ok((msgs, opts.user_seq()))
}
