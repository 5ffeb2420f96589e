//! `AioSendFuture`: what `streamwire.aio.Producer.send` returns, a future asyncio accepts
//! without being an `asyncio.Future`.
//!
//! asyncio takes any object whose class has `_asyncio_future_blocking` as a future
//! (`asyncio.isfuture`, `ensure_future` returns it as it is, so `gather` makes no Task for
//! it; a Task that gets it yielded registers its wake-up with `add_done_callback`). One
//! `asyncio.Future` per send costs more than the engine's whole send path, so a send
//! returns this object instead: the outcome is stored in it by the bridge's loop-side batch
//! (`common::aio::Resolve`, on the loop's thread), which then runs the registered callbacks
//! itself, each in its context (`run_callbacks`: what a `loop.call_soon(cb, fut,
//! context=ctx)` per callback would do, as asyncio's own future does, without a loop
//! `Handle` per callback). Awaiting a send whose receipt is already stored returns at once,
//! with no loop round trip.
//!
//! Cancelling a pending send only cancels the wait: the message was queued when `send()`
//! was called and is still sent (as with `asyncio.shield`); the receipt is then dropped.
//!
//! Collector tracking. A future is linked into the cyclic collector's lists only while it
//! can be part of a reference cycle: while it holds callbacks (the awaiting Task's wake-up
//! reaches the Task, its coroutine's frame and this future again), a failed send's exception
//! (its traceback reaches frames), or a cancel message. A new future, and one that finished
//! with its `MessageId` (an object with no Python reference in it), holds only its loop and
//! that id, so it is not tracked: the collector would walk thousands of live futures at every
//! young collection for nothing (callgrind on 20,000 sends awaited in order: about 1,400
//! instructions per send in the collector). A cycle through an untracked future would have to
//! pass through its loop, and a loop refers to a finished future only from a callback queued
//! with `call_soon` (run on its next iteration, dropped by `close()`).
//!
//! The state machine (`Slot`) is plain Rust; the pyclass around it does the Python calls.

use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use pyo3::{PyTraverseError, PyVisit};

use super::untracked::{set_tracked, TracksItself};

/// Where a future stands. `T`: a value or exception object; `M`: a cancel message.
#[derive(Debug, PartialEq)]
pub enum State<T, M> {
    Pending,
    Done(T),
    Failed(T),
    Cancelled(Option<M>),
}

/// A future's state and the callbacks waiting for it to finish (pure: no Python here).
#[derive(Debug)]
pub struct Slot<T, M, C> {
    state: State<T, M>,
    // The first callback inline: a gathered or awaited send has exactly one.
    first: Option<C>,
    more: Vec<C>,
}

impl<T, M, C> Default for Slot<T, M, C> {
    fn default() -> Self {
        Self {
            state: State::Pending,
            first: None,
            more: Vec::new(),
        }
    }
}

impl<T, M, C> Slot<T, M, C> {
    pub fn state(&self) -> &State<T, M> {
        &self.state
    }

    pub fn is_pending(&self) -> bool {
        matches!(self.state, State::Pending)
    }

    /// Finish with `state` (not `Pending`); the callbacks to run now, in the order they were
    /// added. `None` if it had already finished (the new state is dropped).
    pub fn finish(&mut self, state: State<T, M>) -> Option<Vec<C>> {
        if !self.is_pending() || matches!(state, State::Pending) {
            return None;
        }
        self.state = state;
        let mut out = Vec::with_capacity(usize::from(self.first.is_some()) + self.more.len());
        out.extend(self.first.take());
        out.append(&mut self.more);
        Some(out)
    }

    /// Register `cb`; given back if the future has finished (the caller runs it now).
    pub fn add(&mut self, cb: C) -> Option<C> {
        if !self.is_pending() {
            return Some(cb);
        }
        if self.first.is_none() && self.more.is_empty() {
            self.first = Some(cb);
        } else {
            self.more.push(cb);
        }
        None
    }

    /// Take every registered callback out (to compare them without holding the slot).
    pub fn take_callbacks(&mut self) -> Vec<C> {
        let mut out = Vec::new();
        out.extend(self.first.take());
        out.append(&mut self.more);
        out
    }

