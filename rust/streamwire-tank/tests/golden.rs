//! The golden frames captured from a real TANK broker (shared/design/TANK.md §8), replayed
//! byte for byte: our encoders produce exactly the captured requests, and our decoders read
//! the captured responses to the values the broker meant.

use bytes::{Bytes, BytesMut};

use streamwire_tank::codec::{self, *};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn frame(wire: &[u8]) -> RawFrame {
    let mut b = BytesMut::from(wire);
    let f = decode_frame(&mut b, 1 << 20).unwrap().unwrap();
    assert!(b.is_empty());
    f
}

const TS: u64 = 1_700_000_000_000;

#[test]
fn greeting_is_a_ping() {
    let f = frame(&hex("0300000000"));
    assert_eq!(f.msg_type, MsgType::Ping as u8);
    let mut b = BytesMut::new();
    encode_ping(&mut b);
    assert_eq!(&b[..], &hex("0300000000")[..]);
}

#[test]
fn create_topic() {
    let mut b = BytesMut::new();
    encode_create_topic(&mut b, 1, b"t1", 1, b"").unwrap();
    assert_eq!(&b[..], &hex("070a00000001000000027431010000")[..]);
    let ok = frame(&hex("07080000000100000002743100"));
    assert_eq!(response_request_id(ok.msg_type, &ok.payload), Some(1));
    let r = decode_create_topic_response(&ok.payload).unwrap();
    assert_eq!(
        (r.topic.as_slice(), r.status),
        (&b"t1"[..], CreateTopicStatus::Ok)
    );
    let again = frame(&hex("07080000000700000002743101"));
    assert_eq!(
        decode_create_topic_response(&again.payload).unwrap().status,
        CreateTopicStatus::AlreadyExists
    );
    // The broker's side (admin.rs) writes the captured answers back byte for byte.
    let mut b = BytesMut::new();
    encode_create_topic_response(&mut b, &r);
    assert_eq!(&b[..], &hex("07080000000100000002743100")[..]);
    let mut b = BytesMut::new();
    encode_create_topic_response(
        &mut b,
        &decode_create_topic_response(&again.payload).unwrap(),
    );
    assert_eq!(&b[..], &hex("07080000000700000002743101")[..]);
    let req = decode_create_topic_request(&frame(&hex("070a00000001000000027431010000")).payload)
        .unwrap();
    assert_eq!(
        (req.request_id, &req.topic[..], req.partitions),
        (1, &b"t1"[..], 1)
    );
}

