//! The checked messages of a send's arguments: payload, key, partition and timestamp rules
//! of TANK, shared by both faces' `send` and `send_many`.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use pyo3::prelude::*;

use streamwire_core::error::{Error, ErrorKind};
use streamwire_tank::producer::{Outgoing, Pending};

use crate::common::columns::{payload_of, payloads};
use crate::common::errors::to_py;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn key_arg(key: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Bytes>> {
    let Some(k) = key else { return Ok(None) };
    if k.is_none() {
        return Ok(None);
    }
    let b = payload_of(k).map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "key must be bytes or str, not {}",
            k.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    check_key(&b)?;
    Ok(Some(b))
}

fn check_key(b: &[u8]) -> PyResult<()> {
    if b.len() > 255 {
        return Err(to_py(Error::invalid(format!(
            "a TANK key is at most 255 bytes, got {}",
            b.len()
        ))));
    }
    Ok(())
}

fn partition_arg(p: Option<i64>) -> PyResult<Option<u16>> {
    p.map(|v| {
        u16::try_from(v).map_err(|_| {
            to_py(Error::new(
                ErrorKind::PartitionNotFound,
                format!("partition must be from 0 to 65535, got {v}"),
            ))
        })
    })
    .transpose()
}

fn ts_arg(ts: Option<i64>) -> PyResult<u64> {
    match ts {
        None => Ok(now_ms()),
        Some(t) if t >= 0 => Ok(t as u64),
        Some(t) => Err(to_py(Error::invalid(format!(
            "timestamp must be milliseconds since the epoch (>= 0), got {t}"
        )))),
    }
}

/// One checked message of `send`'s arguments .
pub(crate) fn outgoing(
    value: &Bound<'_, PyAny>,
    key: Option<&Bound<'_, PyAny>>,
    partition: Option<i64>,
    timestamp: Option<i64>,
) -> PyResult<Outgoing> {
    Ok(Outgoing {
        partition: partition_arg(partition)?,
        msg: Pending {
            key: key_arg(key)?,
            ts: ts_arg(timestamp)?,
            value: payload_of(value)?,
        },
    })
}

/// The checked messages of `send_many`'s arguments and their payload bytes.
pub(crate) fn many_outgoing(
    values: &Bound<'_, PyAny>,
    keys: Option<&Bound<'_, PyAny>>,
    timestamps: Option<&Bound<'_, PyAny>>,
    partition: Option<i64>,
) -> PyResult<(Vec<Outgoing>, u64)> {
    let partition = partition_arg(partition)?;
    let vals = payloads(values)?;
    let n = vals.len();
    let keys = match keys {
        Some(k) => {
            let ks = payloads(k)?;
            if ks.len() != n {
                return Err(to_py(Error::invalid(format!(
                    "keys has {} entries for {n} values",
                    ks.len()
                ))));
            }
            for (k, _) in &ks {
                check_key(k)?;
            }
            Some(ks)
        }
        None => None,
    };
    let ts = crate::common::columns::opt_u64s(timestamps, n, "timestamps")?;
    let now = now_ms();
    let mut msgs = Vec::with_capacity(n);
    let mut bytes = 0u64;
    for (i, (value, null)) in vals.into_iter().enumerate() {
        if null {
            return Err(to_py(Error::invalid(format!(
                "values[{i}] is None: TANK messages always have a value"
            ))));
        }
        let key = keys
            .as_ref()
            .and_then(|k| (!k[i].1).then(|| k[i].0.clone()));
        let msg = Pending {
            key,
            ts: ts.as_ref().and_then(|t| t[i]).unwrap_or(now),
            value,
        };
        bytes += msg.size() as u64;
        msgs.push(Outgoing { partition, msg });
    }
    Ok((msgs, bytes))
}
