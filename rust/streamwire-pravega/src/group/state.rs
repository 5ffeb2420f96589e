//! A reader group's state as read from its table (pure), and the changes readers make to it,
//! following the official clients' rules so that their readers and ours agree:
//!
//! - a reader joins with an empty segment map (and an unknown distance to the tail);
//! - a reader's fair share is `ceil(segments / readers)`; it acquires unassigned segments up
//!   to it, and releases one segment at a time while it holds more;
//! - a reader going offline puts its segments back as unassigned at its last positions (those
//!   it gives, else those it last recorded), and its entries become tombstones;
//! - a completed (sealed, read to its end) segment leaves its reader; its successors wait in
//!   the future map until all their predecessors completed, then become unassigned at 0.
//!
//! Every change is conditional: each key written carries the version read, and so does each
//! outer map's version marker (written again whenever any of its entries changes), so a
//! change based on a stale read fails as a whole and is made again on a fresh read.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use streamwire_core::error::{Error, ErrorKind, Result};

use super::cbor::{self, SegKey, Stored};
use crate::wire::table::{TableEntry, TablePut, KEY_NOT_EXISTS};

/// The state: composite key → (version, value), tombstones included.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: HashMap<String, (i64, Stored)>,
}

impl Snapshot {
    pub fn from_entries(entries: Vec<TableEntry>) -> Result<Snapshot> {
        let mut out = HashMap::new();
        for e in entries {
            let key = cbor::key_from_bytes(&e.key)?;
            cbor::split_key(&key)?;
            let stored = Stored::decode(&e.value)?;
            match out.get(&key) {
                Some((v, _)) if *v >= e.version => {}
                _ => {
                    out.insert(key, (e.version, stored));
                }
            }
        }
        Ok(Snapshot { entries: out })
    }

    /// No entry at all (a group not initialised yet).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn version(&self, key: &str) -> i64 {
        self.entries.get(key).map_or(KEY_NOT_EXISTS, |(v, _)| *v)
    }

    fn get(&self, outer: &str, inner: &str) -> Option<&Stored> {
        self.entries
            .get(&cbor::composite_key(outer, Some(inner)))
            .map(|(_, s)| s)
            .filter(|s| !s.is_tombstone())
    }

    /// The live entries of an outer map: (inner key, value).
    fn inner<'a>(&'a self, outer: &'a str) -> impl Iterator<Item = (&'a str, &'a Stored)> + 'a {
        self.entries.iter().filter_map(move |(k, (_, s))| {
            if s.is_tombstone() {
                return None;
            }
            match cbor::split_key(k) {
                Ok((o, Some(i))) if o == outer => Some((i, s)),
                _ => None,
            }
        })
    }

    pub fn config(&self) -> Result<Option<cbor::GroupConfig>> {
        self.get(cbor::CONFIG, cbor::DEFAULT_INNER)
            .map(|s| cbor::decode_config(&s.data))
            .transpose()
    }

    /// The readers online, sorted.
    pub fn readers(&self) -> Vec<String> {
        let mut r: Vec<String> = self
            .inner(cbor::ASSIGNED)
            .map(|(i, _)| i.to_owned())
            .collect();
        r.sort();
        r
    }

    pub fn online(&self, reader: &str) -> bool {
        self.get(cbor::ASSIGNED, reader).is_some()
    }

    /// A reader's segments and offsets (`None`: not online).
    pub fn assigned(&self, reader: &str) -> Result<Option<BTreeMap<SegKey, i64>>> {
        self.get(cbor::ASSIGNED, reader)
            .map(|s| cbor::decode_assigned(&s.data))
            .transpose()
    }

    pub fn unassigned(&self) -> Result<BTreeMap<SegKey, i64>> {
        self.inner(cbor::UNASSIGNED)
            .map(|(k, s)| Ok((SegKey::parse(k)?, cbor::decode_offset(&s.data)?)))
            .collect()
    }

    pub fn future(&self) -> Result<BTreeMap<SegKey, BTreeSet<i64>>> {
        self.inner(cbor::FUTURE)
            .map(|(k, s)| Ok((SegKey::parse(k)?, cbor::decode_predecessors(&s.data)?)))
            .collect()
    }

    /// Every segment being read or waiting to be, at its recorded offset (the group's
    /// position; segments in the future map are not in it yet).
    pub fn positions(&self) -> Result<BTreeMap<SegKey, i64>> {
        let mut out = self.unassigned()?;
        for (_, s) in self.inner(cbor::ASSIGNED) {
            out.extend(cbor::decode_assigned(&s.data)?);
        }
        Ok(out)
    }

    /// Segments `reader` should acquire (positive) or release (negative) to hold its fair
    /// share, `ceil(segments / readers)`.
    pub fn to_acquire(&self, reader: &str) -> Result<isize> {
        let mut readers = 0usize;
        let mut segments = 0usize;
        let mut mine = 0usize;
        for (r, s) in self.inner(cbor::ASSIGNED) {
            let n = cbor::decode_assigned(&s.data)?.len();
            readers += 1;
            segments += n;
            if r == reader {
                mine = n;
            }
        }
        if readers == 0 {
            return Ok(0);
        }
        segments += self.inner(cbor::UNASSIGNED).count();
        let share = segments.div_ceil(readers);
        Ok(share as isize - mine as isize)
    }
}

