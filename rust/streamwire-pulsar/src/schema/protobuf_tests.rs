//! PROTOBUF_NATIVE: the descriptor layout, hand-written wire bytes decoded, and random
//! `Sample` values round-tripped through the wire encoding.

use proptest::prelude::*;
use prost::Message as _;

use super::avro::Node;
use super::protobuf::{schema_data, ProtoSchema};
use super::protobuf_wire::{decode, encode};
use super::value::Value;
use crate::fuzzing::{sample_schema, sample_set};

#[test]
fn layout_follows_the_descriptor() {
    let s = sample_schema();
    assert_eq!(s.root_message, "sw.test.Sample");
    let Node::Record(r) = s.avro.root_node() else {
        panic!("root is a record")
    };
    let names: Vec<&str> = r.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names[..3], ["i32", "i64", "u32"]);
    assert_eq!(names.len(), 23);
    let node = |n: &str| r.fields.iter().find(|f| f.name == n).unwrap().node;
    assert!(matches!(s.avro.node(node("i32")), Node::Int));
    assert!(matches!(s.avro.node(node("u64")), Node::Long));
    // Messages and proto3 `optional` are nullable; plain proto3 scalars are not.
    assert!(s.avro.nullable_inner(node("inner")).is_some());
    assert!(s.avro.nullable_inner(node("opt")).is_some());
    assert!(s.avro.nullable_inner(node("s")).is_none());
    assert!(matches!(s.avro.node(node("tags")), Node::Map(_)));
    assert!(matches!(s.avro.node(node("by_id")), Node::Array(_)));
    assert!(
        matches!(s.avro.node(node("color")), Node::Enum { symbols, .. } if symbols == &["RED", "GREEN", "BLUE"])
    );
}

#[test]
fn registry_form_is_the_java_clients() {
    let set = sample_set().encode_to_vec();
    let data = schema_data(&set, "sw.test.Sample", "sample.proto");
    let text = String::from_utf8(data).unwrap();
    assert!(text.starts_with("{\"fileDescriptorSet\":\""));
    assert!(text.ends_with(
        "\"rootMessageTypeName\":\"sw.test.Sample\",\"rootFileDescriptorName\":\"sample.proto\"}"
    ));
}

#[test]
fn bad_schema_data_is_refused() {
    let set = sample_set().encode_to_vec();
    for (data, want) in [
        (b"nope".to_vec(), "not JSON"),
        (b"{}".to_vec(), "lacks"),
        (
            br#"{"fileDescriptorSet":"!!","rootMessageTypeName":"a","rootFileDescriptorName":"b"}"#
                .to_vec(),
            "base64",
        ),
        (
            schema_data(&set, "sw.test.Nope", "sample.proto"),
            "no message type",
        ),
        (
            schema_data(&set, "sw.test.Sample", "other.proto"),
            "no file",
        ),
        (
            schema_data(&set, "other.Sample", "sample.proto"),
            "outside package",
        ),
    ] {
        let e = ProtoSchema::parse(&data).unwrap_err();
        assert!(e.0.contains(want), "{e} lacks {want}");
    }
}

#[test]
fn a_recursive_field_is_kept_as_bytes() {
    let mut set = sample_set();
    let sample = &mut set.file[0].message_type[0];
    sample.field[16].type_name = Some(".sw.test.Sample".into());
    let data = schema_data(&set.encode_to_vec(), "sw.test.Sample", "sample.proto");
    let s = ProtoSchema::parse(&data).unwrap();
    let Node::Record(r) = s.avro.root_node() else {
        panic!()
    };
    let inner = s.avro.nullable_inner(r.fields[16].node).unwrap();
    assert!(matches!(s.avro.node(inner), Node::Bytes));
    // inner = Sample{i32: 5} stays its bytes.
    let Value::Record(f) = decode(&s, &[0x8a, 0x01, 0x02, 0x08, 0x05]).unwrap() else {
        panic!()
    };
    assert_eq!(f[16], Value::Bytes(vec![0x08, 0x05]));
}

#[test]
fn decodes_hand_written_bytes() {
    let s = sample_schema();
    // i32=-1 (10-byte varint), s32=-2 (zigzag 3), packed nums [1, 300], unknown field 99
    // (varint), color=5 (BLUE), inner{name="a"} twice merging with xs=[1.0], tags{"k": 7},
    // colors=[9] (no name: null).
    let mut p = vec![0x08];
    p.extend([0xff; 9]);
    p.push(0x01);
    p.extend([0x28, 0x03]);
    p.extend([0x92, 0x01, 0x03, 0x01, 0xac, 0x02]);
    p.extend([0x98, 0x06, 0x01]);
    p.extend([0x80, 0x01, 0x05]);
    p.extend([0x8a, 0x01, 0x03, 0x0a, 0x01, b'a']);
    p.extend([0x8a, 0x01, 0x09, 0x11]);
    p.extend(1.0f64.to_le_bytes());
    p.extend([0xa2, 0x01, 0x05, 0x0a, 0x01, b'k', 0x10, 0x07]);
    p.extend([0xb8, 0x01, 0x09]);
    let Value::Record(f) = decode(&s, &p).unwrap() else {
        panic!()
    };
    assert_eq!(f[0], Value::Int(-1));
    assert_eq!(f[4], Value::Int(-2));
    assert_eq!(f[17], Value::Array(vec![Value::Long(1), Value::Long(300)]));
    assert_eq!(f[15], Value::Enum(2));
    assert_eq!(
        f[16],
        Value::Record(vec![
            Value::String("a".into()),
            Value::Array(vec![Value::Double(1.0)])
        ])
    );
    assert_eq!(f[19], Value::Map(vec![("k".into(), Value::Int(7))]));
    assert_eq!(f[21], Value::Null); // optional, absent
    assert_eq!(f[22], Value::Array(vec![Value::Null]));
    assert_eq!(f[13], Value::String(String::new())); // proto3 default
    for bad in [
        &[0x08][..],
        &[0x0a, 0x05, 0x01],
        &[0x00],
        &[0x72, 0x01, 0xff],
        &[0x09, 1],
    ] {
        assert!(decode(&s, bad).is_err(), "{bad:?} decodes");
    }
}

