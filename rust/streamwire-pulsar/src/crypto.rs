//! End-to-end encryption of message payloads, as the official Pulsar clients do it (pure: no
//! I/O, no clock reads — time is an argument).
//!
//! The scheme (Java `MessageCryptoBc`, C++ `MessageCrypto`): a producer holds one random
//! AES-256 *data key*. Each entry's payload (after compression, the whole batch) is sealed
//! with AES-256-GCM under a fresh random 12-byte IV; the 16-byte tag follows the ciphertext.
//! The IV travels in `encryption_param`. The data key itself travels in `encryption_keys`:
//! once per recipient key name, wrapped with that name's RSA public key (RSA-OAEP with SHA-1
//! and MGF1-SHA-1), with the key reader's metadata for that name. Neither official client sets
//! `encryption_algo`. A consumer unwraps the data key with the private key of any name it
//! has, caches it by the wrapped bytes (a producer re-sends the same wrapped key with every
//! entry until it rotates), and opens the payload.
//!
//! EC keys (P-256, P-384, P-521; named or explicit curve parameters) wrap the data key with
//! BouncyCastle's ECIES as the Java client does ([`ecies`], keys read by [`ec_keys`]). The
//! C++ client, and so the official Python client, reads RSA keys only: it cannot open a
//! message whose only recipients are EC keys (its failure action applies).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use ring::rand::{SecureRandom, SystemRandom};
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::{Oaep, RsaPrivateKey, RsaPublicKey};

use crate::protocol::pb;

pub mod ec_keys;
pub mod ecies;

use ec_keys::{EcPrivate, EcPublic};

/// AES-256: 32-byte data keys.
pub const DATA_KEY_LEN: usize = 32;
/// The GCM IV length both official clients use.
pub const IV_LEN: usize = 12;
/// The GCM tag appended to the ciphertext.
pub const TAG_LEN: usize = 16;
/// How long a producer keeps one data key (the Java and C++ producers re-key every 4 hours),
/// and how long a consumer keeps an unwrapped key it has not used.
pub const DATA_KEY_ROTATION: Duration = Duration::from_secs(4 * 3600);
/// Unwrapped data keys a consumer keeps at most (one per producer and rotation is typical;
/// the bound keeps a stream of forged keys from growing the cache without end).
const MAX_CACHED_KEYS: usize = 1024;

/// Why encrypting or decrypting failed. Messages never carry key or payload bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// The key reader has no key of this kind for this name.
    #[error("no {kind} key for encryption key name {name:?}")]
    MissingKey { name: String, kind: &'static str },
    /// A key could not be read as an RSA or EC key in PEM (or its curve is not supported).
    #[error("{kind} key {name:?} is not a usable RSA or EC key in PEM: {reason}")]
    BadKey {
        name: String,
        kind: &'static str,
        reason: String,
    },
    /// The key reader itself failed (a Python callable raised, a file is unreadable).
    #[error("the crypto key reader failed for {name:?}: {reason}")]
    Reader { name: String, reason: String },
    /// Wrapping the data key for a recipient failed.
    #[error("could not encrypt the data key for {name:?}: {reason}")]
    Wrap { name: String, reason: String },
    /// None of the message's key names gave a data key (no private key, or the wrong one).
    #[error("no private key can decrypt the data key (key names: {names:?}){detail}")]
    NoDataKey { names: Vec<String>, detail: String },
    /// The payload did not authenticate under the data key: tampered, truncated, or sealed
    /// under a different key.
    #[error("the payload failed AES-GCM authentication (tampered, truncated or a wrong key)")]
    Tampered,
    /// The message names an encryption algorithm this client does not know.
    #[error("unknown encryption algorithm {0:?}")]
    UnknownAlgorithm(String),
    /// The operating system's random source failed (no data key or IV could be made).
    #[error("the system random source failed")]
    Random,
    /// `encryption_param` is not a 12-byte IV.
    #[error("encryption_param must be a {IV_LEN}-byte IV, got {0} bytes")]
    BadParam(usize),
    /// The message carries no encryption keys.
    #[error("the message is not encrypted")]
    NotEncrypted,
}

