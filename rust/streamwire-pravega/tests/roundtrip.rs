//! Round trips for every command pair: each client encoder through the server-side decoder
//! (`wire::peer`), each reply through the server-side encoder and the client decoder, with
//! arbitrary field values (strings with NUL, non-BMP characters; any integers; any data).

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use streamwire_pravega::wire::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-z/#.0-9]{0,40}",
        Just("a\0\u{1F600}".to_string())
    ]
}

fn data() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..64).prop_map(Bytes::from)
}

fn reply() -> impl Strategy<Value = Reply> {
    let (i, w, s, b) = (any::<i64>, any::<u128>, text, any::<bool>);
    prop_oneof![
        (any::<i32>(), any::<i32>()).prop_map(|(high, low)| Reply::Hello { high, low }),
        Just(Reply::KeepAlive),
        (i(), s(), w(), i()).prop_map(|(request_id, segment, writer_id, last_event_number)| {
            Reply::AppendSetup {
                request_id,
                segment,
                writer_id,
                last_event_number,
            }
        }),
        (w(), i(), i(), i(), i()).prop_map(|(writer_id, event_number, p, request_id, o)| {
            Reply::DataAppended {
                writer_id,
                event_number,
                previous_event_number: p,
                request_id,
                current_segment_write_offset: o,
            }
        }),
        (w(), i(), i()).prop_map(|(writer_id, event_number, request_id)| {
            Reply::ConditionalCheckFailed {
                writer_id,
                event_number,
                request_id,
            }
        }),
        (s(), i(), b(), b(), data(), i()).prop_map(|(segment, offset, at_tail, eos, data, r)| {
            Reply::SegmentRead {
                segment,
                offset,
                at_tail,
                end_of_segment: eos,
                data,
                request_id: r,
            }
        }),
        (i(), s(), (b(), b(), b()), i(), i(), i()).prop_map(
            |(request_id, segment, (exists, sealed, deleted), lm, wo, so)| {
                Reply::StreamSegmentInfo {
                    request_id,
                    segment,
                    exists,
                    sealed,
                    deleted,
                    last_modified: lm,
                    write_offset: wo,
                    start_offset: so,
                }
            }
        ),
        (i(), s()).prop_map(|(request_id, segment)| Reply::SegmentCreated {
            request_id,
            segment
        }),
        (i(), s(), s(), s()).prop_map(|(request_id, segment, correct_host, stack)| {
            Reply::WrongHost {
                request_id,
                segment,
                correct_host,
                stack,
            }
        }),
        (i(), s(), s(), i()).prop_map(|(request_id, segment, stack, offset)| {
            Reply::SegmentIsSealed {
                request_id,
                segment,
                stack,
                offset,
            }
        }),
        (i(), s(), i(), s(), i()).prop_map(|(request_id, segment, start_offset, stack, offset)| {
            Reply::SegmentIsTruncated {
                request_id,
                segment,
                start_offset,
                stack,
                offset,
            }
        }),
        (i(), s(), s()).prop_map(|(request_id, segment, stack)| {
            Reply::SegmentAlreadyExists {
                request_id,
                segment,
                stack,
            }
        }),
        (i(), s(), s(), i()).prop_map(|(request_id, segment, stack, offset)| {
            Reply::NoSuchSegment {
                request_id,
                segment,
                stack,
                offset,
            }
        }),
        (w(), i(), s(), i()).prop_map(|(writer_id, request_id, stack, event_number)| {
            Reply::InvalidEventNumber {
                writer_id,
                request_id,
                stack,
                event_number,
            }
        }),
        (i(), s(), s()).prop_map(|(request_id, operation, stack)| {
            Reply::OperationUnsupported {
                request_id,
                operation,
                stack,
            }
        }),
        (i(), s(), any::<i32>()).prop_map(|(request_id, stack, error_code)| {
            Reply::AuthTokenCheckFailed {
                request_id,
                stack,
                error_code,
            }
        }),
        (i(), s(), s(), any::<i32>()).prop_map(|(request_id, segment, message, error_code)| {
            Reply::ErrorMessage {
                request_id,
                segment,
                message,
                error_code,
            }
        }),
        // Commands the client does not act on stay raw (ids it does not decode).
        (i(), s()).prop_map(|(request_id, segment)| Reply::SegmentTruncated {
            request_id,
            segment
        }),
        (i(), s(), s(), i()).prop_map(|(request_id, target, source, new_target_write_offset)| {
            Reply::SegmentsMerged {
                request_id,
                target,
                source,
                new_target_write_offset,
            }
        }),
        (200..1000i32, data()).prop_map(|(type_id, payload)| Reply::Other { type_id, payload }),
    ]
}

