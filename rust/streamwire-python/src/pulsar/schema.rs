//! `_native.SchemaCodec`: the engine side of a `streamwire.schema` object. It holds the
//! registry description sent with PRODUCER / SUBSCRIBE, encodes values into payloads and
//! decodes payloads back, in Rust.
//!
//! Consumers decode each message with the schema version it was written with: the first
//! message of a version not seen yet fetches that version (GET_SCHEMA) once per topic, and
//! later ones hit the cache. A message without a version, or of the reader's own
//! definition, uses the reader's schema. The writer's value is then resolved to the
//! reader's schema (`project`); a KEY_VALUE version's key and value halves each so.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

use streamwire_pulsar::client::PulsarClient;
use streamwire_pulsar::schema::avro::Node;
use streamwire_pulsar::schema::keyvalue::{
    b64, encode_inline, kv_schema, split_halves, KvEncoding,
};
use streamwire_pulsar::schema::project::decode_resolved;
use streamwire_pulsar::schema::value::Value;
use streamwire_pulsar::schema::writer::{writer_of, Reader, Writer, WriterCache};
use streamwire_pulsar::schema::{RecordCodec, RecordEncoding, SchemaInfo, SchemaType};
use streamwire_pulsar::topic::TopicName;

use crate::common::blocking::wait;
use crate::pulsar::schema_encode_halves::half_codec;
use crate::pulsar::schema_values::{schema_error, to_py, to_value, PyTypes};

/// How values of a schema become payloads.
pub(crate) enum Kind {
    Bytes,
    String,
    Record {
        codec: RecordCodec,
        types: PyTypes,
    },
    KeyValue {
        key: Arc<Codec>,
        value: Arc<Codec>,
        separated: bool,
    },
    /// PROTOBUF_NATIVE: instances of a generated message class (`schema_protobuf`).
    Protobuf(crate::pulsar::schema_protobuf::ProtoCodec),
}

/// A schema: its registry description and its payload codec.
pub(crate) struct Codec {
    pub info: SchemaInfo,
    pub kind: Kind,
}

/// The payload of one value, and for a SEPARATED key/value the base64 key.
pub(crate) struct Encoded {
    pub payload: Bytes,
    /// A SEPARATED key/value's key: the message key is the value's own (`own_key`), base64
    /// of the key half's encoding, or no key at all for a None key half (as the Java client
    /// sends a null key; an empty key would read back as an empty string, not None).
    pub own_key: bool,
    pub key_b64: Option<String>,
    /// A SEPARATED key/value's None value half: sent as `null_value` with an empty payload,
    /// as the Java client sends it (its consumers read a null value only from that flag).
    pub null_value: bool,
}

impl Codec {
    /// Encode `obj`; a value that does not fit raises `SchemaError` (nothing is sent).
    pub(crate) fn encode(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Encoded> {
        let payload = match &self.kind {
            Kind::KeyValue {
                key,
                value,
                separated,
            } => {
                let t = obj
                    .cast::<PyTuple>()
                    .ok()
                    .filter(|t| t.len() == 2)
                    .ok_or_else(|| {
                        schema_error(py, "a key/value schema sends (key, value) tuples")
                    })?;
                // A None half is a null half (INLINE: length -1; SEPARATED: no key, or a
                // null value), whatever the half's schema: the Java client allows both.
                let half = |c: &Codec, o: Bound<'_, PyAny>| {
                    if o.is_none() {
                        Ok(None)
                    } else {
                        c.encode_half(py, &o)
                    }
                };
                let k = half(key, t.get_item(0)?)?;
                let v = half(value, t.get_item(1)?)?;
                if *separated {
                    return Ok(Encoded {
                        null_value: v.is_none(),
                        payload: v.map(Bytes::from).unwrap_or_default(),
                        own_key: true,
                        key_b64: k.as_deref().map(b64::encode),
                    });
                }
                Bytes::from(encode_inline(k.as_deref(), v.as_deref()))
            }
            _ => {
                let half = self.encode_half(py, obj)?;
                // A None protobuf message is a null value (as the Java client sends null),
                // read back as None, not as an empty (all-default) message. Bytes and
                // strings keep sending None as the empty payload, as before.
                let null_value = half.is_none() && matches!(self.kind, Kind::Protobuf(_));
                return Ok(Encoded {
                    payload: Bytes::from(half.unwrap_or_default()),
                    own_key: false,
                    key_b64: None,
                    null_value,
                });
            }
        };
        Ok(Encoded {
            payload,
            own_key: false,
            key_b64: None,
            null_value: false,
        })
    }

