//! Fuzz bodies shared by the cargo-fuzz targets (`fuzz/`) and the bounded deterministic run
//! in `cargo test` (`tests/fuzz_tank.rs`): arbitrary bytes through the consume-response and
//! bundle decoders must never panic, never loop, and never allocate beyond what the input
//! can justify (decompression is bounded in `codec::bundle`).

use bytes::Bytes;

use crate::codec;

/// A consume response, then every partition's chunk at a few requested seqs.
pub fn fuzz_consume_response(data: &[u8]) {
    let Ok(resp) = codec::decode_consume_response(Bytes::copy_from_slice(data)) else {
        return;
    };
    for t in resp.topics {
        for p in t.partitions.into_iter().flatten() {
            if let codec::PartitionOutcome::Data {
                base_seq,
                high_water,
                chunk,
            } = p.outcome
            {
                for requested in [0, 1, 7, u64::MAX] {
                    let mut out = Vec::new();
                    if let Ok(d) =
                        codec::decode_chunk(&chunk, base_seq, requested, high_water, &mut out)
                    {
                        for m in &out {
                            assert!(m.seq <= high_water);
                            assert!(requested == 0 || requested == u64::MAX || m.seq >= requested);
                            assert!(m.value.len() <= crate::codec::bundle::MAX_DECOMPRESSED);
                        }
                        assert!(
                            out.windows(2).all(|w| w[0].seq < w[1].seq),
                            "seqs not increasing: {:?} from {data:02x?}",
                            out.iter().map(|m| m.seq).collect::<Vec<_>>()
                        );
                        let _ = d.next_seq;
                    }
                }
            }
        }
    }
}

/// One bundle, numbered from an arbitrary base.
pub fn fuzz_bundle(data: &[u8]) {
    let bytes = Bytes::copy_from_slice(data);
    let mut out = Vec::new();
    let _ = codec::decode_bundle(&bytes, 1, &mut out);
    let _ = codec::bundle::decode_bundle_header(data);
}

/// Arbitrary bytes as every admin response a client decodes (the first byte picks which, so
/// the fuzzer can steer; the rest is the payload), and each admin request decoder.
pub fn fuzz_admin(data: &[u8]) {
    let Some((&which, payload)) = data.split_first() else {
        return;
    };
    match which % 7 {
        0 => drop(codec::decode_discover_partitions_response(payload)),
        1 => drop(codec::decode_create_topic_response(payload)),
        2 => drop(codec::decode_reload_conf_response(payload)),
        3 => drop(codec::decode_status_response(payload)),
        4 => drop(codec::decode_discover_topics_response(payload)),
        5 => drop(codec::decode_discover_topology_response(payload)),
        _ => {
            let _ = codec::decode_discover_partitions_request(payload);
            let _ = codec::decode_create_topic_request(payload);
            let _ = codec::decode_reload_conf_request(payload);
        }
    }
    for t in [6u8, 7, 12, 13, 14, 15] {
        let _ = codec::response_request_id(t, payload);
    }
}
