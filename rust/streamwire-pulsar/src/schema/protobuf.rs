//! PROTOBUF_NATIVE schema data (pure): the registry definition is JSON,
//! `{"fileDescriptorSet": <base64 of a serialized google.protobuf.FileDescriptorSet holding
//! the root file and every file it imports>, "rootMessageTypeName": <full name>,
//! "rootFileDescriptorName": <file name>}` (the Java client's `ProtobufNativeSchemaData`;
//! the broker checks that it resolves and, under any compatibility strategy but
//! ALWAYS_COMPATIBLE, that the root message's full name does not change). Payloads are plain
//! protobuf wire bytes of the root message.
//!
//! The root message is laid out as an [`AvroSchema`] so that the record column builders
//! `receive_arrow` uses for JSON and Avro serve it unchanged: messages are records (nullable
//! when a field), repeated fields arrays, `map<string, V>` maps (other key types a list of
//! `{key, value}` records), enums their value names. Why a tree rather than one node per
//! message type: each occurrence gets its own [`Layout`] slot, and a message type that
//! contains itself has no finite column type, so a field of a type already being laid out
//! is kept as that message's serialized bytes.
//!
//! Integer mapping: int32/sint32/sfixed32 → int, int64/sint64/sfixed64/uint32/fixed32 →
//! long, uint64/fixed64 → long holding the same 64 bits (values above `i64::MAX` read
//! negative). Fields without presence (proto3 singular scalars and enums outside a oneof and
//! without `optional`) are non-null with the protobuf default; every other singular field is
//! null when absent.

use std::collections::HashMap;

use base64::Engine as _;
use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FileDescriptorProto, FileDescriptorSet};
use serde_json::Value as Json;

use super::avro::{AvroSchema, Field, Node, NodeId, Record, SchemaError};

/// How one field's values are written on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    Double,
    Float,
    /// int32 (varint, sign-extended to 64 bits on the wire).
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
    Bool,
    String,
    Bytes,
    /// An enum: number → index into the node's symbols.
    Enum,
    /// A nested message (its layout is that of the field's node).
    Message,
}

/// One field of a message occurrence.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldLayout {
    pub number: u32,
    /// Position among the record's fields.
    pub index: usize,
    pub scalar: Scalar,
    pub repeated: bool,
    /// A `map<K, V>` field: entries are records `{key, value}`; `string_keys` when the node
    /// is an Avro map.
    pub map: Option<MapLayout>,
    /// The node of one value (the item for repeated fields, the entry record for maps,
    /// the record for messages — never the nullable union).
    pub node: NodeId,
    /// Null when absent (otherwise the protobuf default).
    pub nullable: bool,
    /// For enums: the enum value numbers, in symbol order.
    pub enum_numbers: Vec<i32>,
}

/// The key and value of a map entry.
#[derive(Debug, Clone, PartialEq)]
pub struct MapLayout {
    pub string_keys: bool,
    /// The entry record's node (fields key, value).
    pub entry: NodeId,
}

/// The fields of one message occurrence, by field number.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Layout {
    pub fields: Vec<FieldLayout>,
}

impl Layout {
    /// The field with `number`.
    pub fn field(&self, number: u32) -> Option<&FieldLayout> {
        self.fields
            .binary_search_by_key(&number, |f| f.number)
            .ok()
            .map(|i| &self.fields[i])
    }
}

/// A parsed PROTOBUF_NATIVE schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtoSchema {
    pub root_message: String,
    pub root_file: String,
    /// The record layout of the root message (for Arrow columns and decoded values).
    pub avro: AvroSchema,
    /// Record node id → its message layout.
    pub layouts: HashMap<NodeId, Layout>,
}

/// Messages nested deeper than this are refused.
pub const MAX_DEPTH: usize = 64;

fn err<T>(msg: impl Into<String>) -> Result<T, SchemaError> {
    Err(SchemaError(msg.into()))
}

/// The registry definition for a serialized FileDescriptorSet (field order as the Java
/// client writes it).
pub fn schema_data(descriptor_set: &[u8], root_message: &str, root_file: &str) -> Vec<u8> {
    // By hand: serde_json's map would sort the keys.
    format!(
        "{{\"fileDescriptorSet\":{},\"rootMessageTypeName\":{},\"rootFileDescriptorName\":{}}}",
        Json::String(base64::engine::general_purpose::STANDARD.encode(descriptor_set)),
        Json::String(root_message.to_owned()),
        Json::String(root_file.to_owned()),
    )
    .into_bytes()
}

/// Every message and enum of the set by full name (`.pkg.Outer.Inner`), with its file's
/// syntax.
struct Index<'a> {
    messages: HashMap<String, (&'a DescriptorProto, bool)>,
    enums: HashMap<String, Vec<(String, i32)>>,
}

