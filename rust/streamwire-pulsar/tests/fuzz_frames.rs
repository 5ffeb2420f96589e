//! Stable-toolchain stand-in for the cargo-fuzz target `frame_decoder`: drives the same
//! `fuzz_frames` body with a deterministic PRNG over random bytes and damaged valid streams.
//!
//! `STREAMWIRE_FUZZ_ITERS` sets the iteration count (default 20000);
//! `STREAMWIRE_FUZZ_SEED` the seed (default fixed, so CI is reproducible).

use streamwire_pulsar::fuzzing::{fuzz_frames, mutate, valid_stream, SplitMix64};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn fuzz_frames_deterministic() {
    let iters = env_u64("STREAMWIRE_FUZZ_ITERS", 20_000);
    let seed = env_u64("STREAMWIRE_FUZZ_SEED", 0x5eed_5eed);
    let mut rng = SplitMix64(seed);
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
