//! PROTOBUF_NATIVE values as JSON (pure): the proto3 JSON mapping between a message's JSON
//! object and its protobuf wire bytes, driven by the registered descriptor (the Pulsar
//! crate's [`ProtoSchema`] layout; the wire format itself is `protobuf_wire`'s).
//!
//! Input (JSON → bytes), as proto3 JSON parsers accept it:
//! - fields by their JSON name (lowerCamelCase of the field name, as protoc derives it) or
//!   by their proto name; an unknown field is an error (a typo must not drop data);
//! - `null` or an absent field is the field's default (not written);
//! - 32-bit integers as numbers or decimal strings; 64-bit integers as strings or numbers
//!   (numbers beyond 2^53 lose precision in most JSON writers: send strings);
//! - floats as numbers, or `"NaN"`, `"Infinity"`, `"-Infinity"`;
//! - bytes as base64 (standard or URL-safe alphabet, padding optional);
//! - enums by value name or by number (a number the enum does not name is an error: the
//!   decoded form could not carry it);
//! - nested messages as objects, repeated fields as arrays, maps as objects whose keys are
//!   the map keys as text (`"1"`, `"true"` for integer and bool keys).
//!
//! Output (bytes → JSON) is the canonical form: every field under its JSON name, in
//! declaration order, absent messages and `optional`/oneof fields as `null`; 64-bit
//! integers as strings, 32-bit ones as numbers; bytes standard base64; enums by name
//! (`null` for a number the descriptor does not name). Why every field rather than only
//! the set ones: readers get one fixed shape per schema. A message type nested inside
//! itself is laid out one level deep by the Pulsar crate: below that it is its own
//! serialized bytes, so it reads (and is written) as base64.
//!
//! Well-known types (`google.protobuf.Timestamp`, wrappers, `Struct`, `Any`) are plain
//! messages here, not their special JSON forms.

use std::collections::HashMap;

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{Map, Number, Value as Json};

use crate::typed::kind;
use streamwire_pulsar::schema::avro::{Node, NodeId};
use streamwire_pulsar::schema::protobuf::{FieldLayout, ProtoSchema, Scalar, MAX_DEPTH};
use streamwire_pulsar::schema::protobuf_wire;
use streamwire_pulsar::schema::value::Value;

/// Why a JSON value does not fit the message (or bytes do not decode), with the path of
/// the field at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoJsonError(pub String);

impl std::fmt::Display for ProtoJsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type R<T> = Result<T, ProtoJsonError>;

fn fail<T>(msg: impl Into<String>) -> R<T> {
    Err(ProtoJsonError(msg.into()))
}

/// A PROTOBUF_NATIVE schema with what its JSON mapping needs per message node, computed
/// once: every field's JSON name (by field index), and the layout's fields in declaration
/// order. Why: looking fields up by name for every message would otherwise allocate each
/// name again per message.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtoJson {
    pub schema: ProtoSchema,
    names: HashMap<NodeId, Names>,
}

#[derive(Debug, Clone, PartialEq)]
struct Names {
    /// (proto name, JSON name) by field index.
    fields: Vec<(String, String)>,
    /// Positions in the layout's `fields`, in declaration (field index) order.
    order: Vec<usize>,
}

impl ProtoJson {
    pub fn new(schema: ProtoSchema) -> ProtoJson {
        let mut names = HashMap::new();
        for (&id, layout) in &schema.layouts {
            let Node::Record(r) = schema.avro.node(id) else {
                continue;
            };
            let fields = r
                .fields
                .iter()
                .map(|f| (f.name.clone(), json_name(&f.name)))
                .collect();
            let mut order: Vec<usize> = (0..layout.fields.len()).collect();
            order.sort_by_key(|&i| layout.fields[i].index);
            names.insert(id, Names { fields, order });
        }
        ProtoJson { schema, names }
    }

