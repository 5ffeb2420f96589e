//! Stable-toolchain stand-in for the cargo-fuzz target `crypto_decrypt`: drives the same
//! `fuzz_crypto` body with a deterministic PRNG: forged metadata (random protobuf bytes and
//! mutated valid metadata) and valid sealed messages damaged at random places.
//!
//! `STREAMWIRE_FUZZ_ITERS` sets the iteration count (default 20000; each RSA unwrap of a
//! damaged key costs ~50 ms in a debug build, so this test runs a hundredth of it: ~4 s);
//! `STREAMWIRE_FUZZ_SEED` the seed (default fixed, so CI is reproducible).

use prost::Message;
use streamwire_pulsar::fuzzing::{bounded_run, fuzz_crypto, mutate};
use streamwire_pulsar::protocol::pb;

#[test]
fn fuzz_crypto_deterministic() {
    let (iters, mut rng) = bounded_run(0x5eed_c0de);
    let iters = iters / 100;
    // The untouched samples decrypt (the check inside asserts the body): RSA, then EC.
    fuzz_crypto(&[1]);
    fuzz_crypto(&[3]);
    for i in 0..iters {
        let mut input = Vec::new();
        // Bit 1 of the mode byte: the EC (ECIES) recipient instead of the RSA one.
        let ec = (rng.below(2) as u8) << 1;
        match i % 3 {
            // A damaged valid message: a few (position, xor) pairs.
            0 => {
                input.push(1 | ec);
                for _ in 0..1 + rng.below(3) {
                    input.push(rng.next_u64() as u8);
                    input.push(rng.next_u64() as u8 | 1);
                }
            }
            // Metadata with encryption fields, then mutated bytes.
            1 => {
                let md = pb::MessageMetadata {
                    encryption_keys: vec![pb::EncryptionKeys {
                        key: "k".into(),
                        value: vec![7u8; 1 + rng.below(300)].into(),
                        metadata: vec![],
                    }],
                    encryption_param: Some(vec![1u8; rng.below(20)].into()),
                    encryption_algo: (rng.below(4) == 0).then(|| "x".to_owned()),
                    ..Default::default()
                };
                let mut bytes = md.encode_to_vec();
                if rng.below(2) == 0 {
                    mutate(&mut bytes, &mut rng);
                }
                input.push(ec);
                input.push(bytes.len().min(255) as u8);
                input.extend_from_slice(&bytes);
                input.extend((0..rng.below(64)).map(|_| rng.next_u64() as u8));
            }
            // Random bytes.
            _ => {
                input.push(ec);
                input.extend((0..rng.below(128)).map(|_| rng.next_u64() as u8));
            }
        }
        fuzz_crypto(&input);
    }
}
