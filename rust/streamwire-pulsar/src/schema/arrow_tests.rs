//! Arrow columns ↔ records: random record schemas and rows through a built column and back
//! (columns → records → columns), every Arrow type a front end may hand in, key/value
//! halves, and the error texts the Python binding raises (the bad-input tables pin them).

use std::borrow::Cow;

use proptest::prelude::*;
use serde_json::json;
use streamwire_core::arrow_view::{ArrayData, ColumnView, ViewType};

use super::arrow_decode::column;
use super::arrow_encode::{arrow_records, ArrowError, ArrowRead, Records};
use super::arrow_kv::{arrow_payloads, half_column, ColumnCodec, HalfCodec};
use super::avro::AvroSchema;
use super::keyvalue::{b64, split_halves};
use super::tests::{definition, ty, value, Ty};
use super::value::Value;
use super::{RecordCodec, RecordEncoding};

/// Whether `t` has a nullable record: a null row of it leaves nulls in its non-nullable
/// fields' columns, which a reader refuses (as it did before these moved here).
fn has_nullable_record(t: &Ty) -> bool {
    match t {
        Ty::Nullable(i) => matches!(**i, Ty::Record(_)) || has_nullable_record(i),
        Ty::Array(i) | Ty::Map(i) => has_nullable_record(i),
        Ty::Record(fs) => fs.iter().any(has_nullable_record),
        _ => false,
    }
}

fn rows_of(root: &Ty) -> BoxedStrategy<Vec<Value>> {
    prop::collection::vec(value(root), 0..6).boxed()
}

fn records_of(a: &ArrayData) -> Records<'_> {
    Records::of_struct(a.view())
}

proptest! {
    #[test]
    fn records_round_trip_through_columns(
        (root, rows) in prop::collection::vec(ty(), 0..5)
            .prop_map(Ty::Record)
            .prop_flat_map(|t| (Just(t.clone()), rows_of(&t)))
    ) {
        prop_assume!(!has_nullable_record(&root));
        let s = AvroSchema::from_json(&definition(&root, &mut 0)).unwrap();
        let refs: Vec<&Value> = rows.iter().collect();
        let built = column(&s, s.root, &refs).unwrap();
        prop_assert_eq!(built.len, rows.len());
        let back = arrow_records(&s, &records_of(&built), ArrowRead::default()).unwrap();
        prop_assert_eq!(&back, &rows);
        // And once more: the read-back rows build the same column.
        let again: Vec<&Value> = back.iter().collect();
        prop_assert_eq!(column(&s, s.root, &again).unwrap(), built);
    }

    #[test]
    fn bytes_and_string_halves_round_trip(
        keys in prop::collection::vec(prop::option::of(".{0,6}"), 0..8),
        separated in any::<bool>(),
    ) {
        let raws: Vec<Option<&[u8]>> = keys.iter().map(|k| k.as_deref().map(str::as_bytes)).collect();
        let col = half_column(HalfCodec::String, &raws, &[], &[]).unwrap();
        let batch = Records { rows: raws.len(), columns: vec![("key".into(), vec![col.view()])],
            row_valid: None, batch: true };
        let codec = ColumnCodec::KeyValue { key: HalfCodec::String, value: HalfCodec::Bytes, separated };
        let p = arrow_payloads(codec, &batch).unwrap().unwrap();
        let mut at = 0;
        for (i, n) in p.lens.iter().enumerate() {
            let payload = &p.buf[at..at + n];
            at += n;
            let key = if separated {
                // A SEPARATED null key half is sent as the empty key.
                Some(b64::decode(p.keys[i].as_deref().unwrap()).unwrap())
                    .filter(|k| !k.is_empty() || raws[i].is_some())
            } else {
                split_halves(payload).unwrap().0.map(<[u8]>::to_vec)
            };
            prop_assert_eq!(key.as_deref(), raws[i]);
        }
    }
}

fn def(fields: serde_json::Value) -> AvroSchema {
    AvroSchema::from_json(&json!({"type": "record", "name": "R", "fields": fields})).unwrap()
}

fn leaf(name: &str, ty: ViewType, len: usize, bufs: Vec<Vec<u8>>) -> ColumnView<'static> {
    ColumnView {
        ty,
        type_name: Cow::Owned(name.into()),
        len,
        offset: 0,
        validity: None,
        buffers: bufs.into_iter().map(Cow::Owned).collect(),
        children: Vec::new(),
    }
}

fn batch<'a>(cols: Vec<(&str, ColumnView<'a>)>, rows: usize) -> Records<'a> {
    Records {
        rows,
        columns: cols.into_iter().map(|(n, c)| (n.into(), vec![c])).collect(),
        row_valid: None,
        batch: true,
    }
}

fn read(s: &AvroSchema, r: &Records<'_>) -> Result<Vec<Value>, ArrowError> {
    arrow_records(s, r, ArrowRead::default())
}