    /// One value's bytes (None for a None key or value half).
    fn encode_half(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
        Ok(Some(match &self.kind {
            Kind::Bytes => {
                if obj.is_none() {
                    return Ok(None);
                }
                match obj.cast::<PyBytes>() {
                    Ok(b) => b.as_bytes().to_vec(),
                    Err(_) => {
                        return Err(schema_error(
                            py,
                            format!("BytesSchema sends bytes, not {}", obj.get_type().name()?),
                        ))
                    }
                }
            }
            Kind::String => {
                if obj.is_none() {
                    return Ok(None);
                }
                match obj.cast::<PyString>() {
                    Ok(s) => s.to_cow()?.into_owned().into_bytes(),
                    Err(_) => {
                        return Err(schema_error(
                            py,
                            format!("StringSchema sends str, not {}", obj.get_type().name()?),
                        ))
                    }
                }
            }
            Kind::Record { codec, .. } => {
                let v = to_value(py, &codec.schema, codec.schema.root, obj, 0)?;
                let mut out = Vec::with_capacity(64);
                codec
                    .encode(&v, &mut out)
                    .map_err(|e| schema_error(py, e.0))?;
                out
            }
            Kind::Protobuf(p) => {
                if obj.is_none() {
                    return Ok(None);
                }
                p.encode(py, obj)?
            }
            Kind::KeyValue { .. } => {
                return Err(schema_error(py, "a key/value schema cannot nest"));
            }
        }))
    }

    /// Decode a payload written with `writer`'s record schemas (None, or a None half: this
    /// schema's own definition); a writer's value is resolved to this schema's.
    /// `null_value`: the message was sent with `null_value` (a null record, protobuf
    /// message or SEPARATED value half is None, as the Java client reads it; bytes and
    /// strings stay the empty payload).
    pub(crate) fn decode<'py>(
        &self,
        py: Python<'py>,
        payload: &[u8],
        key: Option<&str>,
        writer: Option<&Writer>,
        null_value: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        if null_value && matches!(self.kind, Kind::Record { .. } | Kind::Protobuf(_)) {
            return Ok(py.None().into_bound(py));
        }
        match &self.kind {
            Kind::Bytes => Ok(PyBytes::new(py, payload).into_any()),
            Kind::String => Ok(PyString::new(
                py,
                std::str::from_utf8(payload)
                    .map_err(|_| schema_error(py, "a STRING message is not UTF-8"))?,
            )
            .into_any()),
            Kind::Record { codec, types } => {
                let v = decode_resolved(codec, writer.and_then(|w| w.value.as_deref()), payload)
                    .map_err(|e| schema_error(py, format!("cannot decode the message: {}", e.0)))?;
                to_py(py, &codec.schema, codec.schema.root, v, types)
            }
            Kind::Protobuf(p) => p.decode(py, payload),
            Kind::KeyValue {
                key: kc,
                value: vc,
                separated,
            } => {
                let (k, v) = if *separated {
                    let k = match key {
                        Some(k) => Some(b64::decode(k).ok_or_else(|| {
                            schema_error(py, "the key of a SEPARATED key/value is not base64")
                        })?),
                        None => None,
                    };
                    (k, (!null_value).then(|| payload.to_vec()))
                } else {
                    let (k, v) = split_halves(payload).map_err(|e| schema_error(py, e.0))?;
                    (k.map(<[u8]>::to_vec), v.map(<[u8]>::to_vec))
                };
                // Each half with the writer version's schema of that half (KEY_VALUE
                // versions carry both), resolved to the reader's.
                let half = |w: Option<&Arc<RecordCodec>>| Writer {
                    key: None,
                    value: w.cloned(),
                };
                let (wk, wv) = (
                    half(writer.and_then(|w| w.key.as_ref())),
                    half(writer.and_then(|w| w.value.as_ref())),
                );
                let k = match k {
                    Some(k) => kc.decode(py, &k, None, Some(&wk), false)?,
                    None => py.None().into_bound(py),
                };
                let v = match v {
                    Some(v) => vc.decode(py, &v, None, Some(&wv), false)?,
                    None => py.None().into_bound(py),
                };
                Ok(PyTuple::new(py, [k, v])?.into_any())
            }
        }
    }
}

