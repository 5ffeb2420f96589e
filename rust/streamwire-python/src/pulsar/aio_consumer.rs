//! The awaitable side of `Consumer` and `Reader` (used by `streamwire.aio`), and the rule
//! that a cancelled receive loses nothing.
//!
//! A receive takes queued messages at once when there are any (an already-resolved future,
//! no runtime hop). Otherwise an engine task waits for messages; its messages travel to the
//! loop as a `Received`, still plain engine values. On the loop's thread the bridge either
//! builds the requested value (`Message`, list, or RecordBatch) for a live future, or, when
//! the future was cancelled meanwhile, moves the messages into the consumer's `Held` queue
//! (through the `orphan` callback the Python class passes), from which the next receive (or
//! a receive already waiting) takes them first. The engine's own `receive_many` takes nothing
//! unless it completes, so aborting the task of a cancelled receive loses nothing either.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

use streamwire_core::error::{Error, Result as EResult};
use streamwire_pulsar::consumer::queue::ByteBudget;
use streamwire_pulsar::consumer::ReceivedMessage;

use crate::common::aio::{self, Value};
use crate::common::blocking::timeout_arg;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::untracked::untracked_list;
use crate::pulsar::consumer::{receive_limits, Handle};
use crate::pulsar::message::{column_list, Message};
use crate::pulsar::schema::Typed;
use crate::pulsar::schema_arrow::typed_batch;

/// What a receive call asked for (lists and batches: at most so many messages and, if
/// given, so many payload bytes).
#[derive(Clone)]
pub(crate) enum Want {
    One,
    Many(usize, Option<usize>),
    Arrow(usize, Option<usize>, Vec<&'static str>),
}

impl Want {
    pub(crate) fn parse(
        kind: u8,
        max: i64,
        columns: Option<Vec<String>>,
        max_bytes: Option<i64>,
    ) -> PyResult<Want> {
        if kind == 0 {
            return Ok(Want::One);
        }
        let (max, bytes) = receive_limits(max, max_bytes)?;
        Ok(match kind {
            1 => Want::Many(max, bytes),
            _ => Want::Arrow(max, bytes, column_list(columns.as_deref())?),
        })
    }

    fn max(&self) -> usize {
        match self {
            Want::One => 1,
            Want::Many(n, _) | Want::Arrow(n, _, _) => *n,
        }
    }

    fn max_bytes(&self) -> Option<usize> {
        match self {
            Want::One => None,
            Want::Many(_, b) | Want::Arrow(_, b, _) => *b,
        }
    }

    /// The value for these messages (`One` needs exactly one).
    fn build(
        &self,
        py: Python<'_>,
        msgs: Vec<ReceivedMessage>,
        typed: Option<&Arc<Typed>>,
    ) -> PyResult<Py<PyAny>> {
        match self {
            Want::One => {
                let m = msgs
                    .into_iter()
                    .next()
                    .ok_or_else(|| to_py(Error::timeout("receive")))?;
                Ok(Py::new(py, Message::typed(m, typed.cloned()))?.into_any())
            }
            Want::Many(..) => Ok(untracked_list(
                py,
                msgs.into_iter().map(|m| Message::typed(m, typed.cloned())),
            )?
            .into_any()
            .unbind()),
            Want::Arrow(_, _, names) => {
                Ok(typed_batch(py, typed.map(|t| &**t), &msgs, names)?.unbind())
            }
        }
    }
}

/// Messages handed back by cancelled receives, taken first by the next receive.
#[pyclass(frozen, module = "streamwire._native")]
#[derive(Default)]
pub struct Held {
    q: Mutex<VecDeque<ReceivedMessage>>,
}

impl Held {
    /// What `want` may take of the held messages, oldest first (the same byte rule as the
    /// engine's receive).
    fn take(&self, want: &Want) -> Vec<ReceivedMessage> {
        let mut q = self.q.lock().unwrap_or_else(|p| p.into_inner());
        let n = ByteBudget::new(want.max_bytes()).fit(q.iter(), want.max());
        q.drain(..n).collect()
    }
}

#[pymethods]
impl Held {
    #[new]
    fn new() -> Self {
        Held::default()
    }