#[test]
fn produce_two_messages() {
    let want = hex(
        "012f0000000200020000000270790000000000010274310100001908010068e5cf8b01000001\
         6b0568656c6c6f0205776f726c64",
    );
    // The capturing probe sent clientId "py" (the broker skips it).
    let sent = frame(&want);
    let req = decode_produce_request(false, &sent.payload).unwrap();
    assert_eq!((req.request_id, &req.client_id[..]), (2, &b"py"[..]));
    assert_eq!(req.topics.len(), 1);
    let (topic, parts) = &req.topics[0];
    assert_eq!(&topic[..], b"t1");
    let (partition, base, bundle) = &parts[0];
    assert_eq!((*partition, *base), (0, None));
    // Re-encode from the decoded pieces: byte for byte.
    let mut b = BytesMut::new();
    encode_produce_as(
        &mut b,
        req.request_id,
        b"py",
        &[ProduceTopic {
            topic,
            partitions: vec![ProducePartition {
                partition: 0,
                bundle,
                base_seq: None,
            }],
        }],
    )
    .unwrap();
    assert_eq!(&b[..], &want[..]);
    // And the bundle is exactly what our encoder makes of the two messages.
    let mut ours = BytesMut::new();
    encode_bundle(
        &mut ours,
        &[
            OutMsg {
                key: Some(b"k"),
                ts: TS,
                value: b"hello",
            },
            OutMsg {
                key: None,
                ts: TS,
                value: b"world",
            },
        ],
        Compression::None,
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(&ours[..], &bundle[..]);
    let resp = frame(&hex("01050000000200000000"));
    let r = decode_produce_response(&resp.payload, &[1]).unwrap();
    assert_eq!((r.request_id, r.status(0, 0)), (2, Some(ProduceStatus::Ok)));
}

#[test]
fn consume_from_the_start() {
    let mut b = BytesMut::new();
    let parts = [ConsumePartition {
        partition: 0,
        seq: 0,
        fetch_size: 1024,
    }];
    encode_consume(
        &mut b,
        3,
        0,
        0,
        None,
        &[ConsumeTopic {
            topic: b"t1",
            partitions: &parts,
        }],
    )
    .unwrap();
    assert_eq!(
        &b[..],
        &hex("02260000000200030000000000000000000000000000000001027431010000000000000000000000040000")[..]
    );
    let resp = frame(&hex(
        "023e00000020000000030000000102743101000000010000000000000002000000000000001a000000\
         1908010068e5cf8b010000016b0568656c6c6f0205776f726c64",
    ));
    assert_eq!(response_request_id(resp.msg_type, &resp.payload), Some(3));
    let r = decode_consume_response(resp.payload.clone()).unwrap();
    let p = &r.topics[0].partitions.as_ref().unwrap()[0];
    let PartitionOutcome::Data {
        base_seq,
        high_water,
        chunk,
    } = &p.outcome
    else {
        panic!("{:?}", p.outcome)
    };
    assert_eq!((*base_seq, *high_water), (Some(1), 2));
    let mut msgs = Vec::new();
    let d = decode_chunk(chunk, *base_seq, 0, *high_water, &mut msgs).unwrap();
    assert_eq!(d.next_seq, 3);
    assert_eq!(
        msgs,
        vec![
            Message {
                seq: 1,
                ts: TS,
                key: Some(Bytes::from_static(b"k")),
                value: Bytes::from_static(b"hello"),
            },
            Message {
                seq: 2,
                ts: TS,
                key: None,
                value: Bytes::from_static(b"world"),
            },
        ]
    );
}

#[test]
fn consume_unknown_topic() {
    let mut b = BytesMut::new();
    let parts = [ConsumePartition {
        partition: 0,
        seq: 0,
        fetch_size: 1024,
    }];
    encode_consume(
        &mut b,
        4,
        0,
        0,
        None,
        &[ConsumeTopic {
            topic: b"nope",
            partitions: &parts,
        }],
    )
    .unwrap();
    assert_eq!(
        &b[..],
        &hex("02280000000200040000000000000000000000000000000001046e6f7065010000000000000000000000040000")[..]
    );
    let resp = frame(&hex("02110000000d0000000400000001046e6f706501ffff"));
    let r = decode_consume_response(resp.payload).unwrap();
    assert_eq!(r.request_id, 4);
    assert_eq!(r.topics[0].topic, Bytes::from_static(b"nope"));
    assert_eq!(r.topics[0].partitions, None);
}

#[test]
fn discover_partitions() {
    let mut b = BytesMut::new();
    encode_discover_partitions(&mut b, 5, b"t1", &[]).unwrap();
    assert_eq!(&b[..], &hex("060700000005000000027431")[..]);
    let resp = frame(&hex(
        "061900000005000000027431010001000000000000000200000000000000",
    ));
    let r = decode_discover_partitions_response(&resp.payload).unwrap();
    assert_eq!(
        r.partitions,
        Some(vec![DiscoveredPartition {
            first_available: 1,
            high_water: 2,
            reason: None
        }])
    );
    let mut b = BytesMut::new();
    encode_discover_partitions(&mut b, 6, b"nope", &[]).unwrap();
    assert_eq!(&b[..], &hex("060900000006000000046e6f7065")[..]);
    let unknown = frame(&hex("060b00000006000000046e6f70650000"));
    assert_eq!(
        codec::decode_discover_partitions_response(&unknown.payload)
            .unwrap()
            .partitions,
        None
    );
}
