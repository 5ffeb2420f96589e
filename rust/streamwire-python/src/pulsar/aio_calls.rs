//! The awaitable forms of the Pulsar calls that wait on the network besides sends and
//! receives: seek, redelivery and last message ids (lookups: `two_faces!` in `client`).
//!
//! Each takes its arguments as the blocking call does (the parsing is shared: `seek_target`,
//! `single_last_id`, the topic parser) and runs the same engine call on the runtime through
//! `common::aio::spawn`, with the blocking call's time limit. Bad arguments raise at the call,
//! before any future exists.

use pyo3::prelude::*;

use crate::common::aio::{self, Value};
use crate::pulsar::aio_consumer::Held;
use crate::pulsar::consumer::{seek_target, single_last_id, Consumer, Handle, Reader};

impl Handle {
    fn aseek<'py>(
        &self,
        py: Python<'py>,
        what: &str,
        held: &Held,
        target: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let engine = self.live(what)?.clone();
        let t = seek_target(target)?;
        // Messages handed back by cancelled receives came before the seek: drop them.
        held.clear();
        let (fut, _) = aio::spawn(
            py,
            "seek",
            Some(self.op_timeout * 2),
            async move { engine.seek(t).await },
            |()| Value::None,
        )?;
        Ok(fut)
    }

    fn alast_ids<'py>(
        &self,
        py: Python<'py>,
        what: &str,
        one: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let e = self.live(what)?.clone();
        let timeout = Some(self.op_timeout * 2);
        let ids = async move { e.get_last_message_ids().await };
        let (fut, _) = if one {
            let f = async move { single_last_id(ids.await?) };
            aio::spawn(py, "get last message id", timeout, f, Value::Id)?
        } else {
            aio::spawn(py, "get last message id", timeout, ids, Value::Ids)?
        };
        Ok(fut)
    }
}

#[pymethods]
impl Consumer {
    /// `seek` as an awaitable; messages held for the next receive are dropped.
    fn _aseek<'py>(
        &self,
        py: Python<'py>,
        held: &Held,
        target: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.h.aseek(py, "consumer", held, target)
    }

    /// `redeliver_unacknowledged_messages` as an awaitable.
    fn _aredeliver_unacknowledged_messages<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let e = self.h.live("consumer")?.clone();
        let (fut, _) = aio::spawn(
            py,
            "redeliver",
            Some(self.h.op_timeout * 2),
            async move { e.redeliver_unacknowledged().await },
            |()| Value::None,
        )?;
        Ok(fut)
    }

    fn _aget_last_message_id<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.h.alast_ids(py, "consumer", true)
    }

    fn _aget_last_message_ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.h.alast_ids(py, "consumer", false)
    }
}

#[pymethods]
impl Reader {
    /// `seek` as an awaitable; messages held for the next read are dropped.
    fn _aseek<'py>(
        &self,
        py: Python<'py>,
        held: &Held,
        target: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.h.aseek(py, "reader", held, target)
    }

    fn _aget_last_message_id<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.h.alast_ids(py, "reader", true)
    }
}
