//! Arbitrary bytes decoded as a command and judged as a transaction answer.
//! See `streamwire_pulsar::fuzzing::fuzz_txn_response` for the checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_pulsar::fuzzing::fuzz_txn_response(data);
});
