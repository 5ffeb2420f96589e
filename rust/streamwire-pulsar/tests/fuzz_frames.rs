//! Stable-toolchain stand-in for the cargo-fuzz target `frame_decoder`: drives the same
//! `fuzz_frames` body with a deterministic PRNG over random bytes and damaged valid streams.
//!
//! `STREAMWIRE_FUZZ_ITERS` sets the iteration count (default 20000);
//! `STREAMWIRE_FUZZ_SEED` the seed (default fixed, so CI is reproducible).

use streamwire_pulsar::fuzzing::{bounded_run, fuzz_frames, mutate, valid_stream};

#[test]
fn fuzz_frames_deterministic() {
    let (iters, mut rng) = bounded_run(0x5eed_5eed);
    for i in 0..iters {
        // 9 header bytes: frame limit selector + chunking seed (see fuzz_frames).
        let mut input: Vec<u8> = (0..9).map(|_| rng.next_u64() as u8).collect();
        match i % 4 {
            // Pure noise.
            0 => input.extend((0..rng.below(200)).map(|_| rng.next_u64() as u8)),
            // Valid streams: must decode cleanly whatever the chunking.
            1 => input.extend(valid_stream(&mut rng)),
            // Damaged valid streams: the interesting half.
            _ => {
                let mut stream = valid_stream(&mut rng);
                mutate(&mut stream, &mut rng);
                input.extend(stream);
            }
        }
        fuzz_frames(&input);
    }
}