fn index_messages<'a>(
    prefix: &str,
    msgs: &'a [DescriptorProto],
    proto3: bool,
    idx: &mut Index<'a>,
) {
    for m in msgs {
        let full = format!("{prefix}.{}", m.name());
        for e in &m.enum_type {
            idx.enums.insert(
                format!("{full}.{}", e.name()),
                e.value
                    .iter()
                    .map(|v| (v.name().to_owned(), v.number()))
                    .collect(),
            );
        }
        index_messages(&full, &m.nested_type, proto3, idx);
        idx.messages.insert(full, (m, proto3));
    }
}

impl ProtoSchema {
    /// Parse registry schema data (the JSON document above).
    pub fn parse(data: &[u8]) -> Result<ProtoSchema, SchemaError> {
        let doc: Json = serde_json::from_slice(data)
            .map_err(|e| SchemaError(format!("PROTOBUF_NATIVE schema data is not JSON: {e}")))?;
        let text = |k: &str| {
            doc.get(k)
                .and_then(Json::as_str)
                .ok_or_else(|| SchemaError(format!("PROTOBUF_NATIVE schema data lacks {k:?}")))
        };
        let set = base64::engine::general_purpose::STANDARD
            .decode(text("fileDescriptorSet")?)
            .map_err(|e| SchemaError(format!("fileDescriptorSet is not base64: {e}")))?;
        let set = FileDescriptorSet::decode(&set[..])
            .map_err(|e| SchemaError(format!("fileDescriptorSet does not decode: {e}")))?;
        Self::from_set(
            &set,
            text("rootMessageTypeName")?,
            text("rootFileDescriptorName")?,
        )
    }

    /// Lay out `root_message` of a decoded set.
    pub fn from_set(
        set: &FileDescriptorSet,
        root_message: &str,
        root_file: &str,
    ) -> Result<ProtoSchema, SchemaError> {
        let files: HashMap<&str, &FileDescriptorProto> =
            set.file.iter().map(|f| (f.name(), f)).collect();
        let Some(root) = files.get(root_file) else {
            return err(format!("the descriptor set has no file {root_file:?}"));
        };
        for f in &set.file {
            for d in &f.dependency {
                if !files.contains_key(d.as_str()) {
                    return err(format!("{:?} imports {d:?}, which the set lacks", f.name()));
                }
            }
        }
        let mut idx = Index {
            messages: HashMap::new(),
            enums: HashMap::new(),
        };
        for f in &set.file {
            let pkg = if f.package().is_empty() {
                String::new()
            } else {
                format!(".{}", f.package())
            };
            for e in &f.enum_type {
                idx.enums.insert(
                    format!("{pkg}.{}", e.name()),
                    e.value
                        .iter()
                        .map(|v| (v.name().to_owned(), v.number()))
                        .collect(),
                );
            }
            index_messages(&pkg, &f.message_type, f.syntax() == "proto3", &mut idx);
        }
        let pkg = root.package();
        if !pkg.is_empty() && !root_message.starts_with(&format!("{pkg}.")) {
            return err(format!(
                "root message {root_message:?} is outside package {pkg:?} of {root_file:?}"
            ));
        }
        let mut b = Builder {
            idx: &idx,
            nodes: Vec::new(),
            layouts: HashMap::new(),
            path: Vec::new(),
        };
        let root_id = b.message(&format!(".{root_message}"))?;
        Ok(ProtoSchema {
            root_message: root_message.to_owned(),
            root_file: root_file.to_owned(),
            avro: AvroSchema {
                nodes: b.nodes,
                root: root_id,
            },
            layouts: b.layouts,
        })
    }

    /// The layout of the record node `id`.
    pub fn layout(&self, id: NodeId) -> Option<&Layout> {
        self.layouts.get(&id)
    }
}

struct Builder<'a> {
    idx: &'a Index<'a>,
    nodes: Vec<Node>,
    layouts: HashMap<NodeId, Layout>,
    /// Message types being laid out (a repeat is a recursive type).
    path: Vec<String>,
}

