//! Responses a client receives (decoders), and encoders of them for tests and fuzzing.

use std::net::{Ipv4Addr, SocketAddrV4};

use bytes::{BufMut, Bytes, BytesMut};

use super::frame::{begin_frame, end_frame};
use super::wire::{put_str8, Cursor};
use super::{CodecError, MsgType};

fn addr(c: &mut Cursor<'_>) -> Result<SocketAddrV4, CodecError> {
    let ip = c.u32()?;
    let port = c.u16()?;
    Ok(SocketAddrV4::new(Ipv4Addr::from(ip.to_be()), port))
}

// ---------------------------------------------------------------------------------- Produce

/// One partition's produce outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProduceStatus {
    Ok,
    UnknownTopic,
    ReadOnly,
    UnknownPartition,
    SystemError,
    NoAcks,
    InsufficientReplicas,
    InvalidSeqNum,
    NoLeader,
    OtherLeader(SocketAddrV4),
    Other(u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceResponse {
    pub request_id: u32,
    /// Per topic of the request, one status per partition, in request order.
    pub statuses: Vec<Vec<ProduceStatus>>,
}

impl ProduceResponse {
    pub fn status(&self, topic: usize, partition: usize) -> Option<ProduceStatus> {
        self.statuses.get(topic)?.get(partition).copied()
    }
}

/// Decode a Produce response for a request of `shape[i]` partitions in topic `i`: a topic
/// whose first byte is 0xff (unknown) or 0xfe (read-only) has no further bytes.
pub fn decode_produce_response(
    payload: &[u8],
    shape: &[usize],
) -> Result<ProduceResponse, CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let mut statuses = Vec::with_capacity(shape.len());
    for &n in shape {
        let first = c.u8()?;
        let topic_wide = match first {
            0xff => Some(ProduceStatus::UnknownTopic),
            0xfe => Some(ProduceStatus::ReadOnly),
            _ => None,
        };
        if let Some(s) = topic_wide {
            statuses.push(vec![s; n]);
            continue;
        }
        let mut v = Vec::with_capacity(n.min(c.remaining() + 1));
        let mut code = first;
        for i in 0..n {
            if i > 0 {
                code = c.u8()?;
            }
            v.push(match code {
                0x00 => ProduceStatus::Ok,
                0x01 => ProduceStatus::UnknownPartition,
                0x02 => ProduceStatus::SystemError,
                0x03 => ProduceStatus::NoAcks,
                0x04 => ProduceStatus::InsufficientReplicas,
                0x0a => ProduceStatus::InvalidSeqNum,
                0xfd => ProduceStatus::NoLeader,
                0xfc => ProduceStatus::OtherLeader(addr(&mut c)?),
                other => ProduceStatus::Other(other),
            });
        }
        statuses.push(v);
    }
    Ok(ProduceResponse {
        request_id,
        statuses,
    })
}

/// Encode a Produce response (tests): `topic_wide` statuses (unknown / read-only) are one
/// byte for the whole topic.
pub fn encode_produce_response(
    out: &mut BytesMut,
    request_id: u32,
    statuses: &[Vec<ProduceStatus>],
) {
    let at = begin_frame(out, MsgType::Produce);
    out.put_u32_le(request_id);
    for topic in statuses {
        match topic.first() {
            Some(ProduceStatus::UnknownTopic) => out.put_u8(0xff),
            Some(ProduceStatus::ReadOnly) => out.put_u8(0xfe),
            _ => {
                for s in topic {
                    match s {
                        ProduceStatus::Ok => out.put_u8(0),
                        ProduceStatus::UnknownPartition => out.put_u8(1),
                        ProduceStatus::SystemError => out.put_u8(2),
                        ProduceStatus::NoAcks => out.put_u8(3),
                        ProduceStatus::InsufficientReplicas => out.put_u8(4),
                        ProduceStatus::InvalidSeqNum => out.put_u8(0x0a),
                        ProduceStatus::NoLeader => out.put_u8(0xfd),
                        ProduceStatus::OtherLeader(a) => {
                            out.put_u8(0xfc);
                            out.put_u32_le(u32::from(*a.ip()).to_be());
                            out.put_u16_le(a.port());
                        }
                        ProduceStatus::Other(b) => out.put_u8(*b),
                        ProduceStatus::UnknownTopic | ProduceStatus::ReadOnly => out.put_u8(0x02),
                    }
                }
            }
        }
    }
    let _ = end_frame(out, at);
}

