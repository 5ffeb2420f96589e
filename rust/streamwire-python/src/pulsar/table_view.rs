//! `Client.create_table_view` and the `TableView` class: the Python face of the engine's
//! `streamwire_pulsar::table_view` (a topic as a key → latest value map).
//!
//! The map lives in the engine and a Tokio task keeps it current, so `get` takes one short
//! lock and never waits on the interpreter, and the update loop never holds it. Values are
//! decoded at the read with the view's schema (`Typed`, as `Message.value`: each message
//! with the writer version it names), so a view of bytes costs one copy per `get`.
//!
//! `for_each_and_listen` / `listen` callbacks run on one thread per view, made by
//! `streamwire/_table_view.py` on the first listener. Why not the client's listener pool:
//! that pool serves consumers and readers (it takes from their receiver queues through their
//! own notifications and acknowledges nothing here), while a view's listeners are told about
//! changes of the map, after the map changed, in the order they were applied; one thread per
//! view keeps that order for every listener with no sharing rule to get wrong, and a view
//! nobody listens to starts no thread and queues nothing.

use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyList, PyTuple};

use streamwire_core::error::{Error, ErrorKind};
use streamwire_core::runtime;
use streamwire_pulsar::consumer::ReceivedMessage;
use streamwire_pulsar::table_view::{TableView as Engine, TableViewConfig};
use streamwire_pulsar::topic::TopicName;

use crate::common::blocking::wait;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::pulsar::client::Client;
use crate::pulsar::message::Message;
use crate::pulsar::schema::{codec_of, Typed};

/// A Pulsar topic read as a map from message key to the latest value (as the Java client's
/// `TableView`). Made by `Client.create_table_view`; thread-safe.
///
/// The view read the topic's compacted data and then every later message up to the last
/// one at creation; it keeps following the topic until `close`. A message with a key sets
/// that key; one with an empty payload (a null value) removes it; one without a key is
/// skipped. Values are decoded with the view's `schema` (bytes without one). After `close`
/// every read raises `AlreadyClosedError`.
#[pyclass(frozen, module = "streamwire._native")]
pub struct TableView {
    engine: Engine,
    typed: Option<Arc<Typed>>,
    pid: u32,
    op_timeout: Duration,
    /// The listener thread's state (`streamwire._table_view.Listeners`), made by the first
    /// listener.
    listeners: PyOnceLock<Py<PyAny>>,
}

crate::live_handle!(
    TableView,
    "TableView",
    "create the table view inside the worker process from a client made there"
);

fn callable(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<()> {
    if obj.is_callable() {
        Ok(())
    } else {
        Err(PyTypeError::new_err(format!(
            "{name} must be a callable taking (key, value), got {}",
            obj.get_type().name()?
        )))
    }
}

impl TableView {
    fn live(&self) -> PyResult<&Engine> {
        runtime::check_same_process(self.pid, "table view").py_err()?;
        if self.engine.is_closed() {
            return Err(to_py(Error::closed("table view")));
        }
        Ok(&self.engine)
    }

    fn value<'py>(&self, py: Python<'py>, m: &ReceivedMessage) -> PyResult<Bound<'py, PyAny>> {
        match &self.typed {
            Some(t) => t.decode(py, m),
            None => Ok(PyBytes::new(py, &m.payload).into_any()),
        }
    }

    fn message<'py>(&self, py: Python<'py>, m: ReceivedMessage) -> PyResult<Bound<'py, Message>> {
        Bound::new(py, Message::typed(m, self.typed.clone()))
    }

    fn listeners<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let l = slf.get().listeners.get_or_try_init(py, || {
            py.import("streamwire._table_view")?
                .getattr("Listeners")?
                .call1((slf,))
                .map(Bound::unbind)
        })?;
        Ok(l.bind(py).clone())
    }
}

impl Drop for TableView {
    fn drop(&mut self) {
        // A view dropped without close() must not keep reading the topic for ever.
        self.engine.abandon();
    }
}

/// The longest `auto_update_partitions_interval` accepted, in seconds (about 11.6 days).
const MAX_PARTITIONS_INTERVAL: f64 = 1_000_000.0;

/// An `auto_update_partitions_interval` argument (table views, producers, consumers,
/// readers): seconds between checks for partitions a topic gained, 0 for never. Bounded
/// above too: a huge period would overflow the timer's deadline (a panic, not an error) and
/// means "never", which 0 says.
pub(crate) fn partitions_interval(secs: f64) -> PyResult<Duration> {
    if !(0.0..=MAX_PARTITIONS_INTERVAL).contains(&secs) {
        return Err(to_py(Error::new(
            ErrorKind::Config,
            format!(
                "auto_update_partitions_interval must be a number of seconds from 0 to \
                 {MAX_PARTITIONS_INTERVAL}, got {secs}"
            ),
        )));
    }
    Ok(Duration::from_secs_f64(secs))
}

