//! The controller's answers in our own types, and our requests in its messages (pure: no
//! I/O, so every mapping and every status → error decision is unit-tested without a server).

use std::collections::BTreeMap;

use streamwire_core::error::{Error, ErrorKind, Result};

use super::proto;
use crate::routing::KeyRange;

/// A stream inside its scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopedStream {
    pub scope: String,
    pub stream: String,
}

/// `scope/stream`, as Pravega's own tools and logs spell it.
impl std::fmt::Display for ScopedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.scope, self.stream)
    }
}

impl ScopedStream {
    pub fn new(scope: impl Into<String>, stream: impl Into<String>) -> Self {
        ScopedStream {
            scope: scope.into(),
            stream: stream.into(),
        }
    }

    pub(crate) fn info(&self) -> proto::StreamInfo {
        proto::StreamInfo {
            scope: self.scope.clone(),
            stream: self.stream.clone(),
            access_operation: proto::stream_info::AccessOperation::Unspecified as i32,
        }
    }

    fn from_info(info: Option<&proto::StreamInfo>) -> Self {
        info.map(|i| ScopedStream::new(&i.scope, &i.stream))
            .unwrap_or_else(|| ScopedStream::new("", ""))
    }
}

/// One segment of a stream, with the part of the routing-key space it owns.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub stream: ScopedStream,
    /// `epoch << 32 | number`, as the controller names segments.
    pub id: i64,
    pub low: f64,
    pub high: f64,
}

impl Segment {
    pub fn number(&self) -> i32 {
        self.id as i32
    }

    pub fn epoch(&self) -> i32 {
        (self.id >> 32) as i32
    }

    /// The segment store's name for it: `scope/stream/number.#epoch.epoch`.
    pub fn qualified_name(&self) -> String {
        segment_name(&self.stream, self.id)
    }

    pub fn key_range(&self) -> KeyRange {
        KeyRange {
            segment: self.id,
            low: self.low,
            high: self.high,
        }
    }

    pub(crate) fn id_message(&self) -> proto::SegmentId {
        segment_id(&self.stream, self.id)
    }
}

/// The segment store's name of segment `id` of `stream`.
pub fn segment_name(stream: &ScopedStream, id: i64) -> String {
    format!(
        "{}/{}/{}.#epoch.{}",
        stream.scope,
        stream.stream,
        id as i32,
        (id >> 32) as i32
    )
}

pub(crate) fn segment_id(stream: &ScopedStream, id: i64) -> proto::SegmentId {
    proto::SegmentId {
        stream_info: Some(stream.info()),
        segment_id: id,
    }
}

/// The segments a stream has now, and the token the segment store wants with them.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentSegments {
    pub segments: Vec<Segment>,
    pub delegation_token: String,
}

/// Where a segment's segment store listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeUri {
    pub host: String,
    pub port: u16,
}

/// Each segment's offset at one point in time (what `getSegments` answers).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamCut {
    pub positions: BTreeMap<i64, i64>,
    pub delegation_token: String,
}

/// A successor segment after a scale, with the segments it replaces.
#[derive(Debug, Clone, PartialEq)]
pub struct Successor {
    pub segment: Segment,
    pub predecessors: Vec<i64>,
}

/// How a stream's segment count is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalingPolicy {
    Fixed {
        segments: i32,
    },
    /// Auto-scaling on kilobytes per second per segment.
    ByRateKbytes {
        target_rate: i32,
        scale_factor: i32,
        min_segments: i32,
    },
    /// Auto-scaling on events per second per segment.
    ByRateEvents {
        target_rate: i32,
        scale_factor: i32,
        min_segments: i32,
    },
}

