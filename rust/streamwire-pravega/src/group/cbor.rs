//! The reader group state's encoding (pure), byte for byte what the official clients
//! (pravega-client-rust, under the PyPI `pravega` package) write, so that their readers and
//! ours share one group.
//!
//! The state is a two-level map kept in a table segment. A table key is the CBOR text of
//! `<len:2 digits><outer>/<inner>` (e.g. `17assigned_segments/r1`), or `<len><outer>` for the
//! outer map's version marker. A table value is the CBOR map `{"type_id": text, "data":
//! [byte, …]}` (the payload as an array of small integers, as serde writes a byte vector),
//! and `data` is itself CBOR of the typed value:
//! - `config/default`: `{"V1": {"group_refresh_time_millis": u64, "starting_stream_cuts":
//!   {ScopedStream: cut}, "ending_stream_cuts": {…}}}` where a cut is `"Unbounded"`,
//!   `"Tail"` or `{"V1": {"stream": ScopedStream, "positions": {ScopedSegment: i64}}}`;
//! - `assigned_segments/<reader>`: `{ScopedSegment: {"read": offset}}` (a map keyed by maps);
//! - `unassigned_segments/<scope/stream/n.#epoch.e>`: `{"read": offset}`;
//! - `future_segments/<segment name>`: `[Segment, …]` (the predecessors still to finish);
//! - `distance_to_tail/<reader>`: an unsigned integer (`u64::MAX` when unknown);
//! - a removed entry is first overwritten by type `tombstone`, data `{}`; an outer map's
//!   version marker has type `blob`, data the single byte 0.
//!
//! `ScopedStream` is `{"scope": {"name": s}, "stream": {"name": t}}`; `ScopedSegment` adds
//! `"segment": {"number": id, "tx_id": null}` (id = `epoch << 32 | number`). Maps are written
//! in field order, integers in their shortest form (CBOR's canonical rule, which both
//! serializers follow), so a value we write equals the official client's bytes.

use std::collections::{BTreeMap, BTreeSet};

use ciborium::value::Value;

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::controller::{segment_name, ScopedStream};

pub const CONFIG: &str = "config";
pub const DEFAULT_INNER: &str = "default";
pub const ASSIGNED: &str = "assigned_segments";
pub const UNASSIGNED: &str = "unassigned_segments";
pub const FUTURE: &str = "future_segments";
pub const DISTANCE: &str = "distance_to_tail";

pub const TOMBSTONE: &str = "tombstone";
pub const BLOB: &str = "blob";
pub const T_CONFIG: &str = "ReaderGroupConfigVersioned";
pub const T_ASSIGNED: &str = "HashMap<ScopedSegment, Offset>";
pub const T_OFFSET: &str = "Offset";
pub const T_FUTURE: &str = "HashSet<i64>";
pub const T_DISTANCE: &str = "u64";

/// The official refresh time (milliseconds) a group is created with.
pub const DEFAULT_REFRESH_MS: u64 = 3000;

fn bad(what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Protocol,
        format!("reader group state is not in the expected format: {what}"),
    )
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn int(n: i128) -> Value {
    // Every number here fits CBOR's integer range (a u64 or an i64).
    Value::Integer(ciborium::value::Integer::try_from(n).unwrap_or_else(|_| 0u8.into()))
}

fn to_bytes(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = ciborium::ser::into_writer(v, &mut out);
    out
}

