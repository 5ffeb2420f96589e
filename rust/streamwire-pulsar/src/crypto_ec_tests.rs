//! Unit and property tests of EC keys: reading every PEM form (named and explicit curves,
//! SEC1 / PKCS#8 / SubjectPublicKeyInfo), the ECIES wrap and unwrap, and EC recipients in
//! the encryptor/decryptor. Keys are fixtures made with openssl (testdata/README.md). The
//! interop with the Java client is tested against Apache Pulsar in
//! tests/security/test_e2e_java.py.

use super::ec_keys::Curve;
use super::*;
use proptest::prelude::*;

const P256: &[u8] = include_bytes!("../testdata/ec_p256.pem");
const P256_PUB: &[u8] = include_bytes!("../testdata/ec_p256_pub.pem");
const P256_PUB_EXPLICIT: &[u8] = include_bytes!("../testdata/ec_p256_explicit_pub.pem");
const P384: &[u8] = include_bytes!("../testdata/ec_p384_pkcs8.pem");
const P384_PUB: &[u8] = include_bytes!("../testdata/ec_p384_pub.pem");
const P384_PUB_EXPLICIT: &[u8] = include_bytes!("../testdata/ec_p384_explicit_pub.pem");
const P384_PUB_COMPRESSED: &[u8] =
    include_bytes!("../testdata/ec_p384_explicit_compressed_pub.pem");
const P521: &[u8] = include_bytes!("../testdata/ec_p521_explicit.pem");
const P521_PUB: &[u8] = include_bytes!("../testdata/ec_p521_explicit_pub.pem");
const K256: &[u8] = include_bytes!("../testdata/ec_k256.pem");
const K256_PUB: &[u8] = include_bytes!("../testdata/ec_k256_pub.pem");
const RSA_PUB: &[u8] = include_bytes!("../testdata/rsa_a_pub.pem");

fn ec_pub(pem: &[u8]) -> EcPublic {
    match parse_public_key("k", pem).unwrap() {
        PublicKey::Ec(k) => k,
        PublicKey::Rsa(_) => panic!("read as RSA"),
    }
}

fn ec_priv(pem: &[u8]) -> EcPrivate {
    match parse_private_key("k", pem).unwrap() {
        PrivateKey::Ec(k) => k,
        PrivateKey::Rsa(_) => panic!("read as RSA"),
    }
}

#[test]
fn every_pem_form_reads_and_the_halves_match() {
    for (private, public, curve) in [
        (P256, P256_PUB, Curve::P256),
        (P384, P384_PUB, Curve::P384),
        (P521, P521_PUB, Curve::P521),
    ] {
        let k = ec_priv(private);
        assert_eq!(k.curve(), curve);
        assert_eq!(k.public(), ec_pub(public), "{curve:?}");
    }
}

#[test]
fn explicit_parameters_from_openssl_name_the_curve() {
    // openssl writes each curve's full SEC 2 domain: this checks our constants (p, a, b, G,
    // n) against it, for the uncompressed and the compressed generator.
    assert_eq!(ec_pub(P256_PUB_EXPLICIT), ec_pub(P256_PUB));
    assert_eq!(ec_pub(P384_PUB_EXPLICIT), ec_pub(P384_PUB));
    assert_eq!(ec_pub(P384_PUB_COMPRESSED), ec_pub(P384_PUB));
    assert_eq!(ec_pub(P521_PUB).curve(), Curve::P521);
}

#[test]
fn generators_of_the_constants_are_the_curve_crates() {
    use elliptic_curve::sec1::ToEncodedPoint;
    // The generator with scalar 1 is G: its encoding must be what the explicit-parameter
    // matcher compares with (the openssl fixtures above check the rest).
    let one = |n: usize| {
        let mut b = vec![0u8; n];
        b[n - 1] = 1;
        b
    };
    let g256 = p256::SecretKey::from_slice(&one(32)).unwrap().public_key();
    let g384 = p384::SecretKey::from_slice(&one(48)).unwrap().public_key();
    let g521 = p521::SecretKey::from_slice(&one(66)).unwrap().public_key();
    for (curve, g) in [
        (
            Curve::P256,
            g256.to_encoded_point(false).as_bytes().to_vec(),
        ),
        (
            Curve::P384,
            g384.to_encoded_point(false).as_bytes().to_vec(),
        ),
        (
            Curve::P521,
            g521.to_encoded_point(false).as_bytes().to_vec(),
        ),
    ] {
        assert_eq!(
            ec_keys::public_from_point(curve, &g).unwrap().curve(),
            curve
        );
    }
}

