//! Stream administration on `streamwire.pravega.Client`'s native half: streams created with
//! a scaling policy, a retention policy and tags; a stream's configuration read and replaced;
//! scopes and tagged streams listed; a stream truncated at a stream cut.
//!
//! The Python wrapper (`python/streamwire/pravega/`) merges a partial `update_stream` with the
//! configuration read first; these calls take and give whole configurations as tuples:
//! scaling `(kind, target_rate, scale_factor)` with kind `"events"` or `"kbytes"` (None:
//! fixed), retention `(kind, minimum, maximum)` with kind `"time"` (milliseconds) or `"size"`
//! (bytes) and maximum None for none.

use pyo3::PyResult;

use streamwire_core::error::Error;
use streamwire_pravega::controller::{Retention, ScalingPolicy, StreamSettings, NO_MAX};
use streamwire_pravega::reader::StreamCut;

use crate::common::blocking::count_arg;
use crate::common::errors::{to_py, IntoPyResult};
use crate::common::faces::Op;
use crate::pravega::client::{name_arg, PravegaNativeClient};

type ScalingArg = Option<(String, i64, i64)>;
type RetentionArg = Option<(String, i64, Option<i64>)>;
/// `stream_config`'s answer: `(segments, scaling, retention, tags,
/// timestamp_aggregation_timeout, rollover_size_bytes)`.
type ConfigRow = (
    i32,
    Option<(String, i32, i32)>,
    Option<(String, i64, Option<i64>)>,
    Vec<String>,
    i64,
    i64,
);

fn scaling_of(segments: i64, scaling: ScalingArg) -> PyResult<ScalingPolicy> {
    let segs: i32 = count_arg("segments", segments).py_err()?;
    if segs < 1 {
        return Err(to_py(Error::invalid("segments must be at least 1")));
    }
    let Some((kind, rate, factor)) = scaling else {
        return Ok(ScalingPolicy::Fixed { segments: segs });
    };
    let target_rate: i32 = count_arg("target_rate", rate).py_err()?;
    let scale_factor: i32 = count_arg("scale_factor", factor).py_err()?;
    match kind.as_str() {
        "events" => Ok(ScalingPolicy::ByRateEvents {
            target_rate,
            scale_factor,
            min_segments: segs,
        }),
        "kbytes" => Ok(ScalingPolicy::ByRateKbytes {
            target_rate,
            scale_factor,
            min_segments: segs,
        }),
        other => Err(to_py(Error::invalid(format!(
            "scaling kind must be 'events' or 'kbytes', got {other:?}"
        )))),
    }
}

fn retention_of(retention: RetentionArg) -> PyResult<Option<Retention>> {
    let Some((kind, min, max)) = retention else {
        return Ok(None);
    };
    let max = max.unwrap_or(NO_MAX);
    match kind.as_str() {
        "time" => Ok(Some(Retention::Time {
            min_ms: min,
            max_ms: max,
        })),
        "size" => Ok(Some(Retention::Size {
            min_bytes: min,
            max_bytes: max,
        })),
        other => Err(to_py(Error::invalid(format!(
            "retention kind must be 'time' or 'size', got {other:?}"
        )))),
    }
}

fn config_row(s: StreamSettings) -> ConfigRow {
    let (segments, scaling) = match s.scaling {
        ScalingPolicy::Fixed { segments } => (segments, None),
        ScalingPolicy::ByRateEvents {
            target_rate,
            scale_factor,
            min_segments,
        } => (
            min_segments,
            Some(("events".to_string(), target_rate, scale_factor)),
        ),
        ScalingPolicy::ByRateKbytes {
            target_rate,
            scale_factor,
            min_segments,
        } => (
            min_segments,
            Some(("kbytes".to_string(), target_rate, scale_factor)),
        ),
    };
    let max = |m: i64| (m != NO_MAX).then_some(m);
    let retention = s.retention.map(|r| match r {
        Retention::Time { min_ms, max_ms } => ("time".to_string(), min_ms, max(max_ms)),
        Retention::Size {
            min_bytes,
            max_bytes,
        } => ("size".to_string(), min_bytes, max(max_bytes)),
    });
    (
        segments,
        scaling,
        retention,
        s.tags,
        s.timestamp_aggregation_timeout,
        s.rollover_size_bytes,
    )
}