fn from_bytes(b: &[u8]) -> Result<Value> {
    ciborium::de::from_reader(b).map_err(|e| bad(format!("CBOR: {e}")))
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value> {
    v.as_map()
        .and_then(|m| m.iter().find(|(k, _)| k.as_text() == Some(name)))
        .map(|(_, v)| v)
        .ok_or_else(|| bad(format!("no field {name:?}")))
}

fn as_i64(v: &Value) -> Result<i64> {
    v.as_integer()
        .and_then(|i| i64::try_from(i128::from(i)).ok())
        .ok_or_else(|| bad("an integer out of range"))
}

fn as_text(v: &Value) -> Result<&str> {
    v.as_text().ok_or_else(|| bad("text expected"))
}

/// `<len><outer>/<inner>` or `<len><outer>` (the outer map's version marker).
pub fn composite_key(outer: &str, inner: Option<&str>) -> String {
    match inner {
        Some(i) => format!("{:02}{outer}/{i}", outer.len()),
        None => format!("{:02}{outer}", outer.len()),
    }
}

/// The outer and inner parts of a composite key.
pub fn split_key(key: &str) -> Result<(&str, Option<&str>)> {
    let n: usize = key
        .get(..2)
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| bad(format!("key {key:?}")))?;
    let outer = key
        .get(2..2 + n)
        .ok_or_else(|| bad(format!("key {key:?}")))?;
    match key.get(2 + n..) {
        Some("") => Ok((outer, None)),
        Some(rest) if rest.starts_with('/') => Ok((outer, Some(&rest[1..]))),
        _ => Err(bad(format!("key {key:?}"))),
    }
}

/// A table key's bytes: the CBOR text of the composite key.
pub fn key_bytes(composite: &str) -> Vec<u8> {
    to_bytes(&text(composite))
}

pub fn key_from_bytes(b: &[u8]) -> Result<String> {
    match from_bytes(b)? {
        Value::Text(t) => Ok(t),
        _ => Err(bad("a key that is not text")),
    }
}

/// A table value: a type name and the typed value's own CBOR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub type_id: String,
    pub data: Vec<u8>,
}

impl Stored {
    pub fn new(type_id: &str, data: Vec<u8>) -> Stored {
        Stored {
            type_id: type_id.to_owned(),
            data,
        }
    }

    pub fn tombstone() -> Stored {
        Stored::new(TOMBSTONE, to_bytes(&Value::Map(Vec::new())))
    }

    pub fn blob() -> Stored {
        Stored::new(BLOB, vec![0])
    }

    pub fn is_tombstone(&self) -> bool {
        self.type_id == TOMBSTONE
    }

    pub fn encode(&self) -> Vec<u8> {
        let data = self.data.iter().map(|b| int(i128::from(*b))).collect();
        to_bytes(&Value::Map(vec![
            (text("type_id"), text(&self.type_id)),
            (text("data"), Value::Array(data)),
        ]))
    }

    pub fn decode(b: &[u8]) -> Result<Stored> {
        let v = from_bytes(b)?;
        let type_id = as_text(field(&v, "type_id")?)?.to_owned();
        let data = match field(&v, "data")? {
            Value::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_integer()
                        .and_then(|i| u8::try_from(i128::from(i)).ok())
                        .ok_or_else(|| bad("a data byte out of range"))
                })
                .collect::<Result<Vec<u8>>>()?,
            Value::Bytes(b) => b.clone(),
            _ => return Err(bad("data is not a byte array")),
        };
        Ok(Stored { type_id, data })
    }
}

/// A segment of a stream, as the state names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SegKey {
    pub stream: ScopedStream,
    /// `epoch << 32 | number`.
    pub id: i64,
}

impl SegKey {
    pub fn new(stream: &ScopedStream, id: i64) -> SegKey {
        SegKey {
            stream: stream.clone(),
            id,
        }
    }

    /// `scope/stream/number.#epoch.epoch`, the inner key of the unassigned and future maps.
    pub fn name(&self) -> String {
        segment_name(&self.stream, self.id)
    }

    pub fn parse(name: &str) -> Result<SegKey> {
        let wrong = || bad(format!("segment name {name:?}"));
        let mut parts = name.rsplitn(3, '/');
        let (seg, stream, scope) = (
            parts.next().ok_or_else(wrong)?,
            parts.next().ok_or_else(wrong)?,
            parts.next().ok_or_else(wrong)?,
        );
        let (number, epoch) = match seg.split_once(".#epoch.") {
            Some((n, e)) => (n, e),
            None => (seg, "0"),
        };
        let number: i32 = number.parse().map_err(|_| wrong())?;
        let epoch: i32 = epoch.parse().map_err(|_| wrong())?;
        Ok(SegKey {
            stream: ScopedStream::new(scope, stream),
            id: (i64::from(epoch) << 32) | i64::from(number as u32),
        })
    }
}