fn le<T: Copy, const N: usize>(xs: &[T], to: fn(T) -> [u8; N]) -> Vec<u8> {
    xs.iter().flat_map(|x| to(*x)).collect()
}

#[test]
fn every_integer_and_temporal_type_widens() {
    let s = def(json!([{"name": "a", "type": "long"}]));
    let int = |bytes, signed| ViewType::Int { bytes, signed };
    let cases = [
        leaf("int8", int(1, true), 2, vec![vec![0xff, 1]]),
        leaf("uint8", int(1, false), 2, vec![vec![0xff, 1]]),
        leaf(
            "int16",
            int(2, true),
            2,
            vec![le(&[-1i16, 1], i16::to_le_bytes)],
        ),
        leaf(
            "uint16",
            int(2, false),
            2,
            vec![le(&[u16::MAX, 1], u16::to_le_bytes)],
        ),
        leaf(
            "int32",
            int(4, true),
            2,
            vec![le(&[-1i32, 1], i32::to_le_bytes)],
        ),
        leaf(
            "uint32",
            int(4, false),
            2,
            vec![le(&[u32::MAX, 1], u32::to_le_bytes)],
        ),
        leaf(
            "int64",
            int(8, true),
            2,
            vec![le(&[-1i64, 1], i64::to_le_bytes)],
        ),
        leaf(
            "date32[day]",
            ViewType::Temporal { bytes: 4 },
            2,
            vec![le(&[-1i32, 1], i32::to_le_bytes)],
        ),
        leaf(
            "timestamp[ms]",
            ViewType::Temporal { bytes: 8 },
            2,
            vec![le(&[-1i64, 1], i64::to_le_bytes)],
        ),
    ];
    for c in cases {
        let signed = !c.type_name.starts_with('u');
        let max = match c.ty {
            ViewType::Int {
                bytes,
                signed: false,
            } => (1i64 << (8 * bytes as u32)) - 1,
            _ => 0,
        };
        let name = c.type_name.to_string();
        let got = read(&s, &batch(vec![("a", c)], 2)).unwrap();
        let first = if signed { -1 } else { max };
        assert_eq!(
            got,
            vec![
                Value::Record(vec![Value::Long(first)]),
                Value::Record(vec![Value::Long(1)])
            ],
            "{name}"
        );
    }
    // uint64 does not fit a long; floats do not fit an integer.
    for (name, ty) in [
        ("uint64", int(8, false)),
        ("double", ViewType::Float { bytes: 8 }),
    ] {
        let e = read(
            &s,
            &batch(vec![("a", leaf(name, ty, 1, vec![vec![0; 8]]))], 1),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("column \"a\" is {name}, which does not fit the schema's long")
        );
    }
}

#[test]
fn floats_binaries_and_lists_of_every_width() {
    let s = def(json!([
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"},
        {"name": "b", "type": "bytes"},
        {"name": "x", "type": {"type": "fixed", "name": "X", "size": 2}},
        {"name": "l", "type": {"type": "array", "items": "int"}}
    ]));
    let list_child = leaf(
        "int32",
        ViewType::Int {
            bytes: 4,
            signed: true,
        },
        3,
        vec![le(&[7i32, 8, 9], i32::to_le_bytes)],
    );
    let mut list = leaf(
        "large_list<item: int32>",
        ViewType::List { large: true },
        2,
        vec![le(&[0i64, 1, 3], i64::to_le_bytes)],
    );
    list.children = vec![list_child];
    let r = batch(
        vec![
            (
                "f",
                leaf(
                    "float",
                    ViewType::Float { bytes: 4 },
                    2,
                    vec![le(&[1.5f32, -2.0], f32::to_le_bytes)],
                ),
            ),
            (
                "d",
                leaf(
                    "int16",
                    ViewType::Int {
                        bytes: 2,
                        signed: true,
                    },
                    2,
                    vec![le(&[3i16, 4], i16::to_le_bytes)],
                ),
            ),
            (
                "b",
                leaf(
                    "large_binary",
                    ViewType::Binary {
                        utf8: false,
                        large: true,
                    },
                    2,
                    vec![le(&[0i64, 1, 3], i64::to_le_bytes), b"abc".to_vec()],
                ),
            ),
            (
                "x",
                leaf(
                    "fixed_size_binary[2]",
                    ViewType::FixedBinary(2),
                    2,
                    vec![b"pqrs".to_vec()],
                ),
            ),
            ("l", list),
        ],
        2,
    );
    let got = read(&s, &r).unwrap();
    assert_eq!(
        got[0],
        Value::Record(vec![
            Value::Float(1.5),
            Value::Double(3.0),
            Value::Bytes(b"a".to_vec()),
            Value::Fixed(b"pq".to_vec()),
            Value::Array(vec![Value::Int(7)]),
        ])
    );
    assert_eq!(
        got[1],
        Value::Record(vec![
            Value::Float(-2.0),
            Value::Double(4.0),
            Value::Bytes(b"bc".to_vec()),
            Value::Fixed(b"rs".to_vec()),
            Value::Array(vec![Value::Int(8), Value::Int(9)]),
        ])
    );
}

