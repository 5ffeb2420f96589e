//! Arrow columns as plain Rust data, for any front end: a read-only [`ColumnView`] of a
//! column someone else built (pyarrow, an IPC message, the Arrow C data interface, ...) and
//! an owned [`ArrayData`] built by us for a front end to hand on.
//!
//! Why here and not in the binding: the Pulsar schema code reads record batches into values
//! and builds typed columns from received records, and the gateway or any future front end
//! needs exactly that. Neither type knows about Python or about any protocol; the layouts
//! are those of the Arrow columnar format (little-endian values, LSB-first validity
//! bitmaps, offsets of `len + 1` entries).

use std::borrow::Cow;

use crate::arrow::{fill_fixed, validity, VarLayout};

/// The logical type of a viewed column, as far as a reader of values needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewType {
    Null,
    Boolean,
    /// An integer of `bytes` bytes (1, 2, 4, 8).
    Int {
        bytes: usize,
        signed: bool,
    },
    /// A float of `bytes` bytes (4 or 8).
    Float {
        bytes: usize,
    },
    /// date32 (days), date64 (ms), timestamp and duration (8 bytes, any unit): integers.
    Temporal {
        bytes: usize,
    },
    /// Variable-width bytes: `utf8` for strings, `large` for i64 offsets.
    Binary {
        utf8: bool,
        large: bool,
    },
    /// Fixed-size binary of that many bytes per row.
    FixedBinary(usize),
    /// A list (`large`: i64 offsets); its one child is the whole values array.
    List {
        large: bool,
    },
    /// A struct of the named fields; its children are the fields, aligned with its rows.
    Struct(Vec<String>),
    /// A map; its children are the whole keys and items arrays.
    Map,
    /// Any other type (a union, a dictionary, a decimal...): no reader takes it.
    Other,
}

/// A read-only view of one Arrow array. Buffers are borrowed where the front end can
/// lend them (`Cow::Borrowed`) and owned where it had to copy them out.
///
/// `buffers` are the array's own after the validity bitmap: the values of a fixed-width
/// column; offsets then values of a binary one; offsets of a list or map; none for a struct.
/// `offset` is where the array starts in its buffers (a slice of a larger array).
#[derive(Debug, Clone)]
pub struct ColumnView<'a> {
    pub ty: ViewType,
    /// The type as the front end spells it (pyarrow's `str(type)`), for messages.
    pub type_name: Cow<'a, str>,
    pub len: usize,
    pub offset: usize,
    /// The validity bitmap (bit set = valid), or None when no row is null.
    pub validity: Option<Cow<'a, [u8]>>,
    pub buffers: Vec<Cow<'a, [u8]>>,
    pub children: Vec<ColumnView<'a>>,
}

/// Why a view's buffers cannot be read as its type says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LayoutError(pub String);

fn borrowed(c: &[u8]) -> Cow<'_, [u8]> {
    Cow::Borrowed(c)
}