/// A key as a key reader returns it: PEM bytes plus metadata that travels with the wrapped
/// data key (public side) or came with it (private side).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct KeyInfo {
    pub pem: Vec<u8>,
    pub metadata: Vec<(String, String)>,
}

impl fmt::Debug for KeyInfo {
    // Never print key bytes (a private key could end up in a log).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyInfo")
            .field("pem", &format_args!("<{} bytes>", self.pem.len()))
            .field("metadata", &self.metadata)
            .finish()
    }
}

/// Where keys come from, by key name (the official `CryptoKeyReader`).
pub trait KeyReader: Send + Sync + fmt::Debug {
    /// The public key to wrap the data key with for recipient `name`.
    fn public_key(&self, name: &str) -> Result<KeyInfo, CryptoError>;
    /// The private key for `name`; `metadata` is what the producer's reader attached.
    fn private_key(
        &self,
        name: &str,
        metadata: &[(String, String)],
    ) -> Result<KeyInfo, CryptoError>;
}

/// PEM bytes of a public and a private key, either may be absent.
pub type PemPair = (Option<Vec<u8>>, Option<Vec<u8>>);

/// One recipient of a sealed message: key name, wrapped data key, the reader's metadata.
pub type WrappedKey = (String, Bytes, Vec<(String, String)>);

/// A reader over keys held in memory: one default pair used for every name (as the official
/// `DefaultCryptoKeyReader` with two files), and optional pairs for particular names.
#[derive(Clone, Default)]
pub struct StaticKeyReader {
    pub public: Option<Vec<u8>>,
    pub private: Option<Vec<u8>>,
    pub by_name: HashMap<String, PemPair>,
    pub metadata: Vec<(String, String)>,
}

