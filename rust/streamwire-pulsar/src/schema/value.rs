//! A decoded (or to-be-encoded) record value, typed by the Avro schema it follows (pure).
//!
//! Unions carry no wrapper: a value's variant says which branch it takes (see
//! [`branch_for`]), so a nullable field costs nothing beyond its value.

use super::avro::{AvroSchema, Node, NodeId};

/// One value of an Avro type.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Boolean(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Bytes(Vec<u8>),
    String(String),
    Array(Vec<Value>),
    Map(Vec<(String, Value)>),
    /// Field values in the record's field order.
    Record(Vec<Value>),
    /// The symbol's index.
    Enum(u32),
    Fixed(Vec<u8>),
}

/// Why a value does not fit its schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueError(pub String);

/// Whether `v` has the shape of node `id` (shallow: the variant, a record's field count, an
/// enum index in range, a fixed's size).
pub fn fits(schema: &AvroSchema, id: NodeId, v: &Value) -> bool {
    match (schema.node(id), v) {
        (Node::Null, Value::Null)
        | (Node::Boolean, Value::Boolean(_))
        | (Node::Int, Value::Int(_))
        | (Node::Long, Value::Long(_))
        | (Node::Float, Value::Float(_))
        | (Node::Double, Value::Double(_))
        | (Node::Bytes, Value::Bytes(_))
        | (Node::String, Value::String(_))
        | (Node::Array(_), Value::Array(_))
        | (Node::Map(_), Value::Map(_)) => true,
        (Node::Record(r), Value::Record(f)) => r.fields.len() == f.len(),
        (Node::Enum { symbols, .. }, Value::Enum(i)) => (*i as usize) < symbols.len(),
        (Node::Fixed { size, .. }, Value::Fixed(b)) => b.len() == *size,
        _ => false,
    }
}

/// The branch of union `branches` that `v` takes: the first that fits.
pub fn branch_for(schema: &AvroSchema, branches: &[NodeId], v: &Value) -> Option<usize> {
    branches.iter().position(|&b| fits(schema, b, v))
}

/// A short name of the node's type, for messages.
pub fn type_name(schema: &AvroSchema, id: NodeId) -> String {
    match schema.node(id) {
        Node::Null => "null".into(),
        Node::Boolean => "boolean".into(),
        Node::Int => "int".into(),
        Node::Long => "long".into(),
        Node::Float => "float".into(),
        Node::Double => "double".into(),
        Node::Bytes => "bytes".into(),
        Node::String => "string".into(),
        Node::Record(r) => format!("record {}", r.name),
        Node::Enum { name, .. } => format!("enum {name}"),
        Node::Array(i) => format!("array of {}", type_name(schema, *i)),
        Node::Map(v) => format!("map of {}", type_name(schema, *v)),
        Node::Union(b) => b
            .iter()
            .map(|&x| type_name(schema, x))
            .collect::<Vec<_>>()
            .join(" | "),
        Node::Fixed { name, size } => format!("fixed {name}[{size}]"),
    }
}