// ---------------------------------------------------------------------------------- Consume

/// One partition's part of a Consume response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionOutcome {
    /// Bundles (possibly none: drained, or the long poll ran out).
    Data {
        /// Seq of the first message of the first bundle; `None` when that bundle is sparse.
        base_seq: Option<u64>,
        high_water: u64,
        chunk: Bytes,
    },
    /// The requested seq is outside what the partition stores.
    BoundaryFault {
        first_available: u64,
        high_water: u64,
    },
    UnknownPartition,
    SystemError,
    NoLeader,
    OtherLeader(SocketAddrV4),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionResult {
    pub partition: u16,
    pub outcome: PartitionOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicResult {
    pub topic: Bytes,
    /// `None`: the topic is unknown.
    pub partitions: Option<Vec<PartitionResult>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumeResponse {
    pub request_id: u32,
    pub topics: Vec<TopicResult>,
}

/// Decode a Consume response; chunks are slices of `payload`.
pub fn decode_consume_response(payload: Bytes) -> Result<ConsumeResponse, CodecError> {
    let mut c = Cursor::new(&payload);
    let header_len = c.u32()? as usize;
    if header_len > c.remaining() {
        return Err(CodecError::Truncated);
    }
    let mut chunk_at = 4 + header_len;
    let mut h = Cursor::new(&payload[4..4 + header_len]);
    let request_id = h.u32()?;
    let n_topics = h.u8()?;
    let mut topics = Vec::with_capacity(usize::from(n_topics).min(h.remaining()));
    for _ in 0..n_topics {
        let name = h.str8()?;
        let topic = payload.slice_ref(name);
        let n_parts = h.u8()?;
        if n_parts > 0 && h.peek_u16()? == 0xffff {
            h.u16()?;
            topics.push(TopicResult {
                topic,
                partitions: None,
            });
            continue;
        }
        let mut parts = Vec::with_capacity(usize::from(n_parts).min(h.remaining()));
        for _ in 0..n_parts {
            let partition = h.u16()?;
            let flags = h.u8()?;
            let outcome = match flags {
                0xff => PartitionOutcome::UnknownPartition,
                0xfb => PartitionOutcome::SystemError,
                0xfd => PartitionOutcome::NoLeader,
                0xfc => PartitionOutcome::OtherLeader(addr(&mut h)?),
                _ => {
                    let base_seq = if flags == 0xfe { None } else { Some(h.u64()?) };
                    let high_water = h.u64()?;
                    let chunk_len = h.u32()? as usize;
                    if flags == 0x01 {
                        let first_available = h.u64()?;
                        PartitionOutcome::BoundaryFault {
                            first_available,
                            high_water,
                        }
                    } else {
                        if chunk_len > payload.len() - chunk_at {
                            return Err(CodecError::Truncated);
                        }
                        let chunk = payload.slice(chunk_at..chunk_at + chunk_len);
                        chunk_at += chunk_len;
                        PartitionOutcome::Data {
                            base_seq,
                            high_water,
                            chunk,
                        }
                    }
                }
            };
            parts.push(PartitionResult { partition, outcome });
        }
        topics.push(TopicResult {
            topic,
            partitions: Some(parts),
        });
    }
    Ok(ConsumeResponse { request_id, topics })
}

/// Encode a Consume response (tests, fuzz seeds).
pub fn encode_consume_response(
    out: &mut BytesMut,
    resp: &ConsumeResponse,
) -> Result<(), CodecError> {
    let at = begin_frame(out, MsgType::Consume);
    let mut header = BytesMut::new();
    header.put_u32_le(resp.request_id);
    header.put_u8(resp.topics.len() as u8);
    let mut chunks = BytesMut::new();
    for t in &resp.topics {
        put_str8(&mut header, &t.topic, "topic")?;
        match &t.partitions {
            None => {
                header.put_u8(1);
                header.put_u16_le(0xffff);
            }
            Some(parts) => {
                header.put_u8(parts.len() as u8);
                for p in parts {
                    header.put_u16_le(p.partition);
                    match &p.outcome {
                        PartitionOutcome::UnknownPartition => header.put_u8(0xff),
                        PartitionOutcome::SystemError => header.put_u8(0xfb),
                        PartitionOutcome::NoLeader => header.put_u8(0xfd),
                        PartitionOutcome::OtherLeader(a) => {
                            header.put_u8(0xfc);
                            header.put_u32_le(u32::from(*a.ip()).to_be());
                            header.put_u16_le(a.port());
                        }
                        PartitionOutcome::BoundaryFault {
                            first_available,
                            high_water,
                        } => {
                            header.put_u8(0x01);
                            header.put_u64_le(0);
                            header.put_u64_le(*high_water);
                            header.put_u32_le(0);
                            header.put_u64_le(*first_available);
                        }
                        PartitionOutcome::Data {
                            base_seq,
                            high_water,
                            chunk,
                        } => {
                            match base_seq {
                                Some(b) => {
                                    header.put_u8(0);
                                    header.put_u64_le(*b);
                                }
                                None => header.put_u8(0xfe),
                            }
                            header.put_u64_le(*high_water);
                            header.put_u32_le(chunk.len() as u32);
                            chunks.put_slice(chunk);
                        }
                    }
                }
            }
        }
    }
    out.put_u32_le(header.len() as u32);
    out.put_slice(&header);
    out.put_slice(&chunks);
    end_frame(out, at)
}

// ------------------------------------------------------------------------------- Admin calls

/// First available and high-water seqs of one partition; both u64::MAX with a reason when
/// the broker cannot tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscoveredPartition {
    pub first_available: u64,
    pub high_water: u64,
    /// 0xfb system error, 0xfd no leader, 0xfc other leader (when both seqs are u64::MAX).
    pub reason: Option<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverPartitionsResponse {
    pub request_id: u32,
    pub topic: Vec<u8>,
    /// `None`: unknown topic (the broker reports 0 partitions).
    pub partitions: Option<Vec<DiscoveredPartition>>,
}

pub fn decode_discover_partitions_response(
    payload: &[u8],
) -> Result<DiscoverPartitionsResponse, CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let topic = c.str8()?.to_vec();
    let n = c.u16()?;
    if n == 0 {
        return Ok(DiscoverPartitionsResponse {
            request_id,
            topic,
            partitions: None,
        });
    }
    let mut parts = Vec::with_capacity(usize::from(n).min(c.remaining() / 16 + 1));
    for _ in 0..n {
        let first_available = c.u64()?;
        let high_water = c.u64()?;
        let reason = if first_available == u64::MAX && high_water == u64::MAX {
            let r = c.u8()?;
            if r == 0xfc {
                addr(&mut c)?;
            }
            Some(r)
        } else {
            None
        };
        parts.push(DiscoveredPartition {
            first_available,
            high_water,
            reason,
        });
    }
    Ok(DiscoverPartitionsResponse {
        request_id,
        topic,
        partitions: Some(parts),
    })
}

pub fn encode_discover_partitions_response(out: &mut BytesMut, resp: &DiscoverPartitionsResponse) {
    let at = begin_frame(out, MsgType::DiscoverPartitions);
    out.put_u32_le(resp.request_id);
    let _ = put_str8(out, &resp.topic, "topic");
    let parts = resp.partitions.as_deref().unwrap_or(&[]);
    out.put_u16_le(parts.len() as u16);
    for p in parts {
        out.put_u64_le(p.first_available);
        out.put_u64_le(p.high_water);
        if let Some(r) = p.reason {
            out.put_u8(r);
            if r == 0xfc {
                out.put_u32_le(0);
                out.put_u16_le(0);
            }
        }
    }
    let _ = end_frame(out, at);
}

/// CreateTopic's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateTopicStatus {
    Ok,
    AlreadyExists,
    SystemError,
    InvalidConfig,
    ReadOnly,
    InvalidRequest,
    NotSupported,
    Other(u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicResponse {
    pub request_id: u32,
    pub topic: Vec<u8>,
    pub status: CreateTopicStatus,
}

pub fn decode_create_topic_response(payload: &[u8]) -> Result<CreateTopicResponse, CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let topic = c.str8()?.to_vec();
    let status = match c.u8()? {
        0 => CreateTopicStatus::Ok,
        1 => CreateTopicStatus::AlreadyExists,
        2 => CreateTopicStatus::SystemError,
        4 => CreateTopicStatus::InvalidConfig,
        5 => CreateTopicStatus::ReadOnly,
        10 => CreateTopicStatus::InvalidRequest,
        11 => CreateTopicStatus::NotSupported,
        other => CreateTopicStatus::Other(other),
    };
    Ok(CreateTopicResponse {
        request_id,
        topic,
        status,
    })
}

/// ReloadConf's outcome (the broker's codes; the C++ client's reading of them is off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReloadConfStatus {
    Ok,
    Io,
    BadConfig,
    UnknownPartition,
    UnknownTopic,
    ClusterAware,
    Other(u8),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadConfResponse {
    pub request_id: u32,
    pub topic: Vec<u8>,
    pub partition: u16,
    pub status: ReloadConfStatus,
}

pub fn decode_reload_conf_response(payload: &[u8]) -> Result<ReloadConfResponse, CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let topic = c.str8()?.to_vec();
    let partition = c.u16()?;
    let status = match c.u8()? {
        0 => ReloadConfStatus::Ok,
        2 => ReloadConfStatus::Io,
        3 => ReloadConfStatus::BadConfig,
        10 => ReloadConfStatus::UnknownPartition,
        11 => ReloadConfStatus::UnknownTopic,
        12 => ReloadConfStatus::ClusterAware,
        other => ReloadConfStatus::Other(other),
    };
    Ok(ReloadConfResponse {
        request_id,
        topic,
        partition,
        status,
    })
}