    fn names(&self, id: NodeId) -> R<&Names> {
        self.names
            .get(&id)
            .ok_or_else(|| ProtoJsonError("not a message node".into()))
    }
}

impl std::ops::Deref for ProtoJson {
    type Target = ProtoSchema;
    fn deref(&self) -> &ProtoSchema {
        &self.schema
    }
}

/// protoc's JSON name of a field: underscores dropped, the letter after one upper-cased.
pub fn json_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Encode the JSON object `j` as the root message's wire bytes.
pub fn encode(s: &ProtoJson, j: &Json) -> R<Vec<u8>> {
    let v = message_from_json(s, s.avro.root, j, 0)?;
    let mut out = Vec::with_capacity(64);
    protobuf_wire::encode(s, &v, &mut out).map_err(|e| ProtoJsonError(e.0))?;
    Ok(out)
}

/// Decode the root message's wire bytes as its canonical JSON object.
pub fn decode(s: &ProtoJson, payload: &[u8]) -> R<Json> {
    let v = protobuf_wire::decode(s, payload).map_err(|e| ProtoJsonError(e.0))?;
    message_to_json(s, s.avro.root, &v, 0)
}

fn message_from_json(s: &ProtoJson, id: NodeId, j: &Json, depth: usize) -> R<Value> {
    if depth >= MAX_DEPTH {
        return fail("messages nest too deeply");
    }
    let Json::Object(obj) = j else {
        return fail(format!("a message is a JSON object, not {}", kind(j)));
    };
    let names = s.names(id)?;
    let Some(layout) = s.layout(id) else {
        return fail("not a message node");
    };
    for k in obj.keys() {
        if !names.fields.iter().any(|(p, j)| p == k || j == k) {
            return fail(format!("{k:?} is not a field of the message"));
        }
    }
    let mut out = vec![Value::Null; names.fields.len()];
    for f in &layout.fields {
        let (name, json) = &names.fields[f.index];
        let given = obj.get(json).or_else(|| obj.get(name));
        out[f.index] = match given {
            None | Some(Json::Null) => Value::Null,
            Some(x) => field_from_json(s, f, x, depth).map_err(|e| at(name, e))?,
        };
    }
    Ok(Value::Record(out))
}

fn at(name: &str, e: ProtoJsonError) -> ProtoJsonError {
    ProtoJsonError(format!("{name}: {}", e.0))
}

fn field_from_json(s: &ProtoJson, f: &FieldLayout, j: &Json, depth: usize) -> R<Value> {
    if let Some(m) = &f.map {
        let Json::Object(obj) = j else {
            return fail(format!("a map is a JSON object, not {}", kind(j)));
        };
        let entry = s
            .layout(m.entry)
            .ok_or(ProtoJsonError("no map entry".into()))?;
        let (Some(kf), Some(vf)) = (entry.field(1), entry.field(2)) else {
            return fail("a map entry without key or value");
        };
        if m.string_keys {
            let mut items = Vec::with_capacity(obj.len());
            for (k, x) in obj {
                let v = one_from_json(s, vf, x, depth).map_err(|e| at(k, e))?;
                items.push((k.clone(), v));
            }
            return Ok(Value::Map(items));
        }
        let mut items = Vec::with_capacity(obj.len());
        for (k, x) in obj {
            let mut e = vec![Value::Null, Value::Null];
            e[kf.index] = key_from_text(kf, k)?;
            e[vf.index] = one_from_json(s, vf, x, depth).map_err(|e| at(k, e))?;
            items.push(Value::Record(e));
        }
        return Ok(Value::Array(items));
    }
    if f.repeated {
        let Json::Array(xs) = j else {
            return fail(format!("a repeated field is a JSON array, not {}", kind(j)));
        };
        return xs
            .iter()
            .enumerate()
            .map(|(i, x)| {
                if x.is_null() {
                    return fail(format!("[{i}]: null in a repeated field"));
                }
                one_from_json(s, f, x, depth).map_err(|e| at(&format!("[{i}]"), e))
            })
            .collect::<R<Vec<_>>>()
            .map(Value::Array);
    }
    let v = one_from_json(s, f, j, depth)?;
    // A field without presence at its default is not written (the canonical encoding).
    Ok(if !f.nullable && is_default(f, &v) {
        Value::Null
    } else {
        v
    })
}

