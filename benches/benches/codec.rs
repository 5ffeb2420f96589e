//! Codec benchmarks: SEND encoding, MESSAGE stream decoding, CRC32C throughput.
//!
//! Quick run: `cargo bench -p streamwire-benches --bench codec -- --quick`.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use streamwire_pulsar::protocol::{
    commands, crc32c, crc32c_slices, encode_command, encode_payload_command,
    encode_payload_command_parts, pb, FrameDecoder, DEFAULT_MAX_FRAME_SIZE,
};

fn metadata(sequence_id: u64) -> pb::MessageMetadata {
    pb::MessageMetadata {
        producer_name: "bench-producer".into(),
        sequence_id,
        publish_time: 1_700_000_000_000,
        partition_key: Some("key-42".into()),
        properties: vec![pb::KeyValue {
            key: "app".into(),
            value: "bench".into(),
        }],
        ..Default::default()
    }
}

fn encode_send(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode_send");
    for size in [100usize, 1024, 16 * 1024] {
        let payload = vec![0xa5u8; size];
        let md = metadata(7);
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &payload, |b, payload| {
            // Reuse one buffer like a connection's writer does; clear keeps the capacity.
            let mut out = BytesMut::with_capacity(64 * 1024);
            let mut seq = 0u64;
            b.iter(|| {
                out.clear();
                seq += 1;
                let cmd = commands::send(1, seq, 1, None, false, false);
                encode_payload_command(
                    &cmd,
                    &md,
                    black_box(payload),
                    &mut out,
                    DEFAULT_MAX_FRAME_SIZE,
                )
                .unwrap();
                black_box(out.len());
            });
        });
    }
    // A batch handed over as parts (no concatenation before encoding).
    let parts: Vec<Vec<u8>> = (0..16).map(|_| vec![0x5au8; 1024]).collect();
    group.throughput(Throughput::Bytes(16 * 1024));
    group.bench_function("parts_16x1024", |b| {
        let mut out = BytesMut::with_capacity(64 * 1024);
        let md = metadata(9);
        b.iter(|| {
            out.clear();
            let cmd = commands::send(1, 9, 16, None, false, false);
            encode_payload_command_parts(
                &cmd,
                &md,
                black_box(&parts),
                &mut out,
                DEFAULT_MAX_FRAME_SIZE,
            )
            .unwrap();
            black_box(out.len());
        });
    });
    group.finish();
}

/// A stream of MESSAGE frames as a broker would push them (magic + CRC32C).
fn message_stream(count: usize, payload_size: usize) -> Vec<u8> {
    let mut out = BytesMut::new();
    let payload = vec![0x3cu8; payload_size];
    for i in 0..count as u64 {
        let mut cmd = pb::BaseCommand::default();
        cmd.set_type(pb::base_command::Type::Message);
        cmd.message = Some(Box::new(pb::CommandMessage {
            consumer_id: 1,
            message_id: pb::MessageIdData {
                ledger_id: 10,
                entry_id: i,
                ..Default::default()
            },
            ..Default::default()
        }));
        encode_payload_command(
            &cmd,
            &metadata(i),
            &payload,
            &mut out,
            DEFAULT_MAX_FRAME_SIZE,
        )
        .unwrap();
    }
    encode_command(&commands::ping(), &mut out);
    out.to_vec()
}

fn decode_messages(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode_message_stream");
    let count = 1000;
    for payload_size in [100usize, 1024] {
        let stream = message_stream(count, payload_size);
        group.throughput(Throughput::Elements(count as u64 + 1));
        group.bench_with_input(
            BenchmarkId::new("frames", payload_size),
            &stream,
            |b, stream| {
                b.iter(|| {
                    // Copying into the read buffer is part of what a connection does per read.
                    let mut buf = BytesMut::from(&stream[..]);
                    let mut decoder = FrameDecoder::default();
                    let mut n = 0;
                    while let Some(frame) = decoder.decode(&mut buf).unwrap() {
                        black_box(&frame);
                        n += 1;
                    }
                    assert_eq!(n, count + 1);
                });
            },
        );
    }
    group.finish();
}

fn checksum(c: &mut Criterion) {
    let mut group = c.benchmark_group("crc32c");
    for size in [1024usize, 64 * 1024] {
        let data = vec![0x77u8; size];
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::new("contiguous", size), &data, |b, data| {
            b.iter(|| crc32c(black_box(data)));
        });
        group.bench_with_input(BenchmarkId::new("four_slices", size), &data, |b, data| {
            let quarter = data.len() / 4;
            let parts: Vec<&[u8]> = data.chunks(quarter).collect();
            b.iter(|| crc32c_slices(black_box(&parts)));
        });
    }
    group.finish();
}

criterion_group!(benches, encode_send, decode_messages, checksum);
criterion_main!(benches);
