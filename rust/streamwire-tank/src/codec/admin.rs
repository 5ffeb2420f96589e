//! The broker's side of the admin calls: decoders of the requests the client encodes in
//! `request` and encoders of the responses it decodes in `response`.
//!
//! Why they exist in a client: so every admin encoder/decoder pair round-trips under
//! proptest (the same way Produce and Consume do), and a test broker can answer from the same
//! layouts. Like every decoder here, a request decoder returns a typed error for a short or
//! malformed payload and never lets a length off the wire size an allocation.

use bytes::{BufMut, BytesMut};

use super::frame::{begin_frame, end_frame};
use super::response::{
    CreateTopicResponse, CreateTopicStatus, DiscoverTopicsResponse, ReloadConfResponse,
    ReloadConfStatus, StatusResponse, Topology,
};
use super::wire::{put_str8, Cursor};
use super::{CodecError, MsgType};

/// A decoded DiscoverPartitions request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverPartitionsRequest {
    pub request_id: u32,
    pub topic: Vec<u8>,
    pub partitions: Vec<u16>,
}

pub fn decode_discover_partitions_request(
    payload: &[u8],
) -> Result<DiscoverPartitionsRequest, CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let topic = c.str8()?.to_vec();
    if c.remaining() % 2 != 0 {
        return Err(CodecError::Malformed(
            "partition list of an odd byte length",
        ));
    }
    let mut partitions = Vec::with_capacity(c.remaining() / 2);
    while !c.is_empty() {
        partitions.push(c.u16()?);
    }
    Ok(DiscoverPartitionsRequest {
        request_id,
        topic,
        partitions,
    })
}

/// A decoded CreateTopic request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicRequest {
    pub request_id: u32,
    pub topic: Vec<u8>,
    pub partitions: u16,
    pub config: Vec<u8>,
}

pub fn decode_create_topic_request(payload: &[u8]) -> Result<CreateTopicRequest, CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let topic = c.str8()?.to_vec();
    let partitions = c.u16()?;
    let n = c.varint()? as usize;
    let config = c.take(n)?.to_vec();
    Ok(CreateTopicRequest {
        request_id,
        topic,
        partitions,
        config,
    })
}

/// A decoded ReloadConf request: (request id, topic, partition).
pub fn decode_reload_conf_request(payload: &[u8]) -> Result<(u32, Vec<u8>, u16), CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let topic = c.str8()?.to_vec();
    Ok((request_id, topic, c.u16()?))
}

/// The request id of a Status request (the payload is the id alone), or of DiscoverTopics /
/// DiscoverTopology (the id and one flags byte).
pub fn decode_id_request(payload: &[u8], with_flags: bool) -> Result<u32, CodecError> {
    let mut c = Cursor::new(payload);
    let id = c.u32()?;
    if with_flags {
        c.u8()?;
    }
    Ok(id)
}

fn create_topic_code(s: CreateTopicStatus) -> u8 {
    match s {
        CreateTopicStatus::Ok => 0,
        CreateTopicStatus::AlreadyExists => 1,
        CreateTopicStatus::SystemError => 2,
        CreateTopicStatus::InvalidConfig => 4,
        CreateTopicStatus::ReadOnly => 5,
        CreateTopicStatus::InvalidRequest => 10,
        CreateTopicStatus::NotSupported => 11,
        CreateTopicStatus::Other(c) => c,
    }
}

pub fn encode_create_topic_response(out: &mut BytesMut, resp: &CreateTopicResponse) {
    let at = begin_frame(out, MsgType::CreateTopic);
    out.put_u32_le(resp.request_id);
    let _ = put_str8(out, &resp.topic, "topic");
    out.put_u8(create_topic_code(resp.status));
    let _ = end_frame(out, at);
}

fn reload_conf_code(s: ReloadConfStatus) -> u8 {
    match s {
        ReloadConfStatus::Ok => 0,
        ReloadConfStatus::Io => 2,
        ReloadConfStatus::BadConfig => 3,
        ReloadConfStatus::UnknownPartition => 10,
        ReloadConfStatus::UnknownTopic => 11,
        ReloadConfStatus::ClusterAware => 12,
        ReloadConfStatus::Other(c) => c,
    }
}

pub fn encode_reload_conf_response(out: &mut BytesMut, resp: &ReloadConfResponse) {
    let at = begin_frame(out, MsgType::ReloadConf);
    out.put_u32_le(resp.request_id);
    let _ = put_str8(out, &resp.topic, "topic");
    out.put_u16_le(resp.partition);
    out.put_u8(reload_conf_code(resp.status));
    let _ = end_frame(out, at);
}

pub fn encode_status_response(out: &mut BytesMut, resp: &StatusResponse) {
    let at = begin_frame(out, MsgType::Status);
    out.put_u32_le(resp.request_id);
    out.put_u8(resp.global_flags);
    out.put_u8(u8::from(resp.cluster_aware));
    out.put_u32_le(resp.topics);
    out.put_u32_le(resp.partitions);
    if resp.cluster_aware {
        out.put_u8(0); // the byte the broker writes before the cluster's name
        let _ = put_str8(out, resp.cluster_name.as_deref().unwrap_or(&[]), "cluster");
        out.put_u32_le(resp.available_nodes.unwrap_or(0));
    }
    out.put_u32_le(resp.open_partitions);
    out.put_u32_le(resp.open_partitions_time);
    out.put_u32_le(resp.startup_ts);
    out.put_u32_le(resp.version);
    let _ = end_frame(out, at);
}

pub fn encode_discover_topics_response(out: &mut BytesMut, resp: &DiscoverTopicsResponse) {
    let at = begin_frame(out, MsgType::DiscoverTopics);
    out.put_u32_le(resp.request_id);
    out.put_u32_le(resp.topics.len() as u32);
    out.put_u8(u8::from(resp.cluster_aware));
    for t in &resp.topics {
        let _ = put_str8(out, &t.name, "topic");
        out.put_u8(u8::from(t.enabled));
        out.put_u16_le(t.partitions);
        if resp.cluster_aware {
            out.put_u8(t.repl_factor.unwrap_or(0));
        }
    }
    let _ = end_frame(out, at);
}

pub fn encode_discover_topology_response(out: &mut BytesMut, request_id: u32, t: &Topology) {
    let at = begin_frame(out, MsgType::DiscoverTopology);
    out.put_u32_le(request_id);
    match t {
        Topology::Standalone => out.put_u16_le(0xffff),
        Topology::Cluster { name, nodes, raw } => {
            out.put_u16_le(*nodes);
            let _ = put_str8(out, name, "cluster");
            out.put_slice(raw);
        }
    }
    let _ = end_frame(out, at);
}