/// The `StreamConfig` message for `createStream`.
pub fn stream_config(stream: &ScopedStream, policy: ScalingPolicy) -> Result<proto::StreamConfig> {
    use proto::scaling_policy::ScalingPolicyType as T;
    let (kind, target_rate, scale_factor, min) = match policy {
        ScalingPolicy::Fixed { segments } => (T::FixedNumSegments, 0, 0, segments),
        ScalingPolicy::ByRateKbytes {
            target_rate,
            scale_factor,
            min_segments,
        } => (
            T::ByRateInKbytesPerSec,
            target_rate,
            scale_factor,
            min_segments,
        ),
        ScalingPolicy::ByRateEvents {
            target_rate,
            scale_factor,
            min_segments,
        } => (
            T::ByRateInEventsPerSec,
            target_rate,
            scale_factor,
            min_segments,
        ),
    };
    if min < 1 {
        return Err(Error::invalid("a stream needs at least one segment"));
    }
    if kind != T::FixedNumSegments && (target_rate < 1 || scale_factor < 1) {
        return Err(Error::invalid(
            "an auto-scaling policy needs a target rate and a scale factor of at least 1",
        ));
    }
    Ok(proto::StreamConfig {
        stream_info: Some(stream.info()),
        scaling_policy: Some(proto::ScalingPolicy {
            scale_type: kind as i32,
            target_rate,
            scale_factor,
            min_num_segments: min,
        }),
        ..Default::default()
    })
}

/// The `ScaleRequest` for sealing `sealed` and opening segments over `new_ranges`; the new
/// ranges must lie in [0, 1] with low < high.
pub fn scale_request(
    stream: &ScopedStream,
    sealed: &[i64],
    new_ranges: &[(f64, f64)],
    timestamp_ms: i64,
) -> Result<proto::ScaleRequest> {
    if sealed.is_empty() || new_ranges.is_empty() {
        return Err(Error::invalid(
            "a scale seals at least one segment and opens at least one",
        ));
    }
    if new_ranges
        .iter()
        .any(|&(lo, hi)| !((0.0..1.0).contains(&lo) && lo < hi && hi <= 1.0))
    {
        return Err(Error::invalid(
            "new key ranges must lie in [0, 1] with low < high",
        ));
    }
    Ok(proto::ScaleRequest {
        stream_info: Some(stream.info()),
        sealed_segments: sealed.to_vec(),
        new_key_ranges: new_ranges
            .iter()
            .map(|&(start, end)| proto::scale_request::KeyRangeEntry { start, end })
            .collect(),
        scale_timestamp: timestamp_ms,
    })
}

pub(crate) fn segment_of(range: &proto::SegmentRange, fallback: &ScopedStream) -> Segment {
    let (stream, id) = match &range.segment_id {
        Some(s) if s.stream_info.is_some() => (
            ScopedStream::from_info(s.stream_info.as_ref()),
            s.segment_id,
        ),
        Some(s) => (fallback.clone(), s.segment_id),
        None => (fallback.clone(), 0),
    };
    Segment {
        stream,
        id,
        low: range.min_key,
        high: range.max_key,
    }
}

pub(crate) fn current_segments(
    stream: &ScopedStream,
    r: proto::SegmentRanges,
) -> Result<CurrentSegments> {
    if r.segment_ranges.iter().any(|s| s.segment_id.is_none()) {
        return Err(Error::new(
            ErrorKind::Protocol,
            "controller sent a segment range without a segment id",
        ));
    }
    let mut segments: Vec<Segment> = r
        .segment_ranges
        .iter()
        .map(|s| segment_of(s, stream))
        .collect();
    segments.sort_by(|a, b| a.low.total_cmp(&b.low));
    Ok(CurrentSegments {
        segments,
        delegation_token: r.delegation_token,
    })
}

pub(crate) fn successors(stream: &ScopedStream, r: proto::SuccessorResponse) -> Vec<Successor> {
    let mut out: Vec<Successor> = r
        .segments
        .iter()
        .filter_map(|e| {
            e.segment.as_ref().map(|s| Successor {
                segment: segment_of(s, stream),
                predecessors: e.value.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.segment.low.total_cmp(&b.segment.low));
    out
}

pub(crate) fn node_uri(n: proto::NodeUri) -> Result<NodeUri> {
    let port = u16::try_from(n.port)
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                format!("controller gave segment store port {}", n.port),
            )
        })?;
    if n.endpoint.is_empty() {
        return Err(Error::new(
            ErrorKind::Protocol,
            "controller gave an empty segment store host",
        ));
    }
    Ok(NodeUri {
        host: n.endpoint,
        port,
    })
}

