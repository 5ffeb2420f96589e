//! Choosing the partition of a partitioned topic for each message.
//!
//! Why these exact functions: keyed messages must land on the same partition as when the
//! official Java client sends them, or per-key ordering breaks for applications that mix
//! clients. So the hashes reproduce the Java client bit for bit:
//!
//! * `HashingScheme.JavaStringHash` (the Java producer's **default**): `String.hashCode()`
//!   over the key's UTF-16 code units, then `& Integer.MAX_VALUE`.
//! * `HashingScheme.Murmur3_32Hash`: MurmurHash3 x86 32-bit, seed 0, over the key's UTF-8
//!   bytes, then `& Integer.MAX_VALUE`.
//! * The partition is `signSafeMod(hash, numPartitions)`: Java's `%` on a `long`, plus the
//!   divisor when the remainder is negative.
//!
//! The C++ client (and the Python client built on it) default to `BoostHash` instead, which
//! is not implemented here; keys hashed by those clients with default settings map
//! differently from the Java client's anyway.
//!
//! Routing modes follow the Java routers: a message with a key always goes by key hash;
//! without a key, round robin either rotates per message or, with batching on, switches
//! partition only every `partition_switch` so that batches fill up; single-partition mode
//! uses one partition picked at random once. Ordering keys do not influence routing (the
//! Java routers look only at the key). Nothing here reads the clock: time is an argument.

use std::time::Duration;

/// How a message key is hashed for routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashingScheme {
    /// Java's `String.hashCode()` (the Java client's default).
    #[default]
    JavaStringHash,
    /// MurmurHash3 x86 32-bit with seed 0 over the UTF-8 bytes.
    Murmur3_32Hash,
}

impl HashingScheme {
    /// The non-negative key hash (`makeHash(key) & Integer.MAX_VALUE`).
    pub fn hash_key(self, key: &str) -> u32 {
        let h = match self {
            Self::JavaStringHash => java_string_hash(key) as u32,
            Self::Murmur3_32Hash => murmur3_32(key.as_bytes(), 0),
        };
        h & 0x7fff_ffff
    }

    /// The partition for `key` among `num_partitions` (which must be at least 1).
    pub fn partition_for_key(self, key: &str, num_partitions: u32) -> u32 {
        sign_safe_mod(i64::from(self.hash_key(key)), num_partitions)
    }
}

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units,
/// in wrapping 32-bit arithmetic.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// MurmurHash3, x86 32-bit variant (Austin Appleby's public-domain algorithm).
pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    fn mix_k(k: u32) -> u32 {
        k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
    }
    let mut h = seed;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        h ^= mix_k(k);
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let k = tail
            .iter()
            .enumerate()
            .fold(0u32, |k, (i, &b)| k | (u32::from(b) << (8 * i)));
        h ^= mix_k(k);
    }
    // The length is mixed in modulo 2^32, as the reference implementation does.
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// Java's `MathUtils.signSafeMod(long dividend, int divisor)`: a remainder in
/// `0..divisor`. `divisor` 0 is treated as 1 (there is always at least one partition).
pub fn sign_safe_mod(dividend: i64, divisor: u32) -> u32 {
    let divisor = i64::from(divisor.max(1));
    // rem_euclid is exactly "remainder, plus divisor if negative" for a positive divisor.
    dividend.rem_euclid(divisor) as u32
}

/// Routes keyed messages by key hash and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyHashRouter {
    /// The hash used.
    pub scheme: HashingScheme,
}

impl KeyHashRouter {
    /// A router using `scheme`.
    pub fn new(scheme: HashingScheme) -> Self {
        Self { scheme }
    }

    /// The partition for `key`, or `None` for a message without a key.
    pub fn choose(&self, key: Option<&str>, num_partitions: u32) -> Option<u32> {
        key.map(|k| self.scheme.partition_for_key(k, num_partitions))
    }
}

/// The Java client's default `batchingPartitionSwitchFrequencyByPublishDelay`.
pub const DEFAULT_PARTITION_SWITCH_FREQUENCY_BY_PUBLISH_DELAY: u32 = 10;

