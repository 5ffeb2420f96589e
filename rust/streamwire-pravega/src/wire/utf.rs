//! Java's `DataOutput.writeUTF` strings: a u16 byte length, then *modified* UTF-8 (NUL as
//! `C0 80`, characters outside the BMP as two 3-byte surrogates). Every name on the wire
//! (segments, tokens, hosts) is written this way.

use bytes::BufMut;

use super::WireError;

/// Bytes one UTF-16 unit takes in modified UTF-8.
fn unit_len(u: u16) -> usize {
    match u {
        0x0001..=0x007f => 1,
        0x0000 | 0x0080..=0x07ff => 2,
        _ => 3,
    }
}

/// Append `s` as Java's `writeUTF` does; strings over 65,535 encoded bytes are refused.
/// Written straight into `out` (no intermediate buffer): names go out on every request.
pub fn put_utf(out: &mut impl BufMut, s: &str) -> Result<(), WireError> {
    let n = if s.bytes().all(|b| (0x01..=0x7f).contains(&b)) {
        s.len()
    } else {
        s.encode_utf16().map(unit_len).sum()
    };
    let n = u16::try_from(n).map_err(|_| WireError::InvalidArgument("string over 65535 bytes"))?;
    out.put_u16(n);
    if usize::from(n) == s.len() && s.bytes().all(|b| b != 0) {
        out.put_slice(s.as_bytes());
        return Ok(());
    }
    for u in s.encode_utf16() {
        match unit_len(u) {
            1 => out.put_u8(u as u8),
            2 => {
                out.put_u8(0xc0 | ((u >> 6) & 0x1f) as u8);
                out.put_u8(0x80 | (u & 0x3f) as u8);
            }
            _ => {
                out.put_u8(0xe0 | ((u >> 12) & 0x0f) as u8);
                out.put_u8(0x80 | ((u >> 6) & 0x3f) as u8);
                out.put_u8(0x80 | (u & 0x3f) as u8);
            }
        }
    }
    Ok(())
}

/// Decode modified UTF-8 bytes (the length already taken).
pub fn decode_utf(b: &[u8]) -> Result<String, WireError> {
    let mut units: Vec<u16> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let (u, n) = match c {
            0x01..=0x7f => (u16::from(c), 1),
            0xc0..=0xdf => {
                let c2 = *b.get(i + 1).ok_or(WireError::Malformed("truncated UTF"))?;
                if c2 & 0xc0 != 0x80 {
                    return Err(WireError::Malformed("bad UTF continuation"));
                }
                ((u16::from(c & 0x1f) << 6) | u16::from(c2 & 0x3f), 2)
            }
            0xe0..=0xef => {
                let (c2, c3) = match (b.get(i + 1), b.get(i + 2)) {
                    (Some(&x), Some(&y)) => (x, y),
                    _ => return Err(WireError::Malformed("truncated UTF")),
                };
                if c2 & 0xc0 != 0x80 || c3 & 0xc0 != 0x80 {
                    return Err(WireError::Malformed("bad UTF continuation"));
                }
                (
                    (u16::from(c & 0x0f) << 12)
                        | (u16::from(c2 & 0x3f) << 6)
                        | u16::from(c3 & 0x3f),
                    3,
                )
            }
            _ => return Err(WireError::Malformed("bad UTF lead byte")),
        };
        units.push(u);
        i += n;
    }
    String::from_utf16(&units).map_err(|_| WireError::Malformed("unpaired surrogate"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn java_specifics() {
        let mut b = Vec::new();
        put_utf(&mut b, "a\0é😀").unwrap();
        // NUL as C0 80; é as 2 bytes; the emoji as two 3-byte surrogates.
        assert_eq!(
            b,
            vec![0, 11, b'a', 0xc0, 0x80, 0xc3, 0xa9, 0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]
        );
        assert_eq!(decode_utf(&b[2..]).unwrap(), "a\0é😀");
        assert!(decode_utf(&[0xff]).is_err());
        assert!(decode_utf(&[0xe0, 0x80]).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(s in any::<String>(), nul in any::<bool>()) {
            let s = if nul { format!("{s}\0") } else { s };
            let mut b = Vec::new();
            put_utf(&mut b, &s).unwrap();
            prop_assert_eq!(usize::from(u16::from_be_bytes([b[0], b[1]])), b.len() - 2);
            // Modified UTF-8 never holds a zero byte or a 4-byte sequence.
            prop_assert!(!b[2..].contains(&0) && !b[2..].iter().any(|&x| x >= 0xf0));
            prop_assert_eq!(decode_utf(&b[2..]).unwrap(), s);
        }

        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = decode_utf(&b);
        }
    }
}
