//! Fuzz body for the PROTOBUF_NATIVE payload decoder (`protobuf_decode`,
//! `tests/fuzz_protobuf.rs`), and the sample descriptor it (and the unit tests) decode with.

use prost::Message as _;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{
    DescriptorProto, EnumDescriptorProto, EnumValueDescriptorProto, FieldDescriptorProto,
    FileDescriptorProto, FileDescriptorSet, MessageOptions,
};

use crate::schema::protobuf::{schema_data, ProtoSchema};
use crate::schema::protobuf_wire::{decode, encode};

fn field(name: &str, number: i32, ty: Type, label: Label, type_name: &str) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(number),
        r#type: Some(ty as i32),
        label: Some(label as i32),
        type_name: (!type_name.is_empty()).then(|| type_name.into()),
        ..Default::default()
    }
}

fn entry(name: &str, key: Type, value: Type) -> DescriptorProto {
    DescriptorProto {
        name: Some(name.into()),
        field: vec![
            field("key", 1, key, Label::Optional, ""),
            field("value", 2, value, Label::Optional, ""),
        ],
        options: Some(MessageOptions {
            map_entry: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `sw.test.Sample` of `sample.proto` (proto3): every scalar type, an enum with a gap, a
/// nested message, repeated scalars and messages, a string-keyed and an int-keyed map, a
/// proto3 `optional` field.
pub fn sample_set() -> FileDescriptorSet {
    use Label::{Optional as O, Repeated as R};
    let inner = DescriptorProto {
        name: Some("Inner".into()),
        field: vec![
            field("name", 1, Type::String, O, ""),
            field("xs", 2, Type::Double, R, ""),
        ],
        ..Default::default()
    };
    let color = EnumDescriptorProto {
        name: Some("Color".into()),
        value: [("RED", 0), ("GREEN", 1), ("BLUE", 5)]
            .iter()
            .map(|(n, v)| EnumValueDescriptorProto {
                name: Some((*n).into()),
                number: Some(*v),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut opt = field("opt", 22, Type::String, O, "");
    opt.proto3_optional = Some(true);
    opt.oneof_index = Some(0);
    let sample = DescriptorProto {
        name: Some("Sample".into()),
        field: vec![
            field("i32", 1, Type::Int32, O, ""),
            field("i64", 2, Type::Int64, O, ""),
            field("u32", 3, Type::Uint32, O, ""),
            field("u64", 4, Type::Uint64, O, ""),
            field("s32", 5, Type::Sint32, O, ""),
            field("s64", 6, Type::Sint64, O, ""),
            field("f32", 7, Type::Fixed32, O, ""),
            field("f64", 8, Type::Fixed64, O, ""),
            field("sf32", 9, Type::Sfixed32, O, ""),
            field("sf64", 10, Type::Sfixed64, O, ""),
            field("fl", 11, Type::Float, O, ""),
            field("db", 12, Type::Double, O, ""),
            field("b", 13, Type::Bool, O, ""),
            field("s", 14, Type::String, O, ""),
            field("by", 15, Type::Bytes, O, ""),
            field("color", 16, Type::Enum, O, ".sw.test.Sample.Color"),
            field("inner", 17, Type::Message, O, ".sw.test.Sample.Inner"),
            field("nums", 18, Type::Int64, R, ""),
            field("items", 19, Type::Message, R, ".sw.test.Sample.Inner"),
            field("tags", 20, Type::Message, R, ".sw.test.Sample.TagsEntry"),
            field("by_id", 21, Type::Message, R, ".sw.test.Sample.ByIdEntry"),
            opt,
            field("colors", 23, Type::Enum, R, ".sw.test.Sample.Color"),
        ],
        nested_type: vec![
            inner,
            entry("TagsEntry", Type::String, Type::Int32),
            entry("ByIdEntry", Type::Int32, Type::String),
        ],
        enum_type: vec![color],
        oneof_decl: vec![prost_types::OneofDescriptorProto {
            name: Some("_opt".into()),
            ..Default::default()
        }],
        ..Default::default()
    };
    FileDescriptorSet {
        file: vec![FileDescriptorProto {
            name: Some("sample.proto".into()),
            package: Some("sw.test".into()),
            message_type: vec![sample],
            syntax: Some("proto3".into()),
            ..Default::default()
        }],
    }
}

/// The parsed schema of [`sample_set`], through its registry form.
pub fn sample_schema() -> ProtoSchema {
    let data = schema_data(
        &sample_set().encode_to_vec(),
        "sw.test.Sample",
        "sample.proto",
    );
    ProtoSchema::parse(&data).expect("the sample schema is valid")
}

/// Decode `data` as a `Sample` payload; check nothing panics, and that whatever decodes
/// re-encodes to bytes that decode, and that a second round trip changes nothing (the first
/// may drop what has no encoding: unknown fields, enum numbers without a name).
pub fn fuzz_protobuf(data: &[u8]) {
    let schema = sample_schema();
    fuzz_protobuf_with(&schema, data);
}

/// [`fuzz_protobuf`] with the schema built once.
pub fn fuzz_protobuf_with(schema: &ProtoSchema, data: &[u8]) {
    let Ok(v) = decode(schema, data) else {
        return;
    };
    let mut once = Vec::new();
    encode(schema, &v, &mut once).expect("a decoded value encodes");
    let v1 = decode(schema, &once).expect("re-encoded decodes");
    let mut twice = Vec::new();
    encode(schema, &v1, &mut twice).expect("a decoded value encodes");
    let v2 = decode(schema, &twice).expect("re-encoded decodes");
    // Debug text rather than PartialEq: NaN floats must not count as a difference.
    assert_eq!(format!("{v2:?}"), format!("{v1:?}"));
}
