//! Bundles: the unit TANK stores and ships (a header, then a message set, optionally
//! Snappy-compressed as one raw block), and consume chunks (bundles back to back, each
//! behind a varint length, the last one possibly cut short by the broker).
//!
//! Uncompressed messages decode to slices of the chunk (no copy); a compressed set is
//! decompressed once into a buffer the messages then slice. A decompressed size claimed by
//! the block is checked against a bound before anything is allocated.

use bytes::{BufMut, Bytes, BytesMut};

use super::wire::{put_varint, varint_len, Cursor};
use super::CodecError;

const CODEC_MASK: u8 = 0b11;
const SPARSE: u8 = 1 << 6;
const EXTRA_FLAGS: u8 = 1 << 7;

const HAVE_KEY: u8 = 0x1;
const USE_LAST_TS: u8 = 0x2;
const SEQ_PREV_PLUS_ONE: u8 = 0x4;

/// Largest decompressed message set accepted (and at most this many times the compressed
/// size), so a hostile block cannot make us allocate gigabytes.
pub const MAX_DECOMPRESSED: usize = 256 * 1024 * 1024;
const MAX_RATIO: usize = 256;

/// How a bundle's message set is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Snappy,
}

/// One message to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutMsg<'a> {
    pub key: Option<&'a [u8]>,
    /// Milliseconds by convention.
    pub ts: u64,
    pub value: &'a [u8],
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub seq: u64,
    pub ts: u64,
    pub key: Option<Bytes>,
    pub value: Bytes,
}

/// One message: flags (with `extra` flags), a sparse seq delta when given, the timestamp
/// unless it repeats the last explicit one, the key, the content.
fn put_message(
    out: &mut impl BufMut,
    m: &OutMsg<'_>,
    extra: u8,
    delta: Option<u32>,
    last_ts: &mut Option<u64>,
) -> Result<(), CodecError> {
    let same_ts = *last_ts == Some(m.ts);
    let mut flags = extra;
    if m.key.is_some() {
        flags |= HAVE_KEY;
    }
    if same_ts {
        flags |= USE_LAST_TS;
    }
    out.put_u8(flags);
    if let Some(d) = delta {
        put_varint(out, d);
    }
    if !same_ts {
        out.put_u64_le(m.ts);
        *last_ts = Some(m.ts);
    }
    if let Some(k) = m.key {
        let n = u8::try_from(k.len())
            .map_err(|_| CodecError::InvalidArgument("a key is at most 255 bytes"))?;
        out.put_u8(n);
        out.put_slice(k);
    }
    let n = u32::try_from(m.value.len()).map_err(|_| CodecError::TooLarge {
        what: "message",
        len: m.value.len() as u64,
        limit: u64::from(u32::MAX),
    })?;
    put_varint(out, n);
    out.put_slice(m.value);
    Ok(())
}

