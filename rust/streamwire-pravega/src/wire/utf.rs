//! Java's `DataOutput.writeUTF` strings: a u16 byte length, then *modified* UTF-8 (NUL as
//! `C0 80`, characters outside the BMP as two 3-byte surrogates). Every name on the wire
//! (segments, tokens, hosts) is written this way.

use bytes::BufMut;

use super::WireError;

/// Append `s` as Java's `writeUTF` does; strings over 65,535 encoded bytes are refused.
pub fn put_utf(out: &mut impl BufMut, s: &str) -> Result<(), WireError> {
    let mut enc = Vec::with_capacity(s.len());
    for c in s.chars() {
        let mut units = [0u16; 2];
        for &u in c.encode_utf16(&mut units).iter() {
            match u {
                0x0001..=0x007f => enc.push(u as u8),
                0x0000 | 0x0080..=0x07ff => {
                    enc.push(0xc0 | ((u >> 6) & 0x1f) as u8);
                    enc.push(0x80 | (u & 0x3f) as u8);
                }
                _ => {
                    enc.push(0xe0 | ((u >> 12) & 0x0f) as u8);
                    enc.push(0x80 | ((u >> 6) & 0x3f) as u8);
                    enc.push(0x80 | (u & 0x3f) as u8);
                }
            }
        }
    }
    let n = u16::try_from(enc.len())
        .map_err(|_| WireError::InvalidArgument("string over 65535 bytes"))?;
    out.put_u16(n);
    out.put_slice(&enc);
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
        fn round_trips(s in ".{0,60}") {
            let mut b = Vec::new();
            put_utf(&mut b, &s).unwrap();
            prop_assert_eq!(decode_utf(&b[2..]).unwrap(), s);
        }

        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = decode_utf(&b);
        }
    }
}
