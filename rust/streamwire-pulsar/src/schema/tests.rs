//! Round trips of random schemas with random values through both payload codecs, and the
//! KEY_VALUE wire forms.

use proptest::prelude::*;
use serde_json::json;

use super::avro::AvroSchema;
use super::keyvalue::{encode_inline, kv_schema, split_halves, split_kv_schema, KvEncoding};
use super::value::Value;
use super::{binary, RecordCodec, RecordEncoding, SchemaInfo, SchemaType};

/// A random type, turned into a definition by [`definition`].
#[derive(Debug, Clone)]
pub(super) enum Ty {
    Null,
    Bool,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    Str,
    Enum(u8),
    Fixed(u8),
    Array(Box<Ty>),
    Map(Box<Ty>),
    Nullable(Box<Ty>),
    Record(Vec<Ty>),
}

pub(super) fn ty() -> impl Strategy<Value = Ty> {
    let leaf = prop_oneof![
        Just(Ty::Null),
        Just(Ty::Bool),
        Just(Ty::Int),
        Just(Ty::Long),
        Just(Ty::Float),
        Just(Ty::Double),
        Just(Ty::Bytes),
        Just(Ty::Str),
        (1u8..4).prop_map(Ty::Enum),
        (0u8..4).prop_map(Ty::Fixed),
    ];
    leaf.prop_recursive(4, 24, 5, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| Ty::Array(Box::new(t))),
            inner.clone().prop_map(|t| Ty::Map(Box::new(t))),
            inner
                .clone()
                .prop_filter("union of a union or of null", |t| !matches!(
                    t,
                    Ty::Null | Ty::Nullable(_)
                ))
                .prop_map(|t| Ty::Nullable(Box::new(t))),
            prop::collection::vec(inner, 0..5).prop_map(Ty::Record),
        ]
    })
}

pub(super) fn definition(t: &Ty, n: &mut usize) -> serde_json::Value {
    *n += 1;
    match t {
        Ty::Null => json!("null"),
        Ty::Bool => json!("boolean"),
        Ty::Int => json!("int"),
        Ty::Long => json!("long"),
        Ty::Float => json!("float"),
        Ty::Double => json!("double"),
        Ty::Bytes => json!("bytes"),
        Ty::Str => json!("string"),
        Ty::Enum(k) => json!({"type": "enum", "name": format!("E{n}"),
            "symbols": (0..*k).map(|i| format!("S{i}")).collect::<Vec<_>>()}),
        Ty::Fixed(k) => json!({"type": "fixed", "name": format!("F{n}"), "size": k}),
        Ty::Array(i) => json!({"type": "array", "items": definition(i, n)}),
        Ty::Map(v) => json!({"type": "map", "values": definition(v, n)}),
        Ty::Nullable(i) => json!(["null", definition(i, n)]),
        Ty::Record(fs) => {
            let name = format!("R{n}");
            let fields: Vec<_> = fs
                .iter()
                .enumerate()
                .map(|(i, f)| json!({"name": format!("f{i}"), "type": definition(f, n)}))
                .collect();
            json!({"type": "record", "name": name, "namespace": "t", "fields": fields})
        }
    }
}

/// Floats that survive JSON text exactly (quarters of integers).
fn exact_f64() -> impl Strategy<Value = f64> {
    (-4_000_000i32..4_000_000).prop_map(|x| f64::from(x) / 4.0)
}

