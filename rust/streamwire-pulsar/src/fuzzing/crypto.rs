//! Fuzzing the consumer's decryption: metadata and payload as they come off the wire (a
//! forged or damaged `MessageMetadata`, a damaged sealed payload) must give a typed
//! `CryptoError` or the original bytes, never a panic, and a damaged payload must never
//! decrypt (AES-GCM authenticates it).
//!
//! Layout of the input: byte 0 picks the mode; its bit 1 picks the recipient key: RSA
//! (clear) or EC (set: the ECIES unwrap of a damaged or forged wrapped key).
//! * even: bytes 1.. are `[n][n bytes of MessageMetadata protobuf][payload]`, decrypted as
//!   they are;
//! * odd: a valid sealed message (fixture key) whose parts are damaged as bytes 1.. say:
//!   pairs of (position, xor) over payload, IV and wrapped key in turn.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use prost::Message;

use crate::crypto::{Decryptor, Encryptor, KeyReader, StaticKeyReader};
use crate::protocol::pb;

const PUB: &[u8] = include_bytes!("../../testdata/rsa_a_pub.pem");
const PRIV: &[u8] = include_bytes!("../../testdata/rsa_a.pem");
const EC_PUB: &[u8] = include_bytes!("../../testdata/ec_p256_pub.pem");
const EC_PRIV: &[u8] = include_bytes!("../../testdata/ec_p256.pem");

/// The plaintext of the valid sample.
pub const SAMPLE_BODY: &[u8] = b"fuzzing the end-to-end encryption of a pulsar payload";

struct Fixture {
    decryptor: Decryptor,
    md: pb::MessageMetadata,
    sealed: Vec<u8>,
}

fn make_fixture(public: &[u8], private: &[u8]) -> Fixture {
    let reader: Arc<dyn KeyReader> = Arc::new(StaticKeyReader {
        public: Some(public.to_vec()),
        private: Some(private.to_vec()),
        ..Default::default()
    });
    let enc =
        Encryptor::new(vec!["k".into()], reader.clone(), Instant::now()).expect("fixture key");
    let mut md = pb::MessageMetadata::default();
    let sealed = enc.encrypt(&mut md, SAMPLE_BODY).expect("fixture sealing");
    Fixture {
        decryptor: Decryptor::new(reader),
        md,
        sealed,
    }
}

fn fixture(ec: bool) -> &'static Fixture {
    static RSA: OnceLock<Fixture> = OnceLock::new();
    static EC: OnceLock<Fixture> = OnceLock::new();
    if ec {
        EC.get_or_init(|| make_fixture(EC_PUB, EC_PRIV))
    } else {
        RSA.get_or_init(|| make_fixture(PUB, PRIV))
    }
}

/// One fuzz case (see the module comment for the layout).
pub fn fuzz_crypto(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let f = fixture(mode & 2 != 0);
    if mode & 1 == 0 {
        let Some((&n, rest)) = rest.split_first() else {
            return;
        };
        let n = (n as usize).min(rest.len());
        let Ok(md) = pb::MessageMetadata::decode(&rest[..n]) else {
            return;
        };
        // Anything may come back but a panic; a success can only be the fixture's body
        // (the only data key the decryptor can unwrap).
        if let Ok(plain) = f.decryptor.decrypt(&md, &rest[n..], Instant::now()) {
            assert_eq!(
                plain, SAMPLE_BODY,
                "a forged entry decrypted to other bytes"
            );
        }
        return;
    }
    let mut md = f.md.clone();
    let mut sealed = f.sealed.clone();
    let mut iv = md.encryption_param.clone().unwrap_or_default().to_vec();
    let mut wrapped = md.encryption_keys[0].value.to_vec();
    let mut changed = false;
    for (i, pair) in rest.chunks_exact(2).enumerate() {
        let (at, x) = (pair[0] as usize, pair[1]);
        if x == 0 {
            continue;
        }
        let part: &mut Vec<u8> = match i % 3 {
            0 => &mut sealed,
            1 => &mut iv,
            _ => &mut wrapped,
        };
        let at = at % part.len();
        part[at] ^= x;
        changed = true;
    }
    md.encryption_param = Some(iv.into());
    md.encryption_keys[0].value = wrapped.into();
    let out = f.decryptor.decrypt(&md, &sealed, Instant::now());
    if changed {
        assert!(out.is_err(), "a damaged sealed message decrypted");
    } else {
        assert_eq!(out.as_deref().ok(), Some(SAMPLE_BODY));
    }
}
