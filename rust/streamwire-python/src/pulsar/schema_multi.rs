//! Messages of a schema other than the producer's own (the Java client's multi-schema
//! producer): `send(value, schema=S)` registers `S` with the topic through
//! GET_OR_CREATE_SCHEMA the first time the producer meets it, keeps the version it gets, and
//! puts that version on each such message so consumers decode it with `S`. Also
//! `Client.get_or_create_schema` / `Producer.register_schema` (and their awaitable forms).
//!
//! The version cache is a short list compared by registry description (a producer meets a
//! handful of schemas): a hit costs one comparison per entry and no allocation, so sending
//! with `schema=` costs no round trip after the first message of that schema.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use streamwire_core::error::Result;
use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::schema::SchemaInfo;
use streamwire_pulsar::topic::TopicName;

use crate::common::aio::{self, Value};
use crate::common::blocking::wait;
use crate::common::errors::IntoPyResult;
use crate::common::faces::Op;
use crate::pulsar::client::Client;
use crate::pulsar::producer::Producer;
use crate::pulsar::schema::{codec_of, Codec};

/// A producer's registered schema versions, and what it needs to register more.
pub(crate) struct SchemaVersions {
    client: PulsarClient,
    timeout: Duration,
    /// The topic GET_OR_CREATE_SCHEMA names: the producer's topic, or its first partition
    /// (the broker holds the partitions, and they share the partitioned topic's schema).
    topic: TopicName,
    known: Mutex<Vec<(SchemaInfo, Bytes)>>,
}

impl SchemaVersions {
    pub(crate) fn new(client: PulsarClient, timeout: Duration, topic: TopicName) -> Self {
        SchemaVersions {
            client,
            timeout,
            topic,
            known: Mutex::new(Vec::new()),
        }
    }

    fn cached(&self, info: &SchemaInfo) -> Option<Bytes> {
        self.known
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(i, _)| i == info)
            .map(|(_, v)| v.clone())
    }

    fn remember(&self, info: &SchemaInfo, version: Bytes) {
        let mut k = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if !k.iter().any(|(i, _)| i == info) {
            k.push((info.clone(), version));
        }
    }

    /// The registration of `info` as a future (no Python, no lock held across it).
    fn register(
        &self,
        info: SchemaInfo,
    ) -> impl std::future::Future<Output = Result<Vec<u8>>> + Send + 'static {
        let client = self.client.clone();
        let topic = self.topic.clone();
        async move { client.get_or_create_schema(&topic, &info).await }
    }

    /// The version of `info` for this producer: cached, or registered now (blocking, the
    /// GIL released).
    fn version(&self, py: Python<'_>, info: &SchemaInfo) -> PyResult<Bytes> {
        if let Some(v) = self.cached(info) {
            return Ok(v);
        }
        let fut = self.register(info.clone());
        let v = Bytes::from(wait(py, "get or create schema", Some(self.timeout), fut)?);
        self.remember(info, v.clone());
        Ok(v)
    }
}

impl Producer {
    /// The codec of a send's `schema=` argument (None without one: the producer's own).
    pub(crate) fn message_codec(
        &self,
        schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Arc<Codec>>> {
        codec_of(schema)
    }

    /// The metadata schema version of a message encoded with `codec` (from
    /// `message_codec`): None for no codec or the producer's own schema, else the version
    /// GET_OR_CREATE_SCHEMA gave (cached per schema). Called after the value is encoded, so
    /// a value that does not fit registers nothing.
    pub(crate) fn message_schema_version(
        &self,
        py: Python<'_>,
        codec: Option<&Arc<Codec>>,
    ) -> PyResult<Option<Bytes>> {
        let Some(c) = codec else {
            return Ok(None);
        };
        if self.codec.as_ref().is_some_and(|own| own.info == c.info) {
            return Ok(None);
        }
        Ok(Some(self.schemas.version(py, &c.info)?))
    }
}

fn schema_arg(schema: &Bound<'_, PyAny>) -> PyResult<Arc<Codec>> {
    codec_of(Some(schema))?.ok_or_else(|| {
        pyo3::exceptions::PyTypeError::new_err(
            "schema must be a streamwire.schema object, not None",
        )
    })
}

#[pymethods]
impl Producer {
    /// Register `schema` with the producer's topic for later `send(..., schema=schema)`
    /// calls and give its registry version (the producer's own schema gives its version).
    /// A send with a schema not registered yet registers it itself; calling this first
    /// takes that round trip out of the send.
    ///
    /// Args:
    ///     schema: a `streamwire.schema` object.
    ///
    /// Raises:
    ///     IncompatibleSchemaError: the topic's compatibility policy refuses `schema`.
    ///     AlreadyClosedError: the producer is closed.
    fn register_schema<'py>(
        &self,
        py: Python<'py>,
        schema: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.live()?;
        let c = schema_arg(schema)?;
        if self.codec.as_ref().is_some_and(|own| own.info == c.info) {
            let own = self.inner.schema_version().unwrap_or_default();
            return Ok(PyBytes::new(py, &own));
        }
        let v = self.schemas.version(py, &c.info)?;
        Ok(PyBytes::new(py, &v))
    }

    /// `register_schema` as an awaitable (`streamwire.aio`).
    fn _aregister_schema<'py>(
        slf: Bound<'py, Self>,
        schema: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        this.live()?;
        let c = schema_arg(schema)?;
        let own = this.codec.as_ref().is_some_and(|own| own.info == c.info);
        let known = if own {
            Some(Bytes::from(this.inner.schema_version().unwrap_or_default()))
        } else {
            this.schemas.cached(&c.info)
        };
        let me = slf.clone().unbind();
        let fut = this.schemas.register(c.info.clone());
        let info = c.info.clone();
        let (pyfut, _) = aio::spawn(
            py,
            "get or create schema",
            Some(this.schemas.timeout),
            async move {
                match known {
                    Some(v) => Ok((v.to_vec(), None)),
                    None => Ok((fut.await?, Some((me, info)))),
                }
            },
            |(v, learnt): (Vec<u8>, Option<(Py<Producer>, SchemaInfo)>)| {
                Value::Build(Box::new(move |py: Python<'_>| {
                    if let Some((p, info)) = learnt {
                        p.get().schemas.remember(&info, Bytes::from(v.clone()));
                    }
                    Ok(PyBytes::new(py, &v).into_any().unbind())
                }))
            },
        )?;
        Ok(pyfut)
    }
}

crate::two_faces! {
    impl Client {
        /// Register `schema` with `topic` through the binary protocol (GET_OR_CREATE_SCHEMA)
        /// and give its registry version; a schema the topic already has gives the version it
        /// has. The topic must exist (a producer or consumer creates it).
        ///
        /// Args:
        ///     topic: a topic name (one partition, or a non-partitioned topic).
        ///     schema: a `streamwire.schema` object.
        ///
        /// Raises:
        ///     IncompatibleSchemaError: the topic's compatibility policy refuses `schema`.
        ///     TopicNotFoundError: no such topic is loaded on the cluster.
        fn get_or_create_schema / _aget_or_create_schema (
            &self,
            py,
            topic: &str,
            schema: &Bound<'_, PyAny>,
        ) -> Vec<u8> {
            let inner = self.live()?.clone();
            let t = TopicName::parse(topic).py_err()?;
            let info = schema_arg(schema)?.info.clone();
            Op::new("get or create schema", Some(self.operation_timeout * 2), async move {
                inner.get_or_create_schema(&t, &info).await
            })
        }
    }
}