    /// Drop what is held (a seek moved the cursor: those messages are no longer next).
    fn clear(&self) {
        self.q.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    fn __len__(&self) -> usize {
        self.q.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Take held messages as `kind` (0 one, 1 list, 2 RecordBatch) wants; None if empty.
    #[pyo3(signature = (kind, max_messages, columns=None, max_bytes=None))]
    fn take_as(
        &self,
        py: Python<'_>,
        kind: u8,
        max_messages: i64,
        columns: Option<Vec<String>>,
        max_bytes: Option<i64>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let want = Want::parse(kind, max_messages, columns, max_bytes)?;
        let got = self.take(&want);
        if got.is_empty() {
            return Ok(None);
        }
        want.build(py, got, None).map(Some)
    }
}

/// Messages an engine task took for one receive, not yet turned into Python values.
#[pyclass(frozen, module = "streamwire._native")]
pub struct Received {
    msgs: Mutex<Option<Vec<ReceivedMessage>>>,
    want: Want,
    orphan: Py<PyAny>,
    typed: Option<Arc<Typed>>,
}

#[pymethods]
impl Received {
    /// The value for the receive's (live) future.
    fn value(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let msgs = self
            .msgs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default();
        self.want.build(py, msgs, self.typed.as_ref())
    }

    /// The receive was cancelled: give the messages to the consumer's `orphan` callback.
    fn orphan(slf: Bound<'_, Self>) -> PyResult<()> {
        let cb = slf.get().orphan.clone_ref(slf.py());
        cb.call1(slf.py(), (slf,))?;
        Ok(())
    }

    /// Move the messages (in order) to the back of `held`.
    fn move_into(&self, held: &Held) {
        let msgs = self
            .msgs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default();
        held.q
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(msgs);
    }
}

impl Handle {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn areceive<'py>(
        &self,
        py: Python<'py>,
        what: &str,
        held: &Held,
        want: Want,
        timeout: Option<f64>,
        orphan: Py<PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let t = timeout_arg("timeout", timeout).py_err()?;
        let engine = self.live(what)?;
        let (max, max_bytes) = (want.max(), want.max_bytes());
        let mut got = held.take(&want);
        if got.is_empty() {
            got = engine.try_receive_up_to(max, max_bytes).py_err()?;
        }
        let one = matches!(want, Want::One);
        if !got.is_empty() || (t == Some(Duration::ZERO) && !one) {
            return aio::ready(py, want.build(py, got, self.typed.as_ref())?.into_bound(py));
        }
        let e = engine.clone();
        let typed = self.typed.clone();
        let fut = async move {
            match t {
                None => e.receive_up_to(max, max_bytes).await,
                Some(t) => match tokio::time::timeout(t, e.receive_up_to(max, max_bytes)).await {
                    Ok(r) => r,
                    Err(_) if one => Err(Error::timeout("receive")),
                    Err(_) => Ok(Vec::new()),
                },
            }
        };
        let (pyfut, target) = aio::new_future(py)?;
        let handle = streamwire_core::runtime::handle().map_err(to_py)?;
        let task = handle.spawn(async move {
            let res: EResult<Vec<ReceivedMessage>> = fut.await;
            // No await after this point: once messages are taken, they reach the loop.
            aio::complete(
                target,
                res.map(|msgs| {
                    Value::Build(Box::new(move |py| {
                        Ok(Py::new(
                            py,
                            Received {
                                msgs: Mutex::new(Some(msgs)),
                                want,
                                orphan,
                                typed,
                            },
                        )?
                        .into_any())
                    }))
                }),
            );
        });
        aio::abort_on_cancel(&pyfut, task.abort_handle())?;
        Ok(pyfut)
    }

    pub(crate) fn aclose<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.engine.is_closed() || self.pid != streamwire_core::runtime::current_pid() {
            return aio::ready(py, py.None().into_bound(py));
        }
        let e = self.engine.clone();
        let (fut, _) = aio::spawn(
            py,
            "close",
            Some(self.op_timeout * 2),
            async move { e.close().await },
            |()| Value::None,
        )?;
        Ok(fut)
    }
}