/// The broker's status report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusResponse {
    pub request_id: u32,
    pub global_flags: u8,
    pub cluster_aware: bool,
    pub topics: u32,
    pub partitions: u32,
    pub cluster_name: Option<Vec<u8>>,
    pub available_nodes: Option<u32>,
    pub open_partitions: u32,
    pub open_partitions_time: u32,
    pub startup_ts: u32,
    /// 400 = TANK 4.0.
    pub version: u32,
}

pub fn decode_status_response(payload: &[u8]) -> Result<StatusResponse, CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let global_flags = c.u8()?;
    let cluster_aware = c.u8()? != 0;
    let topics = c.u32()?;
    let partitions = c.u32()?;
    let (cluster_name, available_nodes) = if cluster_aware {
        c.u8()?;
        let name = c.str8()?.to_vec();
        (Some(name), Some(c.u32()?))
    } else {
        (None, None)
    };
    Ok(StatusResponse {
        request_id,
        global_flags,
        cluster_aware,
        topics,
        partitions,
        cluster_name,
        available_nodes,
        open_partitions: c.u32()?,
        open_partitions_time: c.u32()?,
        startup_ts: c.u32()?,
        version: c.u32()?,
    })
}

/// One topic of DiscoverTopics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: Vec<u8>,
    pub enabled: bool,
    pub partitions: u16,
    pub repl_factor: Option<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverTopicsResponse {
    pub request_id: u32,
    pub cluster_aware: bool,
    pub topics: Vec<TopicInfo>,
}

