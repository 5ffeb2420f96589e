//! Stream administration in our own types: a stream's whole configuration (scaling,
//! retention, tags) to and from the controller's `StreamConfig`, and the answers of
//! `updateStream` / `truncateStream` / `listScopes` (pure: no I/O, unit-tested in `tests`).

use std::collections::BTreeMap;

use streamwire_core::error::{Error, ErrorKind, Result};

use super::proto;
use super::types::{stream_config, ScalingPolicy, ScopedStream};

/// What the controller stores for "no maximum" in a retention policy (Java's Long.MAX_VALUE).
pub const NO_MAX: i64 = i64::MAX;

/// The most tags a stream may carry, and the longest tag: the official client's
/// `StreamConfiguration` refuses more (checked here, so the caller gets a clear error rather
/// than a controller failure).
pub const MAX_TAGS: usize = 128;
pub const MAX_TAG_LEN: usize = 256;

/// Automatic truncation: keep at least `min` (and at most `max`, [`NO_MAX`] for none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Milliseconds since the data was written.
    Time { min_ms: i64, max_ms: i64 },
    /// Bytes held by the stream.
    Size { min_bytes: i64, max_bytes: i64 },
}

impl Retention {
    fn check(&self) -> Result<()> {
        let (min, max) = match *self {
            Retention::Time { min_ms, max_ms } => (min_ms, max_ms),
            Retention::Size {
                min_bytes,
                max_bytes,
            } => (min_bytes, max_bytes),
        };
        if min < 0 || max < min {
            return Err(Error::invalid(format!(
                "a retention policy needs 0 <= minimum <= maximum, got {min} and {max}"
            )));
        }
        Ok(())
    }
}

/// A stream's configuration as the controller keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSettings {
    pub scaling: ScalingPolicy,
    pub retention: Option<Retention>,
    pub tags: Vec<String>,
    /// Kept as read: an update built from [`StreamSettings`] read from the controller does
    /// not reset what this client does not set.
    pub timestamp_aggregation_timeout: i64,
    pub rollover_size_bytes: i64,
}

impl StreamSettings {
    /// Scaling only: no retention, no tags, the controller's defaults for the rest.
    pub fn new(scaling: ScalingPolicy) -> Self {
        StreamSettings {
            scaling,
            retention: None,
            tags: Vec::new(),
            timestamp_aggregation_timeout: 0,
            rollover_size_bytes: 0,
        }
    }
}