#[test]
fn unsupported_curves_and_bad_keys_are_typed_and_never_print_the_key() {
    for (pem, public) in [(K256_PUB, true), (K256, false)] {
        let e = if public {
            parse_public_key("k1", pem).unwrap_err()
        } else {
            parse_private_key("k1", pem).unwrap_err()
        };
        let text = e.to_string();
        assert!(matches!(e, CryptoError::BadKey { .. }), "{text}");
        assert!(text.contains("\"k1\""), "{text}");
        assert!(text.contains("1.3.132.0.10"), "names the curve: {text}");
        assert!(!text.contains("MH"), "{text}");
    }
    // A damaged point is refused.
    let text = std::str::from_utf8(P256_PUB).unwrap();
    let broken = text.replacen("A", "B", 6);
    assert!(parse_public_key("k", broken.as_bytes()).is_err());
    // RSA keys still read as RSA.
    assert!(matches!(
        parse_public_key("k", RSA_PUB),
        Ok(PublicKey::Rsa(_))
    ));
}

fn ec_reader(public: &[u8], private: &[u8]) -> Arc<dyn KeyReader> {
    Arc::new(StaticKeyReader {
        public: Some(public.to_vec()),
        private: Some(private.to_vec()),
        ..Default::default()
    })
}

#[test]
fn ec_recipients_round_trip_on_every_curve() {
    for (private, public, v_len) in [
        (P256, P256_PUB, 65),
        (P384, P384_PUB, 97),
        (P521, P521_PUB, 133),
    ] {
        let r = ec_reader(public, private);
        let enc = Encryptor::new(vec!["ec".into()], r.clone(), Instant::now()).unwrap();
        let mut md = pb::MessageMetadata::default();
        let out = enc.encrypt(&mut md, b"payload").unwrap();
        // V || C (the 32-byte data key) || T.
        assert_eq!(
            md.encryption_keys[0].value.len(),
            v_len + DATA_KEY_LEN + ecies::TAG_LEN
        );
        assert_eq!(
            md.encryption_keys[0].value[0], 4,
            "uncompressed ephemeral key"
        );
        let d = Decryptor::new(r);
        assert_eq!(d.decrypt(&md, &out, Instant::now()).unwrap(), b"payload");
    }
}

#[test]
fn rsa_and_ec_recipients_mix() {
    let mut by_name = HashMap::new();
    by_name.insert("rsa".to_owned(), (Some(RSA_PUB.to_vec()), None));
    by_name.insert(
        "ec".to_owned(),
        (Some(P521_PUB.to_vec()), Some(P521.to_vec())),
    );
    let r: Arc<dyn KeyReader> = Arc::new(StaticKeyReader {
        by_name,
        ..Default::default()
    });
    let enc = Encryptor::new(vec!["rsa".into(), "ec".into()], r.clone(), Instant::now()).unwrap();
    let mut md = pb::MessageMetadata::default();
    let out = enc.encrypt(&mut md, b"x").unwrap();
    // The consumer holds only the EC private key: the RSA entry is skipped, the EC opens.
    assert_eq!(
        Decryptor::new(r)
            .decrypt(&md, &out, Instant::now())
            .unwrap(),
        b"x"
    );
}

