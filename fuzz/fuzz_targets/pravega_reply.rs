//! Arbitrary bytes as Pravega segment-store replies, SEGMENT_READ data through the event
//! decoder. See `streamwire_pravega::fuzzing::fuzz_reply`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_pravega::fuzzing::fuzz_reply(data);
});
