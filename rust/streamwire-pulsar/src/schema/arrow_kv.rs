//! Payloads from Arrow columns, and typed Arrow columns from payloads, per schema kind
//! (pure): a record (JSON, Avro) or PROTOBUF_NATIVE message from a record batch / struct
//! array, and a KEY_VALUE pair from a batch with a `key` and a `value` column typed per the
//! halves (struct for a record or message half, string or binary for a STRING or BYTES
//! half). Received KEY_VALUE messages give `key` and `value` columns typed so: an INLINE
//! payload's halves are slices of it (no copy); a SEPARATED message's key half is its base64
//! message key.
//!
//! PROTOBUF_NATIVE: a null or a missing column is the field left out (the reader sees the
//! protobuf default; fields with presence read as absent), which is protobuf's own meaning of
//! "no value"; a null item of a list or map is an error (protobuf has none to send).

use std::borrow::Cow;

use streamwire_core::arrow_view::{ArrayData, ColumnView, ViewType};

use super::arrow_decode::column;
use super::arrow_encode::{arrow_records, ArrowError, ArrowRead, Records};
use super::keyvalue::{b64, encode_inline, split_halves};
use super::project::decode_resolved;
use super::protobuf::ProtoSchema;
use super::protobuf_wire;
use super::value::Value;
use super::RecordCodec;
use crate::consumer::ReceivedMessage;

/// The payload codec of one schema that is not a key/value one.
#[derive(Debug, Clone, Copy)]
pub enum HalfCodec<'c> {
    Bytes,
    String,
    Record(&'c RecordCodec),
    Protobuf(&'c ProtoSchema),
}

/// The payload codec of a schema, as Arrow columns need it.
#[derive(Debug, Clone, Copy)]
pub enum ColumnCodec<'c> {
    Plain(HalfCodec<'c>),
    KeyValue {
        key: HalfCodec<'c>,
        value: HalfCodec<'c>,
        separated: bool,
    },
}

/// Encoded payloads: all of them back to back in `buf`, cut at `lens`; `keys[i]` the base64
/// message key of a SEPARATED key/value row.
#[derive(Debug, Default)]
pub struct Payloads {
    pub buf: Vec<u8>,
    pub lens: Vec<usize>,
    pub keys: Vec<Option<String>>,
}

/// How protobuf reads Arrow nulls (see the module note).
const PROTOBUF: ArrowRead = ArrowRead {
    nulls_as_absent: true,
    null_rows: false,
};

fn err(msg: impl Into<String>) -> ArrowError {
    ArrowError::Schema(msg.into())
}

/// The payloads of `rows`, or None when `codec` has no column form (BYTES, STRING: a plain
/// sequence is its form).
pub fn arrow_payloads(
    codec: ColumnCodec<'_>,
    rows: &Records<'_>,
) -> Result<Option<Payloads>, ArrowError> {
    let mut out = Payloads::default();
    let push = |out: &mut Payloads, i: usize, enc: &dyn Fn(&mut Vec<u8>) -> Result<(), String>| {
        let start = out.buf.len();
        enc(&mut out.buf).map_err(|e| err(format!("row {i}: {e}")))?;
        out.lens.push(out.buf.len() - start);
        out.keys.push(None);
        Ok::<(), ArrowError>(())
    };
    match codec {
        ColumnCodec::Plain(HalfCodec::Record(rc)) => {
            for (i, v) in arrow_records(&rc.schema, rows, ArrowRead::default())?
                .iter()
                .enumerate()
            {
                push(&mut out, i, &|b| rc.encode(v, b).map_err(|e| e.0))?;
            }
        }
        ColumnCodec::Plain(HalfCodec::Protobuf(p)) => {
            for (i, v) in arrow_records(&p.avro, rows, PROTOBUF)?.iter().enumerate() {
                push(&mut out, i, &|b| {
                    protobuf_wire::encode(p, v, b).map_err(|e| e.0)
                })?;
            }
        }
        ColumnCodec::Plain(HalfCodec::Bytes | HalfCodec::String) => return Ok(None),
        ColumnCodec::KeyValue {
            key,
            value,
            separated,
        } => {
            let n = rows.rows;
            let (k_col, v_col) = kv_columns(rows)?;
            let ks = match k_col {
                Some(c) => half_payloads(key, c, "key")?,
                None => vec![None; n],
            };
            let vs = match v_col {
                Some(c) => half_payloads(value, c, "value")?,
                None => vec![None; n],
            };
            for (k, v) in ks.iter().zip(&vs) {
                let start = out.buf.len();
                if separated {
                    out.buf.extend_from_slice(v.as_deref().unwrap_or_default());
                    out.keys
                        .push(Some(b64::encode(k.as_deref().unwrap_or_default())));
                } else {
                    out.buf
                        .extend_from_slice(&encode_inline(k.as_deref(), v.as_deref()));
                    out.keys.push(None);
                }
                out.lens.push(out.buf.len() - start);
            }
        }
    }
    Ok(Some(out))
}

/// The `key` and `value` columns of a key/value batch (either may be absent: null halves).
/// Any other column is an error: it would be dropped silently.
type KvColumns<'r, 'a> = (Option<&'r [ColumnView<'a>]>, Option<&'r [ColumnView<'a>]>);

