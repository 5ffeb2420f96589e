//! Stable-toolchain stand-in for the cargo-fuzz target `txn_response`: drives the same
//! `fuzz_txn_response` body with a deterministic PRNG over random bytes and damaged valid
//! transaction answers.
//!
//! `STREAMWIRE_FUZZ_ITERS` sets the iteration count (default 20000);
//! `STREAMWIRE_FUZZ_SEED` the seed (default fixed, so CI is reproducible).

use streamwire_pulsar::fuzzing::{bounded_run, fuzz_txn_response, mutate, valid_txn_response};

#[test]
fn fuzz_txn_response_deterministic() {
    let (iters, mut rng) = bounded_run(0x7a7a_5eed);
    for i in 0..iters {
        let input: Vec<u8> = match i % 3 {
            0 => (0..rng.below(120)).map(|_| rng.next_u64() as u8).collect(),
            1 => valid_txn_response(&mut rng),
            _ => {
                let mut v = valid_txn_response(&mut rng);
                mutate(&mut v, &mut rng);
                v
            }
        };
        fuzz_txn_response(&input);
    }
}
