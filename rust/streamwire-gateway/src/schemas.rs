//! PIP-64's schema fields checked (`check_schemas`: the value format, or the 422 that says
//! what is wrong), and schema-typed values (pure): a `value_schema` holding a JSON or AVRO record
//! definition, parsed into the Pulsar crate's record codec, and each message's JSON `value`
//! checked against it and encoded (JSON text, or Avro binary). The producer registers the
//! schema info with the broker, which answers its version.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use streamwire_pulsar::schema::{json, RecordCodec, RecordEncoding, SchemaInfo, SchemaType};

use crate::decode::WriterSchema;
use crate::error::ApiError;
use crate::produce::ValueFormat;

/// A record schema a producer registers and its messages are encoded with.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSchema {
    pub info: SchemaInfo,
    pub codec: RecordCodec,
}

fn as_object(v: &Value) -> Option<serde_json::Map<String, Value>> {
    match v {
        Value::String(text) => serde_json::from_str::<Value>(text)
            .ok()?
            .as_object()
            .cloned(),
        Value::Object(o) => Some(o.clone()),
        _ => None,
    }
}

/// The record schema of a request whose type (`schema_type`, else `value_schema`'s) is JSON
/// or AVRO and whose `value_schema` carries a definition: either a schema info
/// (`{"type": "AVRO", "schema": <record definition or its text>, "name", "properties"}`) or
/// the Avro record definition itself (`{"type": "record", ...}`). `None` for other types
/// (and for JSON without a definition: any JSON value, as before). A definition that does
/// not parse is 42204.
pub fn record_schema(
    schema_type: Option<&str>,
    value_schema: Option<&Value>,
) -> Result<Option<Arc<RecordSchema>>, ApiError> {
    let Some(obj) = value_schema.and_then(as_object) else {
        return Ok(None);
    };
    let own_type = obj
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase);
    let raw_record = own_type.as_deref() == Some("RECORD");
    let kind = match schema_type
        .map(str::to_ascii_uppercase)
        .or_else(|| own_type.clone().filter(|_| !raw_record))
        .as_deref()
    {
        Some("JSON") => SchemaType::Json,
        Some("AVRO") => SchemaType::Avro,
        _ => return Ok(None),
    };
    let definition: Vec<u8> = if raw_record {
        serde_json::to_vec(&obj).unwrap_or_default()
    } else {
        match obj.get("schema") {
            Some(Value::String(text)) => text.clone().into_bytes(),
            Some(v @ Value::Object(_)) => serde_json::to_vec(v).unwrap_or_default(),
            // No definition: JSON takes any value (as before); AVRO is refused by the caller.
            None => return Ok(None),
            Some(_) => {
                return Err(ApiError::new(
                    422,
                    4,
                    "value_schema's \"schema\" is not a record definition (an Avro record \
                     schema as an object or its JSON text)",
                ))
            }
        }
    };
    let encoding = if kind == SchemaType::Avro {
        RecordEncoding::Avro
    } else {
        RecordEncoding::Json
    };
    let codec = RecordCodec::new(encoding, &definition)
        .map_err(|e| ApiError::new(422, 4, format!("value_schema's record definition: {e}")))?;
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .filter(|_| !raw_record)
        .unwrap_or_default()
        .to_string();
    let properties = obj
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(Arc::new(RecordSchema {
        info: SchemaInfo {
            name,
            kind,
            data: definition,
            properties,
        },
        codec,
    })))
}

/// The record schema of a writer's version from the registry, when it is JSON or AVRO.
pub fn from_writer(w: &WriterSchema) -> Option<Arc<RecordSchema>> {
    Some(Arc::new(RecordSchema {
        info: w.info.clone(),
        codec: w.codec.clone()?,
    }))
}

/// A schema info's `type` (given as an object or as its JSON text), upper-cased; `None` when
/// it is not a schema info.
fn info_type(v: &Value) -> Option<String> {
    let obj = match v {
        Value::String(text) => serde_json::from_str::<Value>(text).ok()?,
        other => other.clone(),
    };
    obj.as_object()?
        .get("type")?
        .as_str()
        .map(str::to_ascii_uppercase)
}

/// PIP-64's schema fields (`schema_type`, `key_schema`, `value_schema`) checked: the value
/// format, or the 422 that says what is wrong — 42201 a key/value schema without both
/// schemas, 42202 a structured schema without `value_schema`, 42203 an invalid (or, keys
/// being strings here, non-string) key schema, 42204 an invalid or unsupported value schema.
pub fn check_schemas(
    schema_type: Option<&str>,
    key_schema: Option<&Value>,
    value_schema: Option<&Value>,
) -> std::result::Result<ValueFormat, ApiError> {
    checked_schemas(schema_type, key_schema, value_schema).map(|(f, _)| f)
}