fn is_default(f: &FieldLayout, v: &Value) -> bool {
    match v {
        Value::Int(0) | Value::Long(0) | Value::Boolean(false) => true,
        Value::Float(x) => *x == 0.0 && x.is_sign_positive(),
        Value::Double(x) => *x == 0.0 && x.is_sign_positive(),
        Value::String(x) => x.is_empty(),
        Value::Bytes(x) => x.is_empty(),
        Value::Enum(i) => f.enum_numbers.get(*i as usize) == Some(&0),
        _ => false,
    }
}

/// An integer in `[lo, hi]` from a JSON number (integral) or a decimal string.
fn integer(j: &Json, lo: i128, hi: i128) -> R<i128> {
    let n: Option<i128> = match j {
        Json::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| {
                n.as_f64()
                    .filter(|x| x.fract() == 0.0 && x.abs() < 1.9e19)
                    .map(|x| x as i128)
            }),
        Json::String(t) => t.trim().parse::<i128>().ok(),
        _ => None,
    };
    match n {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        Some(n) => fail(format!("{n} is out of range [{lo}, {hi}]")),
        None => fail(format!("expected an integer, got {}", kind(j))),
    }
}

fn float(j: &Json) -> R<f64> {
    match j {
        Json::Number(n) => n.as_f64().ok_or(ProtoJsonError("not a number".into())),
        Json::String(t) => match t.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            other => other
                .parse::<f64>()
                .map_err(|_| ProtoJsonError(format!("{other:?} is not a number"))),
        },
        _ => fail(format!("expected a number, got {}", kind(j))),
    }
}

fn bytes_from(text: &str) -> R<Vec<u8>> {
    let t = text.trim_end_matches('=');
    STANDARD_NO_PAD
        .decode(t)
        .or_else(|_| URL_SAFE_NO_PAD.decode(t))
        .map_err(|e| ProtoJsonError(format!("bytes must be base64: {e}")))
}

fn enum_symbols<'a>(s: &'a ProtoJson, f: &FieldLayout) -> R<&'a [String]> {
    match s.avro.node(f.node) {
        Node::Enum { symbols, .. } => Ok(symbols),
        _ => fail("an enum field without its values"),
    }
}

/// One value (an item of a repeated field, a map value) of field `f`.
fn one_from_json(s: &ProtoJson, f: &FieldLayout, j: &Json, depth: usize) -> R<Value> {
    const I32: (i128, i128) = (i32::MIN as i128, i32::MAX as i128);
    const U32: (i128, i128) = (0, u32::MAX as i128);
    const I64: (i128, i128) = (i64::MIN as i128, i64::MAX as i128);
    const U64: (i128, i128) = (0, u64::MAX as i128);
    Ok(match f.scalar {
        Scalar::Message => message_from_json(s, f.node, j, depth + 1)?,
        Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => {
            Value::Int(integer(j, I32.0, I32.1)? as i32)
        }
        Scalar::Uint32 | Scalar::Fixed32 => Value::Long(integer(j, U32.0, U32.1)? as i64),
        Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64 => {
            Value::Long(integer(j, I64.0, I64.1)? as i64)
        }
        // The same 64 bits, as the Pulsar crate's layout keeps them.
        Scalar::Uint64 | Scalar::Fixed64 => Value::Long(integer(j, U64.0, U64.1)? as u64 as i64),
        Scalar::Double => Value::Double(float(j)?),
        Scalar::Float => {
            let x = float(j)?;
            if x.is_finite() && x.abs() > f64::from(f32::MAX) {
                return fail(format!("{x} is out of the float range"));
            }
            Value::Float(x as f32)
        }
        Scalar::Bool => match j {
            Json::Bool(b) => Value::Boolean(*b),
            _ => return fail(format!("expected a boolean, got {}", kind(j))),
        },
        Scalar::String => match j {
            Json::String(t) => Value::String(t.clone()),
            _ => return fail(format!("expected a string, got {}", kind(j))),
        },
        Scalar::Bytes => match j {
            Json::String(t) => Value::Bytes(bytes_from(t)?),
            _ => return fail(format!("bytes are a base64 string, not {}", kind(j))),
        },
        Scalar::Enum => {
            let at = match j {
                Json::String(name) => enum_symbols(s, f)?.iter().position(|x| x == name),
                Json::Number(_) => {
                    let n = integer(j, I32.0, I32.1)? as i32;
                    f.enum_numbers.iter().position(|&x| x == n)
                }
                _ => return fail(format!("an enum is a name or a number, not {}", kind(j))),
            };
            match at {
                Some(i) => Value::Enum(i as u32),
                None => return fail(format!("{j} is not a value of the enum")),
            }
        }
    })
}

