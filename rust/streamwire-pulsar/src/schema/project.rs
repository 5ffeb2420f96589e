//! Schema resolution (pure): a value decoded with the writer's schema, reshaped to the
//! reader's, as Avro's rules have it for the cases compatible evolution produces: record
//! fields matched by name (a reader field the writer lacked takes its default, or null when
//! nullable; a writer field the reader lacks is dropped), int → long / float → double
//! promotion, and a value of a nullable union taken as its non-null branch.

use super::avro::{AvroSchema, Node, NodeId};
use super::json::missing;
use super::value::{branch_for, type_name, Value, ValueError};

const MAX_DEPTH: usize = 128;

/// A payload decoded with `writer` (None: the reader's definition) and resolved to the
/// reader's `codec`.
pub fn decode_resolved(
    codec: &super::RecordCodec,
    writer: Option<&super::RecordCodec>,
    payload: &[u8],
) -> Result<Value, ValueError> {
    match writer {
        None => codec.decode(payload),
        Some(w) => project(
            &w.schema,
            w.schema.root,
            w.decode(payload)?,
            &codec.schema,
            codec.schema.root,
        ),
    }
}

/// `v` (of writer node `wid`) as a value of reader node `rid`.
pub fn project(
    w: &AvroSchema,
    wid: NodeId,
    v: Value,
    r: &AvroSchema,
    rid: NodeId,
) -> Result<Value, ValueError> {
    at(w, wid, v, r, rid, 0)
}

fn at(
    w: &AvroSchema,
    wid: NodeId,
    v: Value,
    r: &AvroSchema,
    rid: NodeId,
    depth: usize,
) -> Result<Value, ValueError> {
    if depth > MAX_DEPTH {
        return Err(ValueError("value nested too deeply".into()));
    }
    // A writer union: continue with the branch the value took.
    if let Node::Union(b) = w.node(wid) {
        let i = branch_for(w, b, &v)
            .ok_or_else(|| ValueError("value fits no branch of the writer's union".into()))?;
        return at(w, b[i], v, r, rid, depth + 1);
    }
    if let Node::Union(b) = r.node(rid) {
        if matches!(v, Value::Null) && b.iter().any(|&x| matches!(r.node(x), Node::Null)) {
            return Ok(Value::Null);
        }
        let mut last = None;
        for &x in b {
            if matches!(r.node(x), Node::Null) {
                continue;
            }
            match at(w, wid, v.clone(), r, x, depth + 1) {
                Ok(p) => return Ok(p),
                Err(e) => last = Some(e),
            }
        }
        return Err(last.unwrap_or_else(|| ValueError("no branch of the reader's union".into())));
    }
    let mismatch = |v: &Value| {
        ValueError(format!(
            "a writer's {} does not resolve to the reader's {} ({v:?})",
            type_name(w, wid),
            type_name(r, rid)
        ))
    };
    Ok(match (w.node(wid), r.node(rid), v) {
        (Node::Record(wr), Node::Record(rr), Value::Record(mut fields)) => {
            let mut out = Vec::with_capacity(rr.fields.len());
            for f in &rr.fields {
                match wr.fields.iter().position(|x| x.name == f.name) {
                    Some(i) => {
                        let fv = std::mem::replace(&mut fields[i], Value::Null);
                        out.push(at(w, wr.fields[i].node, fv, r, f.node, depth + 1)?);
                    }
                    None => out.push(missing(r, f.node, f.default.as_ref(), depth).ok_or_else(
                        || {
                            ValueError(format!(
                                "the writer has no field {} and the reader no default",
                                f.name
                            ))
                        },
                    )??),
                }
            }
            Value::Record(out)
        }
        (Node::Array(wi), Node::Array(ri), Value::Array(xs)) => Value::Array(
            xs.into_iter()
                .map(|x| at(w, *wi, x, r, *ri, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        (Node::Map(wv), Node::Map(rv), Value::Map(xs)) => Value::Map(
            xs.into_iter()
                .map(|(k, x)| Ok((k, at(w, *wv, x, r, *rv, depth + 1)?)))
                .collect::<Result<_, ValueError>>()?,
        ),
        (Node::Enum { symbols: ws, .. }, Node::Enum { symbols: rs, .. }, Value::Enum(i)) => {
            let sym = &ws[i as usize];
            Value::Enum(
                rs.iter()
                    .position(|s| s == sym)
                    .ok_or_else(|| ValueError(format!("the reader's enum has no {sym}")))?
                    as u32,
            )
        }
        (_, Node::Long, Value::Int(i)) => Value::Long(i64::from(i)),
        (_, Node::Double, Value::Int(i)) => Value::Double(f64::from(i)),
        (_, Node::Double, Value::Long(i)) => Value::Double(i as f64),
        (_, Node::Double, Value::Float(f)) => Value::Double(f64::from(f)),
        (_, Node::Float, Value::Int(i)) => Value::Float(i as f32),
        (_, Node::Float, Value::Long(i)) => Value::Float(i as f32),
        (_, Node::String, Value::Bytes(b)) => {
            Value::String(String::from_utf8(b).map_err(|_| ValueError("bytes not UTF-8".into()))?)
        }
        (_, Node::Bytes, Value::String(s)) => Value::Bytes(s.into_bytes()),
        (_, _, v) if super::value::fits(r, rid, &v) => v,
        (_, _, v) => return Err(mismatch(&v)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_an_added_and_a_removed_field() {
        let w = AvroSchema::parse(
            br#"{"type":"record","name":"R","fields":[{"name":"id","type":"int"},
                {"name":"gone","type":"string"}]}"#,
        )
        .unwrap();
        let r = AvroSchema::parse(
            br#"{"type":"record","name":"R","fields":[{"name":"id","type":["null","long"]},
                {"name":"note","type":["null","string"],"default":null},
                {"name":"n","type":"int","default":7}]}"#,
        )
        .unwrap();
        let v = Value::Record(vec![Value::Int(3), Value::String("x".into())]);
        assert_eq!(
            project(&w, w.root, v, &r, r.root).unwrap(),
            Value::Record(vec![Value::Long(3), Value::Null, Value::Int(7)])
        );
        let strict = AvroSchema::parse(
            br#"{"type":"record","name":"R","fields":[{"name":"new","type":"int"}]}"#,
        )
        .unwrap();
        let v = Value::Record(vec![Value::Int(3), Value::String("x".into())]);
        assert!(project(&w, w.root, v, &strict, strict.root).is_err());
    }
}
