//! Runs user callbacks on one dispatcher thread per process, never on an I/O thread.
//!
//! Completions arrive from the engine as plain Rust values; the dispatcher attaches to the
//! interpreter once per batch of completions and calls the callbacks in order. An exception
//! raised by a callback is reported through `sys.unraisablehook` and kept on its producer so
//! the next `flush()`/`close()` raises it: it is never silently lost.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use streamwire_core::error::Result;
use streamwire_pulsar::message_id::MessageId;

use crate::common::errors::to_py;
use crate::common::untracked::untracked;
use crate::pulsar::message_id::PyMessageId;

/// Where a producer keeps the first exception its callbacks raised.
pub type ErrorSlot = Arc<Mutex<Option<PyErr>>>;

pub struct Job {
    pub callback: Py<PyAny>,
    pub result: Result<MessageId>,
    pub errors: ErrorSlot,
}

struct Dispatcher {
    pid: u32,
    tx: Sender<Job>,
}

static DISPATCHER: Mutex<Option<Dispatcher>> = Mutex::new(None);
static STOPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Queue a callback invocation (starting the dispatcher thread on first use in a process).
pub fn submit(job: Job) {
    if STOPPED.load(std::sync::atomic::Ordering::Acquire) {
        return;
    }
    let pid = std::process::id();
    let mut guard = DISPATCHER.lock().unwrap_or_else(|p| p.into_inner());
    let need_new = guard.as_ref().is_none_or(|d| d.pid != pid);
    if need_new {
        let (tx, rx) = channel();
        let spawned = std::thread::Builder::new()
            .name("streamwire-callbacks".into())
            .spawn(move || run(rx));
        if spawned.is_err() {
            return;
        }
        // A parent's dispatcher (after fork) is forgotten: its thread does not exist here.
        *guard = Some(Dispatcher { pid, tx });
    }
    if let Some(d) = guard.as_ref() {
        let _ = d.tx.send(job);
    }
}

/// Stop running callbacks (at interpreter exit, when attaching would no longer be safe).
pub fn stop() {
    STOPPED.store(true, std::sync::atomic::Ordering::Release);
}

fn run(rx: Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < 1024 {
            match rx.try_recv() {
                Ok(j) => batch.push(j),
                Err(_) => break,
            }
        }
        if STOPPED.load(std::sync::atomic::Ordering::Acquire) {
            // Leak the Python references: dropping them needs the interpreter.
            std::mem::forget(batch);
            continue;
        }
        Python::attach(|py| {
            for job in batch {
                let args = match job.result {
                    Ok(id) => (
                        py.None(),
                        untracked(py, PyMessageId::from(id)).map(|o| o.into_any().unbind()),
                    ),
                    Err(e) => (to_py(e).into_value(py).into_any(), Ok(py.None())),
                };
                let (err_obj, id_obj) = match args {
                    (e, Ok(id)) => (e, id),
                    (_, Err(e)) => {
                        e.write_unraisable(py, None);
                        continue;
                    }
                };
                if let Err(e) = job.callback.call1(py, (err_obj, id_obj)) {
                    e.clone_ref(py)
                        .write_unraisable(py, Some(job.callback.bind(py)));
                    let mut slot = job.errors.lock().unwrap_or_else(|p| p.into_inner());
                    if slot.is_none() {
                        *slot = Some(e);
                    }
                }
            }
        });
    }
}
