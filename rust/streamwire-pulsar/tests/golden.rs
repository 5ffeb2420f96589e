//! Golden frame streams: every `tests/golden/*.bin` file is a concatenated stream of Pulsar
//! frames (captured from real clients/brokers, or assembled by hand below from the spec's
//! byte layout). Each must decode completely, without a stream or message error, into
//! frames of known command types.
//!
//! The `handmade_*.bin` files are produced by `handmade_streams()`; regenerate them with
//! `STREAMWIRE_REGENERATE_GOLDEN=1 cargo test -p streamwire-pulsar --test golden`.

use std::path::{Path, PathBuf};

use bytes::BytesMut;
use streamwire_pulsar::protocol::{
    command_name, crc32c, ChecksumStatus, Frame, FrameDecoder, DEFAULT_MAX_FRAME_SIZE,
    FRAME_HEADROOM,
};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("golden")
}

fn bin_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .expect("tests/golden exists")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    files.sort();
    files
}

fn decode_stream(name: &str, bytes: &[u8]) -> Vec<Frame> {
    let mut decoder = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE + FRAME_HEADROOM);
    let mut buf = BytesMut::from(bytes);
    let mut frames = Vec::new();
    loop {
        match decoder.decode(&mut buf) {
            Ok(Some(frame)) => frames.push(frame),
            Ok(None) => break,
            Err(e) => panic!("{name}: stream error after {} frames: {e}", frames.len()),
        }
    }
    assert!(
        buf.is_empty(),
        "{name}: {} trailing bytes do not form a frame",
        buf.len()
    );
    frames
}

#[test]
fn golden_streams_decode_cleanly() {
    let files = bin_files();
    assert!(
        !files.is_empty(),
        "no *.bin files in {}",
        golden_dir().display()
    );
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let frames = decode_stream(&name, &bytes);
        assert!(!frames.is_empty(), "{name}: no frames");
        for (i, frame) in frames.iter().enumerate() {
            let kind = command_name(&frame.command);
            assert!(
                frame.command_type().is_some(),
                "{name} frame {i}: unknown command type {}",
                frame.command.r#type
            );
            if let Some(p) = &frame.payload {
                assert!(
                    !matches!(p.checksum, ChecksumStatus::Mismatch { .. }),
                    "{name} frame {i} ({kind}): checksum mismatch"
                );
                if let Err(e) = &p.metadata {
                    panic!("{name} frame {i} ({kind}): {e}");
                }
            }
        }
    }
}

#[test]
fn handmade_golden_files_are_current() {
    for (name, bytes) in handmade_streams() {
        if std::env::var_os("STREAMWIRE_REGENERATE_GOLDEN").is_some() {
            std::fs::write(golden_dir().join(name), &bytes).unwrap();
        }
        let on_disk = std::fs::read(golden_dir().join(name)).unwrap_or_default();
        assert!(
            on_disk == bytes,
            "{name} is stale; rerun with STREAMWIRE_REGENERATE_GOLDEN=1"
        );
    }
}

// ---- hand assembly, straight from the spec's layout ------------------------------------
// Protobuf bodies are written out byte by byte (tag = field << 3 | wire type) so these
// files do not depend on our encoder or on prost.

fn be32(v: usize) -> [u8; 4] {
    (v as u32).to_be_bytes()
}

fn frame(cmd: &[u8], rest: &[u8]) -> Vec<u8> {
    [
        &be32(4 + cmd.len() + rest.len())[..],
        &be32(cmd.len()),
        cmd,
        rest,
    ]
    .concat()
}

fn meta_payload(metadata: &[u8], payload: &[u8]) -> Vec<u8> {
    [&be32(metadata.len())[..], metadata, payload].concat()
}

fn crc(rest: &[u8]) -> Vec<u8> {
    [&[0x0e, 0x01][..], &crc32c(rest).to_be_bytes(), rest].concat()
}

fn broker_entry(bem: &[u8], rest: &[u8]) -> Vec<u8> {
    [&[0x0e, 0x02][..], &be32(bem.len()), bem, rest].concat()
}

fn handmade_streams() -> Vec<(&'static str, Vec<u8>)> {
    // CONNECTED{server_version="sw", protocol_version=21, max_message_size=5242880}
    let connected = [
        0x08, 0x03, 0x1a, 0x0b, 0x0a, 0x02, b's', b'w', 0x10, 0x15, 0x18, 0x80, 0x80, 0xc0, 0x02,
    ];
    let ping = [0x08, 0x12, 0x92, 0x01, 0x00]; // PING{}
    let pong = [0x08, 0x13, 0x9a, 0x01, 0x00]; // PONG{}
                                               // MESSAGE{consumer_id=1, message_id={ledger_id=5, entry_id=7}}
    let message = [
        0x08, 0x09, 0x4a, 0x08, 0x08, 0x01, 0x12, 0x04, 0x08, 0x05, 0x10, 0x07,
    ];
    // MESSAGE{consumer_id=1, message_id={ledger_id=5, entry_id=8, partition=2}, redelivery_count=1}
    let message2 = [
        0x08, 0x09, 0x4a, 0x0c, 0x08, 0x01, 0x12, 0x06, 0x08, 0x05, 0x10, 0x08, 0x18, 0x02, 0x18,
        0x01,
    ];
    // MessageMetadata{producer_name="p", sequence_id=0, publish_time=1}
    let metadata = [0x0a, 0x01, b'p', 0x10, 0x00, 0x18, 0x01];
    // MessageMetadata{producer_name="p", sequence_id=1, publish_time=2, partition_key="k"}
    let metadata2 = [0x0a, 0x01, b'p', 0x10, 0x01, 0x18, 0x02, 0x32, 0x01, b'k'];
    // BrokerEntryMetadata{broker_timestamp=1000, index=42}
    let bem = [0x08, 0xe8, 0x07, 0x10, 0x2a];
    // SEND{producer_id=1, sequence_id=0, num_messages=1}
    let send = [0x08, 0x06, 0x32, 0x06, 0x08, 0x01, 0x10, 0x00, 0x18, 0x01];
    // SEND_RECEIPT{producer_id=1, sequence_id=0, message_id={ledger_id=5, entry_id=7}}
    let receipt = [
        0x08, 0x07, 0x3a, 0x0a, 0x08, 0x01, 0x10, 0x00, 0x1a, 0x04, 0x08, 0x05, 0x10, 0x07,
    ];

    let handshake = [frame(&connected, &[]), frame(&ping, &[]), frame(&pong, &[])].concat();
    let consumer = [
        // pulsar-lite style: no magic, no checksum.
        frame(&message, &meta_payload(&metadata, b"hello")),
        // With magic + CRC32C.
        frame(&message2, &crc(&meta_payload(&metadata2, b"world"))),
        // Broker entry metadata in front of magic + CRC32C.
        frame(
            &message,
            &broker_entry(&bem, &crc(&meta_payload(&metadata, b"!"))),
        ),
        // Empty payload.
        frame(&message2, &crc(&meta_payload(&metadata2, b""))),
    ]
    .concat();
    let producer = [
        frame(&send, &crc(&meta_payload(&metadata, b"payload"))),
        frame(&receipt, &[]),
    ]
    .concat();
    vec![
        ("handmade_handshake.bin", handshake),
        ("handmade_consumer.bin", consumer),
        ("handmade_producer.bin", producer),
    ]
}
