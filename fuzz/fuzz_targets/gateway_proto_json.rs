//! Arbitrary bytes taken as a gateway request's PROTOBUF_NATIVE `value` (JSON) and encoded
//! by the sample descriptor. See `streamwire_gateway::fuzzing::fuzz_proto_json_with`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let schema = streamwire_gateway::proto_json::ProtoJson::new(streamwire_pulsar::fuzzing::sample_schema());
    streamwire_gateway::fuzzing::fuzz_proto_json_with(&schema, data);
});