impl fmt::Debug for StaticKeyReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticKeyReader")
            .field("public", &self.public.is_some())
            .field("private", &self.private.is_some())
            .field("names", &self.by_name.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl KeyReader for StaticKeyReader {
    fn public_key(&self, name: &str) -> Result<KeyInfo, CryptoError> {
        let named = self.by_name.get(name).and_then(|(p, _)| p.as_ref());
        match named.or(self.public.as_ref()) {
            Some(pem) => Ok(KeyInfo {
                pem: pem.clone(),
                metadata: self.metadata.clone(),
            }),
            None => Err(CryptoError::MissingKey {
                name: name.to_owned(),
                kind: "public",
            }),
        }
    }

    fn private_key(&self, name: &str, _: &[(String, String)]) -> Result<KeyInfo, CryptoError> {
        let named = self.by_name.get(name).and_then(|(_, p)| p.as_ref());
        match named.or(self.private.as_ref()) {
            Some(pem) => Ok(KeyInfo {
                pem: pem.clone(),
                metadata: Vec::new(),
            }),
            None => Err(CryptoError::MissingKey {
                name: name.to_owned(),
                kind: "private",
            }),
        }
    }
}

/// A recipient's public key: RSA (OAEP wrap) or EC (ECIES wrap).
#[derive(Debug, Clone)]
pub enum PublicKey {
    Rsa(RsaPublicKey),
    Ec(EcPublic),
}

/// A private key: RSA (boxed: it is several times the size of an EC key) or EC.
#[derive(Debug, Clone)]
pub enum PrivateKey {
    Rsa(Box<RsaPrivateKey>),
    Ec(EcPrivate),
}

/// The PEM blocks of a key file, in order: (label, DER). Text outside blocks is ignored (as
/// openssl and BouncyCastle's PEMParser do).
fn pem_blocks(pem: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let text = std::str::from_utf8(pem).map_err(|_| "not text".to_owned())?;
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("-----BEGIN ") {
        let block = &rest[at..];
        let Some(end_at) = block.find("-----END ") else {
            return Err("a PEM block has no END line".to_owned());
        };
        let close = block[end_at + 9..]
            .find("-----")
            .map(|i| end_at + 9 + i + 5)
            .ok_or_else(|| "a PEM END line is not closed".to_owned())?;
        let (label, der) = der::pem::decode_vec(block[..close].trim().as_bytes())
            .map_err(|e| format!("bad PEM: {e}"))?;
        out.push((label.to_owned(), der));
        rest = &block[close..];
    }
    if out.is_empty() {
        return Err("no PEM block".to_owned());
    }
    Ok(out)
}

fn bad_key<'a>(name: &'a str, kind: &'static str) -> impl Fn(String) -> CryptoError + 'a {
    move |reason| CryptoError::BadKey {
        name: name.to_owned(),
        kind,
        reason,
    }
}

/// Read a public key: SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`, RSA or EC, what `openssl
/// rsa|ec -pubout` writes) or PKCS#1 (`BEGIN RSA PUBLIC KEY`). An `EC PARAMETERS` block
/// before it is skipped (the SubjectPublicKeyInfo names its own curve).
pub fn parse_public_key(name: &str, pem: &[u8]) -> Result<PublicKey, CryptoError> {
    let bad = bad_key(name, "public");
    let blocks = pem_blocks(pem).map_err(&bad)?;
    for (label, der_bytes) in &blocks {
        match label.as_str() {
            "PUBLIC KEY" => {
                let spki = spki::SubjectPublicKeyInfoRef::try_from(der_bytes.as_slice())
                    .map_err(|e| bad(e.to_string()))?;
                if spki.algorithm.oid == ec_keys::ID_EC_PUBLIC_KEY {
                    return ec_keys::public_from_spki(&spki)
                        .map(PublicKey::Ec)
                        .map_err(&bad);
                }
                return RsaPublicKey::from_public_key_der(der_bytes)
                    .map(PublicKey::Rsa)
                    .map_err(|e| bad(e.to_string()));
            }
            "RSA PUBLIC KEY" => {
                return RsaPublicKey::from_pkcs1_der(der_bytes)
                    .map(PublicKey::Rsa)
                    .map_err(|e| bad(e.to_string()));
            }
            "EC PARAMETERS" => {}
            other => return Err(bad(format!("a {other:?} block is not a public key"))),
        }
    }
    Err(bad("no public key block".to_owned()))
}

/// Read a private key: PKCS#8 (`BEGIN PRIVATE KEY`, RSA or EC), PKCS#1 (`BEGIN RSA PRIVATE
/// KEY`) or SEC1 (`BEGIN EC PRIVATE KEY`, its curve in the key or in an `EC PARAMETERS`
/// block before it, as `openssl ecparam -genkey` writes it).
pub fn parse_private_key(name: &str, pem: &[u8]) -> Result<PrivateKey, CryptoError> {
    let bad = bad_key(name, "private");
    let blocks = pem_blocks(pem).map_err(&bad)?;
    let mut params = None;
    for (label, der_bytes) in &blocks {
        match label.as_str() {
            "EC PARAMETERS" => {
                params = Some(ec_keys::curve_of_params_block(der_bytes).map_err(&bad)?);
            }
            "EC PRIVATE KEY" => {
                return ec_keys::private_from_sec1(der_bytes, params)
                    .map(PrivateKey::Ec)
                    .map_err(&bad);
            }
            "RSA PRIVATE KEY" => {
                return RsaPrivateKey::from_pkcs1_der(der_bytes)
                    .map(|k| PrivateKey::Rsa(Box::new(k)))
                    .map_err(|e| bad(e.to_string()));
            }
            "PRIVATE KEY" => {
                let info = pkcs8::PrivateKeyInfo::try_from(der_bytes.as_slice())
                    .map_err(|e| bad(e.to_string()))?;
                if info.algorithm.oid == ec_keys::ID_EC_PUBLIC_KEY {
                    let curve = match info.algorithm.parameters {
                        Some(p) => Some(ec_keys::curve_of(p).map_err(&bad)?),
                        None => params,
                    };
                    return ec_keys::private_from_sec1(info.private_key, curve)
                        .map(PrivateKey::Ec)
                        .map_err(&bad);
                }
                return RsaPrivateKey::from_pkcs8_der(der_bytes)
                    .map(|k| PrivateKey::Rsa(Box::new(k)))
                    .map_err(|e| bad(e.to_string()));
            }
            other => return Err(bad(format!("a {other:?} block is not a private key"))),
        }
    }
    Err(bad("no private key block".to_owned()))
}

/// `N` bytes from the operating system's random source.
fn random<const N: usize>() -> Result<[u8; N], CryptoError> {
    let mut out = [0u8; N];
    SystemRandom::new()
        .fill(&mut out)
        .map_err(|_| CryptoError::Random)?;
    Ok(out)
}

/// An AES-256-GCM key (ring: the stitched AES-NI + CLMUL code of BoringSSL, several times
/// faster than a portable implementation on 16 KB payloads).
fn gcm_key(data_key: &[u8]) -> Result<LessSafeKey, CryptoError> {
    UnboundKey::new(&AES_256_GCM, data_key)
        .map(LessSafeKey::new)
        .map_err(|_| CryptoError::NoDataKey {
            names: Vec::new(),
            detail: ": the data key is not an AES-256 key".to_owned(),
        })
}

/// The producer side: one data key wrapped for every recipient, re-keyed every
/// [`DATA_KEY_ROTATION`].
pub struct Encryptor {
    names: Vec<String>,
    reader: Arc<dyn KeyReader>,
    cipher: LessSafeKey,
    wrapped: Vec<pb::EncryptionKeys>,
    keyed_at: Instant,
}

impl fmt::Debug for Encryptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encryptor")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

fn wrap_for_all(
    names: &[String],
    reader: &dyn KeyReader,
    data_key: &[u8],
) -> Result<Vec<pb::EncryptionKeys>, CryptoError> {
    let mut rng = rsa::rand_core::OsRng;
    names
        .iter()
        .map(|name| {
            let info = reader.public_key(name)?;
            let value = match parse_public_key(name, &info.pem)? {
                PublicKey::Rsa(key) => key
                    .encrypt(&mut rng, Oaep::new::<sha1::Sha1>(), data_key)
                    .map_err(|e| CryptoError::Wrap {
                    name: name.clone(),
                    reason: e.to_string(),
                })?,
                PublicKey::Ec(key) => ecies::wrap(&key, data_key),
            };
            Ok(pb::EncryptionKeys {
                key: name.clone(),
                value: Bytes::from(value),
                metadata: info
                    .metadata
                    .into_iter()
                    .map(|(key, value)| pb::KeyValue { key, value })
                    .collect(),
            })
        })
        .collect()
}

impl Encryptor {
    /// A fresh data key wrapped for each of `names`. Fails (as the Java producer's creation
    /// does) when any recipient's public key is missing or unusable.
    pub fn new(
        names: Vec<String>,
        reader: Arc<dyn KeyReader>,
        now: Instant,
    ) -> Result<Self, CryptoError> {
        let data_key: [u8; DATA_KEY_LEN] = random()?;
        let wrapped = wrap_for_all(&names, reader.as_ref(), &data_key)?;
        Ok(Encryptor {
            names,
            reader,
            cipher: gcm_key(&data_key)?,
            wrapped,
            keyed_at: now,
        })
    }

    /// Re-key when the data key is [`DATA_KEY_ROTATION`] old. If the reader fails then, the
    /// old key stays in use and the error is returned for the log (Java keeps its key too).
    pub fn rotate_if_due(&mut self, now: Instant) -> Result<bool, CryptoError> {
        if now.saturating_duration_since(self.keyed_at) < DATA_KEY_ROTATION {
            return Ok(false);
        }
        // Retry at the next interval, not at every message, when the reader fails.
        self.keyed_at = now;
        let data_key: [u8; DATA_KEY_LEN] = random()?;
        let wrapped = wrap_for_all(&self.names, self.reader.as_ref(), &data_key)?;
        self.cipher = gcm_key(&data_key)?;
        self.wrapped = wrapped;
        Ok(true)
    }

    /// Seal `payload` (already compressed) and record keys and IV in `md`.
    pub fn encrypt(
        &self,
        md: &mut pb::MessageMetadata,
        payload: &[u8],
    ) -> Result<Vec<u8>, CryptoError> {
        let iv: [u8; IV_LEN] = random()?;
        let mut out = Vec::with_capacity(payload.len() + TAG_LEN);
        out.extend_from_slice(payload);
        // GCM sealing only fails above 64 GiB, which no message is.
        let tag = self
            .cipher
            .seal_in_place_separate_tag(Nonce::assume_unique_for_key(iv), Aad::empty(), &mut out)
            .map_err(|_| CryptoError::Random)?;
        out.extend_from_slice(tag.as_ref());
        md.encryption_keys = self.wrapped.clone();
        md.encryption_param = Some(Bytes::copy_from_slice(&iv));
        Ok(out)
    }
}

/// What the application gets for a message it could not (or chose not to) decrypt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptionContext {
    /// (key name, wrapped data key, metadata) per recipient.
    pub keys: Vec<WrappedKey>,
    pub algorithm: String,
    pub param: Bytes,
    /// The compression codec's wire value (applied before encryption).
    pub compression: i32,
    pub uncompressed_size: u32,
    /// `num_messages_in_batch` when the payload is a batch, else None.
    pub batch_size: Option<i32>,
}