fn kv_columns<'r, 'a>(rows: &'r Records<'a>) -> Result<KvColumns<'r, 'a>, ArrowError> {
    if !rows.batch {
        return Err(err(
            "a key/value schema takes Arrow columns as a record batch with 'key' and 'value' \
             columns",
        ));
    }
    if let Some((other, _)) = rows
        .columns
        .iter()
        .find(|(n, _)| !matches!(n.as_str(), "key" | "value"))
    {
        return Err(err(format!(
            "column {other:?} is neither 'key' nor 'value' of the key/value schema"
        )));
    }
    let get = |name: &str| {
        rows.columns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| &c[..])
    };
    Ok((get("key"), get("value")))
}

/// One half's bytes per row of the chunks of one column (None: a null half).
fn half_payloads(
    half: HalfCodec<'_>,
    chunks: &[ColumnView<'_>],
    name: &str,
) -> Result<Vec<Option<Vec<u8>>>, ArrowError> {
    let mut out = Vec::new();
    for arr in chunks {
        out.extend(chunk_payloads(half, arr, name)?);
    }
    Ok(out)
}

fn chunk_payloads(
    half: HalfCodec<'_>,
    arr: &ColumnView<'_>,
    name: &str,
) -> Result<Vec<Option<Vec<u8>>>, ArrowError> {
    let ty = &arr.type_name;
    let struct_rows = |schema, how: ArrowRead| {
        if !matches!(arr.ty, ViewType::Struct(_)) {
            return Err(err(format!(
                "column {name:?} is {ty}; the key/value schema's {name} half is a record"
            )));
        }
        let how = ArrowRead {
            null_rows: true,
            ..how
        };
        arrow_records(schema, &Records::of_struct(arr.borrow()), how)
    };
    match half {
        HalfCodec::Bytes | HalfCodec::String => {
            let string = matches!(half, HalfCodec::String);
            let ok = match arr.ty {
                ViewType::Binary { utf8, .. } => utf8 || !string,
                _ => false,
            };
            if !ok {
                let want = if string {
                    "a string column"
                } else {
                    "a binary or string column"
                };
                return Err(err(format!(
                    "column {name:?} is {ty}; the key/value schema's {name} half takes {want}"
                )));
            }
            Ok(arr
                .bytes()?
                .into_iter()
                .enumerate()
                .map(|(i, b)| arr.is_valid(i).then(|| b.to_vec()))
                .collect())
        }
        HalfCodec::Record(codec) => {
            let rows = struct_rows(&codec.schema, ArrowRead::default())?;
            encode_rows(rows, name, |v, out| codec.encode(v, out).map_err(|e| e.0))
        }
        HalfCodec::Protobuf(p) => {
            let rows = struct_rows(&p.avro, PROTOBUF)?;
            encode_rows(rows, name, |v, out| {
                protobuf_wire::encode(p, v, out).map_err(|e| e.0)
            })
        }
    }
}

fn encode_rows(
    rows: Vec<Value>,
    name: &str,
    enc: impl Fn(&Value, &mut Vec<u8>) -> Result<(), String>,
) -> Result<Vec<Option<Vec<u8>>>, ArrowError> {
    let mut out = Vec::with_capacity(rows.len());
    for (i, v) in rows.iter().enumerate() {
        if matches!(v, Value::Null) {
            out.push(None);
            continue;
        }
        let mut b = Vec::new();
        enc(v, &mut b).map_err(|e| err(format!("{name} row {i}: {e}")))?;
        out.push(Some(b));
    }
    Ok(out)
}

/// A received key/value message's halves: the key half's bytes (decoded from the base64
/// message key of a SEPARATED message, else borrowed from the payload) and the value half's.
pub type MessageHalves<'m> = (Option<Cow<'m, [u8]>>, Option<&'m [u8]>);

/// The halves of `m`, sent with a SEPARATED (`separated`) or INLINE key/value schema.
pub fn message_halves(
    m: &ReceivedMessage,
    separated: bool,
) -> Result<MessageHalves<'_>, ArrowError> {
    if separated {
        let k = match m.key() {
            Some(k) => Some(Cow::Owned(b64::decode(k).ok_or_else(|| {
                err(format!(
                    "message {:?}: the key of a SEPARATED key/value is not base64",
                    m.id
                ))
            })?)),
            None => None,
        };
        return Ok((k, (!m.null_value()).then_some(&m.payload[..])));
    }
    let (k, v) =
        split_halves(&m.payload).map_err(|e| err(format!("message {:?}: {}", m.id, e.0)))?;
    Ok((k.map(Cow::Borrowed), v))
}