fn one_request(b: &mut BytesMut) -> Request {
    let r = decode_request(b, MAX_FRAME).unwrap().unwrap();
    assert!(b.is_empty(), "the frame's length covers exactly its fields");
    r
}

proptest! {
    #[test]
    fn every_reply_round_trips(r in reply(), split in any::<prop::sample::Index>()) {
        let mut wire = BytesMut::new();
        r.encode(&mut wire).unwrap();
        // Arriving in two pieces: nothing before the whole frame is there.
        let cut = split.index(wire.len());
        let mut buf = BytesMut::from(&wire[..cut]);
        prop_assert_eq!(decode_frame(&mut buf, MAX_FRAME).unwrap(), None);
        buf.extend_from_slice(&wire[cut..]);
        prop_assert_eq!(decode_frame(&mut buf, MAX_FRAME).unwrap(), Some(r));
        prop_assert!(buf.is_empty());
    }

    #[test]
    fn every_request_round_trips(req in any::<i64>(), writer in any::<u128>(), seg in text(),
                                 token in text(), n in any::<i64>(), m in any::<i64>(),
                                 k in any::<i32>(), byte in any::<u8>(),
                                 events in proptest::collection::vec(data(), 0..5)) {
        let mut b = BytesMut::new();
        encode_hello(&mut b);
        prop_assert_eq!(one_request(&mut b), Request::Hello { high: WIRE_VERSION, low: OLDEST_COMPATIBLE_VERSION });
        encode_keep_alive(&mut b);
        prop_assert_eq!(one_request(&mut b), Request::KeepAlive);
        encode_setup_append(&mut b, req, writer, &seg, &token).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::SetupAppend {
            request_id: req, writer_id: writer, segment: seg.clone(), token: token.clone() });
        let mut block = Vec::new();
        for e in &events {
            put_event(&mut block, e).unwrap();
        }
        encode_append_block(&mut b, writer, &block).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::AppendBlock {
            writer_id: writer, data: Bytes::from(block.clone()) });
        encode_append_block_end(&mut b, writer, &block, events.len() as i32, n, req).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::AppendBlockEnd {
            writer_id: writer, size_of_whole_events: block.len() as i32,
            data: Bytes::from(block.clone()), num_events: events.len() as i32,
            last_event_number: n, request_id: req });
        let event = events.first().cloned().unwrap_or_default();
        encode_conditional_append(&mut b, writer, n, m, &event, req).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::ConditionalAppend {
            writer_id: writer, event_number: n, expected_offset: m, event, request_id: req });
        encode_conditional_block_end(&mut b, writer, n, m, &block, req).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::ConditionalBlockEnd {
            writer_id: writer, event_number: n, expected_offset: m,
            data: Bytes::from(block.clone()), request_id: req });
        encode_truncate_segment(&mut b, req, &seg, m, &token).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::TruncateSegment {
            request_id: req, segment: seg.clone(), offset: m, token: token.clone() });
        encode_read_segment(&mut b, &seg, n, k, &token, req).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::ReadSegment {
            segment: seg.clone(), offset: n, suggested_length: k, token: token.clone(), request_id: req });
        encode_get_stream_segment_info(&mut b, req, &seg, &token).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::GetStreamSegmentInfo {
            request_id: req, segment: seg.clone(), token: token.clone() });
        encode_create_segment(&mut b, req, &seg, k, byte, &token, m).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::CreateSegment {
            request_id: req, segment: seg.clone(), target_rate: k, scale_type: byte, token: token.clone(),
            rollover_size_bytes: m });
        encode_create_transient_segment(&mut b, req, writer, &seg, &token).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::CreateTransientSegment {
            request_id: req, writer_id: writer, parent: seg.clone(), token: token.clone() });
        let source = format!("{seg}#transient.{writer:032x}");
        encode_merge_segments(&mut b, req, &seg, &source, &token).unwrap();
        prop_assert_eq!(one_request(&mut b), Request::MergeSegments {
            request_id: req, target: seg, source, token });
    }

    /// Server-side decoding of arbitrary bytes never panics either (the fake segment store).
    #[test]
    fn request_decoder_never_panics(b in proptest::collection::vec(any::<u8>(), 0..96)) {
        let mut buf = BytesMut::from(&b[..]);
        while let Ok(Some(_)) = decode_request(&mut buf, MAX_FRAME) {}
    }
}

#[test]
fn a_string_over_64k_is_refused() {
    let long = "x".repeat(70_000);
    let mut b = BytesMut::new();
    assert!(matches!(
        encode_setup_append(&mut b, 1, 2, &long, ""),
        Err(WireError::InvalidArgument(_))
    ));
}
