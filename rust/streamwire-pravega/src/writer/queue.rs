//! One segment writer's events (pure): numbered when queued, cut into append blocks, settled
//! by `DATA_APPENDED`, and rewound after a lost connection.
//!
//! Event numbers are the segment store's de-duplication key: a writer id's events carry
//! increasing numbers, and `APPEND_SETUP` answers the last number the store holds. After a
//! reconnect everything at or below it is settled as written and the rest is sent again
//! under the same numbers, so a block the store had already appended is not appended twice.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::{BufMut, BytesMut};

use super::batch::Piece;

/// What one acknowledgement settled (for the writer's metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Acked {
    pub events: usize,
    /// Event payload bytes (the EVENT frames' 8-byte headers left out).
    pub bytes: usize,
    /// When the oldest settled piece was handed to the writer.
    pub oldest: Option<Instant>,
}

impl Acked {
    fn add(&mut self, p: &Piece) {
        self.events += p.count;
        self.bytes += p.data.len().saturating_sub(8 * p.count);
        self.oldest = Some(self.oldest.map_or(p.queued_at, |o| o.min(p.queued_at)));
    }
}
use crate::wire::{ids, reply::NO_EVENT_NUMBER};

/// An append block ready to frame: `data` is whole EVENT frames.
#[derive(Debug)]
pub struct Block {
    pub frame: BytesMut,
    pub events: i32,
    pub last_number: i64,
}

#[derive(Debug)]
pub struct SegmentQueue {
    queued: VecDeque<Piece>,
    inflight: VecDeque<Piece>,
    inflight_bytes: usize,
    queued_bytes: usize,
    next_number: i64,
    acked: i64,
    /// The last event number of each block in flight.
    blocks: VecDeque<i64>,
    /// Events up to this number have a caller waiting on them (`hurry`): they go out
    /// without waiting for a free block slot.
    urgent_to: i64,
}

impl Default for SegmentQueue {
    fn default() -> Self {
        SegmentQueue {
            queued: VecDeque::new(),
            inflight: VecDeque::new(),
            inflight_bytes: 0,
            queued_bytes: 0,
            next_number: 1,
            acked: NO_EVENT_NUMBER,
            blocks: VecDeque::new(),
            urgent_to: NO_EVENT_NUMBER,
        }
    }
}

impl SegmentQueue {
    /// Number the piece's events and queue it.
    pub fn push(&mut self, mut piece: Piece) {
        self.next_number += piece.count as i64;
        piece.last_number = self.next_number - 1;
        self.queued_bytes += piece.data.len();
        self.queued.push_back(piece);
    }

    /// A caller waits for every event queued so far (the end of a `write_many`, a flush):
    /// holding them back to gather later events would only delay it.
    pub fn hurry(&mut self) {
        self.urgent_to = self.next_number - 1;
    }

    pub fn is_empty(&self) -> bool {
        self.queued.is_empty() && self.inflight.is_empty()
    }

    pub fn has_queued(&self) -> bool {
        !self.queued.is_empty()
    }

    pub fn inflight_bytes(&self) -> usize {
        self.inflight_bytes
    }

    /// Events held (queued or in flight).
    pub fn events(&self) -> usize {
        self.queued
            .iter()
            .chain(&self.inflight)
            .map(|p| p.count)
            .sum()
    }