/// A consumer's schema: the codec, and the writer versions fetched so far.
pub(crate) struct Typed {
    pub codec: Arc<Codec>,
    client: PulsarClient,
    timeout: Duration,
    /// The writer versions resolved so far, per topic.
    versions: WriterCache,
}

impl Typed {
    pub(crate) fn new(codec: Arc<Codec>, client: PulsarClient, timeout: Duration) -> Arc<Self> {
        Arc::new(Typed {
            codec,
            client,
            timeout,
            versions: WriterCache::default(),
        })
    }

    /// Decode a received message with the schema version it names.
    pub(crate) fn decode<'py>(
        &self,
        py: Python<'py>,
        m: &streamwire_pulsar::consumer::ReceivedMessage,
    ) -> PyResult<Bound<'py, PyAny>> {
        let writer = match (&self.codec.kind, m.schema_version()) {
            (Kind::Record { .. } | Kind::KeyValue { .. }, Some(ver)) if !ver.is_empty() => {
                self.writer(py, m.topic(), ver)?
            }
            _ => None,
        };
        self.codec
            .decode(py, &m.payload, m.key(), writer.as_deref(), m.null_value())
    }

    /// The reader's record schema, when the schema is a record's (JSON, Avro, protobuf).
    pub(crate) fn record_schema(&self) -> Option<&streamwire_pulsar::schema::avro::AvroSchema> {
        match &self.codec.kind {
            Kind::Record { codec, .. } => Some(&codec.schema),
            Kind::Protobuf(p) => Some(p.arrow_schema()),
            _ => None,
        }
    }

    /// A message's record decoded with its writer's version and resolved to the reader's
    /// schema (for Arrow columns); call only when `record_schema()` is some.
    pub(crate) fn record_value(
        &self,
        py: Python<'_>,
        m: &streamwire_pulsar::consumer::ReceivedMessage,
    ) -> PyResult<Value> {
        if m.null_value() {
            // A null value (the Java client's null): a null row, not a decode of b"".
            return Ok(Value::Null);
        }
        let codec = match &self.codec.kind {
            Kind::Record { codec, .. } => codec,
            Kind::Protobuf(p) => {
                return p.value(&m.payload).map_err(|e| {
                    schema_error(py, format!("cannot decode message {:?}: {e}", m.id))
                })
            }
            _ => return Err(schema_error(py, "not a record schema")),
        };
        let writer = match m.schema_version() {
            Some(ver) if !ver.is_empty() => self.writer(py, m.topic(), ver)?,
            _ => None,
        };
        decode_resolved(
            codec,
            writer.as_deref().and_then(|w| w.value.as_deref()),
            &m.payload,
        )
        .map_err(|e| schema_error(py, format!("cannot decode message {:?}: {}", m.id, e.0)))
    }

    pub(crate) fn writer(
        &self,
        py: Python<'_>,
        topic: &Arc<str>,
        version: &[u8],
    ) -> PyResult<Option<Arc<Writer>>> {
        if let Some(c) = self.versions.get(topic, version) {
            return Ok(c);
        }
        let client = self.client.clone();
        let name = TopicName::parse(topic).map_err(crate::common::errors::to_py)?;
        let ver = version.to_vec();
        let got = wait(py, "get schema", Some(self.timeout), async move {
            client.get_schema(&name, Some(&ver)).await
        })?;
        // A version the registry no longer has reads with the reader's schema.
        let writer = writer_of(
            self.reader(py)?,
            &self.codec.info,
            got.as_ref().map(|g| &g.0),
        )
        .map_err(|e| schema_error(py, e.0))?;
        self.versions.insert(topic, version, writer.clone());
        Ok(writer)
    }

    /// The reader's schema as writer resolution needs it.
    fn reader(&self, py: Python<'_>) -> PyResult<Reader<'_>> {
        Ok(match &self.codec.kind {
            Kind::KeyValue { key, value, .. } => Reader::KeyValue {
                key: (half_codec(py, key)?, &key.info),
                value: (half_codec(py, value)?, &value.info),
            },
            _ => Reader::Plain(half_codec(py, &self.codec)?, &self.codec.info),
        })
    }
}

