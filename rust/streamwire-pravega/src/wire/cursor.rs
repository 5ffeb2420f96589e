//! A never-panicking big-endian read cursor: every read checks what is left.

use super::{utf, WireError};

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

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.remaining() < n {
            return Err(WireError::Truncated);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    pub fn bool(&mut self) -> Result<bool, WireError> {
        Ok(self.u8()? != 0)
    }

    pub fn i32(&mut self) -> Result<i32, WireError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn i64(&mut self) -> Result<i64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// A UUID: two longs, most significant first.
    pub fn uuid(&mut self) -> Result<u128, WireError> {
        let hi = self.i64()? as u64;
        let lo = self.i64()? as u64;
        Ok((u128::from(hi) << 64) | u128::from(lo))
    }

    /// A `writeUTF` string.
    pub fn utf(&mut self) -> Result<String, WireError> {
        let b = self.take(2)?;
        let n = usize::from(u16::from_be_bytes([b[0], b[1]]));
        utf::decode_utf(self.take(n)?)
    }

    /// A trailing `writeUTF` field newer servers add: empty when the bytes are not there.
    pub fn opt_utf(&mut self) -> Result<String, WireError> {
        if self.remaining() >= 2 {
            self.utf()
        } else {
            Ok(String::new())
        }
    }

    /// A trailing long newer servers add: `default` when the bytes are not there.
    pub fn opt_i64(&mut self, default: i64) -> Result<i64, WireError> {
        if self.remaining() >= 8 {
            self.i64()
        } else {
            Ok(default)
        }
    }

    pub fn opt_i32(&mut self, default: i32) -> Result<i32, WireError> {
        if self.remaining() >= 4 {
            self.i32()
        } else {
            Ok(default)
        }
    }
}
