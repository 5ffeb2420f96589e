//! Pure controller logic: messages built with the controller's field numbers (checked byte
//! for byte), answers mapped to our types, statuses to error kinds; and the two failures a
//! client meets without any controller (refused connection, a peer that never answers).

use std::time::Duration;

use prost::Message;
use streamwire_core::error::ErrorKind;

use super::proto;
use super::types::*;
use super::{endpoint_of, Controller};

fn stream() -> ScopedStream {
    ScopedStream::new("sc", "st")
}

#[test]
fn messages_use_the_controllers_field_numbers() {
    // SegmentId{streamInfo(1){scope(1) "sc", stream(2) "st"}, segmentId(2) = 1 << 32 | 3}.
    let id = segment_id(&stream(), (1 << 32) | 3);
    assert_eq!(
        id.encode_to_vec(),
        [
            &[0x0a, 0x08, 0x0a, 0x02, b's', b'c', 0x12, 0x02, b's', b't'][..],
            &[0x10, 0x83, 0x80, 0x80, 0x80, 0x10][..],
        ]
        .concat()
    );
    // StreamConfig{streamInfo(1), scalingPolicy(2){scaleType(1) = 1, targetRate(2) = 5,
    // scaleFactor(3) = 2, minNumSegments(4) = 3}}.
    let cfg = stream_config(
        &stream(),
        ScalingPolicy::ByRateKbytes {
            target_rate: 5,
            scale_factor: 2,
            min_segments: 3,
        },
    )
    .unwrap();
    let bytes = cfg.encode_to_vec();
    assert_eq!(
        &bytes[10..],
        &[0x12, 0x08, 0x08, 0x01, 0x10, 0x05, 0x18, 0x02, 0x20, 0x03]
    );
    // ScaleRequest: sealedSegments(2) packed, newKeyRanges(3){start(1), end(2)} doubles,
    // scaleTimestamp(4).
    let req = scale_request(&stream(), &[0], &[(0.0, 0.5), (0.5, 1.0)], 7).unwrap();
    let b = req.encode_to_vec();
    assert_eq!(&b[10..14], &[0x12, 0x01, 0x00, 0x1a]);
    assert_eq!(&b[b.len() - 2..], &[0x20, 0x07]);
    assert_eq!(proto::ScaleRequest::decode(&b[..]).unwrap(), req);
}