/// The codec of a `schema=` argument: a `streamwire.schema` object (its `_codec`), a bare
/// codec, or None.
pub(crate) fn codec_of(schema: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<Codec>>> {
    let Some(s) = schema.filter(|s| !s.is_none()) else {
        return Ok(None);
    };
    let c = match s.cast::<PySchemaCodec>() {
        Ok(c) => c.clone(),
        Err(_) => match s
            .getattr("_codec")
            .ok()
            .and_then(|c| c.cast_into::<PySchemaCodec>().ok())
        {
            Some(c) => c,
            None => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "schema must be a streamwire.schema object (BytesSchema, StringSchema, \
                     JsonSchema, AvroSchema, KeyValueSchema, ProtobufNative), not {}",
                    s.get_type().name()?
                )))
            }
        },
    };
    Ok(Some(Arc::clone(&c.get().inner)))
}

/// The engine side of a `streamwire.schema` object (built by it; not public API).
#[pyclass(frozen, module = "streamwire._native", name = "SchemaCodec")]
pub struct PySchemaCodec {
    pub(crate) inner: Arc<Codec>,
}

/// The JSON form of each `enum.Enum` member's value (None for a value JSON cannot hold).
fn json_of(v: &Bound<'_, PyAny>) -> Option<serde_json::Value> {
    if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
        return Some(serde_json::Value::Bool(b.is_true()));
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return v.extract::<i64>().ok().map(serde_json::Value::from);
    }
    if let Ok(f) = v.cast::<pyo3::types::PyFloat>() {
        return serde_json::Number::from_f64(f.value()).map(serde_json::Value::Number);
    }
    v.cast::<PyString>().ok().and_then(|s| {
        s.to_cow()
            .ok()
            .map(|s| serde_json::Value::String(s.into_owned()))
    })
}

/// The enum value table of a JSON schema's `enums` (full name -> `enum.Enum` class): how
/// the official Python client writes each member.
fn enum_table(
    enums: Option<&Bound<'_, PyDict>>,
    write_values: bool,
) -> PyResult<streamwire_pulsar::schema::json::EnumValues> {
    let mut by_enum = Vec::new();
    for (name, cls) in enums.into_iter().flat_map(|d| d.iter()) {
        let mut table = Vec::new();
        for member in cls.try_iter()? {
            let member = member?;
            if let Some(j) = json_of(&member.getattr("value")?) {
                table.push((j, member.getattr("name")?.extract::<String>()?));
            }
        }
        by_enum.push((name.extract::<String>()?, table));
    }
    Ok(streamwire_pulsar::schema::json::EnumValues {
        by_enum,
        write_values,
    })
}

fn names_of(d: Option<&Bound<'_, PyDict>>) -> PyResult<HashMap<String, Py<PyAny>>> {
    let mut out = HashMap::new();
    if let Some(d) = d {
        for (k, v) in d.iter() {
            out.insert(k.extract::<String>()?, v.unbind());
        }
    }
    Ok(out)
}

