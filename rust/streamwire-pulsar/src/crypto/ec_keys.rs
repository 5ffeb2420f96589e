//! EC keys in the PEM forms the Java client reads (pure, no I/O): SubjectPublicKeyInfo
//! (`BEGIN PUBLIC KEY`), SEC1 (`BEGIN EC PRIVATE KEY`, optionally after a `BEGIN EC
//! PARAMETERS` block) and PKCS#8 (`BEGIN PRIVATE KEY`), with the curve given by name (an
//! OID) or spelled out as explicit parameters — Pulsar's documentation generates keys with
//! `openssl ecparam -name secp521r1 -genkey -param_enc explicit`, so the explicit form is
//! the common one. Explicit parameters are accepted only when they are exactly one of the
//! supported curves (P-256, P-384, P-521); anything else is refused, naming the curve's OID
//! or "explicit parameters of an unsupported curve".
//!
//! The DER is read with the `der`/`spki` crates (RustCrypto); the curve arithmetic is p256 /
//! p384 / p521.

use der::asn1::{AnyRef, BitStringRef, ContextSpecific, ObjectIdentifier, OctetStringRef, UintRef};
use der::{Decode, Reader, SliceReader, Tag, TagNumber, Tagged};

/// id-ecPublicKey (RFC 5480): the algorithm of every EC key, whatever its curve.
pub const ID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const SECP256R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const SECP384R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
const SECP521R1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.35");
/// prime-field (X9.62): the only field type of the supported curves.
const PRIME_FIELD: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.1.1");

/// The curves an EC key may be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    P256,
    P384,
    P521,
}

/// The SEC 2 domain parameters of a curve, big-endian hex (for matching explicit
/// parameters; a unit test checks them against openssl's explicit encodings and against the
/// curve crates' generators).
struct Domain {
    curve: Curve,
    p: &'static str,
    a: &'static str,
    b: &'static str,
    gx: &'static str,
    gy: &'static str,
    n: &'static str,
}

const DOMAINS: [Domain; 3] = [
    Domain {
        curve: Curve::P256,
        p: "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff",
        a: "ffffffff00000001000000000000000000000000fffffffffffffffffffffffc",
        b: "5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b",
        gx: "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296",
        gy: "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5",
        n: "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551",
    },
    Domain {
        curve: Curve::P384,
        p: "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000ffffffff",
        a: "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000fffffffc",
        b: "b3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8edd3ec2aef",
        gx: "aa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7",
        gy: "3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c90ea0e5f",
        n: "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973",
    },
    Domain {
        curve: Curve::P521,
        p: "01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        a: "01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffc",
        b: "0051953eb9618e1c9a1f929a21a0b68540eea2da725b99b315f3b8b489918ef109e156193951ec7e937b1652c0bd3bb1bf073573df883d2c34f1ef451fd46b503f00",
        gx: "00c6858e06b70404e9cd9e3ecb662395b4429c648139053fb521f828af606b4d3dbaa14b5e77efe75928fe1dc127a2ffa8de3348b3c1856a429bf97e7e31c2e5bd66",
        gy: "011839296a789a3bc0045c8a5fb42c7d1bd998f54449579b446817afbd17273e662c97ee72995ef42640c550b9013fad0761353c7086a272c24088be94769fd16650",
        n: "01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409",
    },
];

/// A public EC key on a supported curve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EcPublic {
    P256(p256::PublicKey),
    P384(p384::PublicKey),
    P521(p521::PublicKey),
}

/// A private EC key on a supported curve (its Debug output never shows the scalar: the
/// curve crates print secret keys as `SecretKey { .. }`).
#[derive(Clone)]
pub enum EcPrivate {
    P256(p256::SecretKey),
    P384(p384::SecretKey),
    P521(p521::SecretKey),
}

impl std::fmt::Debug for EcPrivate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EcPrivate({:?})", self.curve())
    }
}

impl EcPublic {
    pub fn curve(&self) -> Curve {
        match self {
            EcPublic::P256(_) => Curve::P256,
            EcPublic::P384(_) => Curve::P384,
            EcPublic::P521(_) => Curve::P521,
        }
    }
}