pub(super) fn value(t: &Ty) -> BoxedStrategy<Value> {
    match t {
        Ty::Null => Just(Value::Null).boxed(),
        Ty::Bool => any::<bool>().prop_map(Value::Boolean).boxed(),
        Ty::Int => any::<i32>().prop_map(Value::Int).boxed(),
        Ty::Long => any::<i64>().prop_map(Value::Long).boxed(),
        Ty::Float => exact_f64().prop_map(|f| Value::Float(f as f32)).boxed(),
        Ty::Double => exact_f64().prop_map(Value::Double).boxed(),
        // Text bytes: JSON payloads carry bytes as a string.
        Ty::Bytes => ".{0,8}".prop_map(|s| Value::Bytes(s.into_bytes())).boxed(),
        Ty::Str => ".{0,8}".prop_map(Value::String).boxed(),
        Ty::Enum(k) => (0..u32::from(*k)).prop_map(Value::Enum).boxed(),
        Ty::Fixed(k) => prop::collection::vec(b'a'..=b'z', usize::from(*k))
            .prop_map(Value::Fixed)
            .boxed(),
        Ty::Array(i) => prop::collection::vec(value(i), 0..4)
            .prop_map(Value::Array)
            .boxed(),
        // Sorted, unique keys: a JSON object keeps one value per key.
        Ty::Map(v) => prop::collection::btree_map("[a-z]{0,3}", value(v), 0..4)
            .prop_map(|m| Value::Map(m.into_iter().collect()))
            .boxed(),
        Ty::Nullable(i) => prop_oneof![Just(Value::Null), value(i)].boxed(),
        Ty::Record(fs) => fs
            .iter()
            .map(value)
            .collect::<Vec<_>>()
            .prop_map(Value::Record)
            .boxed(),
    }
}

fn schema_and_value() -> impl Strategy<Value = (serde_json::Value, Value)> {
    ty().prop_flat_map(|t| {
        let def = definition(&t, &mut 0);
        (Just(def), value(&t))
    })
}

proptest! {
    #[test]
    fn avro_and_json_round_trip((def, v) in schema_and_value()) {
        let text = serde_json::to_vec(&def).unwrap();
        for enc in [RecordEncoding::Avro, RecordEncoding::Json] {
            let codec = RecordCodec::new(enc, &text).unwrap();
            let mut out = Vec::new();
            codec.encode(&v, &mut out).unwrap();
            prop_assert_eq!(codec.decode(&out).unwrap(), v.clone(), "{:?}", enc);
        }
    }

    #[test]
    fn streamed_json_decode_matches_the_tree_decode((def, v) in schema_and_value()) {
        let s = AvroSchema::from_json(&def).unwrap();
        let mut text = Vec::new();
        super::json::encode(&s, s.root, &v, &mut text).unwrap();
        let tree: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let via_tree = super::json::from_json(&s, s.root, &tree, 0).unwrap();
        prop_assert_eq!(super::json::decode(&s, s.root, &text).unwrap(), via_tree);
    }

    #[test]
    fn avro_decoder_survives_any_bytes((def, _v) in schema_and_value(),
                                       data in prop::collection::vec(any::<u8>(), 0..64)) {
        let s = AvroSchema::from_json(&def).unwrap();
        if let Ok(v) = binary::decode(&s, s.root, &data) {
            let mut out = Vec::new();
            binary::encode(&s, s.root, &v, &mut out).unwrap();
            prop_assert_eq!(binary::decode(&s, s.root, &out).unwrap(), v);
        }
    }

    #[test]
    fn inline_key_values_round_trip(k in prop::option::of(prop::collection::vec(any::<u8>(), 0..16)),
                                    v in prop::option::of(prop::collection::vec(any::<u8>(), 0..16))) {
        let data = encode_inline(k.as_deref(), v.as_deref());
        prop_assert_eq!(split_halves(&data).unwrap(), (k.as_deref(), v.as_deref()));
    }
}