    /// The registered callbacks (for the garbage collector's walk).
    pub fn callbacks(&self) -> impl Iterator<Item = &C> {
        self.first.iter().chain(self.more.iter())
    }

    /// Empty the slot (the garbage collector breaking a cycle): the state becomes
    /// `Cancelled(None)`; the old state and the callbacks are handed back to be dropped.
    pub fn clear(&mut self) -> (State<T, M>, Vec<C>) {
        let state = std::mem::replace(&mut self.state, State::Cancelled(None));
        (state, self.take_callbacks())
    }

    /// Put callbacks back (after `take_callbacks`), before any added meanwhile.
    pub fn restore_callbacks(&mut self, mut cbs: Vec<C>) {
        cbs.extend(self.take_callbacks());
        self.more = cbs;
    }
}

/// A registered callback and the context it runs in.
pub type Callback = (Py<PyAny>, Py<PyAny>);

static CANCELLED_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static INVALID_STATE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static COPY_CONTEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn cached<'py>(
    py: Python<'py>,
    cell: &PyOnceLock<Py<PyAny>>,
    module: &str,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || py.import(module)?.getattr(name).map(Bound::unbind))
        .map(|o| o.bind(py).clone())
}

fn invalid_state(py: Python<'_>, what: &str) -> PyErr {
    match cached(py, &INVALID_STATE, "asyncio", "InvalidStateError") {
        Ok(cls) => match cls.call1((what,)) {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        },
        Err(e) => e,
    }
}

fn cancelled_error<'py>(py: Python<'py>, msg: Option<&Py<PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    let cls = cached(py, &CANCELLED_ERROR, "asyncio", "CancelledError")?;
    match msg {
        Some(m) => cls.call1((m,)),
        None => cls.call0(),
    }
}

/// The future of one ``streamwire.aio.Producer.send``: resolves to the message's
/// ``MessageId``. Not an ``asyncio.Future``, but asyncio takes it wherever a future goes
/// (``await``, ``gather``, ``wait``, ``wait_for``, ``as_completed``, ``shield``). Cancelling
/// it only stops the wait: the message was queued by ``send()`` and is still sent.
#[pyclass(module = "streamwire._native")]
pub struct AioSendFuture {
    event_loop: Py<PyAny>,
    slot: Slot<Py<PyAny>, Py<PyAny>, Callback>,
    /// asyncio's marker: True while a Task waits on this future.
    #[pyo3(get, set, name = "_asyncio_future_blocking")]
    blocking: bool,
    /// An exception nobody has looked at (logged if the future is dropped so).
    unseen_exception: bool,
}

// Every path that stores a callback, an exception or a cancel message tracks the future
// (`add_done_callback`, `settle`, `cancel`); it is untracked only when it holds its loop and
// at most a value with no Python reference in it (see the module note).
impl TracksItself for AioSendFuture {}

impl AioSendFuture {
    pub fn new(event_loop: Py<PyAny>) -> Self {
        Self {
            event_loop,
            slot: Slot::default(),
            blocking: false,
            unseen_exception: false,
        }
    }

    /// The loop this future belongs to.
    pub fn loop_ref(&self, py: Python<'_>) -> Py<PyAny> {
        self.event_loop.clone_ref(py)
    }