fn named(name: &str) -> Value {
    Value::Map(vec![(text("name"), text(name))])
}

fn stream_value(s: &ScopedStream) -> Value {
    Value::Map(vec![
        (text("scope"), named(&s.scope)),
        (text("stream"), named(&s.stream)),
    ])
}

fn segment_number(id: i64) -> Value {
    Value::Map(vec![
        (text("number"), int(i128::from(id))),
        (text("tx_id"), Value::Null),
    ])
}

fn segment_value(k: &SegKey) -> Value {
    Value::Map(vec![
        (text("scope"), named(&k.stream.scope)),
        (text("stream"), named(&k.stream.stream)),
        (text("segment"), segment_number(k.id)),
    ])
}

fn stream_of(v: &Value) -> Result<ScopedStream> {
    Ok(ScopedStream::new(
        as_text(field(field(v, "scope")?, "name")?)?,
        as_text(field(field(v, "stream")?, "name")?)?,
    ))
}

fn segment_of(v: &Value) -> Result<SegKey> {
    Ok(SegKey {
        stream: stream_of(v)?,
        id: as_i64(field(field(v, "segment")?, "number")?)?,
    })
}

fn offset_value(read: i64) -> Value {
    Value::Map(vec![(text("read"), int(i128::from(read)))])
}

pub fn encode_offset(read: i64) -> Vec<u8> {
    to_bytes(&offset_value(read))
}

pub fn decode_offset(b: &[u8]) -> Result<i64> {
    as_i64(field(&from_bytes(b)?, "read")?)
}

/// A reader's segments and their offsets.
pub fn encode_assigned(segments: &BTreeMap<SegKey, i64>) -> Vec<u8> {
    to_bytes(&Value::Map(
        segments
            .iter()
            .map(|(k, o)| (segment_value(k), offset_value(*o)))
            .collect(),
    ))
}

pub fn decode_assigned(b: &[u8]) -> Result<BTreeMap<SegKey, i64>> {
    match from_bytes(b)? {
        Value::Map(m) => m
            .iter()
            .map(|(k, v)| Ok((segment_of(k)?, as_i64(field(v, "read")?)?)))
            .collect(),
        _ => Err(bad("assigned segments are not a map")),
    }
}

/// The predecessors a future segment still waits for (segment ids).
pub fn encode_predecessors(ids: &BTreeSet<i64>) -> Vec<u8> {
    to_bytes(&Value::Array(
        ids.iter().map(|id| segment_number(*id)).collect(),
    ))
}

pub fn decode_predecessors(b: &[u8]) -> Result<BTreeSet<i64>> {
    match from_bytes(b)? {
        Value::Array(a) => a.iter().map(|v| as_i64(field(v, "number")?)).collect(),
        _ => Err(bad("predecessors are not an array")),
    }
}

/// A reader's distance to the tail: unknown.
pub fn encode_unknown_distance() -> Vec<u8> {
    to_bytes(&int(i128::from(u64::MAX)))
}

/// Where a group starts reading one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartCut {
    /// The head (`"Unbounded"`).
    Head,
    Tail,
    /// Segment id → offset.
    At(BTreeMap<i64, i64>),
}

/// A group's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    pub refresh_ms: u64,
    pub streams: Vec<(ScopedStream, StartCut)>,
}

fn cut_value(stream: &ScopedStream, cut: &StartCut) -> Value {
    match cut {
        StartCut::Head => text("Unbounded"),
        StartCut::Tail => text("Tail"),
        StartCut::At(pos) => Value::Map(vec![(
            text("V1"),
            Value::Map(vec![
                (text("stream"), stream_value(stream)),
                (
                    text("positions"),
                    Value::Map(
                        pos.iter()
                            .map(|(id, off)| {
                                (
                                    segment_value(&SegKey::new(stream, *id)),
                                    int(i128::from(*off)),
                                )
                            })
                            .collect(),
                    ),
                ),
            ]),
        )]),
    }
}

