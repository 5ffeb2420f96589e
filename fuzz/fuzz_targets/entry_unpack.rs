//! Arbitrary bytes wrapped into a MESSAGE frame (codec, sizes, counts and damage chosen by
//! the first bytes) and unpacked into messages, as the consumer does.
//! See `streamwire_pulsar::fuzzing::fuzz_entry` for the layout and the checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_pulsar::fuzzing::fuzz_entry(data);
});