#[test]
fn stream_configs() {
    let fixed = stream_config(&stream(), ScalingPolicy::Fixed { segments: 4 }).unwrap();
    let p = fixed.scaling_policy.unwrap();
    assert_eq!(
        p.scale_type(),
        proto::scaling_policy::ScalingPolicyType::FixedNumSegments
    );
    assert_eq!(p.min_num_segments, 4);
    let ev = ScalingPolicy::ByRateEvents {
        target_rate: 100,
        scale_factor: 2,
        min_segments: 1,
    };
    let p = stream_config(&stream(), ev)
        .unwrap()
        .scaling_policy
        .unwrap();
    assert_eq!(
        p.scale_type(),
        proto::scaling_policy::ScalingPolicyType::ByRateInEventsPerSec
    );
    assert_eq!((p.target_rate, p.scale_factor), (100, 2));
    for bad in [
        ScalingPolicy::Fixed { segments: 0 },
        ScalingPolicy::ByRateKbytes {
            target_rate: 0,
            scale_factor: 2,
            min_segments: 1,
        },
    ] {
        assert_eq!(
            stream_config(&stream(), bad).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
    assert!(scale_request(&stream(), &[], &[(0.0, 1.0)], 0).is_err());
    assert!(scale_request(&stream(), &[1], &[(0.5, 0.5)], 0).is_err());
    assert!(scale_request(&stream(), &[1], &[(0.0, 1.5)], 0).is_err());
}

fn range(id: i64, min_key: f64, max_key: f64) -> proto::SegmentRange {
    proto::SegmentRange {
        segment_id: Some(segment_id(&stream(), id)),
        min_key,
        max_key,
    }
}

#[test]
fn current_segments_are_mapped_in_key_order() {
    // What a 2-segment stream answered on the real 0.13 controller, in reverse order.
    let r = proto::SegmentRanges {
        segment_ranges: vec![range(1, 0.5, 1.0), range(0, 0.0, 0.5)],
        delegation_token: "tok".into(),
    };
    let cur = current_segments(&stream(), r).unwrap();
    assert_eq!(cur.delegation_token, "tok");
    let ids: Vec<i64> = cur.segments.iter().map(|s| s.id).collect();
    assert_eq!(ids, [0, 1]);
    assert_eq!(cur.segments[1].qualified_name(), "sc/st/1.#epoch.0");
    assert_eq!(cur.segments[1].key_range().low, 0.5);
    let after_scale = Segment {
        stream: stream(),
        id: (2 << 32) | 5,
        low: 0.0,
        high: 1.0,
    };
    assert_eq!((after_scale.number(), after_scale.epoch()), (5, 2));
    assert_eq!(after_scale.qualified_name(), "sc/st/5.#epoch.2");
    let bad = proto::SegmentRanges {
        segment_ranges: vec![proto::SegmentRange::default()],
        delegation_token: String::new(),
    };
    assert_eq!(
        current_segments(&stream(), bad).unwrap_err().kind(),
        ErrorKind::Protocol
    );
}

#[test]
fn successors_uris_and_cuts() {
    let r = proto::SuccessorResponse {
        segments: vec![
            proto::successor_response::SegmentEntry {
                segment: Some(range((1 << 32) | 3, 0.5, 1.0)),
                value: vec![0],
            },
            proto::successor_response::SegmentEntry {
                segment: Some(range((1 << 32) | 2, 0.0, 0.5)),
                value: vec![0],
            },
        ],
        delegation_token: String::new(),
    };
    let s = successors(&stream(), r);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].segment.number(), 2);
    assert_eq!(s[0].predecessors, [0]);
    let uri = node_uri(proto::NodeUri {
        endpoint: "127.0.0.1".into(),
        port: 6000,
    })
    .unwrap();
    assert_eq!((uri.host.as_str(), uri.port), ("127.0.0.1", 6000));
    for (endpoint, port) in [("h", 0), ("h", 70_000), ("", 6000)] {
        let n = proto::NodeUri {
            endpoint: endpoint.into(),
            port,
        };
        assert_eq!(node_uri(n).unwrap_err().kind(), ErrorKind::Protocol);
    }
    let cut = stream_cut(proto::SegmentsAtTime {
        segments: vec![proto::segments_at_time::SegmentLocation {
            segment_id: Some(segment_id(&stream(), 1)),
            offset: 42,
        }],
        delegation_token: String::new(),
    });
    assert_eq!(cut.positions.get(&1), Some(&42));
}

