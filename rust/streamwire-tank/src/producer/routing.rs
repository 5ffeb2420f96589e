//! Which partition a message goes to (pure).
//!
//! - With a key: `fnv1a_32(key) % partitions`. FNV-1a is documented, tiny and stable across
//!   versions and languages, so any client can find a key's partition (TANK itself leaves
//!   routing to the application; the C++ client has none).
//! - Without a key: round-robin over partitions, moving on after a batch's worth of
//!   messages rather than after every message, so messages still gather into full bundles
//!   (the same idea as Pulsar's round-robin-per-batch).

use std::sync::atomic::{AtomicUsize, Ordering};

/// FNV-1a, 32 bits.
pub fn fnv1a_32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The partition of a key among `partitions` (> 0).
pub fn partition_for_key(key: &[u8], partitions: u16) -> u16 {
    (fnv1a_32(key) % u32::from(partitions.max(1))) as u16
}

/// Round-robin state of one producer.
#[derive(Debug)]
pub struct Router {
    partitions: u16,
    switch_every: usize,
    counter: AtomicUsize,
}

impl Router {
    pub fn new(partitions: u16) -> Self {
        Router::with_switch(partitions, 1000)
    }

    pub fn with_switch(partitions: u16, switch_every: usize) -> Self {
        Router {
            partitions: partitions.max(1),
            switch_every: switch_every.max(1),
            counter: AtomicUsize::new(0),
        }
    }

    pub fn choose(&self, key: Option<&[u8]>) -> u16 {
        match key {
            Some(k) => partition_for_key(k, self.partitions),
            None if self.partitions == 1 => 0,
            None => {
                let n = self.counter.fetch_add(1, Ordering::Relaxed);
                ((n / self.switch_every) % usize::from(self.partitions)) as u16
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        // From the FNV reference test suite (fnv1a 32-bit).
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn round_robin_moves_on_per_batch() {
        let r = Router::with_switch(3, 2);
        let got: Vec<u16> = (0..8).map(|_| r.choose(None)).collect();
        assert_eq!(got, vec![0, 0, 1, 1, 2, 2, 0, 0]);
    }

    proptest! {
        #[test]
        fn a_key_always_lands_on_the_same_partition(key in proptest::collection::vec(any::<u8>(), 0..40), parts in 1u16..500) {
            let r = Router::new(parts);
            let p = r.choose(Some(&key));
            prop_assert!(p < parts);
            prop_assert_eq!(p, r.choose(Some(&key)));
            prop_assert_eq!(p, partition_for_key(&key, parts));
        }
    }
}
