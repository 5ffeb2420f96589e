//! Schema-typed values between JSON and payloads (pure): every value schema the gateway
//! encodes and decodes — JSON and AVRO records, PROTOBUF_NATIVE messages, the primitive
//! types, and KEY_VALUE pairs of any of those (INLINE or SEPARATED).
//!
//! JSON forms, per schema type (the same on produce and on read):
//! - BYTES (and NONE): base64 text; STRING: a JSON string; JSON without a definition: any
//!   JSON value (its text is the payload);
//! - JSON / AVRO with a record definition: the record as a JSON object (`schema::json`);
//! - PROTOBUF_NATIVE: the message as its proto3 JSON object (`proto_json`), or a JSON
//!   string holding base64 of the message's bytes already encoded (checked to decode);
//! - BOOLEAN: true/false; INT8/16/32/64: a number (INT64 also a decimal string);
//!   FLOAT/DOUBLE: a number. Payloads are the Java client's: big-endian, 1/2/4/8 bytes,
//!   IEEE 754 bits for floats, one byte 0/1 for booleans.
//! - KEY_VALUE: the message's `key` is encoded by the key half and `value` by the value
//!   half. INLINE: both in the payload (`[i32 len][key][i32 len][value]`, -1 a null half).
//!   SEPARATED: the value is the payload and the key bytes travel base64 as the message key
//!   with `partition_key_b64_encoded` set — for every key type, as the Java client and the
//!   streamwire binding do.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::Value as Json;

use streamwire_pulsar::schema::keyvalue::{
    encode_inline, split_halves, split_kv_schema, KvEncoding,
};
use streamwire_pulsar::schema::protobuf::ProtoSchema;
use streamwire_pulsar::schema::{json, RecordCodec, RecordEncoding, SchemaInfo, SchemaType};

use crate::proto_json::{self, ProtoJson};

/// How one value (a whole message value, or one half of a key/value) is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Half {
    Bytes,
    Text,
    /// JSON without a record definition: any JSON value.
    AnyJson,
    Primitive(SchemaType),
    Record(RecordCodec),
    Protobuf(Arc<ProtoJson>),
}

/// A value's whole codec.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    One(Half),
    KeyValue {
        key: Half,
        value: Half,
        encoding: KvEncoding,
    },
}

/// Why a schema is not usable, or a value does not fit it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedError(pub String);

type R<T> = Result<T, TypedError>;

fn fail<T>(msg: impl Into<String>) -> R<T> {
    Err(TypedError(msg.into()))
}

impl Half {
    /// The codec of a (non-KEY_VALUE) schema info.
    pub fn from_info(info: &SchemaInfo) -> R<Half> {
        Ok(match info.kind {
            SchemaType::None => Half::Bytes,
            SchemaType::String => Half::Text,
            SchemaType::Json if info.data.is_empty() => Half::AnyJson,
            SchemaType::Json | SchemaType::Avro => {
                let enc = if info.kind == SchemaType::Avro {
                    RecordEncoding::Avro
                } else {
                    RecordEncoding::Json
                };
                Half::Record(
                    RecordCodec::new(enc, &info.data)
                        .map_err(|e| TypedError(format!("the record definition: {e}")))?,
                )
            }
            SchemaType::ProtobufNative => Half::Protobuf(Arc::new(ProtoJson::new(
                ProtoSchema::parse(&info.data).map_err(|e| TypedError(e.0))?,
            ))),
            SchemaType::Bool
            | SchemaType::Int8
            | SchemaType::Int16
            | SchemaType::Int32
            | SchemaType::Int64
            | SchemaType::Float
            | SchemaType::Double => Half::Primitive(info.kind),
            other => {
                return fail(format!(
                    "schema type {} is not supported here",
                    SchemaInfo::type_name(other)
                ))
            }
        })
    }

    /// Encode `j`; `None` for JSON null (a null half of a key/value).
    pub fn encode(&self, j: &Json) -> R<Option<Vec<u8>>> {
        if j.is_null() && !matches!(self, Half::AnyJson) {
            return Ok(None);
        }
        Ok(Some(match self {
            Half::Bytes => match j {
                Json::String(t) => B64
                    .decode(t)
                    .map_err(|e| TypedError(format!("not base64: {e}")))?,
                _ => return fail(format!("BYTES are a base64 string, not {}", kind(j))),
            },
            Half::Text => match j {
                Json::String(t) => t.as_bytes().to_vec(),
                _ => return fail(format!("STRING takes a string, not {}", kind(j))),
            },
            Half::AnyJson => j.to_string().into_bytes(),
            Half::Primitive(t) => primitive(*t, j)?,
            Half::Record(codec) => {
                let s = &codec.schema;
                let v = json::from_json(s, s.root, j, 0).map_err(|e| TypedError(e.0))?;
                let mut out = Vec::with_capacity(64);
                codec.encode(&v, &mut out).map_err(|e| TypedError(e.0))?;
                out
            }
            Half::Protobuf(p) => match j {
                Json::String(t) => proto_json::encoded_from_base64(p, t),
                _ => proto_json::encode(p, j),
            }
            .map_err(|e| TypedError(e.0))?,
        }))
    }

