//! Builder tests: every builder sets `type` and the matching body, and survives a trip
//! through the frame codec unchanged.

use super::*;
use crate::protocol::{
    encode_command, encode_payload_command, FrameDecoder, DEFAULT_MAX_FRAME_SIZE,
};
use bytes::BytesMut;

fn round_trip(cmd: &pb::BaseCommand) -> pb::BaseCommand {
    let mut buf = BytesMut::new();
    encode_command(cmd, &mut buf);
    let frame = FrameDecoder::default()
        .decode(&mut buf)
        .expect("valid")
        .expect("complete");
    assert!(buf.is_empty(), "decoder must consume exactly one frame");
    assert!(frame.payload.is_none());
    frame.command
}

fn check(cmd: pb::BaseCommand, kind: Type, name: &str) -> pb::BaseCommand {
    assert_eq!(cmd.r#type(), kind);
    assert_eq!(command_name(&cmd), name);
    assert_eq!(body_present(&cmd), Some(true), "{name} body missing");
    let back = round_trip(&cmd);
    assert_eq!(back, cmd);
    back
}

fn id(ledger_id: u64, entry_id: u64) -> pb::MessageIdData {
    pb::MessageIdData {
        ledger_id,
        entry_id,
        ..Default::default()
    }
}

#[test]
fn connect_builder() {
    let cmd = connect(
        "streamwire-0.1",
        CLIENT_PROTOCOL_VERSION,
        Some("token"),
        Some(Bytes::from_static(b"secret")),
        codec_feature_flags(),
        Some("pulsar://b1:6650"),
    );
    let cmd = check(cmd, Type::Connect, "CONNECT");
    let c = cmd.connect.unwrap();
    assert_eq!(c.client_version, "streamwire-0.1");
    assert_eq!(c.protocol_version(), 21);
    assert_eq!(c.auth_method_name.as_deref(), Some("token"));
    assert_eq!(c.auth_data.as_deref(), Some(&b"secret"[..]));
    assert_eq!(c.proxy_to_broker_url.as_deref(), Some("pulsar://b1:6650"));
    assert!(c.feature_flags.unwrap().supports_broker_entry_metadata());
}

#[test]
fn auth_response_builder() {
    let cmd = check(
        auth_response("v", 21, "token", Bytes::from_static(b"t2")),
        Type::AuthResponse,
        "AUTH_RESPONSE",
    );
    let r = cmd.auth_response.unwrap().response.unwrap();
    assert_eq!(r.auth_method_name.as_deref(), Some("token"));
    assert_eq!(r.auth_data.as_deref(), Some(&b"t2"[..]));
}

#[test]
fn ping_pong_builders() {
    check(ping(), Type::Ping, "PING");
    check(pong(), Type::Pong, "PONG");
}

#[test]
fn lookup_and_partitions_builders() {
    let cmd = check(
        lookup_topic("persistent://t/n/x", 7, true, Some("internal")),
        Type::Lookup,
        "LOOKUP",
    );
    let l = cmd.lookup_topic.unwrap();
    assert_eq!(
        (l.topic.as_str(), l.request_id, l.authoritative()),
        ("persistent://t/n/x", 7, true)
    );
    assert_eq!(l.advertised_listener_name.as_deref(), Some("internal"));

    let cmd = check(
        partitioned_metadata("persistent://t/n/x", 8),
        Type::PartitionedMetadata,
        "PARTITIONED_METADATA",
    );
    assert_eq!(cmd.partition_metadata.unwrap().request_id, 8);
}

#[test]
fn producer_builder() {
    let params = ProducerParams {
        topic: "persistent://t/n/x".into(),
        producer_id: 3,
        request_id: 9,
        producer_name: Some("p".into()),
        user_provided_producer_name: true,
        access_mode: pb::ProducerAccessMode::ExclusiveWithFencing,
        topic_epoch: Some(4),
        metadata: vec![pb::KeyValue {
            key: "k".into(),
            value: "v".into(),
        }],
        ..Default::default()
    };
    let cmd = check(producer(&params), Type::Producer, "PRODUCER");
    let p = cmd.producer.unwrap();
    assert_eq!(
        (p.producer_id, p.request_id, p.topic_epoch),
        (3, 9, Some(4))
    );
    assert_eq!(
        p.producer_access_mode(),
        pb::ProducerAccessMode::ExclusiveWithFencing
    );
    assert!(p.user_provided_producer_name());
    assert_eq!(p.metadata.len(), 1);
}

#[test]
fn send_builder_round_trips_with_payload() {
    let cmd = send(3, 42, 5, Some(46), true, false);
    assert_eq!(cmd.r#type(), Type::Send);
    assert_eq!(command_name(&cmd), "SEND");
    let s = cmd.send.as_ref().unwrap();
    assert_eq!(
        (
            s.producer_id,
            s.sequence_id,
            s.num_messages(),
            s.highest_sequence_id()
        ),
        (3, 42, 5, 46)
    );
    assert!(s.is_chunk() && !s.marker() && s.marker.is_none());

    let md = pb::MessageMetadata {
        producer_name: "p".into(),
        sequence_id: 42,
        publish_time: 1,
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_payload_command(&cmd, &md, b"hello", &mut buf, DEFAULT_MAX_FRAME_SIZE).unwrap();
    let frame = FrameDecoder::default().decode(&mut buf).unwrap().unwrap();
    assert_eq!(frame.command, cmd);
    let p = frame.payload.unwrap();
    assert_eq!(p.verified_metadata().unwrap(), &md);
    assert_eq!(&p.payload[..], b"hello");
}

#[test]
fn close_builders() {
    let cmd = check(close_producer(1, 2), Type::CloseProducer, "CLOSE_PRODUCER");
    assert_eq!(
        cmd.close_producer.map(|c| (c.producer_id, c.request_id)),
        Some((1, 2))
    );
    let cmd = check(close_consumer(3, 4), Type::CloseConsumer, "CLOSE_CONSUMER");
    assert_eq!(
        cmd.close_consumer.map(|c| (c.consumer_id, c.request_id)),
        Some((3, 4))
    );
}

#[test]
fn subscribe_builder() {
    let params = SubscribeParams {
        topic: "persistent://t/n/x".into(),
        subscription: "s".into(),
        sub_type: pb::command_subscribe::SubType::KeyShared,
        consumer_id: 5,
        request_id: 6,
        initial_position: pb::command_subscribe::InitialPosition::Earliest,
        start_message_id: Some(id(1, 2)),
        key_shared_meta: Some(pb::KeySharedMeta {
            key_shared_mode: pb::KeySharedMode::Sticky as i32,
            hash_ranges: vec![pb::IntRange { start: 0, end: 100 }],
            allow_out_of_order_delivery: Some(true),
        }),
        consumer_epoch: Some(2),
        start_message_rollback_duration_sec: 30,
        ..Default::default()
    };
    let cmd = check(subscribe(&params), Type::Subscribe, "SUBSCRIBE");
    let s = cmd.subscribe.unwrap();
    assert_eq!(s.sub_type(), pb::command_subscribe::SubType::KeyShared);
    assert_eq!(
        s.initial_position(),
        pb::command_subscribe::InitialPosition::Earliest
    );
    assert!(s.durable() && s.force_topic_creation());
    assert_eq!(s.start_message_rollback_duration_sec(), 30);
    assert_eq!(
        s.key_shared_meta.unwrap().key_shared_mode(),
        pb::KeySharedMode::Sticky
    );
    assert_eq!(s.consumer_epoch, Some(2));

    // Defaults: durable, may create the topic, no rollback on the wire.
    let s = subscribe(&SubscribeParams::default()).subscribe.unwrap();
    assert_eq!(s.sub_type(), pb::command_subscribe::SubType::Exclusive);
    assert!(s.durable() && s.force_topic_creation());
    assert_eq!(s.start_message_rollback_duration_sec, None);
}

#[test]
fn flow_builder() {
    let cmd = check(flow(5, 1000), Type::Flow, "FLOW");
    let f = cmd.flow.unwrap();
    assert_eq!((f.consumer_id, f.message_permits), (5, 1000));
}

#[test]
fn ack_builder() {
    let cmd = ack(
        5,
        pb::command_ack::AckType::Cumulative,
        vec![id(1, 2), id(1, 3)],
        Some(pb::command_ack::ValidationError::ChecksumMismatch),
        Some(77),
    );
    let cmd = check(cmd, Type::Ack, "ACK");
    let a = cmd.ack.unwrap();
    assert_eq!(a.ack_type(), pb::command_ack::AckType::Cumulative);
    assert_eq!(a.message_id.len(), 2);
    assert_eq!(
        a.validation_error(),
        pb::command_ack::ValidationError::ChecksumMismatch
    );
    assert_eq!(a.request_id, Some(77));

    let a = ack(
        5,
        pb::command_ack::AckType::Individual,
        vec![id(1, 2)],
        None,
        None,
    )
    .ack
    .unwrap();
    assert_eq!(a.validation_error, None);
    assert_eq!(a.request_id, None);
}

#[test]
fn redeliver_builder() {
    let cmd = check(
        redeliver_unacknowledged(5, vec![id(9, 9)], Some(3)),
        Type::RedeliverUnacknowledgedMessages,
        "REDELIVER_UNACKNOWLEDGED_MESSAGES",
    );
    let r = cmd.redeliver_unacknowledged_messages.unwrap();
    assert_eq!(
        (r.consumer_id, r.message_ids.len(), r.consumer_epoch),
        (5, 1, Some(3))
    );
}

#[test]
fn unsubscribe_builder() {
    let cmd = check(unsubscribe(5, 6, true), Type::Unsubscribe, "UNSUBSCRIBE");
    assert!(cmd.unsubscribe.unwrap().force());
    assert_eq!(unsubscribe(5, 6, false).unsubscribe.unwrap().force, None);
}

#[test]
fn seek_builder() {
    let cmd = check(
        seek(5, 6, SeekTarget::MessageId(id(1, 2))),
        Type::Seek,
        "SEEK",
    );
    let s = cmd.seek.unwrap();
    assert_eq!(
        (s.message_id.map(|m| m.entry_id), s.message_publish_time),
        (Some(2), None)
    );
    let s = check(
        seek(5, 7, SeekTarget::PublishTime(1_700_000_000_000)),
        Type::Seek,
        "SEEK",
    )
    .seek
    .unwrap();
    assert_eq!(
        (s.message_id, s.message_publish_time),
        (None, Some(1_700_000_000_000))
    );
}

#[test]
fn get_last_message_id_builder() {
    let cmd = check(
        get_last_message_id(5, 6),
        Type::GetLastMessageId,
        "GET_LAST_MESSAGE_ID",
    );
    assert_eq!(
        cmd.get_last_message_id
            .map(|g| (g.consumer_id, g.request_id)),
        Some((5, 6))
    );
}

#[test]
fn get_topics_of_namespace_builder() {
    use pb::command_get_topics_of_namespace::Mode;
    let cmd = check(
        get_topics_of_namespace(6, "t/n", Mode::All, Some("t/n/x-.*"), Some("abc")),
        Type::GetTopicsOfNamespace,
        "GET_TOPICS_OF_NAMESPACE",
    );
    let g = cmd.get_topics_of_namespace.unwrap();
    assert_eq!((g.namespace.as_str(), g.mode()), ("t/n", Mode::All));
    assert_eq!(
        (g.topics_pattern.as_deref(), g.topics_hash.as_deref()),
        (Some("t/n/x-.*"), Some("abc"))
    );
}

#[test]
fn consumer_stats_builder() {
    let cmd = check(consumer_stats(5, 6), Type::ConsumerStats, "CONSUMER_STATS");
    assert_eq!(
        cmd.consumer_stats.map(|c| (c.consumer_id, c.request_id)),
        Some((5, 6))
    );
}

#[test]
fn command_name_of_unknown_type() {
    let cmd = pb::BaseCommand {
        r#type: 999,
        ..Default::default()
    };
    assert_eq!(command_name(&cmd), "UNKNOWN");
    assert_eq!(body_present(&cmd), None);
}

#[test]
fn base_command_stays_small() {
    // Sub-commands are boxed (see streamwire-proto's build.rs); this guards that choice.
    assert!(
        std::mem::size_of::<pb::BaseCommand>() <= 70 * 8,
        "{}",
        std::mem::size_of::<pb::BaseCommand>()
    );
}
