//! Typed messages: schema descriptions as the broker's registry keeps them, and the payload
//! codecs for them (pure, apart from [`registry`]).
//!
//! * [`avro`] — the Avro record schema of a JSON or Avro schema, parsed from its definition;
//! * [`value`] — a value typed by such a schema;
//! * [`binary`] — Avro binary encoding (AVRO payloads);
//! * [`json`] — plain JSON encoding (JSON payloads);
//! * [`keyvalue`] — KEY_VALUE schema data and inline payloads;
//! * [`protobuf`], [`protobuf_wire`] — PROTOBUF_NATIVE schema data and payloads;
//! * [`arrow_encode`], [`arrow_decode`], [`arrow_kv`] — Arrow columns to payloads and
//!   received records to Arrow columns, per schema kind;
//! * [`project`] — a writer-version value reshaped to the reader's schema;
//! * [`writer`] — the writer's record schemas of a message's version, cached per topic;
//! * [`registry`] — GetSchema and GetOrCreateSchema on a broker connection (I/O).
//!
//! The `Type` values are those of the protocol's `Schema.Type` enum (`proto/pulsar.proto`):
//! a producer or consumer without a schema sends none, which the broker takes as BYTES.

pub mod arrow_decode;
pub mod arrow_encode;
pub mod arrow_kv;
pub mod avro;
pub mod binary;
pub mod json;
mod json_read;
pub mod keyvalue;
pub mod project;
pub mod protobuf;
pub mod protobuf_wire;
pub mod registry;
pub mod value;
pub mod writer;

#[cfg(test)]
mod arrow_tests;
#[cfg(test)]
mod protobuf_tests;
#[cfg(test)]
mod tests;

use crate::protocol::pb;

pub use pb::schema::Type as SchemaType;

/// A schema as the registry stores it: name, type, definition bytes and properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaInfo {
    pub name: String,
    pub kind: SchemaType,
    pub data: Vec<u8>,
    pub properties: Vec<(String, String)>,
}

impl SchemaInfo {
    /// The protocol form carried in PRODUCER / SUBSCRIBE / GET_OR_CREATE_SCHEMA.
    pub fn to_proto(&self) -> pb::Schema {
        let mut s = pb::Schema {
            name: self.name.clone(),
            schema_data: self.data.clone().into(),
            properties: self
                .properties
                .iter()
                .map(|(k, v)| pb::KeyValue {
                    key: k.clone(),
                    value: v.clone(),
                })
                .collect(),
            ..Default::default()
        };
        s.set_type(self.kind);
        s
    }

    /// From a GetSchema response.
    pub fn from_proto(s: &pb::Schema) -> SchemaInfo {
        SchemaInfo {
            name: s.name.clone(),
            kind: s.r#type(),
            data: s.schema_data.to_vec(),
            properties: s
                .properties
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.clone()))
                .collect(),
        }
    }

    /// The registry's name for a type (`key.schema.type` in KEY_VALUE properties uses it).
    pub fn type_name(kind: SchemaType) -> &'static str {
        match kind {
            SchemaType::None => "BYTES",
            SchemaType::String => "STRING",
            SchemaType::Json => "JSON",
            SchemaType::Protobuf => "PROTOBUF",
            SchemaType::Avro => "AVRO",
            SchemaType::KeyValue => "KEY_VALUE",
            SchemaType::ProtobufNative => "PROTOBUF_NATIVE",
            SchemaType::Bool => "BOOLEAN",
            SchemaType::Int8 => "INT8",
            SchemaType::Int16 => "INT16",
            SchemaType::Int32 => "INT32",
            SchemaType::Int64 => "INT64",
            SchemaType::Float => "FLOAT",
            SchemaType::Double => "DOUBLE",
            _ => "NONE",
        }
    }

    /// The inverse of [`type_name`](Self::type_name).
    pub fn type_from_name(name: &str) -> Option<SchemaType> {
        Some(match name {
            "BYTES" | "NONE" => SchemaType::None,
            "STRING" => SchemaType::String,
            "JSON" => SchemaType::Json,
            "PROTOBUF" => SchemaType::Protobuf,
            "AVRO" => SchemaType::Avro,
            "KEY_VALUE" => SchemaType::KeyValue,
            "PROTOBUF_NATIVE" => SchemaType::ProtobufNative,
            "BOOLEAN" => SchemaType::Bool,
            "INT8" => SchemaType::Int8,
            "INT16" => SchemaType::Int16,
            "INT32" => SchemaType::Int32,
            "INT64" => SchemaType::Int64,
            "FLOAT" => SchemaType::Float,
            "DOUBLE" => SchemaType::Double,
            _ => return None,
        })
    }
}

/// How a record schema's payloads are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordEncoding {
    Json,
    Avro,
}

/// A record schema ready to encode and decode payloads.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordCodec {
    pub encoding: RecordEncoding,
    pub schema: avro::AvroSchema,
    /// JSON only: enum values other writers use for symbols, and whether to write them.
    pub enum_values: std::sync::Arc<json::EnumValues>,
}

impl RecordCodec {
    /// Parse `definition` for JSON or AVRO payloads.
    pub fn new(encoding: RecordEncoding, definition: &[u8]) -> Result<Self, avro::SchemaError> {
        Ok(RecordCodec {
            encoding,
            schema: avro::AvroSchema::parse(definition)?,
            enum_values: Default::default(),
        })
    }

    /// The same codec reading (and, if `enums.write_values`, writing) enums as `enums` says.
    pub fn with_enum_values(mut self, enums: std::sync::Arc<json::EnumValues>) -> Self {
        self.enum_values = enums;
        self
    }

    /// Append the payload of `v` to `out`; on error `out` may hold part of it.
    pub fn encode(&self, v: &value::Value, out: &mut Vec<u8>) -> Result<(), value::ValueError> {
        match self.encoding {
            RecordEncoding::Json => {
                json::encode_with(&self.schema, self.schema.root, v, out, &self.enum_values)
            }
            RecordEncoding::Avro => binary::encode(&self.schema, self.schema.root, v, out),
        }
    }

    /// Decode a payload.
    pub fn decode(&self, payload: &[u8]) -> Result<value::Value, value::ValueError> {
        match self.encoding {
            RecordEncoding::Json => {
                json::decode_with(&self.schema, self.schema.root, payload, &self.enum_values)
            }
            RecordEncoding::Avro => binary::decode(&self.schema, self.schema.root, payload),
        }
    }
}
