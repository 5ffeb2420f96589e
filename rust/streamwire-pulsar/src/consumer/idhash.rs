//! A cheap hasher for the consumer's per-message maps keyed by message ids (pure).
//!
//! Acknowledging a message looks it up in up to three maps (recently acknowledged entries,
//! open batches, pending negative acks). With std's SipHash those lookups were ~12% of the
//! profile of a `receive_many` + list-acknowledge loop at millions of messages per second.
//! The keys are a few integers, so a multiply-rotate mix does the job. It is seeded per map
//! from the process's random source, so ids a hostile broker picks cannot be aimed at one
//! bucket without knowing the seed.

use std::hash::{BuildHasher, Hasher};

/// Odd 64-bit constant from the golden ratio: multiplying by it spreads the low bits up.
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Seeded builder of [`IdHasher`]s.
#[derive(Debug, Clone, Copy)]
pub struct IdHashBuilder {
    seed: u64,
}

impl Default for IdHashBuilder {
    fn default() -> Self {
        IdHashBuilder {
            seed: rand::random::<u64>() | 1,
        }
    }
}

impl BuildHasher for IdHashBuilder {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher(self.seed)
    }
}

/// Folds each integer written into the state with a multiply and a rotate.
#[derive(Debug, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only reached for keys other than integers (none today): fold 8 bytes at a time.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(K).rotate_left(29);
    }

    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u32 as u64);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn finish(&self) -> u64 {
        // A last mix so the low bits (hashbrown's bucket index) depend on every input bit.
        let x = self.0 ^ (self.0 >> 32);
        x.wrapping_mul(K) ^ (x >> 29)
    }
}

/// A HashMap keyed by message ids with the cheap hasher.
pub type IdMap<K, V> = std::collections::HashMap<K, V, IdHashBuilder>;
/// A HashSet of message ids with the cheap hasher.
pub type IdSet<K> = std::collections::HashSet<K, IdHashBuilder>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message_id::MessageId;
    use proptest::prelude::*;
    use std::hash::Hash;

    fn hash_of<T: Hash>(b: &IdHashBuilder, v: &T) -> u64 {
        b.hash_one(v)
    }

    #[test]
    fn consecutive_entries_spread_over_buckets() {
        // 4096 consecutive entries of one ledger land in (nearly) as many of 4096 buckets as
        // a random function would fill (about 63%), not in a few.
        let b = IdHashBuilder::default();
        let mut used = std::collections::HashSet::new();
        for e in 0..4096 {
            let id = MessageId::new(7, e, -1, -1, 0);
            used.insert(hash_of(&b, &id) & 4095);
        }
        assert!(used.len() > 2300, "only {} buckets used", used.len());
    }

    #[test]
    fn seeds_differ_between_builders() {
        let id = MessageId::new(1, 2, -1, -1, 0);
        let a = hash_of(&IdHashBuilder::default(), &id);
        let b = hash_of(&IdHashBuilder::default(), &id);
        let c = hash_of(&IdHashBuilder::default(), &id);
        assert!(a != b || b != c);
    }

    proptest! {
        #[test]
        fn equal_ids_hash_equal(l in any::<i64>(), e in any::<i64>(), p in -1i32..64, bi in -1i32..1000) {
            let b = IdHashBuilder::default();
            let x = MessageId::new(l, e, p, bi, 1000);
            let y = MessageId::new(l, e, p, bi, 1000);
            prop_assert_eq!(x, y);
            prop_assert_eq!(hash_of(&b, &x), hash_of(&b, &y));
        }

        #[test]
        fn maps_behave_like_std(ops in proptest::collection::vec((0i64..50, any::<bool>()), 0..300)) {
            let mut ours: IdSet<MessageId> = IdSet::default();
            let mut std_set = std::collections::HashSet::new();
            for (e, insert) in ops {
                let id = MessageId::new(3, e, -1, -1, 0);
                if insert {
                    prop_assert_eq!(ours.insert(id), std_set.insert(id));
                } else {
                    prop_assert_eq!(ours.remove(&id), std_set.remove(&id));
                }
            }
            prop_assert_eq!(ours.len(), std_set.len());
        }
    }
}