    /// Decode a payload (half) as its JSON value; `None` when it does not decode.
    pub fn decode(&self, b: &[u8]) -> Option<Json> {
        match self {
            Half::Bytes => Some(Json::String(B64.encode(b))),
            Half::Text => std::str::from_utf8(b).ok().map(|t| Json::String(t.into())),
            Half::AnyJson => serde_json::from_slice(b).ok(),
            Half::Primitive(t) => primitive_json(*t, b),
            Half::Record(codec) => match codec.encoding {
                // JSON payloads are the value's text already.
                RecordEncoding::Json => serde_json::from_slice(b).ok(),
                RecordEncoding::Avro => {
                    let v = codec.decode(b).ok()?;
                    let mut text = Vec::with_capacity(b.len() * 2);
                    json::encode(&codec.schema, codec.schema.root, &v, &mut text).ok()?;
                    serde_json::from_slice(&text).ok()
                }
            },
            Half::Protobuf(p) => proto_json::decode(p, b).ok(),
        }
    }

    /// The JSON value a broker-dialect text stands for: the text itself for STRING,
    /// base64 for BYTES, else the JSON it holds (a record, a number, `true`).
    pub fn from_text(&self, text: &str) -> R<Json> {
        match self {
            Half::Text | Half::Bytes => Ok(Json::String(text.to_owned())),
            _ => serde_json::from_str(text)
                .map_err(|e| TypedError(format!("the text is not a JSON value: {e}"))),
        }
    }
}

/// What a JSON value is, for error messages: the Pulsar crate's wording, shared.
pub(crate) use streamwire_pulsar::schema::json::json_kind as kind;

fn int_in(j: &Json, lo: i64, hi: i64) -> R<i64> {
    let n = match j {
        Json::Number(n) => n.as_i64(),
        Json::String(t) => t.trim().parse::<i64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        Some(n) => fail(format!("{n} is out of range [{lo}, {hi}]")),
        None => fail(format!("expected an integer, got {}", kind(j))),
    }
}

/// A primitive value's payload (the Java client's encodings: big-endian).
fn primitive(t: SchemaType, j: &Json) -> R<Vec<u8>> {
    let float = || match j {
        Json::Number(n) => n.as_f64().ok_or(TypedError("not a number".into())),
        _ => fail(format!("expected a number, got {}", kind(j))),
    };
    Ok(match t {
        SchemaType::Bool => match j {
            Json::Bool(b) => vec![u8::from(*b)],
            _ => return fail(format!("BOOLEAN takes true or false, not {}", kind(j))),
        },
        SchemaType::Int8 => (int_in(j, i8::MIN.into(), i8::MAX.into())? as i8)
            .to_be_bytes()
            .to_vec(),
        SchemaType::Int16 => (int_in(j, i16::MIN.into(), i16::MAX.into())? as i16)
            .to_be_bytes()
            .to_vec(),
        SchemaType::Int32 => (int_in(j, i32::MIN.into(), i32::MAX.into())? as i32)
            .to_be_bytes()
            .to_vec(),
        SchemaType::Int64 => int_in(j, i64::MIN, i64::MAX)?.to_be_bytes().to_vec(),
        SchemaType::Float => (float()? as f32).to_be_bytes().to_vec(),
        SchemaType::Double => float()?.to_be_bytes().to_vec(),
        _ => return fail("not a primitive type"),
    })
}

fn primitive_json(t: SchemaType, b: &[u8]) -> Option<Json> {
    Some(match t {
        SchemaType::Bool => Json::Bool(*<&[u8; 1]>::try_from(b).ok()? != [0]),
        SchemaType::Int8 => Json::from(i8::from_be_bytes(b.try_into().ok()?)),
        SchemaType::Int16 => Json::from(i16::from_be_bytes(b.try_into().ok()?)),
        SchemaType::Int32 => Json::from(i32::from_be_bytes(b.try_into().ok()?)),
        SchemaType::Int64 => Json::from(i64::from_be_bytes(b.try_into().ok()?)),
        SchemaType::Float => {
            let x = f32::from_be_bytes(b.try_into().ok()?);
            // Shortest text of the f32, so 1.1f reads 1.1.
            serde_json::Number::from_f64(x.to_string().parse().ok()?).map(Json::Number)?
        }
        SchemaType::Double => serde_json::Number::from_f64(f64::from_be_bytes(b.try_into().ok()?))
            .map(Json::Number)?,
        _ => return None,
    })
}

