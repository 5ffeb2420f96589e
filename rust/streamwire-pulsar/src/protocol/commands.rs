//! Builders for the commands a client sends, and command introspection for logs.
//!
//! Each builder returns a complete [`pb::BaseCommand`] with `type` and the matching body
//! set, so callers never pair the two by hand. They are pure; encode the result with
//! [`encode_command`](super::encode_command) or, for SEND, with
//! [`encode_payload_command`](super::encode_payload_command).

use bytes::Bytes;
use streamwire_proto::pulsar as pb;

use pb::base_command::Type;

/// Protocol version this client announces in CONNECT.
pub const CLIENT_PROTOCOL_VERSION: i32 = pb::ProtocolVersion::V21 as i32;

/// Feature flags the codec itself can honour: broker entry metadata is decoded by
/// [`FrameDecoder`](super::FrameDecoder). Flags that depend on the connection layer
/// (auth refresh, partial producers, topic watchers, ...) are left to it to switch on.
pub fn codec_feature_flags() -> pb::FeatureFlags {
    pb::FeatureFlags {
        supports_broker_entry_metadata: Some(true),
        ..Default::default()
    }
}

fn base(kind: Type) -> pb::BaseCommand {
    let mut cmd = pb::BaseCommand::default();
    cmd.set_type(kind);
    cmd
}

/// CONNECT: the first command on a connection.
pub fn connect(
    client_version: &str,
    protocol_version: i32,
    auth_method_name: Option<&str>,
    auth_data: Option<Bytes>,
    feature_flags: pb::FeatureFlags,
    proxy_to_broker_url: Option<&str>,
) -> pb::BaseCommand {
    let mut cmd = base(Type::Connect);
    cmd.connect = Some(Box::new(pb::CommandConnect {
        client_version: client_version.to_owned(),
        protocol_version: Some(protocol_version),
        auth_method_name: auth_method_name.map(str::to_owned),
        auth_data,
        feature_flags: Some(feature_flags),
        proxy_to_broker_url: proxy_to_broker_url.map(str::to_owned),
        ..Default::default()
    }));
    cmd
}

/// AUTH_RESPONSE: answer to a broker's AUTH_CHALLENGE.
pub fn auth_response(
    client_version: &str,
    protocol_version: i32,
    auth_method_name: &str,
    auth_data: Bytes,
) -> pb::BaseCommand {
    let mut cmd = base(Type::AuthResponse);
    cmd.auth_response = Some(Box::new(pb::CommandAuthResponse {
        client_version: Some(client_version.to_owned()),
        response: Some(pb::AuthData {
            auth_method_name: Some(auth_method_name.to_owned()),
            auth_data: Some(auth_data),
        }),
        protocol_version: Some(protocol_version),
    }));
    cmd
}

/// PING keep-alive probe.
pub fn ping() -> pb::BaseCommand {
    let mut cmd = base(Type::Ping);
    cmd.ping = Some(Box::new(pb::CommandPing {}));
    cmd
}

/// PONG: the answer to a PING.
pub fn pong() -> pb::BaseCommand {
    let mut cmd = base(Type::Pong);
    cmd.pong = Some(Box::new(pb::CommandPong {}));
    cmd
}

/// LOOKUP: which broker serves `topic`? `authoritative` must echo the value of a redirect.
pub fn lookup_topic(
    topic: &str,
    request_id: u64,
    authoritative: bool,
    advertised_listener_name: Option<&str>,
) -> pb::BaseCommand {
    let mut cmd = base(Type::Lookup);
    cmd.lookup_topic = Some(Box::new(pb::CommandLookupTopic {
        topic: topic.to_owned(),
        request_id,
        authoritative: Some(authoritative),
        advertised_listener_name: advertised_listener_name.map(str::to_owned),
        ..Default::default()
    }));
    cmd
}

