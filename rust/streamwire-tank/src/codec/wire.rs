//! TANK's primitives (pure): little-endian integers, `str8`, and the u32 LEB128 varint.
//!
//! Decoding goes through [`Cursor`], which never panics: every read checks the bytes left
//! and reports `Truncated`, so a short or hostile buffer is an error, never an index panic.

use bytes::{BufMut, BytesMut};

use super::CodecError;

/// A read position over a byte slice.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.remaining() < n {
            return Err(CodecError::Truncated);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, CodecError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Result<u32, CodecError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, CodecError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    pub fn peek_u16(&self) -> Result<u16, CodecError> {
        self.clone().u16()
    }

    /// `len:u8` + bytes.
    pub fn str8(&mut self) -> Result<&'a [u8], CodecError> {
        let n = self.u8()? as usize;
        self.take(n)
    }

    /// Unsigned LEB128 of a u32: at most 5 bytes, and the fifth may only carry 4 bits.
    pub fn varint(&mut self) -> Result<u32, CodecError> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = self.u8()?;
            if i == 4 && b > 0x0f {
                return Err(CodecError::Malformed("varint does not fit in 32 bits"));
            }
            v |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(CodecError::Malformed("varint does not fit in 32 bits"))
    }
}

pub fn put_varint(out: &mut impl BufMut, mut v: u32) {
    while v >= 0x80 {
        out.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

/// Bytes `v` takes as a varint.
pub fn varint_len(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0x0fff_ffff => 4,
        _ => 5,
    }
}

/// `len:u8` + bytes; longer than 255 bytes is the caller's error, named `what`.
pub fn put_str8(out: &mut BytesMut, s: &[u8], what: &'static str) -> Result<(), CodecError> {
    let n = u8::try_from(s.len()).map_err(|_| CodecError::InvalidArgument(what))?;
    out.put_u8(n);
    out.put_slice(s);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_round_trip(v in any::<u32>()) {
            let mut b = BytesMut::new();
            put_varint(&mut b, v);
            prop_assert_eq!(b.len(), varint_len(v));
            let mut c = Cursor::new(&b);
            prop_assert_eq!(c.varint().unwrap(), v);
            prop_assert!(c.is_empty());
        }

        #[test]
        fn str8_round_trips(s in proptest::collection::vec(any::<u8>(), 0..=255)) {
            let mut b = BytesMut::new();
            put_str8(&mut b, &s, "s").unwrap();
            prop_assert_eq!(Cursor::new(&b).str8().unwrap(), &s[..]);
        }

        #[test]
        fn reads_never_panic(data in proptest::collection::vec(any::<u8>(), 0..16)) {
            let mut c = Cursor::new(&data);
            let _ = c.varint();
            let _ = c.u64();
            let _ = c.str8();
        }
    }

    #[test]
    fn varint_limits() {
        assert_eq!(
            Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0x0f])
                .varint()
                .unwrap(),
            u32::MAX
        );
        assert!(Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0x1f])
            .varint()
            .is_err());
        assert_eq!(Cursor::new(&[0x80]).varint(), Err(CodecError::Truncated));
        assert!(put_str8(&mut BytesMut::new(), &[0u8; 256], "topic").is_err());
    }
}