/// One message's payload and, for a SEPARATED key/value, its (base64) key.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub payload: Vec<u8>,
    /// Some: the message key is this base64 text of the key half (`partition_key_b64`).
    pub key_b64: Option<String>,
    /// A null value (JSON null for a record/protobuf value or value half): sent with
    /// `null_value` set and an empty payload, as the Java client sends `value(null)`.
    pub null_value: bool,
}

/// Which part of a message did not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Key,
    Value,
}

impl Shape {
    /// The codec of a schema info (KEY_VALUE split into its halves).
    pub fn from_info(info: &SchemaInfo) -> R<Shape> {
        if info.kind != SchemaType::KeyValue {
            return Half::from_info(info).map(Shape::One);
        }
        let (k, v, encoding) = split_kv_schema(info).map_err(|e| TypedError(e.0))?;
        Ok(Shape::KeyValue {
            key: Half::from_info(&k).map_err(|e| TypedError(format!("key schema: {}", e.0)))?,
            value: Half::from_info(&v).map_err(|e| TypedError(format!("value schema: {}", e.0)))?,
            encoding,
        })
    }

    pub fn is_key_value(&self) -> bool {
        matches!(self, Shape::KeyValue { .. })
    }

    /// Encode a message's `key` (key/value schemas only) and `value`.
    pub fn encode(&self, key: Option<&Json>, value: &Json) -> Result<Encoded, (Part, TypedError)> {
        match self {
            Shape::One(h) => {
                let v = h.encode(value).map_err(|e| (Part::Value, e))?;
                Ok(Encoded {
                    null_value: v.is_none(),
                    payload: v.unwrap_or_default(),
                    key_b64: None,
                })
            }
            Shape::KeyValue {
                key: kh,
                value: vh,
                encoding,
            } => {
                let k = kh
                    .encode(key.unwrap_or(&Json::Null))
                    .map_err(|e| (Part::Key, e))?;
                let v = vh.encode(value).map_err(|e| (Part::Value, e))?;
                Ok(match encoding {
                    KvEncoding::Inline => Encoded {
                        payload: encode_inline(k.as_deref(), v.as_deref()),
                        key_b64: None,
                        null_value: false,
                    },
                    // A null key half is no message key and a null value half `null_value`
                    // (not base64 of nothing / an empty payload, which read back as an empty
                    // key or value): what the Java client sends for null halves.
                    KvEncoding::Separated => Encoded {
                        null_value: v.is_none(),
                        payload: v.unwrap_or_default(),
                        key_b64: k.map(|k| B64.encode(k)),
                    },
                })
            }
        }
    }

