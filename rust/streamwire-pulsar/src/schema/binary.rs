//! Avro binary encoding of a [`Value`] by its schema, and decoding back (pure).
//!
//! The encoding is Avro's: zig-zag varints for int/long, little-endian IEEE floats,
//! length-prefixed bytes/strings, records as their fields in order, unions as the branch
//! index then the value, arrays and maps as blocks ending with a zero count (we write one
//! block; we read any number, including negative counts followed by a byte size).
//!
//! Decoding is hostile-input safe: lengths are checked against what is left, nesting is
//! bounded, and the number of values decoded is bounded by the input size (an array of
//! nulls takes no bytes per item, so its count alone must not drive an allocation).

use super::avro::{AvroSchema, Node, NodeId};
use super::value::{branch_for, type_name, Value, ValueError};

/// Nesting deeper than this fails (a self-containing record would otherwise recurse forever).
const MAX_DEPTH: usize = 128;

fn fail<T>(msg: impl Into<String>) -> Result<T, ValueError> {
    Err(ValueError(msg.into()))
}

/// Append `v`, which must follow node `id` of `schema`, to `out`.
pub fn encode(
    schema: &AvroSchema,
    id: NodeId,
    v: &Value,
    out: &mut Vec<u8>,
) -> Result<(), ValueError> {
    encode_at(schema, id, v, out, 0)
}

