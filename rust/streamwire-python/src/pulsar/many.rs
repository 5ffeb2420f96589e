//! The per-message options of a Pulsar `send_many` call (keys, event times, sequence ids,
//! properties), checked once for the whole call and applied to each message: the plain and
//! the schema-typed `send_many` share them.

use pyo3::prelude::*;

use streamwire_core::error::Error;
use streamwire_pulsar::engine::message::OutgoingMessage;

use crate::common::columns::{self, Props};
use crate::common::errors::to_py;

pub(crate) struct ManyOptions {
    pub keys: Option<Vec<Option<String>>>,
    event_times: Option<Vec<Option<u64>>>,
    sequence_ids: Option<Vec<Option<u64>>>,
    props: Props,
}

impl ManyOptions {
    /// Check every column against `n` messages (a wrong length or type fails the call
    /// before any message is built).
    pub fn parse(
        n: usize,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        event_times: Option<&Bound<'_, PyAny>>,
        sequence_ids: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let keys = columns::opt_strings(keys, n, "keys")?;
        let event_times = columns::opt_u64s(event_times, n, "event_times")?;
        let sequence_ids = columns::opt_u64s(sequence_ids, n, "sequence_ids")?;
        if let Some(s) = &sequence_ids {
            if s.iter().any(Option::is_none) {
                return Err(to_py(Error::invalid("sequence_ids must not contain None")));
            }
        }
        let props = columns::properties(properties, n)?;
        Ok(ManyOptions {
            keys,
            event_times,
            sequence_ids,
            props,
        })
    }

    /// Whether the caller gave the sequence ids.
    pub fn user_seq(&self) -> bool {
        self.sequence_ids.is_some()
    }

    /// Whether no column was given (then `apply` has nothing to do).
    pub fn is_empty(&self) -> bool {
        self.keys.is_none()
            && self.event_times.is_none()
            && self.sequence_ids.is_none()
            && matches!(self.props, Props::None)
    }

    /// Set message `i`'s key, event time, sequence id and properties.
    pub fn apply(&self, i: usize, m: &mut OutgoingMessage) {
        if let Some(k) = &self.keys {
            m.key = k[i].clone();
        }
        if let Some(t) = &self.event_times {
            m.event_time = t[i];
        }
        if let Some(s) = &self.sequence_ids {
            m.sequence_id = s[i].unwrap_or(0);
        }
        match &self.props {
            Props::None => {}
            Props::Same(p) => m.properties = p.clone(),
            Props::Each(v) => m.properties = v[i].clone(),
        }
    }
}
