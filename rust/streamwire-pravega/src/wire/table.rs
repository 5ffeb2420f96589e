//! Table segment commands (pure): the key/value segments that hold a reader group's state.
//!
//! A table segment maps byte keys to byte values; every key has a version (the offset of its
//! last update in the segment). An update or removal may name the version it expects per key
//! (`KEY_NOT_EXISTS`: the key must be absent; `NO_VERSION`: no condition); the whole batch
//! fails with `TABLE_KEY_BAD_VERSION` / `TABLE_KEY_DOES_NOT_EXIST` when one key does not match,
//! which is what makes a reader group's read-modify-write safe between processes.
//!
//! Layouts (fields in this order, big endian, strings as `writeUTF`), as the 0.13 segment
//! store and the official clients speak them:
//! - a key: `payload:i32 (4 + len + 8) len:i32 bytes version:i64`; a value:
//!   `payload:i32 (4 + len) len:i32 bytes`; entries: `count:i32` then key, value pairs.
//! - CREATE_TABLE_SEGMENT 70 `requestId segment token`; DELETE_TABLE_SEGMENT 71
//!   `requestId segment mustBeEmpty:bool token`; UPDATE_TABLE_ENTRIES 74 `requestId segment
//!   token entries tableSegmentOffset:i64`; REMOVE_TABLE_KEYS 76 `requestId segment token
//!   count keys… tableSegmentOffset`; READ_TABLE_ENTRIES_DELTA 88 `requestId segment token
//!   fromPosition:i64 suggestedEntryCount:i32`.
//! - Replies: TABLE_ENTRIES_UPDATED 75 `requestId count versions…`; TABLE_KEYS_REMOVED 77
//!   `requestId segment`; TABLE_KEY_DOES_NOT_EXIST 81 / TABLE_KEY_BAD_VERSION 82 `requestId
//!   segment stack`; TABLE_ENTRIES_DELTA_READ 87 `requestId segment entries shouldClear:bool
//!   reachedEnd:bool lastPosition:i64`; SEGMENT_DELETED 31 `requestId segment`.

use bytes::{BufMut, BytesMut};

use super::request::{begin, end};
use super::utf::put_utf;
use super::{Cursor, WireError};

pub const CREATE_TABLE_SEGMENT: i32 = 70;
pub const DELETE_TABLE_SEGMENT: i32 = 71;
pub const UPDATE_TABLE_ENTRIES: i32 = 74;
pub const TABLE_ENTRIES_UPDATED: i32 = 75;
pub const REMOVE_TABLE_KEYS: i32 = 76;
pub const TABLE_KEYS_REMOVED: i32 = 77;
pub const TABLE_KEY_DOES_NOT_EXIST: i32 = 81;
pub const TABLE_KEY_BAD_VERSION: i32 = 82;
pub const TABLE_ENTRIES_DELTA_READ: i32 = 87;
pub const READ_TABLE_ENTRIES_DELTA: i32 = 88;
pub const SEGMENT_DELETED: i32 = 31;

/// The reply types whose first field is the request id (so the connection can route them).
pub const REPLIES: [i32; 6] = [
    TABLE_ENTRIES_UPDATED,
    TABLE_KEYS_REMOVED,
    TABLE_KEY_DOES_NOT_EXIST,
    TABLE_KEY_BAD_VERSION,
    TABLE_ENTRIES_DELTA_READ,
    SEGMENT_DELETED,
];

/// A key version meaning "no condition".
pub const NO_VERSION: i64 = i64::MIN;
/// A key version meaning "the key must not exist".
pub const KEY_NOT_EXISTS: i64 = -1;

/// One entry to write: the key, its value, the version the key must have now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TablePut {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub expected: i64,
}

/// One entry read: the key, its value, its current version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub version: i64,
}

/// What the segment store answered to a table command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableReply {
    Updated {
        versions: Vec<i64>,
    },
    Removed,
    /// A conditional update or removal named a version the key does not have.
    BadVersion,
    /// A conditional update or removal named a key that does not exist.
    KeyDoesNotExist,
    DeltaRead {
        entries: Vec<TableEntry>,
        reached_end: bool,
        last_position: i64,
    },
    Deleted,
}

