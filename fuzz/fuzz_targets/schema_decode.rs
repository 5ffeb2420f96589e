//! Arbitrary bytes decoded as Avro binary and JSON payloads of a few record schemas (picked
//! by the first byte), and as KEY_VALUE halves. See
//! `streamwire_pulsar::fuzzing::fuzz_schema` for the checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_pulsar::fuzzing::fuzz_schema(data);
});