crate::two_faces! {
    impl Client {
        /// Read `topic` as a map from message key to its latest value (a `TableView`).
        ///
        /// Returns once the view has read every message the topic had when it was called
        /// (compacted data first: the reader reads compacted). All partitions of a
        /// partitioned topic are read. There is no time limit: a large topic takes as long
        /// as reading it takes (Ctrl-C interrupts the blocking call).
        ///
        /// Args:
        ///     topic: the topic to read.
        ///     schema: a `streamwire.schema` object the values are decoded with (declared to
        ///         the broker, which checks it against the topic's). Default None: bytes.
        ///     subscription_name: the reader's (non-durable) subscription name. Default
        ///         None: a random one.
        ///     receiver_queue_size: messages the broker may push ahead. Default 1000.
        ///     auto_update_partitions_interval: seconds between checks whether a partitioned
        ///         topic gained partitions (`admin topics update-partitioned-topic`); the new
        ///         partitions are read from their start, so their keys join the view without
        ///         re-creating it (Java's `autoUpdatePartitionsInterval`). Default 60; 0: never;
        ///         at most 1000000.
        ///
        /// Raises:
        ///     ConfigError: an empty `subscription_name`, a bad `receiver_queue_size`, or an
        ///         `auto_update_partitions_interval` outside 0..1000000 (or NaN).
        ///     IncompatibleSchemaError: `schema` does not match the topic's.
        #[pyo3(signature = (topic, *, schema=None, subscription_name=None,
                            receiver_queue_size=1000, auto_update_partitions_interval=60.0))]
        fn create_table_view / _acreate_table_view (
            &self,
            py,
            topic: &str,
            schema: Option<&Bound<'_, PyAny>>,
            subscription_name: Option<String>,
            receiver_queue_size: i64,
            auto_update_partitions_interval: f64,
        ) -> TableView {
            let client = self.live()?.clone();
            let t = TopicName::parse(topic).py_err()?;
            let codec = codec_of(schema)?;
            if !(1..=1_000_000).contains(&receiver_queue_size) {
                return Err(to_py(Error::new(
                    ErrorKind::Config,
                    format!(
                        "receiver_queue_size must be between 1 and 1000000, got \
                         {receiver_queue_size}"
                    ),
                )));
            }
            let auto_update_partitions = partitions_interval(auto_update_partitions_interval)?;
            if subscription_name.as_deref() == Some("") {
                return Err(to_py(Error::new(
                    ErrorKind::Config,
                    "subscription_name must not be empty",
                )));
            }
            let cfg = TableViewConfig {
                subscription: subscription_name,
                receiver_queue_size: receiver_queue_size as u32,
                schema: codec.as_ref().map(|c| c.info.to_proto()),
                auto_update_partitions,
            };
            let op_timeout = self.operation_timeout;
            Op::new("create table view", None, async move {
                let engine = Engine::create(&client, &t, cfg).await?;
                Ok(TableView {
                    engine,
                    typed: codec.map(|c| Typed::new(c, client.clone(), op_timeout * 2)),
                    pid: runtime::current_pid(),
                    op_timeout,
                    listeners: PyOnceLock::new(),
                })
            })
        }
    }
}

crate::two_faces! {
    impl TableView {
        /// Stop following the topic and close the view's reader. Idempotent. Later reads
        /// raise `AlreadyClosedError`. The listener thread is stopped and joined first (a
        /// listener call running now finishes; a listener closing its own view is not
        /// waited for), so no listener is called after `close` returns.
        fn close / _aclose (&self, py) -> () as none {
            self.engine.begin_close();
            if let Some(l) = self.listeners.get(py) {
                l.call_method0(py, "close")?;
            }
            let e = self.engine.clone();
            Op::new("close table view", Some(self.op_timeout), async move { e.close().await })
        }
    }
}

#[pymethods]
impl TableView {
    /// The topic the view reads.
    #[getter]
    fn topic(&self) -> &str {
        self.engine.topic()
    }

