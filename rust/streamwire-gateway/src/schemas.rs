//! PIP-64's schema fields checked (`check_schemas`: the value format, or the 422 that says
//! what is wrong), and schema-typed values (pure): a `value_schema` (and for KEY_VALUE a
//! `key_schema`) holding a definition — a JSON or AVRO record, a PROTOBUF_NATIVE descriptor
//! set, a primitive type, or a key/value pair of those — parsed into a [`Shape`], and each
//! message's JSON `key`/`value` checked against it and encoded (`typed` has the JSON forms).
//! The producer registers the schema info with the broker, which answers its version.

use std::sync::Arc;

use serde_json::Value;

use streamwire_pulsar::schema::keyvalue::{kv_schema, KvEncoding};
use streamwire_pulsar::schema::{SchemaInfo, SchemaType};

use crate::decode::WriterSchema;
use crate::error::ApiError;
use crate::produce::ValueFormat;
use crate::typed::{Encoded, Half, Part, Shape};

/// A typed schema a producer registers and its messages are encoded with.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordSchema {
    pub info: SchemaInfo,
    pub codec: Shape,
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

/// A schema info given in a request (`{"type", "schema", "name", "properties"}`, as an
/// object or its JSON text; for records also the bare Avro definition, typed by `kind`).
/// `definition_needed`: a missing `"schema"` is an error rather than empty data.
fn info_from(obj: &serde_json::Map<String, Value>, kind: SchemaType) -> Result<SchemaInfo, String> {
    let raw_record = obj
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case("record"));
    let data: Vec<u8> = if raw_record {
        serde_json::to_vec(&obj).unwrap_or_default()
    } else {
        match obj.get("schema") {
            Some(Value::String(text)) => text.clone().into_bytes(),
            Some(v @ Value::Object(_)) => serde_json::to_vec(v).unwrap_or_default(),
            None | Some(Value::Null) => Vec::new(),
            Some(_) => {
                return Err(
                    "its \"schema\" is neither a definition object nor its JSON text".into(),
                )
            }
        }
    };
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
    Ok(SchemaInfo {
        name,
        kind,
        data,
        properties,
    })
}

/// The type a schema info names (`None` for a bare Avro record definition).
fn own_type(obj: &serde_json::Map<String, Value>) -> Option<String> {
    obj.get("type")
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase)
        .filter(|t| t != "RECORD")
}

/// The typed schema of a request: KEY_VALUE (both halves, `kv_encoding` INLINE or
/// SEPARATED), PROTOBUF_NATIVE, a primitive type, or JSON / AVRO with a record definition.
/// `None` for BYTES, STRING and JSON without a definition (their values need no codec) and
/// for AVRO without a definition (refused by the caller). A definition that does not parse
/// is 42204 (42203 for a key/value's key half).
pub fn typed_schema(
    schema_type: Option<&str>,
    key_schema: Option<&Value>,
    value_schema: Option<&Value>,
    kv_encoding: Option<&str>,
) -> Result<Option<Arc<RecordSchema>>, ApiError> {
    let value_obj = value_schema.and_then(as_object);
    let t = schema_type
        .map(str::to_ascii_uppercase)
        .or_else(|| value_obj.as_ref().and_then(own_type));
    if t.as_deref() == Some("KEY_VALUE") {
        return key_value_schema(key_schema, value_schema, kv_encoding).map(Some);
    }
    let Some(kind) = t.as_deref().and_then(SchemaInfo::type_from_name) else {
        return Ok(None);
    };
    let info = match &value_obj {
        Some(obj) => {
            info_from(obj, kind).map_err(|e| ApiError::new(422, 4, format!("value_schema: {e}")))?
        }
        None => SchemaInfo {
            name: String::new(),
            kind,
            data: Vec::new(),
            properties: Vec::new(),
        },
    };
    match kind {
        SchemaType::None | SchemaType::String => return Ok(None),
        // No definition: JSON takes any value (as before); AVRO is refused by the caller.
        SchemaType::Json | SchemaType::Avro if info.data.is_empty() => return Ok(None),
        _ => {}
    }
    let codec = Half::from_info(&info)
        .map_err(|e| ApiError::new(422, 4, format!("value_schema: {}", e.0)))?;
    Ok(Some(Arc::new(RecordSchema {
        info,
        codec: Shape::One(codec),
    })))
}