/// PARTITIONED_METADATA: how many partitions does `topic` have?
pub fn partitioned_metadata(topic: &str, request_id: u64) -> pb::BaseCommand {
    let mut cmd = base(Type::PartitionedMetadata);
    cmd.partition_metadata = Some(Box::new(pb::CommandPartitionedTopicMetadata {
        topic: topic.to_owned(),
        request_id,
        ..Default::default()
    }));
    cmd
}

/// Everything a PRODUCER command can say. `Default` gives a shared-access producer with a
/// broker-assigned name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProducerParams {
    pub topic: String,
    pub producer_id: u64,
    pub request_id: u64,
    /// `None` lets the broker pick a name; reuse that name when re-creating after reconnect
    /// (with `user_provided_producer_name` false).
    pub producer_name: Option<String>,
    pub user_provided_producer_name: bool,
    pub encrypted: bool,
    pub metadata: Vec<pb::KeyValue>,
    pub schema: Option<pb::Schema>,
    /// Incremented by the client on each re-creation of the same producer.
    pub epoch: u64,
    pub access_mode: pb::ProducerAccessMode,
    /// Echo of `ProducerSuccess.topic_epoch` for exclusive producers on reconnect.
    pub topic_epoch: Option<u64>,
    pub txn_enabled: bool,
    pub initial_subscription_name: Option<String>,
}

/// PRODUCER: create (or re-create) a producer.
pub fn producer(p: &ProducerParams) -> pb::BaseCommand {
    let mut cmd = base(Type::Producer);
    let mut body = pb::CommandProducer {
        topic: p.topic.clone(),
        producer_id: p.producer_id,
        request_id: p.request_id,
        producer_name: p.producer_name.clone(),
        encrypted: Some(p.encrypted),
        metadata: p.metadata.clone(),
        schema: p.schema.clone(),
        epoch: Some(p.epoch),
        user_provided_producer_name: Some(p.user_provided_producer_name),
        topic_epoch: p.topic_epoch,
        txn_enabled: Some(p.txn_enabled),
        initial_subscription_name: p.initial_subscription_name.clone(),
        ..Default::default()
    };
    body.set_producer_access_mode(p.access_mode);
    cmd.producer = Some(Box::new(body));
    cmd
}

/// SEND header; the metadata and payload go in the same frame
/// (see [`encode_payload_command`](super::encode_payload_command)).
pub fn send(
    producer_id: u64,
    sequence_id: u64,
    num_messages: i32,
    highest_sequence_id: Option<u64>,
    is_chunk: bool,
    marker: bool,
) -> pb::BaseCommand {
    let mut cmd = base(Type::Send);
    cmd.send = Some(Box::new(pb::CommandSend {
        producer_id,
        sequence_id,
        num_messages: Some(num_messages),
        highest_sequence_id,
        // Defaults are false; leave them off the wire unless set.
        is_chunk: is_chunk.then_some(true),
        marker: marker.then_some(true),
        ..Default::default()
    }));
    cmd
}

/// CLOSE_PRODUCER.
pub fn close_producer(producer_id: u64, request_id: u64) -> pb::BaseCommand {
    let mut cmd = base(Type::CloseProducer);
    cmd.close_producer = Some(Box::new(pb::CommandCloseProducer {
        producer_id,
        request_id,
        ..Default::default()
    }));
    cmd
}

/// Everything a SUBSCRIBE command can say. `Default` gives an exclusive, durable
/// subscription starting at the latest message, allowed to create the topic.
#[derive(Debug, Clone, PartialEq)]
pub struct SubscribeParams {
    pub topic: String,
    pub subscription: String,
    pub sub_type: pb::command_subscribe::SubType,
    pub consumer_id: u64,
    pub request_id: u64,
    pub consumer_name: Option<String>,
    pub priority_level: Option<i32>,
    pub durable: bool,
    pub start_message_id: Option<pb::MessageIdData>,
    pub metadata: Vec<pb::KeyValue>,
    pub read_compacted: bool,
    pub schema: Option<pb::Schema>,
    pub initial_position: pb::command_subscribe::InitialPosition,
    pub replicate_subscription_state: bool,
    pub force_topic_creation: bool,
    pub start_message_rollback_duration_sec: u64,
    pub key_shared_meta: Option<pb::KeySharedMeta>,
    pub subscription_properties: Vec<pb::KeyValue>,
    pub consumer_epoch: Option<u64>,
}