    /// The next APPEND_BLOCK_END for `writer_id`: queued pieces up to `max_block` bytes (at
    /// least one piece), while in-flight bytes stay under `window` and fewer than
    /// `max_blocks` blocks are unacknowledged. `None` when nothing is queued or the window is
    /// full.
    ///
    /// Why a block limit: events arriving while blocks are in flight wait in the queue and go
    /// out together when an acknowledgement frees a slot, so a steady stream of single-event
    /// writes becomes large blocks (the store's cost is per block), while a lone event still
    /// goes out at once. Past the limit, a full block still goes (waiting would not make it
    /// any larger), and so do events a caller waits for (`hurry`): a synchronous bulk call
    /// then has all its blocks in flight at once instead of waiting for acknowledgements
    /// in between. The window (bytes) bounds everything.
    pub fn next_block(
        &mut self,
        writer_id: u128,
        request_id: i64,
        limits: (usize, usize, usize),
    ) -> Option<Block> {
        let (max_block, window, max_blocks) = limits;
        let front = self.queued.front()?;
        if self.inflight_bytes >= window {
            return None;
        }
        if self.blocks.len() >= max_blocks
            && self.queued_bytes < max_block
            && front.last_number > self.urgent_to
        {
            return None;
        }
        let mut size = 0usize;
        let mut n = 0usize;
        for p in &self.queued {
            if n > 0 && size + p.data.len() > max_block {
                break;
            }
            size += p.data.len();
            n += 1;
        }
        let mut frame = BytesMut::with_capacity(8 + 16 + 8 + size + 4 + 16);
        frame.put_i32(ids::APPEND_BLOCK_END);
        frame.put_i32((16 + 8 + size + 4 + 16) as i32);
        frame.put_u64((writer_id >> 64) as u64);
        frame.put_u64(writer_id as u64);
        frame.put_i32(size as i32); // sizeOfWholeEvents
        frame.put_i32(size as i32); // data length
        let mut events = 0usize;
        let mut last = 0;
        for _ in 0..n {
            let p = self.queued.pop_front().expect("counted above");
            frame.put_slice(&p.data);
            events += p.count;
            last = p.last_number;
            self.queued_bytes -= p.data.len();
            self.inflight_bytes += p.data.len();
            self.inflight.push_back(p);
        }
        self.blocks.push_back(last);
        frame.put_i32(events as i32);
        frame.put_i64(last);
        frame.put_i64(request_id);
        Some(Block {
            frame,
            events: events as i32,
            last_number: last,
        })
    }

    /// The store holds every event up to `number`: settle them; returns what was settled.
    pub fn ack(&mut self, number: i64) -> Acked {
        let mut settled = Acked::default();
        if number <= self.acked {
            return settled;
        }
        self.acked = number;
        while self.blocks.front().is_some_and(|b| *b <= number) {
            self.blocks.pop_front();
        }
        while self
            .inflight
            .front()
            .is_some_and(|p| p.last_number <= number)
        {
            let p = self.inflight.pop_front().expect("checked");
            self.inflight_bytes -= p.data.len();
            settled.add(&p);
            p.settle(Ok(()));
        }
        // After a reconnect the store may hold pieces that were rewound into the queue.
        while self.queued.front().is_some_and(|p| p.last_number <= number) {
            let p = self.queued.pop_front().expect("checked");
            self.queued_bytes -= p.data.len();
            settled.add(&p);
            p.settle(Ok(()));
        }
        settled
    }

    /// The connection is gone: what was in flight goes back to the front, same numbers.
    pub fn rewind(&mut self) {
        self.blocks.clear();
        while let Some(p) = self.inflight.pop_back() {
            self.inflight_bytes -= p.data.len();
            self.queued_bytes += p.data.len();
            self.queued.push_front(p);
        }
    }

    /// Everything not settled, oldest first (a sealed segment's events, to re-route).
    pub fn take_all(&mut self) -> Vec<Piece> {
        self.rewind();
        self.queued_bytes = 0;
        self.queued.drain(..).collect()
    }