/// A change to the state: entries to write and entries to turn into tombstones.
#[derive(Debug, Clone, Default)]
pub struct Change {
    puts: BTreeMap<String, Stored>,
    outers: BTreeSet<String>,
    tombstoned: BTreeSet<String>,
}

impl Change {
    pub fn is_empty(&self) -> bool {
        self.puts.is_empty()
    }

    pub fn put(&mut self, outer: &str, inner: &str, value: Stored) {
        let key = cbor::composite_key(outer, Some(inner));
        self.tombstoned.remove(&key);
        self.puts.insert(key, value);
        self.outers.insert(outer.to_owned());
    }

    pub fn tombstone(&mut self, outer: &str, inner: &str) {
        let key = cbor::composite_key(outer, Some(inner));
        self.puts.insert(key.clone(), Stored::tombstone());
        self.tombstoned.insert(key);
        self.outers.insert(outer.to_owned());
    }

    /// The table writes, each conditional on the version in `snap` (outer version markers
    /// included, last).
    pub fn to_puts(&self, snap: &Snapshot) -> Vec<TablePut> {
        let mut out: Vec<TablePut> = self
            .puts
            .iter()
            .map(|(k, v)| TablePut {
                key: cbor::key_bytes(k),
                value: v.encode(),
                expected: snap.version(k),
            })
            .collect();
        for o in &self.outers {
            let k = cbor::composite_key(o, None);
            out.push(TablePut {
                key: cbor::key_bytes(&k),
                value: Stored::blob().encode(),
                expected: snap.version(&k),
            });
        }
        out
    }

    /// The tombstones written, with the versions the write gave them (`versions` in the
    /// order of [`Change::to_puts`]): they can then be removed.
    pub fn tombstones(&self, versions: &[i64]) -> Vec<(Vec<u8>, i64)> {
        self.puts
            .keys()
            .zip(versions)
            .filter(|(k, _)| self.tombstoned.contains(*k))
            .map(|(k, v)| (cbor::key_bytes(k), *v))
            .collect()
    }
}

fn precondition(what: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, what)
}

