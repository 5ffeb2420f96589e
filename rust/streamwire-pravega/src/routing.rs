//! Which segment a routing key goes to, exactly as the official clients decide it.
//!
//! Java's `StreamSegments` hashes a key with `HashHelper.seededWith("EventRouter")
//! .hashToRange(key)`: Guava's `murmur3_128(seed)` over the key's UTF-16 code units
//! (`hashUnencodedChars`, two little-endian bytes each), the hash's first long, its leading
//! 52 bits made a double in [0, 1). The seed is Java's `String.hashCode` of "EventRouter";
//! Guava widens it to a long with sign extension. The segment is the one whose key range
//! `[low, high)` holds that point. Test vectors were computed with the 0.13.0 jars.

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

/// MurmurHash3 x64 128 as Guava computes it (seed sign-extended); returns (h1, h2).
pub fn murmur3_128(data: &[u8], seed: i32) -> (u64, u64) {
    let mut h1 = i64::from(seed) as u64;
    let mut h2 = h1;
    let blocks = data.len() / 16;
    for i in 0..blocks {
        let b = &data[i * 16..i * 16 + 16];
        let k1 = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
        let k2 = u64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
        h1 ^= mix_k1(k1);
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        h2 ^= mix_k2(k2);
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    let tail = &data[blocks * 16..];
    let (mut k1, mut k2) = (0u64, 0u64);
    for (i, b) in tail.iter().enumerate() {
        if i < 8 {
            k1 |= u64::from(*b) << (8 * i);
        } else {
            k2 |= u64::from(*b) << (8 * (i - 8));
        }
    }
    h1 ^= mix_k1(k1);
    h2 ^= mix_k2(k2);
    let len = data.len() as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1, h2)
}

/// `HashHelper.longToDoubleFraction`: the leading 52 bits as a double in [0, 1).
fn long_to_fraction(v: u64) -> f64 {
    let shifted = ((v as i64) >> 12) as u64 & 0x000f_ffff_ffff_ffff;
    f64::from_bits(0x3ff0_0000_0000_0000 + shifted) - 1.0
}

/// The point in [0, 1) of a routing key (the official writers' `hashToRange`).
pub fn key_to_point(key: &str) -> f64 {
    let seed = java_string_hash("EventRouter");
    let bytes: Vec<u8> = key.encode_utf16().flat_map(u16::to_le_bytes).collect();
    long_to_fraction(murmur3_128(&bytes, seed).0)
}

/// A segment of the stream as the controller describes it: `[low, high)` of the key space.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyRange {
    pub segment: i64,
    pub low: f64,
    pub high: f64,
}

/// The segment holding `point` (ranges as the controller gives them: they tile [0, 1)).
pub fn segment_for(point: f64, ranges: &[KeyRange]) -> Option<i64> {
    ranges
        .iter()
        .find(|r| r.low <= point && point < r.high)
        .or_else(|| ranges.iter().find(|r| point >= r.low && r.high >= 1.0))
        .map(|r| r.segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `HashHelper.seededWith("EventRouter").hashToRange(key)` from the 0.13.0 jars
    /// (pravega-common + guava 31.1), as doubles' bits.
    const VECTORS: [(&str, u64); 7] = [
        ("", 0x3fce_deef_4a33_5178),
        ("a", 0x3fee_3042_e663_131a),
        ("k1", 0x3fdb_ec6f_c770_678c),
        ("user-42", 0x3fe4_e96a_ad87_3f52),
        ("héllo", 0x3fd1_5ada_fa83_1cdc),
        ("😀", 0x3fe8_cd02_77fa_e608),
        ("routing key with spaces", 0x3fd0_475e_df18_973c),
    ];

    #[test]
    fn matches_the_official_hash() {
        assert_eq!(java_string_hash("EventRouter"), 1_741_865_571);
        for (key, bits) in VECTORS {
            assert_eq!(key_to_point(key).to_bits(), bits, "{key:?}");
        }
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
        assert_eq!(segment_for(0.5, &ranges), Some(1));
        assert_eq!(segment_for(0.999, &ranges), Some(1));
        for (key, _) in VECTORS {
            let p = key_to_point(key);
            assert!((0.0..1.0).contains(&p));
            assert!(segment_for(p, &ranges).is_some());
        }
    }
}