fn write_messages(out: &mut impl BufMut, msgs: &[OutMsg<'_>]) -> Result<(), CodecError> {
    let mut last_ts: Option<u64> = None;
    for m in msgs {
        put_message(out, m, 0, None, &mut last_ts)?;
    }
    Ok(())
}

/// Append `set` Snappy-compressed (raw block format).
fn put_snappy(out: &mut BytesMut, set: &[u8]) -> Result<(), CodecError> {
    let at = out.len();
    out.resize(at + snap::raw::max_compress_len(set.len()), 0);
    let n = snap::raw::Encoder::new()
        .compress(set, &mut out[at..])
        .map_err(|_| CodecError::InvalidArgument("message set too large for Snappy"))?;
    out.truncate(at + n);
    Ok(())
}

fn header_flags(codec: Compression, count: usize) -> u8 {
    let c = match codec {
        Compression::None => 0,
        Compression::Snappy => 1,
    };
    let in_flags = if (1..=15).contains(&count) {
        count as u8
    } else {
        0
    };
    c | (in_flags << 2)
}

fn put_count(out: &mut BytesMut, count: usize) -> Result<(), CodecError> {
    if !(1..=15).contains(&count) {
        let n = u32::try_from(count)
            .map_err(|_| CodecError::InvalidArgument("too many messages in one bundle"))?;
        put_varint(out, n);
    }
    Ok(())
}

fn put_set(
    out: &mut BytesMut,
    msgs: &[OutMsg<'_>],
    compression: Compression,
    scratch: &mut Vec<u8>,
) -> Result<(), CodecError> {
    match compression {
        Compression::None => write_messages(out, msgs),
        Compression::Snappy => {
            scratch.clear();
            write_messages(scratch, msgs)?;
            put_snappy(out, scratch)
        }
    }
}

/// The exact size of the uncompressed bundle [`encode_bundle`] makes of `msgs`, so a caller
/// can write the length prefix first and encode the bundle in place (no second copy).
pub fn plain_bundle_len(msgs: &[OutMsg<'_>]) -> usize {
    let count = msgs.len();
    let mut n = 1 + if (1..=15).contains(&count) {
        0
    } else {
        varint_len(count as u32)
    };
    let mut last_ts: Option<u64> = None;
    for m in msgs {
        n += 1;
        if last_ts != Some(m.ts) {
            n += 8;
            last_ts = Some(m.ts);
        }
        if let Some(k) = m.key {
            n += 1 + k.len();
        }
        n += varint_len(m.value.len() as u32) + m.value.len();
    }
    n
}

/// Append one bundle (without its varint length prefix). `scratch` is reused between calls
/// for the uncompressed set of a compressed bundle.
pub fn encode_bundle(
    out: &mut BytesMut,
    msgs: &[OutMsg<'_>],
    compression: Compression,
    scratch: &mut Vec<u8>,
) -> Result<(), CodecError> {
    if msgs.is_empty() {
        return Err(CodecError::InvalidArgument(
            "a bundle holds at least one message",
        ));
    }
    out.put_u8(header_flags(compression, msgs.len()));
    put_count(out, msgs.len())?;
    put_set(out, msgs, compression, scratch)
}

/// A sparse bundle (explicit sequence numbers, strictly increasing), as mirroring tools
/// produce with ProduceWithSeqnum. Clients never need it; tests and the double do.
pub fn encode_sparse_bundle(
    out: &mut BytesMut,
    msgs: &[(u64, OutMsg<'_>)],
    compression: Compression,
    scratch: &mut Vec<u8>,
) -> Result<(), CodecError> {
    let (Some(first), Some(last)) = (msgs.first(), msgs.last()) else {
        return Err(CodecError::InvalidArgument(
            "a bundle holds at least one message",
        ));
    };
    if msgs.windows(2).any(|w| w[1].0 <= w[0].0) {
        return Err(CodecError::InvalidArgument("sparse seqs must increase"));
    }
    out.put_u8(header_flags(compression, msgs.len()) | SPARSE);
    put_count(out, msgs.len())?;
    out.put_u64_le(first.0);
    if msgs.len() != 1 {
        let gap = u32::try_from(last.0 - first.0 - 1)
            .map_err(|_| CodecError::InvalidArgument("sparse seq range too wide"))?;
        put_varint(out, gap);
    }
    // Messages with their per-message sequence info, then compressed as one set if asked.
    scratch.clear();
    let mut last_ts: Option<u64> = None;
    for (i, (seq, m)) in msgs.iter().enumerate() {
        let middle = i != 0 && i != msgs.len() - 1;
        let prev = if i > 0 { msgs[i - 1].0 } else { 0 };
        let (extra, delta) = match (middle, *seq == prev + 1) {
            (true, true) => (SEQ_PREV_PLUS_ONE, None),
            (true, false) => (
                0,
                Some(
                    u32::try_from(seq - prev - 1)
                        .map_err(|_| CodecError::InvalidArgument("sparse seq gap too wide"))?,
                ),
            ),
            (false, _) => (0, None),
        };
        put_message(scratch, m, extra, delta, &mut last_ts)?;
    }
    match compression {
        Compression::None => out.put_slice(scratch),
        Compression::Snappy => put_snappy(out, scratch)?,
    }
    Ok(())
}

/// A bundle's header, as far as the seqs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleHeader {
    pub count: u32,
    pub compression: Compression,
    /// `(first, last)` seqs of a sparse bundle.
    pub sparse: Option<(u64, u64)>,
    /// Bytes of the header (the message set starts here).
    pub len: usize,
}

pub fn decode_bundle_header(bundle: &[u8]) -> Result<BundleHeader, CodecError> {
    let mut c = Cursor::new(bundle);
    let flags = c.u8()?;
    if flags & EXTRA_FLAGS != 0 {
        return Err(CodecError::Unsupported("bundle extra flags"));
    }
    let compression = match flags & CODEC_MASK {
        0 => Compression::None,
        1 => Compression::Snappy,
        _ => return Err(CodecError::Unsupported("bundle codec other than Snappy")),
    };
    let in_flags = u32::from((flags >> 2) & 0x0f);
    let count = if in_flags == 0 { c.varint()? } else { in_flags };
    let sparse = if flags & SPARSE != 0 {
        let first = c.u64()?;
        let last = if count == 1 {
            first
        } else {
            first
                .checked_add(u64::from(c.varint()?))
                .and_then(|v| v.checked_add(1))
                .ok_or(CodecError::Malformed("sparse seq overflow"))?
        };
        Some((first, last))
    } else {
        None
    };
    Ok(BundleHeader {
        count,
        compression,
        sparse,
        len: c.pos(),
    })
}

fn decompress(set: &[u8]) -> Result<Bytes, CodecError> {
    let claimed = snap::raw::decompress_len(set)
        .map_err(|_| CodecError::Malformed("bad Snappy block header"))?;
    let limit = MAX_DECOMPRESSED.min(set.len().saturating_mul(MAX_RATIO).max(64));
    if claimed > limit {
        return Err(CodecError::TooLarge {
            what: "decompressed bundle",
            len: claimed as u64,
            limit: limit as u64,
        });
    }
    let mut out = vec![0u8; claimed];
    let n = snap::raw::Decoder::new()
        .decompress(set, &mut out)
        .map_err(|_| CodecError::Malformed("corrupt Snappy block"))?;
    out.truncate(n);
    Ok(Bytes::from(out))
}

/// Decode every message of one whole bundle; non-sparse bundles number their messages from
/// `base_seq`. Returns the seq after the bundle's last message.
pub fn decode_bundle(
    bundle: &Bytes,
    base_seq: u64,
    out: &mut Vec<Message>,
) -> Result<u64, CodecError> {
    decode_bundle_filtered(bundle, base_seq, |_| true, out)
}

fn decode_bundle_filtered(
    bundle: &Bytes,
    base_seq: u64,
    keep: impl Fn(u64) -> bool,
    out: &mut Vec<Message>,
) -> Result<u64, CodecError> {
    let h = decode_bundle_header(bundle)?;
    let set = match h.compression {
        Compression::None => bundle.slice(h.len..),
        Compression::Snappy => decompress(&bundle[h.len..])?,
    };
    let mut c = Cursor::new(&set);
    let mut ts: Option<u64> = None;
    let mut seq = match h.sparse {
        Some((first, _)) => first,
        None => base_seq,
    };
    for i in 0..h.count {
        if c.is_empty() {
            return Err(CodecError::Malformed(
                "bundle holds fewer messages than its count",
            ));
        }
        let flags = c.u8()?;
        if let Some((first, last)) = h.sparse {
            seq = if i == 0 {
                first
            } else if i == h.count - 1 {
                last
            } else if flags & SEQ_PREV_PLUS_ONE != 0 {
                seq.checked_add(1)
                    .ok_or(CodecError::Malformed("seq overflow"))?
            } else {
                let d = u64::from(c.varint()?);
                seq.checked_add(d + 1)
                    .ok_or(CodecError::Malformed("seq overflow"))?
            };
            if i > 0 && i < h.count - 1 && seq >= last {
                return Err(CodecError::Malformed(
                    "sparse seqs past the bundle's last seq",
                ));
            }
        } else if i > 0 {
            seq = seq
                .checked_add(1)
                .ok_or(CodecError::Malformed("seq overflow"))?;
        }
        if flags & USE_LAST_TS == 0 {
            ts = Some(c.u64()?);
        }
        let msg_ts = ts.ok_or(CodecError::Malformed(
            "'use last timestamp' with no timestamp",
        ))?;
        let key = if flags & HAVE_KEY != 0 {
            let n = c.u8()? as usize;
            let at = c.pos();
            c.take(n)?;
            Some((at, n))
        } else {
            None
        };
        let n = c.varint()? as usize;
        let start = c.pos();
        c.take(n)?;
        if keep(seq) {
            let key = key.map(|(at, n)| set.slice(at..at + n));
            out.push(Message {
                seq,
                ts: msg_ts,
                key,
                value: set.slice(start..start + n),
            });
        }
    }
    match h.sparse {
        Some((_, last)) => Ok(last.saturating_add(1)),
        None => Ok(seq.saturating_add(1)),
    }
}

/// The outcome of decoding one partition's chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkDecode {
    /// The seq to ask for next.
    pub next_seq: u64,
    /// When no message could be delivered because the first bundle needed was cut short:
    /// its whole size (varint prefix included), so the caller can ask for that much.
    pub incomplete_bundle_len: Option<usize>,
    /// Whole bundles found in the chunk.
    pub bundles: usize,
}

/// Decode a consume chunk: keep messages with `requested <= seq <= high_water` (no lower
/// bound when `requested` is 0 or u64::MAX, TANK's "earliest" and "tail").
pub fn decode_chunk(
    chunk: &Bytes,
    base_seq: Option<u64>,
    requested: u64,
    high_water: u64,
    out: &mut Vec<Message>,
) -> Result<ChunkDecode, CodecError> {
    let from = if requested == u64::MAX { 0 } else { requested };
    let mut c = Cursor::new(chunk);
    let mut base = base_seq;
    let mut end_seen: Option<u64> = None;
    let mut bundles = 0;
    let mut incomplete = None;
    let before = out.len();
    while !c.is_empty() {
        let start = c.pos();
        let len = match c.varint() {
            Ok(n) => n as usize,
            Err(CodecError::Truncated) => {
                // Cut inside the length itself: the bundle is at least one byte longer than
                // what is here, which is all a caller growing its fetch size needs to know.
                if out.len() == before {
                    incomplete = Some(chunk.len() - start + 1);
                }
                break;
            }
            Err(e) => return Err(e),
        };
        if c.remaining() < len {
            if out.len() == before {
                incomplete = Some(c.pos() - start + len);
            }
            break;
        }
        let at = c.pos();
        c.take(len)?;
        let bundle = chunk.slice(at..at + len);
        let h = decode_bundle_header(&bundle)?;
        let first = match (h.sparse, base) {
            (Some((f, _)), _) => f,
            (None, Some(b)) => b,
            (None, None) => {
                return Err(CodecError::Malformed(
                    "a non-sparse bundle with no base seq",
                ))
            }
        };
        let last = match h.sparse {
            Some((_, l)) => l,
            None => first
                .checked_add(u64::from(h.count.max(1)) - 1)
                .ok_or(CodecError::Malformed("seq overflow"))?,
        };
        bundles += 1;
        if base.is_some_and(|b| first < b) || last < first {
            return Err(CodecError::Malformed(
                "sequence numbers go backwards in a chunk",
            ));
        }
        if last >= from && first <= high_water {
            decode_bundle_filtered(&bundle, first, |s| s >= from && s <= high_water, out)?;
        }
        end_seen = Some(last.min(high_water).saturating_add(1));
        base = last.checked_add(1);
        if last >= high_water {
            break;
        }
    }
    let delivered_end = out[before..].last().map(|m| m.seq.saturating_add(1));
    let next_seq = match (delivered_end, end_seen) {
        (Some(d), _) => d,
        (None, Some(e)) if requested != u64::MAX => e.max(from),
        (None, _) if requested == u64::MAX => high_water.saturating_add(1),
        (None, _) => requested,
    };
    Ok(ChunkDecode {
        next_seq,
        incomplete_bundle_len: incomplete,
        bundles,
    })
}