/// [`check_schemas`], with the parsed record schema when the format is `Record`.
pub fn checked_schemas(
    schema_type: Option<&str>,
    key_schema: Option<&Value>,
    value_schema: Option<&Value>,
) -> std::result::Result<(ValueFormat, Option<Arc<RecordSchema>>), ApiError> {
    let value_type = match value_schema {
        None => None,
        Some(v) => Some(info_type(v).ok_or_else(|| {
            ApiError::new(
                422,
                4,
                "value_schema is not a schema info (an object, or its JSON text, with a string \"type\")",
            )
        })?),
    };
    let key_type = match key_schema {
        None => None,
        Some(v) => Some(info_type(v).ok_or_else(|| {
            ApiError::new(
                422,
                3,
                "key_schema is not a schema info (an object, or its JSON text, with a string \"type\")",
            )
        })?),
    };
    // A bare Avro record definition (`{"type": "record", ...}`) takes its type from
    // `schema_type` (see `schemas::record_schema`).
    let value_type = value_type.filter(|v| v != "RECORD");
    let declared = schema_type.map(str::to_ascii_uppercase);
    if let (Some(d), Some(v)) = (&declared, &value_type) {
        if d != v && d != "KEY_VALUE" {
            return Err(ApiError::new(
                422,
                4,
                format!("schema_type {d} and value_schema's type {v} disagree"),
            ));
        }
    }
    let t = declared.or(value_type);
    match t.as_deref() {
        Some("KEY_VALUE") if key_schema.is_none() || value_schema.is_none() => {
            return Err(ApiError::new(
                422,
                1,
                "a KEY_VALUE schema needs both key_schema and value_schema",
            ))
        }
        Some("AVRO" | "PROTOBUF" | "PROTOBUF_NATIVE") if value_schema.is_none() => {
            return Err(ApiError::new(
                422,
                2,
                format!(
                    "schema type {} needs its definition in value_schema",
                    t.as_deref().unwrap_or_default()
                ),
            ))
        }
        _ => {}
    }
    if let Some(k) = key_type.filter(|k| !matches!(k.as_str(), "STRING" | "BYTES" | "NONE")) {
        return Err(ApiError::new(
            422,
            3,
            format!("key_schema type {k} is not supported: message keys are strings here"),
        ));
    }
    // A JSON or AVRO definition is parsed here so a bad one is 42204 before anything else.
    if let Some(r) = record_schema(t.as_deref(), value_schema)? {
        return Ok((ValueFormat::Record, Some(r)));
    }
    ValueFormat::from_schema(t.as_deref(), None)
        .map(|f| (f, None))
        .map_err(|e| ApiError::new(422, 4, e.to_string()))
}

/// `messages[i].value` checked against the record schema and encoded; 42205 when it does
/// not fit.
pub fn encode_value(schema: &RecordSchema, v: &Value, i: usize) -> Result<Bytes, ApiError> {
    let s = &schema.codec.schema;
    let typed = json::from_json(s, s.root, v, 0).map_err(|e| {
        ApiError::invalid_messages(format!(
            "messages[{i}].value does not fit the value schema: {}",
            e.0
        ))
    })?;
    let mut out = Vec::new();
    schema.codec.encode(&typed, &mut out).map_err(|e| {
        ApiError::invalid_messages(format!(
            "messages[{i}].value does not fit the value schema: {}",
            e.0
        ))
    })?;
    Ok(Bytes::from(out))
}

/// The registry's version bytes as PIP-64's integer (the broker writes a big-endian long).
pub fn version_number(v: &[u8]) -> Option<i64> {
    <[u8; 8]>::try_from(v).ok().map(i64::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REC: &str = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":["null","string"],"default":null}]}"#;

    fn schema(t: &str, vs: Value) -> Arc<RecordSchema> {
        record_schema(Some(t), Some(&vs)).unwrap().unwrap()
    }

    #[test]
    fn definitions_come_as_infos_or_bare_records() {
        let info = serde_json::json!({"type": "AVRO", "schema": REC, "name": "n"});
        let s = schema("AVRO", info);
        assert_eq!((s.info.kind, s.info.name.as_str()), (SchemaType::Avro, "n"));
        assert_eq!(s.info.data, REC.as_bytes());
        let bare: Value = serde_json::from_str(REC).unwrap();
        assert_eq!(schema("JSON", bare).info.kind, SchemaType::Json);
        assert_eq!(record_schema(Some("STRING"), None).unwrap(), None);
        let bad = serde_json::json!({"type": "AVRO", "schema": "{\"type\":\"record\"}"});
        assert_eq!(record_schema(None, Some(&bad)).unwrap_err().code, 42204);
        let none = serde_json::json!({"type": "AVRO"});
        assert_eq!(record_schema(None, Some(&none)).unwrap(), None);
    }

    #[test]
    fn values_are_checked_and_encoded() {
        let bare: Value = serde_json::from_str(REC).unwrap();
        let avro = schema("AVRO", bare.clone());
        let b = encode_value(&avro, &serde_json::json!({"a": 1, "b": "x"}), 0).unwrap();
        // zigzag 1, union branch 1, length 1, "x"
        assert_eq!(&b[..], &[2, 2, 2, b'x']);
        let json = schema("JSON", bare);
        let j = encode_value(&json, &serde_json::json!({"a": 2}), 0).unwrap();
        assert_eq!(&j[..], br#"{"a":2,"b":null}"#);
        let e = encode_value(&avro, &serde_json::json!({"a": "no"}), 3).unwrap_err();
        assert_eq!(e.code, 42205);
        assert!(e.message.contains("messages[3]"), "{}", e.message);
        assert_eq!(version_number(&[0, 0, 0, 0, 0, 0, 0, 2]), Some(2));
        assert_eq!(version_number(&[1]), None);
    }
}