impl Builder<'_> {
    fn push(&mut self, n: Node) -> NodeId {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    /// The record node of message `full` (with a leading dot).
    fn message(&mut self, full: &str) -> Result<NodeId, SchemaError> {
        let Some(&(m, proto3)) = self.idx.messages.get(full) else {
            return err(format!("no message type {:?} in the set", &full[1..]));
        };
        if self.path.len() >= MAX_DEPTH {
            return err("message types nest too deeply");
        }
        self.path.push(full.to_owned());
        let id = self.push(Node::Null); // replaced below, once the fields are known
        let mut fields = Vec::with_capacity(m.field.len());
        let mut layout = Layout::default();
        // Columns in declaration order; the layout is searched by number.
        for (index, f) in m.field.iter().enumerate() {
            let (node, fl) = self.field(f, index, proto3)?;
            fields.push(Field {
                name: f.name().to_owned(),
                node,
                default: None,
            });
            layout.fields.push(fl);
        }
        layout.fields.sort_by_key(|f| f.number);
        if layout.fields.windows(2).any(|w| w[0].number == w[1].number) {
            return err(format!("{:?} has two fields with one number", &full[1..]));
        }
        self.nodes[id] = Node::Record(Record {
            name: full[1..].to_owned(),
            fields,
        });
        self.layouts.insert(id, layout);
        self.path.pop();
        Ok(id)
    }

    /// The column node of field `f` and its layout.
    fn field(
        &mut self,
        f: &prost_types::FieldDescriptorProto,
        index: usize,
        proto3: bool,
    ) -> Result<(NodeId, FieldLayout), SchemaError> {
        let repeated = f.label() == Label::Repeated;
        let number = u32::try_from(f.number())
            .ok()
            .filter(|n| (1..=536_870_911).contains(n))
            .ok_or_else(|| {
                SchemaError(format!("field {:?} has number {}", f.name(), f.number()))
            })?;
        let (mut scalar, mut enum_numbers) = (scalar_of(f)?, Vec::new());
        // A message type inside itself has no finite column type: that occurrence is its
        // serialized bytes (null when absent), one level down.
        let recursive = scalar == Scalar::Message && self.path.iter().any(|p| p == f.type_name());
        if recursive {
            scalar = Scalar::Bytes;
        }
        let mut map = None;
        let node = match scalar {
            Scalar::Message => {
                let entry = self.map_entry(f.type_name())?;
                let id = self.message(f.type_name())?;
                if let Some(string_keys) = entry {
                    map = Some(MapLayout {
                        string_keys,
                        entry: id,
                    });
                }
                id
            }
            Scalar::Enum => {
                let Some(values) = self.idx.enums.get(f.type_name()) else {
                    return err(format!("no enum type {:?} in the set", f.type_name()));
                };
                enum_numbers = values.iter().map(|(_, n)| *n).collect();
                self.push(Node::Enum {
                    name: f.type_name().trim_start_matches('.').to_owned(),
                    symbols: values.iter().map(|(s, _)| s.clone()).collect(),
                })
            }
            s => self.push(primitive(s)),
        };
        let nullable = !repeated
            && (scalar == Scalar::Message
                || recursive
                || !proto3
                || f.proto3_optional()
                || f.oneof_index.is_some());
        let column = match (&map, repeated, nullable) {
            (Some(m), _, _) if m.string_keys => {
                let at = self
                    .layouts
                    .get(&node)
                    .and_then(|l| l.field(2))
                    .map(|f| f.index);
                let value = match (&self.nodes[node], at) {
                    (Node::Record(r), Some(i)) => r.fields[i].node,
                    _ => return err("a map entry without a value field"),
                };
                self.push(Node::Map(value))
            }
            (_, true, _) => self.push(Node::Array(node)),
            (_, false, true) => {
                let null = self.push(Node::Null);
                self.push(Node::Union(vec![null, node]))
            }
            (_, false, false) => node,
        };
        Ok((
            column,
            FieldLayout {
                number,
                index,
                scalar,
                repeated,
                map,
                node,
                nullable,
                enum_numbers,
            },
        ))
    }

    /// Some(key is string) when `type_name` is a map entry type.
    fn map_entry(&self, type_name: &str) -> Result<Option<bool>, SchemaError> {
        let Some(&(m, _)) = self.idx.messages.get(type_name) else {
            return err(format!("no message type {type_name:?} in the set"));
        };
        if !m.options.as_ref().is_some_and(|o| o.map_entry()) {
            return Ok(None);
        }
        let key = m.field.iter().find(|f| f.number() == 1);
        let has_value = m.field.iter().any(|f| f.number() == 2);
        match key {
            Some(k) if has_value && m.field.len() == 2 => Ok(Some(k.r#type() == Type::String)),
            _ => err(format!(
                "map entry {type_name:?} is not {{key = 1, value = 2}}"
            )),
        }
    }
}

fn scalar_of(f: &prost_types::FieldDescriptorProto) -> Result<Scalar, SchemaError> {
    Ok(match f.r#type() {
        Type::Double => Scalar::Double,
        Type::Float => Scalar::Float,
        Type::Int64 => Scalar::Int64,
        Type::Uint64 => Scalar::Uint64,
        Type::Int32 => Scalar::Int32,
        Type::Fixed64 => Scalar::Fixed64,
        Type::Fixed32 => Scalar::Fixed32,
        Type::Bool => Scalar::Bool,
        Type::String => Scalar::String,
        Type::Bytes => Scalar::Bytes,
        Type::Uint32 => Scalar::Uint32,
        Type::Enum => Scalar::Enum,
        Type::Sfixed32 => Scalar::Sfixed32,
        Type::Sfixed64 => Scalar::Sfixed64,
        Type::Sint32 => Scalar::Sint32,
        Type::Sint64 => Scalar::Sint64,
        Type::Message => Scalar::Message,
        Type::Group => return err(format!("field {:?}: groups are not supported", f.name())),
    })
}

fn primitive(s: Scalar) -> Node {
    match s {
        Scalar::Double => Node::Double,
        Scalar::Float => Node::Float,
        Scalar::Int32 | Scalar::Sint32 | Scalar::Sfixed32 => Node::Int,
        Scalar::Bool => Node::Boolean,
        Scalar::String => Node::String,
        Scalar::Bytes => Node::Bytes,
        _ => Node::Long,
    }
}