pub(crate) fn stream_cut(r: proto::SegmentsAtTime) -> StreamCut {
    StreamCut {
        positions: r
            .segments
            .iter()
            .filter_map(|l| l.segment_id.as_ref().map(|s| (s.segment_id, l.offset)))
            .collect(),
        delegation_token: r.delegation_token,
    }
}

pub(crate) fn refused(kind: ErrorKind, what: &str, status: &str) -> Error {
    Error::new(kind, format!("controller refused {what}: {status}"))
}

/// A status enum's value; one this client does not know (a newer controller) is an error,
/// never the enum's default (which is SUCCESS: prost's getters fall back to it).
pub(crate) fn known<T: TryFrom<i32>>(what: &str, v: i32) -> Result<T> {
    T::try_from(v).map_err(|_| {
        Error::new(
            ErrorKind::Server,
            format!("controller answered {what} with unknown status {v}"),
        )
    })
}

/// `createScope`: `Ok(true)` created, `Ok(false)` it was there already.
pub(crate) fn scope_created(s: proto::CreateScopeStatus) -> Result<bool> {
    use proto::create_scope_status::Status;
    match known::<proto::create_scope_status::Status>("createScope", s.status)? {
        Status::Success => Ok(true),
        Status::ScopeExists => Ok(false),
        Status::InvalidScopeName => Err(refused(
            ErrorKind::InvalidArgument,
            "createScope",
            "invalid scope name",
        )),
        Status::Failure => Err(refused(ErrorKind::Server, "createScope", "failure")),
    }
}

/// `createStream`: `Ok(true)` created, `Ok(false)` it was there already.
pub(crate) fn stream_created(s: proto::CreateStreamStatus) -> Result<bool> {
    use proto::create_stream_status::Status;
    match known::<proto::create_stream_status::Status>("createStream", s.status)? {
        Status::Success => Ok(true),
        Status::StreamExists => Ok(false),
        Status::ScopeNotFound => Err(refused(
            ErrorKind::TopicNotFound,
            "createStream",
            "scope not found",
        )),
        Status::InvalidStreamName => Err(refused(
            ErrorKind::InvalidArgument,
            "createStream",
            "invalid stream name",
        )),
        Status::Failure => Err(refused(ErrorKind::Server, "createStream", "failure")),
    }
}

pub(crate) fn stream_sealed(s: proto::UpdateStreamStatus) -> Result<()> {
    use proto::update_stream_status::Status;
    match known::<proto::update_stream_status::Status>("sealStream", s.status)? {
        // Sealing a sealed stream is done already.
        Status::Success | Status::StreamSealed => Ok(()),
        Status::StreamNotFound | Status::ScopeNotFound => Err(refused(
            ErrorKind::TopicNotFound,
            "sealStream",
            "no such stream",
        )),
        Status::Failure => Err(refused(ErrorKind::Server, "sealStream", "failure")),
    }
}

/// `deleteStream`: `Ok(false)` when there was no such stream.
pub(crate) fn stream_deleted(s: proto::DeleteStreamStatus) -> Result<bool> {
    use proto::delete_stream_status::Status;
    match known::<proto::delete_stream_status::Status>("deleteStream", s.status)? {
        Status::Success => Ok(true),
        Status::StreamNotFound => Ok(false),
        Status::StreamNotSealed => Err(refused(
            ErrorKind::InvalidArgument,
            "deleteStream",
            "the stream must be sealed first",
        )),
        Status::Failure => Err(refused(ErrorKind::Server, "deleteStream", "failure")),
    }
}

