//! Fuzzing support shared by the cargo-fuzz targets in `fuzz/fuzz_targets/` (nightly) and
//! their deterministic stand-ins in `tests/` (stable toolchain), so both exercise exactly
//! the same checks. Not a supported API.
//!
//! * [`fuzz_frames`]: the frame decoder (`frame_decoder`, `tests/fuzz_frames.rs`);
//! * [`fuzz_entry`]: a MESSAGE payload unpacked into messages: checksum, decompression,
//!   batch parsing (`entry_unpack`, `tests/fuzz_entry.rs`);
//! * [`fuzz_txn_response`]: transaction answers (`txn_response`, `tests/fuzz_txn.rs`).
//! * [`fuzz_schema`]: Avro binary / JSON payload decoding by a record schema
//!   (`schema_decode`, `tests/fuzz_schema.rs`).
//! * [`fuzz_protobuf`]: PROTOBUF_NATIVE payload decoding (`protobuf_decode`,
//!   `tests/fuzz_protobuf.rs`).
//! * [`fuzz_crypto`]: decryption of forged metadata and damaged sealed payloads
//!   (`crypto_decrypt`, `tests/fuzz_crypto.rs`).

mod crypto;
mod entry;
mod protobuf;
mod schema;
mod txn;

pub use crypto::{fuzz_crypto, SAMPLE_BODY};
pub use protobuf::{fuzz_protobuf, fuzz_protobuf_with, sample_schema, sample_set};
pub use schema::fuzz_schema;
pub use txn::{fuzz_txn_response, valid_txn_response};

pub use entry::{
    entry_input, fuzz_entry, unpack_checked, valid_batch, EntryHeader, ENTRY_HEADER_LEN,
    FLAG_APP_ACKED, FLAG_COMPRESS, FLAG_CORRUPT_FRAME, FLAG_DAMAGE_PAYLOAD, FLAG_HIGH_SEQUENCE,
    FLAG_INCLUSIVE, FLAG_START_FILTER,
};

use bytes::BytesMut;

use crate::protocol::{
    commands, encode_command, encode_payload_command_parts, pb, ChecksumStatus, Frame,
    FrameDecoder, ProtocolError,
};

/// Frame limits the fuzzer chooses from (first input byte): small ones so `FrameTooLarge`
/// and partial frames are reached often.
const MAX_SIZES: [usize; 4] = [64, 512, 4096, 65536];

/// Decode `data` as a frame stream in one go and again in pieces, and check that:
/// * nothing panics;
/// * the outcome does not depend on how the stream was chunked;
/// * the read buffer never grows far beyond the frame limit;
/// * a frame that decoded cleanly re-encodes to a frame that decodes the same.
///
/// Layout of `data`: byte 0 picks the frame limit, bytes 1..9 seed the chunk sizes, the
/// rest is the stream.
pub fn fuzz_frames(data: &[u8]) {
    if data.len() < 9 {
        return;
    }
    let max = MAX_SIZES[(data[0] & 3) as usize];
    let mut seed = [0u8; 8];
    seed.copy_from_slice(&data[1..9]);
    let stream = &data[9..];

    let whole = decode_all(stream, max, &mut SplitMix64(u64::MAX), usize::MAX);
    let chunked = decode_all(
        stream,
        max,
        &mut SplitMix64(u64::from_le_bytes(seed)),
        1 + (data[0] as usize >> 2),
    );
    // Debug text rather than PartialEq: a NaN in a decoded double must not count as a
    // difference.
    assert_eq!(
        format!("{whole:?}"),
        format!("{chunked:?}"),
        "outcome depends on chunking"
    );

    for frame in whole.frames {
        check_reencode(&frame);
    }
}

// Compared through its Debug text, which the dead-code lint does not count as a read.
#[allow(dead_code)]
#[derive(Debug)]
struct Outcome {
    frames: Vec<Frame>,
    error: Option<ProtocolError>,
}

/// Feed `stream` to a decoder in chunks of 1..=`max_chunk` bytes (drawn from `rng`),
/// decoding after every chunk the way a connection does after every read.
fn decode_all(stream: &[u8], max: usize, rng: &mut SplitMix64, max_chunk: usize) -> Outcome {
    let mut decoder = FrameDecoder::new(max);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut fed = 0;
    loop {
        let step = if max_chunk == usize::MAX {
            stream.len() - fed
        } else {
            1 + (rng.next_u64() as usize % max_chunk)
        };
        let end = (fed + step).min(stream.len());
        buf.extend_from_slice(&stream[fed..end]);
        fed = end;
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(error) => {
                    return Outcome {
                        frames,
                        error: Some(error),
                    }
                }
            }
        }
        // The decoder may reserve room for one frame; more would mean a size field was
        // trusted beyond the limit.
        assert!(
            buf.capacity() <= 2 * (max + 8) + 2 * step.min(stream.len()) + 64,
            "buffer capacity {} for frame limit {max}",
            buf.capacity()
        );
        if fed == stream.len() {
            return Outcome {
                frames,
                error: None,
            };
        }
    }
}