impl Default for SubscribeParams {
    fn default() -> Self {
        Self {
            topic: String::new(),
            subscription: String::new(),
            sub_type: pb::command_subscribe::SubType::Exclusive,
            consumer_id: 0,
            request_id: 0,
            consumer_name: None,
            priority_level: None,
            durable: true,
            start_message_id: None,
            metadata: Vec::new(),
            read_compacted: false,
            schema: None,
            initial_position: pb::command_subscribe::InitialPosition::Latest,
            replicate_subscription_state: false,
            force_topic_creation: true,
            start_message_rollback_duration_sec: 0,
            key_shared_meta: None,
            subscription_properties: Vec::new(),
            consumer_epoch: None,
        }
    }
}

/// SUBSCRIBE: attach a consumer to a subscription.
pub fn subscribe(p: &SubscribeParams) -> pb::BaseCommand {
    let mut cmd = base(Type::Subscribe);
    let mut body = pb::CommandSubscribe {
        topic: p.topic.clone(),
        subscription: p.subscription.clone(),
        consumer_id: p.consumer_id,
        request_id: p.request_id,
        consumer_name: p.consumer_name.clone(),
        priority_level: p.priority_level,
        durable: Some(p.durable),
        start_message_id: p.start_message_id.clone(),
        metadata: p.metadata.clone(),
        read_compacted: Some(p.read_compacted),
        schema: p.schema.clone(),
        replicate_subscription_state: Some(p.replicate_subscription_state),
        force_topic_creation: Some(p.force_topic_creation),
        start_message_rollback_duration_sec: (p.start_message_rollback_duration_sec > 0)
            .then_some(p.start_message_rollback_duration_sec),
        key_shared_meta: p.key_shared_meta.clone(),
        subscription_properties: p.subscription_properties.clone(),
        consumer_epoch: p.consumer_epoch,
        ..Default::default()
    };
    body.set_sub_type(p.sub_type);
    body.set_initial_position(p.initial_position);
    cmd.subscribe = Some(Box::new(body));
    cmd
}

/// FLOW: let the broker push `permits` more messages.
pub fn flow(consumer_id: u64, permits: u32) -> pb::BaseCommand {
    let mut cmd = base(Type::Flow);
    cmd.flow = Some(Box::new(pb::CommandFlow {
        consumer_id,
        message_permits: permits,
    }));
    cmd
}

/// ACK. `validation_error` reports a message dropped as corrupt; `request_id` asks for an
/// ACK_RESPONSE.
pub fn ack(
    consumer_id: u64,
    ack_type: pb::command_ack::AckType,
    message_ids: Vec<pb::MessageIdData>,
    validation_error: Option<pb::command_ack::ValidationError>,
    request_id: Option<u64>,
) -> pb::BaseCommand {
    let mut cmd = base(Type::Ack);
    let mut body = pb::CommandAck {
        consumer_id,
        message_id: message_ids,
        request_id,
        ..Default::default()
    };
    body.set_ack_type(ack_type);
    if let Some(v) = validation_error {
        body.set_validation_error(v);
    }
    cmd.ack = Some(Box::new(body));
    cmd
}

/// REDELIVER_UNACKNOWLEDGED_MESSAGES; an empty list means "everything pending".
pub fn redeliver_unacknowledged(
    consumer_id: u64,
    message_ids: Vec<pb::MessageIdData>,
    consumer_epoch: Option<u64>,
) -> pb::BaseCommand {
    let mut cmd = base(Type::RedeliverUnacknowledgedMessages);
    cmd.redeliver_unacknowledged_messages =
        Some(Box::new(pb::CommandRedeliverUnacknowledgedMessages {
            consumer_id,
            message_ids,
            consumer_epoch,
        }));
    cmd
}

