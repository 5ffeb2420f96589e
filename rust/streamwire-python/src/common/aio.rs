//! The asyncio bridge: engine futures and completions resolved into `asyncio.Future`s.
//!
//! A call made from a coroutine creates an `asyncio.Future` on the running loop (a send: the
//! lighter `AioSendFuture` of `common::aio_future`) and returns it at once; the engine work
//! runs on the process runtime (no thread per call, no polling).
//! When it finishes, the outcome (a plain Rust value, no interpreter needed) is queued for
//! one dispatcher thread, which attaches to the interpreter once per batch and hands every
//! completion of the batch that belongs to one loop to that loop with a single
//! `loop.call_soon_threadsafe(resolve)`: 10,000 send receipts arriving together cost one
//! attach and one loop wake-up, not 10,000. I/O threads never wait for the interpreter lock.
//!
//! The dispatcher builds no Python objects: `Resolve` carries the plain outcomes, and the
//! loop's own thread makes the values (`MessageId`s, ...) and resolves the futures. So
//! whether a future was cancelled is decided there, single-threaded: a receive whose future
//! was cancelled after the engine took its messages hands them back (see `Received`).

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use streamwire_core::error::{Error, Result};
use streamwire_core::runtime;
use streamwire_pulsar::message_id::MessageId;

use crate::common::aio_future::{run_callbacks, AioSendFuture};
use crate::common::errors::to_py;
use crate::common::untracked::{untracked, untracked_list};
use crate::pulsar::aio_consumer::Received;
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
            Value::Id(id) => Ok(untracked(py, PyMessageId::from(id))?.into_any().unbind()),
            Value::Ids(ids) => Ok(untracked_list(py, ids.into_iter().map(PyMessageId::from))?
                .into_any()
                .unbind()),
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

/// The dispatcher thread of this process and the outcomes waiting for it. A plain vector
/// under the lock every `complete` takes anyway, not a channel: a receipt costs one push,
/// and the dispatcher takes everything queued in one swap (callgrind, 20,000 sends awaited
/// in order: the channel's send, receive and batch building were about 300 instructions a
/// receipt).
struct Dispatcher {
    pid: u32,
    queue: Vec<Done>,
}

static DISPATCHER: Mutex<Option<Dispatcher>> = Mutex::new(None);
/// Signalled when `Dispatcher::queue` goes from empty to not empty.
static QUEUED: Condvar = Condvar::new();
static STOPPED: AtomicBool = AtomicBool::new(false);
/// Set while the dispatcher is in `deliver` (holding the interpreter, or waiting to take it
/// back after `call_soon_threadsafe` released it to write to the loop's wake-up socket).
static DELIVERING: AtomicBool = AtomicBool::new(false);
static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

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

