//! Unit and property tests of `crypto`: round trips over every key form, several recipients,
//! the failure cases, and rotation. Keys are fixtures made with `openssl genrsa` (testdata/).

use super::*;
use proptest::prelude::*;

const PUB_A: &[u8] = include_bytes!("../testdata/rsa_a_pub.pem");
const PRIV_A: &[u8] = include_bytes!("../testdata/rsa_a.pem");
const PRIV_A_PKCS1: &[u8] = include_bytes!("../testdata/rsa_a_pkcs1.pem");
const PUB_B: &[u8] = include_bytes!("../testdata/rsa_b_pub.pem");
const PRIV_B: &[u8] = include_bytes!("../testdata/rsa_b.pem");
const EC: &[u8] = include_bytes!("../testdata/ec.pem");

fn reader(public: Option<&[u8]>, private: Option<&[u8]>) -> Arc<dyn KeyReader> {
    Arc::new(StaticKeyReader {
        public: public.map(<[u8]>::to_vec),
        private: private.map(<[u8]>::to_vec),
        ..Default::default()
    })
}

fn two_names() -> Arc<dyn KeyReader> {
    let mut by_name = HashMap::new();
    by_name.insert("a".to_owned(), (Some(PUB_A.to_vec()), None));
    by_name.insert("b".to_owned(), (Some(PUB_B.to_vec()), None));
    Arc::new(StaticKeyReader {
        by_name,
        metadata: vec![("version".into(), "7".into())],
        ..Default::default()
    })
}

fn seal(names: &[&str], r: Arc<dyn KeyReader>, body: &[u8]) -> (pb::MessageMetadata, Vec<u8>) {
    let enc = Encryptor::new(
        names.iter().map(|s| s.to_string()).collect(),
        r,
        Instant::now(),
    )
    .unwrap();
    let mut md = pb::MessageMetadata::default();
    let out = enc.encrypt(&mut md, body).unwrap();
    (md, out)
}

#[test]
fn sealed_layout_is_the_official_one() {
    let (md, out) = seal(&["a"], reader(Some(PUB_A), None), b"hello");
    assert_eq!(out.len(), 5 + TAG_LEN);
    assert_eq!(md.encryption_param.as_ref().unwrap().len(), IV_LEN);
    assert_eq!(md.encryption_keys.len(), 1);
    assert_eq!(md.encryption_keys[0].key, "a");
    // RSA-2048 OAEP output is the modulus size.
    assert_eq!(md.encryption_keys[0].value.len(), 256);
    assert_eq!(md.encryption_algo, None);
}

#[test]
fn round_trip_pkcs8_and_pkcs1_private_keys() {
    let (md, out) = seal(&["a"], reader(Some(PUB_A), None), b"payload");
    for pk in [PRIV_A, PRIV_A_PKCS1] {
        let d = Decryptor::new(reader(None, Some(pk)));
        assert_eq!(d.decrypt(&md, &out, Instant::now()).unwrap(), b"payload");
        // The second message uses the cached data key.
        assert_eq!(d.decrypt(&md, &out, Instant::now()).unwrap(), b"payload");
    }
}

#[test]
fn any_recipient_opens_and_metadata_travels() {
    let (md, out) = seal(&["a", "b"], two_names(), b"x");
    assert_eq!(md.encryption_keys[1].metadata[0].value, "7");
    for pk in [PRIV_A, PRIV_B] {
        let d = Decryptor::new(reader(None, Some(pk)));
        assert_eq!(d.decrypt(&md, &out, Instant::now()).unwrap(), b"x");
    }
}

#[test]
fn wrong_or_missing_private_key_is_no_data_key() {
    let (md, out) = seal(&["a"], reader(Some(PUB_A), None), b"x");
    let d = Decryptor::new(reader(None, Some(PRIV_B)));
    let e = d.decrypt(&md, &out, Instant::now()).unwrap_err();
    assert!(matches!(e, CryptoError::NoDataKey { .. }), "{e}");
    let d = Decryptor::new(reader(None, None));
    let e = d.decrypt(&md, &out, Instant::now()).unwrap_err();
    assert!(e.to_string().contains("no private key"), "{e}");
}

#[test]
fn tampered_payload_and_bad_metadata_are_typed() {
    let (mut md, mut out) = seal(&["a"], reader(Some(PUB_A), None), b"secret body");
    let d = Decryptor::new(reader(None, Some(PRIV_A)));
    out[0] ^= 1;
    assert_eq!(
        d.decrypt(&md, &out, Instant::now()),
        Err(CryptoError::Tampered)
    );
    out[0] ^= 1;
    assert_eq!(
        d.decrypt(&md, &out[..4], Instant::now()),
        Err(CryptoError::Tampered)
    );
    md.encryption_param = Some(Bytes::from_static(&[0; 5]));
    assert_eq!(
        d.decrypt(&md, &out, Instant::now()),
        Err(CryptoError::BadParam(5))
    );
    md.encryption_algo = Some("ROT13".into());
    assert_eq!(
        d.decrypt(&md, &out, Instant::now()),
        Err(CryptoError::UnknownAlgorithm("ROT13".into()))
    );
    let plain = pb::MessageMetadata::default();
    assert_eq!(
        d.decrypt(&plain, &out, Instant::now()),
        Err(CryptoError::NotEncrypted)
    );
}

