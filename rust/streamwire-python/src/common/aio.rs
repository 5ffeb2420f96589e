//! The asyncio bridge: engine futures and completions resolved into `asyncio.Future`s.
//!
//! A call made from a coroutine creates an `asyncio.Future` on the running loop and returns
//! it at once; the engine work runs on the process runtime (no thread per call, no polling).
//! When it finishes, the outcome (a plain Rust value, no interpreter needed) is queued for
//! one dispatcher thread, which attaches to the interpreter once per batch and hands every
//! completion of the batch that belongs to one loop to that loop with a single
//! `loop.call_soon_threadsafe(_resolve_many, items)`: 10,000 send receipts arriving together
//! cost one attach and one loop wake-up, not 10,000. I/O threads never wait for the
//! interpreter lock.
//!
//! Resolution happens on the loop's own thread (`streamwire.aio._bridge._resolve_many`), so
//! whether a future was cancelled is decided there, single-threaded: a receive whose future
//! was cancelled after the engine took its messages hands them back (see `Received`).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};

use streamwire_core::error::{Error, Result};
use streamwire_core::runtime;
use streamwire_pulsar::message_id::MessageId;

use crate::common::errors::to_py;
use crate::pulsar::message_id::PyMessageId;

/// Builds a Python value on the dispatcher thread.
pub type Builder = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// A value to resolve a future with, built on the dispatcher thread (interpreter attached).
pub enum Value {
    None,
    Id(MessageId),
    Ids(Vec<MessageId>),
    Build(Builder),
}

impl Value {
    fn into_py(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self {
            Value::None => Ok(py.None()),
            Value::Id(id) => Ok(Py::new(py, PyMessageId::from(id))?.into_any()),
            Value::Ids(ids) => {
                let objs = ids
                    .into_iter()
                    .map(|id| Py::new(py, PyMessageId::from(id)))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(PyList::new(py, objs)?.into_any().unbind())
            }
            Value::Build(f) => f(py),
        }
    }
}

/// The loop and the future one awaitable resolves.
pub struct Target {
    event_loop: Py<PyAny>,
    fut: Py<PyAny>,
}

struct Done {
    target: Target,
    outcome: Result<Value>,
}

struct Dispatcher {
    pid: u32,
    tx: Sender<Done>,
}

static DISPATCHER: Mutex<Option<Dispatcher>> = Mutex::new(None);
static STOPPED: AtomicBool = AtomicBool::new(false);
static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RESOLVE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// A new future on the running loop (a `RuntimeError` outside a coroutine, as asyncio's own).
pub fn new_future<'py>(py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Target)> {
    let get = GET_LOOP.get_or_try_init(py, || {
        py.import("asyncio")?
            .getattr("get_running_loop")
            .map(Bound::unbind)
    })?;
    let event_loop = get.bind(py).call0()?;
    let fut = event_loop.call_method0("create_future")?;
    let target = Target {
        event_loop: event_loop.unbind(),
        fut: fut.clone().unbind(),
    };
    Ok((fut, target))
}

/// A future already resolved with `value` (the fast path: the result was at hand).
pub fn ready<'py>(py: Python<'py>, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let (fut, _) = new_future(py)?;
    fut.call_method1("set_result", (value,))?;
    Ok(fut)
}

/// Resolve `target` with `outcome` from any thread; never waits for the interpreter.
pub fn complete(target: Target, outcome: Result<Value>) {
    if STOPPED.load(Ordering::Acquire) {
        // The interpreter is finalizing: the references cannot be dropped safely any more.
        std::mem::forget(target);
        std::mem::forget(outcome);
        return;
    }
    let pid = std::process::id();
    let mut guard = DISPATCHER.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_none_or(|d| d.pid != pid) {
        let (tx, rx) = channel();
        let spawned = std::thread::Builder::new()
            .name("streamwire-asyncio".into())
            .spawn(move || run(rx));
        if spawned.is_err() {
            return;
        }
        *guard = Some(Dispatcher { pid, tx });
    }
    if let Some(d) = guard.as_ref() {
        let _ = d.tx.send(Done { target, outcome });
    }
}