/// Round robin over partitions for messages without a key (Java's default routing mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundRobinRouter {
    keys: KeyHashRouter,
    start_index: u32,
    next_index: i32,
    batching_enabled: bool,
    partition_switch_ms: u64,
}

impl RoundRobinRouter {
    /// A router starting at `start_index` (the Java client picks it at random, see
    /// [`random_start_index`]). With batching, the partition changes every
    /// `partition_switch` (at least 1 ms); without, every message.
    pub fn new(
        scheme: HashingScheme,
        start_index: u32,
        batching_enabled: bool,
        partition_switch: Duration,
    ) -> Self {
        let partition_switch_ms = u64::try_from(partition_switch.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        Self {
            keys: KeyHashRouter::new(scheme),
            start_index,
            // Java keeps the per-message counter in an `int` that starts at startPtnIdx and
            // wraps; we keep the same type so the sequence matches after wrapping too.
            next_index: start_index as i32,
            batching_enabled,
            partition_switch_ms,
        }
    }

    /// Like the Java producer: the switch interval is
    /// `switch_frequency_by_publish_delay * batching_max_publish_delay` (default 10×),
    /// truncated to whole milliseconds, at least 1 ms.
    pub fn for_batching(
        scheme: HashingScheme,
        start_index: u32,
        batching_enabled: bool,
        batching_max_publish_delay: Duration,
        switch_frequency_by_publish_delay: u32,
    ) -> Self {
        let switch = batching_max_publish_delay.saturating_mul(switch_frequency_by_publish_delay);
        Self::new(scheme, start_index, batching_enabled, switch)
    }

    /// The switch interval in milliseconds.
    pub fn partition_switch_ms(&self) -> u64 {
        self.partition_switch_ms
    }

    /// The partition for the next message. `now_ms` is wall-clock milliseconds (only used
    /// when batching is on).
    pub fn choose(&mut self, key: Option<&str>, num_partitions: u32, now_ms: u64) -> u32 {
        if let Some(p) = self.keys.choose(key, num_partitions) {
            return p;
        }
        if self.batching_enabled {
            let slot = now_ms / self.partition_switch_ms;
            // Java computes this in `long`; with u64 inputs the sum cannot exceed i128.
            let dividend = i128::from(slot) + i128::from(self.start_index);
            (dividend.rem_euclid(i128::from(num_partitions.max(1)))) as u32
        } else {
            let current = self.next_index;
            self.next_index = current.wrapping_add(1);
            sign_safe_mod(i64::from(current), num_partitions)
        }
    }
}

/// All messages without a key go to one partition, chosen once (Java's `SinglePartition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinglePartitionRouter {
    keys: KeyHashRouter,
    partition: u32,
}

impl SinglePartitionRouter {
    /// A router sending un-keyed messages to `partition`.
    pub fn new(scheme: HashingScheme, partition: u32) -> Self {
        Self {
            keys: KeyHashRouter::new(scheme),
            partition,
        }
    }

    /// A router whose partition is picked at random among `num_partitions`.
    pub fn random<R: rand::Rng + ?Sized>(
        scheme: HashingScheme,
        num_partitions: u32,
        rng: &mut R,
    ) -> Self {
        Self::new(scheme, random_start_index(num_partitions, rng))
    }

    /// The fixed partition for un-keyed messages.
    pub fn partition(&self) -> u32 {
        self.partition
    }

    /// The partition for a message.
    pub fn choose(&self, key: Option<&str>, num_partitions: u32) -> u32 {
        self.keys
            .choose(key, num_partitions)
            // Partition counts only grow, so the index stays valid; the modulo is a guard.
            .unwrap_or(self.partition % num_partitions.max(1))
    }
}

/// A uniformly random index in `0..num_partitions` (the Java client's start index).
pub fn random_start_index<R: rand::Rng + ?Sized>(num_partitions: u32, rng: &mut R) -> u32 {
    rng.random_range(0..num_partitions.max(1))
}