fn inner() -> impl Strategy<Value = Value> {
    (
        "[a-z]{0,4}",
        proptest::collection::vec(any::<f64>().prop_filter("no NaN", |x| !x.is_nan()), 0..3),
    )
        .prop_map(|(n, xs)| {
            Value::Record(vec![
                Value::String(n),
                Value::Array(xs.into_iter().map(Value::Double).collect()),
            ])
        })
}

fn sample() -> impl Strategy<Value = Value> {
    let ints = (
        any::<i32>(),
        any::<i64>(),
        any::<u32>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
        any::<u32>(),
        any::<i64>(),
        any::<i32>(),
        any::<i64>(),
    );
    let rest = (
        any::<f32>().prop_filter("no NaN", |x| !x.is_nan()),
        any::<f64>().prop_filter("no NaN", |x| !x.is_nan()),
        any::<bool>(),
        ".{0,6}",
        proptest::collection::vec(any::<u8>(), 0..5),
        0u32..3,
        proptest::option::of(inner()),
        proptest::collection::vec(any::<i64>(), 0..4),
        proptest::collection::vec(inner(), 0..3),
        proptest::collection::btree_map("[a-z]{1,3}", any::<i32>(), 0..3),
        proptest::collection::btree_map(any::<i32>(), "[a-z]{0,3}", 0..3),
        proptest::option::of(".{0,3}"),
    );
    (ints, rest, proptest::collection::vec(0u32..3, 0..3)).prop_map(|(i, r, colors)| {
        Value::Record(vec![
            Value::Int(i.0),
            Value::Long(i.1),
            Value::Long(i64::from(i.2)),
            Value::Long(i.3),
            Value::Int(i.4),
            Value::Long(i.5),
            Value::Long(i64::from(i.6)),
            Value::Long(i.7),
            Value::Int(i.8),
            Value::Long(i.9),
            Value::Float(r.0),
            Value::Double(r.1),
            Value::Boolean(r.2),
            Value::String(r.3),
            Value::Bytes(r.4),
            Value::Enum(r.5),
            r.6.unwrap_or(Value::Null),
            Value::Array(r.7.into_iter().map(Value::Long).collect()),
            Value::Array(r.8),
            Value::Map(r.9.into_iter().map(|(k, v)| (k, Value::Int(v))).collect()),
            Value::Array(
                r.10.into_iter()
                    .map(|(k, v)| Value::Record(vec![Value::Int(k), Value::String(v)]))
                    .collect(),
            ),
            r.11.map(Value::String).unwrap_or(Value::Null),
            Value::Array(colors.into_iter().map(Value::Enum).collect()),
        ])
    })
}

proptest! {
    #[test]
    fn values_round_trip(v in sample()) {
        let s = sample_schema();
        let mut out = Vec::new();
        encode(&s, &v, &mut out).unwrap();
        prop_assert_eq!(decode(&s, &out).unwrap(), v);
    }

    /// Arrow columns written to protobuf (Spark writes) give a null, or a missing column, as
    /// a `Value::Null` in any field: it is the field left out, so it reads back as an
    /// absent field does (null with presence, the protobuf default without).
    #[test]
    fn nulls_are_fields_left_out(v in sample(), mask in proptest::collection::vec(any::<bool>(), 23)) {
        let s = sample_schema();
        let Value::Record(fields) = &v else { unreachable!() };
        let Value::Record(absent) = decode(&s, &[]).unwrap() else { unreachable!() };
        let masked: Vec<Value> = fields
            .iter()
            .zip(&mask)
            .map(|(f, m)| if *m { Value::Null } else { f.clone() })
            .collect();
        let want: Vec<Value> = fields
            .iter()
            .zip(&mask)
            .zip(&absent)
            .map(|((f, m), a)| if *m { a.clone() } else { f.clone() })
            .collect();
        let mut out = Vec::new();
        encode(&s, &Value::Record(masked), &mut out).unwrap();
        prop_assert_eq!(decode(&s, &out).unwrap(), Value::Record(want));
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        crate::fuzzing::fuzz_protobuf(&data);
    }
}