/// Run `fut` on the engine runtime and resolve a new future with its outcome (`timeout`:
/// `OperationTimeoutError` naming `what`). Returns the future and the task's abort handle.
pub fn spawn<'py, T, F>(
    py: Python<'py>,
    what: &'static str,
    timeout: Option<Duration>,
    fut: F,
    value: fn(T) -> Value,
) -> PyResult<(Bound<'py, PyAny>, tokio::task::AbortHandle)>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let handle = runtime::handle().map_err(to_py)?;
    let (pyfut, target) = new_future(py)?;
    let task = handle.spawn(async move {
        let res = match timeout {
            None => fut.await,
            Some(t) => match tokio::time::timeout(t, fut).await {
                Ok(r) => r,
                Err(_) => Err(Error::timeout(what)),
            },
        };
        // No await after this point: an abort can no longer drop the outcome.
        complete(target, res.map(value));
    });
    Ok((pyfut, task.abort_handle()))
}

/// Abort the engine task when its future is cancelled (a done-callback of the future).
#[pyclass(frozen, module = "streamwire._native")]
pub struct AbortOnCancel {
    handle: tokio::task::AbortHandle,
}

#[pymethods]
impl AbortOnCancel {
    fn __call__(&self, fut: &Bound<'_, PyAny>) -> PyResult<()> {
        if fut.call_method0("cancelled")?.is_truthy()? {
            self.handle.abort();
        }
        Ok(())
    }
}

/// Make cancelling `fut` abort `handle`'s task.
pub fn abort_on_cancel(fut: &Bound<'_, PyAny>, handle: tokio::task::AbortHandle) -> PyResult<()> {
    let cb = Py::new(fut.py(), AbortOnCancel { handle })?;
    fut.call_method1("add_done_callback", (cb,))?;
    Ok(())
}

/// An engine error as the exception object to set on a future.
pub fn exception(py: Python<'_>, e: Error) -> Py<PyAny> {
    to_py(e).into_value(py).into_any()
}

/// Whether the interpreter is finalizing (nothing may attach any more).
pub fn stopped() -> bool {
    STOPPED.load(Ordering::Acquire)
}

/// Stop resolving futures (at interpreter exit, when attaching is no longer safe).
pub fn stop() {
    STOPPED.store(true, Ordering::Release);
}

fn run(rx: Receiver<Done>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < 8192 {
            match rx.try_recv() {
                Ok(d) => batch.push(d),
                Err(_) => break,
            }
        }
        if STOPPED.load(Ordering::Acquire) {
            std::mem::forget(batch);
            continue;
        }
        Python::attach(|py| deliver(py, batch));
    }
}

/// Group a batch by loop and hand each group to its loop in one call.
fn deliver(py: Python<'_>, batch: Vec<Done>) {
    let resolve = match RESOLVE.get_or_try_init(py, || {
        py.import("streamwire.aio._bridge")?
            .getattr("_resolve_many")
            .map(Bound::unbind)
    }) {
        Ok(r) => r.bind(py).clone(),
        Err(e) => {
            e.write_unraisable(py, None);
            return;
        }
    };
    let mut groups: Vec<(Py<PyAny>, Vec<Py<PyAny>>)> = Vec::new();
    for done in batch {
        let Done { target, outcome } = done;
        let (exc, value) = match outcome.map(|v| v.into_py(py)) {
            Ok(Ok(v)) => (py.None(), v),
            Ok(Err(e)) => (e.into_value(py).into_any(), py.None()),
            Err(e) => (exception(py, e), py.None()),
        };
        let item = match PyTuple::new(py, [target.fut, exc, value]) {
            Ok(t) => t.into_any().unbind(),
            Err(e) => {
                e.write_unraisable(py, None);
                continue;
            }
        };
        match groups
            .iter_mut()
            .find(|(l, _)| l.as_ptr() == target.event_loop.as_ptr())
        {
            Some((_, items)) => items.push(item),
            None => groups.push((target.event_loop, vec![item])),
        }
    }
    for (event_loop, items) in groups {
        let sent = PyList::new(py, items).and_then(|list| {
            event_loop
                .bind(py)
                .call_method1("call_soon_threadsafe", (&resolve, list))
        });
        if let Err(e) = sent {
            // A closed loop: nobody awaits these futures any more.
            if !e.is_instance_of::<pyo3::exceptions::PyRuntimeError>(py) {
                e.write_unraisable(py, None);
            }
        }
    }
}
