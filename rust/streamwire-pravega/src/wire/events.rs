//! EVENT framing inside segment data: each event is `type:i32 (0) length:i32 data`, and a
//! SEGMENT_READ can end in the middle of one. The decoder keeps the partial event and
//! completes it with the next read; whole events come out as slices of the read (no copy).

use bytes::{Bytes, BytesMut};

use super::{ids, WireError};

/// Largest event one append carries (`Serializer.MAX_EVENT_SIZE`, 8 MiB); a larger one is
/// written through a transient segment (`writer::large`).
pub const MAX_EVENT: usize = 8 * 1024 * 1024;

/// Largest event at all: the official Java client's limit, which is the EVENT header's
/// `i32` length less the header itself (`LargeEventWriter` frames header and event in one
/// `int`-indexed buffer). Readers accept events up to this size, growing their buffer only
/// as the bytes arrive.
pub const MAX_LARGE_EVENT: usize = i32::MAX as usize - 8;

#[derive(Debug, Default)]
pub struct EventDecoder {
    /// The start of an event that the last read cut.
    partial: BytesMut,
}

impl EventDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held from an event not complete yet (the reader's offset is behind them).
    pub fn pending_bytes(&self) -> usize {
        self.partial.len()
    }

    /// Feed one read's data; complete events are appended to `out`.
    pub fn feed(&mut self, data: Bytes, out: &mut Vec<Bytes>) -> Result<(), WireError> {
        let mut data = data;
        if !self.partial.is_empty() {
            // Complete the header first, then the body, from the front of `data`.
            let need_header = 8usize.saturating_sub(self.partial.len());
            let take = need_header.min(data.len());
            self.partial.extend_from_slice(&data[..take]);
            data = data.slice(take..);
            if self.partial.len() < 8 {
                return Ok(());
            }
            let len = header_len(&self.partial[..8])?;
            let have = self.partial.len() - 8;
            let take = (len - have).min(data.len());
            self.partial.extend_from_slice(&data[..take]);
            data = data.slice(take..);
            if self.partial.len() < 8 + len {
                return Ok(());
            }
            let whole = std::mem::take(&mut self.partial).freeze();
            out.push(whole.slice(8..));
        }
        let mut pos = 0;
        while data.len() - pos >= 8 {
            let len = header_len(&data[pos..pos + 8])?;
            if data.len() - pos - 8 < len {
                break;
            }
            out.push(data.slice(pos + 8..pos + 8 + len));
            pos += 8 + len;
        }
        self.partial.extend_from_slice(&data[pos..]);
        Ok(())
    }
}

fn header_len(h: &[u8]) -> Result<usize, WireError> {
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
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_event;
    use proptest::prelude::*;

    proptest! {
        /// Segment data cut into reads anywhere yields the same events.
        #[test]
        fn events_survive_any_split(events in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..50), 0..10),
                                    cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..5)) {
            let mut data = Vec::new();
            for e in &events {
                put_event(&mut data, e).unwrap();
            }
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(data.len() + 1)).collect();
            points.sort_unstable();
            let mut dec = EventDecoder::new();
            let mut out = Vec::new();
            let mut at = 0;
            for p in points.into_iter().chain(std::iter::once(data.len())) {
                dec.feed(Bytes::copy_from_slice(&data[at..p]), &mut out).unwrap();
                at = p;
            }
            prop_assert_eq!(out.iter().map(|b| b.to_vec()).collect::<Vec<_>>(), events);
            prop_assert_eq!(dec.pending_bytes(), 0);
        }

        #[test]
        fn garbage_is_an_error_or_nothing(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut dec = EventDecoder::new();
            let _ = dec.feed(Bytes::from(b), &mut Vec::new());
        }
    }

    #[test]
    fn non_event_data_and_huge_lengths_are_refused() {
        let mut out = Vec::new();
        let bad_type = Bytes::from_static(&[0, 0, 0, 5, 0, 0, 0, 0]);
        assert!(EventDecoder::new().feed(bad_type, &mut out).is_err());
        let huge = Bytes::from_static(&[0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff]);
        assert!(EventDecoder::new().feed(huge, &mut out).is_err());
        let negative = Bytes::from_static(&[0, 0, 0, 0, 0x80, 0, 0, 0]);
        assert!(EventDecoder::new().feed(negative, &mut out).is_err());
    }

    /// An event over 8 MiB (a large event, merged from a transient segment) is read whole;
    /// a header claiming the largest length allocates nothing before its bytes arrive.
    #[test]
    fn large_events_are_read_and_lengths_cost_nothing_up_front() {
        let big = vec![7u8; MAX_EVENT + 100];
        let mut data = Vec::new();
        put_event(&mut data, &big).unwrap();
        put_event(&mut data, b"after").unwrap();
        let mut dec = EventDecoder::new();
        let mut out = Vec::new();
        for piece in data.chunks(1 << 20) {
            dec.feed(Bytes::copy_from_slice(piece), &mut out).unwrap();
        }
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].len(), big.len());
        assert_eq!(&out[1][..], b"after");
        let mut dec = EventDecoder::new();
        let max = (MAX_LARGE_EVENT as u32).to_be_bytes();
        let header = Bytes::copy_from_slice(&[0, 0, 0, 0, max[0], max[1], max[2], max[3], 1]);
        dec.feed(header, &mut out).unwrap();
        assert_eq!(dec.pending_bytes(), 9);
        assert!(dec.partial.capacity() < 1 << 20);
    }
}