impl<'a> ColumnView<'a> {
    /// The same column, borrowing this one's buffers (no copy).
    pub fn borrow(&self) -> ColumnView<'_> {
        ColumnView {
            ty: self.ty.clone(),
            type_name: Cow::Borrowed(&self.type_name),
            len: self.len,
            offset: self.offset,
            validity: self.validity.as_deref().map(borrowed),
            buffers: self.buffers.iter().map(|b| borrowed(b)).collect(),
            children: self.children.iter().map(ColumnView::borrow).collect(),
        }
    }

    /// Rows `from..from + len` of this column (no copy). A struct's children are aligned
    /// with its rows, so they are cut too; a list's or map's children are indexed by its
    /// offsets, so they stay whole.
    pub fn slice(&self, from: usize, len: usize) -> ColumnView<'_> {
        let mut v = self.borrow();
        v.offset += from;
        v.len = len;
        if matches!(v.ty, ViewType::Struct(_)) {
            v.children = self.children.iter().map(|c| c.slice(from, len)).collect();
        }
        v
    }

    /// Whether row `i` is valid (not null).
    pub fn is_valid(&self, i: usize) -> bool {
        self.validity
            .as_ref()
            .is_none_or(|bits| bit(bits, self.offset + i))
    }

    /// Buffer `i` after the validity bitmap (empty when the front end gave none).
    pub fn buffer(&self, i: usize) -> &[u8] {
        self.buffers.get(i).map_or(&[], |b| &b[..])
    }

    /// The integers of an integer or temporal column (nulls as whatever the buffer holds);
    /// unsigned values below 64 bits are zero-extended, a uint64 is read as its bits.
    pub fn ints(&self) -> Result<Vec<i64>, LayoutError> {
        let (width, signed) = match self.ty {
            ViewType::Int { bytes, signed } => (bytes, signed),
            ViewType::Temporal { bytes } => (bytes, true),
            _ => {
                return Err(LayoutError(format!(
                    "not an integer column: {}",
                    self.type_name
                )))
            }
        };
        let data = self.buffer(0);
        let mut out = Vec::with_capacity(self.len);
        for i in 0..self.len {
            let at = (self.offset + i) * width;
            let Some(b) = data.get(at..at + width) else {
                return Err(too_short("data"));
            };
            let mut raw = [0u8; 8];
            raw[..width].copy_from_slice(b);
            out.push(match (width, signed) {
                (1, true) => i64::from(b[0] as i8),
                (2, true) => i64::from(i16::from_le_bytes([b[0], b[1]])),
                (4, true) => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                _ => i64::from_le_bytes(raw),
            });
        }
        Ok(out)
    }

    /// The values of a float column, or of an integer one.
    pub fn floats(&self) -> Result<Vec<f64>, LayoutError> {
        let ViewType::Float { bytes } = self.ty else {
            return Ok(self.ints()?.into_iter().map(|i| i as f64).collect());
        };
        let data = self.buffer(0);
        (0..self.len)
            .map(|i| {
                let at = (self.offset + i) * bytes;
                match data.get(at..at + bytes) {
                    Some(b) if bytes == 4 => {
                        Ok(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                    }
                    Some(b) => Ok(f64::from_le_bytes(b.try_into().expect("8 bytes"))),
                    None => Err(too_short("data")),
                }
            })
            .collect()
    }

    /// The values of a boolean column (nulls as whatever the bitmap holds).
    pub fn bools(&self) -> Vec<bool> {
        let data = self.buffer(0);
        (0..self.len).map(|i| bit(data, self.offset + i)).collect()
    }

    /// The byte strings of a binary, string or fixed-size binary column (borrowed).
    pub fn bytes(&self) -> Result<Vec<&[u8]>, LayoutError> {
        let large = match self.ty {
            ViewType::FixedBinary(size) => {
                let data = self.buffer(0);
                return (0..self.len)
                    .map(|i| {
                        let at = (self.offset + i) * size;
                        data.get(at..at + size).ok_or_else(|| too_short("data"))
                    })
                    .collect();
            }
            ViewType::Binary { large, .. } => large,
            _ => {
                return Err(LayoutError(format!(
                    "not a binary column: {}",
                    self.type_name
                )))
            }
        };
        let offs = self.offsets(large, self.len)?;
        let data = self.buffer(1);
        offs.windows(2)
            .map(|w| {
                data.get(w[0]..w[1])
                    .ok_or_else(|| LayoutError("Arrow offsets out of range".into()))
            })
            .collect()
    }

    /// The `n + 1` offsets of a list or map column (absolute into its whole child).
    pub fn list_offsets(&self) -> Result<Vec<usize>, LayoutError> {
        let large = matches!(self.ty, ViewType::List { large: true });
        self.offsets(large, self.len)
    }

    fn offsets(&self, large: bool, n: usize) -> Result<Vec<usize>, LayoutError> {
        let w = if large { 8 } else { 4 };
        let buf = self.buffer(0);
        (0..=n)
            .map(|i| {
                let at = (self.offset + i) * w;
                let b = buf.get(at..at + w).ok_or_else(|| too_short("offsets"))?;
                let v = if large {
                    i64::from_le_bytes(b.try_into().expect("8 bytes"))
                } else {
                    i64::from(i32::from_le_bytes(b.try_into().expect("4 bytes")))
                };
                usize::try_from(v).map_err(|_| LayoutError("a negative Arrow offset".into()))
            })
            .collect()
    }
}

fn too_short(which: &str) -> LayoutError {
    LayoutError(format!("an Arrow {which} buffer is too short"))
}