/// Any of the built-in routers, as chosen by the producer's routing mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Router {
    /// Round robin (Java default).
    RoundRobin(RoundRobinRouter),
    /// One partition for un-keyed messages.
    Single(SinglePartitionRouter),
}

impl Router {
    /// The partition for a message with optional `key` at wall-clock `now_ms`.
    pub fn choose(&mut self, key: Option<&str>, num_partitions: u32, now_ms: u64) -> u32 {
        match self {
            Self::RoundRobin(r) => r.choose(key, num_partitions, now_ms),
            Self::Single(r) => r.choose(key, num_partitions),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;

    #[test]
    fn java_string_hash_vectors() {
        // Values of String.hashCode() from the Java language definition's formula.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("abc"), 96354);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("Aa"), java_string_hash("BB"));
        assert_eq!(java_string_hash("Aa"), 2112);
        // The well-known string whose hashCode is Integer.MIN_VALUE.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // A character outside the BMP counts as two UTF-16 surrogates: 0xD83D, 0xDE00.
        assert_eq!(java_string_hash("\u{1F600}"), 0xD83D * 31 + 0xDE00);
        assert_eq!(java_string_hash("é"), 0xE9);
    }

    #[test]
    fn java_string_hash_masks_sign_bit() {
        assert_eq!(
            HashingScheme::JavaStringHash.hash_key("polygenelubricants"),
            0
        );
        // "hello world".hashCode() = 1794106052 (positive); a negative one:
        let h = java_string_hash("negative hash please!!");
        let masked = HashingScheme::JavaStringHash.hash_key("negative hash please!!");
        assert_eq!(masked, (h as u32) & 0x7fff_ffff);
    }

    #[test]
    fn murmur3_reference_vectors() {
        // Published test vectors of MurmurHash3_x86_32.
        let cases: &[(&[u8], u32, u32)] = &[
            (b"", 0, 0),
            (b"", 1, 0x514e_28b7),
            (b"", 0xffff_ffff, 0x81f1_6f39),
            (b"\0\0\0\0", 0, 0x2362_f9de),
            (b"\xff\xff\xff\xff", 0, 0x7629_3b50),
            (b"!Ce\x87", 0, 0xf55b_516b),
            (b"!Ce\x87", 0x5082_edee, 0x2362_f9de),
            (b"!Ce", 0, 0x7e4a_8634),
            (b"!C", 0, 0xa0f7_b07a),
            (b"!", 0, 0x7266_1cf4),
            (b"aaaa", 0x9747_b28c, 0x5a97_808a),
            (b"aaa", 0x9747_b28c, 0x283e_0130),
            (b"aa", 0x9747_b28c, 0x5d21_1726),
            (b"a", 0x9747_b28c, 0x7fa0_9ea6),
            (b"abcd", 0x9747_b28c, 0xf047_8627),
            (b"abc", 0x9747_b28c, 0xc84a_62dd),
            (b"ab", 0x9747_b28c, 0x7487_5592),
            (b"Hello, world!", 0x9747_b28c, 0x2488_4cba),
            (
                b"The quick brown fox jumps over the lazy dog",
                0x9747_b28c,
                0x2fa8_26cd,
            ),
        ];
        for &(data, seed, want) in cases {
            assert_eq!(murmur3_32(data, seed), want, "{data:?} seed {seed:#x}");
        }
    }

    #[test]
    fn murmur_scheme_hashes_utf8_and_masks() {
        let raw = murmur3_32("clé".as_bytes(), 0);
        assert_eq!(
            HashingScheme::Murmur3_32Hash.hash_key("clé"),
            raw & 0x7fff_ffff
        );
    }

    #[test]
    fn sign_safe_mod_matches_java() {
        assert_eq!(sign_safe_mod(7, 3), 1);
        assert_eq!(sign_safe_mod(-7, 3), 2); // Java: -7 % 3 = -1, + 3
        assert_eq!(sign_safe_mod(-3, 3), 0);
        assert_eq!(sign_safe_mod(i64::MIN, 7), (i64::MIN % 7 + 7) as u32);
        assert_eq!(sign_safe_mod(5, 0), 0);
    }

    #[test]
    fn default_scheme_is_java_string_hash() {
        assert_eq!(HashingScheme::default(), HashingScheme::JavaStringHash);
        // "hello" -> 99162322 % 7 = 99162322 - 7*14166046 = 0
        assert_eq!(HashingScheme::default().partition_for_key("hello", 7), 0);
        assert_eq!(HashingScheme::default().partition_for_key("abc", 10), 4);
    }

    #[test]
    fn round_robin_without_batching_rotates() {
        let mut r = RoundRobinRouter::new(HashingScheme::default(), 2, false, Duration::ZERO);
        let got: Vec<_> = (0..6).map(|_| r.choose(None, 4, 0)).collect();
        assert_eq!(got, vec![2, 3, 0, 1, 2, 3]);
    }

    #[test]
    fn round_robin_counter_wraps_like_java_int() {
        let mut r = RoundRobinRouter::new(HashingScheme::default(), 0, false, Duration::ZERO);
        r.next_index = i32::MAX;
        assert_eq!(r.choose(None, 3, 0), sign_safe_mod(i64::from(i32::MAX), 3));
        assert_eq!(r.choose(None, 3, 0), sign_safe_mod(i64::from(i32::MIN), 3));
    }

    #[test]
    fn round_robin_with_batching_switches_on_time_slots() {
        let mut r = RoundRobinRouter::for_batching(
            HashingScheme::default(),
            1,
            true,
            Duration::from_millis(1),
            DEFAULT_PARTITION_SWITCH_FREQUENCY_BY_PUBLISH_DELAY,
        );
        assert_eq!(r.partition_switch_ms(), 10);
        assert_eq!(r.choose(None, 3, 0), 1);
        assert_eq!(r.choose(None, 3, 9), 1);
        assert_eq!(r.choose(None, 3, 10), 2);
        assert_eq!(r.choose(None, 3, 25), 0);
        // Sub-millisecond switch intervals are raised to 1 ms.
        let r = RoundRobinRouter::new(HashingScheme::default(), 0, true, Duration::from_micros(10));
        assert_eq!(r.partition_switch_ms(), 1);
    }

    #[test]
    fn keyed_messages_go_by_key_in_every_mode() {
        let n = 13;
        let want = HashingScheme::default().partition_for_key("user-42", n);
        let mut rr = Router::RoundRobin(RoundRobinRouter::new(
            HashingScheme::default(),
            5,
            false,
            Duration::ZERO,
        ));
        let mut single = Router::Single(SinglePartitionRouter::new(HashingScheme::default(), 9));
        for t in 0..20 {
            assert_eq!(rr.choose(Some("user-42"), n, t * 1000), want);
            assert_eq!(single.choose(Some("user-42"), n, t), want);
        }
        assert_eq!(single.choose(None, n, 0), 9);
    }

    #[test]
    fn random_single_partition_is_in_range() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for n in 1..50 {
            let r = SinglePartitionRouter::random(HashingScheme::default(), n, &mut rng);
            assert!(r.partition() < n);
            assert_eq!(r.choose(None, n), r.partition());
        }
    }

    proptest! {
        #[test]
        fn partitions_always_in_range(
            key in proptest::option::of(".*"),
            n in 1u32..10_000,
            start in any::<u32>(),
            now in any::<u64>(),
            batching in any::<bool>(),
            murmur in any::<bool>(),
        ) {
            let scheme = if murmur { HashingScheme::Murmur3_32Hash } else { HashingScheme::JavaStringHash };
            let mut r = RoundRobinRouter::new(scheme, start, batching, Duration::from_millis(10));
            prop_assert!(r.choose(key.as_deref(), n, now) < n);
            prop_assert!(scheme.hash_key(key.as_deref().unwrap_or("")) <= i32::MAX as u32);
        }

        #[test]
        fn sign_safe_mod_in_range(d in any::<i64>(), n in 1u32..) {
            let m = sign_safe_mod(d, n);
            prop_assert!(m < n);
            prop_assert_eq!((i128::from(d) - i128::from(m)) % i128::from(n), 0);
        }
    }
}