impl EncryptionContext {
    pub fn of(md: &pb::MessageMetadata) -> Self {
        EncryptionContext {
            keys: md
                .encryption_keys
                .iter()
                .map(|k| {
                    (
                        k.key.clone(),
                        k.value.clone(),
                        k.metadata
                            .iter()
                            .map(|kv| (kv.key.clone(), kv.value.clone()))
                            .collect(),
                    )
                })
                .collect(),
            algorithm: md.encryption_algo.clone().unwrap_or_default(),
            param: md.encryption_param.clone().unwrap_or_default(),
            compression: md.compression.unwrap_or(0),
            uncompressed_size: md.uncompressed_size.unwrap_or(0),
            batch_size: md.num_messages_in_batch,
        }
    }
}

/// What a consumer does with a message it cannot decrypt (the official
/// `ConsumerCryptoFailureAction`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FailureAction {
    /// Do not deliver it and do not acknowledge it (it comes again after an ack timeout, a
    /// redelivery request or a reconnect, as in the official clients); the next receive
    /// raises the reason. The official clients' default.
    #[default]
    Fail,
    /// Acknowledge it with the `DecryptionError` validation error and drop it.
    Discard,
    /// Deliver the encrypted payload (a batch as one message) with its encryption context.
    Consume,
}

impl FailureAction {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "fail" => Some(FailureAction::Fail),
            "discard" => Some(FailureAction::Discard),
            "consume" => Some(FailureAction::Consume),
            _ => None,
        }
    }
}

