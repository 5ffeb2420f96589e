//! Codec tests: hand-assembled frames (from the spec's byte layout, independent of our
//! encoder), error classification, chunking independence and round-trip properties.

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::protocol::checksum::crc32c;
use crate::protocol::commands;
use pb::base_command::Type;

// ---- hand assembly helpers (spec layout; protobuf bytes written out by hand) ----------

/// BaseCommand{type=PING, ping={}}: field 1 varint 18, field 18 length-delimited, empty.
const PING_CMD: &[u8] = &[0x08, 0x12, 0x92, 0x01, 0x00];
/// BaseCommand{type=CONNECTED, connected={server_version="sw", protocol_version=21}}.
const CONNECTED_CMD: &[u8] = &[0x08, 0x03, 0x1a, 0x06, 0x0a, 0x02, b's', b'w', 0x10, 0x15];
/// BaseCommand{type=MESSAGE, message={consumer_id=1, message_id={ledger_id=5, entry_id=7}}}.
const MESSAGE_CMD: &[u8] = &[
    0x08, 0x09, 0x4a, 0x08, 0x08, 0x01, 0x12, 0x04, 0x08, 0x05, 0x10, 0x07,
];
/// MessageMetadata{producer_name="p", sequence_id=0, publish_time=1}.
const METADATA: &[u8] = &[0x0a, 0x01, b'p', 0x10, 0x00, 0x18, 0x01];
/// BrokerEntryMetadata{broker_timestamp=1000, index=42}.
const BROKER_ENTRY: &[u8] = &[0x08, 0xe8, 0x07, 0x10, 0x2a];

fn be32(v: usize) -> [u8; 4] {
    (v as u32).to_be_bytes()
}

/// [totalSize][commandSize][command][rest]
fn frame_bytes(cmd: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&be32(4 + cmd.len() + rest.len()));
    f.extend_from_slice(&be32(cmd.len()));
    f.extend_from_slice(cmd);
    f.extend_from_slice(rest);
    f
}

/// [metadataSize][metadata][payload]
fn meta_and_payload(metadata: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut v = be32(metadata.len()).to_vec();
    v.extend_from_slice(metadata);
    v.extend_from_slice(payload);
    v
}

/// [0x0e01][crc32c(rest)][rest]
fn with_crc(rest: &[u8]) -> Vec<u8> {
    let mut v = vec![0x0e, 0x01];
    v.extend_from_slice(&crc32c(rest).to_be_bytes());
    v.extend_from_slice(rest);
    v
}

/// [0x0e02][size][broker entry metadata][rest]
fn with_broker_entry(bem: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut v = vec![0x0e, 0x02];
    v.extend_from_slice(&be32(bem.len()));
    v.extend_from_slice(bem);
    v.extend_from_slice(rest);
    v
}

fn decode_one(bytes: &[u8]) -> Result<Option<Frame>, ProtocolError> {
    let mut buf = BytesMut::from(bytes);
    FrameDecoder::default().decode(&mut buf)
}

fn expected_metadata() -> pb::MessageMetadata {
    pb::MessageMetadata {
        producer_name: "p".into(),
        sequence_id: 0,
        publish_time: 1,
        ..Default::default()
    }
}

// ---- golden frames --------------------------------------------------------------------

#[test]
fn golden_ping() {
    let bytes = frame_bytes(PING_CMD, &[]);
    assert_eq!(
        bytes,
        [0, 0, 0, 9, 0, 0, 0, 5, 0x08, 0x12, 0x92, 0x01, 0x00]
    );
    let f = decode_one(&bytes).unwrap().unwrap();
    assert_eq!(f.command_type(), Some(Type::Ping));
    assert_eq!(f.command, commands::ping());
    assert!(f.payload.is_none());
    // Our encoder produces the very same bytes.
    let mut out = BytesMut::new();
    encode_command(&commands::ping(), &mut out);
    assert_eq!(&out[..], &bytes[..]);
}

#[test]
fn golden_connected() {
    let f = decode_one(&frame_bytes(CONNECTED_CMD, &[]))
        .unwrap()
        .unwrap();
    assert_eq!(f.command_type(), Some(Type::Connected));
    let c = f.command.connected.unwrap();
    assert_eq!(c.server_version, "sw");
    assert_eq!(c.protocol_version(), 21);
    assert_eq!(c.max_message_size, None);
}

