//! Arbitrary bytes as one TANK bundle (plain, Snappy or sparse).
//! See `streamwire_tank::fuzzing::fuzz_bundle`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_tank::fuzzing::fuzz_bundle(data);
});