#[test]
fn bad_keys_are_refused_with_a_reason_and_no_key_bytes() {
    let e = Encryptor::new(vec!["a".into()], reader(None, None), Instant::now()).unwrap_err();
    assert!(matches!(e, CryptoError::MissingKey { kind: "public", .. }));
    // A private key file given as the public key is refused, naming the block, not the key.
    let e = Encryptor::new(vec!["a".into()], reader(Some(EC), None), Instant::now()).unwrap_err();
    assert!(e.to_string().contains("is not a public key"), "{e}");
    assert!(!e.to_string().contains("MHc"), "{e}");
    let e = Encryptor::new(
        vec!["a".into()],
        reader(Some(b"garbage"), None),
        Instant::now(),
    )
    .unwrap_err();
    assert!(matches!(e, CryptoError::BadKey { .. }), "{e}");
    // A private key given where the public one belongs is refused, not printed.
    let e =
        Encryptor::new(vec!["a".into()], reader(Some(PRIV_A), None), Instant::now()).unwrap_err();
    assert!(!e.to_string().contains("MII"), "{e}");
}

#[test]
fn data_key_rotates_after_four_hours() {
    let t0 = Instant::now();
    let mut enc = Encryptor::new(vec!["a".into()], reader(Some(PUB_A), None), t0).unwrap();
    let wrapped = |e: &Encryptor| {
        let mut md = pb::MessageMetadata::default();
        e.encrypt(&mut md, b"").unwrap();
        md.encryption_keys[0].value.clone()
    };
    let before = wrapped(&enc);
    assert!(!enc.rotate_if_due(t0 + Duration::from_secs(3600)).unwrap());
    assert_eq!(wrapped(&enc), before);
    assert!(enc.rotate_if_due(t0 + DATA_KEY_ROTATION).unwrap());
    assert_ne!(wrapped(&enc), before);
}

#[test]
fn key_info_debug_hides_the_key() {
    let k = KeyInfo {
        pem: PRIV_A.to_vec(),
        metadata: vec![],
    };
    assert!(!format!("{k:?}").contains("PRIVATE"));
}

/// One producer and one consumer for every proptest case: after the first case the consumer's
/// cache holds the data key, so the cases exercise the AES-GCM path (the RSA unwrap costs
/// ~50 ms in a debug build; the unit tests above cover it).
fn shared_pair() -> &'static (Encryptor, Decryptor) {
    static PAIR: std::sync::OnceLock<(Encryptor, Decryptor)> = std::sync::OnceLock::new();
    PAIR.get_or_init(|| {
        let enc =
            Encryptor::new(vec!["a".into()], reader(Some(PUB_A), None), Instant::now()).unwrap();
        (enc, Decryptor::new(reader(None, Some(PRIV_A))))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn prop_round_trip(body in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let (enc, dec) = shared_pair();
        let mut md = pb::MessageMetadata::default();
        let out = enc.encrypt(&mut md, &body).unwrap();
        prop_assert_eq!(out.len(), body.len() + TAG_LEN);
        prop_assert_eq!(dec.decrypt(&md, &out, Instant::now()).unwrap(), body);
    }

    #[test]
    fn prop_any_flipped_bit_is_detected(
        body in proptest::collection::vec(any::<u8>(), 1..512),
        at in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let (enc, dec) = shared_pair();
        let mut md = pb::MessageMetadata::default();
        let mut out = enc.encrypt(&mut md, &body).unwrap();
        let i = at.index(out.len());
        out[i] ^= 1 << bit;
        prop_assert_eq!(dec.decrypt(&md, &out, Instant::now()), Err(CryptoError::Tampered));
    }

    #[test]
    fn prop_flipped_iv_bit_is_detected(
        body in proptest::collection::vec(any::<u8>(), 0..64),
        at in 0usize..IV_LEN,
        bit in 0u8..8,
    ) {
        let (enc, dec) = shared_pair();
        let mut md = pb::MessageMetadata::default();
        let out = enc.encrypt(&mut md, &body).unwrap();
        let mut iv = md.encryption_param.clone().unwrap().to_vec();
        iv[at] ^= 1 << bit;
        md.encryption_param = Some(iv.into());
        prop_assert_eq!(dec.decrypt(&md, &out, Instant::now()), Err(CryptoError::Tampered));
    }
}
