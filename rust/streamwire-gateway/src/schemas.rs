//! Schema-typed values (pure): a PIP-64 `value_schema` holding a JSON or AVRO record
//! definition, parsed into the Pulsar crate's record codec, and each message's JSON `value`
//! checked against it and encoded (JSON text, or Avro binary). The producer registers the
//! schema info with the broker, which answers its version.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use streamwire_pulsar::schema::{json, RecordCodec, RecordEncoding, SchemaInfo, SchemaType};

use crate::decode::WriterSchema;
use crate::error::ApiError;

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