fn len_i32(n: usize) -> Result<i32, WireError> {
    i32::try_from(n).map_err(|_| WireError::InvalidArgument("table key or value over 2 GiB"))
}

fn put_key(out: &mut BytesMut, key: &[u8], version: i64) -> Result<(), WireError> {
    out.put_i32(len_i32(4 + key.len() + 8)?);
    out.put_i32(len_i32(key.len())?);
    out.put_slice(key);
    out.put_i64(version);
    Ok(())
}

/// CREATE_TABLE_SEGMENT (`SEGMENT_CREATED`, or `SEGMENT_ALREADY_EXISTS` when it exists).
pub fn encode_create_table_segment(
    out: &mut BytesMut,
    request_id: i64,
    segment: &str,
    token: &str,
) -> Result<(), WireError> {
    let at = begin(out, CREATE_TABLE_SEGMENT);
    out.put_i64(request_id);
    put_utf(out, segment)?;
    put_utf(out, token)?;
    end(out, at)
}

/// DELETE_TABLE_SEGMENT, whether or not it holds keys.
pub fn encode_delete_table_segment(
    out: &mut BytesMut,
    request_id: i64,
    segment: &str,
    token: &str,
) -> Result<(), WireError> {
    let at = begin(out, DELETE_TABLE_SEGMENT);
    out.put_i64(request_id);
    put_utf(out, segment)?;
    out.put_u8(0);
    put_utf(out, token)?;
    end(out, at)
}

/// UPDATE_TABLE_ENTRIES: all of `puts` or none (no segment-offset condition).
pub fn encode_update_table_entries(
    out: &mut BytesMut,
    request_id: i64,
    segment: &str,
    token: &str,
    puts: &[TablePut],
) -> Result<(), WireError> {
    let at = begin(out, UPDATE_TABLE_ENTRIES);
    out.put_i64(request_id);
    put_utf(out, segment)?;
    put_utf(out, token)?;
    out.put_i32(len_i32(puts.len())?);
    for p in puts {
        put_key(out, &p.key, p.expected)?;
        out.put_i32(len_i32(4 + p.value.len())?);
        out.put_i32(len_i32(p.value.len())?);
        out.put_slice(&p.value);
    }
    out.put_i64(-1);
    end(out, at)
}

/// REMOVE_TABLE_KEYS: each key with the version it must have.
pub fn encode_remove_table_keys(
    out: &mut BytesMut,
    request_id: i64,
    segment: &str,
    token: &str,
    keys: &[(Vec<u8>, i64)],
) -> Result<(), WireError> {
    let at = begin(out, REMOVE_TABLE_KEYS);
    out.put_i64(request_id);
    put_utf(out, segment)?;
    put_utf(out, token)?;
    out.put_i32(len_i32(keys.len())?);
    for (k, v) in keys {
        put_key(out, k, *v)?;
    }
    out.put_i64(-1);
    end(out, at)
}

/// READ_TABLE_ENTRIES_DELTA: the entries changed since `from` (a table segment offset; 0:
/// every entry), up to about `count` of them.
pub fn encode_read_table_entries_delta(
    out: &mut BytesMut,
    request_id: i64,
    segment: &str,
    token: &str,
    from: i64,
    count: i32,
) -> Result<(), WireError> {
    let at = begin(out, READ_TABLE_ENTRIES_DELTA);
    out.put_i64(request_id);
    put_utf(out, segment)?;
    put_utf(out, token)?;
    out.put_i64(from);
    out.put_i32(count);
    end(out, at)
}

fn bytes_field(c: &mut Cursor<'_>) -> Result<Vec<u8>, WireError> {
    let n = usize::try_from(c.i32()?).map_err(|_| WireError::Malformed("negative length"))?;
    Ok(c.take(n)?.to_vec())
}

