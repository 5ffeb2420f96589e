//! Frames checked against the captures in shared/design/PRAVEGA.md (Python client <-> a real
//! 0.13.0 segment store): type ids, lengths and field orders byte for byte; replies decoded.

use bytes::{BufMut, Bytes, BytesMut};
use proptest::prelude::*;

use streamwire_pravega::wire::reply::NO_EVENT_NUMBER;
use streamwire_pravega::wire::*;

const SEGMENT: &str = "wire/s/0.#epoch.0";
const WRITER: u128 = 0x0011_2233_4455_6677_8899_aabb_ccdd_eeff;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn utf(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

#[test]
fn setup_append_matches_the_capture() {
    let mut b = BytesMut::new();
    encode_setup_append(&mut b, 1, WRITER, SEGMENT, "").unwrap();
    let mut want = hex("00000001 0000002d 0000000000000001");
    want.extend_from_slice(&WRITER.to_be_bytes());
    want.extend(utf(SEGMENT));
    want.extend(hex("0000"));
    assert_eq!(&b[..], &want[..]);
}

#[test]
fn append_block_end_matches_the_capture() {
    let mut events = Vec::new();
    put_event(&mut events, b"ev-0").unwrap();
    assert_eq!(events, hex("00000000 00000004 65762d30"));
    let mut b = BytesMut::new();
    encode_append_block_end(&mut b, WRITER, &events, 1, 1, 2).unwrap();
    let mut want = hex("00000004 00000038");
    want.extend_from_slice(&WRITER.to_be_bytes());
    want.extend(hex("0000000c 0000000c"));
    want.extend(&events);
    want.extend(hex("00000001 0000000000000001 0000000000000002"));
    assert_eq!(&b[..], &want[..]);
}

#[test]
fn read_segment_and_keep_alive_match_the_captures() {
    let mut b = BytesMut::new();
    encode_read_segment(&mut b, SEGMENT, 0, 0x0080_0000, "", 3).unwrap();
    let mut want = hex("00000009 00000029");
    want.extend(utf(SEGMENT));
    want.extend(hex("0000000000000000 00800000 0000 0000000000000003"));
    assert_eq!(&b[..], &want[..]);
    let mut k = BytesMut::new();
    encode_keep_alive(&mut k);
    assert_eq!(&k[..], &hex("00000064 00000000")[..]);
    let mut h = BytesMut::new();
    encode_hello(&mut h);
    assert_eq!(&h[..], &hex("ffffff81 00000008 00000010 00000005")[..]);
}

fn frame(type_id: i32, fields: &[u8]) -> BytesMut {
    let mut b = BytesMut::new();
    b.put_i32(type_id);
    b.put_i32(fields.len() as i32);
    b.put_slice(fields);
    b
}

#[test]
fn captured_replies_decode() {
    // APPEND_SETUP: reqId | segment | writerId | lastEventNumber = none yet.
    let mut f = hex("0000000000000001");
    f.extend(utf(SEGMENT));
    f.extend_from_slice(&WRITER.to_be_bytes());
    f.extend(hex("8000000000000000"));
    let mut b = frame(2, &f);
    assert_eq!(b.len(), 8 + 0x33);
    assert_eq!(
        decode_frame(&mut b, MAX_FRAME).unwrap().unwrap(),
        Reply::AppendSetup {
            request_id: 1,
            segment: SEGMENT.into(),
            writer_id: WRITER,
            last_event_number: NO_EVENT_NUMBER
        }
    );
    // DATA_APPENDED: writerId | eventNumber 1 | previous none | reqId 2 | write offset 12.
    let mut f = WRITER.to_be_bytes().to_vec();
    f.extend(hex(
        "0000000000000001 8000000000000000 0000000000000002 000000000000000c",
    ));
    let mut b = frame(7, &f);
    assert_eq!(b.len(), 8 + 0x30);
    let r = decode_frame(&mut b, MAX_FRAME).unwrap().unwrap();
    assert_eq!(r.request_id(), Some(2));
    // The server-side encoder writes the captured bytes back.
    let mut again = BytesMut::new();
    r.encode(&mut again).unwrap();
    assert_eq!(&again[..], &frame(7, &f)[..]);
    assert_eq!(
        r,
        Reply::DataAppended {
            writer_id: WRITER,
            event_number: 1,
            previous_event_number: NO_EVENT_NUMBER,
            request_id: 2,
            current_segment_write_offset: 12
        }
    );
    // SEGMENT_READ with 23 events of 4 to 5 bytes (289 bytes of data), then the events.
    let mut data = Vec::new();
    for i in 0..23 {
        put_event(&mut data, format!("ev-{i}").as_bytes()).unwrap();
    }
    assert_eq!(data.len(), 0x121);
    let mut f = utf(SEGMENT);
    f.extend(hex("0000000000000000 01 00 00000121"));
    f.extend(&data);
    f.extend(hex("0000000000000003"));
    let mut b = frame(10, &f);
    assert_eq!(b.len(), 8 + 0x14a);
    let Reply::SegmentRead {
        data,
        at_tail,
        end_of_segment,
        request_id,
        ..
    } = decode_frame(&mut b, MAX_FRAME).unwrap().unwrap()
    else {
        panic!("not a SEGMENT_READ")
    };
    assert!(at_tail && !end_of_segment);
    assert_eq!(request_id, 3);
    let mut events = Vec::new();
    EventDecoder::new().feed(data, &mut events).unwrap();
    assert_eq!(events.len(), 23);
    assert_eq!(events[22], Bytes::from_static(b"ev-22"));
}

#[test]
fn older_servers_without_trailing_fields_still_decode() {
    // SEGMENT_IS_SEALED as wire version 5 wrote it: reqId | segment, nothing after.
    let mut f = hex("0000000000000009");
    f.extend(utf(SEGMENT));
    let mut b = frame(51, &f);
    assert_eq!(
        decode_frame(&mut b, MAX_FRAME).unwrap().unwrap(),
        Reply::SegmentIsSealed {
            request_id: 9,
            segment: SEGMENT.into(),
            stack: String::new(),
            offset: -1
        }
    );
    // An unknown command is kept raw; a newer trailing field is ignored.
    let mut b = frame(99, b"xyz");
    assert!(matches!(
        decode_frame(&mut b, MAX_FRAME).unwrap().unwrap(),
        Reply::Other { type_id: 99, .. }
    ));
    let mut f = hex("0000000000000004");
    f.extend(utf(SEGMENT));
    f.extend(utf("trace"));
    f.extend(hex("0000000000000010 ffff"));
    let mut b = frame(53, &f);
    assert_eq!(
        decode_frame(&mut b, MAX_FRAME).unwrap().unwrap(),
        Reply::NoSuchSegment {
            request_id: 4,
            segment: SEGMENT.into(),
            stack: "trace".into(),
            offset: 16
        }
    );
}

#[test]
fn bad_frames_are_errors_and_partial_frames_wait() {
    let mut b = BytesMut::from(&hex("0000000a 7fffffff")[..]);
    assert!(matches!(
        decode_frame(&mut b, MAX_FRAME),
        Err(WireError::TooLarge { .. })
    ));
    let mut b = BytesMut::from(&hex("0000000a ffffffff")[..]);
    assert!(decode_frame(&mut b, MAX_FRAME).is_err());
    let mut b = BytesMut::from(&hex("00000064 00000000")[..4]);
    assert_eq!(decode_frame(&mut b, MAX_FRAME), Ok(None));
}

proptest! {
    /// Every reply this client acts on, encoded as the 0.13 server writes it, decodes back.
    #[test]
    fn replies_round_trip(req in any::<i64>(), seg in "[a-z/#.0-9]{1,30}", writer in any::<u128>(),
                          n in any::<i64>(), m in any::<i64>(), stack in ".{0,20}", flag in any::<bool>()) {
        let mut cases: Vec<(i32, Vec<u8>, Reply)> = Vec::new();
        let mut f = req.to_be_bytes().to_vec();
        f.extend(utf(&seg));
        f.extend(writer.to_be_bytes());
        f.extend(n.to_be_bytes());
        cases.push((2, f, Reply::AppendSetup { request_id: req, segment: seg.clone(), writer_id: writer, last_event_number: n }));
        let mut f = writer.to_be_bytes().to_vec();
        f.extend(n.to_be_bytes());
        f.extend(m.to_be_bytes());
        cases.push((8, f, Reply::ConditionalCheckFailed { writer_id: writer, event_number: n, request_id: m }));
        let mut f = req.to_be_bytes().to_vec();
        f.extend(utf(&seg));
        let mut s = BytesMut::new();
        streamwire_pravega::wire::utf::put_utf(&mut s, &stack).unwrap();
        f.extend(&s[..]);
        f.extend(m.to_be_bytes());
        cases.push((51, f, Reply::SegmentIsSealed { request_id: req, segment: seg.clone(), stack: stack.clone(), offset: m }));
        let mut f = req.to_be_bytes().to_vec();
        f.extend(utf(&seg));
        f.extend([u8::from(flag), 0, 1]);
        f.extend(n.to_be_bytes());
        f.extend(m.to_be_bytes());
        f.extend(7i64.to_be_bytes());
        cases.push((12, f, Reply::StreamSegmentInfo { request_id: req, segment: seg.clone(), exists: flag, sealed: false, deleted: true, last_modified: n, write_offset: m, start_offset: 7 }));
        for (t, fields, want) in cases {
            let mut b = frame(t, &fields);
            prop_assert_eq!(decode_frame(&mut b, MAX_FRAME).unwrap().unwrap(), want);
            prop_assert!(b.is_empty());
        }
    }
}
