//! Which segment a routing key goes to, exactly as the official clients decide it.
//!
//! Java's `StreamSegments` hashes a key with `HashHelper.seededWith("EventRouter")
//! .hashToRange(key)`: Guava's `murmur3_128(seed)` over the key's UTF-16 code units
//! (`hashUnencodedChars`, two little-endian bytes each), the hash's first long, its leading
//! 52 bits made a double in [0, 1). The seed is Java's `String.hashCode` of "EventRouter";
//! Guava widens it to a long with sign extension. The segment is the one whose key range
//! `(low, high]` holds that point: Java's `SegmentCollection.getSegmentForKey` takes the
//! `ceilingEntry` of a map keyed by each segment's upper bound, so a point equal to a boundary
//! goes to the lower segment. Test vectors were computed with the 0.13.0 jars.

/// Java's `String.hashCode`.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
}

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

fn mix_k1(k: u64) -> u64 {
    k.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2)
}

fn mix_k2(k: u64) -> u64 {
    k.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1)
}

fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// MurmurHash3 x64 128 as Guava computes it (seed sign-extended), fed byte by byte so a
/// key's UTF-16 units need no buffer of their own.
struct Murmur3 {
    h1: u64,
    h2: u64,
    block: [u8; 16],
    filled: usize,
    len: u64,
}

impl Murmur3 {
    fn new(seed: i32) -> Self {
        let h = i64::from(seed) as u64;
        Murmur3 {
            h1: h,
            h2: h,
            block: [0; 16],
            filled: 0,
            len: 0,
        }
    }

    fn push(&mut self, b: u8) {
        self.block[self.filled] = b;
        self.filled += 1;
        self.len += 1;
        if self.filled == 16 {
            self.filled = 0;
            let (k1, k2) = self.words();
            self.h1 ^= mix_k1(k1);
            self.h1 = self
                .h1
                .rotate_left(27)
                .wrapping_add(self.h2)
                .wrapping_mul(5)
                .wrapping_add(0x52dc_e729);
            self.h2 ^= mix_k2(k2);
            self.h2 = self
                .h2
                .rotate_left(31)
                .wrapping_add(self.h1)
                .wrapping_mul(5)
                .wrapping_add(0x3849_5ab5);
        }
    }

    /// The block's two little-endian words (bytes past `filled` are zeroed in `finish`).
    fn words(&self) -> (u64, u64) {
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        lo.copy_from_slice(&self.block[..8]);
        hi.copy_from_slice(&self.block[8..]);
        (u64::from_le_bytes(lo), u64::from_le_bytes(hi))
    }

    fn finish(mut self) -> (u64, u64) {
        self.block[self.filled..].fill(0);
        let (k1, k2) = self.words();
        let (mut h1, mut h2) = (self.h1 ^ mix_k1(k1), self.h2 ^ mix_k2(k2));
        h1 ^= self.len;
        h2 ^= self.len;
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        h1 = fmix64(h1);
        h2 = fmix64(h2);
        h1 = h1.wrapping_add(h2);
        h2 = h2.wrapping_add(h1);
        (h1, h2)
    }
}

/// MurmurHash3 x64 128 as Guava computes it (seed sign-extended); returns (h1, h2).
pub fn murmur3_128(data: &[u8], seed: i32) -> (u64, u64) {
    let mut m = Murmur3::new(seed);
    data.iter().for_each(|&b| m.push(b));
    m.finish()
}

/// `HashHelper.longToDoubleFraction`: the leading 52 bits as a double in [0, 1).
fn long_to_fraction(v: u64) -> f64 {
    let shifted = ((v as i64) >> 12) as u64 & 0x000f_ffff_ffff_ffff;
    f64::from_bits(0x3ff0_0000_0000_0000 + shifted) - 1.0
}

/// The point in [0, 1) of a routing key (the official writers' `hashToRange`).
pub fn key_to_point(key: &str) -> f64 {
    let seed = java_string_hash("EventRouter");
    let mut m = Murmur3::new(seed);
    for u in key.encode_utf16() {
        let [lo, hi] = u.to_le_bytes();
        m.push(lo);
        m.push(hi);
    }
    long_to_fraction(m.finish().0)
}

/// A segment of the stream as the controller describes it: `low..high` of the key space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyRange {
    pub segment: i64,
    pub low: f64,
    pub high: f64,
}

