//! Stable-toolchain stand-in for the cargo-fuzz target `entry_unpack`: drives the same
//! `fuzz_entry` body with a deterministic PRNG over random bytes, valid entries and damaged
//! valid entries (most iterations: valid batches, then mutated).
//!
//! `STREAMWIRE_FUZZ_ITERS` sets the iteration count (default 20000);
//! `STREAMWIRE_FUZZ_SEED` the seed (default fixed, so CI is reproducible).

use bytes::{Bytes, BytesMut};
use streamwire_pulsar::engine::batch_format::{encode_message, single_metadata_for};
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::fuzzing::{
    bounded_run, entry_input, fuzz_entry, mutate, unpack_checked, valid_batch, EntryHeader,
    SplitMix64, ENTRY_HEADER_LEN, FLAG_APP_ACKED, FLAG_COMPRESS, FLAG_CORRUPT_FRAME,
    FLAG_DAMAGE_PAYLOAD, FLAG_HIGH_SEQUENCE,
};

fn noise(rng: &mut SplitMix64, most: usize) -> Vec<u8> {
    let n = rng.below(most);
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

/// Change a few header bytes in place (the header has a fixed length).
fn damage_header(input: &mut [u8], rng: &mut SplitMix64) {
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(ENTRY_HEADER_LEN);
        input[at] = rng.next_u64() as u8;
    }
}

#[test]
fn fuzz_entry_deterministic() {
    let (iters, mut rng) = bounded_run(0x5eed_e47e);
    for i in 0..iters {
        let input = match i % 10 {
            // Pure noise, header included.
            0 => noise(&mut rng, ENTRY_HEADER_LEN + 200),
            // Noise under a well-formed header: the batch parser sees garbage.
            1 => {
                let count = 1 + rng.below(4) as u16;
                let mut h = EntryHeader::valid(&mut rng, Some(count));
                h.batch = rng.below(8) as u8;
                entry_input(&h, &noise(&mut rng, 200))
            }
            // Valid entries (a batch, or now and then a single message) must unpack, every
            // message handed out or skipped.
            2 | 3 => {
                let (body, n) = valid_batch(&mut rng);
                let single = rng.below(8) == 0;
                let h = EntryHeader::valid(&mut rng, (!single).then_some(n));
                let input = entry_input(&h, &body);
                let u = unpack_checked(&input)
                    .expect("a valid entry decodes")
                    .unwrap_or_else(|r| panic!("valid entry rejected: {r:?} ({h:?})"));
                let want = if single { 1 } else { u64::from(n) };
                assert_eq!(u.messages.len() as u64 + u64::from(u.skipped), want);
                continue;
            }
            // A valid batch damaged before compression: decompression succeeds and the
            // batch parser sees the damage.
            4..=6 => {
                let (mut body, n) = valid_batch(&mut rng);
                mutate(&mut body, &mut rng);
                entry_input(&EntryHeader::valid(&mut rng, Some(n)), &body)
            }
            // A valid batch with a damaged header (codec, counts, sizes, flags).
            7 => {
                let (body, n) = valid_batch(&mut rng);
                let mut input = entry_input(&EntryHeader::valid(&mut rng, Some(n)), &body);
                damage_header(&mut input, &mut rng);
                input
            }
            // A valid batch whose compressed bytes or frame are damaged.
            8 => {
                let (body, n) = valid_batch(&mut rng);
                let mut h = EntryHeader::valid(&mut rng, Some(n));
                h.flags |= [FLAG_DAMAGE_PAYLOAD, FLAG_CORRUPT_FRAME][rng.below(2)];
                entry_input(&h, &body)
            }
            // A damaged valid input, header and body alike.
            _ => {
                let (body, n) = valid_batch(&mut rng);
                let mut input = entry_input(&EntryHeader::valid(&mut rng, Some(n)), &body);
                mutate(&mut input, &mut rng);
                input
            }
        };
        fuzz_entry(&input);
    }
}

/// Inputs that found bugs, kept so they stay fixed.
#[test]
fn fuzz_entry_known_findings() {
    // cargo-fuzz, within seconds: num_messages_in_batch = i32::MAX - 0xff00 sized a Vec
    // (~340 GB) before parsing.
    fuzz_entry(b"\xff\x02\xff\xff\x00\xff\xff\x55\x28\xff\xff\x0a\x00\xff\x7f\xff\x0a");

    // A batch without per-message sequence ids under an entry sequence id near u64::MAX:
    // `sequence_id + index` overflowed.
    let mut body = BytesMut::new();
    for i in 0..3u8 {
        let m = OutgoingMessage::new(Bytes::from(vec![i]), 0);
        let mut single = single_metadata_for(&m);
        single.sequence_id = None;
        encode_message(&single, &m.payload, &mut body);
    }
    let mut h = EntryHeader::valid(&mut SplitMix64(1), Some(3));
    h.flags = FLAG_COMPRESS | FLAG_HIGH_SEQUENCE;
    h.ack_words = 0;
    let u = unpack_checked(&entry_input(&h, &body)).unwrap().unwrap();
    assert_eq!(u.messages.len(), 3);

    // Batch indexes the application already acknowledged were handed out again.
    h.flags = FLAG_COMPRESS | FLAG_APP_ACKED;
    let u = unpack_checked(&entry_input(&h, &body)).unwrap().unwrap();
    assert_eq!((u.messages.len(), u.skipped), (2, 1));
}