fn encode_at(
    schema: &AvroSchema,
    id: NodeId,
    v: &Value,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), ValueError> {
    if depth > MAX_DEPTH {
        return fail("value nested too deeply");
    }
    match (schema.node(id), v) {
        (Node::Null, Value::Null) => {}
        (Node::Boolean, Value::Boolean(b)) => out.push(u8::from(*b)),
        (Node::Int, Value::Int(i)) => write_long(out, i64::from(*i)),
        (Node::Long, Value::Long(i)) => write_long(out, *i),
        (Node::Float, Value::Float(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (Node::Double, Value::Double(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (Node::Bytes, Value::Bytes(b)) => write_bytes(out, b),
        (Node::String, Value::String(s)) => write_bytes(out, s.as_bytes()),
        (Node::Record(r), Value::Record(fields)) if r.fields.len() == fields.len() => {
            for (f, fv) in r.fields.iter().zip(fields) {
                encode_at(schema, f.node, fv, out, depth + 1)
                    .map_err(|e| ValueError(format!("{}.{}: {}", short(&r.name), f.name, e.0)))?;
            }
        }
        (Node::Enum { symbols, .. }, Value::Enum(i)) if (*i as usize) < symbols.len() => {
            write_long(out, i64::from(*i))
        }
        (Node::Array(item), Value::Array(items)) => {
            if !items.is_empty() {
                write_long(out, items.len() as i64);
                for x in items {
                    encode_at(schema, *item, x, out, depth + 1)?;
                }
            }
            out.push(0);
        }
        (Node::Map(val), Value::Map(entries)) => {
            if !entries.is_empty() {
                write_long(out, entries.len() as i64);
                for (k, x) in entries {
                    write_bytes(out, k.as_bytes());
                    encode_at(schema, *val, x, out, depth + 1)?;
                }
            }
            out.push(0);
        }
        (Node::Union(branches), v) => {
            let Some(b) = branch_for(schema, branches, v) else {
                return fail(format!(
                    "a {} does not fit {}",
                    value_kind(v),
                    type_name(schema, id)
                ));
            };
            write_long(out, b as i64);
            encode_at(schema, branches[b], v, out, depth + 1)?;
        }
        (Node::Fixed { size, .. }, Value::Fixed(b)) if b.len() == *size => out.extend_from_slice(b),
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

fn short(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The variant's name, for messages.
pub fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Boolean(_) => "boolean",
        Value::Int(_) => "int",
        Value::Long(_) => "long",
        Value::Float(_) => "float",
        Value::Double(_) => "double",
        Value::Bytes(_) => "bytes",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Map(_) => "map",
        Value::Record(_) => "record",
        Value::Enum(_) => "enum",
        Value::Fixed(_) => "fixed",
    }
}

/// Zig-zag varint, as Avro writes int and long.
pub fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    write_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

/// Decode one value of node `id` from the whole of `data` (trailing bytes are an error).
pub fn decode(schema: &AvroSchema, id: NodeId, data: &[u8]) -> Result<Value, ValueError> {
    let mut r = Reader {
        buf: data,
        budget: 64 + 4 * data.len(),
    };
    let v = r.value(schema, id, 0)?;
    if !r.buf.is_empty() {
        return fail(format!("{} bytes left after the value", r.buf.len()));
    }
    Ok(v)
}

struct Reader<'a> {
    buf: &'a [u8],
    /// Values still allowed (see the module note).
    budget: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], ValueError> {
        if n > self.buf.len() {
            return fail(format!(
                "truncated: {n} bytes wanted, {} left",
                self.buf.len()
            ));
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    fn long(&mut self) -> Result<i64, ValueError> {
        let mut z: u64 = 0;
        for shift in (0..70).step_by(7) {
            let Some((&b, rest)) = self.buf.split_first() else {
                return fail("truncated varint");
            };
            self.buf = rest;
            if shift == 63 && b > 1 {
                return fail("varint overflows 64 bits");
            }
            z |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(((z >> 1) as i64) ^ -((z & 1) as i64));
            }
        }
        fail("varint too long")
    }

    fn len(&mut self) -> Result<usize, ValueError> {
        let n = self.long()?;
        if n < 0 || n as u64 > self.buf.len() as u64 {
            return fail(format!("bad length {n} ({} bytes left)", self.buf.len()));
        }
        Ok(n as usize)
    }

    /// The next block's item count (0 ends), skipping a negative count's byte size.
    fn block(&mut self) -> Result<usize, ValueError> {
        let n = self.long()?;
        if n < 0 {
            self.long()?;
        }
        let n = n.unsigned_abs();
        if n > self.budget as u64 {
            return fail(format!(
                "block of {n} items is more than the input can hold"
            ));
        }
        Ok(n as usize)
    }

    fn value(
        &mut self,
        schema: &AvroSchema,
        id: NodeId,
        depth: usize,
    ) -> Result<Value, ValueError> {
        if depth > MAX_DEPTH {
            return fail("value nested too deeply");
        }
        if self.budget == 0 {
            return fail("more values than the input can hold");
        }
        self.budget -= 1;
        Ok(match schema.node(id) {
            Node::Null => Value::Null,
            Node::Boolean => match self.take(1)?[0] {
                0 => Value::Boolean(false),
                1 => Value::Boolean(true),
                b => return fail(format!("bad boolean byte {b}")),
            },
            Node::Int => {
                let v = self.long()?;
                Value::Int(
                    i32::try_from(v).map_err(|_| ValueError(format!("int {v} out of range")))?,
                )
            }
            Node::Long => Value::Long(self.long()?),
            Node::Float => Value::Float(f32::from_le_bytes(
                self.take(4)?.try_into().expect("4 bytes"),
            )),
            Node::Double => Value::Double(f64::from_le_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            )),
            Node::Bytes => {
                let n = self.len()?;
                Value::Bytes(self.take(n)?.to_vec())
            }
            Node::String => Value::String(self.string()?),
            Node::Record(r) => {
                let mut fields = Vec::with_capacity(r.fields.len());
                for f in &r.fields {
                    fields.push(self.value(schema, f.node, depth + 1)?);
                }
                Value::Record(fields)
            }
            Node::Enum { symbols, name } => {
                let i = self.long()?;
                if i < 0 || i as usize >= symbols.len() {
                    return fail(format!("enum {name} has no symbol {i}"));
                }
                Value::Enum(i as u32)
            }
            Node::Array(item) => {
                let mut items = Vec::new();
                loop {
                    let n = self.block()?;
                    if n == 0 {
                        break;
                    }
                    items.reserve(n.min(self.buf.len() + 1));
                    for _ in 0..n {
                        items.push(self.value(schema, *item, depth + 1)?);
                    }
                }
                Value::Array(items)
            }
            Node::Map(val) => {
                let mut entries = Vec::new();
                loop {
                    let n = self.block()?;
                    if n == 0 {
                        break;
                    }
                    entries.reserve(n.min(self.buf.len() + 1));
                    for _ in 0..n {
                        let k = self.string()?;
                        entries.push((k, self.value(schema, *val, depth + 1)?));
                    }
                }
                Value::Map(entries)
            }
            Node::Union(branches) => {
                let b = self.long()?;
                let Some(&branch) = usize::try_from(b).ok().and_then(|b| branches.get(b)) else {
                    return fail(format!("union has no branch {b}"));
                };
                self.value(schema, branch, depth + 1)?
            }
            Node::Fixed { size, .. } => Value::Fixed(self.take(*size)?.to_vec()),
        })
    }

    fn string(&mut self) -> Result<String, ValueError> {
        let n = self.len()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| ValueError("string is not UTF-8".into()))
    }
}