#[test]
fn statuses_map_to_outcomes_and_kinds() {
    use proto::*;
    let scope = |s: create_scope_status::Status| CreateScopeStatus { status: s as i32 };
    assert!(scope_created(scope(create_scope_status::Status::Success)).unwrap());
    assert!(!scope_created(scope(create_scope_status::Status::ScopeExists)).unwrap());
    let e = scope_created(scope(create_scope_status::Status::InvalidScopeName)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let st = |s: create_stream_status::Status| CreateStreamStatus { status: s as i32 };
    assert!(stream_created(st(create_stream_status::Status::Success)).unwrap());
    assert!(!stream_created(st(create_stream_status::Status::StreamExists)).unwrap());
    let e = stream_created(st(create_stream_status::Status::ScopeNotFound)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TopicNotFound);
    // An enum value from a newer controller is not success (prost's getter would say it is).
    let e = stream_created(CreateStreamStatus { status: 99 }).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Server);
    let up = |s: update_stream_status::Status| UpdateStreamStatus { status: s as i32 };
    assert!(stream_sealed(up(update_stream_status::Status::StreamSealed)).is_ok());
    assert!(stream_sealed(up(update_stream_status::Status::StreamNotFound)).is_err());
    let del = |s: delete_stream_status::Status| DeleteStreamStatus { status: s as i32 };
    assert!(stream_deleted(del(delete_stream_status::Status::Success)).unwrap());
    assert!(!stream_deleted(del(delete_stream_status::Status::StreamNotFound)).unwrap());
    let e = stream_deleted(del(delete_stream_status::Status::StreamNotSealed)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let ds = |s: delete_scope_status::Status| DeleteScopeStatus { status: s as i32 };
    assert!(scope_deleted(ds(delete_scope_status::Status::Success)).unwrap());
    assert!(!scope_deleted(ds(delete_scope_status::Status::ScopeNotFound)).unwrap());
    assert!(scope_deleted(ds(delete_scope_status::Status::ScopeNotEmpty)).is_err());
    let sc = ScaleResponse {
        status: scale_response::ScaleStreamStatus::Started as i32,
        segments: vec![],
        epoch: 1,
    };
    assert_eq!(scale_started(sc).unwrap(), 1);
    let chk = |s: scale_status_response::ScaleStatus| ScaleStatusResponse { status: s as i32 };
    assert!(!scale_done(chk(scale_status_response::ScaleStatus::InProgress)).unwrap());
    assert!(scale_done(chk(scale_status_response::ScaleStatus::Success)).unwrap());
    assert!(scale_done(chk(scale_status_response::ScaleStatus::InvalidInput)).is_err());
    let unavailable = status_error("getURI", &tonic::Status::unavailable("down"));
    assert_eq!(unavailable.kind(), ErrorKind::Connect);
    assert!(unavailable.is_retriable());
    let denied = status_error("getURI", &tonic::Status::permission_denied("no"));
    assert_eq!(denied.kind(), ErrorKind::Authorization);
    assert!(!denied.is_retriable());
}

#[test]
fn controller_uris() {
    assert_eq!(
        endpoint_of("tcp://127.0.0.1:9090").unwrap(),
        "http://127.0.0.1:9090"
    );
    assert_eq!(
        endpoint_of("tcp://[::1]:9090").unwrap(),
        "http://[::1]:9090"
    );
    // TLS is ours (the connector), never tonic's: the endpoint stays http://.
    assert_eq!(
        endpoint_of("tls://localhost:9090").unwrap(),
        "http://localhost:9090"
    );
    for bad in [
        "127.0.0.1:9090",
        "tcp://host",
        "tcp://:9090",
        "tcp://h:0",
        "tls://h",
        "ssl://h:1",
        "tcp://h:x",
    ] {
        assert_eq!(
            endpoint_of(bad).unwrap_err().kind(),
            ErrorKind::Config,
            "{bad}"
        );
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    let e = Controller::connect(
        &format!("tcp://127.0.0.1:{port}"),
        Duration::from_secs(5),
        None,
        None,
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connect);
    assert!(e.is_retriable());
}

#[tokio::test]
async fn a_controller_that_never_answers_times_out() {
    // Accepts TCP and reads, but never speaks HTTP/2: every call must end at the timeout.
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let timeout = Duration::from_millis(300);
    let started = std::time::Instant::now();
    let result =
        match Controller::connect(&format!("tcp://127.0.0.1:{port}"), timeout, None, None).await {
            Ok(c) => c.check_scope_exists("sc").await.map(|_| ()),
            Err(e) => Err(e),
        };
    let e = result.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));
    hold.abort();
}

mod admin_mapping {
    use std::collections::BTreeMap;

    use prost::Message;
    use streamwire_core::error::ErrorKind;

    use super::super::admin::*;
    use super::super::proto;
    use super::super::types::*;
    use super::stream;

    fn settings() -> StreamSettings {
        StreamSettings {
            scaling: ScalingPolicy::ByRateEvents {
                target_rate: 100,
                scale_factor: 2,
                min_segments: 3,
            },
            retention: Some(Retention::Size {
                min_bytes: 1 << 20,
                max_bytes: NO_MAX,
            }),
            tags: vec!["a".into(), "b".into(), "a".into()],
            timestamp_aggregation_timeout: 7,
            rollover_size_bytes: 9,
        }
    }

    #[test]
    fn a_configuration_survives_the_round_trip() {
        let m = config_message(&stream(), &settings()).unwrap();
        let back = settings_of(&proto::StreamConfig::decode(&m.encode_to_vec()[..]).unwrap());
        let mut want = settings();
        want.tags = vec!["a".into(), "b".into()]; // a set: the duplicate is dropped
        assert_eq!(back.unwrap(), want);
    }