/// A KEY_VALUE schema from its two halves' schema infos.
fn key_value_schema(
    key_schema: Option<&Value>,
    value_schema: Option<&Value>,
    kv_encoding: Option<&str>,
) -> Result<Arc<RecordSchema>, ApiError> {
    let encoding = match kv_encoding.map(str::to_ascii_uppercase).as_deref() {
        None | Some("INLINE") => KvEncoding::Inline,
        Some("SEPARATED") => KvEncoding::Separated,
        Some(other) => {
            return Err(ApiError::new(
                422,
                1,
                format!("kv_encoding must be INLINE or SEPARATED, got {other:?}"),
            ))
        }
    };
    let half = |v: Option<&Value>, which: &str, n: u32| -> Result<(SchemaInfo, Half), ApiError> {
        let bad = |m: String| ApiError::new(422, n, format!("{which}: {m}"));
        let obj = v
            .and_then(as_object)
            .ok_or_else(|| bad("not a schema info".into()))?;
        let kind = match own_type(&obj) {
            Some(t) => SchemaInfo::type_from_name(&t)
                .ok_or_else(|| bad(format!("unknown schema type {t}")))?,
            // A bare Avro record definition.
            None => SchemaType::Avro,
        };
        if kind == SchemaType::KeyValue {
            return Err(bad("a key/value half cannot itself be KEY_VALUE".into()));
        }
        let info = info_from(&obj, kind).map_err(bad)?;
        // The broker refuses a JSON half without a definition too (it parses the data).
        if matches!(kind, SchemaType::Avro | SchemaType::Json) && info.data.is_empty() {
            return Err(bad(format!(
                "a {} half needs its record definition in \"schema\"",
                SchemaInfo::type_name(kind)
            )));
        }
        let h = Half::from_info(&info).map_err(|e| bad(e.0))?;
        Ok((info, h))
    };
    let (ki, kh) = half(key_schema, "key_schema", 3)?;
    let (vi, vh) = half(value_schema, "value_schema", 4)?;
    Ok(Arc::new(RecordSchema {
        info: kv_schema(&ki, &vi, encoding),
        codec: Shape::KeyValue {
            key: kh,
            value: vh,
            encoding,
        },
    }))
}

/// The typed schema of a request without a key schema (see [`typed_schema`]).
pub fn record_schema(
    schema_type: Option<&str>,
    value_schema: Option<&Value>,
) -> Result<Option<Arc<RecordSchema>>, ApiError> {
    typed_schema(schema_type, None, value_schema, None)
}

/// The typed schema of a writer's version from the registry, when the gateway has a codec
/// for it.
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
/// schemas (or with an encoding other than INLINE or SEPARATED), 42202 a structured schema
/// without `value_schema`, 42203 an invalid key schema (outside KEY_VALUE, where keys are
/// the message's string key, one that is not STRING or BYTES), 42204 an invalid or
/// unsupported value schema.
pub fn check_schemas(
    schema_type: Option<&str>,
    key_schema: Option<&Value>,
    value_schema: Option<&Value>,
) -> std::result::Result<ValueFormat, ApiError> {
    checked_schemas(schema_type, key_schema, value_schema, None).map(|(f, _)| f)
}

/// [`check_schemas`], with the parsed typed schema when the format is `Record`
/// (`kv_encoding`: a KEY_VALUE schema's INLINE or SEPARATED, INLINE when `None`).
pub fn checked_schemas(
    schema_type: Option<&str>,
    key_schema: Option<&Value>,
    value_schema: Option<&Value>,
    kv_encoding: Option<&str>,
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
    let kv = t.as_deref() == Some("KEY_VALUE");
    if let Some(k) = key_type.filter(|k| !kv && !matches!(k.as_str(), "STRING" | "BYTES" | "NONE"))
    {
        return Err(ApiError::new(
            422,
            3,
            format!(
                "key_schema type {k} needs schema_type KEY_VALUE: otherwise message keys are \
                 strings"
            ),
        ));
    }
    // A definition is parsed here so a bad one is 42203/42204 before anything else.
    if let Some(r) = typed_schema(t.as_deref(), key_schema, value_schema, kv_encoding)? {
        return Ok((ValueFormat::Record, Some(r)));
    }
    ValueFormat::from_schema(t.as_deref(), None)
        .map(|f| (f, None))
        .map_err(|e| ApiError::new(422, 4, e.to_string()))
}

