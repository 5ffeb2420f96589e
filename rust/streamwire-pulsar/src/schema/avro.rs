//! The Avro record schema a JSON or Avro Pulsar schema carries, parsed from its definition
//! text (pure).
//!
//! Why an arena of nodes instead of a tree: named types may be referred to again by name,
//! and a record may contain itself (through a union with null); indices make both plain
//! without reference counting. Logical types (`{"type": "long", "logicalType": ...}`) are
//! read as their underlying type.

use std::collections::HashMap;

use serde_json::Value as Json;

/// Index of a node in [`AvroSchema::nodes`].
pub type NodeId = usize;

/// One Avro type.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Record(Record),
    Enum { name: String, symbols: Vec<String> },
    Array(NodeId),
    Map(NodeId),
    Union(Vec<NodeId>),
    Fixed { name: String, size: usize },
}

/// A record type: its full name (namespace included) and its fields in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub name: String,
    pub fields: Vec<Field>,
}

/// A record field.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub node: NodeId,
    /// The definition's `default`, used when a writer did not have the field.
    pub default: Option<Json>,
}

/// A parsed schema: every node, and the root.
#[derive(Debug, Clone, PartialEq)]
pub struct AvroSchema {
    pub nodes: Vec<Node>,
    pub root: NodeId,
}

/// Why a definition is not a schema we can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Avro schema: {0}")]
pub struct SchemaError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, SchemaError> {
    Err(SchemaError(msg.into()))
}

impl AvroSchema {
    /// Parse definition text (JSON).
    pub fn parse(text: &[u8]) -> Result<AvroSchema, SchemaError> {
        let json: Json =
            serde_json::from_slice(text).map_err(|e| SchemaError(format!("not JSON: {e}")))?;
        Self::from_json(&json)
    }

