//! Events on their way to a segment (pure): EVENT-framed bytes in one buffer, each event's
//! routing-key point, and how a run of events is split between segments.
//!
//! Why one buffer per run: the bytes a caller hands over are framed once, here, and then
//! travel as slices of that buffer into append blocks; a run that routes to one segment (a
//! single-segment stream, or a batch without keys) is never copied again.

use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};

use streamwire_core::budget::Reservation;
use streamwire_core::completion::Done;
use streamwire_core::error::{Error, ErrorKind, Result};

use crate::routing::{key_to_point, segment_for, KeyRange};
use crate::wire::events::MAX_LARGE_EVENT;
use crate::wire::put_event;

/// Where each event of a run routes.
#[derive(Debug, Clone, PartialEq)]
pub enum Points {
    /// Every event has no routing key: the run may go to any one segment.
    NoKey,
    /// Every event has this point (one key, or a single event).
    Same(f64),
    /// One point per event, in order.
    Each(Vec<f64>),
}

/// Events framed and routed-to-be: what a write hands to the writer's task.
#[derive(Debug)]
pub struct EventBatch {
    pub data: Bytes,
    pub count: usize,
    pub points: Points,
}

/// Builds an [`EventBatch`] event by event.
#[derive(Debug, Default)]
pub struct BatchBuilder {
    data: BytesMut,
    count: usize,
    points: Vec<f64>,
    any_key: bool,
}

impl BatchBuilder {
    pub fn with_capacity(events: usize, bytes: usize) -> Self {
        BatchBuilder {
            data: BytesMut::with_capacity(bytes + 8 * events),
            count: 0,
            points: Vec::new(),
            any_key: false,
        }
    }

    /// Frame one event; `key` is its routing key.
    pub fn push(&mut self, event: &[u8], key: Option<&str>) -> Result<()> {
        check_event(event.len())?;
        if let Some(k) = key {
            if !self.any_key {
                self.any_key = true;
                self.points.reserve(self.count + 1);
                self.points.resize(self.count, f64::NAN);
            }
            self.points.push(key_to_point(k));
        } else if self.any_key {
            self.points.push(f64::NAN);
        }
        put_event(&mut self.data, event).map_err(Error::from)?;
        self.count += 1;
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    pub fn finish(self) -> EventBatch {
        let points = if !self.any_key {
            Points::NoKey
        } else if self.count == 1 {
            Points::Same(self.points[0])
        } else {
            Points::Each(self.points)
        };
        EventBatch {
            data: self.data.freeze(),
            count: self.count,
            points,
        }
    }
}

/// A single event as a batch (`write`/`write_async`).
pub fn one_event(event: &[u8], key: Option<&str>) -> Result<EventBatch> {
    check_event(event.len())?;
    let mut data = BytesMut::with_capacity(8 + event.len());
    put_event(&mut data, event).map_err(Error::from)?;
    Ok(EventBatch {
        data: data.freeze(),
        count: 1,
        points: key.map_or(Points::NoKey, |k| Points::Same(key_to_point(k))),
    })
}

/// Events over 8 MiB are accepted here: the writer's task sends them through a transient
/// segment (`large`); over the official client's limit they are refused.
pub fn check_event(len: usize) -> Result<()> {
    if len > MAX_LARGE_EVENT {
        return Err(Error::new(
            ErrorKind::MessageTooBig,
            format!("a Pravega event is at most {MAX_LARGE_EVENT} bytes; this one has {len}"),
        ));
    }
    Ok(())
}

/// A run of events queued for one segment, with what settles them.
#[derive(Debug)]
pub struct Piece {
    pub data: Bytes,
    pub count: usize,
    pub points: Points,
    pub done: Done,
    pub reservation: Option<Reservation>,
    /// The segment writer's number of the last event (set when queued on a segment).
    pub last_number: i64,
    /// When the events were handed to the writer (for the send-latency metric).
    pub queued_at: Instant,
}

impl Piece {
    pub fn new(batch: EventBatch, done: Done, reservation: Option<Reservation>) -> Self {
        Piece {
            data: batch.data,
            count: batch.count,
            points: batch.points,
            done,
            reservation,
            last_number: 0,
            queued_at: Instant::now(),
        }
    }

