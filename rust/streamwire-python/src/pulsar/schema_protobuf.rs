//! The PROTOBUF_NATIVE side of `_native.SchemaCodec`: values are instances of one generated
//! `google.protobuf` message class, sent as `SerializeToString()` (the protobuf runtime's
//! own C encoder) and received through `FromString`. The Rust layout of the root message
//! ([`ProtoSchema`]) serves `receive_arrow`, which decodes payloads into typed columns
//! without building a Python message per row.
//!
//! Why no writer-version decoding here (unlike JSON and Avro): protobuf payloads carry field
//! numbers, and the broker keeps one root message name per topic, so a payload written with
//! an older or newer descriptor of the message reads with the reader's (fields it does not
//! know are skipped, fields the writer did not have take their defaults).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};

use std::sync::Arc;
use streamwire_pulsar::schema::avro::AvroSchema;
use streamwire_pulsar::schema::protobuf::ProtoSchema;
use streamwire_pulsar::schema::protobuf_wire;
use streamwire_pulsar::schema::value::Value;
use streamwire_pulsar::schema::{SchemaInfo, SchemaType};

use crate::pulsar::schema::{Codec, Kind, PySchemaCodec};
use crate::pulsar::schema_values::schema_error;

/// A PROTOBUF_NATIVE codec: the message class, and the root message's layout. Without a
/// class (the Spark Data Source, which knows only the registry's descriptor) it reads and
/// writes Arrow columns only.
pub(crate) struct ProtoCodec {
    class: Option<Py<PyType>>,
    layout: ProtoSchema,
}

impl ProtoCodec {
    /// The payload of `obj`, an instance of the class (a subclass will do).
    pub(crate) fn encode(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
        let class = self.class(py)?;
        if !obj.is_instance(class)? {
            return Err(schema_error(
                py,
                format!(
                    "ProtobufNative({}) sends {} messages, not {}",
                    class.name()?,
                    class.name()?,
                    obj.get_type().name()?
                ),
            ));
        }
        let out = obj
            .call_method0(intern!(py, "SerializeToString"))
            .map_err(|e| schema_error(py, format!("cannot serialize the message: {e}")))?;
        let b = out
            .cast::<PyBytes>()
            .map_err(|_| schema_error(py, "SerializeToString did not return bytes"))?;
        Ok(b.as_bytes().to_vec())
    }

    /// A message of the class parsed from `payload`.
    pub(crate) fn decode<'py>(
        &self,
        py: Python<'py>,
        payload: &[u8],
    ) -> PyResult<Bound<'py, PyAny>> {
        self.class(py)?
            .call_method1(intern!(py, "FromString"), (PyBytes::new(py, payload),))
            .map_err(|e| schema_error(py, format!("cannot decode the message: {e}")))
    }

    fn class<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyType>> {
        self.class.as_ref().map(|c| c.bind(py)).ok_or_else(|| {
            schema_error(
                py,
                "this PROTOBUF_NATIVE schema has no message class: it reads and writes Arrow \
                 columns only (receive_arrow, send_many of a pyarrow.RecordBatch)",
            )
        })
    }

    /// The root message's layout (for Arrow columns in and out).
    pub(crate) fn layout(&self) -> &ProtoSchema {
        &self.layout
    }

    /// The record layout for Arrow columns.
    pub(crate) fn arrow_schema(&self) -> &AvroSchema {
        &self.layout.avro
    }

    /// A payload decoded into the record layout (for Arrow columns).
    pub(crate) fn value(&self, payload: &[u8]) -> Result<Value, String> {
        protobuf_wire::decode(&self.layout, payload).map_err(|e| e.0)
    }
}

#[pymethods]
impl PySchemaCodec {
    /// Build a PROTOBUF_NATIVE codec (called by `streamwire.schema.ProtobufNative`).
    ///
    /// Args:
    ///     definition: the registry schema data (the JSON document with the descriptor set).
    ///     message_class: the generated message class values are instances of; None: a
    ///         codec for Arrow columns only (reads and writes of the Spark Data Source).
    ///     name: the registry name of the schema.
    ///     properties: registry properties (str to str).
    #[staticmethod]
    #[pyo3(signature = (definition, message_class=None, name=String::new(), properties=None))]
    fn protobuf_native(
        py: Python<'_>,
        definition: &[u8],
        message_class: Option<&Bound<'_, PyType>>,
        name: String,
        properties: Option<Vec<(String, String)>>,
    ) -> PyResult<Self> {
        let layout = ProtoSchema::parse(definition).map_err(|e| schema_error(py, e.0))?;
        Ok(PySchemaCodec {
            inner: Arc::new(Codec {
                info: SchemaInfo {
                    name,
                    kind: SchemaType::ProtobufNative,
                    data: definition.to_vec(),
                    properties: properties.unwrap_or_default(),
                },
                kind: Kind::Protobuf(ProtoCodec {
                    class: message_class.map(|c| c.clone().unbind()),
                    layout,
                }),
            }),
        })
    }
}
