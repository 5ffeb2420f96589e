//! JSON payloads of a JSON-typed Pulsar schema: a [`Value`] as plain JSON text by its
//! record schema, and back (pure).
//!
//! Plain JSON, not Avro's JSON encoding: unions are the bare value (or `null`), as the Java
//! client's Jackson mapper and the official Python client's `json.dumps` write them. Bytes
//! are written as a string (the Python client writes `bytes.decode()`); enums as their
//! symbol. Decoding is lenient where the writers differ: an int is accepted for a float
//! field, a missing field takes its default (or null when nullable), unknown fields are
//! ignored, and an enum may come as one of the values an [`EnumValues`] table gives (the
//! official Python client writes a Python `Enum` by its `.value`, not its name).

use serde_json::Value as Json;

use super::avro::{AvroSchema, Node, NodeId};
use super::binary::value_kind;
use super::value::{branch_for, type_name, Value, ValueError};

fn fail<T>(msg: impl Into<String>) -> Result<T, ValueError> {
    Err(ValueError(msg.into()))
}

const MAX_DEPTH: usize = 128;

/// The values other writers put in place of enum symbols: for each enum (by full or short
/// name), a JSON value and the symbol it stands for. The official Python client's
/// `JsonSchema` writes a Python `Enum` member as its `.value` (`2`, `"a-val"`); the table
/// comes from the reader's `Enum` classes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EnumValues {
    pub by_enum: Vec<(String, Vec<(Json, String)>)>,
    /// Write an enum as its value from the table (the official Python client's form)
    /// instead of its symbol (the Java client's form, and the default).
    pub write_values: bool,
}

/// No table: symbols only.
pub static NO_ENUM_VALUES: EnumValues = EnumValues {
    by_enum: Vec::new(),
    write_values: false,
};

impl EnumValues {
    fn table(&self, name: &str) -> Option<&[(Json, String)]> {
        let short = |n: &str| n.rsplit('.').next().unwrap_or(n).to_owned();
        self.by_enum
            .iter()
            .find(|(n, _)| n == name)
            .or_else(|| {
                let s = short(name);
                self.by_enum.iter().find(|(n, _)| short(n) == s)
            })
            .map(|(_, t)| t.as_slice())
    }

    /// The symbol index a value `j` stands for in enum `name` (None: not one of its values).
    pub fn symbol_index(&self, name: &str, symbols: &[String], j: &Json) -> Option<u32> {
        let (_, sym) = self.table(name)?.iter().find(|(v, _)| v == j)?;
        symbols.iter().position(|s| s == sym).map(|i| i as u32)
    }

    fn value_of(&self, name: &str, symbol: &str) -> Option<&Json> {
        self.table(name)?
            .iter()
            .find(|(_, s)| s == symbol)
            .map(|(v, _)| v)
    }
}

/// Append `v` (following node `id`) as compact JSON text.
pub fn encode(
    schema: &AvroSchema,
    id: NodeId,
    v: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ValueError> {
    write(schema, id, v, out, &NO_ENUM_VALUES, 0)
}

/// [`encode`], enums written as `enums` says.
pub fn encode_with(
    schema: &AvroSchema,
    id: NodeId,
    v: &Value,
    out: &mut Vec<u8>,
    enums: &EnumValues,
) -> Result<(), ValueError> {
    write(schema, id, v, out, enums, 0)
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    // serde_json's escaping; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn write(
    schema: &AvroSchema,
    id: NodeId,
    v: &Value,
    out: &mut Vec<u8>,
    enums: &EnumValues,
    depth: usize,
) -> Result<(), ValueError> {
    if depth > MAX_DEPTH {
        return fail("value nested too deeply");
    }
    match (schema.node(id), v) {
        (Node::Null, Value::Null) => out.extend_from_slice(b"null"),
        (Node::Boolean, Value::Boolean(b)) => {
            out.extend_from_slice(if *b { b"true" } else { b"false" })
        }
        (Node::Int, Value::Int(i)) => out.extend_from_slice(i.to_string().as_bytes()),
        (Node::Long, Value::Long(i)) => out.extend_from_slice(i.to_string().as_bytes()),
        (Node::Float, Value::Float(f)) => write_float(out, f64::from(*f))?,
        (Node::Double, Value::Double(f)) => write_float(out, *f)?,
        (Node::Bytes, Value::Bytes(b)) | (Node::Fixed { .. }, Value::Fixed(b)) => {
            let s = std::str::from_utf8(b)
                .map_err(|_| ValueError("bytes in a JSON schema must be UTF-8 text".into()))?;
            write_str(out, s)
        }
        (Node::String, Value::String(s)) => write_str(out, s),
        (Node::Record(r), Value::Record(fields)) if r.fields.len() == fields.len() => {
            out.push(b'{');
            for (i, (f, fv)) in r.fields.iter().zip(fields).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, &f.name);
                out.push(b':');
                write(schema, f.node, fv, out, enums, depth + 1)
                    .map_err(|e| ValueError(format!("{}: {}", f.name, e.0)))?;
            }
            out.push(b'}');
        }
        (Node::Enum { symbols, name }, Value::Enum(i)) if (*i as usize) < symbols.len() => {
            let sym = &symbols[*i as usize];
            match enums
                .write_values
                .then(|| enums.value_of(name, sym))
                .flatten()
            {
                Some(j) => {
                    let _ = serde_json::to_writer(&mut *out, j);
                }
                None => write_str(out, sym),
            }
        }
        (Node::Array(item), Value::Array(items)) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(schema, *item, x, out, enums, depth + 1)?;
            }
            out.push(b']');
        }
        (Node::Map(val), Value::Map(entries)) => {
            out.push(b'{');
            for (i, (k, x)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write(schema, *val, x, out, enums, depth + 1)?;
            }
            out.push(b'}');
        }
        (Node::Union(branches), v) => match branch_for(schema, branches, v) {
            Some(b) => write(schema, branches[b], v, out, enums, depth + 1)?,
            None => {
                return fail(format!(
                    "a {} does not fit {}",
                    value_kind(v),
                    type_name(schema, id)
                ))
            }
        },
        (_, v) => {
            return fail(format!(
                "expected {}, got a {}",
                type_name(schema, id),
                value_kind(v)
            ))
        }
    }
    Ok(())
}