fn cut_of(v: &Value) -> Result<StartCut> {
    match v {
        Value::Text(t) if t == "Unbounded" => Ok(StartCut::Head),
        Value::Text(t) if t == "Tail" => Ok(StartCut::Tail),
        Value::Map(_) => {
            let positions = match field(field(v, "V1")?, "positions")? {
                Value::Map(m) => m
                    .iter()
                    .map(|(k, o)| Ok((segment_of(k)?.id, as_i64(o)?)))
                    .collect::<Result<_>>()?,
                _ => return Err(bad("stream cut positions are not a map")),
            };
            Ok(StartCut::At(positions))
        }
        _ => Err(bad("a stream cut of an unknown kind")),
    }
}

pub fn encode_config(c: &GroupConfig) -> Vec<u8> {
    let starts = c
        .streams
        .iter()
        .map(|(s, cut)| (stream_value(s), cut_value(s, cut)))
        .collect();
    to_bytes(&Value::Map(vec![(
        text("V1"),
        Value::Map(vec![
            (
                text("group_refresh_time_millis"),
                int(i128::from(c.refresh_ms)),
            ),
            (text("starting_stream_cuts"), Value::Map(starts)),
            (text("ending_stream_cuts"), Value::Map(Vec::new())),
        ]),
    )]))
}

