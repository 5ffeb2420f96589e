//! Property tests for every encoder/decoder pair of the TANK codec.

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;

use streamwire_tank::codec::wire::put_varint;
use streamwire_tank::codec::*;

#[derive(Debug, Clone)]
struct M {
    key: Option<Vec<u8>>,
    ts: u64,
    value: Vec<u8>,
}

fn msg() -> impl Strategy<Value = M> {
    (
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..20)),
        prop_oneof![Just(1_700_000_000_000u64), any::<u64>()],
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(key, ts, value)| M { key, ts, value })
}

fn out(ms: &[M]) -> Vec<OutMsg<'_>> {
    ms.iter()
        .map(|m| OutMsg {
            key: m.key.as_deref(),
            ts: m.ts,
            value: &m.value,
        })
        .collect()
}

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![Just(Compression::None), Just(Compression::Snappy)]
}

/// A chunk of bundles, each behind its varint length.
fn chunk_of(bundles: &[BytesMut]) -> Bytes {
    let mut c = BytesMut::new();
    for b in bundles {
        put_varint(&mut c, b.len() as u32);
        c.put_slice(b);
    }
    c.freeze()
}

proptest! {
    #[test]
    fn bundles_round_trip(ms in proptest::collection::vec(msg(), 1..40), comp in codec(), base in 1u64..1_000_000) {
        let mut b = BytesMut::new();
        encode_bundle(&mut b, &out(&ms), comp, &mut Vec::new()).unwrap();
        if comp == Compression::None {
            prop_assert_eq!(b.len(), plain_bundle_len(&out(&ms)));
        }
        let mut got = Vec::new();
        let next = decode_bundle(&b.freeze(), base, &mut got).unwrap();
        prop_assert_eq!(next, base + ms.len() as u64);
        prop_assert_eq!(got.len(), ms.len());
        for (i, (g, m)) in got.iter().zip(&ms).enumerate() {
            prop_assert_eq!(g.seq, base + i as u64);
            prop_assert_eq!(g.ts, m.ts);
            prop_assert_eq!(g.key.as_deref(), m.key.as_deref());
            prop_assert_eq!(&g.value[..], &m.value[..]);
        }
    }

    #[test]
    fn sparse_bundles_round_trip(ms in proptest::collection::vec(msg(), 1..20), gaps in proptest::collection::vec(1u64..5, 20), first in 1u64..1000, comp in codec()) {
        let mut seq = first;
        let items: Vec<(u64, OutMsg<'_>)> = out(&ms).into_iter().enumerate().map(|(i, m)| {
            if i > 0 { seq += gaps[i]; }
            (seq, m)
        }).collect();
        let mut b = BytesMut::new();
        encode_sparse_bundle(&mut b, &items, comp, &mut Vec::new()).unwrap();
        let mut got = Vec::new();
        decode_bundle(&b.freeze(), 0, &mut got).unwrap();
        prop_assert_eq!(got.iter().map(|m| m.seq).collect::<Vec<_>>(), items.iter().map(|i| i.0).collect::<Vec<_>>());
        prop_assert_eq!(got.iter().map(|m| m.value.to_vec()).collect::<Vec<_>>(), ms.iter().map(|m| m.value.clone()).collect::<Vec<_>>());
    }

    /// A chunk cut at any byte yields exactly the messages of its whole bundles, and asks
    /// for the first bundle's size when that one is cut.
    #[test]
    fn chunks_cut_anywhere_yield_whole_bundles(sizes in proptest::collection::vec(1usize..20, 1..6), cut_frac in 0.0f64..1.0, comp in codec()) {
        let mut bundles = Vec::new();
        let mut n = 0u64;
        for s in &sizes {
            let ms: Vec<M> = (0..*s).map(|i| M { key: None, ts: 5, value: vec![i as u8; 7] }).collect();
            let mut b = BytesMut::new();
            encode_bundle(&mut b, &out(&ms), comp, &mut Vec::new()).unwrap();
            bundles.push(b);
            n += *s as u64;
        }
        let chunk = chunk_of(&bundles);
        let cut = ((chunk.len() as f64) * cut_frac) as usize;
        let part = chunk.slice(..cut);
        let mut got = Vec::new();
        let d = decode_chunk(&part, Some(1), 0, n, &mut got).unwrap();
        // Count the whole bundles in the prefix.
        let mut whole = 0u64;
        let mut at = 0;
        for (b, s) in bundles.iter().zip(&sizes) {
            let len = 1 + (b.len() >= 128) as usize + (b.len() >= 16384) as usize + b.len();
            if at + len > cut { break; }
            at += len;
            whole += *s as u64;
        }
        prop_assert_eq!(got.len() as u64, whole);
        prop_assert!(got.iter().enumerate().all(|(i, m)| m.seq == 1 + i as u64));
        if whole == 0 {
            prop_assert_eq!(d.incomplete_bundle_len.is_some(), cut > 0);
        } else {
            prop_assert_eq!(d.next_seq, whole + 1);
        }
    }

    /// Requested seq and high water filter exactly.
    #[test]
    fn chunk_filters_by_requested_and_high_water(total in 1u64..60, req in 0u64..70, hw_off in 0u64..60) {
        let ms: Vec<M> = (0..total).map(|i| M { key: None, ts: 1, value: i.to_le_bytes().to_vec() }).collect();
        let mut bundles = Vec::new();
        for chunk in ms.chunks(7) {
            let mut b = BytesMut::new();
            encode_bundle(&mut b, &out(chunk), Compression::None, &mut Vec::new()).unwrap();
            bundles.push(b);
        }
        let hw = hw_off.min(total);
        let mut got = Vec::new();
        decode_chunk(&chunk_of(&bundles), Some(1), req, hw, &mut got).unwrap();
        let want: Vec<u64> = (1..=total).filter(|s| *s >= req && *s <= hw).collect();
        prop_assert_eq!(got.iter().map(|m| m.seq).collect::<Vec<_>>(), want);
    }

    #[test]
    fn consume_requests_round_trip(id in any::<u32>(), wait in any::<u64>(), min in any::<u32>(), flags in proptest::option::of(any::<u8>()), parts in proptest::collection::vec((any::<u16>(), any::<u64>(), any::<u32>()), 0..10)) {
        let ps: Vec<ConsumePartition> = parts.iter().map(|&(partition, seq, fetch_size)| ConsumePartition { partition, seq, fetch_size }).collect();
        let mut b = BytesMut::new();
        encode_consume(&mut b, id, wait, min, flags, &[ConsumeTopic { topic: b"topic", partitions: &ps }]).unwrap();
        let f = decode_frame(&mut b, 1 << 20).unwrap().unwrap();
        let r = decode_consume_request(&f.payload).unwrap();
        prop_assert_eq!((r.request_id, r.max_wait_ms, r.min_bytes, r.op_flags), (id, wait, min, flags));
        prop_assert_eq!(r.version, if flags.is_some() { 3 } else { 2 });
        prop_assert_eq!(&r.topics[0].1, &ps);
    }

    #[test]
    fn produce_requests_round_trip(id in any::<u32>(), bundles in proptest::collection::vec((any::<u16>(), proptest::collection::vec(any::<u8>(), 0..200)), 1..8), seq in proptest::option::of(any::<u64>())) {
        let parts: Vec<ProducePartition<'_>> = bundles.iter().map(|(p, b)| ProducePartition { partition: *p, bundle: b, base_seq: seq }).collect();
        let mut b = BytesMut::new();
        encode_produce(&mut b, id, &[ProduceTopic { topic: b"t", partitions: parts }]).unwrap();
        let f = decode_frame(&mut b, 1 << 20).unwrap().unwrap();
        prop_assert_eq!(f.msg_type, if seq.is_some() { 5 } else { 1 });
        let r = decode_produce_request(seq.is_some(), &f.payload).unwrap();
        prop_assert_eq!(r.request_id, id);
        let got: Vec<(u16, Vec<u8>)> = r.topics[0].1.iter().map(|(p, s, b)| { assert_eq!(*s, seq); (*p, b.clone()) }).collect();
        prop_assert_eq!(got, bundles);
    }

    #[test]
    fn produce_responses_round_trip(id in any::<u32>(), codes in proptest::collection::vec(proptest::collection::vec(prop_oneof![Just(ProduceStatus::Ok), Just(ProduceStatus::UnknownPartition), Just(ProduceStatus::SystemError), Just(ProduceStatus::InvalidSeqNum)], 1..5), 1..4), wide in proptest::option::of((0usize..4, prop_oneof![Just(ProduceStatus::UnknownTopic), Just(ProduceStatus::ReadOnly)]))) {
        let mut statuses = codes;
        if let Some((i, s)) = wide {
            if i < statuses.len() { let n = statuses[i].len(); statuses[i] = vec![s; n]; }
        }
        let mut b = BytesMut::new();
        encode_produce_response(&mut b, id, &statuses);
        let f = decode_frame(&mut b, 1 << 20).unwrap().unwrap();
        let shape: Vec<usize> = statuses.iter().map(Vec::len).collect();
        let r = decode_produce_response(&f.payload, &shape).unwrap();
        prop_assert_eq!(r.request_id, id);
        prop_assert_eq!(r.statuses, statuses);
    }

    #[test]
    fn consume_responses_round_trip(id in any::<u32>(), parts in proptest::collection::vec((any::<u16>(), 0u8..4, any::<u64>(), any::<u64>(), proptest::collection::vec(any::<u8>(), 0..50)), 0..6), unknown in any::<bool>()) {
        let results: Vec<PartitionResult> = parts.iter().map(|(p, kind, a, b, data)| PartitionResult {
            partition: *p,
            outcome: match kind {
                0 => PartitionOutcome::Data { base_seq: Some(*a), high_water: *b, chunk: Bytes::from(data.clone()) },
                1 => PartitionOutcome::Data { base_seq: None, high_water: *b, chunk: Bytes::from(data.clone()) },
                2 => PartitionOutcome::BoundaryFault { first_available: *a, high_water: *b },
                _ => PartitionOutcome::UnknownPartition,
            },
        }).collect();
        let resp = ConsumeResponse {
            request_id: id,
            topics: vec![
                TopicResult { topic: Bytes::from_static(b"a"), partitions: Some(results) },
                TopicResult { topic: Bytes::from_static(b"b"), partitions: if unknown { None } else { Some(vec![]) } },
            ],
        };
        let mut b = BytesMut::new();
        encode_consume_response(&mut b, &resp).unwrap();
        let f = decode_frame(&mut b, 1 << 20).unwrap().unwrap();
        prop_assert_eq!(response_request_id(f.msg_type, &f.payload), Some(id));
        prop_assert_eq!(decode_consume_response(f.payload).unwrap(), resp);
    }

    #[test]
    fn discover_partitions_responses_round_trip(id in any::<u32>(), parts in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..10)) {
        let resp = DiscoverPartitionsResponse {
            request_id: id,
            topic: b"topic".to_vec(),
            partitions: if parts.is_empty() { None } else { Some(parts.iter().map(|&(a, b)| DiscoveredPartition { first_available: a, high_water: b, reason: (a == u64::MAX && b == u64::MAX).then_some(0xfb) }).collect()) },
        };
        let mut b = BytesMut::new();
        encode_discover_partitions_response(&mut b, &resp);
        let f = decode_frame(&mut b, 1 << 20).unwrap().unwrap();
        prop_assert_eq!(decode_discover_partitions_response(&f.payload).unwrap(), resp);
    }
}