/// Tags must be non-empty, at most [`MAX_TAG_LEN`] characters, at most [`MAX_TAGS`] of them;
/// duplicates are dropped (a stream's tags are a set), first occurrence kept.
pub fn check_tags(tags: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for t in tags {
        if t.is_empty() || t.chars().count() > MAX_TAG_LEN {
            return Err(Error::invalid(format!(
                "a stream tag is 1 to {MAX_TAG_LEN} characters, got {t:?}"
            )));
        }
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    if out.len() > MAX_TAGS {
        return Err(Error::invalid(format!(
            "a stream carries at most {MAX_TAGS} tags, got {}",
            out.len()
        )));
    }
    Ok(out)
}

/// The `StreamConfig` message of `createStream` / `updateStream` for `settings`.
pub fn config_message(
    stream: &ScopedStream,
    settings: &StreamSettings,
) -> Result<proto::StreamConfig> {
    let mut m = stream_config(stream, settings.scaling)?;
    if let Some(r) = settings.retention {
        r.check()?;
        use proto::retention_policy::RetentionPolicyType as T;
        let (kind, param, max) = match r {
            Retention::Time { min_ms, max_ms } => (T::Time, min_ms, max_ms),
            Retention::Size {
                min_bytes,
                max_bytes,
            } => (T::Size, min_bytes, max_bytes),
        };
        m.retention_policy = Some(proto::RetentionPolicy {
            retention_type: kind as i32,
            retention_param: param,
            retention_max: max,
        });
    }
    m.tags = Some(proto::Tags {
        tag: check_tags(&settings.tags)?,
    });
    m.timestamp_aggregation_timeout = settings.timestamp_aggregation_timeout;
    m.rollover_size_bytes = settings.rollover_size_bytes;
    Ok(m)
}

/// `getStreamConfiguration`'s answer in our types.
pub fn settings_of(m: &proto::StreamConfig) -> Result<StreamSettings> {
    use proto::scaling_policy::ScalingPolicyType as S;
    let sp = m.scaling_policy.unwrap_or_default();
    let scaling = match S::try_from(sp.scale_type) {
        Ok(S::FixedNumSegments) => ScalingPolicy::Fixed {
            segments: sp.min_num_segments,
        },
        Ok(S::ByRateInKbytesPerSec) => ScalingPolicy::ByRateKbytes {
            target_rate: sp.target_rate,
            scale_factor: sp.scale_factor,
            min_segments: sp.min_num_segments,
        },
        Ok(S::ByRateInEventsPerSec) => ScalingPolicy::ByRateEvents {
            target_rate: sp.target_rate,
            scale_factor: sp.scale_factor,
            min_segments: sp.min_num_segments,
        },
        Err(_) => {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("controller sent unknown scaling type {}", sp.scale_type),
            ))
        }
    };
    let retention = match &m.retention_policy {
        None => None,
        Some(r) => {
            use proto::retention_policy::RetentionPolicyType as T;
            match T::try_from(r.retention_type) {
                Ok(T::Unknown) => None,
                Ok(T::Time) => Some(Retention::Time {
                    min_ms: r.retention_param,
                    max_ms: r.retention_max,
                }),
                Ok(T::Size) => Some(Retention::Size {
                    min_bytes: r.retention_param,
                    max_bytes: r.retention_max,
                }),
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!(
                            "controller sent unknown retention type {}",
                            r.retention_type
                        ),
                    ))
                }
            }
        }
    };
    Ok(StreamSettings {
        scaling,
        retention,
        tags: m.tags.as_ref().map(|t| t.tag.clone()).unwrap_or_default(),
        timestamp_aggregation_timeout: m.timestamp_aggregation_timeout,
        rollover_size_bytes: m.rollover_size_bytes,
    })
}

/// The `StreamCut` message of `truncateStream`.
pub fn cut_message(stream: &ScopedStream, positions: &BTreeMap<i64, i64>) -> proto::StreamCut {
    proto::StreamCut {
        stream_info: Some(stream.info()),
        cut: positions.iter().map(|(&s, &o)| (s, o)).collect(),
    }
}

/// `updateStream` and `truncateStream` answer with the same status.
pub(crate) fn stream_updated(what: &str, s: proto::UpdateStreamStatus) -> Result<()> {
    use proto::update_stream_status::Status;
    let status = Status::try_from(s.status).map_err(|_| {
        Error::new(
            ErrorKind::Server,
            format!(
                "controller answered {what} with unknown status {}",
                s.status
            ),
        )
    })?;
    let refused =
        |kind: ErrorKind, why: &str| Error::new(kind, format!("controller refused {what}: {why}"));
    match status {
        Status::Success => Ok(()),
        Status::StreamNotFound | Status::ScopeNotFound => {
            Err(refused(ErrorKind::TopicNotFound, "no such stream"))
        }
        Status::StreamSealed => Err(refused(ErrorKind::ReadOnly, "the stream is sealed")),
        // The controller answers FAILURE to a cut it cannot apply (not a valid cut of the
        // stream, or one behind its head) as well as to its own failures.
        Status::Failure => Err(refused(ErrorKind::Server, "failure")),
    }
}

/// One page of `listScopes`: the scope names and the token of the next page.
pub(crate) fn scopes_page(r: proto::ScopesResponse) -> (Vec<String>, String) {
    (
        r.scopes,
        r.continuation_token.map(|t| t.token).unwrap_or_default(),
    )
}

/// Names starting with '_' are Pravega's own (the `_system` scope, a stream's `_MARK` twin,
/// reader groups' state streams): listings leave them out, and this client refuses such
/// names for its own scopes and streams.
pub fn is_user_name(name: &str) -> bool {
    !name.starts_with('_')
}
