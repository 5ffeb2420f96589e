//! `streamwire.tank.Client`'s native half: one engine client per Python client, its
//! administrative calls, and the factories of producers and consumers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use streamwire_core::budget::MemoryBudget;
use streamwire_core::error::{Error, ErrorKind};
use streamwire_core::runtime;
use streamwire_tank::client::{ClientConfig, TankClient};
use streamwire_tank::codec::StatusResponse;
use streamwire_tank::consumer::{Consumer, ConsumerConfig, OnOutOfRange, Start};
use streamwire_tank::producer::{BatchLimits, CompressionChoice, Producer, ProducerConfig};

use crate::common::blocking::{count_arg, positive_secs};
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::tank::consumer::TankConsumer;
use crate::tank::producer::TankProducer;

const PICKLE_HINT: &str = "pass the service URL and options instead and create the client \
    inside the worker";

/// A connection to a TANK broker. Thread-safe; create one per process and share it.
#[pyclass(frozen, name = "TankClient", module = "streamwire._native")]
pub struct TankNativeClient {
    pub(crate) inner: TankClient,
    pub(crate) pid: u32,
    closed: AtomicBool,
    pub(crate) budget: MemoryBudget,
    service_url: String,
}

crate::live_handle!(TankNativeClient, "TANK Client", PICKLE_HINT);

impl TankNativeClient {
    pub(crate) fn live(&self) -> PyResult<&TankClient> {
        runtime::check_same_process(self.pid, "TANK client").py_err()?;
        if self.closed.load(Ordering::Acquire) {
            return Err(to_py(Error::closed("TANK client")));
        }
        Ok(&self.inner)
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.inner.config().operation_timeout
    }
}

pub(crate) fn topic_arg(topic: &str) -> PyResult<()> {
    if topic.is_empty() || topic.len() > 64 {
        return Err(to_py(Error::invalid(format!(
            "a TANK topic name must be 1 to 64 bytes long, got {} bytes",
            topic.len()
        ))));
    }
    Ok(())
}

fn u16_arg(name: &str, v: i64) -> PyResult<u16> {
    u16::try_from(v).map_err(|_| {
        to_py(Error::invalid(format!(
            "{name} must be from 0 to 65535, got {v}"
        )))
    })
}

#[pymethods]
impl TankNativeClient {
    #[new]
    #[pyo3(signature = (service_url, *, operation_timeout=30.0, connection_timeout=10.0,
                        memory_limit=67_108_864))]
    fn new(
        service_url: &str,
        operation_timeout: f64,
        connection_timeout: f64,
        memory_limit: i64,
    ) -> PyResult<Self> {
        let mut config = ClientConfig {
            operation_timeout: positive_secs("operation_timeout", operation_timeout).py_err()?,
            ..ClientConfig::default()
        };
        config.dial.connect_timeout =
            positive_secs("connection_timeout", connection_timeout).py_err()?;
        let limit: u64 = count_arg("memory_limit", memory_limit).py_err()?;
        let inner = TankClient::new(service_url, config).py_err()?;
        let budget = MemoryBudget::new(limit);
        crate::common::metrics::sample_budget(inner.metrics(), &budget);
        Ok(TankNativeClient {
            inner,
            pid: runtime::current_pid(),
            closed: AtomicBool::new(false),
            budget,
            service_url: service_url.to_string(),
        })
    }

    /// The client's metrics: connections, reconnects, pending bytes, and the totals of every
    /// producer and consumer it created (closed ones included).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        crate::common::metrics::client_dict(py, self.live()?.metrics())
    }

    #[getter]
    fn service_url(&self) -> &str {
        &self.service_url
    }

    fn __repr__(&self) -> String {
        let state = if self.closed.load(Ordering::Acquire) {
            " closed"
        } else {
            ""
        };
        format!("<streamwire.tank.Client {}{state}>", self.service_url)
    }
}

/// `status()`'s dict (built where the interpreter is attached, on either face).
pub struct Status(StatusResponse);

impl<'py> IntoPyObject<'py> for Status {
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (s, d) = (self.0, PyDict::new(py));
        d.set_item("topics", s.topics)?;
        d.set_item("partitions", s.partitions)?;
        d.set_item("open_partitions", s.open_partitions)?;
        d.set_item("cluster_aware", s.cluster_aware)?;
        d.set_item("startup_ts", s.startup_ts)?;
        d.set_item("version", s.version)?;
        Ok(d)
    }
}