crate::two_faces! {
    impl PravegaNativeClient {
        /// Create a stream (True), or leave an existing one as it is (False).
        #[pyo3(signature = (scope, stream, segments=1, scaling=None, retention=None, tags=None))]
        fn create_stream / _acreate_stream (
            &self,
            py,
            scope: &str,
            stream: &str,
            segments: i64,
            scaling: ScalingArg,
            retention: RetentionArg,
            tags: Option<Vec<String>>,
        ) -> bool {
            let st = self.stream(scope, stream)?;
            let mut settings = StreamSettings::new(scaling_of(segments, scaling)?);
            settings.retention = retention_of(retention)?;
            settings.tags = tags.unwrap_or_default();
            let c = self.live()?;
            Op::new("create_stream", None, async move {
                c.controller().create_stream_with(&st, &settings).await
            })
        }

        /// Replace the stream's whole configuration.
        #[pyo3(signature = (scope, stream, segments, scaling, retention, tags,
                            timestamp_aggregation_timeout=0, rollover_size_bytes=0))]
        fn update_stream / _aupdate_stream (
            &self,
            py,
            scope: &str,
            stream: &str,
            segments: i64,
            scaling: ScalingArg,
            retention: RetentionArg,
            tags: Vec<String>,
            timestamp_aggregation_timeout: i64,
            rollover_size_bytes: i64,
        ) -> () as none {
            let st = self.stream(scope, stream)?;
            let settings = StreamSettings {
                scaling: scaling_of(segments, scaling)?,
                retention: retention_of(retention)?,
                tags,
                timestamp_aggregation_timeout,
                rollover_size_bytes,
            };
            let c = self.live()?;
            Op::new("update_stream", None, async move {
                c.controller().update_stream(&st, &settings).await
            })
        }

        /// The stream's configuration: `(segments, scaling, retention, tags,
        /// timestamp_aggregation_timeout, rollover_size_bytes)`.
        fn stream_config / _astream_config (&self, py, scope: &str, stream: &str) -> ConfigRow {
            let (st, c) = (self.stream(scope, stream)?, self.live()?);
            Op::new("stream_config", None, async move {
                Ok(config_row(c.controller().get_stream_config(&st).await?))
            })
        }

        /// Every scope's name.
        fn scopes / _ascopes (&self, py) -> Vec<String> {
            let c = self.live()?;
            Op::new("scopes", None, async move { c.controller().list_scopes().await })
        }

        /// The names of the streams of `scope` that carry `tag`.
        fn streams_with_tag / _astreams_with_tag (
            &self,
            py,
            scope: &str,
            tag: &str,
        ) -> Vec<String> {
            name_arg("scope", scope)?;
            if tag.is_empty() {
                return Err(to_py(Error::invalid("a stream tag is not empty")));
            }
            let c = self.live()?;
            let (s, t) = (scope.to_string(), tag.to_string());
            Op::new("streams_with_tag", None, async move {
                c.controller().list_streams_with_tag(&s, &t).await
            })
        }

        /// Drop the stream's events before the cut (its text form).
        fn truncate_stream / _atruncate_stream (
            &self,
            py,
            scope: &str,
            stream: &str,
            cut: &str,
        ) -> () as none {
            let st = self.stream(scope, stream)?;
            let cut = StreamCut::parse(cut).py_err()?;
            if cut.stream != st {
                return Err(to_py(Error::invalid(format!(
                    "the cut is of stream {}, not {st}",
                    cut.stream
                ))));
            }
            if cut.positions.is_empty() {
                return Err(to_py(Error::invalid("the cut names no segment")));
            }
            let c = self.live()?;
            Op::new("truncate_stream", None, async move {
                c.controller().truncate_stream(&st, &cut.positions).await
            })
        }
    }
}
