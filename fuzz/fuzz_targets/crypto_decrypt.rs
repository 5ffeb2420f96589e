//! Forged encryption metadata and damaged sealed payloads decrypted as the consumer does.
//! See `streamwire_pulsar::fuzzing::fuzz_crypto` for the layout and the checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_pulsar::fuzzing::fuzz_crypto(data);
});
