//! Fuzz body for the schema payload decoders (`schema_decode`, `tests/fuzz_schema.rs`).

use crate::schema::avro::AvroSchema;
use crate::schema::keyvalue::split_halves;
use crate::schema::{binary, json};

/// Schemas the fuzzer picks from (first input byte): flat, nested, recursive, collections.
const SCHEMAS: [&str; 4] = [
    r#"{"type":"record","name":"Flat","fields":[{"name":"a","type":["null","int"]},
        {"name":"b","type":"long"},{"name":"c","type":"float"},{"name":"d","type":"double"},
        {"name":"e","type":"boolean"},{"name":"f","type":["null","string"]},
        {"name":"g","type":"bytes"}]}"#,
    r#"{"type":"record","name":"Outer","namespace":"n","fields":[
        {"name":"inner","type":{"type":"record","name":"Inner","fields":[
            {"name":"x","type":{"type":"enum","name":"E","symbols":["A","B"]}},
            {"name":"y","type":{"type":"fixed","name":"F","size":3}}]}},
        {"name":"again","type":["null","Inner"]}]}"#,
    r#"{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},
        {"name":"next","type":["null","Node"]}]}"#,
    r#"{"type":"record","name":"Coll","fields":[
        {"name":"a","type":{"type":"array","items":["null","long"]}},
        {"name":"m","type":{"type":"map","values":{"type":"array","items":"null"}}}]}"#,
];

/// Decode `data[1..]` with the schema `data[0]` picks, as Avro binary and as JSON, and as
/// KEY_VALUE halves; check nothing panics and that whatever decodes re-encodes to a
/// payload that decodes to the same value.
pub fn fuzz_schema(data: &[u8]) {
    let Some((&pick, payload)) = data.split_first() else {
        return;
    };
    let schema = AvroSchema::parse(SCHEMAS[usize::from(pick) % SCHEMAS.len()].as_bytes())
        .expect("the fuzz schemas are valid");
    if let Ok(v) = binary::decode(&schema, schema.root, payload) {
        let mut out = Vec::new();
        binary::encode(&schema, schema.root, &v, &mut out).expect("a decoded value encodes");
        let again = binary::decode(&schema, schema.root, &out).expect("re-encoded decodes");
        // Debug text rather than PartialEq: NaN floats must not count as a difference.
        assert_eq!(format!("{again:?}"), format!("{v:?}"));
    }
    if let Ok(v) = json::decode(&schema, schema.root, payload) {
        let mut out = Vec::new();
        // Non-finite floats or non-text bytes have no JSON form; anything else must encode.
        if json::encode(&schema, schema.root, &v, &mut out).is_ok() {
            let again = json::decode(&schema, schema.root, &out).expect("re-encoded decodes");
            assert_eq!(format!("{again:?}"), format!("{v:?}"));
        }
    }
    // The same JSON with another writer's enum values (the official Python client's form).
    let enums = json::EnumValues {
        by_enum: vec![(
            "n.E".to_owned(),
            vec![
                (serde_json::json!(1), "A".to_owned()),
                (serde_json::json!("b"), "B".to_owned()),
            ],
        )],
        write_values: true,
    };
    if let Ok(v) = json::decode_with(&schema, schema.root, payload, &enums) {
        let mut out = Vec::new();
        if json::encode_with(&schema, schema.root, &v, &mut out, &enums).is_ok() {
            let again =
                json::decode_with(&schema, schema.root, &out, &enums).expect("re-encoded decodes");
            assert_eq!(format!("{again:?}"), format!("{v:?}"));
        }
    }
    let _ = split_halves(payload);
}
