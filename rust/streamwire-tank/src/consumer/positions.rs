//! Where each partition's reads stand, decided without I/O.
//!
//! A partition has two positions: `fetch`, the next sequence number to ask the broker for
//! (it runs ahead by the read-ahead), and `delivered`, the next one the application has not
//! yet been handed — the one to persist and resume from. A seek sets both and bumps the
//! partition's generation, so a response to a request sent before the seek is recognised
//! and dropped instead of delivering messages from the old position.

use std::collections::BTreeMap;

/// TANK's special sequence numbers in a Consume request.
pub const EARLIEST: u64 = 0;
pub const TAIL: u64 = u64::MAX;

/// What to do when a partition's position is outside what the broker stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnOutOfRange {
    /// Raise `OutOfRangeError` (with the first available and high-water seqs) once.
    Error,
    /// Continue from the first available message.
    Earliest,
    /// Continue after the newest message.
    Latest,
}

impl OnOutOfRange {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "error" => Some(Self::Error),
            "earliest" => Some(Self::Earliest),
            "latest" => Some(Self::Latest),
            _ => None,
        }
    }
}

/// Read state of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionPos {
    pub fetch: u64,
    pub delivered: u64,
    pub fetch_size: u32,
    pub generation: u64,
    /// Stopped after an error the application must see (unknown partition, out of range
    /// with `OnOutOfRange::Error`); a seek resumes it.
    pub paused: bool,
}

/// Positions of every partition a consumer reads.
#[derive(Debug, Clone, Default)]
pub struct Positions {
    parts: BTreeMap<u16, PartitionPos>,
}

impl Positions {
    /// Start every partition at `start(partition)` with `fetch_size`.
    pub fn new(partitions: &[u16], fetch_size: u32, start: impl Fn(u16) -> u64) -> Self {
        Positions {
            parts: partitions
                .iter()
                .map(|&p| {
                    let s = start(p);
                    (
                        p,
                        PartitionPos {
                            fetch: s,
                            delivered: s,
                            fetch_size,
                            generation: 0,
                            paused: false,
                        },
                    )
                })
                .collect(),
        }
    }

    pub fn get(&self, p: u16) -> Option<&PartitionPos> {
        self.parts.get(&p)
    }

    pub fn get_mut(&mut self, p: u16) -> Option<&mut PartitionPos> {
        self.parts.get_mut(&p)
    }

    pub fn iter(&self) -> impl Iterator<Item = (u16, &PartitionPos)> {
        self.parts.iter().map(|(p, s)| (*p, s))
    }

    /// The partitions to put in the next Consume request: (partition, seq, fetch size,
    /// generation), skipping paused ones.
    pub fn request(&self) -> Vec<(u16, u64, u32, u64)> {
        self.parts
            .iter()
            .filter(|(_, s)| !s.paused)
            .map(|(p, s)| (*p, s.fetch, s.fetch_size, s.generation))
            .collect()
    }

    /// Move both positions of `p` to `seq`; returns false for an unknown partition.
    pub fn seek(&mut self, p: u16, seq: u64) -> bool {
        match self.parts.get_mut(&p) {
            Some(s) => {
                s.fetch = seq;
                s.delivered = seq;
                s.generation += 1;
                s.paused = false;
                true
            }
            None => false,
        }
    }

    /// The application was handed the message `seq` of `p`.
    pub fn delivered(&mut self, p: u16, seq: u64) {
        if let Some(s) = self.parts.get_mut(&p) {
            s.delivered = seq.saturating_add(1);
        }
    }

    /// The next sequence number the application has not been handed, per partition. A
    /// partition still at the symbolic start (earliest/tail) reports that (0 or u64::MAX).
    pub fn committed(&self) -> BTreeMap<u16, u64> {
        self.parts.iter().map(|(p, s)| (*p, s.delivered)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seek_resets_both_positions_and_bumps_the_generation() {
        let mut pos = Positions::new(&[0, 1], 1024, |_| EARLIEST);
        pos.get_mut(0).unwrap().fetch = 50;
        pos.delivered(0, 20);
        assert_eq!(pos.committed()[&0], 21);
        assert!(pos.seek(0, 7));
        let s = pos.get(0).unwrap();
        assert_eq!((s.fetch, s.delivered, s.generation), (7, 7, 1));
        assert!(!pos.seek(9, 1));
    }

    #[test]
    fn paused_partitions_are_left_out_of_requests() {
        let mut pos = Positions::new(&[0, 1, 2], 64, |p| u64::from(p) + 1);
        pos.get_mut(1).unwrap().paused = true;
        let req: Vec<u16> = pos.request().iter().map(|r| r.0).collect();
        assert_eq!(req, vec![0, 2]);
        pos.seek(1, 5);
        assert_eq!(pos.request().len(), 3);
    }
}
