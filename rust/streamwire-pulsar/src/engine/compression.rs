//! Payload compression with the exact wire formats of the official Pulsar clients.
//!
//! `MessageMetadata.compression` takes the values of `CompressionType` in PulsarApi.proto
//! (NONE = 0, LZ4 = 1, ZLIB = 2, ZSTD = 3, SNAPPY = 4) and `uncompressed_size` carries the
//! original length, which every codec below relies on. Formats, as the Java and C++ clients
//! use them:
//!
//! * LZ4: a raw LZ4 *block*, no frame header (C++ `LZ4_compress_default`, Java lz4 block
//!   compressor); decoding needs the uncompressed size from the metadata.
//! * ZLIB: deflate in a zlib wrapper (C++ `compress()` / `inflateInit2(MAX_WBITS)`, Java
//!   `Deflater` defaults), default level.
//! * ZSTD: a standard zstd frame, level 3 (Java `ZSTD_COMPRESSION_LEVEL = 3`).
//! * SNAPPY: raw snappy block, not the framed/stream format (C++ `snappy::Compress`).
//!
//! Why the size limit on decompression: `uncompressed_size` comes off the wire, and
//! allocating whatever a header says would let one corrupt message exhaust memory. Where a
//! format bounds how far data can expand (LZ4, zlib, Snappy), a claim beyond what the input
//! can hold is refused before anything is allocated. Every decoder also checks that the
//! output is exactly `uncompressed_size` bytes.

use std::fmt;
use std::io::{Read, Write};

use bytes::Bytes;

/// Largest `uncompressed_size` [`decompress`] accepts: 64 MiB, well above any batch the
/// official clients build (the broker caps the compressed entry at 5 MB by default).
pub const DEFAULT_MAX_UNCOMPRESSED_SIZE: usize = 64 * 1024 * 1024;

/// zstd level used by the Java client.
pub const ZSTD_LEVEL: i32 = 3;

/// A compression codec, numbered as `CompressionType` on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Codec {
    /// No compression.
    #[default]
    None = 0,
    /// LZ4 block format.
    Lz4 = 1,
    /// zlib-wrapped deflate.
    Zlib = 2,
    /// zstd frame.
    Zstd = 3,
    /// Raw snappy.
    Snappy = 4,
}

impl Codec {
    /// Every codec, in wire order.
    pub const ALL: [Codec; 5] = [
        Codec::None,
        Codec::Lz4,
        Codec::Zlib,
        Codec::Zstd,
        Codec::Snappy,
    ];

    /// The codec for a `CompressionType` value, if known.
    pub fn from_wire(value: i32) -> Option<Codec> {
        Self::ALL.get(usize::try_from(value).ok()?).copied()
    }

    /// The `CompressionType` value.
    pub fn to_wire(self) -> i32 {
        self as i32
    }
}

/// Compressing or decompressing failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompressionError {
    /// `uncompressed_size` is above the allowed maximum.
    TooLarge {
        /// Claimed size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The data decoded to a different length than `uncompressed_size`.
    SizeMismatch {
        /// Claimed size.
        expected: usize,
        /// Actual size (or a lower bound when the output overflowed the claim).
        actual: usize,
    },
    /// The compressed data is corrupt.
    Corrupt {
        /// The codec.
        codec: Codec,
        /// The decoder's message.
        reason: String,
    },
    /// The input is too large for the codec to compress.
    Compress {
        /// The codec.
        codec: Codec,
        /// The encoder's message.
        reason: String,
    },
}

impl fmt::Display for CompressionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { size, max } => write!(
                f,
                "uncompressed size {size} exceeds the limit of {max} bytes"
            ),
            Self::SizeMismatch { expected, actual } => write!(
                f,
                "decompressed to {actual} bytes, metadata says {expected}"
            ),
            Self::Corrupt { codec, reason } => write!(f, "corrupt {codec:?} data: {reason}"),
            Self::Compress { codec, reason } => write!(f, "{codec:?} compression failed: {reason}"),
        }
    }
}