/// Row `i`'s half decoded (`i` picks its writer's codec).
type Decode<'d> = dyn Fn(usize, &[u8]) -> Result<Value, String> + 'd;

/// The column of one half: `raws[i]` is row `i`'s bytes (None: a null half), `writers[i]`
/// the writer's record codec of that half (None: the reader's own); `msgs` names a message
/// in errors (may be empty: rows are named by number).
pub fn half_column(
    half: HalfCodec<'_>,
    raws: &[Option<&[u8]>],
    writers: &[Option<&RecordCodec>],
    msgs: &[ReceivedMessage],
) -> Result<ArrayData, ArrowError> {
    let which = |i: usize| {
        msgs.get(i)
            .map_or_else(|| format!("row {i}"), |m| format!("message {:?}", m.id))
    };
    let decode_all = |dec: &Decode<'_>| {
        let mut vals = Vec::with_capacity(raws.len());
        for (i, r) in raws.iter().enumerate() {
            vals.push(match r {
                None => Value::Null,
                Some(p) => {
                    dec(i, p).map_err(|e| err(format!("cannot decode {}: {e}", which(i))))?
                }
            });
        }
        Ok::<_, ArrowError>(vals)
    };
    match half {
        HalfCodec::Bytes => Ok(ArrayData::var(raws, false)),
        HalfCodec::String => {
            // Arrow strings are UTF-8 by contract; a column must not carry other bytes.
            if let Some(i) = raws
                .iter()
                .position(|r| r.is_some_and(|x| std::str::from_utf8(x).is_err()))
            {
                return Err(err(format!("{}: a STRING half is not UTF-8", which(i))));
            }
            Ok(ArrayData::var(raws, true))
        }
        HalfCodec::Record(codec) => {
            let vals = decode_all(&|i, p| {
                decode_resolved(codec, writers.get(i).copied().flatten(), p).map_err(|e| e.0)
            })?;
            let refs: Vec<&Value> = vals.iter().collect();
            column(&codec.schema, codec.schema.root, &refs)
        }
        HalfCodec::Protobuf(p) => {
            let vals = decode_all(&|_, x| protobuf_wire::decode(p, x).map_err(|e| e.0))?;
            let refs: Vec<&Value> = vals.iter().collect();
            column(&p.avro, p.avro.root, &refs)
        }
    }
}