    /// Parse an already decoded definition.
    pub fn from_json(json: &Json) -> Result<AvroSchema, SchemaError> {
        let mut p = Parser::default();
        let root = p.node(json, "", 0)?;
        Ok(AvroSchema {
            nodes: p.nodes,
            root,
        })
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// The root node.
    pub fn root_node(&self) -> &Node {
        &self.nodes[self.root]
    }

    /// The branch of a `["null", T]` union that is not null, if `id` is such a union.
    pub fn nullable_inner(&self, id: NodeId) -> Option<NodeId> {
        match &self.nodes[id] {
            Node::Union(b) if b.len() == 2 => match (&self.nodes[b[0]], &self.nodes[b[1]]) {
                (Node::Null, _) => Some(b[1]),
                (_, Node::Null) => Some(b[0]),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Nesting deeper than this is refused (a hostile definition must not exhaust the stack).
const MAX_DEPTH: usize = 64;

#[derive(Default)]
struct Parser {
    nodes: Vec<Node>,
    named: HashMap<String, NodeId>,
}

fn full_name(name: &str, namespace: &str) -> String {
    if name.contains('.') || namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}.{name}")
    }
}

fn primitive(name: &str) -> Option<Node> {
    Some(match name {
        "null" => Node::Null,
        "boolean" => Node::Boolean,
        "int" => Node::Int,
        "long" => Node::Long,
        "float" => Node::Float,
        "double" => Node::Double,
        "bytes" => Node::Bytes,
        "string" => Node::String,
        _ => return None,
    })
}

impl Parser {
    fn push(&mut self, n: Node) -> NodeId {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    fn node(&mut self, json: &Json, ns: &str, depth: usize) -> Result<NodeId, SchemaError> {
        if depth > MAX_DEPTH {
            return err("nested too deeply");
        }
        match json {
            Json::String(name) => self.named_or_primitive(name, ns),
            Json::Array(branches) => {
                if branches.is_empty() {
                    return err("a union needs at least one branch");
                }
                let ids = branches
                    .iter()
                    .map(|b| self.node(b, ns, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                if ids.iter().any(|&i| matches!(self.nodes[i], Node::Union(_))) {
                    return err("a union may not contain a union");
                }
                Ok(self.push(Node::Union(ids)))
            }
            Json::Object(obj) => {
                let Some(ty) = obj.get("type") else {
                    return err("an object type needs a \"type\"");
                };
                let Json::String(ty) = ty else {
                    // {"type": {...}} or {"type": [...]}: a wrapped type.
                    return self.node(ty, ns, depth + 1);
                };
                match ty.as_str() {
                    "record" | "error" => self.record(obj, ns, depth),
                    "enum" => {
                        let name = self.declared_name(obj, ns)?;
                        let symbols = match obj.get("symbols") {
                            Some(Json::Array(s)) => s
                                .iter()
                                .map(|v| match v {
                                    Json::String(s) => Ok(s.clone()),
                                    _ => err("enum symbols must be strings"),
                                })
                                .collect::<Result<Vec<_>, _>>()?,
                            _ => return err(format!("enum {name} needs \"symbols\"")),
                        };
                        let id = self.push(Node::Enum {
                            name: name.clone(),
                            symbols,
                        });
                        self.named.insert(name, id);
                        Ok(id)
                    }
                    "array" => {
                        let items = obj
                            .get("items")
                            .ok_or_else(|| SchemaError("array needs \"items\"".into()))?;
                        let i = self.node(items, ns, depth + 1)?;
                        Ok(self.push(Node::Array(i)))
                    }
                    "map" => {
                        let values = obj
                            .get("values")
                            .ok_or_else(|| SchemaError("map needs \"values\"".into()))?;
                        let v = self.node(values, ns, depth + 1)?;
                        Ok(self.push(Node::Map(v)))
                    }
                    "fixed" => {
                        let name = self.declared_name(obj, ns)?;
                        let size =
                            obj.get("size").and_then(Json::as_u64).ok_or_else(|| {
                                SchemaError(format!("fixed {name} needs a \"size\""))
                            })? as usize;
                        let id = self.push(Node::Fixed {
                            name: name.clone(),
                            size,
                        });
                        self.named.insert(name, id);
                        Ok(id)
                    }
                    other => self.named_or_primitive(other, ns),
                }
            }
            _ => err(format!("not a type: {json}")),
        }
    }

    fn named_or_primitive(&mut self, name: &str, ns: &str) -> Result<NodeId, SchemaError> {
        if let Some(p) = primitive(name) {
            return Ok(self.push(p));
        }
        let id = self
            .named
            .get(&full_name(name, ns))
            .or_else(|| self.named.get(name))
            .copied();
        id.ok_or_else(|| SchemaError(format!("unknown type {name:?}")))
    }

    fn declared_name(
        &self,
        obj: &serde_json::Map<String, Json>,
        ns: &str,
    ) -> Result<String, SchemaError> {
        let Some(Json::String(name)) = obj.get("name") else {
            return err("a named type needs a \"name\"");
        };
        let ns = match obj.get("namespace") {
            Some(Json::String(n)) => n.as_str(),
            _ => ns,
        };
        let full = full_name(name, ns);
        if self.named.contains_key(&full) {
            return err(format!("type {full} is defined twice"));
        }
        Ok(full)
    }

    fn record(
        &mut self,
        obj: &serde_json::Map<String, Json>,
        ns: &str,
        depth: usize,
    ) -> Result<NodeId, SchemaError> {
        let name = self.declared_name(obj, ns)?;
        let inner_ns = name.rsplit_once('.').map_or("", |(n, _)| n).to_owned();
        // Registered before its fields so that a field may refer to the record itself.
        let id = self.push(Node::Record(Record {
            name: name.clone(),
            fields: Vec::new(),
        }));
        self.named.insert(name.clone(), id);
        let Some(Json::Array(defs)) = obj.get("fields") else {
            return err(format!("record {name} needs \"fields\""));
        };
        let mut fields = Vec::with_capacity(defs.len());
        for f in defs {
            let Some(Json::String(fname)) = f.get("name") else {
                return err(format!("a field of {name} has no name"));
            };
            if fields.iter().any(|x: &Field| &x.name == fname) {
                return err(format!("field {fname} of {name} is defined twice"));
            }
            let ty = f
                .get("type")
                .ok_or_else(|| SchemaError(format!("field {fname} of {name} has no type")))?;
            let node = self.node(ty, &inner_ns, depth + 1)?;
            fields.push(Field {
                name: fname.clone(),
                node,
                default: f.get("default").cloned(),
            });
        }
        if let Node::Record(r) = &mut self.nodes[id] {
            r.fields = fields;
        }
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_official_clients_record_shape() {
        let text = br#"{"type": "record", "name": "R", "namespace": "ns", "fields": [
            {"name": "s", "type": ["null", "string"]},
            {"name": "req", "type": "string"},
            {"name": "inner", "type": ["null", {"type": "record", "name": "Inner",
                "fields": [{"name": "a", "type": ["null", "int"]}]}]},
            {"name": "again", "type": ["null", "Inner"]},
            {"name": "c", "type": {"type": "enum", "name": "Color", "symbols": ["red"]}},
            {"name": "m", "type": {"type": "map", "values": "long"}, "default": {}},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}
        ]}"#;
        let s = AvroSchema::parse(text).unwrap();
        let Node::Record(r) = s.root_node() else {
            panic!("not a record")
        };
        assert_eq!(r.name, "ns.R");
        assert_eq!(r.fields.len(), 7);
        let inner = s.nullable_inner(r.fields[2].node).unwrap();
        let again = s.nullable_inner(r.fields[3].node).unwrap();
        assert_eq!(inner, again, "a name refers to the type defined earlier");
        assert!(matches!(s.node(inner), Node::Record(x) if x.name == "ns.Inner"));
        assert_eq!(r.fields[5].default, Some(serde_json::json!({})));
        assert_eq!(s.node(r.fields[6].node), &Node::Long);
    }

    #[test]
    fn refuses_bad_definitions() {
        for bad in [
            &b"nope"[..],
            br#"{"type": "record", "name": "R"}"#,
            br#"{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Unknown"}]}"#,
            br#"[["null"]]"#,
            br#"[]"#,
            br#"{"type": "enum", "name": "E"}"#,
            br#"{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                {"name": "a", "type": "int"}]}"#,
        ] {
            assert!(
                AvroSchema::parse(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(AvroSchema::parse(deep.as_bytes()).is_err());
    }
}