/// A consumer's decryption settings: its key reader (None: it has none, every encrypted
/// message takes the failure action) and the failure action.
#[derive(Debug, Clone, Default)]
pub struct ConsumerCrypto {
    pub decryptor: Option<Arc<Decryptor>>,
    pub action: FailureAction,
}

impl ConsumerCrypto {
    /// Open an encrypted entry's payload.
    pub fn open(
        &self,
        md: &pb::MessageMetadata,
        payload: &[u8],
        now: Instant,
    ) -> Result<Vec<u8>, CryptoError> {
        match &self.decryptor {
            Some(d) => d.decrypt(md, payload, now),
            None => Err(CryptoError::NoDataKey {
                names: md.encryption_keys.iter().map(|k| k.key.clone()).collect(),
                detail: ": the consumer has no crypto_key_reader".to_owned(),
            }),
        }
    }
}

/// The consumer side: unwrapped data keys cached by their wrapped bytes.
pub struct Decryptor {
    reader: Arc<dyn KeyReader>,
    cache: Mutex<HashMap<Bytes, (LessSafeKey, Instant)>>,
}

impl fmt::Debug for Decryptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decryptor").finish_non_exhaustive()
    }
}

impl Decryptor {
    pub fn new(reader: Arc<dyn KeyReader>) -> Self {
        Decryptor {
            reader,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Check the parts of `md` that say how the payload was sealed; returns the IV.
    fn iv_of(md: &pb::MessageMetadata) -> Result<[u8; IV_LEN], CryptoError> {
        if md.encryption_keys.is_empty() {
            return Err(CryptoError::NotEncrypted);
        }
        // The official producers leave `encryption_algo` unset; anything named there is a
        // scheme we cannot assume is AES-GCM.
        if let Some(algo) = md.encryption_algo.as_deref().filter(|a| !a.is_empty()) {
            return Err(CryptoError::UnknownAlgorithm(
                algo.chars().take(64).collect(),
            ));
        }
        let param = md.encryption_param.as_deref().unwrap_or_default();
        if param.len() != IV_LEN {
            return Err(CryptoError::BadParam(param.len()));
        }
        let mut iv = [0u8; IV_LEN];
        iv.copy_from_slice(param);
        Ok(iv)
    }

    /// Open the payload of an encrypted entry (compressed bytes come back, as they went in).
    pub fn decrypt(
        &self,
        md: &pb::MessageMetadata,
        payload: &[u8],
        now: Instant,
    ) -> Result<Vec<u8>, CryptoError> {
        let iv = Self::iv_of(md)?;
        // Fast path: a data key unwrapped before.
        {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            for k in &md.encryption_keys {
                if let Some((cipher, used)) = cache.get_mut(&k.value) {
                    *used = now;
                    return open(cipher, iv, payload);
                }
            }
        }
        // Slow path: unwrap with the first recipient name we hold a private key for.
        let mut detail = String::new();
        for k in &md.encryption_keys {
            let meta: Vec<(String, String)> = k
                .metadata
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.clone()))
                .collect();
            let key = match self
                .reader
                .private_key(&k.key, &meta)
                .and_then(|info| parse_private_key(&k.key, &info.pem))
            {
                Ok(key) => key,
                Err(e) => {
                    detail = format!(": {e}");
                    continue;
                }
            };
            let unwrapped = match &key {
                PrivateKey::Rsa(key) => key.decrypt(Oaep::new::<sha1::Sha1>(), &k.value).ok(),
                PrivateKey::Ec(key) => ecies::unwrap(key, &k.value).ok(),
            };
            let Some(data_key) = unwrapped else {
                detail = format!(": the private key for {:?} does not match", k.key);
                continue;
            };
            if data_key.len() != DATA_KEY_LEN {
                detail = format!(": the data key for {:?} is not 32 bytes", k.key);
                continue;
            }
            let cipher = gcm_key(&data_key)?;
            let out = open(&cipher, iv, payload);
            self.remember(k.value.clone(), cipher, now);
            return out;
        }
        Err(CryptoError::NoDataKey {
            names: md.encryption_keys.iter().map(|k| k.key.clone()).collect(),
            detail,
        })
    }

    fn remember(&self, wrapped: Bytes, cipher: LessSafeKey, now: Instant) {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        cache.retain(|_, (_, used)| now.saturating_duration_since(*used) < DATA_KEY_ROTATION);
        if cache.len() >= MAX_CACHED_KEYS {
            cache.clear();
        }
        cache.insert(wrapped, (cipher, now));
    }
}

/// Authenticate and decrypt `sealed` (ciphertext + tag): one copy, decrypted in place.
fn open(key: &LessSafeKey, iv: [u8; IV_LEN], sealed: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let mut buf = sealed.to_vec();
    let len = key
        .open_in_place(Nonce::assume_unique_for_key(iv), Aad::empty(), &mut buf)
        .map_err(|_| CryptoError::Tampered)?
        .len();
    buf.truncate(len);
    Ok(buf)
}

#[cfg(test)]
#[path = "crypto_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "crypto_ec_tests.rs"]
mod ec_tests;
