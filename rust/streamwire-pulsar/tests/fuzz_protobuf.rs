//! Stable-toolchain stand-in for the cargo-fuzz target `protobuf_decode`: drives the same
//! `fuzz_protobuf` body with a deterministic PRNG over random bytes and mutated valid
//! payloads.
//!
//! `STREAMWIRE_FUZZ_ITERS` sets the iteration count (default 20000);
//! `STREAMWIRE_FUZZ_SEED` the seed (default fixed, so CI is reproducible).

use streamwire_pulsar::fuzzing::{bounded_run, fuzz_protobuf_with, mutate, sample_schema};

/// Valid `Sample` payloads to mutate from.
fn seeds() -> Vec<Vec<u8>> {
    let mut full = vec![0x08, 0x7f, 0x28, 0x03, 0x80, 0x01, 0x05];
    full.extend([0x92, 0x01, 0x03, 0x01, 0xac, 0x02]);
    full.extend([0x8a, 0x01, 0x03, 0x0a, 0x01, b'a']);
    full.extend([0x9a, 0x01, 0x09, 0x11]);
    full.extend(2.5f64.to_le_bytes());
    full.extend([0xa2, 0x01, 0x05, 0x0a, 0x01, b'k', 0x10, 0x07]);
    full.extend([0xaa, 0x01, 0x05, 0x08, 0x03, 0x12, 0x01, b'v']);
    full.extend([0xb2, 0x01, 0x02, b'h', b'i', 0x5d]);
    full.extend(1.5f32.to_le_bytes());
    vec![
        full,
        vec![0x72, 0x03, b'a', b'b', b'c', 0x68, 0x01],
        Vec::new(),
    ]
}

#[test]
fn fuzz_protobuf_deterministic() {
    let (iters, mut rng) = bounded_run(0x5eed_9b0f);
    let schema = sample_schema();
    let seeds = seeds();
    for s in &seeds {
        assert!(
            streamwire_pulsar::schema::protobuf_wire::decode(&schema, s).is_ok(),
            "seed {s:?} must decode"
        );
    }
    for i in 0..iters {
        let mut input = if i % 3 == 0 {
            let n = rng.below(64);
            (0..n).map(|_| rng.next_u64() as u8).collect::<Vec<u8>>()
        } else {
            seeds[rng.below(seeds.len())].clone()
        };
        if i % 3 != 0 {
            mutate(&mut input, &mut rng);
        }
        fuzz_protobuf_with(&schema, &input);
    }
}
