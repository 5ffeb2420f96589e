//! Stable-toolchain stand-in for the cargo-fuzz target `schema_decode`: drives the same
//! `fuzz_schema` body with a deterministic PRNG over random bytes and mutated valid payloads.
//!
//! `STREAMWIRE_FUZZ_ITERS` sets the iteration count (default 20000);
//! `STREAMWIRE_FUZZ_SEED` the seed (default fixed, so CI is reproducible).

use streamwire_pulsar::fuzzing::{bounded_run, fuzz_schema, mutate};

/// Valid Avro payloads of the fuzz schemas (index 0 and 2), to mutate from.
fn seeds() -> Vec<Vec<u8>> {
    vec![
        // Flat: a=7, b=-1, c=1.5f, d=2.0, e=true, f="hi", g=b"\x00".
        [
            &[0u8, 2, 14, 1][..],
            &1.5f32.to_le_bytes(),
            &2.0f64.to_le_bytes(),
            &[1, 2, 4, b'h', b'i', 2, 0],
        ]
        .concat(),
        // Node list of three.
        vec![2, 2, 4, 2, 6, 0],
        // Coll: array [null, 5], map {"k": [null, null]}.
        vec![3, 4, 0, 2, 10, 0, 2, 2, b'k', 4, 0],
        br#"{"a":1,"b":2,"c":1.5,"d":-3,"e":false,"f":null,"g":"x"}"#.to_vec(),
    ]
}

#[test]
fn fuzz_schema_deterministic() {
    let (iters, mut rng) = bounded_run(0x5eed_5c4e);
    let seeds = seeds();
    for i in 0..iters {
        let mut input = if i % 3 == 0 {
            let n = rng.below(64);
            (0..n).map(|_| rng.next_u64() as u8).collect::<Vec<u8>>()
        } else {
            let s = &seeds[rng.below(seeds.len())];
            let pick = match s.first() {
                Some(b'{') => rng.below(4) as u8,
                _ => [0u8, 2, 3][rng.below(3)],
            };
            let mut v = vec![pick];
            v.extend_from_slice(s);
            v
        };
        if i % 3 == 2 {
            mutate(&mut input, &mut rng);
        }
        fuzz_schema(&input);
    }
}