    /// Settle every event of the piece.
    pub fn settle(self, result: Result<()>) {
        let n = self.count;
        self.done.complete(result, n);
    }
}

/// The part of a piece's memory reservation that goes with one of its `bytes`-long parts
/// (of `total` bytes): its share by size, and whatever is left to the `last` part, so the
/// parts together hold exactly what the piece held.
pub(crate) fn share_of(
    reservation: &mut Option<Reservation>,
    last: bool,
    bytes: usize,
    total: u64,
) -> Option<Reservation> {
    if last {
        return reservation.take();
    }
    reservation.as_mut().and_then(|r| {
        let share = r.amount().saturating_mul(bytes as u64) / total;
        r.split(share)
    })
}

/// Split `piece` between segments by `ranges` (`pick` chooses for events without a key).
/// Runs keep their order; a piece that routes whole to one segment is returned as is. On
/// error the piece comes back untouched, for the caller to settle.
#[allow(clippy::result_large_err)] // the rare error path hands the piece back, unboxed
pub fn route(
    piece: Piece,
    ranges: &[KeyRange],
    pick: impl FnOnce() -> usize,
) -> std::result::Result<Vec<(i64, Piece)>, (Error, Piece)> {
    if ranges.is_empty() {
        let e = Error::new(ErrorKind::ReadOnly, "the stream has no open segments");
        return Err((e, piece));
    }
    let unroutable = || {
        Error::new(
            ErrorKind::Protocol,
            "no segment of the stream covers the routing key (inconsistent key ranges)",
        )
    };
    let segs: Vec<i64> = match &piece.points {
        Points::NoKey => return Ok(vec![(ranges[pick() % ranges.len()].segment, piece)]),
        Points::Same(p) => match segment_for(*p, ranges) {
            Some(seg) => return Ok(vec![(seg, piece)]),
            None => return Err((unroutable(), piece)),
        },
        Points::Each(ps) => {
            // An event without a key beside keyed ones (its point is NaN) may go to any
            // segment: all such events of the piece go to one picked segment, in order.
            let mut pick = Some(pick);
            let mut unkeyed: Option<i64> = None;
            let mut segs = Vec::with_capacity(ps.len());
            for p in ps {
                if p.is_nan() {
                    let seg = *unkeyed.get_or_insert_with(|| {
                        let pick = pick.take().expect("picked once");
                        ranges[pick() % ranges.len()].segment
                    });
                    segs.push(seg);
                    continue;
                }
                match segment_for(*p, ranges) {
                    Some(seg) => segs.push(seg),
                    None => return Err((unroutable(), piece)),
                }
            }
            segs
        }
    };
    // A per-event completion cannot be split (our calls never build such a piece): it then
    // stays whole, in order, on its first event's segment.
    if segs.iter().all(|s| *s == segs[0]) || piece.done.share().is_none() {
        return Ok(vec![(segs[0], piece)]);
    }
    let Points::Each(points) = &piece.points else {
        unreachable!("only per-event points reach here");
    };
    // Per segment: framed bytes and points, in event order.
    let mut parts: Vec<(i64, BytesMut, Vec<f64>)> = Vec::new();
    let mut pos = 0usize;
    for (p, seg) in points.iter().zip(&segs) {
        let len = match event_len(&piece.data[pos..]) {
            Ok(n) => n,
            Err(e) => return Err((e, piece)),
        };
        let part = match parts.iter_mut().position(|(s, _, _)| s == seg) {
            Some(i) => &mut parts[i],
            None => {
                parts.push((*seg, BytesMut::new(), Vec::new()));
                parts.last_mut().expect("just pushed")
            }
        };
        part.1.put_slice(&piece.data[pos..pos + len]);
        part.2.push(*p);
        pos += len;
    }
    let total = piece.data.len().max(1) as u64;
    let Piece {
        done,
        mut reservation,
        queued_at,
        ..
    } = piece;
    let k = parts.len();
    let mut out = Vec::with_capacity(k);
    for (i, (seg, data, pts)) in parts.into_iter().enumerate() {
        let res = share_of(&mut reservation, i + 1 == k, data.len(), total);
        let count = pts.len();
        out.push((
            seg,
            Piece {
                data: data.freeze(),
                count,
                points: if count == 1 {
                    Points::Same(pts[0])
                } else {
                    Points::Each(pts)
                },
                done: done.share().expect("checked: a group"),
                reservation: res,
                last_number: 0,
                queued_at,
            },
        ));
    }
    Ok(out)
}

/// Cut a piece into pieces of at most `max` bytes (at event boundaries; an event larger than
/// `max` stays whole), so no append block exceeds what the store accepts. A piece with a
/// per-event completion is a single event and is returned as is.
pub fn split_large(piece: Piece, max: usize) -> Vec<Piece> {
    if piece.data.len() <= max || piece.count < 2 || piece.done.share().is_none() {
        return vec![piece];
    }
    let mut cuts = Vec::new(); // (start byte, end byte, first event, end event)
    let (mut start, mut pos, mut first, mut i) = (0usize, 0usize, 0usize, 0usize);
    while pos < piece.data.len() {
        let Ok(len) = event_len(&piece.data[pos..]) else {
            return vec![piece];
        };
        if pos > start && pos + len - start > max {
            cuts.push((start, pos, first, i));
            start = pos;
            first = i;
        }
        pos += len;
        i += 1;
    }
    cuts.push((start, pos, first, i));
    let total = piece.data.len().max(1) as u64;
    let Piece {
        data,
        points,
        done,
        mut reservation,
        queued_at,
        ..
    } = piece;
    let k = cuts.len();
    let mut out = Vec::with_capacity(k);
    for (j, (b0, b1, e0, e1)) in cuts.into_iter().enumerate() {
        let res = share_of(&mut reservation, j + 1 == k, b1 - b0, total);
        out.push(Piece {
            data: data.slice(b0..b1),
            count: e1 - e0,
            points: match &points {
                Points::Each(ps) => Points::Each(ps[e0..e1].to_vec()),
                other => other.clone(),
            },
            done: done.share().expect("checked: a group"),
            reservation: res,
            last_number: 0,
            queued_at,
        });
    }
    out
}

/// The size of the EVENT frame at the front of `data`.
pub(crate) fn event_len(data: &[u8]) -> Result<usize> {
    if data.len() < 8 {
        return Err(Error::new(ErrorKind::Protocol, "event data cut short"));
    }
    let n = u32::from_be_bytes([data[4], data[5], data[6], data[7]]) as usize;
    if data.len() < 8 + n {
        return Err(Error::new(ErrorKind::Protocol, "event data cut short"));
    }
    Ok(8 + n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::segment_for_key;
    use streamwire_core::completion::Group;

    fn ranges() -> Vec<KeyRange> {
        vec![
            KeyRange {
                segment: 0,
                low: 0.0,
                high: 0.5,
            },
            KeyRange {
                segment: 1,
                low: 0.5,
                high: 1.0,
            },
        ]
    }

    #[test]
    fn a_batch_splits_by_key_keeping_order_and_completes_once() {
        let mut b = BatchBuilder::default();
        let keys: Vec<String> = (0..50).map(|i| format!("k{i}")).collect();
        for (i, k) in keys.iter().enumerate() {
            b.push(format!("e{i}").as_bytes(), Some(k)).unwrap();
        }
        let batch = b.finish();
        let (g, mut rx) = Group::new(50);
        let parts = route(Piece::new(batch, Done::Group(g), None), &ranges(), || 0)
            .map_err(|(e, _)| e)
            .unwrap();
        assert_eq!(parts.len(), 2);
        let mut seen = 0;
        for (seg, p) in &parts {
            let mut pos = 0;
            let Points::Each(pts) = &p.points else {
                panic!()
            };
            let mut last_i = -1i64;
            for pt in pts {
                let len = event_len(&p.data[pos..]).unwrap();
                let body = std::str::from_utf8(&p.data[pos + 8..pos + len]).unwrap();
                let i: i64 = body[1..].parse().unwrap();
                assert!(i > last_i, "order kept within a segment");
                last_i = i;
                assert_eq!(
                    segment_for(key_to_point(&keys[i as usize]), &ranges()),
                    Some(*seg)
                );
                assert_eq!(*pt, key_to_point(&keys[i as usize]));
                pos += len;
            }
            seen += p.count;
        }
        assert_eq!(seen, 50);
        for (_, p) in parts {
            assert!(rx.try_recv().is_err());
            p.settle(Ok(()));
        }
        assert!(rx.try_recv().unwrap().is_ok());
    }

    #[test]
    fn unkeyed_events_among_keyed_ones_go_to_one_picked_segment() {
        // write_many(values, routing_keys=["k0", None, "k2", None, ...]): found routed as
        // "inconsistent key ranges" before (a NaN point matched no segment).
        let mut b = BatchBuilder::default();
        let keys: Vec<Option<String>> = (0..40)
            .map(|i| (i % 2 == 0).then(|| format!("k{i}")))
            .collect();
        for (i, k) in keys.iter().enumerate() {
            b.push(format!("e{i}").as_bytes(), k.as_deref()).unwrap();
        }
        let (g, mut rx) = Group::new(40);
        let parts = route(
            Piece::new(b.finish(), Done::Group(g), None),
            &ranges(),
            || 1,
        )
        .map_err(|(e, _)| e)
        .unwrap();
        let mut seen = 0;
        for (seg, p) in &parts {
            let Points::Each(pts) = &p.points else {
                panic!()
            };
            let mut pos = 0;
            for pt in pts {
                let len = event_len(&p.data[pos..]).unwrap();
                let i: usize = std::str::from_utf8(&p.data[pos + 9..pos + len])
                    .unwrap()
                    .parse()
                    .unwrap();
                match &keys[i] {
                    Some(k) => assert_eq!(segment_for_key(k, &ranges()), Some(*seg)),
                    None => assert!(pt.is_nan() && *seg == 1, "the picked segment"),
                }
                pos += len;
            }
            seen += p.count;
        }
        assert_eq!(seen, 40);
        for (_, p) in parts {
            p.settle(Ok(()));
        }
        assert!(rx.try_recv().unwrap().is_ok());
    }

    #[test]
    fn unkeyed_batches_stay_whole() {
        let mut b = BatchBuilder::default();
        for i in 0..10 {
            b.push(&[i], None).unwrap();
        }
        let batch = b.finish();
        assert_eq!(batch.points, Points::NoKey);
        let (g, _rx) = Group::new(10);
        let parts = route(Piece::new(batch, Done::Group(g), None), &ranges(), || 1)
            .map_err(|(e, _)| e)
            .unwrap();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].0, 1);
        assert_eq!(parts[0].1.data.len(), 90);
    }

    #[test]
    fn large_pieces_split_at_event_boundaries_and_settle_once() {
        let mut b = BatchBuilder::default();
        for i in 0..100u8 {
            b.push(&[i; 92], Some("k")).unwrap(); // 100-byte frames
        }
        let batch = b.finish();
        let (g, mut rx) = Group::new(100);
        let parts = split_large(Piece::new(batch, Done::Group(g), None), 1000);
        assert_eq!(parts.len(), 10);
        assert!(parts.iter().all(|p| p.data.len() == 1000 && p.count == 10));
        assert_eq!(parts[3].data[8], 30, "order kept");
        for p in parts {
            assert!(rx.try_recv().is_err());
            p.settle(Ok(()));
        }
        assert!(rx.try_recv().unwrap().is_ok());
    }

    #[test]
    fn oversized_events_are_refused() {
        assert!(check_event(MAX_LARGE_EVENT).is_ok());
        assert_eq!(
            check_event(MAX_LARGE_EVENT + 1).unwrap_err().kind(),
            ErrorKind::MessageTooBig
        );
        // Over 8 MiB is a large event, not an error.
        let big = vec![0u8; crate::wire::events::MAX_EVENT + 1];
        assert_eq!(one_event(&big, None).unwrap().count, 1);
    }
}