/// Bit `i` of an LSB-first bitmap (false past its end).
pub fn bit(bits: &[u8], i: usize) -> bool {
    bits.get(i / 8).is_some_and(|b| b & (1 << (i % 8)) != 0)
}

/// The type of an [`ArrayData`] we build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataType {
    Null,
    Boolean,
    Int32,
    Int64,
    Float32,
    Float64,
    /// Binary or string; `large` past 2 GiB of values (i64 offsets).
    Binary {
        utf8: bool,
        large: bool,
    },
    /// A list: offsets, one child.
    List,
    /// A struct of the named (nullable) fields: one child per field.
    Struct(Vec<String>),
    /// A map of string keys: offsets, one child, the entries struct (`key` not null,
    /// `value` nullable) with no validity of its own.
    Map,
}

/// An Arrow array we built: the type, the rows, the validity bitmap (None: no null), the
/// buffers after it (as [`ColumnView::buffers`]) and the children.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayData {
    pub data_type: DataType,
    pub len: usize,
    pub validity: Option<Vec<u8>>,
    pub buffers: Vec<Vec<u8>>,
    pub children: Vec<ArrayData>,
}

impl ArrayData {
    /// A binary (or, with `utf8`, string) column; `None` rows are nulls.
    pub fn var(items: &[Option<&[u8]>], utf8: bool) -> ArrayData {
        let layout = VarLayout::of(items);
        let mut offsets = vec![0u8; layout.offsets_len()];
        layout.fill_offsets(items, &mut offsets);
        let mut values = vec![0u8; layout.values_len];
        VarLayout::fill_values(items, &mut values);
        ArrayData {
            data_type: DataType::Binary {
                utf8,
                large: layout.large,
            },
            len: items.len(),
            validity: validity(items.iter().map(Option::is_some), items.len()),
            buffers: vec![offsets, values],
            children: Vec::new(),
        }
    }

    /// A fixed-width column of `len` rows of type `data_type`, each value `N` bytes.
    pub fn fixed<T, const N: usize>(
        data_type: DataType,
        len: usize,
        values: impl Iterator<Item = T>,
        to: fn(T) -> [u8; N],
        valid: Option<Vec<u8>>,
    ) -> ArrayData {
        let mut data = vec![0u8; len * N];
        fill_fixed(values, to, &mut data);
        ArrayData {
            data_type,
            len,
            validity: valid,
            buffers: vec![data],
            children: Vec::new(),
        }
    }

    /// A boolean column of `len` rows (bit-packed LSB first).
    pub fn bools(len: usize, values: impl Iterator<Item = bool>, valid: Option<Vec<u8>>) -> Self {
        let mut bits = vec![0u8; len.div_ceil(8)];
        for (i, v) in values.enumerate().take(len) {
            if v {
                bits[i / 8] |= 1 << (i % 8);
            }
        }
        ArrayData {
            data_type: DataType::Boolean,
            len,
            validity: valid,
            buffers: vec![bits],
            children: Vec::new(),
        }
    }

    /// A nested column: `offsets` (i32, `len + 1`) for a list or map, none for a struct.
    pub fn nested(
        data_type: DataType,
        len: usize,
        valid: Option<Vec<u8>>,
        offsets: Option<Vec<i32>>,
        children: Vec<ArrayData>,
    ) -> ArrayData {
        let buffers = offsets
            .map(|o| vec![o.iter().flat_map(|x| x.to_le_bytes()).collect()])
            .unwrap_or_default();
        ArrayData {
            data_type,
            len,
            validity: valid,
            buffers,
            children,
        }
    }