    #[test]
    fn retention_uses_the_controllers_field_numbers() {
        // RetentionPolicy{retentionType(1) = TIME(1), retentionParam(2) = 1000,
        // retentionMax(3) = 2000}.
        let mut s = StreamSettings::new(ScalingPolicy::Fixed { segments: 1 });
        s.retention = Some(Retention::Time {
            min_ms: 1000,
            max_ms: 2000,
        });
        let m = config_message(&stream(), &s).unwrap();
        assert_eq!(
            m.retention_policy.unwrap().encode_to_vec(),
            [0x08, 0x01, 0x10, 0xe8, 0x07, 0x18, 0xd0, 0x0f]
        );
        // Tags(4){tag(1) "x"} in StreamConfig.
        s.tags = vec!["x".into()];
        let bytes = config_message(&stream(), &s).unwrap().encode_to_vec();
        assert!(bytes
            .windows(5)
            .any(|w| w == [0x22, 0x03, 0x0a, 0x01, b'x']));
    }

    #[test]
    fn no_retention_and_unknown_read_as_none() {
        let mut m = config_message(
            &stream(),
            &StreamSettings::new(ScalingPolicy::Fixed { segments: 2 }),
        )
        .unwrap();
        assert!(m.retention_policy.is_none());
        m.retention_policy = Some(proto::RetentionPolicy::default()); // UNKNOWN
        let s = settings_of(&m).unwrap();
        assert_eq!(s.retention, None);
        assert_eq!(s.scaling, ScalingPolicy::Fixed { segments: 2 });
        m.retention_policy = Some(proto::RetentionPolicy {
            retention_type: 9,
            ..Default::default()
        });
        assert_eq!(settings_of(&m).unwrap_err().kind(), ErrorKind::Protocol);
    }

    #[test]
    fn bad_tags_and_retention_are_refused() {
        let mut s = StreamSettings::new(ScalingPolicy::Fixed { segments: 1 });
        s.tags = vec![String::new()];
        assert_eq!(
            config_message(&stream(), &s).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        s.tags = vec!["t".repeat(MAX_TAG_LEN + 1)];
        assert!(config_message(&stream(), &s).is_err());
        s.tags = (0..=MAX_TAGS).map(|i| i.to_string()).collect();
        assert!(config_message(&stream(), &s).is_err());
        s.tags = (0..MAX_TAGS).map(|i| i.to_string()).collect();
        assert!(config_message(&stream(), &s).is_ok());
        s.retention = Some(Retention::Size {
            min_bytes: 10,
            max_bytes: 5,
        });
        assert!(config_message(&stream(), &s).is_err());
        s.retention = Some(Retention::Time {
            min_ms: -1,
            max_ms: NO_MAX,
        });
        assert!(config_message(&stream(), &s).is_err());
    }

    #[test]
    fn update_statuses_map_to_error_kinds() {
        use proto::update_stream_status::Status;
        let st = |s: Status| proto::UpdateStreamStatus { status: s as i32 };
        assert!(stream_updated("updateStream", st(Status::Success)).is_ok());
        let kind = |s| stream_updated("x", st(s)).unwrap_err().kind();
        assert_eq!(kind(Status::StreamNotFound), ErrorKind::TopicNotFound);
        assert_eq!(kind(Status::ScopeNotFound), ErrorKind::TopicNotFound);
        assert_eq!(kind(Status::StreamSealed), ErrorKind::ReadOnly);
        assert_eq!(kind(Status::Failure), ErrorKind::Server);
        let unknown = proto::UpdateStreamStatus { status: 42 };
        assert_eq!(
            stream_updated("x", unknown).unwrap_err().kind(),
            ErrorKind::Server
        );
    }

    #[test]
    fn a_truncation_cut_names_every_segment() {
        let positions = BTreeMap::from([(0, 10), ((1 << 32) | 1, 20)]);
        let m = cut_message(&stream(), &positions);
        assert_eq!(m.cut.len(), 2);
        assert_eq!(m.cut[&((1 << 32) | 1)], 20);
        assert_eq!(m.stream_info.unwrap().stream, "st");
    }
}