    /// Fail everything held; returns how many events.
    pub fn fail_all(&mut self, e: &streamwire_core::error::Error) -> usize {
        let mut n = 0;
        for p in self.take_all() {
            n += p.count;
            p.settle(Err(e.clone()));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::super::batch::{one_event, Piece};
    use super::*;
    use crate::wire::peer::{decode_request, Request};
    use streamwire_core::completion::Done;
    use streamwire_core::error::Result;
    use tokio::sync::oneshot;

    fn piece(s: &str) -> (Piece, oneshot::Receiver<Result<()>>) {
        let (tx, rx) = oneshot::channel();
        (
            Piece::new(one_event(s.as_bytes(), None).unwrap(), Done::One(tx), None),
            rx,
        )
    }

    #[test]
    fn blocks_decode_as_append_block_end_and_acks_settle_in_order() {
        let mut q = SegmentQueue::default();
        let mut rxs = Vec::new();
        for i in 0..5 {
            let (p, rx) = piece(&format!("ev-{i}"));
            q.push(p);
            rxs.push(rx);
        }
        let b = q.next_block(7, 42, (1 << 20, 1 << 20, 8)).unwrap();
        assert_eq!((b.events, b.last_number), (5, 5));
        let mut buf = b.frame;
        let req = decode_request(&mut buf, 1 << 24).unwrap().unwrap();
        match req {
            Request::AppendBlockEnd {
                writer_id,
                num_events,
                last_event_number,
                request_id,
                ..
            } => {
                assert_eq!(
                    (writer_id, num_events, last_event_number, request_id),
                    (7, 5, 5, 42)
                );
            }
            other => panic!("{other:?}"),
        }
        let a = q.ack(3);
        // Three 4-byte events ("ev-0".."ev-2"): the writer's metrics count these.
        assert_eq!((a.events, a.bytes), (3, 12));
        assert!(a.oldest.is_some());
        assert_eq!(q.ack(3), Acked::default(), "an old number settles nothing");
        for rx in &mut rxs[..3] {
            assert!(rx.try_recv().unwrap().is_ok());
        }
        assert!(rxs[3].try_recv().is_err());
        q.rewind();
        assert_eq!(q.inflight_bytes(), 0);
        // Re-sent under the same numbers.
        let b = q.next_block(7, 43, (1 << 20, 1 << 20, 8)).unwrap();
        assert_eq!((b.events, b.last_number), (2, 5));
        let a = q.ack(5);
        assert_eq!((a.events, a.bytes), (2, 8));
        assert!(q.is_empty());
    }

    #[test]
    fn blocks_in_flight_are_bounded_and_events_gather_meanwhile() {
        let mut q = SegmentQueue::default();
        q.push(piece("a").0);
        let b = q.next_block(1, 1, (1 << 20, 1 << 20, 1)).unwrap();
        assert_eq!(b.events, 1);
        for i in 0..5 {
            q.push(piece(&format!("b{i}")).0);
        }
        assert!(q.next_block(1, 2, (1 << 20, 1 << 20, 1)).is_none());
        q.ack(1);
        let b = q.next_block(1, 2, (1 << 20, 1 << 20, 1)).unwrap();
        assert_eq!((b.events, b.last_number), (5, 6));
    }

    #[test]
    fn full_blocks_and_waited_for_events_pass_the_block_limit_not_the_window() {
        let mut q = SegmentQueue::default();
        q.push(piece("a").0);
        let first = q.next_block(1, 1, (200, 1000, 1)).unwrap();
        assert_eq!(first.events, 1);
        // Two events of 100 bytes (108 framed) = a full block of 200: past the limit of one.
        for i in 0..3 {
            q.push(piece(&format!("{i:0100}")).0);
        }
        let b = q.next_block(1, 2, (200, 1000, 1)).unwrap();
        assert_eq!(
            (b.events, b.last_number),
            (1, 2),
            "one 108-byte event fills 200"
        );
        let b = q.next_block(1, 3, (200, 1000, 1)).unwrap();
        assert_eq!((b.events, b.last_number), (1, 3));
        // The last one is a partial block: held back until a caller waits on it.
        assert!(q.next_block(1, 4, (200, 1000, 1)).is_none());
        q.hurry();
        let b = q.next_block(1, 4, (200, 1000, 1)).unwrap();
        assert_eq!((b.events, b.last_number), (1, 4));
        // Events queued after the hurry are gathered again.
        q.push(piece("late").0);
        assert!(q.next_block(1, 5, (200, 1000, 1)).is_none());
        // The window bounds even waited-for events.
        q.hurry();
        assert!(q.next_block(1, 5, (200, 300, 1)).is_none());
        q.ack(4);
        assert_eq!(q.next_block(1, 5, (200, 300, 1)).unwrap().last_number, 5);
    }

    #[test]
    fn window_and_block_size_bound_what_is_sent() {
        let mut q = SegmentQueue::default();
        for i in 0..10 {
            q.push(piece(&format!("{i:0100}")).0);
        }
        let b = q.next_block(1, 1, (250, 300, 8)).unwrap();
        assert_eq!(b.events, 2);
        let b = q.next_block(1, 2, (250, 300, 8)).unwrap();
        assert_eq!(b.events, 2);
        assert!(q.next_block(1, 3, (250, 300, 8)).is_none(), "window full");
        q.ack(2);
        assert!(q.next_block(1, 3, (250, 300, 8)).is_some());
        // A reconnect answering a number past what was in flight settles queued pieces too.
        q.rewind();
        q.ack(8);
        assert_eq!(q.events(), 2);
        assert_eq!(q.take_all().len(), 2);
    }
}