#[test]
fn avro_bytes_match_the_spec() {
    // {"a": 1, "b": "x", "c": null, "d": [2, -1]} by hand: zig-zag 1 = 02, string "x" =
    // 02 78, union branch 0 = 00, array block of 2 = 04 04 01 then 00.
    let def = br#"{"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "string"},
        {"name": "c", "type": ["null", "long"]},
        {"name": "d", "type": {"type": "array", "items": "long"}}]}"#;
    let c = RecordCodec::new(RecordEncoding::Avro, def).unwrap();
    let v = Value::Record(vec![
        Value::Int(1),
        Value::String("x".into()),
        Value::Null,
        Value::Array(vec![Value::Long(2), Value::Long(-1)]),
    ]);
    let mut out = Vec::new();
    c.encode(&v, &mut out).unwrap();
    assert_eq!(out, [0x02, 0x02, b'x', 0x00, 0x04, 0x04, 0x01, 0x00]);
    // A negative block count (followed by the block's byte size) reads the same.
    let neg = [0x02, 0x02, b'x', 0x00, 0x03, 0x02, 0x04, 0x01, 0x00];
    assert_eq!(c.decode(&neg).unwrap(), v);
    // Wrong shapes fail without panicking.
    assert!(c.encode(&Value::Record(vec![]), &mut Vec::new()).is_err());
    assert!(c.decode(&out[..3]).is_err());
    let json = RecordCodec::new(RecordEncoding::Json, def).unwrap();
    let mut text = Vec::new();
    json.encode(&v, &mut text).unwrap();
    assert_eq!(text, br#"{"a":1,"b":"x","c":null,"d":[2,-1]}"#);
    // A missing nullable field is null; a missing required one is an error.
    assert_eq!(
        json.decode(br#"{"a":1,"b":"x","d":[2,-1],"extra":true}"#)
            .unwrap(),
        v
    );
    assert!(json.decode(br#"{"b":"x","d":[]}"#).is_err());
    assert!(json.decode(br#"{"a":1.5,"b":"x","d":[]}"#).is_err());
}

#[test]
fn key_value_schema_round_trips() {
    let key = SchemaInfo {
        name: "STRING".into(),
        kind: SchemaType::String,
        data: Vec::new(),
        properties: Vec::new(),
    };
    let value = SchemaInfo {
        name: "AVRO".into(),
        kind: SchemaType::Avro,
        data: br#"{"type":"record","name":"V","fields":[]}"#.to_vec(),
        properties: vec![("__alwaysAllowNull".into(), "true".into())],
    };
    let kv = kv_schema(&key, &value, KvEncoding::Separated);
    assert_eq!(kv.kind, SchemaType::KeyValue);
    let (k2, v2, enc) = split_kv_schema(&kv).unwrap();
    assert_eq!((k2, v2, enc), (key, value, KvEncoding::Separated));
    assert!(split_halves(&[0, 0, 0, 5, 1]).is_err());
    assert!(split_halves(&[0, 0, 0, 0]).is_err());
    assert_eq!(
        split_halves(&[255, 255, 255, 255, 0, 0, 0, 1, 7]).unwrap(),
        (None, Some(&[7u8][..]))
    );
}

#[test]
fn get_schema_command_names_topic_and_version() {
    use crate::protocol::pb::base_command::Type;
    let cmd = super::registry::get_schema_command("persistent://a/b/t", 7, Some(&[0, 0, 0, 1]));
    assert_eq!(cmd.r#type(), Type::GetSchema);
    let body = cmd.get_schema.unwrap();
    assert_eq!(
        (body.request_id, body.topic.as_str()),
        (7, "persistent://a/b/t")
    );
    assert_eq!(body.schema_version.as_deref(), Some(&[0u8, 0, 0, 1][..]));
    let info = SchemaInfo {
        name: "AVRO".into(),
        kind: SchemaType::Avro,
        data: b"{}".to_vec(),
        properties: vec![("k".into(), "v".into())],
    };
    let proto = info.to_proto();
    assert_eq!(proto.r#type(), SchemaType::Avro);
    assert_eq!(SchemaInfo::from_proto(&proto), info);
    for t in [
        SchemaType::None,
        SchemaType::String,
        SchemaType::Json,
        SchemaType::Avro,
    ] {
        assert_eq!(
            SchemaInfo::type_from_name(SchemaInfo::type_name(t)),
            Some(t)
        );
    }
}

proptest! {
    /// GET_OR_CREATE_SCHEMA survives the wire (prost encode, decode) with any topic, request
    /// id and schema.
    #[test]
    fn get_or_create_schema_command_round_trips(
        topic in "[a-z/:-]{1,40}",
        rid in any::<u64>(),
        data in prop::collection::vec(any::<u8>(), 0..64),
        props in prop::collection::vec(("[a-z.]{1,8}", "[ -~]{0,8}"), 0..4),
    ) {
        use prost::Message;
        let info = SchemaInfo {
            name: "JSON".into(),
            kind: SchemaType::Json,
            data,
            properties: props,
        };
        let cmd = super::registry::get_or_create_schema_command(&topic, rid, &info);
        let back = crate::protocol::pb::BaseCommand::decode(&cmd.encode_to_vec()[..]).unwrap();
        prop_assert_eq!(back.r#type(), crate::protocol::pb::base_command::Type::GetOrCreateSchema);
        let body = back.get_or_create_schema.unwrap();
        prop_assert_eq!((body.request_id, body.topic.as_str()), (rid, topic.as_str()));
        prop_assert_eq!(SchemaInfo::from_proto(&body.schema), info);
    }
}

fn enum_values(write_values: bool) -> super::json::EnumValues {
    super::json::EnumValues {
        by_enum: vec![(
            "n.Shade".into(),
            vec![
                (json!("d-value"), "dark".into()),
                (json!(2), "light".into()),
                (json!(2.5), "mid".into()),
                (json!(true), "on".into()),
            ],
        )],
        write_values,
    }
}

const SHADE: &str = r#"{"type":"record","name":"P","namespace":"n","fields":[
    {"name":"s","type":["null",{"type":"enum","name":"Shade",
        "symbols":["dark","light","mid","on"]}]}]}"#;

#[test]
fn json_enums_read_as_symbols_or_the_official_python_values() {
    let codec = RecordCodec::new(RecordEncoding::Json, SHADE.as_bytes())
        .unwrap()
        .with_enum_values(std::sync::Arc::new(enum_values(false)));
    for (text, sym) in [
        (r#"{"s":"dark"}"#, 0),
        (r#"{"s":"d-value"}"#, 0),
        (r#"{"s":"light"}"#, 1),
        (r#"{"s":2}"#, 1),
        (r#"{"s":2.5}"#, 2),
        (r#"{"s":true}"#, 3),
    ] {
        assert_eq!(
            codec.decode(text.as_bytes()).unwrap(),
            Value::Record(vec![Value::Enum(sym)]),
            "{text}"
        );
    }
    for bad in [
        r#"{"s":"nope"}"#,
        r#"{"s":3}"#,
        r#"{"s":false}"#,
        r#"{"s":1.5}"#,
    ] {
        let e = codec.decode(bad.as_bytes()).unwrap_err();
        assert!(
            e.0.contains("enum") || e.0.contains("symbol"),
            "{bad}: {e:?}"
        );
    }
    // Without a table only symbols are read.
    let plain = RecordCodec::new(RecordEncoding::Json, SHADE.as_bytes()).unwrap();
    assert!(plain.decode(br#"{"s":2}"#).is_err());
    // Written as the symbol by default, as the value with write_values.
    let v = Value::Record(vec![Value::Enum(1)]);
    let mut out = Vec::new();
    codec.encode(&v, &mut out).unwrap();
    assert_eq!(out, br#"{"s":"light"}"#);
    let official = codec
        .clone()
        .with_enum_values(std::sync::Arc::new(enum_values(true)));
    out.clear();
    official.encode(&v, &mut out).unwrap();
    assert_eq!(out, br#"{"s":2}"#);
    assert_eq!(official.decode(&out).unwrap(), v);
}

#[test]
fn json_records_of_many_fields_in_any_order() {
    // More than 64 fields (the vector form of the seen-set), keys out of declaration order,
    // an unknown key, and a missing field taking its default.
    let fields: Vec<serde_json::Value> = (0..70)
        .map(|i| json!({"name": format!("f{i}"), "type": "long", "default": -1}))
        .collect();
    let def = json!({"type": "record", "name": "Wide", "fields": fields});
    let s = AvroSchema::from_json(&def).unwrap();
    let mut obj = serde_json::Map::new();
    obj.insert("zzz".into(), json!([1, {"a": 2}]));
    for i in (1..70).rev() {
        obj.insert(format!("f{i}"), json!(i));
    }
    let text = serde_json::to_vec(&serde_json::Value::Object(obj)).unwrap();
    let mut want = vec![Value::Long(-1)];
    want.extend((1..70).map(Value::Long));
    assert_eq!(
        super::json::decode(&s, s.root, &text).unwrap(),
        Value::Record(want)
    );
}
