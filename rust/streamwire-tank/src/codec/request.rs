//! Requests a client sends (encoders), and decoders of the two big ones for tests and fuzzing.
//!
//! Every encoder appends one complete frame. Counts that TANK carries in a u8 (topics and
//! partitions per request) and names longer than the broker accepts are refused, never
//! truncated.

use bytes::{BufMut, BytesMut};

use super::frame::{begin_frame, end_frame};
use super::wire::{put_str8, put_varint, Cursor};
use super::{check_topic, CodecError, MsgType};

/// The `clientId` we send. The broker skips it; the C++ client sends it empty too, which
/// keeps our requests byte-identical to the captured ones.
pub const CLIENT_ID: &[u8] = b"";

/// One partition's bundle in a Produce request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducePartition<'a> {
    pub partition: u16,
    pub bundle: &'a [u8],
    /// Only for ProduceWithSeqnum (mirroring): the first message's seq.
    pub base_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceTopic<'a> {
    pub topic: &'a [u8],
    pub partitions: Vec<ProducePartition<'a>>,
}

fn count_u8(n: usize, what: &'static str) -> Result<u8, CodecError> {
    u8::try_from(n).map_err(|_| CodecError::InvalidArgument(what))
}

/// Produce (0x01), or ProduceWithSeqnum (0x05) when any partition carries a `base_seq`.
pub fn encode_produce(
    out: &mut BytesMut,
    request_id: u32,
    topics: &[ProduceTopic<'_>],
) -> Result<(), CodecError> {
    encode_produce_as(out, request_id, CLIENT_ID, topics)
}

/// [`encode_produce`] with a given `clientId` (the captures carry other clients' ids).
pub fn encode_produce_as(
    out: &mut BytesMut,
    request_id: u32,
    client_id: &[u8],
    topics: &[ProduceTopic<'_>],
) -> Result<(), CodecError> {
    let with_seq = topics
        .iter()
        .any(|t| t.partitions.iter().any(|p| p.base_seq.is_some()));
    let msg = if with_seq {
        MsgType::ProduceWithSeqnum
    } else {
        MsgType::Produce
    };
    let at = begin_produce(out, msg, request_id, client_id, topics.len())?;
    for t in topics {
        put_topic_header(out, t.topic, t.partitions.len())?;
        for p in &t.partitions {
            out.put_u16_le(p.partition);
            let n = u32::try_from(p.bundle.len()).map_err(|_| CodecError::TooLarge {
                what: "bundle",
                len: p.bundle.len() as u64,
                limit: u64::from(u32::MAX),
            })?;
            put_varint(out, n);
            if with_seq {
                out.put_u64_le(p.base_seq.unwrap_or(0));
            }
            out.put_slice(p.bundle);
        }
    }
    end_frame(out, at)
}

/// Start a Produce frame: the header up to the topic count. Returns the frame's start for
/// [`end_frame`](super::frame::end_frame). Producers that encode bundles in place use this
/// with [`put_topic_header`] instead of [`encode_produce`].
pub fn begin_produce(
    out: &mut BytesMut,
    msg: MsgType,
    request_id: u32,
    client_id: &[u8],
    topics: usize,
) -> Result<usize, CodecError> {
    let at = begin_frame(out, msg);
    out.put_u16_le(2);
    out.put_u32_le(request_id);
    put_str8(out, client_id, "client id")?;
    out.put_u8(0); // requiredAcks
    out.put_u32_le(0); // ackTimeout
    out.put_u8(count_u8(topics, "at most 255 topics per request")?);
    Ok(at)
}

/// A topic's name and partition count, as Produce and Consume requests both write them; in a
/// Produce request each partition then follows as `partition:u16, bundleLen:varint, bundle`.
pub fn put_topic_header(
    out: &mut BytesMut,
    topic: &[u8],
    partitions: usize,
) -> Result<(), CodecError> {
    check_topic(topic)?;
    put_str8(out, topic, "topic")?;
    out.put_u8(count_u8(
        partitions,
        "at most 255 partitions per topic and request",
    )?);
    Ok(())
}

/// One partition of a Consume request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumePartition {
    pub partition: u16,
    /// 0 = from the first available message; u64::MAX = the tail.
    pub seq: u64,
    pub fetch_size: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConsumeTopic<'a> {
    pub topic: &'a [u8],
    pub partitions: &'a [ConsumePartition],
}

/// Consume (0x02): client version 2, or 3 with `op_flags`.
pub fn encode_consume(
    out: &mut BytesMut,
    request_id: u32,
    max_wait_ms: u64,
    min_bytes: u32,
    op_flags: Option<u8>,
    topics: &[ConsumeTopic<'_>],
) -> Result<(), CodecError> {
    let at = begin_frame(out, MsgType::Consume);
    out.put_u16_le(if op_flags.is_some() { 3 } else { 2 });
    out.put_u32_le(request_id);
    put_str8(out, CLIENT_ID, "client id")?;
    out.put_u64_le(max_wait_ms);
    out.put_u32_le(min_bytes);
    if let Some(f) = op_flags {
        out.put_u8(f);
    }
    out.put_u8(count_u8(topics.len(), "at most 255 topics per request")?);
    for t in topics {
        put_topic_header(out, t.topic, t.partitions.len())?;
        for p in t.partitions {
            out.put_u16_le(p.partition);
            out.put_u64_le(p.seq);
            out.put_u32_le(p.fetch_size);
        }
    }
    end_frame(out, at)
}

pub fn encode_discover_partitions(
    out: &mut BytesMut,
    request_id: u32,
    topic: &[u8],
    partitions: &[u16],
) -> Result<(), CodecError> {
    check_topic(topic)?;
    let at = begin_frame(out, MsgType::DiscoverPartitions);
    out.put_u32_le(request_id);
    put_str8(out, topic, "topic")?;
    for p in partitions {
        out.put_u16_le(*p);
    }
    end_frame(out, at)
}

pub fn encode_create_topic(
    out: &mut BytesMut,
    request_id: u32,
    topic: &[u8],
    partitions: u16,
    config: &[u8],
) -> Result<(), CodecError> {
    check_topic(topic)?;
    let at = begin_frame(out, MsgType::CreateTopic);
    out.put_u32_le(request_id);
    put_str8(out, topic, "topic")?;
    out.put_u16_le(partitions);
    let n = u32::try_from(config.len())
        .map_err(|_| CodecError::InvalidArgument("configuration too large"))?;
    put_varint(out, n);
    out.put_slice(config);
    end_frame(out, at)
}

pub fn encode_reload_conf(
    out: &mut BytesMut,
    request_id: u32,
    topic: &[u8],
    partition: u16,
) -> Result<(), CodecError> {
    check_topic(topic)?;
    let at = begin_frame(out, MsgType::ReloadConf);
    out.put_u32_le(request_id);
    put_str8(out, topic, "topic")?;
    out.put_u16_le(partition);
    end_frame(out, at)
}

fn id_and_flags(out: &mut BytesMut, msg: MsgType, request_id: u32, flags: Option<u8>) {
    let at = begin_frame(out, msg);
    out.put_u32_le(request_id);
    if let Some(f) = flags {
        out.put_u8(f);
    }
    // A payload of 4 or 5 bytes cannot overflow the length field.
    let _ = end_frame(out, at);
}

pub fn encode_status(out: &mut BytesMut, request_id: u32) {
    id_and_flags(out, MsgType::Status, request_id, None);
}

pub fn encode_discover_topics(out: &mut BytesMut, request_id: u32) {
    id_and_flags(out, MsgType::DiscoverTopics, request_id, Some(0));
}

pub fn encode_discover_topology(out: &mut BytesMut, request_id: u32) {
    id_and_flags(out, MsgType::DiscoverTopology, request_id, Some(0));
}

/// One partition of a decoded Produce request: (partition, base seq, bundle).
pub type DecodedBundle = (u16, Option<u64>, Vec<u8>);

/// A decoded Produce request (payload without the frame header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceRequest {
    pub request_id: u32,
    pub client_id: Vec<u8>,
    pub topics: Vec<(Vec<u8>, Vec<DecodedBundle>)>,
}

pub fn decode_produce_request(
    with_seq: bool,
    payload: &[u8],
) -> Result<ProduceRequest, CodecError> {
    let mut c = Cursor::new(payload);
    let _version = c.u16()?;
    let request_id = c.u32()?;
    let client_id = c.str8()?.to_vec();
    c.u8()?;
    c.u32()?;
    let n = c.u8()?;
    let mut topics = Vec::new();
    for _ in 0..n {
        let topic = c.str8()?.to_vec();
        let np = c.u8()?;
        let mut parts = Vec::new();
        for _ in 0..np {
            let p = c.u16()?;
            let len = c.varint()? as usize;
            let base = if with_seq { Some(c.u64()?) } else { None };
            parts.push((p, base, c.take(len)?.to_vec()));
        }
        topics.push((topic, parts));
    }
    Ok(ProduceRequest {
        request_id,
        client_id,
        topics,
    })
}

/// A decoded Consume request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumeRequest {
    pub version: u16,
    pub request_id: u32,
    pub max_wait_ms: u64,
    pub min_bytes: u32,
    pub op_flags: Option<u8>,
    pub topics: Vec<(Vec<u8>, Vec<ConsumePartition>)>,
}

pub fn decode_consume_request(payload: &[u8]) -> Result<ConsumeRequest, CodecError> {
    let mut c = Cursor::new(payload);
    let version = c.u16()?;
    let request_id = c.u32()?;
    c.str8()?;
    let max_wait_ms = c.u64()?;
    let min_bytes = c.u32()?;
    let op_flags = if version >= 3 { Some(c.u8()?) } else { None };
    let n = c.u8()?;
    let mut topics = Vec::new();
    for _ in 0..n {
        let topic = c.str8()?.to_vec();
        let np = c.u8()?;
        let mut parts = Vec::new();
        for _ in 0..np {
            parts.push(ConsumePartition {
                partition: c.u16()?,
                seq: c.u64()?,
                fetch_size: c.u32()?,
            });
        }
        topics.push((topic, parts));
    }
    Ok(ConsumeRequest {
        version,
        request_id,
        max_wait_ms,
        min_bytes,
        op_flags,
        topics,
    })
}
