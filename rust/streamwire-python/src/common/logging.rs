//! Engine events into Python's `logging`, under the `streamwire` logger.
//!
//! The engine checks one atomic level before building anything (`streamwire_core::log`);
//! `streamwire._logging` keeps that level equal to the lowest level any `streamwire` logger
//! has enabled (re-read whenever a level changes), so a disabled level costs one load.
//! Records pass through a channel to one dispatcher thread, which attaches to the
//! interpreter once per batch: engine threads never wait for the interpreter lock.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple};

use streamwire_core::log::{self, Record};

struct Dispatcher {
    pid: u32,
    tx: Sender<Record>,
}

static DISPATCHER: Mutex<Option<Dispatcher>> = Mutex::new(None);
static EMIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn submit(record: Record) {
    let pid = std::process::id();
    let mut guard = DISPATCHER.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_none_or(|d| d.pid != pid) {
        let (tx, rx) = channel();
        let spawned = std::thread::Builder::new()
            .name("streamwire-logging".into())
            .spawn(move || run(rx));
        if spawned.is_err() {
            return;
        }
        *guard = Some(Dispatcher { pid, tx });
    }
    if let Some(d) = guard.as_ref() {
        let _ = d.tx.send(record);
    }
}

fn run(rx: Receiver<Record>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < 1024 {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        if crate::common::aio::stopped() {
            continue;
        }
        Python::attach(|py| {
            if let Err(e) = emit(py, batch) {
                e.write_unraisable(py, None);
            }
        });
    }
}

fn emit(py: Python<'_>, batch: Vec<Record>) -> PyResult<()> {
    let f = EMIT.get_or_try_init(py, || {
        py.import("streamwire._logging")?
            .getattr("_emit_many")
            .map(Bound::unbind)
    })?;
    let items = PyList::empty(py);
    for r in batch {
        let fields = PyDict::new(py);
        for (k, v) in r.fields {
            fields.set_item(k, v)?;
        }
        items.append(PyTuple::new(
            py,
            [
                (r.level as u8).into_pyobject(py)?.into_any(),
                r.target.into_pyobject(py)?.into_any(),
                r.message.into_pyobject(py)?.into_any(),
                fields.into_any(),
            ],
        )?)?;
    }
    f.call1(py, (items,))?;
    Ok(())
}

/// Which engine events to pass to Python: that level (a `logging` number) and above, or none.
#[pyfunction]
pub fn _set_log_level(level: Option<u8>) {
    log::set_sink(Box::new(submit));
    log::set_threshold(level);
}
