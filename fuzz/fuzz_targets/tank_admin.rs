//! Arbitrary bytes as TANK admin responses and requests (the first byte picks the decoder).
//! See `streamwire_tank::fuzzing::fuzz_admin`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_tank::fuzzing::fuzz_admin(data);
});