fn entries(c: &mut Cursor<'_>) -> Result<Vec<TableEntry>, WireError> {
    let n = usize::try_from(c.i32()?).map_err(|_| WireError::Malformed("negative count"))?;
    // Each entry is at least 28 bytes: a count larger than the bytes left is a lie.
    if n > c.remaining() / 28 {
        return Err(WireError::Malformed("table entry count over the frame"));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        c.i32()?; // key payload size (implied by the fields)
        let key = bytes_field(c)?;
        let version = c.i64()?;
        c.i32()?; // value payload size
        let value = bytes_field(c)?;
        out.push(TableEntry {
            key,
            value,
            version,
        });
    }
    Ok(out)
}

/// Decode a table reply's fields (`payload` without the frame header); `None` for a type
/// that is not a table reply.
pub fn decode_table_reply(type_id: i32, payload: &[u8]) -> Result<Option<TableReply>, WireError> {
    let mut c = Cursor::new(payload);
    let c = &mut c;
    Ok(Some(match type_id {
        TABLE_ENTRIES_UPDATED => {
            c.i64()?;
            let n =
                usize::try_from(c.i32()?).map_err(|_| WireError::Malformed("negative count"))?;
            if n > c.remaining() / 8 {
                return Err(WireError::Malformed("version count over the frame"));
            }
            let versions = (0..n).map(|_| c.i64()).collect::<Result<_, _>>()?;
            TableReply::Updated { versions }
        }
        TABLE_KEYS_REMOVED => TableReply::Removed,
        TABLE_KEY_BAD_VERSION => TableReply::BadVersion,
        TABLE_KEY_DOES_NOT_EXIST => TableReply::KeyDoesNotExist,
        SEGMENT_DELETED => TableReply::Deleted,
        TABLE_ENTRIES_DELTA_READ => {
            c.i64()?;
            c.utf()?;
            let entries = entries(c)?;
            let _should_clear = c.bool()?;
            let reached_end = c.bool()?;
            let last_position = c.i64()?;
            TableReply::DeltaRead {
                entries,
                reached_end,
                last_position,
            }
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A TABLE_ENTRIES_DELTA_READ captured from the 0.13 segment store (one entry: the
    /// official client's `06config/default` key version 0, value cut to 3 bytes here).
    #[test]
    fn decodes_a_delta_read() {
        let mut p = BytesMut::new();
        p.put_i64(7);
        put_utf(&mut p, "g/rg1_kvtable/0.#epoch.0").unwrap();
        p.put_i32(1);
        put_key(&mut p, b"\x6f06config/default", 0).unwrap();
        p.put_i32(7);
        p.put_i32(3);
        p.put_slice(b"abc");
        p.put_slice(&[0, 1]);
        p.put_i64(0x97d);
        let r = decode_table_reply(TABLE_ENTRIES_DELTA_READ, &p)
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            TableReply::DeltaRead {
                entries: vec![TableEntry {
                    key: b"\x6f06config/default".to_vec(),
                    value: b"abc".to_vec(),
                    version: 0
                }],
                reached_end: true,
                last_position: 0x97d
            }
        );
    }

    #[test]
    fn update_layout() {
        let mut out = BytesMut::new();
        let puts = [TablePut {
            key: b"k".to_vec(),
            value: b"vv".to_vec(),
            expected: KEY_NOT_EXISTS,
        }];
        encode_update_table_entries(&mut out, 5, "s", "", &puts).unwrap();
        let want: Vec<u8> = [
            &74i32.to_be_bytes()[..],
            &(8 + 3 + 2 + 4 + (4 + 4 + 1 + 8) + (4 + 4 + 2) + 8i32).to_be_bytes(),
            &5i64.to_be_bytes(),
            b"\x00\x01s\x00\x00",
            &1i32.to_be_bytes(),
            &13i32.to_be_bytes(),
            &1i32.to_be_bytes(),
            b"k",
            &(-1i64).to_be_bytes(),
            &6i32.to_be_bytes(),
            &2i32.to_be_bytes(),
            b"vv",
            &(-1i64).to_be_bytes(),
        ]
        .concat();
        assert_eq!(&out[..], &want[..]);
    }

    proptest! {
        #[test]
        fn garbage_never_panics(t in 0i32..100, data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_table_reply(t, &data);
        }
    }
}