/// Initialise an empty group: its config and its segments, unassigned. `None` when the group
/// already has state (creation is idempotent, as the official clients make it).
pub fn init(
    snap: &Snapshot,
    config: &cbor::GroupConfig,
    segments: &BTreeMap<SegKey, i64>,
) -> Option<Change> {
    if !snap.is_empty() {
        return None;
    }
    let mut c = Change::default();
    c.put(
        cbor::CONFIG,
        cbor::DEFAULT_INNER,
        Stored::new(cbor::T_CONFIG, cbor::encode_config(config)),
    );
    for (seg, off) in segments {
        c.put(
            cbor::UNASSIGNED,
            &seg.name(),
            Stored::new(cbor::T_OFFSET, cbor::encode_offset(*off)),
        );
    }
    Some(c)
}

fn assigned_value(segments: &BTreeMap<SegKey, i64>) -> Stored {
    Stored::new(cbor::T_ASSIGNED, cbor::encode_assigned(segments))
}

/// `reader` joins with no segment; an error if it is online already.
pub fn add_reader(snap: &Snapshot, reader: &str) -> Result<Change> {
    if snap.online(reader) {
        return Err(precondition(format!(
            "reader {reader:?} is already online in this group"
        )));
    }
    let mut c = Change::default();
    c.put(cbor::ASSIGNED, reader, assigned_value(&BTreeMap::new()));
    c.put(
        cbor::DISTANCE,
        reader,
        Stored::new(cbor::T_DISTANCE, cbor::encode_unknown_distance()),
    );
    Ok(c)
}

/// `reader` leaves: its segments go back unassigned, at `positions` where given, else at
/// the offsets it last recorded. `None` when it is not online.
pub fn remove_reader(
    snap: &Snapshot,
    reader: &str,
    positions: Option<&BTreeMap<SegKey, i64>>,
) -> Result<Option<Change>> {
    let Some(held) = snap.assigned(reader)? else {
        return Ok(None);
    };
    let mut c = Change::default();
    for (seg, off) in held {
        let off = positions.and_then(|p| p.get(&seg)).copied().unwrap_or(off);
        c.put(
            cbor::UNASSIGNED,
            &seg.name(),
            Stored::new(cbor::T_OFFSET, cbor::encode_offset(off)),
        );
    }
    c.tombstone(cbor::ASSIGNED, reader);
    if snap.get(cbor::DISTANCE, reader).is_some() {
        c.tombstone(cbor::DISTANCE, reader);
    }
    Ok(Some(c))
}

fn held(snap: &Snapshot, reader: &str) -> Result<BTreeMap<SegKey, i64>> {
    snap.assigned(reader)?.ok_or_else(|| {
        Error::new(
            ErrorKind::Closed,
            format!("reader {reader:?} is not online in its group (taken offline)"),
        )
    })
}

/// `reader` acquires up to `n` unassigned segments that it can read (`readable`: those of
/// the streams it reads), the lowest first: the change and the segments with their offsets.
pub fn acquire(
    snap: &Snapshot,
    reader: &str,
    n: usize,
    readable: impl Fn(&SegKey) -> bool,
) -> Result<(Change, Vec<(SegKey, i64)>)> {
    let mut mine = held(snap, reader)?;
    let took: Vec<(SegKey, i64)> = snap
        .unassigned()?
        .into_iter()
        .filter(|(k, _)| readable(k))
        .take(n)
        .collect();
    let mut c = Change::default();
    if took.is_empty() {
        return Ok((c, took));
    }
    for (seg, off) in &took {
        mine.insert(seg.clone(), *off);
        c.tombstone(cbor::UNASSIGNED, &seg.name());
    }
    c.put(cbor::ASSIGNED, reader, assigned_value(&mine));
    Ok((c, took))
}

/// `reader` releases `seg` at `offset` for another reader to take.
pub fn release(snap: &Snapshot, reader: &str, seg: &SegKey, offset: i64) -> Result<Change> {
    let mut mine = held(snap, reader)?;
    let mut c = Change::default();
    if mine.remove(seg).is_none() {
        return Ok(c);
    }
    c.put(cbor::ASSIGNED, reader, assigned_value(&mine));
    c.put(
        cbor::UNASSIGNED,
        &seg.name(),
        Stored::new(cbor::T_OFFSET, cbor::encode_offset(offset)),
    );
    Ok(c)
}