#[test]
fn golden_message_without_magic_or_checksum() {
    // What pulsar-lite sends: metadata size follows the command directly.
    let f = decode_one(&frame_bytes(
        MESSAGE_CMD,
        &meta_and_payload(METADATA, b"hi"),
    ))
    .unwrap()
    .unwrap();
    assert_eq!(f.command_type(), Some(Type::Message));
    let m = f.command.message.as_ref().unwrap();
    assert_eq!(
        (m.consumer_id, m.message_id.ledger_id, m.message_id.entry_id),
        (1, 5, 7)
    );
    assert_eq!(m.message_id.partition(), -1, "absent partition reads as -1");
    assert_eq!(m.message_id.batch_index(), -1);
    let p = f.payload.unwrap();
    assert_eq!(p.checksum, ChecksumStatus::Absent);
    assert_eq!(p.broker_entry_metadata, None);
    assert_eq!(p.verified_metadata().unwrap(), &expected_metadata());
    assert_eq!(&p.payload[..], b"hi");
}

#[test]
fn golden_message_with_checksum() {
    let bytes = frame_bytes(
        MESSAGE_CMD,
        &with_crc(&meta_and_payload(METADATA, b"hello")),
    );
    let p = decode_one(&bytes).unwrap().unwrap().payload.unwrap();
    assert_eq!(p.checksum, ChecksumStatus::Valid);
    assert_eq!(p.metadata.as_ref().unwrap(), &expected_metadata());
    assert_eq!(&p.payload[..], b"hello");
}

#[test]
fn golden_message_with_broker_entry_metadata() {
    let rest = with_broker_entry(BROKER_ENTRY, &with_crc(&meta_and_payload(METADATA, b"x")));
    let p = decode_one(&frame_bytes(MESSAGE_CMD, &rest))
        .unwrap()
        .unwrap()
        .payload
        .unwrap();
    assert_eq!(
        p.broker_entry_metadata,
        Some(pb::BrokerEntryMetadata {
            broker_timestamp: Some(1000),
            index: Some(42)
        })
    );
    assert_eq!(p.checksum, ChecksumStatus::Valid);
    assert_eq!(&p.payload[..], b"x");

    // Broker entry metadata without a checksum is accepted too.
    let rest = with_broker_entry(BROKER_ENTRY, &meta_and_payload(METADATA, b"y"));
    let p = decode_one(&frame_bytes(MESSAGE_CMD, &rest))
        .unwrap()
        .unwrap()
        .payload
        .unwrap();
    assert_eq!(p.checksum, ChecksumStatus::Absent);
    assert_eq!(p.broker_entry_metadata.unwrap().index, Some(42));
}

#[test]
fn encoder_layout_matches_spec() {
    let cmd = commands::send(1, 2, 1, None, false, false);
    let md = expected_metadata();
    let mut out = BytesMut::new();
    encode_payload_command_parts(
        &cmd,
        &md,
        &[&b"ab"[..], b"", b"cd"],
        &mut out,
        DEFAULT_MAX_FRAME_SIZE,
    )
    .unwrap();
    let cmd_bytes = prost::Message::encode_to_vec(&cmd);
    let expected = frame_bytes(&cmd_bytes, &with_crc(&meta_and_payload(METADATA, b"abcd")));
    assert_eq!(&out[..], &expected[..]);
}

// ---- partial input --------------------------------------------------------------------

#[test]
fn byte_by_byte_needs_more_until_complete() {
    let bytes = frame_bytes(
        MESSAGE_CMD,
        &with_crc(&meta_and_payload(METADATA, b"hello")),
    );
    let mut dec = FrameDecoder::default();
    let mut buf = BytesMut::new();
    for (i, b) in bytes.iter().enumerate() {
        buf.put_u8(*b);
        let r = dec.decode(&mut buf).unwrap();
        if i + 1 < bytes.len() {
            assert!(r.is_none(), "complete too early at byte {i}");
            assert_eq!(buf.len(), i + 1, "partial frame must stay buffered");
            // Capacity for the whole frame has been reserved once the size is known.
            if i >= 3 {
                assert!(buf.capacity() >= bytes.len());
            }
        } else {
            assert!(r.unwrap().payload.unwrap().checksum == ChecksumStatus::Valid);
            assert!(buf.is_empty());
        }
    }
}