// The waiting calls, each one definition for both faces (`name` blocks, `_aname` returns an
// `asyncio.Future`; see common::faces).
crate::two_faces! {
    impl TankNativeClient {
        /// Create `topic` with `partitions` partitions and the `config` text (`key=value`
        /// lines).
        #[pyo3(signature = (topic, partitions=1, config=""))]
        fn create_topic / _acreate_topic (
            &self, py, topic: &str, partitions: i64, config: &str
        ) -> () as none {
            topic_arg(topic)?;
            if partitions < 1 {
                return Err(to_py(Error::invalid(format!(
                    "partitions must be at least 1, got {partitions}"
                ))));
            }
            let partitions = u16_arg("partitions", partitions)?;
            let c = self.live()?.clone();
            let (t, cfg) = (topic.to_string(), config.to_string());
            Op::new("create topic", Some(self.timeout()), async move {
                c.create_topic(&t, partitions, &cfg).await
            })
        }

        /// `[(partition, first_available, high_water), ...]` of `topic`.
        fn partitions / _apartitions (&self, py, topic: &str) -> Vec<(u16, u64, u64)> {
            topic_arg(topic)?;
            let c = self.live()?.clone();
            let t = topic.to_string();
            Op::new("discover partitions", Some(self.timeout()), async move {
                let parts = c.partitions(&t).await?;
                Ok(parts
                    .into_iter()
                    .map(|p| (p.partition, p.first_available, p.high_water))
                    .collect())
            })
        }

        /// `[(name, partitions, enabled), ...]`: every topic of the broker.
        fn topics / _atopics (&self, py) -> Vec<(String, u16, bool)> {
            let c = self.live()?.clone();
            Op::new("discover topics", Some(self.timeout()), async move {
                let topics = c.topics().await?;
                Ok(topics
                    .into_iter()
                    .map(|t| {
                        let name = String::from_utf8_lossy(&t.name).into_owned();
                        (name, t.partitions, t.enabled)
                    })
                    .collect())
            })
        }

        /// The broker's status: topics, partitions, open partitions, start time, version.
        fn status / _astatus (&self, py) -> Status {
            let c = self.live()?.clone();
            Op::new("status", Some(self.timeout()), async move {
                c.status().await.map(Status)
            })
        }

        /// Ask the broker to re-read the configuration of `topic`'s `partition`.
        fn reload_config / _areload_config (
            &self, py, topic: &str, partition: i64
        ) -> () as none {
            topic_arg(topic)?;
            let p = u16_arg("partition", partition)?;
            let c = self.live()?.clone();
            let t = topic.to_string();
            Op::new("reload config", Some(self.timeout()), async move {
                c.reload_config(&t, p).await
            })
        }

        /// A producer for `topic` (the options are checked before anything is sent).
        #[pyo3(signature = (topic, *, batch_max_messages=1000, batch_max_bytes=131_072,
                            batch_delay=0.001, compression=None, max_in_flight=32,
                            send_timeout=30.0, block_if_queue_full=true))]
        fn create_producer / _acreate_producer (
            &self,
            py,
            topic: &str,
            batch_max_messages: i64,
            batch_max_bytes: i64,
            batch_delay: f64,
            compression: Option<&str>,
            max_in_flight: i64,
            send_timeout: f64,
            block_if_queue_full: bool,
        ) -> TankProducer {
            topic_arg(topic)?;
            let batch_max_messages: usize =
                count_arg("batch_max_messages", batch_max_messages).py_err()?;
            let max_in_flight: usize = count_arg("max_in_flight", max_in_flight).py_err()?;
            if batch_max_messages == 0 || max_in_flight == 0 {
                return Err(to_py(Error::new(
                    ErrorKind::Config,
                    "batch_max_messages and max_in_flight must be at least 1",
                )));
            }
            if !batch_delay.is_finite() || batch_delay < 0.0 {
                return Err(to_py(Error::new(
                    ErrorKind::Config,
                    format!(
                        "batch_delay must be a non-negative number of seconds, got {batch_delay}"
                    ),
                )));
            }
            let config = ProducerConfig {
                batch: BatchLimits {
                    max_messages: batch_max_messages,
                    max_bytes: count_arg("batch_max_bytes", batch_max_bytes).py_err()?,
                    max_delay: Duration::from_secs_f64(batch_delay),
                },
                compression: CompressionChoice::parse(compression).py_err()?,
                max_in_flight,
                send_timeout: positive_secs("send_timeout", send_timeout).py_err()?,
            };
            let c = self.live()?.clone();
            let (t, budget) = (topic.to_string(), self.budget.clone());
            let (pid, timeout) = (self.pid, self.timeout());
            Op::new("create producer", Some(timeout), async move {
                let p = Producer::create(&c, &t, config, budget).await?;
                Ok(TankProducer::new(p, pid, block_if_queue_full, timeout))
            })
        }

        /// A consumer of `topic` (the options are checked before anything is sent).
        #[pyo3(signature = (topic, *, partitions=None, start=None, max_wait=1.0, min_bytes=0,
                            fetch_size=1_048_576, max_fetch_size=67_108_864,
                            queue_bytes=33_554_432, on_out_of_range="error"))]
        fn create_consumer / _acreate_consumer (
            &self,
            py,
            topic: &str,
            partitions: Option<Vec<i64>>,
            start: Option<&Bound<'_, PyAny>>,
            max_wait: f64,
            min_bytes: i64,
            fetch_size: i64,
            max_fetch_size: i64,
            queue_bytes: i64,
            on_out_of_range: &str,
        ) -> TankConsumer {
            topic_arg(topic)?;
            let partitions = partitions
                .map(|v| {
                    v.into_iter()
                        .map(|p| u16_arg("partition", p))
                        .collect::<PyResult<Vec<_>>>()
                })
                .transpose()?;
            let start = start_arg(start)?;
            if !max_wait.is_finite() || max_wait < 0.0 {
                return Err(to_py(Error::new(
                    ErrorKind::Config,
                    format!(
                        "max_wait must be a non-negative number of seconds, got {max_wait}"
                    ),
                )));
            }
            let config = ConsumerConfig {
                max_wait: Duration::from_secs_f64(max_wait),
                min_bytes: count_arg("min_bytes", min_bytes).py_err()?,
                fetch_size: count_arg("fetch_size", fetch_size).py_err()?,
                max_fetch_size: count_arg("max_fetch_size", max_fetch_size).py_err()?,
                queue_bytes: count_arg("queue_bytes", queue_bytes).py_err()?,
                on_out_of_range: OnOutOfRange::parse(on_out_of_range).ok_or_else(|| {
                    to_py(Error::new(
                        ErrorKind::Config,
                        format!(
                            "on_out_of_range must be \"error\", \"earliest\" or \"latest\", not \
                             {on_out_of_range:?}"
                        ),
                    ))
                })?,
            };
            let c = self.live()?.clone();
            let (t, pid) = (topic.to_string(), self.pid);
            Op::new("create consumer", Some(self.timeout()), async move {
                let consumer = Consumer::create(&c, &t, partitions, start, config).await?;
                Ok(TankConsumer::new(consumer, pid))
            })
        }

        /// Close the connection; later calls raise `AlreadyClosedError`. Idempotent.
        fn close / _aclose (&self, py) -> () as none {
            // Closed already, or a forked child's copy of the parent's client: nothing to do.
            let skip = self.closed.swap(true, Ordering::AcqRel)
                || runtime::check_same_process(self.pid, "TANK client").is_err();
            let c = self.inner.clone();
            Op::new("close", Some(self.timeout()), async move {
                if !skip {
                    c.close().await;
                }
                Ok(())
            })
        }
    }
}

fn start_arg(start: Option<&Bound<'_, PyAny>>) -> PyResult<Start> {
    let Some(s) = start else {
        return Ok(Start::Earliest);
    };
    if let Ok(word) = s.extract::<String>() {
        return match word.as_str() {
            "earliest" => Ok(Start::Earliest),
            "latest" => Ok(Start::Latest),
            other => Err(to_py(Error::invalid(format!(
                "start must be \"earliest\", \"latest\" or a {{partition: seq}} dict, not {other:?}"
            )))),
        };
    }
    if let Ok(map) = s.cast::<PyDict>() {
        let mut out = BTreeMap::new();
        for (k, v) in map.iter() {
            let p: i64 = k.extract().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err("start's keys must be partition numbers")
            })?;
            let seq: i64 = v.extract().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err("start's values must be sequence numbers")
            })?;
            let seq = u64::try_from(seq).map_err(|_| {
                to_py(Error::invalid(format!(
                    "start's sequence numbers must not be negative, got {seq}"
                )))
            })?;
            out.insert(u16_arg("partition", p)?, seq);
        }
        return Ok(Start::At(out));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "start must be \"earliest\", \"latest\" or a dict, not {}",
        s.get_type().name()?
    )))
}
