//! Arbitrary bytes (and arbitrary chunking, from the first bytes) into `FrameDecoder`.
//! See `streamwire_pulsar::fuzzing::fuzz_frames` for the checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_pulsar::fuzzing::fuzz_frames(data);
});
