//! JSON payloads read straight into a [`Value`] by the record schema (pure): the parser's
//! tokens go to the field they belong to, with no JSON tree built first (a tree per message
//! cost more than the rest of the decode). The rules are [`json::from_json`]'s (which this
//! falls back to for unions other than `["null", T]`).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::avro::{AvroSchema, Node, NodeId};
use super::json::{from_json, missing, EnumValues};
use super::value::{type_name, Value, ValueError};

const MAX_DEPTH: usize = 128;

/// Decode JSON text into a value of node `id`.
pub fn decode(
    schema: &AvroSchema,
    id: NodeId,
    data: &[u8],
    enums: &EnumValues,
) -> Result<Value, ValueError> {
    let mut de = serde_json::Deserializer::from_slice(data);
    let v = Seed {
        schema,
        id,
        depth: 0,
        enums,
    }
    .deserialize(&mut de)
    .map_err(|e| ValueError(e.to_string()))?;
    de.end().map_err(|e| ValueError(e.to_string()))?;
    Ok(v)
}

#[derive(Clone, Copy)]
struct Seed<'s> {
    schema: &'s AvroSchema,
    id: NodeId,
    depth: usize,
    enums: &'s EnumValues,
}

impl<'s> Seed<'s> {
    fn at(self, id: NodeId) -> Seed<'s> {
        Seed {
            id,
            depth: self.depth + 1,
            ..self
        }
    }

    /// An enum written as another writer's value for a symbol (see [`EnumValues`]).
    fn enum_value<E: de::Error>(self, j: serde_json::Value) -> Result<Value, E> {
        match self.schema.node(self.id) {
            Node::Enum { name, symbols } => self
                .enums
                .symbol_index(name, symbols, &j)
                .map(Value::Enum)
                .ok_or_else(|| E::custom(format!("{j} is not a symbol or value of enum {name}"))),
            _ => Err(self.wrong("a number")),
        }
    }

    fn wrong<E: de::Error>(self, got: &str) -> E {
        E::custom(format!(
            "expected {}, got {got}",
            type_name(self.schema, self.id)
        ))
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.depth > MAX_DEPTH {
            return Err(de::Error::custom("value nested too deeply"));
        }
        if let Node::Union(_) = self.schema.node(self.id) {
            if let Some(inner) = self.schema.nullable_inner(self.id) {
                return d.deserialize_option(Nullable(self.at(inner)));
            }
            // Any other union: try its branches on the buffered value.
            let j = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
            return from_json(self.schema, self.id, &j, self.depth).map_err(de::Error::custom);
        }
        d.deserialize_any(self)
    }
}

struct Nullable<'s>(Seed<'s>);

