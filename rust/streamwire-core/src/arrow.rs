//! Arrow column buffers, filled in place: the protocol-neutral half of every `*_arrow` call.
//!
//! A column is built straight into the memory that will back it (the binding hands us a
//! buffer of the exact size, e.g. a Python `bytes`), so a value is copied once, from the
//! message into the column, and no per-row object is ever made. Layouts follow the Arrow
//! columnar format: little-endian values, LSB-first validity bitmaps, offsets of
//! `n + 1` entries (i32, or i64 for "large" columns past 2 GiB).

/// The validity bitmap of `n` rows (bit set = valid), or `None` when every row is valid
/// (Arrow then needs no bitmap at all).
pub fn validity(valid: impl Iterator<Item = bool>, n: usize) -> Option<Vec<u8>> {
    let mut bits = vec![0u8; n.div_ceil(8)];
    let mut all = true;
    for (i, v) in valid.enumerate().take(n) {
        if v {
            bits[i / 8] |= 1 << (i % 8);
        } else {
            all = false;
        }
    }
    (!all).then_some(bits)
}

/// Sizes of a variable-width (binary/string) column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarLayout {
    /// Rows.
    pub rows: usize,
    /// Bytes of all values together.
    pub values_len: usize,
    /// Whether offsets must be i64 (values past `i32::MAX` bytes).
    pub large: bool,
}

impl VarLayout {
    /// The layout of `items` (a null row is `None` and takes no value bytes).
    pub fn of(items: &[Option<&[u8]>]) -> VarLayout {
        let values_len: usize = items.iter().map(|i| i.map_or(0, <[u8]>::len)).sum();
        VarLayout {
            rows: items.len(),
            values_len,
            large: values_len > i32::MAX as usize,
        }
    }

    /// Bytes of the offsets buffer.
    pub fn offsets_len(&self) -> usize {
        (self.rows + 1) * if self.large { 8 } else { 4 }
    }

    /// Fill the offsets buffer (`offsets_len()` bytes).
    pub fn fill_offsets(&self, items: &[Option<&[u8]>], out: &mut [u8]) {
        let width = if self.large { 8 } else { 4 };
        let put = |c: &mut [u8], e: usize| {
            if self.large {
                c.copy_from_slice(&(e as i64).to_le_bytes());
            } else {
                c.copy_from_slice(&(e as i32).to_le_bytes());
            }
        };
        let mut chunks = out.chunks_exact_mut(width);
        if let Some(c) = chunks.next() {
            put(c, 0);
        }
        let mut end = 0usize;
        for (c, it) in chunks.zip(items) {
            end += it.map_or(0, <[u8]>::len);
            put(c, end);
        }
    }

    /// Fill the values buffer (`values_len` bytes).
    pub fn fill_values(items: &[Option<&[u8]>], out: &mut [u8]) {
        let mut at = 0;
        for it in items.iter().flatten() {
            out[at..at + it.len()].copy_from_slice(it);
            at += it.len();
        }
    }
}

/// Fill a fixed-width column: each row's value as `N` little-endian bytes.
pub fn fill_fixed<T, const N: usize>(
    values: impl Iterator<Item = T>,
    to: fn(T) -> [u8; N],
    out: &mut [u8],
) {
    for (c, v) in out.chunks_exact_mut(N).zip(values) {
        c.copy_from_slice(&to(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn validity_is_none_when_all_valid_and_lsb_first_otherwise() {
        assert_eq!(validity([true, true].into_iter(), 2), None);
        assert_eq!(
            validity(
                [true, false, true, true, false, false, false, false, true].into_iter(),
                9
            ),
            Some(vec![0b0000_1101, 0b0000_0001])
        );
    }

    proptest! {
        #[test]
        fn var_column_round_trips(rows in proptest::collection::vec(
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)), 0..40)) {
            let items: Vec<Option<&[u8]>> = rows.iter().map(|r| r.as_deref()).collect();
            let layout = VarLayout::of(&items);
            let mut offsets = vec![0u8; layout.offsets_len()];
            let mut values = vec![0u8; layout.values_len];
            layout.fill_offsets(&items, &mut offsets);
            VarLayout::fill_values(&items, &mut values);
            for (i, row) in rows.iter().enumerate() {
                let at = |k: usize| i32::from_le_bytes(offsets[k * 4..k * 4 + 4].try_into().unwrap()) as usize;
                let (s, e) = (at(i), at(i + 1));
                prop_assert_eq!(&values[s..e], row.as_deref().unwrap_or(&[]));
            }
        }
    }

    #[test]
    fn fixed_columns_are_little_endian() {
        let mut out = vec![0u8; 16];
        fill_fixed([1u64, 0x0102].into_iter(), u64::to_le_bytes, &mut out);
        assert_eq!(out[0], 1);
        assert_eq!(&out[8..10], &[2, 1]);
    }
}