fn write_float(out: &mut Vec<u8>, f: f64) -> Result<(), ValueError> {
    if !f.is_finite() {
        return fail(format!("{f} has no JSON form"));
    }
    let _ = serde_json::to_writer(&mut *out, &f);
    Ok(())
}

/// Decode JSON text into a value of node `id` (streamed by the schema, see `json_read`).
pub fn decode(schema: &AvroSchema, id: NodeId, data: &[u8]) -> Result<Value, ValueError> {
    super::json_read::decode(schema, id, data, &NO_ENUM_VALUES)
}

/// [`decode`], also taking an enum as one of the values `enums` lists.
pub fn decode_with(
    schema: &AvroSchema,
    id: NodeId,
    data: &[u8],
    enums: &EnumValues,
) -> Result<Value, ValueError> {
    super::json_read::decode(schema, id, data, enums)
}

/// A JSON value (a payload's, or a field default's) as a value of node `id`.
pub fn from_json(
    schema: &AvroSchema,
    id: NodeId,
    j: &Json,
    depth: usize,
) -> Result<Value, ValueError> {
    if depth > MAX_DEPTH {
        return fail("value nested too deeply");
    }
    let wrong = || {
        ValueError(format!(
            "expected {}, got {}",
            type_name(schema, id),
            json_kind(j)
        ))
    };
    Ok(match (schema.node(id), j) {
        (Node::Null, Json::Null) => Value::Null,
        (Node::Boolean, Json::Bool(b)) => Value::Boolean(*b),
        (Node::Int, Json::Number(n)) => Value::Int(
            n.as_i64()
                .and_then(|x| i32::try_from(x).ok())
                .ok_or_else(|| ValueError(format!("{n} is not a 32-bit integer")))?,
        ),
        (Node::Long, Json::Number(n)) => Value::Long(
            n.as_i64()
                .ok_or_else(|| ValueError(format!("{n} is not a 64-bit integer")))?,
        ),
        (Node::Float, Json::Number(n)) => Value::Float(n.as_f64().ok_or_else(wrong)? as f32),
        (Node::Double, Json::Number(n)) => Value::Double(n.as_f64().ok_or_else(wrong)?),
        (Node::Bytes, Json::String(s)) => Value::Bytes(s.as_bytes().to_vec()),
        (Node::Fixed { size, .. }, Json::String(s)) if s.len() == *size => {
            Value::Fixed(s.as_bytes().to_vec())
        }
        (Node::String, Json::String(s)) => Value::String(s.clone()),
        (Node::Record(r), Json::Object(obj)) => {
            let mut fields = Vec::with_capacity(r.fields.len());
            for f in &r.fields {
                let v = match obj.get(&f.name) {
                    Some(x) => from_json(schema, f.node, x, depth + 1)
                        .map_err(|e| ValueError(format!("{}: {}", f.name, e.0)))?,
                    None => missing(schema, f.node, f.default.as_ref(), depth)
                        .ok_or_else(|| ValueError(format!("field {} is missing", f.name)))??,
                };
                fields.push(v);
            }
            Value::Record(fields)
        }
        (Node::Enum { symbols, .. }, Json::String(s)) => Value::Enum(
            symbols
                .iter()
                .position(|x| x == s)
                .ok_or_else(|| ValueError(format!("{s:?} is not a symbol of the enum")))?
                as u32,
        ),
        (Node::Array(item), Json::Array(xs)) => Value::Array(
            xs.iter()
                .map(|x| from_json(schema, *item, x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        (Node::Map(val), Json::Object(obj)) => Value::Map(
            obj.iter()
                .map(|(k, x)| Ok((k.clone(), from_json(schema, *val, x, depth + 1)?)))
                .collect::<Result<_, ValueError>>()?,
        ),
        (Node::Union(branches), j) => {
            let mut last = None;
            for &b in branches {
                match from_json(schema, b, j, depth + 1) {
                    Ok(v) => return Ok(v),
                    Err(e) => last = Some(e),
                }
            }
            return Err(last.unwrap_or_else(wrong));
        }
        _ => return Err(wrong()),
    })
}

/// The value of a field absent from the input: its default, else null when nullable.
pub fn missing(
    schema: &AvroSchema,
    id: NodeId,
    default: Option<&Json>,
    depth: usize,
) -> Option<Result<Value, ValueError>> {
    if let Some(d) = default {
        return Some(from_json(schema, id, d, depth + 1));
    }
    match schema.node(id) {
        Node::Null => Some(Ok(Value::Null)),
        Node::Union(b) if b.iter().any(|&x| matches!(schema.node(x), Node::Null)) => {
            Some(Ok(Value::Null))
        }
        _ => None,
    }
}

/// What a JSON value is, for error messages ("… must be a string, not an array").
pub fn json_kind(j: &Json) -> &'static str {
    match j {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}