/// CLOSE_CONSUMER.
pub fn close_consumer(consumer_id: u64, request_id: u64) -> pb::BaseCommand {
    let mut cmd = base(Type::CloseConsumer);
    cmd.close_consumer = Some(Box::new(pb::CommandCloseConsumer {
        consumer_id,
        request_id,
        ..Default::default()
    }));
    cmd
}

/// UNSUBSCRIBE; `force` also disconnects other consumers of the subscription.
pub fn unsubscribe(consumer_id: u64, request_id: u64, force: bool) -> pb::BaseCommand {
    let mut cmd = base(Type::Unsubscribe);
    cmd.unsubscribe = Some(Box::new(pb::CommandUnsubscribe {
        consumer_id,
        request_id,
        force: force.then_some(true),
    }));
    cmd
}

/// Where a SEEK moves the subscription.
#[derive(Debug, Clone, PartialEq)]
pub enum SeekTarget {
    MessageId(pb::MessageIdData),
    /// Publish time in milliseconds since the Unix epoch.
    PublishTime(u64),
}

/// SEEK.
pub fn seek(consumer_id: u64, request_id: u64, target: SeekTarget) -> pb::BaseCommand {
    let mut cmd = base(Type::Seek);
    let (message_id, message_publish_time) = match target {
        SeekTarget::MessageId(id) => (Some(id), None),
        SeekTarget::PublishTime(t) => (None, Some(t)),
    };
    cmd.seek = Some(Box::new(pb::CommandSeek {
        consumer_id,
        request_id,
        message_id,
        message_publish_time,
    }));
    cmd
}

/// GET_LAST_MESSAGE_ID.
pub fn get_last_message_id(consumer_id: u64, request_id: u64) -> pb::BaseCommand {
    let mut cmd = base(Type::GetLastMessageId);
    cmd.get_last_message_id = Some(Box::new(pb::CommandGetLastMessageId {
        consumer_id,
        request_id,
    }));
    cmd
}

/// GET_TOPICS_OF_NAMESPACE. With `topics_pattern` the broker may filter for us; with
/// `topics_hash` it may answer "unchanged".
pub fn get_topics_of_namespace(
    request_id: u64,
    namespace: &str,
    mode: pb::command_get_topics_of_namespace::Mode,
    topics_pattern: Option<&str>,
    topics_hash: Option<&str>,
) -> pb::BaseCommand {
    let mut cmd = base(Type::GetTopicsOfNamespace);
    let mut body = pb::CommandGetTopicsOfNamespace {
        request_id,
        namespace: namespace.to_owned(),
        topics_pattern: topics_pattern.map(str::to_owned),
        topics_hash: topics_hash.map(str::to_owned),
        ..Default::default()
    };
    body.set_mode(mode);
    cmd.get_topics_of_namespace = Some(Box::new(body));
    cmd
}

/// CONSUMER_STATS.
pub fn consumer_stats(consumer_id: u64, request_id: u64) -> pb::BaseCommand {
    let mut cmd = base(Type::ConsumerStats);
    cmd.consumer_stats = Some(Box::new(pb::CommandConsumerStats {
        request_id,
        consumer_id,
    }));
    cmd
}

/// Name of the command type for logs ("SEND", "LOOKUP_RESPONSE", ...); "UNKNOWN" for a
/// type this build does not know.
pub fn command_name(cmd: &pb::BaseCommand) -> &'static str {
    Type::try_from(cmd.r#type)
        .map(|t| t.as_str_name())
        .unwrap_or("UNKNOWN")
}