/// Record `reader`'s offsets in the segments it holds (others are ignored).
pub fn update_positions(
    snap: &Snapshot,
    reader: &str,
    positions: &BTreeMap<SegKey, i64>,
) -> Result<Change> {
    let mine = held(snap, reader)?;
    let updated: BTreeMap<SegKey, i64> = mine
        .iter()
        .map(|(s, o)| (s.clone(), positions.get(s).copied().unwrap_or(*o)))
        .collect();
    let mut c = Change::default();
    if updated != mine {
        c.put(cbor::ASSIGNED, reader, assigned_value(&updated));
    }
    Ok(c)
}

/// `reader` finished `seg` (sealed, read to its end); `successors` are the segments that
/// follow it, each with all its predecessors (segment ids).
pub fn segment_completed(
    snap: &Snapshot,
    reader: &str,
    seg: &SegKey,
    successors: &[(SegKey, Vec<i64>)],
) -> Result<Change> {
    let mut mine = held(snap, reader)?;
    let mut c = Change::default();
    mine.remove(seg);
    c.put(cbor::ASSIGNED, reader, assigned_value(&mine));
    let mut future = snap.future()?;
    let known: BTreeSet<SegKey> = snap.positions()?.into_keys().collect();
    for (s, preds) in successors {
        if !future.contains_key(s) && !known.contains(s) {
            future.insert(s.clone(), preds.iter().copied().collect());
        }
    }
    for (s, waiting) in &mut future {
        waiting.remove(&seg.id);
        if waiting.is_empty() {
            c.put(
                cbor::UNASSIGNED,
                &s.name(),
                Stored::new(cbor::T_OFFSET, cbor::encode_offset(0)),
            );
            c.tombstone(cbor::FUTURE, &s.name());
        } else {
            c.put(
                cbor::FUTURE,
                &s.name(),
                Stored::new(cbor::T_FUTURE, cbor::encode_predecessors(waiting)),
            );
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::ScopedStream;

    /// Apply a change as the table would: versions become `next`, `next + 1`, …
    fn apply(snap: &mut Snapshot, c: &Change, next: &mut i64) {
        for p in c.to_puts(snap) {
            let k = cbor::key_from_bytes(&p.key).unwrap();
            assert_eq!(p.expected, snap.version(&k), "stale version for {k}");
            snap.entries
                .insert(k, (*next, Stored::decode(&p.value).unwrap()));
            *next += 1;
        }
    }

    fn seg(id: i64) -> SegKey {
        SegKey::new(&ScopedStream::new("sc", "st"), id)
    }

    fn group(n: i64) -> (Snapshot, i64) {
        let mut snap = Snapshot::default();
        let mut next = 0;
        let config = cbor::GroupConfig {
            refresh_ms: 3000,
            streams: vec![(ScopedStream::new("sc", "st"), cbor::StartCut::Head)],
        };
        let segs = (0..n).map(|i| (seg(i), 0)).collect();
        let c = init(&snap, &config, &segs).unwrap();
        apply(&mut snap, &c, &mut next);
        assert!(init(&snap, &config, &segs).is_none());
        (snap, next)
    }

    #[test]
    fn readers_share_then_hand_over() {
        let (mut s, mut v) = group(4);
        for r in ["a", "b"] {
            let c = add_reader(&s, r).unwrap();
            apply(&mut s, &c, &mut v);
        }
        assert!(add_reader(&s, "a").is_err());
        assert_eq!(s.readers(), ["a", "b"]);
        assert_eq!(s.to_acquire("a").unwrap(), 2);
        let (c, took) = acquire(&s, "a", 2, |_| true).unwrap();
        apply(&mut s, &c, &mut v);
        assert_eq!(took, vec![(seg(0), 0), (seg(1), 0)]);
        assert_eq!(s.to_acquire("b").unwrap(), 2);
        let (c, _) = acquire(&s, "b", 5, |_| true).unwrap();
        apply(&mut s, &c, &mut v);
        assert!(s.unassigned().unwrap().is_empty());
        // a read 10 bytes of segment 0, then goes offline at 12 (given).
        let c = update_positions(&s, "a", &[(seg(0), 10)].into()).unwrap();
        apply(&mut s, &c, &mut v);
        assert_eq!(s.positions().unwrap()[&seg(0)], 10);
        let c = remove_reader(&s, "a", Some(&[(seg(1), 12)].into()))
            .unwrap()
            .unwrap();
        apply(&mut s, &c, &mut v);
        assert!(remove_reader(&s, "a", None).unwrap().is_none());
        assert_eq!(s.readers(), ["b"]);
        assert_eq!(s.unassigned().unwrap(), [(seg(0), 10), (seg(1), 12)].into());
        assert_eq!(s.to_acquire("b").unwrap(), 2);
        // A stale change fails: its versions are older than the table's.
        let stale = s.clone();
        let (c, _) = acquire(&s, "b", 1, |_| true).unwrap();
        apply(&mut s, &c, &mut v);
        let (c2, _) = acquire(&stale, "b", 1, |_| true).unwrap();
        let conflicts = c2
            .to_puts(&stale)
            .iter()
            .any(|p| p.expected != s.version(&cbor::key_from_bytes(&p.key).unwrap()));
        assert!(conflicts);
        // Over its share after a new reader joins: release one.
        let c = add_reader(&s, "c").unwrap();
        apply(&mut s, &c, &mut v);
        assert_eq!(s.to_acquire("b").unwrap(), -1);
        let c = release(&s, "b", &seg(2), 7).unwrap();
        apply(&mut s, &c, &mut v);
        assert_eq!(s.unassigned().unwrap()[&seg(2)], 7);
        assert!(acquire(&s, "gone", 1, |_| true).is_err());
    }

    #[test]
    fn successors_wait_for_all_predecessors() {
        let (mut s, mut v) = group(2);
        let c = add_reader(&s, "a").unwrap();
        apply(&mut s, &c, &mut v);
        let (c, _) = acquire(&s, "a", 2, |_| true).unwrap();
        apply(&mut s, &c, &mut v);
        // Segments 0 and 1 merge into 2.
        let succ = vec![(seg(2), vec![0, 1])];
        let c = segment_completed(&s, "a", &seg(0), &succ).unwrap();
        apply(&mut s, &c, &mut v);
        assert!(s.unassigned().unwrap().is_empty());
        assert_eq!(s.future().unwrap()[&seg(2)], [1].into());
        let c = segment_completed(&s, "a", &seg(1), &succ).unwrap();
        apply(&mut s, &c, &mut v);
        assert_eq!(s.unassigned().unwrap(), [(seg(2), 0)].into());
        assert!(s.future().unwrap().is_empty());
        assert!(s.assigned("a").unwrap().unwrap().is_empty());
    }

    use proptest::prelude::*;

    /// A group over `sizes.len()` streams (`sizes[i]` segments each), offsets `i * 10`.
    fn multi(sizes: &[i64]) -> (Snapshot, i64, Vec<ScopedStream>) {
        let streams: Vec<ScopedStream> = (0..sizes.len())
            .map(|i| ScopedStream::new("sc", format!("s{i}")))
            .collect();
        let config = cbor::GroupConfig {
            refresh_ms: 3000,
            streams: streams
                .iter()
                .map(|s| (s.clone(), cbor::StartCut::Head))
                .collect(),
        };
        let segs = streams
            .iter()
            .zip(sizes)
            .flat_map(|(s, n)| (0..*n).map(move |i| (SegKey::new(s, i), i * 10)))
            .collect();
        let mut snap = Snapshot::default();
        let mut next = 0;
        let c = init(&snap, &config, &segs).unwrap();
        apply(&mut snap, &c, &mut next);
        (snap, next, streams)
    }

    /// One membership round of `reader` (reading `streams`): acquire up to its share, or
    /// release its last segment when over it, as `member::sync_inner` does.
    fn round(s: &mut Snapshot, v: &mut i64, reader: &str, streams: &[ScopedStream]) {
        let n = s.to_acquire(reader).unwrap();
        if n > 0 {
            let (c, took) =
                acquire(s, reader, n as usize, |k| streams.contains(&k.stream)).unwrap();
            assert!(took.iter().all(|(k, _)| streams.contains(&k.stream)));
            apply(s, &c, v);
        } else if n < 0 {
            let mine = s.assigned(reader).unwrap().unwrap();
            let (k, off) = mine.iter().next_back().unwrap();
            let c = release(s, reader, k, *off).unwrap();
            apply(s, &c, v);
        }
    }

    proptest! {
        /// Readers of a group over several streams settle on a split of ALL its segments
        /// (each held by exactly one reader, at its offset, within one of the fair share),
        /// and a reader leaving hands its segments back for the others to take.
        #[test]
        fn readers_share_every_segment_of_every_stream(
            sizes in proptest::collection::vec(1i64..6, 1..4),
            readers in 1usize..5,
            leaver in 0usize..5,
        ) {
            let (mut s, mut v, streams) = multi(&sizes);
            let total: usize = sizes.iter().sum::<i64>() as usize;
            let names: Vec<String> = (0..readers).map(|i| format!("r{i}")).collect();
            for r in &names {
                let c = add_reader(&s, r).unwrap();
                apply(&mut s, &c, &mut v);
            }
            let settle = |s: &mut Snapshot, v: &mut i64, names: &[String]| {
                for _ in 0..4 * total + 4 {
                    for r in names {
                        round(s, v, r, &streams);
                    }
                }
            };
            settle(&mut s, &mut v, &names);
            let check = |s: &Snapshot, names: &[String]| -> Result<(), TestCaseError> {
                prop_assert!(s.unassigned().unwrap().is_empty());
                let mut seen = BTreeMap::new();
                let share = total.div_ceil(names.len());
                for r in names {
                    let mine = s.assigned(r).unwrap().unwrap();
                    prop_assert!(mine.len() <= share, "within the fair share");
                    for (k, off) in mine {
                        prop_assert_eq!(off, k.id * 10, "offset kept");
                        prop_assert!(seen.insert(k, r.clone()).is_none(), "held once");
                    }
                }
                prop_assert_eq!(seen.len(), total, "every segment of every stream held");
                Ok(())
            };
            check(&s, &names)?;
            let gone = names[leaver % readers].clone();
            let c = remove_reader(&s, &gone, None).unwrap().unwrap();
            apply(&mut s, &c, &mut v);
            let left: Vec<String> = names.into_iter().filter(|r| *r != gone).collect();
            if left.is_empty() {
                prop_assert_eq!(s.unassigned().unwrap().len(), total, "all handed back");
            } else {
                settle(&mut s, &mut v, &left);
                check(&s, &left)?;
            }
        }
    }

    #[test]
    fn a_reader_takes_only_segments_of_streams_it_reads() {
        let (mut s, mut v, streams) = multi(&[2, 3]);
        let c = add_reader(&s, "a").unwrap();
        apply(&mut s, &c, &mut v);
        round(&mut s, &mut v, "a", &streams[1..]);
        let mine = s.assigned("a").unwrap().unwrap();
        assert_eq!(mine.len(), 3);
        assert!(mine.keys().all(|k| k.stream == streams[1]));
        let free = s.unassigned().unwrap();
        assert_eq!(free.len(), 2, "the other stream's segments stay free");
        assert!(free.keys().all(|k| k.stream == streams[0]));
    }
}