#[pymethods]
impl PySchemaCodec {
    /// Build a codec (called by `streamwire.schema`).
    ///
    /// Args:
    ///     kind: "bytes", "string", "json", "avro" or "key_value".
    ///     name: the registry name of the schema.
    ///     definition: the record definition (JSON text) for "json" and "avro".
    ///     records: full record name -> the type to build decoded records as.
    ///     enums: full enum name -> the `enum.Enum` class to build symbols as.
    ///     properties: registry properties (str to str).
    ///     key: the key codec of a "key_value" schema.
    ///     value: the value codec of a "key_value" schema.
    ///     separated: a "key_value" schema sends the key as the message key.
    ///     enum_values: a "json" schema writes an enum as its Python value (the official
    ///         Python client's form) instead of its symbol (Java's form).
    #[new]
    #[pyo3(signature = (kind, name, definition=None, records=None, enums=None, properties=None,
        key=None, value=None, separated=false, enum_values=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        kind: &str,
        name: String,
        definition: Option<&[u8]>,
        records: Option<&Bound<'_, PyDict>>,
        enums: Option<&Bound<'_, PyDict>>,
        properties: Option<Vec<(String, String)>>,
        key: Option<PyRef<'_, PySchemaCodec>>,
        value: Option<PyRef<'_, PySchemaCodec>>,
        separated: bool,
        enum_values: bool,
    ) -> PyResult<Self> {
        let properties = properties.unwrap_or_default();
        let plain = |kind: SchemaType, k: Kind| Codec {
            info: SchemaInfo {
                name: name.clone(),
                kind,
                data: Vec::new(),
                properties: properties.clone(),
            },
            kind: k,
        };
        let codec = match kind {
            "bytes" => plain(SchemaType::None, Kind::Bytes),
            "string" => plain(SchemaType::String, Kind::String),
            "json" | "avro" => {
                let def = definition
                    .ok_or_else(|| schema_error(py, "a record schema needs a definition"))?;
                let (enc, ty) = if kind == "json" {
                    (RecordEncoding::Json, SchemaType::Json)
                } else {
                    (RecordEncoding::Avro, SchemaType::Avro)
                };
                let mut codec = RecordCodec::new(enc, def).map_err(|e| schema_error(py, e.0))?;
                if kind == "json" {
                    codec = codec.with_enum_values(Arc::new(enum_table(enums, enum_values)?));
                }
                let fields = codec
                    .schema
                    .nodes
                    .iter()
                    .filter_map(|n| match n {
                        Node::Record(r) => Some((
                            r.name.clone(),
                            r.fields
                                .iter()
                                .map(|f| f.name.clone())
                                .collect::<HashSet<_>>(),
                        )),
                        _ => None,
                    })
                    .collect();
                Codec {
                    info: SchemaInfo {
                        name: name.clone(),
                        kind: ty,
                        data: def.to_vec(),
                        properties: properties.clone(),
                    },
                    kind: Kind::Record {
                        codec,
                        types: PyTypes {
                            records: names_of(records)?,
                            enums: names_of(enums)?,
                            fields,
                        },
                    },
                }
            }
            "key_value" => {
                let (Some(k), Some(v)) = (key, value) else {
                    return Err(schema_error(py, "a key/value schema needs key and value"));
                };
                if matches!(k.inner.kind, Kind::KeyValue { .. })
                    || matches!(v.inner.kind, Kind::KeyValue { .. })
                {
                    return Err(schema_error(py, "a key/value schema cannot nest"));
                }
                let enc = if separated {
                    KvEncoding::Separated
                } else {
                    KvEncoding::Inline
                };
                Codec {
                    info: kv_schema(&k.inner.info, &v.inner.info, enc),
                    kind: Kind::KeyValue {
                        key: Arc::clone(&k.inner),
                        value: Arc::clone(&v.inner),
                        separated,
                    },
                }
            }
            other => return Err(schema_error(py, format!("unknown schema kind {other:?}"))),
        };
        Ok(PySchemaCodec {
            inner: Arc::new(codec),
        })
    }

    /// Encode one value into its payload (a SEPARATED key/value gives the value part).
    ///
    /// Args:
    ///     value: the value to encode.
    fn encode<'py>(
        &self,
        py: Python<'py>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let e = self.inner.encode(py, value)?;
        Ok(PyBytes::new(py, &e.payload))
    }

    /// Decode a payload written with this schema.
    ///
    /// Args:
    ///     data: the payload.
    ///     key: the message key (SEPARATED key/value schemas). Default None.
    #[pyo3(signature = (data, key=None))]
    fn decode<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        key: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.inner.decode(py, data, key, None, false)
    }

    /// The registry type number (`Schema.Type` of the protocol).
    #[getter]
    fn schema_type(&self) -> i32 {
        self.inner.info.kind as i32
    }

    /// The registry definition bytes.
    #[getter]
    fn definition<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.info.data)
    }

    /// The registry properties.
    #[getter]
    fn properties(&self) -> Vec<(String, String)> {
        self.inner.info.properties.clone()
    }
}