/// `messages[i]`'s `key` (KEY_VALUE) and `value` checked against the typed schema and
/// encoded; 42205 naming the part that does not fit.
pub fn encode_message(
    schema: &RecordSchema,
    key: Option<&Value>,
    value: &Value,
    i: usize,
) -> Result<Encoded, ApiError> {
    schema.codec.encode(key, value).map_err(|(part, e)| {
        let which = match part {
            Part::Key => "key does not fit the key schema",
            Part::Value => "value does not fit the value schema",
        };
        ApiError::invalid_messages(format!("messages[{i}].{which}: {}", e.0))
    })
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

    fn encode_value(s: &RecordSchema, v: &Value, i: usize) -> Result<Vec<u8>, ApiError> {
        encode_message(s, None, v, i).map(|e| e.payload)
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

    fn proto_definition() -> String {
        use prost::Message as _;
        let set = streamwire_pulsar::fuzzing::sample_set().encode_to_vec();
        String::from_utf8(streamwire_pulsar::schema::protobuf::schema_data(
            &set,
            "sw.test.Sample",
            "sample.proto",
        ))
        .unwrap()
    }

    #[test]
    fn key_value_schemas_register_both_halves() {
        let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        let key = v(r#"{"type": "STRING"}"#);
        let value = serde_json::json!({"type": "AVRO", "schema": REC});
        let (f, s) = checked_schemas(
            Some("KEY_VALUE"),
            Some(&key),
            Some(&value),
            Some("separated"),
        )
        .unwrap();
        let s = s.unwrap();
        assert_eq!(
            (f, s.info.kind),
            (ValueFormat::Record, SchemaType::KeyValue)
        );
        assert!(s
            .info
            .properties
            .contains(&("kv.encoding.type".into(), "SEPARATED".into())));
        let e = encode_message(&s, Some(&v(r#""k""#)), &v(r#"{"a": 1}"#), 0).unwrap();
        assert_eq!(
            (e.payload, e.key_b64.as_deref()),
            (vec![2, 0], Some("aw=="))
        );
        let bad_key = encode_message(&s, Some(&v("1")), &v(r#"{"a": 1}"#), 2).unwrap_err();
        assert_eq!(bad_key.code, 42205);
        assert!(
            bad_key.message.contains("messages[2].key"),
            "{}",
            bad_key.message
        );
        let code = |k: &str, val: &str, enc: Option<&str>| {
            checked_schemas(Some("KEY_VALUE"), Some(&v(k)), Some(&v(val)), enc)
                .map(|_| ())
                .map_err(|e| e.code)
        };
        assert_eq!(
            code(r#"{"type": "AVRO"}"#, r#"{"type": "STRING"}"#, None),
            Err(42203)
        );
        assert_eq!(
            code(
                r#"{"type": "INT32"}"#,
                r#"{"type": "AVRO", "schema": "{"}"#,
                None
            ),
            Err(42204)
        );
        assert_eq!(
            code(r#"{"type": "KEY_VALUE"}"#, r#"{"type": "STRING"}"#, None),
            Err(42203)
        );
        assert_eq!(
            code(r#"{"type": "INT64"}"#, r#"{"type": "BOOLEAN"}"#, None),
            Ok(())
        );
        assert_eq!(
            code(r#"{"type": "STRING"}"#, r#"{"type": "JSON"}"#, None),
            Err(42204)
        );
        assert_eq!(
            code(r#"{"type": "STRING"}"#, r#"{"type": "STRING"}"#, Some("x")),
            Err(42201)
        );
        // Outside KEY_VALUE a key schema must still be a string one.
        assert_eq!(
            checked_schemas(None, Some(&v(r#"{"type": "INT32"}"#)), None, None)
                .unwrap_err()
                .code,
            42203
        );
    }

    #[test]
    fn protobuf_native_schemas_take_the_registry_definition() {
        let def = proto_definition();
        for given in [
            serde_json::json!({"type": "PROTOBUF_NATIVE", "schema": def}),
            serde_json::json!({"type": "PROTOBUF_NATIVE", "schema": serde_json::from_str::<Value>(&def).unwrap()}),
        ] {
            let (f, s) = checked_schemas(None, None, Some(&given), None).unwrap();
            let s = s.unwrap();
            assert_eq!(
                (f, s.info.kind),
                (ValueFormat::Record, SchemaType::ProtobufNative)
            );
            let e = encode_message(&s, None, &serde_json::json!({"i32": 150}), 0).unwrap();
            assert_eq!(e.payload, vec![0x08, 0x96, 0x01]);
            // Already-encoded bytes, as base64 text.
            let e = encode_message(&s, None, &serde_json::json!("CJYB"), 0).unwrap();
            assert_eq!(e.payload, vec![0x08, 0x96, 0x01]);
            let bad = encode_message(&s, None, &serde_json::json!({"nope": 1}), 0).unwrap_err();
            assert_eq!(bad.code, 42205);
        }
        let broken = serde_json::json!({"type": "PROTOBUF_NATIVE", "schema": "{}"});
        assert_eq!(
            checked_schemas(None, None, Some(&broken), None)
                .unwrap_err()
                .code,
            42204
        );
        assert_eq!(
            checked_schemas(Some("PROTOBUF_NATIVE"), None, None, None)
                .unwrap_err()
                .code,
            42202
        );
    }
}