    /// A new future on `event_loop`, not tracked by the collector (it holds only the loop).
    pub fn create(py: Python<'_>, event_loop: Py<PyAny>) -> PyResult<Bound<'_, Self>> {
        let fut = Bound::new(py, Self::new(event_loop))?;
        set_tracked(&fut, false);
        Ok(fut)
    }

    /// Store the outcome (on the loop's thread); the callbacks to run now, in the order
    /// they were added (none if it was cancelled). The caller runs them with
    /// [`run_callbacks`] once the whole batch is stored. `acyclic`: a value that holds no
    /// Python reference (a `MessageId`, None), so the finished future can be untracked.
    pub fn settle(
        slf: &Bound<'_, Self>,
        outcome: Result<Py<PyAny>, Py<PyAny>>,
        acyclic: bool,
    ) -> Vec<Callback> {
        let failed = outcome.is_err();
        let state = match outcome {
            Ok(v) => State::Done(v),
            Err(e) => State::Failed(e),
        };
        let mut me = slf.borrow_mut();
        let Some(cbs) = me.slot.finish(state) else {
            return Vec::new();
        };
        me.unseen_exception = failed;
        drop(me);
        // The callbacks are out of the slot now: only the outcome can lead back here.
        set_tracked(slf, failed || !acyclic);
        cbs
    }
}

/// Run the callbacks of settled futures now, each in its context (`ctx.run(cb, fut)`), in
/// order. Called from the loop's own callback that stored a batch of outcomes (so on the
/// loop's thread, outside any Task): it does what one `call_soon(cb, fut, context=ctx)`
/// per callback would, without a loop `Handle` per callback (in a profile of 20,000
/// gathered sends those handles cost more than the whole engine send path). A callback's
/// exception goes to the loop's exception handler, as asyncio's `Handle` does;
/// `KeyboardInterrupt`/`SystemExit` propagate after the callbacks not yet run are
/// scheduled with `call_soon`, so none is lost.
pub fn run_callbacks(
    py: Python<'_>,
    event_loop: &Bound<'_, PyAny>,
    due: Vec<(Py<PyAny>, Vec<Callback>)>,
) -> PyResult<()> {
    let run = pyo3::intern!(py, "run");
    let mut rest = due.into_iter();
    while let Some((fut, cbs)) = rest.next() {
        let mut cbs = cbs.into_iter();
        while let Some((cb, ctx)) = cbs.next() {
            let Err(e) = ctx.bind(py).call_method1(run, (&cb, &fut)) else {
                continue;
            };
            if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py)
                || e.is_instance_of::<pyo3::exceptions::PySystemExit>(py)
            {
                let call_soon = event_loop.getattr(pyo3::intern!(py, "call_soon"))?;
                schedule(fut.bind(py), &call_soon, cbs.collect())?;
                for (f, more) in rest {
                    schedule(f.bind(py), &call_soon, more)?;
                }
                return Err(e);
            }
            let report = PyDict::new(py);
            report.set_item(
                "message",
                format!("Exception in callback {}", cb.bind(py).repr()?),
            )?;
            report.set_item("exception", e.into_value(py))?;
            report.set_item("future", &fut)?;
            event_loop.call_method1(pyo3::intern!(py, "call_exception_handler"), (report,))?;
        }
    }
    Ok(())
}

/// `call_soon(cb, fut, context=ctx)` for each callback, in order.
fn schedule(
    fut: &Bound<'_, PyAny>,
    call_soon: &Bound<'_, PyAny>,
    cbs: Vec<Callback>,
) -> PyResult<()> {
    let py = fut.py();
    for (cb, ctx) in cbs {
        let kwargs = PyDict::new(py);
        kwargs.set_item(pyo3::intern!(py, "context"), ctx)?;
        call_soon.call((cb, fut), Some(&kwargs))?;
    }
    Ok(())
}

#[pymethods]
impl AioSendFuture {
    /// The event loop this future belongs to.
    fn get_loop(&self, py: Python<'_>) -> Py<PyAny> {
        self.event_loop.clone_ref(py)
    }

    /// Whether the send's outcome is in (or the wait was cancelled).
    fn done(&self) -> bool {
        !self.slot.is_pending()
    }

    /// Whether the wait was cancelled (the message is still sent).
    fn cancelled(&self) -> bool {
        matches!(self.slot.state(), State::Cancelled(_))
    }

    /// The message's `MessageId`; raises the send's error, `CancelledError` if cancelled,
    /// `InvalidStateError` while pending.
    fn result(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.slot.state() {
            State::Pending => Err(invalid_state(py, "Result is not set.")),
            State::Done(v) => Ok(v.clone_ref(py)),
            State::Failed(e) => {
                let e = e.bind(py).clone();
                self.unseen_exception = false;
                Err(PyErr::from_value(e))
            }
            State::Cancelled(m) => Err(PyErr::from_value(cancelled_error(py, m.as_ref())?)),
        }
    }

