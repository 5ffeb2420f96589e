//! ECIES as the Java client's `Cipher.getInstance("ECIES", "BC")` does it (pure, no I/O):
//! BouncyCastle's `IESCipher.ECIES` with no parameters given, i.e. an `IESEngine` of
//! ECDH (`ECDHBasicAgreement`), KDF2 over SHA-1 and HMAC-SHA1, no block cipher (the KDF
//! output is XORed onto the message), a 128-bit MAC key, no derivation or encoding vector,
//! and an uncompressed ephemeral public key. Learnt from bc-java's `IESCipher`, `IESUtil
//! .guessParameterSpec` and `IESEngine` (1.78, the version Pulsar's Java client ships).
//!
//! Wrapping `m` for a recipient public key `Q`:
//!
//! ```text
//! k, V = k·G            ephemeral key pair; V in SEC1 uncompressed form (04 || X || Y)
//! Z    = x(k·Q)         left-padded to the field size
//! K    = KDF2-SHA1(V || Z, len = 16 + |m|)     (counter from 1, no extra input)
//! K2   = K[..16] (MAC key), K1 = K[16..]       (this order when V is present)
//! C    = m XOR K1
//! T    = HMAC-SHA1(K2, C || 00 00 00 00 00 00 00 00)   (the 64-bit length of the empty
//!                                                       encoding vector)
//! out  = V || C || T
//! ```
//!
//! Unwrapping reads V (uncompressed or compressed, as BouncyCastle's `ECIESPublicKeyParser`),
//! recomputes K from the private key, checks T in constant time, then XORs.

use elliptic_curve::sec1::{FromEncodedPoint, ModulusSize, ToEncodedPoint};
use elliptic_curve::{AffinePoint, CurveArithmetic, FieldBytesSize, PublicKey, SecretKey};
use hmac::{Hmac, Mac};
use sha1::{Digest, Sha1};

use super::ec_keys::{EcPrivate, EcPublic};

/// BouncyCastle's default MAC key: 128 bits.
const MAC_KEY_LEN: usize = 16;
/// HMAC-SHA1 output.
pub const TAG_LEN: usize = 20;
/// The all-zero length tag of the (absent) encoding vector.
const LENGTH_TAG: [u8; 8] = [0; 8];

/// Why an ECIES unwrap failed (no key or plaintext bytes in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EciesError {
    /// The input is shorter than an ephemeral key and a tag, or its key encoding is unknown.
    Malformed(&'static str),
    /// The ephemeral public key is not a point of the recipient's curve.
    BadEphemeralKey,
    /// The tag does not match: a wrong private key, or damaged input.
    BadTag,
}

impl std::fmt::Display for EciesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EciesError::Malformed(why) => write!(f, "malformed ECIES input: {why}"),
            EciesError::BadEphemeralKey => {
                f.write_str("the ECIES ephemeral key is not a point of the key's curve")
            }
            EciesError::BadTag => {
                f.write_str("the ECIES tag does not match (wrong key or damaged)")
            }
        }
    }
}

/// ISO 18033-2 KDF2 over SHA-1 (BouncyCastle's `KDF2BytesGenerator`): the concatenation of
/// SHA1(seed || counter) for counter = 1, 2, ... (32-bit big-endian), cut to `len`.
fn kdf2_sha1(seed: &[&[u8]], len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 20);
    let mut counter: u32 = 1;
    while out.len() < len {
        let mut h = Sha1::new();
        for part in seed {
            h.update(part);
        }
        h.update(counter.to_be_bytes());
        out.extend_from_slice(&h.finalize());
        counter = counter.wrapping_add(1);
    }
    out.truncate(len);
    out
}

fn mac_of(k2: &[u8], c: &[u8]) -> Hmac<Sha1> {
    // HMAC accepts keys of any length: this cannot fail.
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(k2).expect("HMAC takes any key length");
    mac.update(c);
    mac.update(&LENGTH_TAG);
    mac
}

fn wrap_on<C>(recipient: &PublicKey<C>, m: &[u8]) -> Vec<u8>
where
    C: CurveArithmetic,
    AffinePoint<C>: FromEncodedPoint<C> + ToEncodedPoint<C>,
    FieldBytesSize<C>: ModulusSize,
{
    let eph = elliptic_curve::ecdh::EphemeralSecret::<C>::random(&mut rsa::rand_core::OsRng);
    let v = eph.public_key().to_encoded_point(false);
    let z = eph.diffie_hellman(recipient);
    let k = kdf2_sha1(&[v.as_bytes(), z.raw_secret_bytes()], MAC_KEY_LEN + m.len());
    let (k2, k1) = k.split_at(MAC_KEY_LEN);
    let c: Vec<u8> = m.iter().zip(k1).map(|(a, b)| a ^ b).collect();
    let t = mac_of(k2, &c).finalize().into_bytes();
    let mut out = Vec::with_capacity(v.len() + c.len() + TAG_LEN);
    out.extend_from_slice(v.as_bytes());
    out.extend_from_slice(&c);
    out.extend_from_slice(&t);
    out
}

fn unwrap_on<C>(secret: &SecretKey<C>, input: &[u8]) -> Result<Vec<u8>, EciesError>
where
    C: CurveArithmetic,
    AffinePoint<C>: FromEncodedPoint<C> + ToEncodedPoint<C>,
    FieldBytesSize<C>: ModulusSize,
{
    let field = <FieldBytesSize<C> as elliptic_curve::generic_array::typenum::Unsigned>::USIZE;
    let v_len = match input.first() {
        Some(4) => 1 + 2 * field,
        Some(2 | 3) => 1 + field,
        Some(_) => return Err(EciesError::Malformed("unknown ephemeral key encoding")),
        None => return Err(EciesError::Malformed("empty")),
    };
    if input.len() < v_len + TAG_LEN {
        return Err(EciesError::Malformed(
            "shorter than an ephemeral key and a tag",
        ));
    }
    let (v, rest) = input.split_at(v_len);
    let (c, t) = rest.split_at(rest.len() - TAG_LEN);
    let eph = PublicKey::<C>::from_sec1_bytes(v).map_err(|_| EciesError::BadEphemeralKey)?;
    let z = elliptic_curve::ecdh::diffie_hellman(secret.to_nonzero_scalar(), eph.as_affine());
    let k = kdf2_sha1(&[v, z.raw_secret_bytes()], MAC_KEY_LEN + c.len());
    let (k2, k1) = k.split_at(MAC_KEY_LEN);
    // verify_slice compares in constant time.
    mac_of(k2, c)
        .verify_slice(t)
        .map_err(|_| EciesError::BadTag)?;
    Ok(c.iter().zip(k1).map(|(a, b)| a ^ b).collect())
}

/// Wrap `m` (a data key) for `recipient`.
pub fn wrap(recipient: &EcPublic, m: &[u8]) -> Vec<u8> {
    match recipient {
        EcPublic::P256(k) => wrap_on(k, m),
        EcPublic::P384(k) => wrap_on(k, m),
        EcPublic::P521(k) => wrap_on(k, m),
    }
}

/// Unwrap what [`wrap`] (or the Java client) produced for the public half of `key`.
pub fn unwrap(key: &EcPrivate, input: &[u8]) -> Result<Vec<u8>, EciesError> {
    match key {
        EcPrivate::P256(k) => unwrap_on(k, input),
        EcPrivate::P384(k) => unwrap_on(k, input),
        EcPrivate::P521(k) => unwrap_on(k, input),
    }
}
