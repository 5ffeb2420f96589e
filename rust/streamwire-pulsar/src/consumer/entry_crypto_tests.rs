//! `unpack` of encrypted entries: decryption before decompression and batch parsing, and
//! the three failure actions (keys: the crate's openssl-made fixtures in testdata/).

use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};

use super::*;
use crate::crypto::{Decryptor, Encryptor, KeyReader, StaticKeyReader};
use crate::engine::batch_format::{encode_message, single_metadata_for};
use crate::engine::compression::compress;
use crate::engine::message::OutgoingMessage;
use crate::protocol::ChecksumStatus;

const PUB: &[u8] = include_bytes!("../../testdata/rsa_a_pub.pem");
const PRIV: &[u8] = include_bytes!("../../testdata/rsa_a.pem");
const PRIV_OTHER: &[u8] = include_bytes!("../../testdata/rsa_b.pem");

fn reader(public: Option<&[u8]>, private: Option<&[u8]>) -> Arc<dyn KeyReader> {
    Arc::new(StaticKeyReader {
        public: public.map(<[u8]>::to_vec),
        private: private.map(<[u8]>::to_vec),
        ..Default::default()
    })
}

fn ctx(private: Option<&[u8]>, action: FailureAction) -> EntryContext {
    EntryContext {
        topic: Arc::from("persistent://public/default/t"),
        partition: -1,
        slot: 0,
        crypto: ConsumerCrypto {
            decryptor: private.map(|p| Arc::new(Decryptor::new(reader(None, Some(p))))),
            action,
        },
    }
}

fn cmd() -> pb::CommandMessage {
    pb::CommandMessage {
        message_id: pb::MessageIdData {
            ledger_id: 3,
            entry_id: 4,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A batch of `n` messages, zlib-compressed, then sealed: as our producer writes it.
fn sealed_batch(n: u32) -> PayloadSection {
    let mut raw = BytesMut::new();
    for i in 0..n {
        let m = OutgoingMessage::new(Bytes::from(format!("m{i}")), u64::from(i));
        encode_message(&single_metadata_for(&m), &m.payload, &mut raw);
    }
    let mut compressed = Vec::new();
    compress(Codec::Zlib, &raw, &mut compressed).unwrap();
    let mut md = pb::MessageMetadata {
        producer_name: "p".into(),
        num_messages_in_batch: Some(n as i32),
        uncompressed_size: Some(raw.len() as u32),
        compression: Some(pb::CompressionType::Zlib as i32),
        ..Default::default()
    };
    let enc = Encryptor::new(vec!["k".into()], reader(Some(PUB), None), Instant::now()).unwrap();
    let sealed = enc.encrypt(&mut md, &compressed).unwrap();
    PayloadSection {
        broker_entry_metadata: None,
        metadata: Ok(md),
        payload: Bytes::from(sealed),
        checksum: ChecksumStatus::Absent,
    }
}

#[test]
fn encrypted_compressed_batch_is_opened() {
    let u = unpack(
        &ctx(Some(PRIV), FailureAction::Fail),
        &cmd(),
        &sealed_batch(3),
        None,
        |_| false,
    )
    .unwrap();
    let bodies: Vec<_> = u.messages.iter().map(|m| m.payload.clone()).collect();
    assert_eq!(bodies, ["m0", "m1", "m2"]);
    assert!(u.messages.iter().all(|m| m.encryption().is_none()));
}

#[test]
fn fail_holds_the_entry_unacknowledged_with_a_reason() {
    for c in [
        ctx(None, FailureAction::Fail),
        ctx(Some(PRIV_OTHER), FailureAction::Fail),
    ] {
        let r = unpack(&c, &cmd(), &sealed_batch(2), None, |_| false).unwrap_err();
        assert!(r.hold);
        assert_eq!(r.permits, 2);
        assert!(r.reason.contains("3:4"), "{}", r.reason);
        assert!(r.reason.contains("could not be decrypted"), "{}", r.reason);
    }
}

#[test]
fn discard_acks_with_decryption_error() {
    let r = unpack(
        &ctx(None, FailureAction::Discard),
        &cmd(),
        &sealed_batch(2),
        None,
        |_| false,
    )
    .unwrap_err();
    assert!(!r.hold);
    assert_eq!(r.validation, ValidationError::DecryptionError);
}

#[test]
fn consume_hands_over_the_sealed_batch_as_one_message() {
    let s = sealed_batch(5);
    let u = unpack(
        &ctx(Some(PRIV_OTHER), FailureAction::Consume),
        &cmd(),
        &s,
        None,
        |_| false,
    )
    .unwrap();
    assert_eq!(u.messages.len(), 1);
    assert_eq!(u.permits, 5);
    assert_eq!(u.surplus, 4);
    let m = &u.messages[0];
    assert_eq!(m.payload, s.payload);
    assert_eq!(m.id.batch_index, -1);
    let c = m.encryption().unwrap();
    assert_eq!(c.batch_size, Some(5));
    assert_eq!(c.compression, pb::CompressionType::Zlib as i32);
    assert_eq!(c.keys[0].0, "k");
    assert_eq!(c.param.len(), crate::crypto::IV_LEN);
}

#[test]
fn tampered_entry_takes_the_failure_action() {
    let mut s = sealed_batch(1);
    let mut p = s.payload.to_vec();
    p[0] ^= 0x40;
    s.payload = Bytes::from(p);
    let r = unpack(
        &ctx(Some(PRIV), FailureAction::Fail),
        &cmd(),
        &s,
        None,
        |_| false,
    )
    .unwrap_err();
    assert!(r.hold);
    assert!(r.reason.contains("authentication"), "{}", r.reason);
}
