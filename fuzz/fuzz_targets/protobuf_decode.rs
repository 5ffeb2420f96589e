//! Arbitrary bytes decoded as a PROTOBUF_NATIVE payload of the sample descriptor
//! (every scalar type, nested and repeated messages, maps, enums). See
//! `streamwire_pulsar::fuzzing::fuzz_protobuf` for the checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_pulsar::fuzzing::fuzz_protobuf(data);
});