    /// Decode a message: (the decoded key for key/value schemas, the value); `None` when
    /// it does not decode. `key` is the message key (SEPARATED: base64 of the key half);
    /// `null_value` the message's flag (a null value, or a SEPARATED null value half).
    pub fn decode(
        &self,
        payload: &[u8],
        key: Option<&str>,
        null_value: bool,
    ) -> Option<(Option<Json>, Json)> {
        match self {
            Shape::One(_) if null_value => Some((None, Json::Null)),
            Shape::One(h) => Some((None, h.decode(payload)?)),
            Shape::KeyValue {
                key: kh,
                value: vh,
                encoding,
            } => {
                let (k, v) = match encoding {
                    KvEncoding::Inline => {
                        let (k, v) = split_halves(payload).ok()?;
                        (k.map(<[u8]>::to_vec), v.map(<[u8]>::to_vec))
                    }
                    KvEncoding::Separated => {
                        let k = match key {
                            Some(t) => Some(B64.decode(t).ok()?),
                            None => None,
                        };
                        (k, (!null_value).then(|| payload.to_vec()))
                    }
                };
                let k = match k {
                    Some(k) => kh.decode(&k)?,
                    None => Json::Null,
                };
                let v = match v {
                    Some(v) => vh.decode(&v)?,
                    None => Json::Null,
                };
                Some((Some(k), v))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use streamwire_pulsar::schema::keyvalue::kv_schema;

    fn info(kind: SchemaType, data: &str) -> SchemaInfo {
        SchemaInfo {
            name: String::new(),
            kind,
            data: data.as_bytes().to_vec(),
            properties: vec![],
        }
    }

    const REC: &str = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#;

    #[test]
    fn primitives_are_the_java_clients_bytes() {
        let enc = |t, j: Json| Half::Primitive(t).encode(&j).unwrap().unwrap();
        assert_eq!(enc(SchemaType::Int32, json!(258)), vec![0, 0, 1, 2]);
        assert_eq!(enc(SchemaType::Int16, json!(-2)), vec![0xff, 0xfe]);
        assert_eq!(enc(SchemaType::Int8, json!(7)), vec![7]);
        assert_eq!(
            enc(SchemaType::Int64, json!("1")),
            vec![0, 0, 0, 0, 0, 0, 0, 1]
        );
        assert_eq!(enc(SchemaType::Bool, json!(true)), vec![1]);
        assert_eq!(enc(SchemaType::Float, json!(1.5)), 1.5f32.to_be_bytes());
        assert_eq!(enc(SchemaType::Double, json!(2.5)), 2.5f64.to_be_bytes());
        for (t, j) in [
            (SchemaType::Int32, json!(258)),
            (SchemaType::Int16, json!(-2)),
            (SchemaType::Bool, json!(false)),
            (SchemaType::Float, json!(1.1)),
            (SchemaType::Double, json!(-0.25)),
            (SchemaType::Int64, json!(-5)),
        ] {
            let h = Half::Primitive(t);
            assert_eq!(h.decode(&h.encode(&j).unwrap().unwrap()), Some(j));
        }
        assert!(Half::Primitive(SchemaType::Int8)
            .encode(&json!(300))
            .is_err());
        assert!(Half::Primitive(SchemaType::Bool).encode(&json!(1)).is_err());
        assert_eq!(Half::Primitive(SchemaType::Int32).decode(&[1]), None);
    }

    #[test]
    fn key_values_inline_and_separated() {
        let k = info(SchemaType::String, "");
        let v = info(SchemaType::Avro, REC);
        let inline = Shape::from_info(&kv_schema(&k, &v, KvEncoding::Inline)).unwrap();
        let e = inline.encode(Some(&json!("k1")), &json!({"a": 1})).unwrap();
        assert_eq!(e.payload, vec![0, 0, 0, 2, b'k', b'1', 0, 0, 0, 1, 2]);
        assert_eq!(e.key_b64, None);
        assert_eq!(
            inline.decode(&e.payload, None, false),
            Some((Some(json!("k1")), json!({"a": 1})))
        );
        let sep = Shape::from_info(&kv_schema(&v, &k, KvEncoding::Separated)).unwrap();
        let e = sep.encode(Some(&json!({"a": 2})), &json!("val")).unwrap();
        assert_eq!(e.payload, b"val");
        assert_eq!(e.key_b64.as_deref(), Some("BA=="));
        assert_eq!(
            sep.decode(&e.payload, e.key_b64.as_deref(), e.null_value),
            Some((Some(json!({"a": 2})), json!("val")))
        );
        // A null key half: -1 inline.
        let e = inline.encode(None, &json!({"a": 3})).unwrap();
        assert_eq!(&e.payload[..4], &(-1i32).to_be_bytes());
        assert_eq!(
            inline.decode(&e.payload, None, false).unwrap().0,
            Some(Json::Null)
        );
        // SEPARATED null halves: no message key, and `null_value` with an empty payload
        // (the Java client's null halves), read back as nulls.
        let sep_rec = Shape::from_info(&kv_schema(&k, &v, KvEncoding::Separated)).unwrap();
        let e = sep_rec.encode(None, &Json::Null).unwrap();
        assert_eq!((e.key_b64.as_deref(), e.null_value), (None, true));
        assert!(e.payload.is_empty());
        assert_eq!(
            sep_rec.decode(&e.payload, None, e.null_value),
            Some((Some(Json::Null), Json::Null))
        );
        // A null record value of a plain schema is `null_value` too.
        let one = Shape::from_info(&v).unwrap();
        let e = one.encode(None, &Json::Null).unwrap();
        assert!(e.null_value && e.payload.is_empty());
        assert_eq!(one.decode(&[], None, true), Some((None, Json::Null)));
        // Which half is at fault.
        assert_eq!(
            inline
                .encode(Some(&json!(5)), &json!({"a": 1}))
                .unwrap_err()
                .0,
            Part::Key
        );
        assert_eq!(
            inline
                .encode(Some(&json!("k")), &json!({"a": "x"}))
                .unwrap_err()
                .0,
            Part::Value
        );
        assert_eq!(inline.decode(&[0, 0], None, false), None);
    }

    #[test]
    fn unsupported_types_and_bad_definitions_are_errors() {
        assert!(Half::from_info(&info(SchemaType::Protobuf, "x")).is_err());
        assert!(Half::from_info(&info(SchemaType::Avro, "{")).is_err());
        assert!(Half::from_info(&info(SchemaType::ProtobufNative, "{}")).is_err());
        assert_eq!(
            Half::from_info(&info(SchemaType::Json, "")).unwrap(),
            Half::AnyJson
        );
        assert_eq!(Half::Text.from_text("x").unwrap(), json!("x"));
        assert_eq!(
            Half::Primitive(SchemaType::Int32).from_text("5").unwrap(),
            json!(5)
        );
        assert!(Half::AnyJson.from_text("{").is_err());
    }
}