    /// The send's error or None; `CancelledError` if cancelled, `InvalidStateError` while
    /// pending.
    fn exception(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.slot.state() {
            State::Pending => Err(invalid_state(py, "Exception is not set.")),
            State::Done(_) => Ok(py.None()),
            State::Failed(e) => {
                let e = e.clone_ref(py);
                self.unseen_exception = false;
                Ok(e)
            }
            State::Cancelled(m) => Err(PyErr::from_value(cancelled_error(py, m.as_ref())?)),
        }
    }

    /// Call `fn(self)` once the future is done (scheduled with ``loop.call_soon``).
    ///
    /// Args:
    ///     fn: the callback (a ``TypeError`` if it is not callable).
    ///     context: the ``contextvars.Context`` to run it in (default: the current one).
    #[pyo3(signature = (r#fn, *, context=None))]
    fn add_done_callback(
        slf: &Bound<'_, Self>,
        r#fn: Py<PyAny>,
        context: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        if !r#fn.bind(py).is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "add_done_callback: fn must be callable",
            ));
        }
        let ctx = match context {
            Some(c) if !c.is_none(py) => c,
            _ => cached(py, &COPY_CONTEXT, "contextvars", "copy_context")?
                .call0()?
                .unbind(),
        };
        let now = slf.borrow_mut().slot.add((r#fn, ctx));
        if now.is_none() {
            // Held until the outcome is in: the callback may lead back to this future.
            set_tracked(slf, true);
        }
        if let Some(cb) = now {
            let call_soon = slf
                .borrow()
                .event_loop
                .bind(py)
                .getattr(pyo3::intern!(py, "call_soon"))?;
            schedule(slf.as_any(), &call_soon, vec![cb])?;
        }
        Ok(())
    }

    /// Remove every registration of ``fn``; returns how many were removed.
    ///
    /// Args:
    ///     fn: the callback given to ``add_done_callback``.
    fn remove_done_callback(slf: &Bound<'_, Self>, r#fn: &Bound<'_, PyAny>) -> PyResult<usize> {
        let cbs = slf.borrow_mut().slot.take_callbacks();
        let mut kept = Vec::with_capacity(cbs.len());
        let mut removed = 0;
        let mut failure = None;
        for cb in cbs {
            match cb.0.bind(slf.py()).eq(r#fn) {
                Ok(true) => removed += 1,
                Ok(false) => kept.push(cb),
                Err(e) => {
                    kept.push(cb);
                    failure.get_or_insert(e);
                }
            }
        }
        slf.borrow_mut().slot.restore_callbacks(kept);
        match failure {
            Some(e) => Err(e),
            None => Ok(removed),
        }
    }

    /// Stop waiting: True if it was pending (callbacks are scheduled), else False. The
    /// message itself is still sent: it was queued when ``send()`` was called.
    ///
    /// Args:
    ///     msg: the ``CancelledError`` message. Default None.
    #[pyo3(signature = (msg=None))]
    fn cancel(slf: &Bound<'_, Self>, msg: Option<Py<PyAny>>) -> PyResult<bool> {
        let py = slf.py();
        let msg = msg.filter(|m| !m.is_none(py));
        let keeps_msg = msg.is_some();
        let cbs = slf.borrow_mut().slot.finish(State::Cancelled(msg));
        let Some(cbs) = cbs else {
            return Ok(false);
        };
        // The callbacks leave the slot here; only a cancel message stays in it.
        set_tracked(slf, keeps_msg);
        if !cbs.is_empty() {
            let call_soon = slf
                .borrow()
                .event_loop
                .bind(py)
                .getattr(pyo3::intern!(py, "call_soon"))?;
            schedule(slf.as_any(), &call_soon, cbs)?;
        }
        Ok(true)
    }

    /// The ``CancelledError`` to raise for a cancelled future (used by ``asyncio.gather``).
    fn _make_cancelled_error<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.slot.state() {
            State::Cancelled(m) => cancelled_error(py, m.as_ref()),
            _ => cancelled_error(py, None),
        }
    }

    /// The message given to ``cancel`` (None if none or not cancelled).
    #[getter]
    fn _cancel_message(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match self.slot.state() {
            State::Cancelled(Some(m)) => Some(m.clone_ref(py)),
            _ => None,
        }
    }

    fn __await__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Pending: mark the wait as blocking and yield this future to the Task. Done: end the
    /// await with the result (or raise the error).
    fn __next__(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let mut me = slf.borrow_mut();
        if me.slot.is_pending() {
            me.blocking = true;
            return Ok(slf.clone().into_any().unbind());
        }
        let value = me.result(py)?;
        // A ready-made `StopIteration` instance: a lazy error would be normalized (the
        // exception built through an argument tuple) on every await of a finished send.
        let stop = py.get_type::<PyStopIteration>().call1((value,))?;
        Err(PyErr::from_value(stop))
    }

    /// The references this future holds, for the cycle collector (a failed send's exception
    /// can point back at the future through its traceback; a callback through its closure).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.event_loop)?;
        match self.slot.state() {
            State::Done(v) | State::Failed(v) => visit.call(v)?,
            State::Cancelled(Some(m)) => visit.call(m)?,
            _ => {}
        }
        for (cb, ctx) in self.slot.callbacks() {
            visit.call(cb)?;
            visit.call(ctx)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.unseen_exception = false;
        drop(self.slot.clear());
    }

    fn __repr__(&self) -> &'static str {
        match self.slot.state() {
            State::Pending => "<AioSendFuture pending>",
            State::Done(_) => "<AioSendFuture finished>",
            State::Failed(_) => "<AioSendFuture finished with an exception>",
            State::Cancelled(_) => "<AioSendFuture cancelled>",
        }
    }
}