#[test]
fn several_frames_in_one_buffer() {
    let mut bytes = frame_bytes(PING_CMD, &[]);
    bytes.extend(frame_bytes(CONNECTED_CMD, &[]));
    bytes.extend(&frame_bytes(PING_CMD, &[])[..6]); // partial third frame
    let mut buf = BytesMut::from(&bytes[..]);
    let mut dec = FrameDecoder::default();
    assert_eq!(
        dec.decode(&mut buf).unwrap().unwrap().command_type(),
        Some(Type::Ping)
    );
    assert_eq!(
        dec.decode(&mut buf).unwrap().unwrap().command_type(),
        Some(Type::Connected)
    );
    assert!(dec.decode(&mut buf).unwrap().is_none());
    assert_eq!(buf.len(), 6);
}

// ---- stream errors --------------------------------------------------------------------

#[test]
fn oversized_frame_is_rejected_before_buffering() {
    for size in [u32::MAX, (DEFAULT_MAX_FRAME_SIZE + 1) as u32] {
        let mut buf = BytesMut::with_capacity(8);
        buf.put_u32(size);
        let err = FrameDecoder::default().decode(&mut buf).unwrap_err();
        assert_eq!(
            err,
            ProtocolError::FrameTooLarge {
                size: size as usize,
                max: DEFAULT_MAX_FRAME_SIZE
            }
        );
        // Nothing was reserved for the claimed size.
        assert!(buf.capacity() < 1024, "capacity {}", buf.capacity());
    }
    // Exactly at the limit is fine (needs more bytes).
    let mut dec = FrameDecoder::new(100);
    let mut buf = BytesMut::from(&be32(100)[..]);
    assert!(dec.decode(&mut buf).unwrap().is_none());
    assert!(buf.capacity() >= 104 && buf.capacity() < 1024);
    // The limit can change after CONNECTED.
    dec.set_max_frame_size(50);
    assert_eq!(dec.max_frame_size(), 50);
    assert!(matches!(
        dec.decode(&mut buf),
        Err(ProtocolError::FrameTooLarge { size: 100, max: 50 })
    ));
}