impl<'de> Visitor<'de> for Nullable<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "null or {}", type_name(self.0.schema, self.0.id))
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.0.deserialize(d)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&type_name(self.schema, self.id))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        match self.schema.node(self.id) {
            Node::Null => Ok(Value::Null),
            _ => Err(self.wrong("null")),
        }
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        match self.schema.node(self.id) {
            Node::Boolean => Ok(Value::Boolean(b)),
            Node::Enum { .. } => self.enum_value(serde_json::Value::Bool(b)),
            _ => Err(self.wrong("a boolean")),
        }
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        match self.schema.node(self.id) {
            Node::Int => i32::try_from(i)
                .map(Value::Int)
                .map_err(|_| E::custom(format!("{i} is not a 32-bit integer"))),
            Node::Long => Ok(Value::Long(i)),
            Node::Float => Ok(Value::Float(i as f32)),
            Node::Double => Ok(Value::Double(i as f64)),
            Node::Enum { .. } => self.enum_value(i.into()),
            _ => Err(self.wrong("a number")),
        }
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        match self.schema.node(self.id) {
            Node::Float => Ok(Value::Float(u as f32)),
            Node::Double => Ok(Value::Double(u as f64)),
            Node::Int | Node::Long => match i64::try_from(u) {
                Ok(i) => self.visit_i64(i),
                Err(_) => Err(E::custom(format!("{u} is not a 64-bit integer"))),
            },
            Node::Enum { .. } => self.enum_value(u.into()),
            _ => Err(self.wrong("a number")),
        }
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        match self.schema.node(self.id) {
            Node::Float => Ok(Value::Float(f as f32)),
            Node::Double => Ok(Value::Double(f)),
            Node::Int => Err(E::custom(format!("{f} is not a 32-bit integer"))),
            Node::Long => Err(E::custom(format!("{f} is not a 64-bit integer"))),
            Node::Enum { .. } => self.enum_value(f.into()),
            _ => Err(self.wrong("a number")),
        }
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        match self.schema.node(self.id) {
            Node::String => Ok(Value::String(s.to_owned())),
            Node::Bytes => Ok(Value::Bytes(s.as_bytes().to_vec())),
            Node::Fixed { size, .. } if s.len() == *size => Ok(Value::Fixed(s.as_bytes().to_vec())),
            Node::Enum { symbols, .. } => match symbols.iter().position(|x| x == s) {
                Some(i) => Ok(Value::Enum(i as u32)),
                None => self.enum_value(serde_json::Value::String(s.to_owned())),
            },
            _ => Err(self.wrong("a string")),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let Node::Array(item) = self.schema.node(self.id) else {
            return Err(self.wrong("an array"));
        };
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(self.at(*item))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        match self.schema.node(self.id) {
            Node::Record(r) => {
                // Every field starts as Null and `seen` marks the ones the text gave: one
                // allocation per record. Keys are matched where they sit in the input
                // (borrowed, no String per key), the next declared field tried first, as
                // writers put fields in declaration order.
                let mut out = Vec::with_capacity(r.fields.len());
                // resize_with, not vec![Null; n]: that clones through Value's Clone.
                out.resize_with(r.fields.len(), || Value::Null);
                let mut seen = Seen::new(r.fields.len());
                let mut hint = 0;
                while let Some(k) = map.next_key_seed(FieldKey {
                    fields: &r.fields,
                    hint,
                })? {
                    match k {
                        Some(i) => {
                            let v =
                                map.next_value_seed(self.at(r.fields[i].node))
                                    .map_err(|e| {
                                        de::Error::custom(format!("{}: {e}", r.fields[i].name))
                                    })?;
                            out[i] = v;
                            seen.set(i);
                            hint = i + 1;
                        }
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                for (i, f) in r.fields.iter().enumerate() {
                    if !seen.get(i) {
                        out[i] = missing(self.schema, f.node, f.default.as_ref(), self.depth)
                            .ok_or_else(|| {
                                de::Error::custom(format!("field {} is missing", f.name))
                            })?
                            .map_err(|e| de::Error::custom(e.0))?;
                    }
                }
                Ok(Value::Record(out))
            }
            Node::Map(val) => {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    let v = map.next_value_seed(self.at(*val))?;
                    out.push((k, v));
                }
                Ok(Value::Map(out))
            }
            _ => Err(self.wrong("an object")),
        }
    }
}

/// Which fields of a record the input gave (a bit set; records of more than 64 fields use
/// a vector).
enum Seen {
    Bits(u64),
    Many(Vec<bool>),
}

impl Seen {
    fn new(n: usize) -> Seen {
        if n <= 64 {
            Seen::Bits(0)
        } else {
            Seen::Many(vec![false; n])
        }
    }

    fn set(&mut self, i: usize) {
        match self {
            Seen::Bits(b) => *b |= 1 << i,
            Seen::Many(v) => v[i] = true,
        }
    }

    fn get(&self, i: usize) -> bool {
        match self {
            Seen::Bits(b) => b & (1 << i) != 0,
            Seen::Many(v) => v[i],
        }
    }
}

/// A record key read as the index of the field it names (None: not a field), compared in
/// place in the input.
struct FieldKey<'a> {
    fields: &'a [super::avro::Field],
    hint: usize,
}

impl FieldKey<'_> {
    fn index(&self, k: &str) -> Option<usize> {
        match self.fields.get(self.hint) {
            Some(f) if f.name == k => Some(self.hint),
            _ => self.fields.iter().position(|f| f.name == k),
        }
    }
}

impl<'de> DeserializeSeed<'de> for FieldKey<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FieldKey<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, k: &str) -> Result<Option<usize>, E> {
        Ok(self.index(k))
    }
}