#[test]
fn wrong_ec_key_and_damaged_wrapping_are_no_data_key() {
    let enc = Encryptor::new(vec!["ec".into()], ec_reader(P256_PUB, P256), Instant::now()).unwrap();
    let mut md = pb::MessageMetadata::default();
    let out = enc.encrypt(&mut md, b"x").unwrap();
    // Another P-256 key cannot be had from the fixtures: a different curve's key is wrong.
    for private in [P384, P521] {
        let d = Decryptor::new(ec_reader(P256_PUB, private));
        let e = d.decrypt(&md, &out, Instant::now()).unwrap_err();
        assert!(matches!(e, CryptoError::NoDataKey { .. }), "{e}");
    }
    let wrapped = md.encryption_keys[0].value.clone();
    for cut in [0, 1, 64, 65, 65 + 32, wrapped.len() - 1] {
        let mut m = md.clone();
        m.encryption_keys[0].value = wrapped.slice(..cut);
        let d = Decryptor::new(ec_reader(P256_PUB, P256));
        let e = d.decrypt(&m, &out, Instant::now()).unwrap_err();
        assert!(matches!(e, CryptoError::NoDataKey { .. }), "cut {cut}: {e}");
    }
}

#[test]
fn ecies_unwrap_errors_are_typed() {
    let k = ec_priv(P256);
    let w = ecies::wrap(&k.public(), b"0123456789abcdef0123456789abcdef");
    assert_eq!(
        ecies::unwrap(&k, &w).unwrap(),
        b"0123456789abcdef0123456789abcdef"
    );
    assert!(matches!(
        ecies::unwrap(&k, &[]),
        Err(ecies::EciesError::Malformed(_))
    ));
    assert!(matches!(
        ecies::unwrap(&k, &[9; 90]),
        Err(ecies::EciesError::Malformed(_))
    ));
    assert!(matches!(
        ecies::unwrap(&k, &w[..70]),
        Err(ecies::EciesError::Malformed(_))
    ));
    let mut bad_point = w.clone();
    bad_point[5] ^= 1;
    assert_eq!(
        ecies::unwrap(&k, &bad_point),
        Err(ecies::EciesError::BadEphemeralKey)
    );
    let mut bad_tag = w.clone();
    *bad_tag.last_mut().unwrap() ^= 1;
    assert_eq!(ecies::unwrap(&k, &bad_tag), Err(ecies::EciesError::BadTag));
    // An empty message wraps to V || T and unwraps to nothing.
    assert_eq!(
        ecies::unwrap(&k, &ecies::wrap(&k.public(), b"")).unwrap(),
        b""
    );
}

fn p256_key() -> &'static EcPrivate {
    static K: std::sync::OnceLock<EcPrivate> = std::sync::OnceLock::new();
    K.get_or_init(|| ec_priv(P256))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn prop_ecies_round_trip(m in proptest::collection::vec(any::<u8>(), 0..200)) {
        let k = p256_key();
        let w = ecies::wrap(&k.public(), &m);
        prop_assert_eq!(w.len(), 65 + m.len() + ecies::TAG_LEN);
        prop_assert_eq!(ecies::unwrap(k, &w).unwrap(), m);
    }

    #[test]
    fn prop_ecies_any_flipped_bit_is_refused(
        m in proptest::collection::vec(any::<u8>(), 1..64),
        at in any::<prop::sample::Index>(),
        bit in 0u8..8,
    ) {
        let k = p256_key();
        let mut w = ecies::wrap(&k.public(), &m);
        let i = at.index(w.len());
        w[i] ^= 1 << bit;
        prop_assert!(ecies::unwrap(k, &w).is_err());
    }

    #[test]
    fn prop_ecies_unwrap_of_anything_never_panics(
        input in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let _ = ecies::unwrap(p256_key(), &input);
    }

    #[test]
    fn prop_key_reading_never_panics(
        body in proptest::collection::vec(any::<u8>(), 0..400),
        label in prop::sample::select(vec![
            "PUBLIC KEY", "PRIVATE KEY", "EC PRIVATE KEY", "EC PARAMETERS", "RSA PUBLIC KEY",
        ]),
    ) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&body);
        let pem = format!("-----BEGIN {label}-----\n{b64}\n-----END {label}-----\n");
        let _ = parse_public_key("k", pem.as_bytes());
        let _ = parse_private_key("k", pem.as_bytes());
    }
}