fn assert_malformed(bytes: &[u8]) {
    match decode_one(bytes) {
        Err(ProtocolError::Malformed(_)) => {}
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn lying_size_fields_are_stream_errors() {
    // totalSize too small to hold commandSize.
    assert_malformed(&[0, 0, 0, 2, 0, 0]);
    // commandSize beyond the frame.
    assert_malformed(&[0, 0, 0, 6, 0, 0, 0, 9, 0x08, 0x12]);
    assert_malformed(&[0, 0, 0, 6, 0xff, 0xff, 0xff, 0xff, 0x08, 0x12]);
    // metadataSize beyond the frame.
    let mut rest = be32(1000).to_vec();
    rest.extend_from_slice(METADATA);
    assert_malformed(&frame_bytes(MESSAGE_CMD, &rest));
    // Broker entry metadata size beyond the frame.
    let mut rest = vec![0x0e, 0x02];
    rest.extend_from_slice(&be32(0xffff_fff0));
    rest.extend_from_slice(&meta_and_payload(METADATA, b""));
    assert_malformed(&frame_bytes(MESSAGE_CMD, &rest));
    // Magic with its checksum cut short.
    assert_malformed(&frame_bytes(MESSAGE_CMD, &[0x0e, 0x01, 0, 0]));
    // Payload section too short for a metadata size.
    assert_malformed(&frame_bytes(MESSAGE_CMD, &[0, 0]));
    // MESSAGE / SEND without any payload section.
    assert_malformed(&frame_bytes(MESSAGE_CMD, &[]));
}

#[test]
fn bad_command_protobuf_is_a_stream_error() {
    let err = decode_one(&frame_bytes(&[0xff, 0xff], &[])).unwrap_err();
    assert!(
        matches!(
            err,
            ProtocolError::Decode {
                what: "command",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn missing_body_is_a_stream_error() {
    // type = SEND (6), no `send` field.
    let err = decode_one(&frame_bytes(&[0x08, 0x06], &[])).unwrap_err();
    assert_eq!(err, ProtocolError::MissingCommand { command: "SEND" });
    // PING without its empty body is tolerated.
    let f = decode_one(&frame_bytes(&[0x08, 0x12], &[]))
        .unwrap()
        .unwrap();
    assert_eq!(f.command_type(), Some(Type::Ping));
}

#[test]
fn unknown_command_type_is_passed_through() {
    // type = 200: a newer broker's command. Not an error; the caller ignores it.
    let f = decode_one(&frame_bytes(&[0x08, 0xc8, 0x01], &[]))
        .unwrap()
        .unwrap();
    assert_eq!(f.command_type(), None);
    assert_eq!(commands::command_name(&f.command), "UNKNOWN");
}

// ---- message errors -------------------------------------------------------------------

#[test]
fn corrupt_payload_is_the_messages_error_and_decoding_continues() {
    let mut bytes = frame_bytes(
        MESSAGE_CMD,
        &with_crc(&meta_and_payload(METADATA, b"hello")),
    );
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    bytes.extend(frame_bytes(PING_CMD, &[]));
    let mut buf = BytesMut::from(&bytes[..]);
    let mut dec = FrameDecoder::default();
    let p = dec.decode(&mut buf).unwrap().unwrap().payload.unwrap();
    let ChecksumStatus::Mismatch { expected, computed } = p.checksum else {
        panic!("{:?}", p.checksum)
    };
    assert_ne!(expected, computed);
    assert_eq!(
        p.verified_metadata(),
        Err(ProtocolError::ChecksumMismatch { expected, computed })
    );
    assert_eq!(
        dec.decode(&mut buf).unwrap().unwrap().command_type(),
        Some(Type::Ping)
    );
}

#[test]
fn bad_metadata_is_the_messages_error() {
    let mut bytes = frame_bytes(MESSAGE_CMD, &meta_and_payload(&[0xff, 0xff, 0xff], b"p"));
    bytes.extend(frame_bytes(PING_CMD, &[]));
    let mut buf = BytesMut::from(&bytes[..]);
    let mut dec = FrameDecoder::default();
    let p = dec.decode(&mut buf).unwrap().unwrap().payload.unwrap();
    assert!(matches!(
        p.metadata,
        Err(ProtocolError::Decode {
            what: "message metadata",
            ..
        })
    ));
    assert!(p.verified_metadata().is_err());
    assert_eq!(&p.payload[..], b"p");
    assert_eq!(
        dec.decode(&mut buf).unwrap().unwrap().command_type(),
        Some(Type::Ping)
    );

    // Unparseable broker entry metadata also spoils only the message.
    let rest = with_broker_entry(&[0xff], &meta_and_payload(METADATA, b"q"));
    let p = decode_one(&frame_bytes(MESSAGE_CMD, &rest))
        .unwrap()
        .unwrap()
        .payload
        .unwrap();
    assert!(matches!(
        p.metadata,
        Err(ProtocolError::Decode {
            what: "broker entry metadata",
            ..
        })
    ));
}

// ---- encoder limits -------------------------------------------------------------------

#[test]
fn too_large_send_leaves_output_untouched() {
    let mut out = BytesMut::new();
    encode_command(&commands::ping(), &mut out);
    let before = out.clone();
    let cmd = commands::send(1, 1, 1, None, false, false);
    let err = encode_payload_command(&cmd, &expected_metadata(), &[0u8; 2000], &mut out, 1000)
        .unwrap_err();
    assert!(matches!(err, ProtocolError::FrameTooLarge { max: 1000, size } if size > 2000));
    assert_eq!(out, before);
    // The same frame fits a larger limit and the limit is inclusive.
    encode_payload_command(&cmd, &expected_metadata(), &[0u8; 2000], &mut out, 5000).unwrap();
    let size = out.len() - before.len() - 4;
    let mut out2 = BytesMut::new();
    encode_payload_command(&cmd, &expected_metadata(), &[0u8; 2000], &mut out2, size).unwrap();
}

// ---- properties -----------------------------------------------------------------------

fn arb_message_id() -> impl Strategy<Value = pb::MessageIdData> {
    (
        any::<u64>(),
        any::<u64>(),
        proptest::option::of(-1i32..100),
        proptest::option::of(-1i32..1000),
    )
        .prop_map(
            |(ledger_id, entry_id, partition, batch_index)| pb::MessageIdData {
                ledger_id,
                entry_id,
                partition,
                batch_index,
                ..Default::default()
            },
        )
}

fn arb_command() -> impl Strategy<Value = pb::BaseCommand> {
    prop_oneof![
        Just(commands::ping()),
        Just(commands::pong()),
        (any::<u64>(), any::<u32>()).prop_map(|(c, p)| commands::flow(c, p)),
        (".{0,40}", any::<u64>(), any::<bool>())
            .prop_map(|(t, r, a)| commands::lookup_topic(&t, r, a, None)),
        (
            any::<u64>(),
            any::<u64>(),
            proptest::collection::vec(arb_message_id(), 0..5)
        )
            .prop_map(|(c, r, ids)| {
                commands::ack(c, pb::command_ack::AckType::Individual, ids, None, Some(r))
            }),
        (any::<u64>(), any::<u64>(), arb_message_id()).prop_map(|(c, r, id)| commands::seek(
            c,
            r,
            commands::SeekTarget::MessageId(id)
        )),
        (".{0,20}", proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(m, d)| {
            commands::connect(
                "v",
                21,
                Some(&m),
                Some(Bytes::from(d)),
                commands::codec_feature_flags(),
                None,
            )
        }),
    ]
}

fn arb_metadata() -> impl Strategy<Value = pb::MessageMetadata> {
    (
        ".{0,20}",
        any::<u64>(),
        any::<u64>(),
        proptest::collection::vec((".{0,8}", ".{0,8}"), 0..4),
        proptest::option::of(".{0,16}"),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..16)),
        proptest::option::of(any::<i32>()),
        proptest::option::of(".{0,36}"),
    )
        .prop_map(
            |(producer_name, sequence_id, publish_time, props, key, ordering, chunk_id, uuid)| {
                pb::MessageMetadata {
                    producer_name,
                    sequence_id,
                    publish_time,
                    properties: props
                        .into_iter()
                        .map(|(key, value)| pb::KeyValue { key, value })
                        .collect(),
                    partition_key: key,
                    ordering_key: ordering.map(Bytes::from),
                    chunk_id,
                    uuid,
                    ..Default::default()
                }
            },
        )
}

#[derive(Debug, Clone)]
enum Item {
    Simple(pb::BaseCommand),
    Send {
        producer_id: u64,
        sequence_id: u64,
        metadata: pb::MessageMetadata,
        parts: Vec<Vec<u8>>,
    },
}

fn arb_item() -> impl Strategy<Value = Item> {
    prop_oneof![
        arb_command().prop_map(Item::Simple),
        (
            any::<u64>(),
            any::<u64>(),
            arb_metadata(),
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..4)
        )
            .prop_map(|(producer_id, sequence_id, metadata, parts)| Item::Send {
                producer_id,
                sequence_id,
                metadata,
                parts
            }),
    ]
}

fn encode_items(items: &[Item]) -> BytesMut {
    let mut out = BytesMut::new();
    for item in items {
        match item {
            Item::Simple(cmd) => encode_command(cmd, &mut out),
            Item::Send {
                producer_id,
                sequence_id,
                metadata,
                parts,
            } => {
                let cmd = commands::send(*producer_id, *sequence_id, 1, None, false, false);
                encode_payload_command_parts(
                    &cmd,
                    metadata,
                    parts,
                    &mut out,
                    DEFAULT_MAX_FRAME_SIZE,
                )
                .unwrap();
            }
        }
    }
    out
}

/// Decode `bytes` fed in pieces whose sizes cycle through `chunks`.
fn decode_chunked(
    bytes: &[u8],
    chunks: &[usize],
    max: usize,
) -> (Vec<Frame>, Result<(), ProtocolError>, usize) {
    let mut dec = FrameDecoder::new(max);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < bytes.len() {
        let n = chunks[i % chunks.len()].max(1).min(bytes.len() - pos);
        i += 1;
        buf.extend_from_slice(&bytes[pos..pos + n]);
        pos += n;
        loop {
            match dec.decode(&mut buf) {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => break,
                Err(e) => return (frames, Err(e), buf.len()),
            }
        }
    }
    (frames, Ok(()), buf.len())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn head_then_payload_is_the_whole_frame(
        producer_id in 0u64..1 << 40,
        sequence_id in any::<u64>(),
        name in "[a-z]{0,12}",
        payload in proptest::collection::vec(any::<u8>(), 0..2048),
        max in 0usize..4096,
    ) {
        let cmd = commands::send(producer_id, sequence_id, 1, None, false, false);
        let md = pb::MessageMetadata { producer_name: name, sequence_id, ..Default::default() };
        let mut whole = BytesMut::from(&b"before"[..]);
        let mut head = BytesMut::from(&b"before"[..]);
        let a = encode_payload_command(&cmd, &md, &payload, &mut whole, max);
        let b = encode_payload_head(&cmd, &md, &payload, &mut head, max);
        prop_assert_eq!(&a, &b);
        if a.is_ok() {
            head.extend_from_slice(&payload);
        }
        // Same bytes, and a frame too large leaves `out` as it was, either way.
        prop_assert_eq!(&whole[..], &head[..]);
    }

    #[test]
    fn round_trip_under_any_chunking(
        items in proptest::collection::vec(arb_item(), 1..8),
        chunks in proptest::collection::vec(1usize..64, 1..8),
    ) {
        let bytes = encode_items(&items);
        let (frames, result, leftover) = decode_chunked(&bytes, &chunks, DEFAULT_MAX_FRAME_SIZE);
        prop_assert_eq!(result, Ok(()));
        prop_assert_eq!(leftover, 0);
        prop_assert_eq!(frames.len(), items.len());
        for (frame, item) in frames.iter().zip(&items) {
            match item {
                Item::Simple(cmd) => {
                    prop_assert_eq!(&frame.command, cmd);
                    prop_assert!(frame.payload.is_none());
                }
                Item::Send { producer_id, sequence_id, metadata, parts } => {
                    let send = frame.command.send.as_ref().unwrap();
                    prop_assert_eq!((send.producer_id, send.sequence_id), (*producer_id, *sequence_id));
                    let p = frame.payload.as_ref().unwrap();
                    prop_assert_eq!(p.checksum, ChecksumStatus::Valid);
                    prop_assert_eq!(p.verified_metadata().unwrap(), metadata);
                    prop_assert_eq!(&p.payload[..], &parts.concat()[..]);
                }
            }
        }
    }

    #[test]
    fn any_flipped_byte_after_the_checksum_is_detected(
        metadata in arb_metadata(),
        payload in proptest::collection::vec(any::<u8>(), 1..300),
        pick in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let cmd = commands::send(1, 2, 1, None, false, false);
        let mut out = BytesMut::new();
        encode_payload_command(&cmd, &metadata, &payload, &mut out, DEFAULT_MAX_FRAME_SIZE).unwrap();
        let command_size = u32::from_be_bytes(out[4..8].try_into().unwrap()) as usize;
        // Covered region: after totalSize, commandSize, command, magic and checksum. Sizes
        // are left alone here (a lying size is a stream error, tested elsewhere), so flip
        // only metadata or payload bytes.
        let covered = 8 + command_size + 6 + 4;
        let at = covered + pick.index(out.len() - covered);
        out[at] ^= 1 << bit;
        encode_command(&commands::pong(), &mut out);
        let mut dec = FrameDecoder::default();
        let frame = dec.decode(&mut out).unwrap().unwrap();
        let is_mismatch = matches!(frame.payload.unwrap().checksum, ChecksumStatus::Mismatch { .. });
        prop_assert!(is_mismatch);
        let next = dec.decode(&mut out).unwrap().unwrap();
        prop_assert_eq!(next.command_type(), Some(Type::Pong));
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_never_overallocate(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        chunks in proptest::collection::vec(1usize..50, 1..5),
        max in 8usize..1024,
    ) {
        let (_frames, _result, leftover) = decode_chunked(&bytes, &chunks, max);
        prop_assert!(leftover <= bytes.len());
    }

    #[test]
    fn chunking_never_changes_the_outcome(
        items in proptest::collection::vec(arb_item(), 1..4),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        chunks in proptest::collection::vec(1usize..40, 1..6),
    ) {
        let mut bytes = encode_items(&items).to_vec();
        for (at, v) in damage {
            let i = at.index(bytes.len());
            bytes[i] = v;
        }
        // Frames and error must agree; how much was buffered when an error struck may not.
        let (f1, r1, _) = decode_chunked(&bytes, &[bytes.len()], 4096);
        let (f2, r2, _) = decode_chunked(&bytes, &chunks, 4096);
        prop_assert_eq!(format!("{f1:?} {r1:?}"), format!("{f2:?} {r2:?}"));
    }
}