impl EcPrivate {
    pub fn curve(&self) -> Curve {
        match self {
            EcPrivate::P256(_) => Curve::P256,
            EcPrivate::P384(_) => Curve::P384,
            EcPrivate::P521(_) => Curve::P521,
        }
    }

    /// The matching public key.
    pub fn public(&self) -> EcPublic {
        match self {
            EcPrivate::P256(k) => EcPublic::P256(k.public_key()),
            EcPrivate::P384(k) => EcPublic::P384(k.public_key()),
            EcPrivate::P521(k) => EcPublic::P521(k.public_key()),
        }
    }
}

fn hex_eq(hex: &str, bytes: &[u8]) -> bool {
    // Both sides compared without leading zero bytes (DER INTEGERs drop them; some
    // encoders drop them from the curve coefficients' octet strings too).
    let want: Vec<u8> = (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
        .skip_while(|&b| b == 0)
        .collect();
    let got: Vec<u8> = bytes.iter().copied().skip_while(|&b| b == 0).collect();
    want == got
}

/// The curve named by the `parameters` of an EC key: a named-curve OID, or explicit
/// parameters (X9.62 SpecifiedECDomain) that must be exactly a supported curve's.
pub fn curve_of(params: AnyRef<'_>) -> Result<Curve, String> {
    if params.tag() == Tag::ObjectIdentifier {
        let oid = ObjectIdentifier::try_from(params).map_err(|e| e.to_string())?;
        return match oid {
            SECP256R1 => Ok(Curve::P256),
            SECP384R1 => Ok(Curve::P384),
            SECP521R1 => Ok(Curve::P521),
            other => Err(format!(
                "the EC curve {other} is not supported (P-256, P-384 and P-521 are)"
            )),
        };
    }
    if params.tag() != Tag::Sequence {
        return Err("the EC key names no curve (implicit parameters)".to_owned());
    }
    explicit_curve(params.value()).map_err(|e| match e {
        Explicit::Der(e) => format!("unreadable explicit EC parameters: {e}"),
        Explicit::Unsupported => {
            "explicit parameters of an unsupported EC curve (P-256, P-384 and P-521 are \
             supported)"
                .to_owned()
        }
    })
}

enum Explicit {
    Der(der::Error),
    Unsupported,
}

impl From<der::Error> for Explicit {
    fn from(e: der::Error) -> Self {
        Explicit::Der(e)
    }
}

/// Match SpecifiedECDomain's contents (the SEQUENCE's value) against the known curves.
fn explicit_curve(body: &[u8]) -> Result<Curve, Explicit> {
    let mut r = SliceReader::new(body)?;
    let _version: u8 = r.decode()?;
    let (field_type, p) = r.sequence(|r| {
        let t: ObjectIdentifier = r.decode()?;
        let p: UintRef<'_> = r.decode()?;
        Ok((t, p))
    })?;
    let (a, b) = r.sequence(|r| {
        let a: OctetStringRef<'_> = r.decode()?;
        let b: OctetStringRef<'_> = r.decode()?;
        let _seed: Option<BitStringRef<'_>> = r.decode()?;
        Ok((a, b))
    })?;
    let base: OctetStringRef<'_> = r.decode()?;
    let n: UintRef<'_> = r.decode()?;
    let h: Option<UintRef<'_>> = r.decode()?;
    if field_type != PRIME_FIELD || h.is_some_and(|h| h.as_bytes() != [1]) {
        return Err(Explicit::Unsupported);
    }
    let base = base.as_bytes();
    for d in &DOMAINS {
        let same_g = match base.first() {
            Some(4) => {
                let half = (base.len() - 1) / 2;
                base.len() % 2 == 1
                    && hex_eq(d.gx, &base[1..1 + half])
                    && hex_eq(d.gy, &base[1 + half..])
            }
            Some(&tag @ (2 | 3)) => {
                // Compressed: X and the parity of Y.
                let gy_last = u8::from_str_radix(&d.gy[d.gy.len() - 2..], 16).unwrap_or(0);
                hex_eq(d.gx, &base[1..]) && (gy_last & 1) == (tag & 1)
            }
            _ => false,
        };
        if same_g
            && hex_eq(d.p, p.as_bytes())
            && hex_eq(d.a, a.as_bytes())
            && hex_eq(d.b, b.as_bytes())
            && hex_eq(d.n, n.as_bytes())
        {
            return Ok(d.curve);
        }
    }
    Err(Explicit::Unsupported)
}

/// A public key from the SEC1 point encoding (compressed or uncompressed) on `curve`.
pub fn public_from_point(curve: Curve, point: &[u8]) -> Result<EcPublic, String> {
    let bad = |_| "the EC public point is not on the curve".to_owned();
    Ok(match curve {
        Curve::P256 => EcPublic::P256(p256::PublicKey::from_sec1_bytes(point).map_err(bad)?),
        Curve::P384 => EcPublic::P384(p384::PublicKey::from_sec1_bytes(point).map_err(bad)?),
        Curve::P521 => EcPublic::P521(p521::PublicKey::from_sec1_bytes(point).map_err(bad)?),
    })
}

/// A public key from SubjectPublicKeyInfo DER whose algorithm is id-ecPublicKey.
pub fn public_from_spki(spki: &spki::SubjectPublicKeyInfoRef<'_>) -> Result<EcPublic, String> {
    let params = spki
        .algorithm
        .parameters
        .ok_or_else(|| "the EC public key names no curve".to_owned())?;
    let curve = curve_of(params)?;
    let point = spki
        .subject_public_key
        .as_bytes()
        .ok_or_else(|| "the EC public point is not a whole number of bytes".to_owned())?;
    public_from_point(curve, point)
}

fn secret_from_scalar(curve: Curve, d: &[u8]) -> Result<EcPrivate, String> {
    // SEC1 writes the scalar at the field size; a shorter one (leading zeros dropped by
    // some encoders) is left-padded by `from_slice`, a longer one refused.
    let bad = |_| "the EC private scalar is out of range for its curve".to_owned();
    Ok(match curve {
        Curve::P256 => EcPrivate::P256(p256::SecretKey::from_slice(d).map_err(bad)?),
        Curve::P384 => EcPrivate::P384(p384::SecretKey::from_slice(d).map_err(bad)?),
        Curve::P521 => EcPrivate::P521(p521::SecretKey::from_slice(d).map_err(bad)?),
    })
}

/// A private key from SEC1 ECPrivateKey DER. The curve comes from its own `[0]` parameters,
/// else from `outer` (PKCS#8's algorithm parameters or a preceding `EC PARAMETERS` block).
pub fn private_from_sec1(der_bytes: &[u8], outer: Option<Curve>) -> Result<EcPrivate, String> {
    let mut r = SliceReader::new(der_bytes).map_err(|e| e.to_string())?;
    let (d, own) = r
        .sequence(|r| {
            let version: u8 = r.decode()?;
            if version != 1 {
                return Err(der::Tag::Integer.value_error());
            }
            let d: OctetStringRef<'_> = r.decode()?;
            let params = ContextSpecific::<AnyRef<'_>>::decode_explicit(r, TagNumber::N0)?;
            let _public = ContextSpecific::<BitStringRef<'_>>::decode_explicit(r, TagNumber::N1)?;
            Ok((
                d.as_bytes().to_vec(),
                params.map(|p| p.value.to_der_bytes()),
            ))
        })
        .map_err(|e| format!("not a SEC1 EC private key: {e}"))?;
    let curve = match own {
        Some(p) => {
            let any = AnyRef::from_der(&p).map_err(|e| e.to_string())?;
            curve_of(any)?
        }
        None => outer.ok_or_else(|| "the EC private key names no curve".to_owned())?,
    };
    let key = secret_from_scalar(curve, &d);
    let mut d = d;
    d.iter_mut().for_each(|b| *b = 0);
    key
}

/// The curve of an `EC PARAMETERS` block (an ECParameters CHOICE on its own).
pub fn curve_of_params_block(der_bytes: &[u8]) -> Result<Curve, String> {
    curve_of(AnyRef::from_der(der_bytes).map_err(|e| e.to_string())?)
}

trait ToDerBytes {
    fn to_der_bytes(&self) -> Vec<u8>;
}

impl ToDerBytes for AnyRef<'_> {
    fn to_der_bytes(&self) -> Vec<u8> {
        der::Encode::to_der(self).unwrap_or_default()
    }
}
