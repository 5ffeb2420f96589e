//! CRC32C (Castagnoli), the checksum of Pulsar payload sections.
//!
//! The `crc32c` crate picks SSE4.2 / ARMv8 CRC instructions at run time and falls back to
//! software. Everything here is incremental so a checksum can be computed over the pieces of
//! a message (metadata + payload slices) without concatenating them first.

/// CRC32C of one buffer.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Continue a CRC32C: `crc32c_append(crc32c(a), b) == crc32c(a ++ b)`.
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// CRC32C over several slices, as if they were one buffer.
pub fn crc32c_slices<I>(parts: I) -> u32
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    parts
        .into_iter()
        .fold(0, |crc, part| crc32c_append(crc, part.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Published CRC-32C check values (RFC 3720 appendix B.4 and the usual "123456789").
    #[test]
    fn known_vectors() {
        assert_eq!(crc32c(b""), 0);
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&ascending), 0x46DD_794E);
        let descending: Vec<u8> = (0u8..32).rev().collect();
        assert_eq!(crc32c(&descending), 0x113F_DB5C);
    }

    #[test]
    fn slices_equal_whole() {
        assert_eq!(crc32c_slices([&b"1234"[..], b"", b"56789"]), 0xE306_9283);
        assert_eq!(crc32c_slices(Vec::<&[u8]>::new()), 0);
    }

    proptest! {
        #[test]
        fn append_is_concatenation(a in proptest::collection::vec(any::<u8>(), 0..300),
                                   b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut whole = a.clone();
            whole.extend_from_slice(&b);
            prop_assert_eq!(crc32c_append(crc32c(&a), &b), crc32c(&whole));
            prop_assert_eq!(crc32c_slices([&a, &b]), crc32c(&whole));
        }
    }
}