#[test]
fn the_error_texts_are_the_bindings() {
    let s = def(json!([{"name": "a", "type": "int"}, {"name": "e",
        "type": ["null", {"type": "enum", "name": "E", "symbols": ["X", "Y"]}]}]));
    let int64 = |xs: &[i64]| {
        leaf(
            "int64",
            ViewType::Int {
                bytes: 8,
                signed: true,
            },
            xs.len(),
            vec![le(xs, i64::to_le_bytes)],
        )
    };
    let err = |r: Records<'static>| read(&s, &r).unwrap_err().to_string();
    assert_eq!(
        err(batch(vec![("zz", int64(&[1]))], 1)),
        "column \"zz\" is not a field of record R (its fields: a, e)"
    );
    assert_eq!(
        err(batch(vec![], 1)),
        "no column for field \"a\" (int), which is not nullable"
    );
    assert_eq!(
        err(batch(vec![("a", int64(&[1, 1 << 40]))], 2)),
        "column \"a\" row 1: 1099511627776 does not fit an Avro int"
    );
    let mut nulls = int64(&[1, 2]);
    nulls.validity = Some(Cow::Owned(vec![0b01]));
    assert_eq!(
        err(batch(vec![("a", nulls)], 2)),
        "column \"a\" row 1 is null, but the schema's int is not nullable"
    );
    let items = vec![
        ("a", int64(&[1])),
        (
            "e",
            leaf(
                "string",
                ViewType::Binary {
                    utf8: true,
                    large: false,
                },
                1,
                vec![le(&[0i32, 1], i32::to_le_bytes), b"Q".to_vec()],
            ),
        ),
    ];
    assert_eq!(
        err(batch(items, 1)),
        "column \"e\" row 0: \"Q\" is not a symbol of the enum (X, Y)"
    );
    let short = leaf(
        "int64",
        ViewType::Int {
            bytes: 8,
            signed: true,
        },
        2,
        vec![vec![0; 8]],
    );
    assert_eq!(
        read(&s, &batch(vec![("a", short)], 2)).unwrap_err(),
        ArrowError::Layout("an Arrow data buffer is too short".into())
    );
    let kv = ColumnCodec::KeyValue {
        key: HalfCodec::Bytes,
        value: HalfCodec::Bytes,
        separated: false,
    };
    let not_batch = Records {
        batch: false,
        ..batch(vec![], 0)
    };
    assert_eq!(
        arrow_payloads(kv, &not_batch).unwrap_err().to_string(),
        "a key/value schema takes Arrow columns as a record batch with 'key' and 'value' columns"
    );
    assert_eq!(
        arrow_payloads(kv, &batch(vec![("k", int64(&[1]))], 1))
            .unwrap_err()
            .to_string(),
        "column \"k\" is neither 'key' nor 'value' of the key/value schema"
    );
    assert_eq!(
        arrow_payloads(kv, &batch(vec![("key", int64(&[1]))], 1))
            .unwrap_err()
            .to_string(),
        "column \"key\" is int64; the key/value schema's key half takes a binary or string column"
    );
}

#[test]
fn record_halves_decode_into_struct_columns_and_encode_back() {
    // A nullable field: our column of a null row has a null there (pyarrow's would hold an
    // empty value), which a non-nullable field refuses to read back.
    let text =
        br#"{"type": "record", "name": "V", "fields": [{"name": "n", "type": ["null", "long"]}]}"#;
    let codec = RecordCodec::new(RecordEncoding::Avro, text).unwrap();
    let mut a = Vec::new();
    codec
        .encode(&Value::Record(vec![Value::Long(5)]), &mut a)
        .unwrap();
    let raws: Vec<Option<&[u8]>> = vec![Some(&a), None];
    let col = half_column(HalfCodec::Record(&codec), &raws, &[], &[]).unwrap();
    assert_eq!(col.validity, Some(vec![0b01]));
    let r = batch(vec![("value", col.view())], 2);
    let kv = ColumnCodec::KeyValue {
        key: HalfCodec::Bytes,
        value: HalfCodec::Record(&codec),
        separated: true,
    };
    let p = arrow_payloads(kv, &r).unwrap().unwrap();
    assert_eq!(p.lens, vec![a.len(), 0]);
    assert_eq!(&p.buf[..], &a[..]);
    let bad = half_column(HalfCodec::Record(&codec), &[Some(b"\x01")], &[], &[]).unwrap_err();
    assert!(
        bad.to_string().starts_with("cannot decode row 0: "),
        "{bad}"
    );
    let not_utf8 = half_column(HalfCodec::String, &[Some(b"\xff")], &[], &[]).unwrap_err();
    assert_eq!(not_utf8.to_string(), "row 0: a STRING half is not UTF-8");
}
