//! KEY_VALUE schemas (pure): the schema data that holds both halves' definitions, the
//! properties naming them, and inline payloads.
//!
//! Facts from the Java client's `KeyValueSchemaInfo` / `KeyValue.encode`: the schema data is
//! `[i32 BE key length][key definition][i32 BE value length][value definition]`; the
//! properties `key.schema.name`, `key.schema.type`, `key.schema.properties` (JSON object),
//! the same for `value.`, and `kv.encoding.type` (`INLINE` or `SEPARATED`). An INLINE
//! payload is `[i32 BE key length][key][i32 BE value length][value]` (a length of -1 is a
//! null half); a SEPARATED payload is the value alone, the key travelling base64-encoded
//! as the partition key with `partition_key_b64_encoded` set.

use super::{SchemaInfo, SchemaType};

/// Where the key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvEncoding {
    Inline,
    Separated,
}

impl KvEncoding {
    pub fn name(self) -> &'static str {
        match self {
            KvEncoding::Inline => "INLINE",
            KvEncoding::Separated => "SEPARATED",
        }
    }
}

/// Malformed KEY_VALUE data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad key/value data: {0}")]
pub struct KvError(pub String);

fn props_json(props: &[(String, String)]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = props
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// The KEY_VALUE schema of `key` and `value`.
pub fn kv_schema(key: &SchemaInfo, value: &SchemaInfo, encoding: KvEncoding) -> SchemaInfo {
    let mut data = Vec::with_capacity(8 + key.data.len() + value.data.len());
    put_half(&mut data, Some(&key.data));
    put_half(&mut data, Some(&value.data));
    let properties = vec![
        ("key.schema.name".to_owned(), key.name.clone()),
        (
            "key.schema.type".to_owned(),
            SchemaInfo::type_name(key.kind).to_owned(),
        ),
        (
            "key.schema.properties".to_owned(),
            props_json(&key.properties),
        ),
        ("value.schema.name".to_owned(), value.name.clone()),
        (
            "value.schema.type".to_owned(),
            SchemaInfo::type_name(value.kind).to_owned(),
        ),
        (
            "value.schema.properties".to_owned(),
            props_json(&value.properties),
        ),
        ("kv.encoding.type".to_owned(), encoding.name().to_owned()),
    ];
    SchemaInfo {
        name: "KeyValue".to_owned(),
        kind: SchemaType::KeyValue,
        data,
        properties,
    }
}

fn prop<'a>(info: &'a SchemaInfo, key: &str) -> Option<&'a str> {
    info.properties
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn half_props(text: Option<&str>) -> Vec<(String, String)> {
    let Some(Ok(serde_json::Value::Object(m))) = text.map(serde_json::from_str) else {
        return Vec::new();
    };
    m.into_iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_owned())))
        .collect()
}

/// Split a KEY_VALUE schema into its key and value schemas and its encoding.
pub fn split_kv_schema(info: &SchemaInfo) -> Result<(SchemaInfo, SchemaInfo, KvEncoding), KvError> {
    if info.kind != SchemaType::KeyValue {
        return Err(KvError("not a KEY_VALUE schema".into()));
    }
    let (k, v) = split_halves(&info.data)?;
    let half = |prefix: &str, data: Option<&[u8]>| -> Result<SchemaInfo, KvError> {
        let ty = prop(info, &format!("{prefix}.schema.type")).unwrap_or("BYTES");
        Ok(SchemaInfo {
            name: prop(info, &format!("{prefix}.schema.name"))
                .unwrap_or("")
                .to_owned(),
            kind: SchemaInfo::type_from_name(ty)
                .ok_or_else(|| KvError(format!("unknown {prefix} schema type {ty}")))?,
            data: data.unwrap_or_default().to_vec(),
            properties: half_props(prop(info, &format!("{prefix}.schema.properties"))),
        })
    };
    let encoding = match prop(info, "kv.encoding.type") {
        Some("SEPARATED") => KvEncoding::Separated,
        _ => KvEncoding::Inline,
    };
    Ok((half("key", k)?, half("value", v)?, encoding))
}

fn put_half(out: &mut Vec<u8>, half: Option<&[u8]>) {
    match half {
        Some(b) => {
            out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            out.extend_from_slice(b);
        }
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
    }
}

/// An INLINE payload of `key` and `value` (None: a null half).
pub fn encode_inline(key: Option<&[u8]>, value: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len));
    put_half(&mut out, key);
    put_half(&mut out, value);
    out
}

/// The key and value halves of an INLINE payload (None: a null half).
pub type Halves<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// The two halves of an INLINE payload (or of KEY_VALUE schema data).
pub fn split_halves(data: &[u8]) -> Result<Halves<'_>, KvError> {
    let mut rest = data;
    let k = take_half(&mut rest)?;
    let v = take_half(&mut rest)?;
    if !rest.is_empty() {
        return Err(KvError(format!("{} bytes left over", rest.len())));
    }
    Ok((k, v))
}

fn take_half<'a>(rest: &mut &'a [u8]) -> Result<Option<&'a [u8]>, KvError> {
    if rest.len() < 4 {
        return Err(KvError("truncated length".into()));
    }
    let n = i32::from_be_bytes(rest[..4].try_into().expect("4 bytes"));
    *rest = &rest[4..];
    if n == -1 {
        return Ok(None);
    }
    let n = usize::try_from(n).map_err(|_| KvError(format!("bad length {n}")))?;
    if n > rest.len() {
        return Err(KvError(format!(
            "length {n} beyond the {} bytes left",
            rest.len()
        )));
    }
    let (a, b) = rest.split_at(n);
    *rest = b;
    Ok(Some(a))
}

/// Base64 (standard alphabet, padded), for SEPARATED key/value keys.
pub mod b64 {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    /// Base64 of `data`.
    pub fn encode(data: &[u8]) -> String {
        let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
        for c in data.chunks(3) {
            let n = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            for i in 0..4 {
                if i <= c.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    /// The bytes of base64 `text` (padding optional), None when it is not base64.
    pub fn decode(text: &str) -> Option<Vec<u8>> {
        let t = text.trim_end_matches('=').as_bytes();
        let mut out = Vec::with_capacity(t.len() * 3 / 4);
        let (mut acc, mut bits) = (0u32, 0u32);
        for &ch in t {
            let v = ALPHABET.iter().position(|&a| a == ch)? as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        Some(out)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn round_trips() {
            for n in 0..40u8 {
                let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
                let e = super::encode(&data);
                assert_eq!(e.len() % 4, 0);
                assert_eq!(super::decode(&e).unwrap(), data);
            }
            assert_eq!(super::encode(b"foobar"), "Zm9vYmFy");
            assert_eq!(super::encode(b"fo"), "Zm8=");
            assert!(super::decode("Zm9v!").is_none());
        }
    }
}
