//! Framing: `msgId:u8 payloadLen:u32 payload`, with `payloadLen` excluding the 5-byte header.
//!
//! Encoders reserve the header, write the payload in place and back-patch the length, so a
//! request is built in one buffer with no second copy.

use bytes::{BufMut, Bytes, BytesMut};

use super::wire::Cursor;
use super::{CodecError, MsgType};

/// One frame off the wire; `payload` is a slice of the read buffer (no copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    pub msg_type: u8,
    pub payload: Bytes,
}

/// Split one frame off the front of `buf`. `Ok(None)`: more bytes needed (and `buf` has
/// reserved room for the rest of this frame); `Err`: a length above `max_payload`.
pub fn decode_frame(
    buf: &mut BytesMut,
    max_payload: usize,
) -> Result<Option<RawFrame>, CodecError> {
    if buf.len() < 5 {
        return Ok(None);
    }
    let len = u32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if len > max_payload {
        return Err(CodecError::TooLarge {
            what: "frame",
            len: len as u64,
            limit: max_payload as u64,
        });
    }
    if buf.len() < 5 + len {
        buf.reserve(5 + len - buf.len());
        return Ok(None);
    }
    let frame = buf.split_to(5 + len).freeze();
    Ok(Some(RawFrame {
        msg_type: frame[0],
        payload: frame.slice(5..),
    }))
}

/// Start a frame of `msg_type`; returns where the header starts, for [`end_frame`].
pub fn begin_frame(out: &mut BytesMut, msg_type: MsgType) -> usize {
    let at = out.len();
    out.put_u8(msg_type as u8);
    out.put_u32_le(0);
    at
}

/// Back-patch the payload length of the frame begun at `at`.
pub fn end_frame(out: &mut BytesMut, at: usize) -> Result<(), CodecError> {
    let len = out.len() - at - 5;
    let len = u32::try_from(len).map_err(|_| CodecError::TooLarge {
        what: "request",
        len: len as u64,
        limit: u64::from(u32::MAX),
    })?;
    out[at + 1..at + 5].copy_from_slice(&len.to_le_bytes());
    Ok(())
}

pub fn encode_ping(out: &mut BytesMut) {
    out.put_u8(MsgType::Ping as u8);
    out.put_u32_le(0);
}

/// The request id a response carries: first in every response but Consume's, which starts
/// with `headerLen:u32`. `None` for Ping and for payloads too short to carry one.
pub fn response_request_id(msg_type: u8, payload: &[u8]) -> Option<u32> {
    let mut c = Cursor::new(payload);
    match MsgType::try_from(msg_type).ok()? {
        MsgType::Ping => None,
        MsgType::Consume => {
            c.u32().ok()?;
            c.u32().ok()
        }
        _ => c.u32().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_at_any_point() {
        let wire = [3u8, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0xaa, 0xbb, 7];
        for cut in 0..wire.len() {
            let mut buf = BytesMut::from(&wire[..cut]);
            let mut got = Vec::new();
            while let Some(f) = decode_frame(&mut buf, 16).unwrap() {
                got.push(f);
            }
            buf.extend_from_slice(&wire[cut..]);
            while let Some(f) = decode_frame(&mut buf, 16).unwrap() {
                got.push(f);
            }
            assert_eq!(got.len(), 2, "cut at {cut}");
            assert_eq!(got[1].payload, Bytes::from_static(&[0xaa, 0xbb]));
            assert_eq!(&buf[..], &[7]);
        }
    }

    #[test]
    fn oversized_frames_are_refused_before_buffering() {
        let mut buf = BytesMut::from(&[1u8, 0, 0, 0, 1][..]);
        assert!(matches!(
            decode_frame(&mut buf, 1024),
            Err(CodecError::TooLarge { .. })
        ));
    }

    #[test]
    fn request_ids_of_responses() {
        assert_eq!(response_request_id(1, &[2, 0, 0, 0, 0]), Some(2));
        assert_eq!(response_request_id(2, &[4, 0, 0, 0, 9, 0, 0, 0]), Some(9));
        assert_eq!(response_request_id(3, &[]), None);
        assert_eq!(response_request_id(2, &[4, 0, 0]), None);
        assert_eq!(response_request_id(0x42, &[1, 0, 0, 0]), None);
    }
}
