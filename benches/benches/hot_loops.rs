//! The engine's hot loops in bytes/s, beside the machine's own memcpy and CRC32C rates, so a
//! loop's figure reads as "how far from copying the bytes once" rather than as a bare number.
//!
//! - `batch_build`: messages added to a producer batch until it is full, then taken (what a
//!   producer does per batch before framing);
//! - `bulk_cut`: the same 1000 messages cut into a batch straight from one packed buffer
//!   (`engine::bulk`: what the bulk path of `send_many(..., ids=False)` does per batch, with
//!   no per-message `OutgoingMessage`);
//! - `bulk_runs`: 10,000 packed messages split into runs of one batch each (`engine::bulk::
//!   batch_runs`: what a bulk send to a partitioned topic does per call before handing each
//!   partition its runs);
//! - `entry_unpack`: a 1000-message batched entry iterated into (metadata, payload) pairs (what
//!   a consumer does per entry it receives);
//! - `arrow_columns`: a binary Arrow column (offsets + values) built from 10,000 payloads (what
//!   `receive_arrow` does per call);
//! - `baseline`: one memcpy of the same bytes and CRC32C over them.
//!
//! Run: `cargo bench -p streamwire-benches --bench hot_loops` (`-- --quick` for a short run).

use std::hint::black_box;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use streamwire_core::arrow::VarLayout;
use streamwire_pulsar::engine::batch_format::BatchIter;
use streamwire_pulsar::engine::batcher::{BatchBuilder, BatchConfig};
use streamwire_pulsar::engine::bulk::{batch_runs, next_batch, write_batch, Packed};
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::protocol::crc32c;

const SIZES: [usize; 2] = [100, 1024];

fn config() -> BatchConfig {
    BatchConfig {
        max_messages: 1000,
        max_bytes: 4 << 20,
        ..BatchConfig::default()
    }
}

/// One full batch of 1000 messages of `size` bytes, as the producer would send it.
fn built_batch(size: usize) -> Bytes {
    let mut b = BatchBuilder::new(config());
    let payload = Bytes::from(vec![0x42u8; size]);
    let now = Instant::now();
    for i in 0..1000u64 {
        let _ = b.add(OutgoingMessage::new(payload.clone(), i), now);
    }
    b.take().expect("a batch").payload
}

fn batch_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("batch_build");
    for size in SIZES {
        let payload = Bytes::from(vec![0x42u8; size]);
        group.throughput(Throughput::Bytes((1000 * size) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &payload, |bench, p| {
            let mut b = BatchBuilder::new(config());
            let now = Instant::now();
            bench.iter(|| {
                for i in 0..1000u64 {
                    let _ = b.add(OutgoingMessage::new(p.clone(), i), now);
                }
                black_box(b.take());
            });
        });
    }
    group.finish();
}

fn bulk_cut(c: &mut Criterion) {
    let mut group = c.benchmark_group("bulk_cut");
    for size in SIZES {
        let data = Bytes::from(vec![0x42u8; 1000 * size]);
        let offsets = (0..=1000).map(|i| i * size).collect();
        let packed = Packed::new(data, offsets).expect("offsets");
        let cfg = config();
        group.throughput(Throughput::Bytes((1000 * size) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &packed, |bench, p| {
            bench.iter(|| {
                let (n, len) = next_batch(p, 0, p.len(), cfg.max_messages, cfg.max_bytes, 0);
                let mut out = BytesMut::with_capacity(len);
                write_batch(p, 0, n, 0, &mut out);
                black_box(out.freeze());
            });
        });
    }
    group.finish();
}

fn bulk_runs(c: &mut Criterion) {
    let mut group = c.benchmark_group("bulk_runs");
    for size in SIZES {
        let n = 10_000;
        let data = Bytes::from(vec![0x42u8; n * size]);
        let offsets = (0..=n).map(|i| i * size).collect();
        let packed = Packed::new(data, offsets).expect("offsets");
        group.throughput(Throughput::Bytes((n * size) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &packed, |bench, p| {
            // The producer's default limits: 1000 messages, 128 KiB.
            bench.iter(|| black_box(batch_runs(p, 1000, 128 * 1024).count()));
        });
    }
    group.finish();
}

fn entry_unpack(c: &mut Criterion) {
    let mut group = c.benchmark_group("entry_unpack");
    for size in SIZES {
        let entry = built_batch(size);
        group.throughput(Throughput::Bytes((1000 * size) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &entry, |bench, e| {
            bench.iter(|| {
                let mut n = 0usize;
                for item in BatchIter::new(e.clone(), 1000) {
                    let (meta, payload) = item.expect("well formed");
                    black_box(&meta);
                    n += payload.len();
                }
                assert_eq!(n, 1000 * size);
            });
        });
    }
    group.finish();
}

fn arrow_columns(c: &mut Criterion) {
    let mut group = c.benchmark_group("arrow_columns");
    for size in SIZES {
        let payloads: Vec<Bytes> = (0..10_000).map(|_| Bytes::from(vec![7u8; size])).collect();
        group.throughput(Throughput::Bytes((10_000 * size) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(size), &payloads, |bench, ps| {
            bench.iter(|| {
                let items: Vec<Option<&[u8]>> = ps.iter().map(|p| Some(&p[..])).collect();
                let layout = VarLayout::of(&items);
                let mut offsets = vec![0u8; layout.offsets_len()];
                let mut values = vec![0u8; layout.values_len];
                layout.fill_offsets(&items, &mut offsets);
                VarLayout::fill_values(&items, &mut values);
                black_box((offsets, values));
            });
        });
    }
    group.finish();
}

fn baseline(c: &mut Criterion) {
    let mut group = c.benchmark_group("baseline");
    for bytes in [100_000usize, 1_024_000] {
        let src = vec![0x5au8; bytes];
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_with_input(BenchmarkId::new("memcpy", bytes), &src, |bench, s| {
            let mut dst = BytesMut::with_capacity(s.len());
            bench.iter(|| {
                dst.clear();
                dst.extend_from_slice(black_box(s));
                black_box(dst.len());
            });
        });
        group.bench_with_input(BenchmarkId::new("crc32c", bytes), &src, |bench, s| {
            bench.iter(|| crc32c(black_box(s)));
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    batch_build,
    bulk_cut,
    bulk_runs,
    entry_unpack,
    arrow_columns,
    baseline
);
criterion_main!(benches);