    /// A view of this array (borrowed, for reading it back).
    pub fn view(&self) -> ColumnView<'_> {
        let ty = match &self.data_type {
            DataType::Null => ViewType::Null,
            DataType::Boolean => ViewType::Boolean,
            DataType::Int32 => ViewType::Int {
                bytes: 4,
                signed: true,
            },
            DataType::Int64 => ViewType::Int {
                bytes: 8,
                signed: true,
            },
            DataType::Float32 => ViewType::Float { bytes: 4 },
            DataType::Float64 => ViewType::Float { bytes: 8 },
            DataType::Binary { utf8, large } => ViewType::Binary {
                utf8: *utf8,
                large: *large,
            },
            DataType::List => ViewType::List { large: false },
            DataType::Struct(names) => ViewType::Struct(names.clone()),
            DataType::Map => ViewType::Map,
        };
        // A map's view has the keys and items as children, as pyarrow's MapArray gives them.
        let children = match (&self.data_type, self.children.first()) {
            (DataType::Map, Some(entries)) => entries.children.iter().map(Self::view).collect(),
            _ => self.children.iter().map(Self::view).collect(),
        };
        ColumnView {
            ty,
            type_name: Cow::Owned(format!("{:?}", self.data_type)),
            len: self.len,
            offset: 0,
            validity: self.validity.as_deref().map(Cow::Borrowed),
            buffers: self.buffers.iter().map(|b| Cow::Borrowed(&b[..])).collect(),
            children,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn leaf(ty: ViewType, len: usize, buffers: Vec<Vec<u8>>) -> ColumnView<'static> {
        ColumnView {
            type_name: Cow::Owned(format!("{ty:?}")),
            ty,
            len,
            offset: 0,
            validity: None,
            buffers: buffers.into_iter().map(Cow::Owned).collect(),
            children: Vec::new(),
        }
    }

    #[test]
    fn ints_widen_by_sign_and_honour_the_offset() {
        let v = leaf(
            ViewType::Int {
                bytes: 2,
                signed: true,
            },
            3,
            vec![vec![1, 0, 0xff, 0xff, 2, 0]],
        );
        assert_eq!(v.ints().unwrap(), vec![1, -1, 2]);
        assert_eq!(v.slice(1, 2).ints().unwrap(), vec![-1, 2]);
        let u = leaf(
            ViewType::Int {
                bytes: 2,
                signed: false,
            },
            1,
            vec![vec![0xff, 0xff]],
        );
        assert_eq!(u.ints().unwrap(), vec![65535]);
        assert_eq!(u.floats().unwrap(), vec![65535.0]);
    }

    #[test]
    fn short_buffers_and_wrong_types_are_errors() {
        let v = leaf(
            ViewType::Int {
                bytes: 4,
                signed: true,
            },
            2,
            vec![vec![0; 4]],
        );
        assert_eq!(v.ints().unwrap_err().0, "an Arrow data buffer is too short");
        assert!(v.bytes().unwrap_err().0.starts_with("not a binary column"));
        let b = leaf(
            ViewType::Binary {
                utf8: false,
                large: false,
            },
            1,
            vec![vec![0, 0, 0, 0, 9, 0, 0, 0], vec![1]],
        );
        assert_eq!(b.bytes().unwrap_err().0, "Arrow offsets out of range");
    }

    #[test]
    fn a_struct_slice_cuts_its_children_and_validity() {
        let child = leaf(ViewType::Boolean, 3, vec![vec![0b101]]);
        let s = ColumnView {
            ty: ViewType::Struct(vec!["b".into()]),
            type_name: "struct<b: bool>".into(),
            len: 3,
            offset: 0,
            validity: Some(Cow::Owned(vec![0b011])),
            buffers: Vec::new(),
            children: vec![child],
        };
        let t = s.slice(1, 2);
        assert!(t.is_valid(0));
        assert!(!t.is_valid(1));
        assert_eq!(t.children[0].bools(), vec![false, true]);
    }

    proptest! {
        #[test]
        fn binary_views_read_back_what_was_laid_out(rows in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..12), 0..30), from in 0usize..30) {
            let items: Vec<Option<&[u8]>> = rows.iter().map(|r| Some(&r[..])).collect();
            let layout = crate::arrow::VarLayout::of(&items);
            let mut offsets = vec![0u8; layout.offsets_len()];
            let mut values = vec![0u8; layout.values_len];
            layout.fill_offsets(&items, &mut offsets);
            crate::arrow::VarLayout::fill_values(&items, &mut values);
            let v = leaf(ViewType::Binary { utf8: false, large: false }, rows.len(),
                vec![offsets, values]);
            let got = v.bytes().unwrap();
            prop_assert_eq!(got.len(), rows.len());
            for (g, r) in got.iter().zip(&rows) {
                prop_assert_eq!(*g, &r[..]);
            }
            let from = from.min(rows.len());
            let cut = v.slice(from, rows.len() - from);
            prop_assert_eq!(cut.bytes().unwrap().len(), rows.len() - from);
        }
    }
}