#[test]
fn counts_above_15_go_in_a_varint_and_1_to_15_in_the_flags() {
    let ms: Vec<M> = (0..16)
        .map(|_| M {
            key: None,
            ts: 1,
            value: vec![],
        })
        .collect();
    let mut b = BytesMut::new();
    encode_bundle(&mut b, &out(&ms), Compression::None, &mut Vec::new()).unwrap();
    assert_eq!((b[0], b[1]), (0, 16));
    let mut b = BytesMut::new();
    encode_bundle(
        &mut b,
        &out(&ms[..15]),
        Compression::Snappy,
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(b[0], (15 << 2) | 1);
}

#[test]
fn hostile_bundles_are_typed_errors() {
    // Snappy block claiming 4 GiB of output from 6 bytes.
    let bundle = Bytes::from_static(&[0x05, 0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(matches!(
        decode_bundle(&bundle, 1, &mut Vec::new()),
        Err(CodecError::TooLarge { .. })
    ));
    // Count of 1000 with no messages behind it.
    let bundle = Bytes::from_static(&[0x00, 0xe8, 0x07]);
    assert!(decode_bundle(&bundle, 1, &mut Vec::new()).is_err());
    // Codec 2 and extra flags are unsupported, not misread.
    assert_eq!(
        decode_bundle(&Bytes::from_static(&[0x06]), 1, &mut Vec::new()),
        Err(CodecError::Unsupported("bundle codec other than Snappy"))
    );
    assert!(matches!(
        decode_bundle(&Bytes::from_static(&[0x84]), 1, &mut Vec::new()),
        Err(CodecError::Unsupported(_))
    ));
    // "Use last timestamp" on the first message.
    let bundle = Bytes::from_static(&[0x04, 0x02, 0x00]);
    assert!(decode_bundle(&bundle, 1, &mut Vec::new()).is_err());
}

#[test]
fn encoders_refuse_what_tank_cannot_carry() {
    let mut b = BytesMut::new();
    assert!(encode_create_topic(&mut b, 1, &[b'x'; 65], 1, b"").is_err());
    assert!(encode_create_topic(&mut b, 1, b"", 1, b"").is_err());
    let long_key = [0u8; 256];
    assert!(encode_bundle(
        &mut b,
        &[OutMsg {
            key: Some(&long_key),
            ts: 0,
            value: b""
        }],
        Compression::None,
        &mut Vec::new()
    )
    .is_err());
    assert!(encode_bundle(&mut b, &[], Compression::None, &mut Vec::new()).is_err());
    let many: Vec<ProducePartition<'_>> = (0..256)
        .map(|p| ProducePartition {
            partition: p,
            bundle: b"",
            base_seq: None,
        })
        .collect();
    assert!(encode_produce(
        &mut b,
        1,
        &[ProduceTopic {
            topic: b"t",
            partitions: many
        }]
    )
    .is_err());
}

/// The payload of the one frame in `buf`, after checking its message type.
fn payload_of(buf: &mut BytesMut, msg: MsgType) -> Bytes {
    let f = decode_frame(buf, 1 << 24).unwrap().expect("a whole frame");
    assert_eq!(f.msg_type, msg as u8);
    assert!(buf.is_empty(), "one frame, nothing after it");
    f.payload
}

fn topic_name() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(prop_oneof![b'a'..=b'z', b'0'..=b'9', Just(b'_')], 1..40)
}

fn create_status() -> impl Strategy<Value = CreateTopicStatus> {
    prop_oneof![
        Just(CreateTopicStatus::Ok),
        Just(CreateTopicStatus::AlreadyExists),
        Just(CreateTopicStatus::SystemError),
        Just(CreateTopicStatus::InvalidConfig),
        Just(CreateTopicStatus::ReadOnly),
        Just(CreateTopicStatus::InvalidRequest),
        Just(CreateTopicStatus::NotSupported),
        prop_oneof![Just(3u8), 6u8..10, 12u8..=255].prop_map(CreateTopicStatus::Other),
    ]
}

fn reload_status() -> impl Strategy<Value = ReloadConfStatus> {
    prop_oneof![
        Just(ReloadConfStatus::Ok),
        Just(ReloadConfStatus::Io),
        Just(ReloadConfStatus::BadConfig),
        Just(ReloadConfStatus::UnknownPartition),
        Just(ReloadConfStatus::UnknownTopic),
        Just(ReloadConfStatus::ClusterAware),
        prop_oneof![Just(1u8), 4u8..10, 13u8..=255].prop_map(ReloadConfStatus::Other),
    ]
}

proptest! {
    #[test]
    fn admin_requests_round_trip(id in any::<u32>(), topic in topic_name(), parts in proptest::collection::vec(any::<u16>(), 0..20), n in any::<u16>(), config in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut b = BytesMut::new();
        encode_discover_partitions(&mut b, id, &topic, &parts).unwrap();
        let r = decode_discover_partitions_request(&payload_of(&mut b, MsgType::DiscoverPartitions)).unwrap();
        prop_assert_eq!(r, DiscoverPartitionsRequest { request_id: id, topic: topic.clone(), partitions: parts.clone() });

        encode_create_topic(&mut b, id, &topic, n, &config).unwrap();
        let r = decode_create_topic_request(&payload_of(&mut b, MsgType::CreateTopic)).unwrap();
        prop_assert_eq!(r, CreateTopicRequest { request_id: id, topic: topic.clone(), partitions: n, config: config.clone() });

        encode_reload_conf(&mut b, id, &topic, n).unwrap();
        let r = decode_reload_conf_request(&payload_of(&mut b, MsgType::ReloadConf)).unwrap();
        prop_assert_eq!(r, (id, topic.clone(), n));

        encode_status(&mut b, id);
        prop_assert_eq!(decode_id_request(&payload_of(&mut b, MsgType::Status), false).unwrap(), id);
        encode_discover_topics(&mut b, id);
        prop_assert_eq!(decode_id_request(&payload_of(&mut b, MsgType::DiscoverTopics), true).unwrap(), id);
        encode_discover_topology(&mut b, id);
        prop_assert_eq!(decode_id_request(&payload_of(&mut b, MsgType::DiscoverTopology), true).unwrap(), id);
    }

    #[test]
    fn admin_responses_round_trip(id in any::<u32>(), topic in topic_name(), part in any::<u16>(), cs in create_status(), rs in reload_status(), nums in proptest::array::uniform8(any::<u32>()), flags in any::<u8>(), cluster in proptest::option::of((topic_name(), any::<u32>()))) {
        let mut b = BytesMut::new();
        let ct = CreateTopicResponse { request_id: id, topic: topic.clone(), status: cs };
        encode_create_topic_response(&mut b, &ct);
        prop_assert_eq!(decode_create_topic_response(&payload_of(&mut b, MsgType::CreateTopic)).unwrap(), ct);

        let rc = ReloadConfResponse { request_id: id, topic: topic.clone(), partition: part, status: rs };
        encode_reload_conf_response(&mut b, &rc);
        prop_assert_eq!(decode_reload_conf_response(&payload_of(&mut b, MsgType::ReloadConf)).unwrap(), rc);

        let st = StatusResponse {
            request_id: id,
            global_flags: flags,
            cluster_aware: cluster.is_some(),
            topics: nums[0],
            partitions: nums[1],
            cluster_name: cluster.as_ref().map(|c| c.0.clone()),
            available_nodes: cluster.as_ref().map(|c| c.1),
            open_partitions: nums[2],
            open_partitions_time: nums[3],
            startup_ts: nums[4],
            version: nums[5],
        };
        encode_status_response(&mut b, &st);
        prop_assert_eq!(decode_status_response(&payload_of(&mut b, MsgType::Status)).unwrap(), st);
    }

    #[test]
    fn discover_topics_and_topology_responses_round_trip(id in any::<u32>(), aware in any::<bool>(), topics in proptest::collection::vec((topic_name(), any::<bool>(), any::<u16>(), any::<u8>()), 0..12), nodes in 0u16..0xffff, name in topic_name(), raw in proptest::collection::vec(any::<u8>(), 0..40)) {
        let mut b = BytesMut::new();
        let dt = DiscoverTopicsResponse {
            request_id: id,
            cluster_aware: aware,
            topics: topics.iter().map(|(name, enabled, partitions, rf)| TopicInfo {
                name: name.clone(),
                enabled: *enabled,
                partitions: *partitions,
                repl_factor: aware.then_some(*rf),
            }).collect(),
        };
        encode_discover_topics_response(&mut b, &dt);
        prop_assert_eq!(decode_discover_topics_response(&payload_of(&mut b, MsgType::DiscoverTopics)).unwrap(), dt);

        encode_discover_topology_response(&mut b, id, &Topology::Standalone);
        prop_assert_eq!(decode_discover_topology_response(&payload_of(&mut b, MsgType::DiscoverTopology)).unwrap(), (id, Topology::Standalone));
        let cl = Topology::Cluster { name, nodes, raw: Bytes::from(raw) };
        encode_discover_topology_response(&mut b, id, &cl);
        prop_assert_eq!(decode_discover_topology_response(&payload_of(&mut b, MsgType::DiscoverTopology)).unwrap(), (id, cl));
    }

    #[test]
    fn admin_request_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode_discover_partitions_request(&bytes);
        let _ = decode_create_topic_request(&bytes);
        let _ = decode_reload_conf_request(&bytes);
        let _ = decode_id_request(&bytes, true);
        let _ = decode_status_response(&bytes);
        let _ = decode_discover_topics_response(&bytes);
        let _ = decode_discover_topology_response(&bytes);
    }
}
