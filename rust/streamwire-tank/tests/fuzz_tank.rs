//! A bounded, deterministic run of the TANK fuzz bodies inside `cargo test`: seeded mutations
//! of valid consume responses and bundles, plus random bytes. `STREAMWIRE_FUZZ_ITERS` sets
//! the iterations (default 2000). The cargo-fuzz targets in `fuzz/` run the same bodies.

use bytes::{BufMut, BytesMut};

use streamwire_tank::codec::wire::put_varint;
use streamwire_tank::codec::*;
use streamwire_tank::fuzzing::{fuzz_bundle, fuzz_consume_response};

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
}
