//! A bounded, deterministic run of the Pravega fuzz bodies (`STREAMWIRE_FUZZ_ITERS`, default
//! 2000): mutated valid frames, group state values and random bytes never panic the decoders.

use bytes::{BufMut, BytesMut};

use streamwire_pravega::fuzzing::{fuzz_group_state, fuzz_reply};
use streamwire_pravega::wire::{
    encode_create_transient_segment, encode_merge_segments, put_event, Reply,
};

fn seeds() -> Vec<Vec<u8>> {
    let mut data = Vec::new();
    for i in 0..5 {
        put_event(&mut data, format!("event-{i}").as_bytes()).unwrap();
    }
    let mut read = BytesMut::new();
    read.put_i32(10);
    let seg = b"scope/stream/0.#epoch.0";
    let len = 2 + seg.len() + 8 + 2 + 4 + data.len() + 8;
    read.put_i32(len as i32);
    read.put_u16(seg.len() as u16);
    read.put_slice(seg);
    read.put_i64(0);
    read.put_u8(1);
    read.put_u8(0);
    read.put_i32(data.len() as i32);
    read.put_slice(&data);
    read.put_i64(7);
    let mut appended = BytesMut::new();
    appended.put_i32(7);
    appended.put_i32(48);
    appended.put_slice(&[0x11; 48]);
    // The large-event commands: the store's SEGMENTS_MERGED, and the client's
    // CREATE_TRANSIENT_SEGMENT and MERGE_SEGMENTS (through the server-side decoder).
    let mut merged = BytesMut::new();
    Reply::SegmentsMerged {
        request_id: 3,
        target: "scope/stream/0.#epoch.0".into(),
        source: "scope/stream/0.#epoch.0#transient.00ff".into(),
        new_target_write_offset: 9 << 20,
    }
    .encode(&mut merged)
    .unwrap();
    let mut large = BytesMut::new();
    encode_create_transient_segment(&mut large, 1, 42, "scope/stream/0.#epoch.0", "").unwrap();
    encode_merge_segments(&mut large, 2, "scope/stream/0.#epoch.0", "t", "tok").unwrap();
    vec![
        read.to_vec(),
        appended.to_vec(),
        data,
        merged.to_vec(),
        large.to_vec(),
    ]
}

/// Up to 8 random edits of `d`: a byte changed, the tail cut, a byte inserted.
fn mutate(d: &mut Vec<u8>, next: &mut impl FnMut() -> u64) {
    for _ in 0..=(next() % 8) {
        if d.is_empty() {
            break;
        }
        let at = (next() % d.len() as u64) as usize;
        match next() % 3 {
            0 => d[at] = next() as u8,
            1 => d.truncate(at),
            _ => d.insert(at, next() as u8),
        }
    }
}

#[test]
fn bounded_fuzz_run_of_the_pravega_decoders() {
    let iters: usize = std::env::var("STREAMWIRE_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let seeds = seeds();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..iters {
        let mut d = if i % 10 == 9 {
            (0..(next() % 200)).map(|_| next() as u8).collect()
        } else {
            seeds[(next() % seeds.len() as u64) as usize].clone()
        };
        mutate(&mut d, &mut next);
        fuzz_reply(&d);
        fuzz_group_state(&d);
    }
    // Group state values as the official client writes them, mutated.
    let mut assigned = std::collections::BTreeMap::new();
    assigned.insert(
        streamwire_pravega::group::cbor::SegKey::parse("scope/stream/3.#epoch.1").unwrap(),
        42,
    );
    let values = [
        streamwire_pravega::group::cbor::encode_assigned(&assigned),
        streamwire_pravega::group::cbor::encode_offset(7),
        streamwire_pravega::group::cbor::key_bytes("17assigned_segments/r1"),
    ];
    for i in 0..iters {
        let mut d = values[i % values.len()].clone();
        mutate(&mut d, &mut next);
        fuzz_group_state(&d);
    }
}
