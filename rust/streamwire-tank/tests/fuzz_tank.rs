//! A bounded, deterministic run of the TANK fuzz bodies inside `cargo test`: seeded mutations
//! of valid consume responses and bundles, plus random bytes. `STREAMWIRE_FUZZ_ITERS` sets
//! the iterations (default 2000). The cargo-fuzz targets in `fuzz/` run the same bodies.

use bytes::{BufMut, BytesMut};

use streamwire_tank::codec::wire::put_varint;
use streamwire_tank::codec::*;
use streamwire_tank::fuzzing::{fuzz_admin, fuzz_bundle, fuzz_consume_response};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for comp in [Compression::None, Compression::Snappy] {
        let msgs: Vec<OutMsg<'_>> = (0..20)
            .map(|i| OutMsg {
                key: (i % 3 == 0).then_some(&b"key"[..]),
                ts: 1_700_000_000_000 + (i / 4),
                value: &b"value value value"[..(i as usize % 17)],
            })
            .collect();
        let mut bundle = BytesMut::new();
        encode_bundle(&mut bundle, &msgs, comp, &mut Vec::new()).unwrap();
        let mut sparse = BytesMut::new();
        let items: Vec<(u64, OutMsg<'_>)> = msgs
            .iter()
            .enumerate()
            .map(|(i, m)| (10 + i as u64 * 2, *m))
            .collect();
        encode_sparse_bundle(&mut sparse, &items, comp, &mut Vec::new()).unwrap();
        let mut chunk = BytesMut::new();
        for b in [&bundle, &sparse] {
            put_varint(&mut chunk, b.len() as u32);
            chunk.put_slice(b);
        }
        let resp = ConsumeResponse {
            request_id: 9,
            topics: vec![TopicResult {
                topic: bytes::Bytes::from_static(b"t"),
                partitions: Some(vec![PartitionResult {
                    partition: 0,
                    outcome: PartitionOutcome::Data {
                        base_seq: Some(1),
                        high_water: 100,
                        chunk: chunk.freeze(),
                    },
                }]),
            }],
        };
        let mut frame = BytesMut::new();
        encode_consume_response(&mut frame, &resp).unwrap();
        out.push(frame[5..].to_vec());
        out.push(bundle.to_vec());
        out.push(sparse.to_vec());
    }
    out
}

#[test]
fn bounded_fuzz_run_of_the_tank_decoders() {
    let iters: usize = std::env::var("STREAMWIRE_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let seeds = seeds();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for i in 0..iters {
        let mut data = if i % 10 == 9 {
            (0..rng.below(200)).map(|_| rng.next() as u8).collect()
        } else {
            seeds[rng.below(seeds.len())].clone()
        };
        for _ in 0..=rng.below(8) {
            if data.is_empty() {
                break;
            }
            let at = rng.below(data.len());
            match rng.below(4) {
                0 => data[at] = rng.next() as u8,
                1 => data.truncate(at),
                2 => data.insert(at, rng.next() as u8),
                _ => data[at] ^= 1 << rng.below(8),
            }
        }
        fuzz_consume_response(&data);
        fuzz_bundle(&data);
    }
    // The admin decoders, from every admin response the broker side encodes (mutated).
    let admin = admin_seeds();
    for _ in 0..iters {
        let mut data = admin[rng.below(admin.len())].clone();
        for _ in 0..=rng.below(6) {
            if data.len() < 2 {
                break;
            }
            let at = 1 + rng.below(data.len() - 1);
            match rng.below(3) {
                0 => data[at] = rng.next() as u8,
                1 => data.truncate(at),
                _ => data.insert(at, rng.next() as u8),
            }
        }
        fuzz_admin(&data);
    }
}

/// `[which decoder] ++ payload` for each admin response (see `fuzz_admin`).
fn admin_seeds() -> Vec<Vec<u8>> {
    let with = |which: u8, b: BytesMut| {
        let mut v = vec![which];
        v.extend_from_slice(&b[5..]);
        v
    };
    let mut out = Vec::new();
    let mut b = BytesMut::new();
    encode_discover_partitions_response(
        &mut b,
        &DiscoverPartitionsResponse {
            request_id: 1,
            topic: b"t".to_vec(),
            partitions: Some(vec![DiscoveredPartition {
                first_available: 1,
                high_water: 9,
                reason: None,
            }]),
        },
    );
    out.push(with(0, b.split()));
    encode_create_topic_response(
        &mut b,
        &CreateTopicResponse {
            request_id: 2,
            topic: b"t".to_vec(),
            status: CreateTopicStatus::Ok,
        },
    );
    out.push(with(1, b.split()));
    encode_reload_conf_response(
        &mut b,
        &ReloadConfResponse {
            request_id: 3,
            topic: b"t".to_vec(),
            partition: 0,
            status: ReloadConfStatus::Ok,
        },
    );
    out.push(with(2, b.split()));
    encode_status_response(
        &mut b,
        &StatusResponse {
            request_id: 4,
            global_flags: 0,
            cluster_aware: true,
            topics: 1,
            partitions: 2,
            cluster_name: Some(b"c".to_vec()),
            available_nodes: Some(1),
            open_partitions: 1,
            open_partitions_time: 1,
            startup_ts: 1,
            version: 400,
        },
    );
    out.push(with(3, b.split()));
    encode_discover_topics_response(
        &mut b,
        &DiscoverTopicsResponse {
            request_id: 5,
            cluster_aware: false,
            topics: vec![TopicInfo {
                name: b"t".to_vec(),
                enabled: true,
                partitions: 3,
                repl_factor: None,
            }],
        },
    );
    out.push(with(4, b.split()));
    encode_discover_topology_response(&mut b, 6, &Topology::Standalone);
    out.push(with(5, b.split()));
    encode_create_topic(&mut b, 7, b"t", 2, b"retention=1").unwrap();
    out.push(with(6, b.split()));
    out
}