pub fn decode_config(b: &[u8]) -> Result<GroupConfig> {
    let v = from_bytes(b)?;
    let v1 = field(&v, "V1")?;
    let refresh_ms = field(v1, "group_refresh_time_millis")?
        .as_integer()
        .and_then(|i| u64::try_from(i128::from(i)).ok())
        .ok_or_else(|| bad("group_refresh_time_millis"))?;
    let streams = match field(v1, "starting_stream_cuts")? {
        Value::Map(m) => m
            .iter()
            .map(|(k, c)| Ok((stream_of(k)?, cut_of(c)?)))
            .collect::<Result<_>>()?,
        _ => return Err(bad("starting_stream_cuts is not a map")),
    };
    Ok(GroupConfig {
        refresh_ms,
        streams,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // Captured from the official client (PyPI `pravega` 0.3.8 on Pravega 0.13 standalone):
    // `StreamManager.create_reader_group("rg1", "g", "s")` on a 2-segment stream, a reader
    // `r1` that read 5 events of 3 bytes from segment 1, then `reader_offline()`; the table
    // segment `g/rg1_kvtable/0.#epoch.0` read back with READ_TABLE_ENTRIES_DELTA.
    const GOLDEN_CONFIG_KEY: &str = "703036636f6e6669672f64656661756c74";
    const GOLDEN_CONFIG: &str = "a267747970655f6964781a52656164657247726f7570436f6e66696756657273696f6e65646464617461987518a118621856183118a31878181918671872186f18751870185f1872186518661872186518731868185f18741869186d1865185f186d1869186c186c1869187318190b18b81874187318741861187218741869186e1867185f18731874187218651861186d185f186318751874187318a118a2186518731863186f1870186518a11864186e1861186d186518611867186618731874187218651861186d18a11864186e1861186d18651861187318691855186e1862186f1875186e18641865186418721865186e18641869186e1867185f18731874187218651861186d185f186318751874187318a0";
    const GOLDEN_UNASSIGNED_KEY: &str =
        "78243139756e61737369676e65645f7365676d656e74732f672f732f312e2365706f63682e30";
    const GOLDEN_UNASSIGNED: &str =
        "a267747970655f6964664f666673657464646174618818a11864187218651861186418181837";
    const GOLDEN_TOMBSTONE: &str = "a267747970655f696469746f6d6273746f6e6564646174618118a0";
    const GOLDEN_BLOB_KEY: &str = "73313761737369676e65645f7365676d656e7473";
    const GOLDEN_BLOB: &str = "a267747970655f696464626c6f6264646174618100";

    #[test]
    fn golden_blobs_of_the_official_client() {
        let g = ScopedStream::new("g", "s");
        // The config: one stream from its head, refresh 3 s.
        assert_eq!(
            key_bytes(&composite_key(CONFIG, Some(DEFAULT_INNER))),
            hex(GOLDEN_CONFIG_KEY)
        );
        let stored = Stored::decode(&hex(GOLDEN_CONFIG)).unwrap();
        assert_eq!(stored.type_id, T_CONFIG);
        let config = decode_config(&stored.data).unwrap();
        assert_eq!(
            config,
            GroupConfig {
                refresh_ms: 3000,
                streams: vec![(g.clone(), StartCut::Head)]
            }
        );
        assert_eq!(
            Stored::new(T_CONFIG, encode_config(&config)).encode(),
            hex(GOLDEN_CONFIG)
        );
        // Segment 1 handed back at offset 55.
        let key = key_from_bytes(&hex(GOLDEN_UNASSIGNED_KEY)).unwrap();
        let seg = SegKey::new(&g, 1);
        assert_eq!(key, composite_key(UNASSIGNED, Some(&seg.name())));
        assert_eq!(
            split_key(&key).unwrap(),
            (UNASSIGNED, Some("g/s/1.#epoch.0"))
        );
        let stored = Stored::decode(&hex(GOLDEN_UNASSIGNED)).unwrap();
        assert_eq!(decode_offset(&stored.data).unwrap(), 55);
        assert_eq!(
            Stored::new(T_OFFSET, encode_offset(55)).encode(),
            hex(GOLDEN_UNASSIGNED)
        );
        assert_eq!(Stored::tombstone().encode(), hex(GOLDEN_TOMBSTONE));
        assert_eq!(
            key_bytes(&composite_key(ASSIGNED, None)),
            hex(GOLDEN_BLOB_KEY)
        );
        assert_eq!(Stored::blob().encode(), hex(GOLDEN_BLOB));
    }

    #[test]
    fn segment_names() {
        let k = SegKey::parse("sc/st/3.#epoch.2").unwrap();
        assert_eq!(k.stream, ScopedStream::new("sc", "st"));
        assert_eq!(k.id, (2 << 32) | 3);
        assert_eq!(k.name(), "sc/st/3.#epoch.2");
        for bad in ["", "a/b", "a/b/x", "a/b/1.#epoch.y", "12"] {
            assert!(SegKey::parse(bad).is_err(), "{bad}");
        }
        assert!(split_key("9x").is_err());
        assert_eq!(split_key("06config").unwrap(), ("config", None));
    }

    fn seg_key() -> impl Strategy<Value = SegKey> {
        ("[a-z]{1,8}", "[a-z.-]{1,8}", 0i64..1 << 40).prop_map(|(sc, st, id)| SegKey {
            stream: ScopedStream::new(sc, st),
            id,
        })
    }

    proptest! {
        #[test]
        fn round_trips(
            assigned in proptest::collection::btree_map(seg_key(), 0i64..i64::MAX, 0..5),
            preds in proptest::collection::btree_set(0i64..1 << 40, 0..5),
            refresh in any::<u64>(),
            cut in proptest::collection::btree_map(0i64..1 << 40, 0i64..1 << 50, 0..4),
            type_id in "[A-Za-z<>, ]{0,30}",
            data in proptest::collection::vec(any::<u8>(), 0..64),
            outer in "[a-z_]{1,30}",
            inner in proptest::option::of("[a-z/._#0-9]{0,30}"),
        ) {
            prop_assert_eq!(decode_assigned(&encode_assigned(&assigned)).unwrap(), assigned);
            prop_assert_eq!(decode_predecessors(&encode_predecessors(&preds)).unwrap(), preds);
            let s = ScopedStream::new("a", "b");
            let config = GroupConfig {
                refresh_ms: refresh,
                streams: vec![(s.clone(), StartCut::At(cut)), (ScopedStream::new("a", "c"), StartCut::Tail)],
            };
            prop_assert_eq!(decode_config(&encode_config(&config)).unwrap(), config);
            let stored = Stored { type_id, data };
            prop_assert_eq!(Stored::decode(&stored.encode()).unwrap(), stored);
            let key = composite_key(&outer, inner.as_deref());
            let back = key_from_bytes(&key_bytes(&key)).unwrap();
            prop_assert_eq!(split_key(&back).unwrap(), (outer.as_str(), inner.as_deref()));
        }

        #[test]
        fn garbage_is_an_error_not_a_panic(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Stored::decode(&b);
            let _ = decode_config(&b);
            let _ = decode_assigned(&b);
            let _ = decode_predecessors(&b);
        }
    }
}