    /// The latest value of `key`, or None if the view has no such key.
    ///
    /// Args:
    ///     key: a message key.
    fn get<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.live()?.get(key).py_err()? {
            Some(m) => self.value(py, &m).map(Some),
            None => Ok(None),
        }
    }

    /// The keys, as a new list (in no particular order).
    fn keys(&self) -> PyResult<Vec<String>> {
        self.live()?.keys().py_err()
    }

    /// The values, as a new list (in the order of `keys()` at the same moment).
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let entries = self.live()?.entries().py_err()?;
        let out = PyList::empty(py);
        for (_, m) in &entries {
            out.append(self.value(py, m)?)?;
        }
        Ok(out)
    }

    /// The `(key, value)` pairs, as a new list.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let entries = self.live()?.entries().py_err()?;
        let out = PyList::empty(py);
        for (k, m) in &entries {
            out.append(PyTuple::new(
                py,
                [k.into_pyobject(py)?.into_any(), self.value(py, m)?],
            )?)?;
        }
        Ok(out)
    }

    /// Call `callback(key, value)` for every entry now in the view, in this thread. What the
    /// callback raises propagates.
    ///
    /// Args:
    ///     callback: a callable taking (key, value).
    fn for_each(&self, py: Python<'_>, callback: &Bound<'_, PyAny>) -> PyResult<()> {
        callable("callback", callback)?;
        for (k, m) in self.live()?.entries().py_err()? {
            callback.call1((k, self.value(py, &m)?))?;
        }
        Ok(())
    }

    /// Call `callback(key, value)` for every entry now in the view (in this thread, before
    /// returning), then for every later change, in the order the changes were applied, on
    /// the view's listener thread. A removed key is reported with the value None. What the
    /// callback raises there is logged (logger `streamwire`) and the next change comes.
    ///
    /// Args:
    ///     callback: a callable taking (key, value).
    fn for_each_and_listen(slf: &Bound<'_, Self>, callback: &Bound<'_, PyAny>) -> PyResult<()> {
        callable("callback", callback)?;
        slf.get().live()?;
        Self::listeners(slf)?.call_method1("add", (callback, true))?;
        Ok(())
    }

    /// Call `callback(key, value)` for every later change (not for the entries already in
    /// the view), on the view's listener thread, as `for_each_and_listen`.
    ///
    /// Args:
    ///     callback: a callable taking (key, value).
    fn listen(slf: &Bound<'_, Self>, callback: &Bound<'_, PyAny>) -> PyResult<()> {
        callable("callback", callback)?;
        slf.get().live()?;
        Self::listeners(slf)?.call_method1("add", (callback, false))?;
        Ok(())
    }

    /// Start queueing changes for the listener thread: the number of the last change
    /// applied and the entries as of then, as `(key, Message)` pairs.
    fn _listen<'py>(&self, py: Python<'py>) -> PyResult<(u64, Bound<'py, PyList>)> {
        let (seq, entries) = self.live()?.listen().py_err()?;
        let out = PyList::empty(py);
        for (k, m) in entries {
            out.append((k, self.message(py, m)?))?;
        }
        Ok((seq, out))
    }

    /// The changes queued for the listener thread as `(seq, key, Message or None)`, waiting
    /// up to `timeout` seconds (interpreter released) for one; None once the view is closed.
    /// Raises the reader's error if it stopped following the topic.
    fn _take_updates<'py>(
        &self,
        py: Python<'py>,
        timeout: f64,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let mut ups = self.engine.take_updates();
        if ups.is_empty() && !self.engine.is_closed() {
            let e = self.engine.clone();
            let slice = Duration::from_secs_f64(timeout.clamp(0.0, 3600.0));
            wait(py, "table view updates", None, async move {
                let _ = tokio::time::timeout(slice, e.wait_updates()).await;
                Ok(())
            })?;
            ups = self.engine.take_updates();
        }
        if self.engine.is_closed() {
            return Ok(None);
        }
        if ups.is_empty() {
            if let Some(err) = self.engine.error() {
                return Err(to_py(err));
            }
        }
        let out = PyList::empty(py);
        for u in ups {
            let m = match u.value {
                Some(m) => Some(self.message(py, m)?),
                None => None,
            };
            out.append((u.seq, u.key, m))?;
        }
        Ok(Some(out))
    }

    fn __len__(&self) -> PyResult<usize> {
        self.live()?.len().py_err()
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let e = self.live()?;
        match key.extract::<String>() {
            Ok(k) => e.contains(&k).py_err(),
            Err(_) => Ok(false), // as a dict of str keys answers for any other object
        }
    }

    /// Iterate over a snapshot of the keys.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let keys = self.live()?.keys().py_err()?;
        PyList::new(py, keys)?.try_iter().map(Bound::into_any)
    }

    fn __repr__(&self) -> String {
        let state = if self.engine.is_closed() {
            "closed"
        } else {
            "open"
        };
        format!("<streamwire.TableView {:?} {state}>", self.engine.topic())
    }
}
