//! Message listeners (`subscribe(message_listener=)`, `create_reader(reader_listener=)`): the
//! native half.
//!
//! The pool of listener threads is Python (`streamwire/_listeners.py`): calling the listener,
//! logging what it raises and the thread bookkeeping (start, stop, join, fork) are simplest
//! where the listener lives. What must be native is here:
//!
//! - [`Listening`], the state a consumer or reader with a listener carries: the callable, the
//!   paused flag, the count of listener errors and the lane that serves it;
//! - [`ListenerLane`] (`_native._ListenerLane`), one per pool thread: `wait` blocks with the
//!   interpreter released until one of the thread's consumers has messages (or is closed or
//!   failed), or until the lane is woken (a consumer added, resumed or closed; the pool
//!   stopping). It waits on the consumers' own receive notifications at once, so an idle
//!   thread costs nothing and a message wakes it at once: no polling, no time slices;
//! - [`Adopt`], the value `subscribe` / `create_reader` return on both faces: converting it to
//!   the Python object hands the new consumer to its client's pool, so no message arrives
//!   before the listener is in place and nothing can subscribe a listener without a pool.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Poll;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::PyClass;
use tokio::sync::Notify;

use streamwire_core::error::{Error, ErrorKind};
use streamwire_core::runtime;
use streamwire_pulsar::consumer::Consumer as Engine;

use crate::common::blocking::timeout_arg;
use crate::common::errors::{to_py, IntoPyResult};
use crate::pulsar::consumer::{Consumer, Handle, Reader};

/// What a consumer or reader with a listener carries.
pub(crate) struct Listening {
    /// `listener(consumer, message)`.
    pub(crate) callback: Py<PyAny>,
    paused: AtomicBool,
    /// Calls of the listener that raised (each logged by the pool).
    errors: AtomicU64,
    /// The lane (pool thread) serving this consumer, set once when the pool adopts it.
    lane: OnceLock<Arc<Notify>>,
}

impl Listening {
    /// The listener of an option (`name` in errors): None, or a callable.
    pub(crate) fn from_arg(name: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Self>> {
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Ok(None);
        };
        if !obj.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "{name} must be a callable taking (consumer, message), got {}",
                obj.get_type().name()?
            )));
        }
        Ok(Some(Listening {
            callback: obj.clone().unbind(),
            paused: AtomicBool::new(false),
            errors: AtomicU64::new(0),
            lane: OnceLock::new(),
        }))
    }

    /// Let the serving thread look at this consumer again (resumed, closed).
    pub(crate) fn wake(&self) {
        if let Some(n) = self.lane.get() {
            n.notify_one();
        }
    }

    pub(crate) fn pause(&self, paused: bool) {
        self.paused.store(paused, Ordering::Release);
        if !paused {
            self.wake();
        }
    }

    pub(crate) fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    pub(crate) fn failed(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Acquire)
    }
}

/// The error of a call a consumer with a listener refuses (the official client raises
/// `InvalidConfiguration` there).
pub(crate) fn has_listener(what: &str) -> PyErr {
    to_py(Error::new(
        ErrorKind::Config,
        format!(
            "this {what} has a listener: its messages go to the listener and cannot also be \
             received (receive calls and iteration are not allowed)"
        ),
    ))
}

/// The `Handle` of a `Consumer` or `Reader` object.
fn handle_of<'a>(obj: &'a Bound<'_, PyAny>) -> PyResult<&'a Handle> {
    if let Ok(c) = obj.cast::<Consumer>() {
        return Ok(&c.get().h);
    }
    if let Ok(r) = obj.cast::<Reader>() {
        return Ok(&r.get().h);
    }
    Err(PyTypeError::new_err(format!(
        "expected a Consumer or a Reader, got {}",
        obj.get_type().name()?
    )))
}

/// One listener thread's wait: its consumers' receive notifications and its own wake-up.
#[pyclass(frozen, module = "streamwire._native", name = "_ListenerLane")]
pub struct ListenerLane {
    notify: Arc<Notify>,
}