/// The segment for `point` exactly as the official clients pick it: the one with the smallest
/// upper bound at or above the point (`ceilingEntry`), ranges in any order. `None` when no
/// range reaches the point (no ranges, or a point above 1) or the point is NaN.
pub fn segment_for(point: f64, ranges: &[KeyRange]) -> Option<i64> {
    if point.is_nan() {
        return None;
    }
    ranges
        .iter()
        .filter(|r| r.high >= point)
        .min_by(|a, b| a.high.total_cmp(&b.high))
        .map(|r| r.segment)
}

/// The segment a routing key goes to (`segment_for(key_to_point(key))`).
pub fn segment_for_key(key: &str, ranges: &[KeyRange]) -> Option<i64> {
    segment_for(key_to_point(key), ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `HashHelper.seededWith("EventRouter").hashToRange(key)` run on the 0.13.0 jars
    /// (pravega-common-0.13.0.jar + guava-31.1-jre.jar, Java 17), printed as
    /// `Double.doubleToLongBits`. They cover the empty key, keys shorter than one 16-byte
    /// murmur block, exactly two blocks ("0123456789abcdef": 16 chars = 32 bytes), two blocks
    /// and a tail, non-ASCII in the BMP, a surrogate pair and a NUL.
    const VECTORS: [(&str, u64); 10] = [
        ("", 0x3fce_deef_4a33_5178),
        ("a", 0x3fee_3042_e663_131a),
        ("k1", 0x3fdb_ec6f_c770_678c),
        ("user-42", 0x3fe4_e96a_ad87_3f52),
        ("héllo", 0x3fd1_5ada_fa83_1cdc),
        ("😀", 0x3fe8_cd02_77fa_e608),
        ("routing key with spaces", 0x3fd0_475e_df18_973c),
        ("0123456789abcdef", 0x3fc5_22a1_dd36_5850),
        ("0123456789abcdefX", 0x3fd5_553a_e0c2_3178),
        ("a\0b", 0x3fe7_a008_77e0_6922),
    ];

    #[test]
    fn matches_the_official_hash() {
        assert_eq!(java_string_hash("EventRouter"), 1_741_865_571);
        for (key, bits) in VECTORS {
            assert_eq!(key_to_point(key).to_bits(), bits, "{key:?}");
        }
    }

    /// Guava 31.1 `Hashing.murmur3_128(seed).hashBytes(..)` (its bytes read as two
    /// little-endian longs), run on Java 17: "hello" with seed 0 (also the MurmurHash3_x64_128
    /// reference value), and a 43-byte input with a negative seed (sign extension, a tail).
    #[test]
    fn murmur_matches_guava() {
        assert_eq!(
            murmur3_128(b"hello", 0),
            (0xcbd8_a7b3_41bd_9b02, 0x5b1e_906a_48ae_1d19)
        );
        assert_eq!(
            murmur3_128(b"The quick brown fox jumps over the lazy dog", -5),
            (0xc39a_e995_ba3e_56e8, 0x78de_f137_67f8_a7d3)
        );
    }

    #[test]
    fn points_pick_their_ranges() {
        let ranges = [
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
        ];
        assert_eq!(segment_for(0.25, &ranges), Some(0));
        // A boundary goes to the segment it closes (Java's ceilingEntry on upper bounds).
        assert_eq!(segment_for(0.5, &ranges), Some(0));
        assert_eq!(segment_for(0.500_000_1, &ranges), Some(1));
        assert_eq!(segment_for(0.0, &ranges), Some(0));
        assert_eq!(segment_for(0.999, &ranges), Some(1));
        assert_eq!(segment_for(1.5, &ranges), None);
        assert_eq!(segment_for(f64::NAN, &ranges), None);
        assert_eq!(segment_for(0.3, &[]), None);
        // Order of the ranges does not matter.
        let reversed = [ranges[1], ranges[0]];
        assert_eq!(segment_for(0.25, &reversed), Some(0));
        assert_eq!(segment_for(0.75, &reversed), Some(1));
        // "a" hashes to ~0.944, "k1" to ~0.436.
        assert_eq!(segment_for_key("a", &ranges), Some(1));
        assert_eq!(segment_for_key("k1", &ranges), Some(0));
        for (key, _) in VECTORS {
            let p = key_to_point(key);
            assert!((0.0..1.0).contains(&p));
            assert!(segment_for(p, &ranges).is_some());
        }
    }
}