/// A map key from its JSON object key text.
fn key_from_text(kf: &FieldLayout, text: &str) -> R<Value> {
    match kf.scalar {
        Scalar::Bool => match text {
            "true" => Ok(Value::Boolean(true)),
            "false" => Ok(Value::Boolean(false)),
            _ => fail(format!("map key {text:?} is not true or false")),
        },
        _ => one_from_json_key(kf, text),
    }
}

fn one_from_json_key(kf: &FieldLayout, text: &str) -> R<Value> {
    let j = Json::String(text.to_owned());
    // Integer keys only (string keys take the Avro map path): parse as the key's type.
    let v = match kf.scalar {
        Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => {
            Value::Int(integer(&j, i32::MIN as i128, i32::MAX as i128)? as i32)
        }
        Scalar::Uint32 | Scalar::Fixed32 => Value::Long(integer(&j, 0, u32::MAX as i128)? as i64),
        Scalar::Int64 | Scalar::Sint64 | Scalar::Sfixed64 => {
            Value::Long(integer(&j, i64::MIN as i128, i64::MAX as i128)? as i64)
        }
        Scalar::Uint64 | Scalar::Fixed64 => {
            Value::Long(integer(&j, 0, u64::MAX as i128)? as u64 as i64)
        }
        Scalar::String => Value::String(text.to_owned()),
        other => return fail(format!("map keys of type {other:?} are not valid protobuf")),
    };
    Ok(v)
}

fn message_to_json(s: &ProtoJson, id: NodeId, v: &Value, depth: usize) -> R<Json> {
    if depth >= MAX_DEPTH {
        return fail("messages nest too deeply");
    }
    let names = s.names(id)?;
    let (Some(layout), Value::Record(values)) = (s.layout(id), v) else {
        return fail("a message value must be a record");
    };
    let mut out = Map::new();
    for &at in &names.order {
        let f = &layout.fields[at];
        let Some(fv) = values.get(f.index) else {
            return fail("record has too few fields");
        };
        out.insert(
            names.fields[f.index].1.clone(),
            field_to_json(s, f, fv, depth)?,
        );
    }
    Ok(Json::Object(out))
}

