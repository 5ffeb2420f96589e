//! Segment data cut at event boundaries (pure).
//!
//! A SEGMENT_READ returns bytes from an offset, and its end may cut an event. The reader
//! wants runs of whole EVENT frames, each with the offset of its first byte, so positions
//! always fall between events: `Chunker` hands out the longest whole-event prefix of each
//! read as a slice (no copy) and keeps the cut event until the next read completes it.

use bytes::{Buf, Bytes, BytesMut};

use crate::wire::events::MAX_LARGE_EVENT;
use crate::wire::{ids, WireError};

/// Whole EVENT frames of one segment, starting at `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The stream's index among its reader's streams (a group reader reads several).
    pub stream: u32,
    pub segment: i64,
    pub offset: i64,
    pub data: Bytes,
}

impl Chunk {
    /// The segment offset just past this chunk.
    pub fn end(&self) -> i64 {
        self.offset + self.data.len() as i64
    }
}

/// Cuts one segment's reads into chunks of whole events.
#[derive(Debug)]
pub struct Chunker {
    stream: u32,
    segment: i64,
    /// Offset of the first byte not yet handed out (the start of `carry`).
    offset: i64,
    carry: BytesMut,
}

/// The length of the EVENT frame whose header starts `h` (8 bytes).
pub fn frame_len(h: &[u8]) -> Result<usize, WireError> {
    let t = i32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    if t != ids::EVENT {
        return Err(WireError::Malformed("segment data is not EVENT-framed"));
    }
    let n = i32::from_be_bytes([h[4], h[5], h[6], h[7]]);
    let n = usize::try_from(n).map_err(|_| WireError::Malformed("negative event length"))?;
    if n > MAX_LARGE_EVENT {
        return Err(WireError::TooLarge {
            len: n as u64,
            limit: MAX_LARGE_EVENT as u64,
        });
    }
    Ok(8 + n)
}

/// How many bytes at the front of `data` are whole EVENT frames.
pub fn whole_prefix(data: &[u8]) -> Result<usize, WireError> {
    let mut pos = 0;
    while data.len() - pos >= 8 {
        let n = frame_len(&data[pos..pos + 8])?;
        if data.len() - pos < n {
            break;
        }
        pos += n;
    }
    Ok(pos)
}

impl Chunker {
    pub fn new(stream: u32, segment: i64, offset: i64) -> Self {
        Chunker {
            stream,
            segment,
            offset,
            carry: BytesMut::new(),
        }
    }

    /// The offset the next read must start at.
    pub fn read_offset(&self) -> i64 {
        self.offset + self.carry.len() as i64
    }

    /// Bytes of a cut event held back.
    pub fn carried(&self) -> usize {
        self.carry.len()
    }

    /// Feed the data of one read (it starts at [`read_offset`](Self::read_offset)).
    pub fn feed(&mut self, mut data: Bytes, out: &mut Vec<Chunk>) -> Result<(), WireError> {
        if !self.carry.is_empty() {
            // Complete the cut event from the front of `data`.
            if self.carry.len() < 8 {
                let take = (8 - self.carry.len()).min(data.len());
                self.carry.extend_from_slice(&data[..take]);
                data.advance(take);
                if self.carry.len() < 8 {
                    return Ok(());
                }
            }
            let need = frame_len(&self.carry[..8])?;
            let take = (need - self.carry.len()).min(data.len());
            self.carry.extend_from_slice(&data[..take]);
            data.advance(take);
            if self.carry.len() < need {
                return Ok(());
            }
            let whole = std::mem::take(&mut self.carry).freeze();
            out.push(Chunk {
                stream: self.stream,
                segment: self.segment,
                offset: self.offset,
                data: whole,
            });
            self.offset += need as i64;
        }
        let n = whole_prefix(&data)?;
        if n > 0 {
            out.push(Chunk {
                stream: self.stream,
                segment: self.segment,
                offset: self.offset,
                data: data.slice(..n),
            });
            self.offset += n as i64;
        }
        self.carry.extend_from_slice(&data[n..]);
        Ok(())
    }
}

/// Iterate the events of a chunk: `(payload, offset of the event's frame)`.
pub fn events(chunk: &Chunk) -> impl Iterator<Item = (Bytes, i64)> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        let d = &chunk.data;
        if d.len() - pos < 8 {
            return None;
        }
        let n = u32::from_be_bytes([d[pos + 4], d[pos + 5], d[pos + 6], d[pos + 7]]) as usize;
        let at = pos;
        pos += 8 + n;
        Some((d.slice(at + 8..at + 8 + n), chunk.offset + at as i64))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_event;
    use proptest::prelude::*;

    fn framed(events: &[Vec<u8>]) -> Bytes {
        let mut b = BytesMut::new();
        for e in events {
            put_event(&mut b, e).unwrap();
        }
        b.freeze()
    }

    proptest! {
        #[test]
        fn any_cut_of_segment_data_gives_back_every_event_with_its_offset(
            events in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..30),
            cuts in proptest::collection::vec(0usize..64, 0..20),
        ) {
            let data = framed(&events);
            let mut ch = Chunker::new(1, 3, 100);
            let mut out = Vec::new();
            let mut pos = 0;
            for c in cuts {
                let end = (pos + c).min(data.len());
                prop_assert_eq!(ch.read_offset(), 100 + pos as i64);
                ch.feed(data.slice(pos..end), &mut out).unwrap();
                pos = end;
            }
            ch.feed(data.slice(pos..), &mut out).unwrap();
            prop_assert_eq!(ch.carried(), 0);
            let mut got = Vec::new();
            let mut expect_offset = 100i64;
            for chunk in &out {
                prop_assert_eq!(chunk.offset, expect_offset);
                for (e, off) in events_of(chunk) {
                    got.push(e.to_vec());
                    prop_assert!(off >= chunk.offset);
                }
                expect_offset = chunk.end();
            }
            prop_assert_eq!(got, events);
        }
    }

    fn events_of(c: &Chunk) -> Vec<(Bytes, i64)> {
        events(c).collect()
    }

    #[test]
    fn data_that_is_not_events_is_an_error() {
        let mut ch = Chunker::new(0, 0, 0);
        let mut out = Vec::new();
        assert!(ch
            .feed(Bytes::from_static(&[0, 0, 0, 9, 0, 0, 0, 0]), &mut out)
            .is_err());
        // Over the largest event (i32::MAX less the header), and negative.
        let mut ch = Chunker::new(0, 0, 0);
        assert!(ch
            .feed(
                Bytes::from_static(&[0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xf8]),
                &mut out
            )
            .is_err());
        let mut ch = Chunker::new(0, 0, 0);
        assert!(ch
            .feed(Bytes::from_static(&[0, 0, 0, 0, 0x80, 0, 0, 0]), &mut out)
            .is_err());
        // A large event's length is fine: its bytes are waited for, nothing is allocated
        // for them up front.
        let mut ch = Chunker::new(0, 0, 0);
        ch.feed(
            Bytes::from_static(&[0, 0, 0, 0, 0x7f, 0, 0, 0, 1]),
            &mut out,
        )
        .unwrap();
        assert!(out.is_empty());
        assert!(ch.carry.capacity() < 1 << 20);
    }
}