#[pymethods]
impl ListenerLane {
    #[new]
    fn new() -> Self {
        ListenerLane {
            notify: Arc::new(Notify::new()),
        }
    }

    /// Make this lane the one that serves `handle` (a Consumer or Reader with a listener):
    /// its resume and close wake this lane from then on.
    fn adopt(&self, handle: &Bound<'_, PyAny>) -> PyResult<()> {
        let h = handle_of(handle)?;
        let l = h
            .listening
            .as_ref()
            .ok_or_else(|| to_py(Error::invalid("this consumer or reader has no listener")))?;
        l.lane
            .set(self.notify.clone())
            .map_err(|_| to_py(Error::invalid("this consumer or reader is already served")))
    }

    /// Wake the thread waiting in `wait` (or the next `wait`, at once: the wake-up is kept).
    fn wake(&self) {
        self.notify.notify_one();
    }

    /// Wait, with the interpreter released, until one of `handles` is ready (messages queued,
    /// closed, or failed), the lane is woken, or `timeout` seconds pass; the indices of the
    /// ready handles (empty when only woken or timed out). Takes no message.
    ///
    /// Args:
    ///     handles: the Consumers / Readers to wait on.
    ///     timeout: seconds to wait at most; None waits until ready or woken. Default None.
    #[pyo3(signature = (handles, timeout=None))]
    fn wait(
        &self,
        py: Python<'_>,
        handles: Vec<Bound<'_, PyAny>>,
        timeout: Option<f64>,
    ) -> PyResult<Vec<usize>> {
        let t = timeout_arg("timeout", timeout).py_err()?;
        let engines = handles
            .iter()
            .map(|h| handle_of(h).map(|h| h.engine.clone()))
            .collect::<PyResult<Vec<Engine>>>()?;
        // Ready already: no runtime round trip (the pool asks again after every turn).
        let ready = ready_indices(&engines);
        if !ready.is_empty() {
            return Ok(ready);
        }
        let rt = runtime::handle().map_err(to_py)?;
        let notify = self.notify.clone();
        Ok(py.detach(move || {
            rt.block_on(async move {
                let woken = notify.notified();
                let either = async {
                    tokio::select! {
                        _ = woken => {}
                        _ = any_ready(&engines) => {}
                    }
                };
                match t {
                    Some(t) => {
                        let _ = tokio::time::timeout(t, either).await;
                    }
                    None => either.await,
                }
                ready_indices(&engines)
            })
        }))
    }
}

fn ready_indices(engines: &[Engine]) -> Vec<usize> {
    engines
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_ready())
        .map(|(i, _)| i)
        .collect()
}

/// Completes when any of `engines` is ready; never when there are none.
async fn any_ready(engines: &[Engine]) {
    type Wait<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;
    let mut waits: Vec<Wait<'_>> = engines
        .iter()
        .map(|e| Box::pin(e.wait_ready()) as Wait<'_>)
        .collect();
    std::future::poll_fn(|cx| {
        // Every wait is polled so every one registers its waker.
        let mut ready = false;
        for w in waits.iter_mut() {
            ready |= w.as_mut().poll(cx).is_ready();
        }
        if ready {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// A new `Consumer` / `Reader` and, when it has a listener, its client's pool: building the
/// Python object hands the object to the pool (on the caller's thread for the blocking face,
/// on the loop's for the awaitable one).
pub(crate) struct Adopt<T> {
    pub(crate) obj: T,
    pub(crate) pool: Option<Py<PyAny>>,
}

impl<'py, T> IntoPyObject<'py> for Adopt<T>
where
    T: PyClass + Into<PyClassInitializer<T>>,
{
    type Target = T;
    type Output = Bound<'py, T>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, T>> {
        let b = Bound::new(py, self.obj)?;
        if let Some(pool) = self.pool {
            if let Err(e) = pool.bind(py).call_method1("adopt", (b.clone(),)) {
                // Not served, so not kept open: its messages go back to the broker.
                let _ = b.as_any().call_method0("close");
                return Err(e);
            }
        }
        Ok(b)
    }
}