fn field_to_json(s: &ProtoJson, f: &FieldLayout, v: &Value, depth: usize) -> R<Json> {
    match (v, &f.map) {
        (Value::Null, _) => Ok(Json::Null),
        (Value::Map(items), Some(m)) => {
            let vf = s
                .layout(m.entry)
                .and_then(|l| l.field(2))
                .ok_or(ProtoJsonError("map entry without a value".into()))?;
            let mut out = Map::new();
            for (k, x) in items {
                out.insert(k.clone(), one_to_json(s, vf, x, depth)?);
            }
            Ok(Json::Object(out))
        }
        (Value::Array(items), Some(m)) => {
            let el = s
                .layout(m.entry)
                .ok_or(ProtoJsonError("no map entry".into()))?;
            let (Some(kf), Some(vf)) = (el.field(1), el.field(2)) else {
                return fail("a map entry without key or value");
            };
            let mut out = Map::new();
            for it in items {
                let Value::Record(e) = it else {
                    return fail("a map entry must be a record");
                };
                let key = match one_to_json(s, kf, &e[kf.index], depth)? {
                    Json::String(t) => t,
                    other => other.to_string(),
                };
                out.insert(key, one_to_json(s, vf, &e[vf.index], depth)?);
            }
            Ok(Json::Object(out))
        }
        (Value::Array(items), None) if f.repeated => items
            .iter()
            .map(|x| one_to_json(s, f, x, depth))
            .collect::<R<Vec<_>>>()
            .map(Json::Array),
        _ => one_to_json(s, f, v, depth),
    }
}

