//! Protobuf wire bytes of a PROTOBUF_NATIVE root message decoded into a [`Value`] shaped by
//! the schema's record layout (pure), and the reverse (used by tests and the fuzz body to
//! check decoding against re-encoding).
//!
//! Decoding follows the protobuf rules a generated class applies: unknown fields are
//! skipped, the last occurrence of a singular scalar wins, occurrences of a singular message
//! merge, repeated scalars come packed or not, a map key seen twice keeps its last value.
//! An enum number the descriptor does not name decodes as null.

use super::avro::{Node, NodeId};
use super::protobuf::{FieldLayout, ProtoSchema, Scalar, MAX_DEPTH};
use super::value::{Value, ValueError};

fn bad<T>(msg: impl Into<String>) -> Result<T, ValueError> {
    Err(ValueError(msg.into()))
}

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const SGROUP: u8 = 3;
const EGROUP: u8 = 4;
const I32: u8 = 5;

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ValueError> {
        let mut v = 0u64;
        for i in 0..10 {
            let Some((&b, rest)) = self.buf.split_first() else {
                return bad("truncated varint");
            };
            self.buf = rest;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        bad("varint longer than 10 bytes")
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ValueError> {
        if n > self.buf.len() {
            return bad("truncated field");
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    fn len_delimited(&mut self) -> Result<&'a [u8], ValueError> {
        let n = self.varint()?;
        self.take(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// (field number, wire type).
    fn tag(&mut self) -> Result<(u32, u8), ValueError> {
        let t = self.varint()?;
        let number = u32::try_from(t >> 3).unwrap_or(0);
        if number == 0 {
            return bad("field number 0");
        }
        Ok((number, (t & 7) as u8))
    }

    /// Skip a value of wire type `wt` (a group up to its end tag).
    fn skip(&mut self, number: u32, wt: u8, depth: usize) -> Result<(), ValueError> {
        match wt {
            VARINT => self.varint().map(drop),
            I64 => self.take(8).map(drop),
            LEN => self.len_delimited().map(drop),
            I32 => self.take(4).map(drop),
            SGROUP => {
                if depth >= MAX_DEPTH {
                    return bad("groups nest too deeply");
                }
                loop {
                    let (n, w) = self.tag()?;
                    if w == EGROUP {
                        return if n == number {
                            Ok(())
                        } else {
                            bad("mismatched end of group")
                        };
                    }
                    self.skip(n, w, depth + 1)?;
                }
            }
            _ => bad(format!("field {number}: invalid wire type {wt}")),
        }
    }
}

/// Decode a payload of the root message.
pub fn decode(s: &ProtoSchema, payload: &[u8]) -> Result<Value, ValueError> {
    let mut v = defaults(s, s.avro.root);
    message(s, s.avro.root, payload, &mut v, 0)?;
    Ok(Value::Record(v))
}

/// The field values of record `id` before any field is read.
fn defaults(s: &ProtoSchema, id: NodeId) -> Vec<Value> {
    let Some(layout) = s.layout(id) else {
        return Vec::new();
    };
    let mut out = vec![Value::Null; layout.fields.len()];
    for f in &layout.fields {
        out[f.index] = match (&f.map, f.repeated, f.nullable) {
            (Some(m), _, _) if m.string_keys => Value::Map(Vec::new()),
            (_, true, _) => Value::Array(Vec::new()),
            (_, false, true) => Value::Null,
            (_, false, false) => zero(f),
        };
    }
    out
}

fn zero(f: &FieldLayout) -> Value {
    match f.scalar {
        Scalar::Double => Value::Double(0.0),
        Scalar::Float => Value::Float(0.0),
        Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => Value::Int(0),
        Scalar::Bool => Value::Boolean(false),
        Scalar::String => Value::String(String::new()),
        Scalar::Bytes => Value::Bytes(Vec::new()),
        Scalar::Enum => enum_value(f, 0),
        Scalar::Message => Value::Null,
        _ => Value::Long(0),
    }
}

fn enum_value(f: &FieldLayout, number: i32) -> Value {
    match f.enum_numbers.iter().position(|&n| n == number) {
        Some(i) => Value::Enum(i as u32),
        None => Value::Null,
    }
}

fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A scalar of wire type `wt` (not LEN unless string or bytes).
fn scalar(f: &FieldLayout, wt: u8, r: &mut Reader<'_>) -> Result<Value, ValueError> {
    let mismatch = || {
        ValueError(format!(
            "field {}: wire type {wt} does not fit {:?}",
            f.number, f.scalar
        ))
    };
    Ok(match (f.scalar, wt) {
        (Scalar::Int32, VARINT) => Value::Int(r.varint()? as i32),
        (Scalar::Int64 | Scalar::Uint64, VARINT) => Value::Long(r.varint()? as i64),
        (Scalar::Uint32, VARINT) => Value::Long(i64::from(r.varint()? as u32)),
        (Scalar::Sint32, VARINT) => Value::Int(zigzag(u64::from(r.varint()? as u32)) as i32),
        (Scalar::Sint64, VARINT) => Value::Long(zigzag(r.varint()?)),
        (Scalar::Bool, VARINT) => Value::Boolean(r.varint()? != 0),
        (Scalar::Enum, VARINT) => enum_value(f, r.varint()? as i32),
        (Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float, I32) => {
            let b: [u8; 4] = r.take(4)?.try_into().map_err(|_| mismatch())?;
            match f.scalar {
                Scalar::Fixed32 => Value::Long(i64::from(u32::from_le_bytes(b))),
                Scalar::Sfixed32 => Value::Int(i32::from_le_bytes(b)),
                _ => Value::Float(f32::from_le_bytes(b)),
            }
        }
        (Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double, I64) => {
            let b: [u8; 8] = r.take(8)?.try_into().map_err(|_| mismatch())?;
            match f.scalar {
                Scalar::Double => Value::Double(f64::from_le_bytes(b)),
                _ => Value::Long(i64::from_le_bytes(b)),
            }
        }
        (Scalar::String, LEN) => Value::String(
            String::from_utf8(r.len_delimited()?.to_vec())
                .map_err(|_| ValueError(format!("field {}: string is not UTF-8", f.number)))?,
        ),
        (Scalar::Bytes, LEN) => Value::Bytes(r.len_delimited()?.to_vec()),
        _ => return Err(mismatch()),
    })
}

/// The wire type an unpacked scalar of `s` has.
fn wire_type(s: Scalar) -> u8 {
    match s {
        Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => I32,
        Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => I64,
        Scalar::String | Scalar::Bytes | Scalar::Message => LEN,
        _ => VARINT,
    }
}

/// Decode the fields in `buf` into `into` (the record `id`'s field values).
fn message(
    s: &ProtoSchema,
    id: NodeId,
    buf: &[u8],
    into: &mut [Value],
    depth: usize,
) -> Result<(), ValueError> {
    if depth >= MAX_DEPTH {
        return bad("messages nest too deeply");
    }
    let Some(layout) = s.layout(id) else {
        return bad("not a message node");
    };
    let mut r = Reader { buf };
    while !r.buf.is_empty() {
        let (number, wt) = r.tag()?;
        let Some(f) = layout.field(number) else {
            r.skip(number, wt, depth)?;
            continue;
        };
        let slot = &mut into[f.index];
        if f.scalar == Scalar::Message {
            if wt != LEN {
                return bad(format!("field {number}: a message needs wire type 2"));
            }
            let body = r.len_delimited()?;
            if f.repeated || f.map.is_some() {
                let mut v = defaults(s, f.node);
                message(s, f.node, body, &mut v, depth + 1)?;
                push_item(s, f, slot, v);
            } else {
                // Occurrences of a singular message merge.
                if !matches!(slot, Value::Record(_)) {
                    *slot = Value::Record(defaults(s, f.node));
                }
                if let Value::Record(fields) = slot {
                    message(s, f.node, body, fields, depth + 1)?;
                }
            }
        } else if f.repeated {
            let Value::Array(items) = slot else {
                return bad("repeated field without an array");
            };
            if wt == LEN && wire_type(f.scalar) != LEN {
                let mut packed = Reader {
                    buf: r.len_delimited()?,
                };
                let w = wire_type(f.scalar);
                while !packed.buf.is_empty() {
                    items.push(scalar(f, w, &mut packed)?);
                }
            } else {
                items.push(scalar(f, wt, &mut r)?);
            }
        } else {
            *slot = scalar(f, wt, &mut r)?;
        }
    }
    Ok(())
}

/// Append a decoded repeated message or map entry to its field's value.
fn push_item(s: &ProtoSchema, f: &FieldLayout, slot: &mut Value, mut entry: Vec<Value>) {
    match (slot, &f.map) {
        (Value::Map(items), Some(m)) => {
            let Some(el) = s.layout(m.entry) else { return };
            let (Some(k), Some(v)) = (el.field(1), el.field(2)) else {
                return;
            };
            let key = match std::mem::replace(&mut entry[k.index], Value::Null) {
                Value::String(k) => k,
                _ => String::new(),
            };
            let value = std::mem::replace(&mut entry[v.index], Value::Null);
            match items.iter_mut().find(|(k, _)| *k == key) {
                Some(existing) => existing.1 = value,
                None => items.push((key, value)),
            }
        }
        (Value::Array(items), Some(m)) => {
            // A map with non-string keys: a list of entries, the last per key kept.
            let key_of = |e: &Vec<Value>| {
                s.layout(m.entry)
                    .and_then(|l| l.field(1))
                    .map(|k| e[k.index].clone())
            };
            let key = key_of(&entry);
            let pos = items
                .iter()
                .position(|it| matches!(it, Value::Record(e) if key_of(e) == key));
            match pos {
                Some(i) => items[i] = Value::Record(entry),
                None => items.push(Value::Record(entry)),
            }
        }
        (Value::Array(items), None) => items.push(Value::Record(entry)),
        _ => {}
    }
}

/// Encode `v` (a record of the root layout) as protobuf wire bytes, appended to `out`.
/// Nulls are left out; everything else is written, defaults included.
pub fn encode(s: &ProtoSchema, v: &Value, out: &mut Vec<u8>) -> Result<(), ValueError> {
    encode_message(s, s.avro.root, v, out, 0)
}

fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_tag(number: u32, wt: u8, out: &mut Vec<u8>) {
    put_varint((u64::from(number) << 3) | u64::from(wt), out);
}

fn encode_message(
    s: &ProtoSchema,
    id: NodeId,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ValueError> {
    if depth >= MAX_DEPTH {
        return bad("messages nest too deeply");
    }
    let (Some(layout), Value::Record(fields)) = (s.layout(id), v) else {
        return bad("a message value must be a record");
    };
    for f in &layout.fields {
        let Some(fv) = fields.get(f.index) else {
            return bad("record has too few fields");
        };
        match fv {
            Value::Null => {}
            Value::Array(items) if f.repeated => {
                for it in items {
                    encode_one(s, f, it, out, depth)?;
                }
            }
            Value::Map(items) => {
                let Some(m) = &f.map else {
                    return bad(format!("field {}: not a map", f.number));
                };
                let el = s
                    .layout(m.entry)
                    .ok_or_else(|| ValueError("no entry".into()))?;
                let (Some(kf), Some(vf)) = (el.field(1), el.field(2)) else {
                    return bad("map entry without key or value");
                };
                for (k, val) in items {
                    let mut entry = vec![Value::Null, Value::Null];
                    entry[kf.index] = Value::String(k.clone());
                    entry[vf.index] = val.clone();
                    encode_one(s, f, &Value::Record(entry), out, depth)?;
                }
            }
            other => encode_one(s, f, other, out, depth)?,
        }
    }
    Ok(())
}

/// One value of field `f` (an item, for repeated fields), with its tag.
fn encode_one(
    s: &ProtoSchema,
    f: &FieldLayout,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ValueError> {
    let n = f.number;
    match (f.scalar, v) {
        (_, Value::Null) => {}
        (Scalar::Message, Value::Record(_)) => {
            let mut body = Vec::new();
            let node = match s.avro.node(f.node) {
                Node::Record(_) => f.node,
                _ => return bad("message field without a record node"),
            };
            encode_message(s, node, v, &mut body, depth + 1)?;
            put_tag(n, LEN, out);
            put_varint(body.len() as u64, out);
            out.extend_from_slice(&body);
        }
        (Scalar::Int32, Value::Int(i)) => {
            put_tag(n, VARINT, out);
            put_varint(i64::from(*i) as u64, out);
        }
        (Scalar::Sint32, Value::Int(i)) => {
            put_tag(n, VARINT, out);
            put_varint(u64::from(((i << 1) ^ (i >> 31)) as u32), out);
        }
        (Scalar::Sfixed32, Value::Int(i)) => {
            put_tag(n, I32, out);
            out.extend_from_slice(&i.to_le_bytes());
        }
        (Scalar::Int64 | Scalar::Uint64 | Scalar::Uint32, Value::Long(i)) => {
            put_tag(n, VARINT, out);
            put_varint(*i as u64, out);
        }
        (Scalar::Sint64, Value::Long(i)) => {
            put_tag(n, VARINT, out);
            put_varint(((i << 1) ^ (i >> 63)) as u64, out);
        }
        (Scalar::Fixed32, Value::Long(i)) => {
            put_tag(n, I32, out);
            out.extend_from_slice(&(*i as u32).to_le_bytes());
        }
        (Scalar::Fixed64 | Scalar::Sfixed64, Value::Long(i)) => {
            put_tag(n, I64, out);
            out.extend_from_slice(&i.to_le_bytes());
        }
        (Scalar::Float, Value::Float(x)) => {
            put_tag(n, I32, out);
            out.extend_from_slice(&x.to_le_bytes());
        }
        (Scalar::Double, Value::Double(x)) => {
            put_tag(n, I64, out);
            out.extend_from_slice(&x.to_le_bytes());
        }
        (Scalar::Bool, Value::Boolean(b)) => {
            put_tag(n, VARINT, out);
            out.push(u8::from(*b));
        }
        (Scalar::Enum, Value::Enum(i)) => {
            let Some(&num) = f.enum_numbers.get(*i as usize) else {
                return bad(format!("field {n}: enum index {i} out of range"));
            };
            put_tag(n, VARINT, out);
            put_varint(i64::from(num) as u64, out);
        }
        (Scalar::String, Value::String(x)) => {
            put_tag(n, LEN, out);
            put_varint(x.len() as u64, out);
            out.extend_from_slice(x.as_bytes());
        }
        (Scalar::Bytes, Value::Bytes(x)) => {
            put_tag(n, LEN, out);
            put_varint(x.len() as u64, out);
            out.extend_from_slice(x);
        }
        (sc, other) => return bad(format!("field {n}: {other:?} does not fit {sc:?}")),
    }
    Ok(())
}
