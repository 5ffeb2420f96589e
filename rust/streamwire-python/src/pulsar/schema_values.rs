//! Python objects ↔ schema [`Value`]s, walked by the record schema in one pass (no
//! per-field trip through Python code: attributes and items are read directly).
//!
//! Records are read from a dict (by key) or any object (by attribute: dataclasses, pydantic
//! models, plain classes), and built back as the registered record type (called with the
//! fields as keyword arguments, keeping only those it declares, so a reader type of another
//! schema version still builds) or as a dict. Enums are read from an `enum.Enum` member
//! (its name) or a symbol string, and built back as the registered enum's member or the
//! symbol.

use std::collections::{HashMap, HashSet};

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};

use streamwire_pulsar::schema::avro::{AvroSchema, Node, NodeId};
use streamwire_pulsar::schema::json::missing;
use streamwire_pulsar::schema::value::{type_name, Value};

/// Raise `streamwire.exceptions.SchemaError(msg)`.
pub(crate) fn schema_error(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    match py
        .import("streamwire.exceptions")
        .and_then(|m| m.getattr("SchemaError"))
        .and_then(|c| c.call1((msg,)))
    {
        Ok(v) => PyErr::from_value(v),
        Err(e) => e,
    }
}

/// The Python types to build records and enums as, by full name (and short name).
#[derive(Default)]
pub(crate) struct PyTypes {
    pub records: HashMap<String, Py<PyAny>>,
    pub enums: HashMap<String, Py<PyAny>>,
    /// The field names each record type of the reader's schema declares.
    pub fields: HashMap<String, HashSet<String>>,
}

fn short(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

impl PyTypes {
    fn get<'a>(map: &'a HashMap<String, Py<PyAny>>, name: &str) -> Option<&'a Py<PyAny>> {
        map.get(name).or_else(|| map.get(short(name)))
    }
}

const MAX_DEPTH: usize = 100;

/// `obj` as a value of node `id`.
pub(crate) fn to_value(
    py: Python<'_>,
    schema: &AvroSchema,
    id: NodeId,
    obj: &Bound<'_, PyAny>,
    depth: usize,
) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(schema_error(py, "value nested too deeply"));
    }
    let wrong = |what: &str| -> PyErr {
        let tn = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        schema_error(
            py,
            format!("expected {} ({what}), got {tn}", type_name(schema, id)),
        )
    };
    Ok(match schema.node(id) {
        Node::Null => {
            if !obj.is_none() {
                return Err(wrong("None"));
            }
            Value::Null
        }
        Node::Boolean => match obj.cast::<PyBool>() {
            Ok(b) => Value::Boolean(b.is_true()),
            Err(_) => return Err(wrong("a bool")),
        },
        Node::Int | Node::Long => {
            if !obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyBool>() {
                return Err(wrong("an int"));
            }
            let v: i64 = obj
                .extract()
                .map_err(|_| schema_error(py, format!("{obj} does not fit a 64-bit long")))?;
            if matches!(schema.node(id), Node::Int) {
                Value::Int(
                    i32::try_from(v)
                        .map_err(|_| schema_error(py, format!("{v} does not fit a 32-bit int")))?,
                )
            } else {
                Value::Long(v)
            }
        }
        Node::Float | Node::Double => {
            if !(obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>())
                || obj.is_instance_of::<PyBool>()
            {
                return Err(wrong("a float"));
            }
            let f: f64 = obj.extract()?;
            if matches!(schema.node(id), Node::Float) {
                Value::Float(f as f32)
            } else {
                Value::Double(f)
            }
        }
        Node::Bytes => Value::Bytes(bytes_of(obj).ok_or_else(|| wrong("bytes"))?),
        Node::Fixed { size, .. } => {
            let b = bytes_of(obj).ok_or_else(|| wrong("bytes"))?;
            if b.len() != *size {
                return Err(schema_error(
                    py,
                    format!("fixed needs {size} bytes, got {}", b.len()),
                ));
            }
            Value::Fixed(b)
        }
        Node::String => match obj.cast::<PyString>() {
            Ok(s) => Value::String(s.to_cow()?.into_owned()),
            Err(_) => return Err(wrong("a str")),
        },
        Node::Enum { symbols, name } => {
            let sym: String = if let Ok(s) = obj.cast::<PyString>() {
                s.to_cow()?.into_owned()
            } else if let Ok(n) = obj.getattr("name").and_then(|n| n.extract::<String>()) {
                n
            } else {
                return Err(wrong("an Enum member or a symbol str"));
            };
            let i = symbols.iter().position(|s| *s == sym).ok_or_else(|| {
                schema_error(py, format!("{sym:?} is not a symbol of enum {name}"))
            })?;
            Value::Enum(i as u32)
        }
        Node::Array(item) => {
            if !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>()) {
                return Err(wrong("a list"));
            }
            let mut out = Vec::with_capacity(obj.len()?);
            for x in obj.try_iter()? {
                out.push(to_value(py, schema, *item, &x?, depth + 1)?);
            }
            Value::Array(out)
        }
        Node::Map(val) => {
            let d = obj.cast::<PyDict>().map_err(|_| wrong("a dict"))?;
            let mut out = Vec::with_capacity(d.len());
            for (k, v) in d.iter() {
                let k: String = k
                    .extract()
                    .map_err(|_| schema_error(py, "map keys must be str"))?;
                out.push((k, to_value(py, schema, *val, &v, depth + 1)?));
            }
            Value::Map(out)
        }
        Node::Record(r) => {
            let dict = obj.cast::<PyDict>().ok();
            if dict.is_none() && (obj.is_none() || is_scalar(obj)) {
                return Err(wrong("a record: a dict or an object with the fields"));
            }
            let mut out = Vec::with_capacity(r.fields.len());
            for f in &r.fields {
                let got = match dict {
                    Some(d) => d.get_item(&f.name)?,
                    None => match obj.getattr(f.name.as_str()) {
                        Ok(v) => Some(v),
                        Err(e) if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(py) => {
                            None
                        }
                        Err(e) => return Err(e),
                    },
                };
                let v = match got {
                    Some(v) => to_value(py, schema, f.node, &v, depth + 1).map_err(|e| {
                        schema_error(
                            py,
                            format!("{}.{}: {}", short(&r.name), f.name, e.value(py)),
                        )
                    })?,
                    None => match missing(schema, f.node, f.default.as_ref(), depth) {
                        Some(Ok(v)) => v,
                        _ => {
                            return Err(schema_error(
                                py,
                                format!("{}: field {} is missing", short(&r.name), f.name),
                            ))
                        }
                    },
                };
                out.push(v);
            }
            Value::Record(out)
        }
        Node::Union(branches) => {
            if obj.is_none() {
                if branches
                    .iter()
                    .any(|&b| matches!(schema.node(b), Node::Null))
                {
                    return Ok(Value::Null);
                }
                return Err(wrong("not None"));
            }
            let mut last = None;
            for &b in branches {
                if matches!(schema.node(b), Node::Null) {
                    continue;
                }
                match to_value(py, schema, b, obj, depth + 1) {
                    Ok(v) => return Ok(v),
                    Err(e) => last = Some(e),
                }
            }
            return Err(last.unwrap_or_else(|| wrong("a branch")));
        }
    })
}