fn float_json(x: f64) -> Json {
    if x.is_nan() {
        Json::String("NaN".into())
    } else if x.is_infinite() {
        Json::String(if x > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        Number::from_f64(x).map_or(Json::Null, Json::Number)
    }
}

fn one_to_json(s: &ProtoJson, f: &FieldLayout, v: &Value, depth: usize) -> R<Json> {
    Ok(match (f.scalar, v) {
        (_, Value::Null) => Json::Null,
        (Scalar::Message, Value::Record(_)) => message_to_json(s, f.node, v, depth + 1)?,
        (_, Value::Int(i)) => Json::from(*i),
        (Scalar::Uint32 | Scalar::Fixed32, Value::Long(i)) => Json::from(*i),
        (Scalar::Uint64 | Scalar::Fixed64, Value::Long(i)) => Json::String((*i as u64).to_string()),
        (_, Value::Long(i)) => Json::String(i.to_string()),
        // Through the shortest decimal text of the f32, so 1.1f reads 1.1, not 1.100000023…
        (_, Value::Float(x)) if x.is_finite() => {
            float_json(x.to_string().parse::<f64>().unwrap_or(f64::from(*x)))
        }
        (_, Value::Float(x)) => float_json(f64::from(*x)),
        (_, Value::Double(x)) => float_json(*x),
        (_, Value::Boolean(b)) => Json::Bool(*b),
        (_, Value::String(t)) => Json::String(t.clone()),
        (_, Value::Bytes(b)) => Json::String(STANDARD.encode(b)),
        (_, Value::Enum(i)) => match enum_symbols(s, f)?.get(*i as usize) {
            Some(name) => Json::String(name.clone()),
            None => Json::Null,
        },
        (sc, other) => return fail(format!("{other:?} does not fit {sc:?}")),
    })
}

/// Base64 text of already-encoded message bytes (the other form a PROTOBUF_NATIVE `value`
/// may take), checked to decode by the descriptor.
pub fn encoded_from_base64(s: &ProtoJson, text: &str) -> R<Vec<u8>> {
    let b = STANDARD
        .decode(text)
        .or_else(|_| URL_SAFE.decode(text))
        .map_err(|e| ProtoJsonError(format!("not base64: {e}")))?;
    protobuf_wire::decode(s, &b).map_err(|e| {
        ProtoJsonError(format!(
            "the bytes are not a message of the schema: {}",
            e.0
        ))
    })?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use streamwire_pulsar::fuzzing::sample_schema;

    #[test]
    fn json_names_are_protocs() {
        assert_eq!(json_name("by_id"), "byId");
        assert_eq!(json_name("a_b_c"), "aBC");
        assert_eq!(json_name("plain"), "plain");
    }

    #[test]
    fn every_kind_of_field_round_trips() {
        let s = ProtoJson::new(sample_schema());
        let input = json!({
            "i32": -5, "i64": "-9007199254740993", "u32": 4294967295u32, "u64": "18446744073709551615",
            "s32": "-7", "s64": 12, "f32": 7, "f64": "8", "sf32": -9, "sf64": "-10",
            "fl": 1.1, "db": "NaN", "b": true, "s": "hé", "by": "AAEC/w==",
            "color": "BLUE", "inner": {"name": "n", "xs": [1.5, "Infinity"]},
            "nums": [1, "2", -3], "items": [{"name": "a"}, {}],
            "tags": {"x": 1, "y": 2}, "by_id": {"7": "seven", "-1": "minus"},
            "opt": "", "colors": ["GREEN", 5, 0]
        });
        let bytes = encode(&s, &input).unwrap();
        let out = decode(&s, &bytes).unwrap();
        assert_eq!(
            out,
            json!({
                "i32": -5, "i64": "-9007199254740993", "u32": 4294967295u32,
                "u64": "18446744073709551615", "s32": -7, "s64": "12", "f32": 7, "f64": "8",
                "sf32": -9, "sf64": "-10", "fl": 1.1, "db": "NaN", "b": true, "s": "hé",
                "by": "AAEC/w==", "color": "BLUE",
                "inner": {"name": "n", "xs": [1.5, "Infinity"]},
                "nums": ["1", "2", "-3"], "items": [{"name": "a", "xs": []}, {"name": "", "xs": []}],
                "tags": {"x": 1, "y": 2}, "byId": {"7": "seven", "-1": "minus"},
                "opt": "", "colors": ["GREEN", "BLUE", "RED"]
            })
        );
        // The canonical output encodes to the same bytes.
        assert_eq!(encode(&s, &out).unwrap(), bytes);
    }

    #[test]
    fn defaults_are_left_out_and_absent_messages_are_null() {
        let s = ProtoJson::new(sample_schema());
        // Zero values of fields without presence are not written; an optional one is.
        let bytes = encode(&s, &json!({"i32": 0, "s": "", "color": "RED", "opt": ""})).unwrap();
        assert_eq!(bytes, vec![0xb2, 0x01, 0x00]);
        let out = decode(&s, &[]).unwrap();
        assert_eq!(out["inner"], Json::Null);
        assert_eq!(out["opt"], Json::Null);
        assert_eq!(out["i64"], json!("0"));
        assert_eq!(out["color"], json!("RED"));
        assert_eq!(out["tags"], json!({}));
        // Wire bytes as protoc writes them: field 1 varint 150.
        assert_eq!(
            encode(&s, &json!({"i32": 150})).unwrap(),
            vec![0x08, 0x96, 0x01]
        );
        assert_eq!(decode(&s, &[0x08, 0x96, 0x01]).unwrap()["i32"], json!(150));
    }

    #[test]
    fn values_that_do_not_fit_say_where() {
        let s = ProtoJson::new(sample_schema());
        let err = |j: Json| encode(&s, &j).unwrap_err().0;
        assert!(err(json!({"nope": 1})).contains("\"nope\" is not a field"));
        assert!(err(json!({"i32": 2147483648u64})).starts_with("i32: "));
        assert!(err(json!({"u32": -1})).contains("out of range"));
        assert!(err(json!({"b": 1})).contains("boolean"));
        assert!(err(json!({"color": "PINK"})).contains("not a value of the enum"));
        assert!(err(json!({"color": 3})).contains("not a value of the enum"));
        assert!(err(json!({"by": "%%"})).contains("base64"));
        assert!(err(json!({"inner": {"name": 5}})).starts_with("inner: name: "));
        assert!(err(json!({"nums": [1, null]})).contains("[1]"));
        assert!(err(json!({"by_id": {"x": "y"}})).contains("integer"));
        assert!(err(json!({"fl": 1e39})).contains("float range"));
        assert!(err(json!([1])).contains("JSON object"));
        assert!(decode(&s, &[0x08]).is_err(), "truncated varint");
        // Already-encoded bytes are checked to decode.
        assert!(encoded_from_base64(&s, "CJYB").is_ok());
        assert!(encoded_from_base64(&s, "CA==").is_err());
        assert!(encoded_from_base64(&s, "!").is_err());
    }

    fn i64_text() -> impl Strategy<Value = (Json, Json)> {
        // (input: a number or a string, canonical output: the string)
        any::<i64>().prop_flat_map(|n| {
            prop_oneof![
                Just((json!(n.to_string()), json!(n.to_string()))),
                Just((json!(n), json!(n.to_string()))),
            ]
        })
    }

    fn inner() -> impl Strategy<Value = Json> {
        ("[a-z]{0,6}", proptest::collection::vec(-1e9f64..1e9, 0..3))
            .prop_map(|(name, xs)| json!({"name": name, "xs": xs}))
    }

    prop_compose! {
        fn sample()(
            i32v in any::<i32>(),
            i64v in i64_text(),
            u64v in any::<u64>(),
            s64 in any::<i64>(),
            fl in -1e30f32..1e30,
            db in any::<f64>().prop_filter("finite", |x| x.is_finite()),
            b in any::<bool>(),
            s in "\\PC{0,12}",
            by in proptest::collection::vec(any::<u8>(), 0..12),
            color in prop_oneof![Just("RED"), Just("GREEN"), Just("BLUE")],
            inner in proptest::option::of(inner()),
            nums in proptest::collection::vec(any::<i64>(), 0..4),
            items in proptest::collection::vec(inner(), 0..3),
            tags in proptest::collection::btree_map("[a-z]{1,4}", any::<i32>(), 0..3),
            by_id in proptest::collection::btree_map(any::<i32>(), "[a-z]{0,4}", 0..3),
            opt in proptest::option::of("[a-z]{0,4}"),
        ) -> (Json, Json) {
            let by_id: serde_json::Map<String, Json> =
                by_id.into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
            let fl_out = fl.to_string().parse::<f64>().unwrap();
            let input = json!({
                "i32": i32v, "i64": i64v.0, "u64": u64v.to_string(), "s64": s64,
                "fl": fl, "db": db, "b": b, "s": s, "by": STANDARD.encode(&by),
                "color": color, "inner": inner, "nums": nums, "items": items,
                "tags": tags, "byId": by_id, "opt": opt,
            });
            let expected = json!({
                "i32": i32v, "i64": i64v.1, "u64": u64v.to_string(), "s64": s64.to_string(),
                "fl": fl_out, "db": db, "b": b, "s": s, "by": STANDARD.encode(&by),
                "color": color, "inner": inner, "nums": nums.iter().map(|n| n.to_string()).collect::<Vec<_>>(),
                "items": items, "tags": tags, "byId": by_id, "opt": opt,
            });
            (input, expected)
        }
    }

    proptest! {
        /// JSON → protobuf bytes → JSON gives every given field back in canonical form, and
        /// the canonical JSON encodes to the same bytes.
        #[test]
        fn json_to_protobuf_and_back((input, expected) in sample()) {
            let s = ProtoJson::new(sample_schema());
            let bytes = encode(&s, &input).unwrap();
            let out = decode(&s, &bytes).unwrap();
            for (k, v) in expected.as_object().unwrap() {
                prop_assert_eq!(&out[k], v, "field {}", k);
            }
            prop_assert_eq!(encode(&s, &out).unwrap(), bytes);
        }

        /// Whatever bytes decode give JSON that encodes and decodes to the same JSON.
        #[test]
        fn decoded_bytes_reencode(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let s = ProtoJson::new(sample_schema());
            if let Ok(j) = decode(&s, &data) {
                let again = decode(&s, &encode(&s, &j).unwrap()).unwrap();
                prop_assert_eq!(format!("{again}"), format!("{j}"));
            }
        }
    }
}
