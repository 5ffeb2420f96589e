//! Fuzz body for the PROTOBUF_NATIVE JSON encoder (`gateway_proto_json` in `fuzz/`,
//! `tests/fuzz_proto_json.rs`): request bytes are untrusted, so whatever they hold must
//! give a typed error or bytes that decode again — never a panic. Hidden from the docs;
//! shared by the cargo-fuzz target and the stable-toolchain test.

use crate::proto_json::{decode, encode, encoded_from_base64, ProtoJson};
use serde_json::Value;

/// Parse `data` as a JSON `value` and encode it by `schema` (both forms: an object, and a
/// string of base64 bytes); check nothing panics, that what encodes decodes, and that the
/// decoded (canonical) JSON encodes to the same bytes.
pub fn fuzz_proto_json_with(schema: &ProtoJson, data: &[u8]) {
    let Ok(j) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let bytes = match &j {
        Value::String(t) => encoded_from_base64(schema, t),
        other => encode(schema, other),
    };
    let Ok(bytes) = bytes else { return };
    let out = decode(schema, &bytes).expect("what encodes decodes");
    let again = encode(schema, &out).expect("canonical JSON encodes");
    let out2 = decode(schema, &again).expect("re-encoded decodes");
    // Text rather than PartialEq: "NaN" stays "NaN", and nothing else may change.
    assert_eq!(out2.to_string(), out.to_string());
}