impl Drop for AioSendFuture {
    /// A failed send nobody awaited is reported through the loop's exception handler, as
    /// asyncio does for its own futures: a send never fails silently.
    fn drop(&mut self) {
        if !self.unseen_exception || super::aio::stopped() {
            return;
        }
        let State::Failed(e) = self.slot.state() else {
            return;
        };
        Python::attach(|py| {
            let report = || -> PyResult<()> {
                let ctx = PyDict::new(py);
                ctx.set_item(
                    "message",
                    "streamwire.aio send failed and was never awaited",
                )?;
                ctx.set_item("exception", e.bind(py))?;
                self.event_loop
                    .bind(py)
                    .call_method1("call_exception_handler", (ctx,))?;
                Ok(())
            };
            if let Err(err) = report() {
                err.write_unraisable(py, None);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type S = Slot<u32, &'static str, u32>;

    #[test]
    fn callbacks_run_once_in_order_when_finished() {
        let mut s = S::default();
        assert_eq!(s.add(1), None);
        assert_eq!(s.add(2), None);
        assert_eq!(s.add(3), None);
        assert_eq!(s.finish(State::Done(7)), Some(vec![1, 2, 3]));
        assert_eq!(s.state(), &State::Done(7));
        // A second outcome changes nothing; a late callback is handed back to run now.
        assert_eq!(s.finish(State::Failed(9)), None);
        assert_eq!(s.state(), &State::Done(7));
        assert_eq!(s.add(4), Some(4));
    }

    #[test]
    fn cancel_wins_over_a_later_outcome() {
        let mut s = S::default();
        s.add(1);
        assert_eq!(s.finish(State::Cancelled(Some("bye"))), Some(vec![1]));
        assert_eq!(s.finish(State::Done(1)), None);
        assert_eq!(s.state(), &State::Cancelled(Some("bye")));
    }

    #[test]
    fn clear_hands_back_state_and_callbacks() {
        let mut s = S::default();
        s.add(1);
        s.add(2);
        assert_eq!(s.callbacks().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(s.clear(), (State::Pending, vec![1, 2]));
        assert_eq!(s.callbacks().count(), 0);
        assert!(!s.is_pending());
        assert_eq!(s.finish(State::Done(3)), None);
    }

    #[test]
    fn pending_is_not_an_outcome() {
        let mut s = S::default();
        assert_eq!(s.finish(State::Pending), None);
        assert!(s.is_pending());
    }

    #[test]
    fn restore_keeps_order_and_later_additions() {
        let mut s = S::default();
        for i in 1..=4 {
            s.add(i);
        }
        let mut taken = s.take_callbacks();
        taken.retain(|c| *c != 2);
        s.add(5);
        s.restore_callbacks(taken);
        assert_eq!(s.finish(State::Done(0)), Some(vec![1, 3, 4, 5]));
    }
}