/// Whether the body named by `type` is present: `None` for an unknown type. PING and PONG
/// count as present either way since their bodies are empty and some peers omit them.
pub(crate) fn body_present(c: &pb::BaseCommand) -> Option<bool> {
    let t = Type::try_from(c.r#type).ok()?;
    Some(match t {
        Type::Ping | Type::Pong => true,
        Type::Connect => c.connect.is_some(),
        Type::Connected => c.connected.is_some(),
        Type::Subscribe => c.subscribe.is_some(),
        Type::Producer => c.producer.is_some(),
        Type::Send => c.send.is_some(),
        Type::SendReceipt => c.send_receipt.is_some(),
        Type::SendError => c.send_error.is_some(),
        Type::Message => c.message.is_some(),
        Type::Ack => c.ack.is_some(),
        Type::Flow => c.flow.is_some(),
        Type::Unsubscribe => c.unsubscribe.is_some(),
        Type::Success => c.success.is_some(),
        Type::Error => c.error.is_some(),
        Type::CloseProducer => c.close_producer.is_some(),
        Type::CloseConsumer => c.close_consumer.is_some(),
        Type::ProducerSuccess => c.producer_success.is_some(),
        Type::RedeliverUnacknowledgedMessages => c.redeliver_unacknowledged_messages.is_some(),
        Type::PartitionedMetadata => c.partition_metadata.is_some(),
        Type::PartitionedMetadataResponse => c.partition_metadata_response.is_some(),
        Type::Lookup => c.lookup_topic.is_some(),
        Type::LookupResponse => c.lookup_topic_response.is_some(),
        Type::ConsumerStats => c.consumer_stats.is_some(),
        Type::ConsumerStatsResponse => c.consumer_stats_response.is_some(),
        Type::ReachedEndOfTopic => c.reached_end_of_topic.is_some(),
        Type::Seek => c.seek.is_some(),
        Type::GetLastMessageId => c.get_last_message_id.is_some(),
        Type::GetLastMessageIdResponse => c.get_last_message_id_response.is_some(),
        Type::ActiveConsumerChange => c.active_consumer_change.is_some(),
        Type::GetTopicsOfNamespace => c.get_topics_of_namespace.is_some(),
        Type::GetTopicsOfNamespaceResponse => c.get_topics_of_namespace_response.is_some(),
        Type::GetSchema => c.get_schema.is_some(),
        Type::GetSchemaResponse => c.get_schema_response.is_some(),
        Type::AuthChallenge => c.auth_challenge.is_some(),
        Type::AuthResponse => c.auth_response.is_some(),
        Type::AckResponse => c.ack_response.is_some(),
        Type::GetOrCreateSchema => c.get_or_create_schema.is_some(),
        Type::GetOrCreateSchemaResponse => c.get_or_create_schema_response.is_some(),
        Type::NewTxn => c.new_txn.is_some(),
        Type::NewTxnResponse => c.new_txn_response.is_some(),
        Type::AddPartitionToTxn => c.add_partition_to_txn.is_some(),
        Type::AddPartitionToTxnResponse => c.add_partition_to_txn_response.is_some(),
        Type::AddSubscriptionToTxn => c.add_subscription_to_txn.is_some(),
        Type::AddSubscriptionToTxnResponse => c.add_subscription_to_txn_response.is_some(),
        Type::EndTxn => c.end_txn.is_some(),
        Type::EndTxnResponse => c.end_txn_response.is_some(),
        Type::EndTxnOnPartition => c.end_txn_on_partition.is_some(),
        Type::EndTxnOnPartitionResponse => c.end_txn_on_partition_response.is_some(),
        Type::EndTxnOnSubscription => c.end_txn_on_subscription.is_some(),
        Type::EndTxnOnSubscriptionResponse => c.end_txn_on_subscription_response.is_some(),
        Type::TcClientConnectRequest => c.tc_client_connect_request.is_some(),
        Type::TcClientConnectResponse => c.tc_client_connect_response.is_some(),
        Type::WatchTopicList => c.watch_topic_list.is_some(),
        Type::WatchTopicListSuccess => c.watch_topic_list_success.is_some(),
        Type::WatchTopicUpdate => c.watch_topic_update.is_some(),
        Type::WatchTopicListClose => c.watch_topic_list_close.is_some(),
        Type::TopicMigrated => c.topic_migrated.is_some(),
    })
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