impl std::error::Error for CompressionError {}

fn corrupt(codec: Codec, reason: impl fmt::Display) -> CompressionError {
    CompressionError::Corrupt {
        codec,
        reason: reason.to_string(),
    }
}

/// Append the compressed form of `input` to `out`.
pub fn compress(codec: Codec, input: &[u8], out: &mut Vec<u8>) -> Result<(), CompressionError> {
    let compress_err = |reason: &dyn fmt::Display| CompressionError::Compress {
        codec,
        reason: reason.to_string(),
    };
    match codec {
        Codec::None => out.extend_from_slice(input),
        Codec::Lz4 => {
            let start = out.len();
            out.resize(
                start + lz4_flex::block::get_maximum_output_size(input.len()),
                0,
            );
            let written = lz4_flex::block::compress_into(input, &mut out[start..])
                .map_err(|e| compress_err(&e))?;
            out.truncate(start + written);
        }
        Codec::Zlib => {
            let mut encoder = flate2::write::ZlibEncoder::new(out, flate2::Compression::default());
            encoder.write_all(input).map_err(|e| compress_err(&e))?;
            encoder.finish().map_err(|e| compress_err(&e))?;
        }
        Codec::Zstd => {
            let start = out.len();
            out.resize(start + zstd::zstd_safe::compress_bound(input.len()), 0);
            let written = zstd::bulk::compress_to_buffer(input, &mut out[start..], ZSTD_LEVEL)
                .map_err(|e| compress_err(&e))?;
            out.truncate(start + written);
        }
        Codec::Snappy => {
            let start = out.len();
            out.resize(start + snap::raw::max_compress_len(input.len()), 0);
            let written = snap::raw::Encoder::new()
                .compress(input, &mut out[start..])
                .map_err(|e| compress_err(&e))?;
            out.truncate(start + written);
        }
    }
    Ok(())
}

/// An upper bound on output bytes per input byte for valid data, where the format has a
/// small one; `uncompressed_size` comes off the wire and sizes an allocation.
///
/// * LZ4 block: literals are copied one for one; a match costs a token and a 2-byte offset
///   and yields 4 + 15 bytes, plus 255 per extra length byte: under 255 per input byte
///   (256 leaves room).
/// * Deflate (zlib): at most 258 bytes per back-reference of at least 2 bits, the well-known
///   limit of 1032:1.
/// * Snappy: a copy yields at most 64 bytes and takes at least 3 (tag and 2-byte offset), or
///   11 from 2 (1-byte offset): under 22 per input byte. 32 leaves room.
/// * zstd: none useful (an RLE block of 4 bytes yields up to 128 KiB); `bulk::decompress`
///   only reserves capacity, bounded by the size limit.
fn max_expansion(codec: Codec) -> Option<usize> {
    match codec {
        Codec::Lz4 => Some(256),
        Codec::Zlib => Some(1032),
        Codec::Snappy => Some(32),
        Codec::None | Codec::Zstd => None,
    }
}

/// Decompress `input` to exactly `uncompressed_size` bytes, refusing sizes above
/// [`DEFAULT_MAX_UNCOMPRESSED_SIZE`].
pub fn decompress(
    codec: Codec,
    input: &[u8],
    uncompressed_size: usize,
) -> Result<Bytes, CompressionError> {
    decompress_with_limit(
        codec,
        input,
        uncompressed_size,
        DEFAULT_MAX_UNCOMPRESSED_SIZE,
    )
}