pub fn decode_discover_topics_response(
    payload: &[u8],
) -> Result<DiscoverTopicsResponse, CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let n = c.u32()?;
    let cluster_aware = c.u8()? != 0;
    let mut topics = Vec::with_capacity((n as usize).min(c.remaining() / 4 + 1));
    for _ in 0..n {
        let name = c.str8()?.to_vec();
        let enabled = c.u8()? != 0;
        let partitions = c.u16()?;
        let repl_factor = if cluster_aware { Some(c.u8()?) } else { None };
        topics.push(TopicInfo {
            name,
            enabled,
            partitions,
            repl_factor,
        });
    }
    Ok(DiscoverTopicsResponse {
        request_id,
        cluster_aware,
        topics,
    })
}

/// DiscoverTopology's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topology {
    Standalone,
    /// A clustered broker: the cluster's name and its node count (node details are kept
    /// raw: a standalone client has no use for them).
    Cluster {
        name: Vec<u8>,
        nodes: u16,
        raw: Bytes,
    },
}

pub fn decode_discover_topology_response(payload: &[u8]) -> Result<(u32, Topology), CodecError> {
    let mut c = Cursor::new(payload);
    let request_id = c.u32()?;
    let nodes = c.u16()?;
    if nodes == 0xffff {
        return Ok((request_id, Topology::Standalone));
    }
    let name = c.str8()?.to_vec();
    let raw = Bytes::copy_from_slice(&payload[c.pos()..]);
    Ok((request_id, Topology::Cluster { name, nodes, raw }))
}
