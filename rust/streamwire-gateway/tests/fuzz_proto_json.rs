//! Stable-toolchain stand-in for the cargo-fuzz target `gateway_proto_json`: drives the
//! same `fuzz_proto_json_with` body with a deterministic PRNG over mutated JSON bodies of
//! the sample descriptor (and random bytes).
//!
//! `STREAMWIRE_FUZZ_ITERS` sets the iteration count (default 20000);
//! `STREAMWIRE_FUZZ_SEED` the seed (default fixed, so CI is reproducible).

use streamwire_gateway::fuzzing::fuzz_proto_json_with;
use streamwire_pulsar::fuzzing::{bounded_run, mutate, sample_schema};

/// Valid `value`s of `Sample` to mutate from.
const SEEDS: [&str; 4] = [
    r#"{"i32":-5,"i64":"-9007199254740993","u64":"18446744073709551615","s32":"-7","fl":1.1,"db":"NaN","b":true,"s":"x","by":"AAEC/w==","color":"BLUE","inner":{"name":"n","xs":[1.5]},"nums":[1,"2"],"items":[{}],"tags":{"x":1},"by_id":{"7":"s"},"opt":"","colors":["GREEN",5]}"#,
    r#"{"byId":{"-1":"m"},"f32":7,"sf64":"-10","u32":4294967295}"#,
    r#""CJYB""#,
    r#"{}"#,
];

#[test]
fn fuzz_proto_json_deterministic() {
    let (iters, mut rng) = bounded_run(0x5eed_91a7);
    let schema = streamwire_gateway::proto_json::ProtoJson::new(sample_schema());
    for s in SEEDS {
        let j: serde_json::Value = serde_json::from_str(s).unwrap();
        let ok = match &j {
            serde_json::Value::String(t) => {
                streamwire_gateway::proto_json::encoded_from_base64(&schema, t).is_ok()
            }
            other => streamwire_gateway::proto_json::encode(&schema, other).is_ok(),
        };
        assert!(ok, "seed {s} must encode");
    }
    for i in 0..iters {
        let mut input = if i % 5 == 0 {
            let n = rng.below(64);
            (0..n).map(|_| rng.next_u64() as u8).collect::<Vec<u8>>()
        } else {
            SEEDS[rng.below(SEEDS.len())].as_bytes().to_vec()
        };
        if i % 5 != 0 {
            mutate(&mut input, &mut rng);
        }
        fuzz_proto_json_with(&schema, &input);
    }
}