/// [`decompress`] with an explicit limit on `uncompressed_size`.
pub fn decompress_with_limit(
    codec: Codec,
    input: &[u8],
    uncompressed_size: usize,
    max_uncompressed_size: usize,
) -> Result<Bytes, CompressionError> {
    if uncompressed_size > max_uncompressed_size {
        return Err(CompressionError::TooLarge {
            size: uncompressed_size,
            max: max_uncompressed_size,
        });
    }
    // A small input cannot hold a large output: refuse such claims before allocating them.
    if let Some(ratio) = max_expansion(codec) {
        if uncompressed_size > input.len().saturating_mul(ratio) {
            return Err(corrupt(
                codec,
                format!(
                    "{} bytes cannot decompress to {uncompressed_size}",
                    input.len()
                ),
            ));
        }
    }
    let check_len = |actual: usize| {
        if actual == uncompressed_size {
            Ok(())
        } else {
            Err(CompressionError::SizeMismatch {
                expected: uncompressed_size,
                actual,
            })
        }
    };
    let out = match codec {
        Codec::None => {
            check_len(input.len())?;
            input.to_vec()
        }
        Codec::Lz4 => {
            let mut out = vec![0u8; uncompressed_size];
            let n =
                lz4_flex::block::decompress_into(input, &mut out).map_err(|e| corrupt(codec, e))?;
            check_len(n)?;
            out
        }
        Codec::Zlib => {
            // Read at most one byte more than claimed, to detect a lie without unbounded
            // growth; capacity comes from the (already bounded) claim.
            let mut out = Vec::with_capacity(uncompressed_size);
            let limit = u64::try_from(uncompressed_size)
                .unwrap_or(u64::MAX)
                .saturating_add(1);
            flate2::read::ZlibDecoder::new(input)
                .take(limit)
                .read_to_end(&mut out)
                .map_err(|e| corrupt(codec, e))?;
            check_len(out.len())?;
            out
        }
        Codec::Zstd => {
            // `capacity` bounds the output: a frame that decodes to more is an error.
            let out =
                zstd::bulk::decompress(input, uncompressed_size).map_err(|e| corrupt(codec, e))?;
            check_len(out.len())?;
            out
        }
        Codec::Snappy => {
            let claimed = snap::raw::decompress_len(input).map_err(|e| corrupt(codec, e))?;
            check_len(claimed)?;
            let mut out = vec![0u8; uncompressed_size];
            let n = snap::raw::Decoder::new()
                .decompress(input, &mut out)
                .map_err(|e| corrupt(codec, e))?;
            check_len(n)?;
            out
        }
    };
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(codec: Codec, data: &[u8]) -> Vec<u8> {
        let mut out = b"prefix".to_vec();
        compress(codec, data, &mut out).unwrap();
        assert_eq!(&out[..6], b"prefix", "compress appends");
        let compressed = &out[6..];
        let back = decompress(codec, compressed, data.len()).unwrap();
        assert_eq!(&back[..], data);
        compressed.to_vec()
    }

    #[test]
    fn wire_values_match_pulsar_api_proto() {
        assert_eq!(Codec::ALL.map(Codec::to_wire), [0, 1, 2, 3, 4]);
        for v in 0..5 {
            assert_eq!(Codec::from_wire(v).unwrap().to_wire(), v);
        }
        assert_eq!(Codec::from_wire(5), None);
        assert_eq!(Codec::from_wire(-1), None);
    }

    #[test]
    fn every_codec_round_trips_including_empty() {
        let text = b"streamwire ".repeat(500);
        for codec in Codec::ALL {
            round_trip(codec, b"");
            round_trip(codec, b"x");
            let c = round_trip(codec, &text);
            if codec != Codec::None {
                assert!(c.len() < text.len() / 4, "{codec:?} compresses text");
            }
        }
    }

    #[test]
    fn formats_are_the_unframed_ones() {
        let data = b"hello hello hello hello";
        // zlib header: CMF 0x78 (deflate, 32K window), default level FLG 0x9c.
        let z = round_trip(Codec::Zlib, data);
        assert_eq!(&z[..2], &[0x78, 0x9c]);
        // zstd frame magic 0xFD2FB528 little-endian.
        let zs = round_trip(Codec::Zstd, data);
        assert_eq!(&zs[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
        // Raw snappy starts with the uncompressed length as a varint (23), not the
        // framed format's stream identifier chunk (0xff 06 00 00 "sNaPpY").
        let s = round_trip(Codec::Snappy, data);
        assert_eq!(s[0], 23);
        // Raw LZ4 block, not a frame (frame magic would be 04 22 4d 18): first byte is a
        // sequence token.
        let l = round_trip(Codec::Lz4, data);
        assert_ne!(&l[..4], &[0x04, 0x22, 0x4d, 0x18]);
    }

    #[test]
    fn decodes_hand_made_lz4_block() {
        // Token 0x50: 5 literals, no match (last sequence of a block).
        assert_eq!(
            &decompress(Codec::Lz4, b"\x50hello", 5).unwrap()[..],
            b"hello"
        );
    }

    #[test]
    fn refuses_sizes_over_the_limit_before_allocating() {
        for codec in Codec::ALL {
            assert_eq!(
                decompress(codec, b"", DEFAULT_MAX_UNCOMPRESSED_SIZE + 1),
                Err(CompressionError::TooLarge {
                    size: DEFAULT_MAX_UNCOMPRESSED_SIZE + 1,
                    max: DEFAULT_MAX_UNCOMPRESSED_SIZE
                })
            );
            assert!(matches!(
                decompress_with_limit(codec, b"", 11, 10),
                Err(CompressionError::TooLarge { .. })
            ));
        }
    }

    #[test]
    fn claims_beyond_what_the_input_can_hold_are_refused_before_allocating() {
        for codec in [Codec::Lz4, Codec::Zlib, Codec::Snappy] {
            let r = decompress(codec, b"xy", DEFAULT_MAX_UNCOMPRESSED_SIZE);
            assert!(
                matches!(r, Err(CompressionError::Corrupt { .. })),
                "{codec:?}"
            );
        }
        // The most compressible input still decodes: the bounds are above the real ratios.
        let zeros = vec![0u8; 1 << 20];
        for codec in Codec::ALL {
            let mut c = Vec::new();
            compress(codec, &zeros, &mut c).unwrap();
            assert_eq!(
                decompress(codec, &c, zeros.len()).unwrap(),
                zeros,
                "{codec:?}"
            );
            if let Some(ratio) = max_expansion(codec) {
                assert!(c.len() * ratio >= zeros.len(), "{codec:?}");
            }
        }
    }

    #[test]
    fn wrong_uncompressed_size_is_an_error() {
        let data = b"some data some data some data".to_vec();
        for codec in Codec::ALL {
            let mut c = Vec::new();
            compress(codec, &data, &mut c).unwrap();
            assert!(
                decompress(codec, &c, data.len() - 1).is_err(),
                "{codec:?} short"
            );
            assert!(
                decompress(codec, &c, data.len() + 1).is_err(),
                "{codec:?} long"
            );
        }
    }

    #[test]
    fn garbage_fails_cleanly() {
        let garbage = [0xffu8, 0x00, 0x13, 0x37, 0xde, 0xad, 0xbe, 0xef];
        for codec in Codec::ALL.into_iter().skip(1) {
            assert!(decompress(codec, &garbage, 100).is_err(), "{codec:?}");
        }
    }

    fn codec() -> impl Strategy<Value = Codec> {
        prop::sample::select(Codec::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn round_trip_any(codec in codec(), data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let mut c = Vec::new();
            compress(codec, &data, &mut c).unwrap();
            prop_assert_eq!(&decompress(codec, &c, data.len()).unwrap()[..], &data[..]);
        }

        #[test]
        fn round_trip_compressible(codec in codec(), unit in proptest::collection::vec(any::<u8>(), 1..16), reps in 0usize..500) {
            let data = unit.repeat(reps);
            let mut c = Vec::new();
            compress(codec, &data, &mut c).unwrap();
            prop_assert_eq!(&decompress(codec, &c, data.len()).unwrap()[..], &data[..]);
        }

        #[test]
        fn garbage_never_panics(codec in codec(), data in proptest::collection::vec(any::<u8>(), 0..512), size in 0usize..100_000) {
            if let Ok(out) = decompress(codec, &data, size) {
                prop_assert_eq!(out.len(), size);
            }
        }
    }
}
