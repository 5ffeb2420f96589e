//! Arbitrary bytes as the keys and CBOR values of a Pravega reader group's state table. See
//! `streamwire_pravega::fuzzing::fuzz_group_state`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    streamwire_pravega::fuzzing::fuzz_group_state(data);
});
