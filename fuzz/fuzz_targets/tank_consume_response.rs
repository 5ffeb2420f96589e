//! Arbitrary bytes as a TANK Consume response payload, then every partition's chunk decoded
//! at several requested seqs. See `streamwire_tank::fuzzing::fuzz_consume_response`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_tank::fuzzing::fuzz_consume_response(data);
});