/// `deleteScope`: `Ok(false)` when there was no such scope.
pub(crate) fn scope_deleted(s: proto::DeleteScopeStatus) -> Result<bool> {
    use proto::delete_scope_status::Status;
    match known::<proto::delete_scope_status::Status>("deleteScope", s.status)? {
        Status::Success => Ok(true),
        Status::ScopeNotFound => Ok(false),
        Status::ScopeNotEmpty => Err(refused(
            ErrorKind::InvalidArgument,
            "deleteScope",
            "the scope still has streams",
        )),
        Status::Failure => Err(refused(ErrorKind::Server, "deleteScope", "failure")),
    }
}

/// `scale`: the epoch to poll with `checkScale`.
pub(crate) fn scale_started(s: proto::ScaleResponse) -> Result<i32> {
    use proto::scale_response::ScaleStreamStatus as S;
    match known::<proto::scale_response::ScaleStreamStatus>("scale", s.status)? {
        S::Started => Ok(s.epoch),
        S::PreconditionFailed => Err(refused(
            ErrorKind::InvalidArgument,
            "scale",
            "precondition failed (segments not current, or ranges do not cover them)",
        )),
        S::Failure => Err(refused(ErrorKind::Server, "scale", "failure")),
    }
}

/// `checkScale`: `Ok(true)` done, `Ok(false)` still going.
pub(crate) fn scale_done(s: proto::ScaleStatusResponse) -> Result<bool> {
    use proto::scale_status_response::ScaleStatus as S;
    match known::<proto::scale_status_response::ScaleStatus>("checkScale", s.status)? {
        S::Success => Ok(true),
        S::InProgress => Ok(false),
        S::InvalidInput => Err(refused(
            ErrorKind::InvalidArgument,
            "checkScale",
            "invalid input",
        )),
        S::InternalError => Err(refused(ErrorKind::Server, "checkScale", "internal error")),
    }
}

/// A gRPC failure as a streamwire error (`what` names the call).
pub fn status_error(what: &str, s: &tonic::Status) -> Error {
    use tonic::Code;
    let kind = match s.code() {
        Code::Unavailable => ErrorKind::Connect,
        Code::DeadlineExceeded => ErrorKind::Timeout,
        Code::Cancelled | Code::Aborted => ErrorKind::Disconnected,
        Code::Unauthenticated => ErrorKind::Authentication,
        Code::PermissionDenied => ErrorKind::Authorization,
        Code::InvalidArgument | Code::OutOfRange | Code::FailedPrecondition => {
            ErrorKind::InvalidArgument
        }
        Code::NotFound => ErrorKind::TopicNotFound,
        Code::Unimplemented => ErrorKind::NotSupported,
        Code::ResourceExhausted => ErrorKind::QueueFull,
        _ => ErrorKind::Server,
    };
    Error::server(
        kind,
        s.code() as i32,
        format!("controller {what}: {:?} {}", s.code(), s.message()),
    )
}

/// One page of `listStreamsInScope`: the stream names and the token of the next page.
pub fn streams_page(
    scope: &str,
    r: proto::StreamsInScopeResponse,
) -> Result<(Vec<String>, String)> {
    use proto::streams_in_scope_response::Status;
    match Status::try_from(r.status) {
        // Names starting with '_' are Pravega's own (a stream's `_MARK` twin, reader groups'
        // state): the official clients leave them out of listings too.
        Ok(Status::Success) => Ok((
            r.streams
                .into_iter()
                .map(|s| s.stream)
                .filter(|s| !s.starts_with('_'))
                .collect(),
            r.continuation_token.map(|t| t.token).unwrap_or_default(),
        )),
        Ok(Status::ScopeNotFound) => Err(Error::new(
            ErrorKind::TopicNotFound,
            format!("scope {scope:?} does not exist"),
        )),
        _ => Err(Error::new(
            ErrorKind::Server,
            format!("controller failed to list the streams of scope {scope:?}"),
        )),
    }
}