fn is_scalar(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
        || obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyList>()
}

fn bytes_of(obj: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Some(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Some(b.to_vec());
    }
    None
}

/// `v` (of node `id`) as a Python object, records and enums built as `types` says.
pub(crate) fn to_py<'py>(
    py: Python<'py>,
    schema: &AvroSchema,
    id: NodeId,
    v: Value,
    types: &PyTypes,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match (schema.node(id), v) {
        (_, Value::Null) => py.None().into_bound(py),
        (_, Value::Boolean(b)) => PyBool::new(py, b).to_owned().into_any(),
        (_, Value::Int(i)) => i.into_pyobject(py)?.into_any(),
        (_, Value::Long(i)) => i.into_pyobject(py)?.into_any(),
        (_, Value::Float(f)) => f64::from(f).into_pyobject(py)?.into_any(),
        (_, Value::Double(f)) => f.into_pyobject(py)?.into_any(),
        (_, Value::Bytes(b)) | (_, Value::Fixed(b)) => PyBytes::new(py, &b).into_any(),
        (_, Value::String(s)) => PyString::new(py, &s).into_any(),
        (Node::Union(branches), v) => {
            let b = streamwire_pulsar::schema::value::branch_for(schema, branches, &v)
                .ok_or_else(|| schema_error(py, "value fits no branch of its union"))?;
            to_py(py, schema, branches[b], v, types)?
        }
        (Node::Array(item), Value::Array(xs)) => {
            let l = PyList::empty(py);
            for x in xs {
                l.append(to_py(py, schema, *item, x, types)?)?;
            }
            l.into_any()
        }
        (Node::Map(val), Value::Map(entries)) => {
            let d = PyDict::new(py);
            for (k, x) in entries {
                d.set_item(k, to_py(py, schema, *val, x, types)?)?;
            }
            d.into_any()
        }
        (Node::Enum { symbols, name }, Value::Enum(i)) => {
            let sym = symbols
                .get(i as usize)
                .ok_or_else(|| schema_error(py, format!("enum {name} has no symbol {i}")))?;
            match PyTypes::get(&types.enums, name) {
                Some(cls) => cls.bind(py).get_item(sym)?,
                None => PyString::new(py, sym).into_any(),
            }
        }
        (Node::Record(r), Value::Record(fields)) => {
            let ctor = PyTypes::get(&types.records, &r.name);
            let known = types
                .fields
                .get(&r.name)
                .or_else(|| types.fields.get(short(&r.name)));
            let d = PyDict::new(py);
            for (f, x) in r.fields.iter().zip(fields) {
                if ctor.is_some() && known.is_some_and(|k| !k.contains(&f.name)) {
                    // A field of another schema version the reader's type does not declare.
                    continue;
                }
                d.set_item(&f.name, to_py(py, schema, f.node, x, types)?)?;
            }
            match ctor {
                Some(c) => c.bind(py).call((), Some(&d))?,
                None => d.into_any(),
            }
        }
        (_, v) => {
            return Err(schema_error(
                py,
                format!("decoded {v:?} does not match {}", type_name(schema, id)),
            ))
        }
    })
}