/// A send's future (`AioSendFuture`, not an `asyncio.Future`) on the running loop.
pub fn new_send_future<'py>(py: Python<'py>) -> PyResult<(Bound<'py, AioSendFuture>, Target)> {
    let get = GET_LOOP.get_or_try_init(py, || {
        py.import("asyncio")?
            .getattr("get_running_loop")
            .map(Bound::unbind)
    })?;
    let event_loop = get.bind(py).call0()?.unbind();
    let fut = AioSendFuture::create(py, event_loop.clone_ref(py))?;
    let target = Target {
        event_loop,
        fut: fut.clone().into_any().unbind(),
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
    // The pid the fork hook keeps current (see `check_same_process`) instead of a `getpid`
    // system call per receipt; 0 until an awaited call has checked its process once.
    let pid = match PID.load(Ordering::Acquire) {
        0 => std::process::id(),
        p => p,
    };
    let mut guard = DISPATCHER.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_none_or(|d| d.pid != pid) {
        let spawned = std::thread::Builder::new()
            .name("streamwire-asyncio".into())
            .spawn(move || run(pid));
        if spawned.is_err() {
            return;
        }
        // A forked child's copy of the parent's queue: the parent's futures, not this
        // process's to release.
        if let Some(old) = guard.replace(Dispatcher {
            pid,
            queue: Vec::new(),
        }) {
            std::mem::forget(old.queue);
        }
    }
    if let Some(d) = guard.as_mut() {
        let wake = d.queue.is_empty();
        d.queue.push(Done { target, outcome });
        drop(guard);
        if wake {
            QUEUED.notify_one();
        }
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

/// This process's id, refreshed in a forked child by an `os.register_at_fork` hook (0: not
/// yet known). `getpid` is a system call; an awaited send checks the process on every call.
static PID: AtomicU32 = AtomicU32::new(0);

/// Fail with `ForkedProcess` if a handle made in `owner_pid` is used in another process, as
/// `runtime::check_same_process` but without a system call per check.
pub fn check_same_process(py: Python<'_>, owner_pid: u32, what: &str) -> PyResult<()> {
    let mut pid = PID.load(Ordering::Acquire);
    if pid == 0 {
        let hook = pyo3::types::PyCFunction::new_closure(py, None, None, |_, _| {
            PID.store(std::process::id(), Ordering::Release);
        })?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("after_in_child", hook)?;
        py.import("os")?
            .getattr("register_at_fork")?
            .call((), Some(&kwargs))?;
        pid = std::process::id();
        PID.store(pid, Ordering::Release);
    }
    if pid == owner_pid {
        Ok(())
    } else {
        // The slow check makes the error (and is right even if a fork skipped the hook).
        runtime::check_same_process(owner_pid, what).map_err(to_py)
    }
}

/// Whether the interpreter is finalizing (nothing may attach any more).
pub fn stopped() -> bool {
    STOPPED.load(Ordering::Acquire)
}

/// Stop resolving futures (at interpreter exit, when attaching is no longer safe).
pub fn stop() {
    STOPPED.store(true, Ordering::SeqCst);
}

/// At exit, with the interpreter held: stop, then let a delivery in progress end before the
/// interpreter finalizes. Why: a program whose last await was resolved by the dispatcher can
/// reach exit while the dispatcher waits to take the interpreter back inside
/// `call_soon_threadsafe`; taking it during finalization ends the thread with a forced
/// unwind through Rust frames, which aborts the process. Waiting here (interpreter
/// released) lets that call return first; bounded, so exit never hangs.
pub fn stop_and_drain(py: Python<'_>) {
    stop();
    py.detach(|| {
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while DELIVERING.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// The dispatcher of process `pid`: takes every queued outcome at once, hands it over.
fn run(pid: u32) {
    loop {
        let mut guard = DISPATCHER.lock().unwrap_or_else(|p| p.into_inner());
        let batch = loop {
            match guard.as_mut() {
                Some(d) if d.pid == pid => {
                    if !d.queue.is_empty() {
                        // Room for as many again: the next burst pushes without regrowing.
                        let room = Vec::with_capacity(d.queue.len());
                        break std::mem::replace(&mut d.queue, room);
                    }
                }
                // Not reached: the entry is set before this thread can lock it, and only a
                // forked child (which has no copy of this thread) replaces it.
                _ => return,
            }
            guard = QUEUED.wait(guard).unwrap_or_else(|p| p.into_inner());
        };
        drop(guard);
        // Set before STOPPED is read (both SeqCst): `stop_and_drain` then either sees this
        // delivery and waits for it, or this thread sees STOPPED and does not attach.
        DELIVERING.store(true, Ordering::SeqCst);
        if STOPPED.load(Ordering::SeqCst) {
            DELIVERING.store(false, Ordering::SeqCst);
            std::mem::forget(batch);
            continue;
        }
        Python::attach(|py| deliver(py, batch));
        DELIVERING.store(false, Ordering::SeqCst);
    }
}

/// Group a batch by loop and hand each group to its loop in one call. Nothing is built
/// here: the Python values are made on the loop's thread (`Resolve`), so this thread holds
/// the interpreter only for the `call_soon_threadsafe` calls.
fn deliver(py: Python<'_>, batch: Vec<Done>) {
    let mut groups: Vec<(Py<PyAny>, Outcomes)> = Vec::new();
    for Done { target, outcome } in batch {
        let Target { event_loop, fut } = target;
        match groups
            .iter_mut()
            .find(|(l, _)| l.as_ptr() == event_loop.as_ptr())
        {
            Some((_, items)) => items.push((fut, outcome)),
            None => groups.push((event_loop, vec![(fut, outcome)])),
        }
    }
    let name = pyo3::intern!(py, "call_soon_threadsafe");
    for (event_loop, items) in groups {
        let sent = Py::new(
            py,
            Resolve {
                items: Mutex::new(items),
            },
        )
        .and_then(|r| event_loop.bind(py).call_method1(name, (r,)));
        if let Err(e) = sent {
            // A closed loop: nobody awaits these futures any more.
            if !e.is_instance_of::<pyo3::exceptions::PyRuntimeError>(py) {
                e.write_unraisable(py, None);
            }
        }
    }
}

/// One batch of outcomes for one loop, resolved when the loop calls it (on its own thread,
/// so whether a future was cancelled has a stable answer there).
#[pyclass(frozen, module = "streamwire._native")]
struct Resolve {
    items: Mutex<Outcomes>,
}

/// Futures with the outcomes to resolve them with.
type Outcomes = Vec<(Py<PyAny>, Result<Value>)>;

#[pymethods]
impl Resolve {
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let items = std::mem::take(&mut *self.items.lock().unwrap_or_else(|p| p.into_inner()));
        // Every outcome of the batch is stored first; the sends' callbacks (their awaiting
        // Tasks, `gather`...) run after, from here (see `aio_future::run_callbacks`).
        let mut due = Vec::new();
        let mut event_loop: Option<Py<PyAny>> = None;
        for (fut, outcome) in items {
            let res = match fut.bind(py).cast::<AioSendFuture>() {
                Ok(send) => {
                    // A send's value is a `MessageId` (or None): nothing in it can lead back.
                    let acyclic = matches!(outcome, Ok(Value::Id(_) | Value::None));
                    let cbs = AioSendFuture::settle(send, send_outcome(py, outcome), acyclic);
                    if !cbs.is_empty() {
                        event_loop.get_or_insert_with(|| send.borrow().loop_ref(py));
                        due.push((fut.clone_ref(py), cbs));
                    }
                    Ok(())
                }
                Err(_) => resolve_one(py, fut.bind(py), outcome),
            };
            if let Err(e) = res {
                e.write_unraisable(py, Some(fut.bind(py)));
            }
        }
        match event_loop {
            Some(l) => run_callbacks(py, l.bind(py), due),
            None => Ok(()),
        }
    }
}

/// A send's outcome as the value or exception object its future stores.
fn send_outcome(py: Python<'_>, outcome: Result<Value>) -> Result<Py<PyAny>, Py<PyAny>> {
    match outcome.map(|v| v.into_py(py)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.into_value(py).into_any()),
        Err(e) => Err(exception(py, e)),
    }
}

/// Resolve one future; a receive's messages whose future is already done (cancelled) go
/// back to their consumer (`Received.orphan`) instead of being dropped.
fn resolve_one(py: Python<'_>, fut: &Bound<'_, PyAny>, outcome: Result<Value>) -> PyResult<()> {
    let done = fut.call_method0(pyo3::intern!(py, "done"))?.is_truthy()?;
    match outcome.map(|v| v.into_py(py)) {
        Ok(Ok(value)) => {
            if !done {
                fut.call_method1(pyo3::intern!(py, "set_result"), (value,))?;
            } else if value.bind(py).is_instance_of::<Received>() {
                value.bind(py).call_method0(pyo3::intern!(py, "orphan"))?;
            }
        }
        Ok(Err(e)) if !done => {
            fut.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),))?;
        }
        Err(e) if !done => {
            fut.call_method1(pyo3::intern!(py, "set_exception"), (exception(py, e),))?;
        }
        _ => {}
    }
    Ok(())
}