fn check_reencode(frame: &Frame) {
    let mut out = BytesMut::new();
    match &frame.payload {
        None => encode_command(&frame.command, &mut out),
        Some(p) => {
            let Ok(metadata) = &p.metadata else { return };
            if matches!(p.checksum, ChecksumStatus::Mismatch { .. }) {
                return;
            }
            encode_payload_command_parts(
                &frame.command,
                metadata,
                &[&p.payload],
                &mut out,
                usize::MAX,
            )
            .expect("no limit");
        }
    }
    let again = FrameDecoder::new(usize::MAX)
        .decode(&mut out)
        .expect("re-encoded frame decodes")
        .expect("complete");
    assert!(out.is_empty());
    assert_eq!(
        format!("{:?}", again.command),
        format!("{:?}", frame.command)
    );
    if let (Some(a), Some(b)) = (&again.payload, &frame.payload) {
        assert_eq!(a.checksum, ChecksumStatus::Valid);
        assert_eq!(format!("{:?}", a.metadata), format!("{:?}", b.metadata));
        assert_eq!(a.payload, b.payload);
    }
}

/// A bounded fuzz run's length and PRNG, as every stable-toolchain stand-in for a cargo-fuzz
/// target takes them: `STREAMWIRE_FUZZ_ITERS` iterations (default 20,000) and the seed
/// `STREAMWIRE_FUZZ_SEED` (default `seed`, fixed per target so CI is reproducible).
pub fn bounded_run(seed: u64) -> (u64, SplitMix64) {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    (
        env("STREAMWIRE_FUZZ_ITERS", 20_000),
        SplitMix64(env("STREAMWIRE_FUZZ_SEED", seed)),
    )
}

/// Small deterministic PRNG (SplitMix64) so runs are reproducible without a `rand` dependency.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// A valid stream of 1..6 frames (simple and payload commands) built with our encoder.
pub fn valid_stream(rng: &mut SplitMix64) -> Vec<u8> {
    let mut out = BytesMut::new();
    for _ in 0..1 + rng.below(5) {
        match rng.below(4) {
            0 => encode_command(&commands::ping(), &mut out),
            1 => encode_command(
                &commands::flow(rng.next_u64(), rng.next_u64() as u32),
                &mut out,
            ),
            2 => encode_command(
                &commands::lookup_topic("persistent://t/n/x", rng.next_u64(), true, None),
                &mut out,
            ),
            _ => {
                let cmd = commands::send(rng.next_u64(), rng.next_u64(), 1, None, false, false);
                let md = pb::MessageMetadata {
                    producer_name: "fuzz".into(),
                    sequence_id: rng.next_u64(),
                    publish_time: rng.next_u64(),
                    partition_key: (rng.below(2) == 0).then(|| "key".into()),
                    ..Default::default()
                };
                let payload: Vec<u8> = (0..rng.below(300)).map(|_| rng.next_u64() as u8).collect();
                let (a, b) = payload.split_at(payload.len() / 2);
                encode_payload_command_parts(&cmd, &md, &[a, b], &mut out, usize::MAX)
                    .expect("no limit");
            }
        }
    }
    out.to_vec()
}

/// Damage `data` a little: flip, overwrite, insert or delete bytes, or truncate.
pub fn mutate(data: &mut Vec<u8>, rng: &mut SplitMix64) {
    for _ in 0..1 + rng.below(4) {
        if data.is_empty() {
            data.push(rng.next_u64() as u8);
            continue;
        }
        let at = rng.below(data.len());
        match rng.below(6) {
            0 => data[at] ^= 1 << rng.below(8),
            1 => data[at] = rng.next_u64() as u8,
            2 => data.insert(at, rng.next_u64() as u8),
            3 => {
                data.remove(at);
            }
            4 => data.truncate(at),
            // A size field claiming huge lengths.
            _ => {
                let end = (at + 4).min(data.len());
                data[at..end].fill(0xff);
            }
        }
    }
}
