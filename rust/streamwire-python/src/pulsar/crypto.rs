//! End-to-end encryption from Python: `CryptoKeyReader` (PEM keys from files or bytes) or a
//! key reader object of the caller's (`get_public_key` / `get_private_key`), the
//! producer's `encryption_keys` / consumer's `crypto_failure_action` arguments, and the
//! `EncryptionContext` of a message handed over undecrypted.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use streamwire_core::error::{Error, ErrorKind};
use streamwire_pulsar::crypto::{
    ConsumerCrypto, CryptoError, Decryptor, EncryptionContext, FailureAction, KeyInfo, KeyReader,
    StaticKeyReader,
};
use streamwire_pulsar::producer::EncryptionConfig;

use crate::common::errors::to_py;

fn config_err(msg: String) -> PyErr {
    to_py(Error::new(ErrorKind::Config, msg))
}

/// PEM bytes from `bytes`/`str` (the key itself) — or, for a path argument, the file.
fn pem_arg(what: &str, v: &Bound<'_, PyAny>, is_path: bool) -> PyResult<Vec<u8>> {
    if is_path {
        let path: std::path::PathBuf = v
            .extract()
            .map_err(|_| PyTypeError::new_err(format!("{what} must be a str or os.PathLike")))?;
        // The path is named; the error never carries the file's contents.
        return std::fs::read(&path)
            .map_err(|e| config_err(format!("{what}: cannot read {}: {e}", path.display())));
    }
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = v.extract::<String>() {
        return Ok(s.into_bytes());
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be PEM as bytes or str"
    )))
}

/// Where the encryption keys come from (the official client's `CryptoKeyReader`).
///
/// Give one key pair — RSA, or EC on P-256, P-384 or P-521 (the data key then wrapped with
/// ECIES, as the Java client does) — as PEM files (`public_key_path`, `private_key_path`,
/// what the official client takes) or as PEM bytes (`public_key`, `private_key`): it is used
/// for every key name. `keys` adds pairs for particular names: `{name: (public_pem,
/// private_pem)}`, either may be None. A producer needs the public keys of its
/// `encryption_keys`; a consumer the private key of any one of them. `metadata` is attached
/// to each wrapped data key (the official `EncryptionKeyInfo` metadata). The files are read
/// once, here.
#[pyclass(frozen, module = "streamwire._native", name = "CryptoKeyReader")]
pub struct PyCryptoKeyReader {
    pub(crate) inner: Arc<StaticKeyReader>,
}

#[pymethods]
impl PyCryptoKeyReader {
    #[new]
    #[pyo3(signature = (public_key_path=None, private_key_path=None, *, public_key=None,
        private_key=None, keys=None, metadata=None))]
    fn new(
        public_key_path: Option<&Bound<'_, PyAny>>,
        private_key_path: Option<&Bound<'_, PyAny>>,
        public_key: Option<&Bound<'_, PyAny>>,
        private_key: Option<&Bound<'_, PyAny>>,
        keys: Option<&Bound<'_, PyDict>>,
        metadata: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if public_key_path.is_some() && public_key.is_some() {
            return Err(config_err(
                "give public_key_path or public_key, not both".into(),
            ));
        }
        if private_key_path.is_some() && private_key.is_some() {
            return Err(config_err(
                "give private_key_path or private_key, not both".into(),
            ));
        }
        let public = match (public_key_path, public_key) {
            (Some(p), _) => Some(pem_arg("public_key_path", p, true)?),
            (_, Some(k)) => Some(pem_arg("public_key", k, false)?),
            _ => None,
        };
        let private = match (private_key_path, private_key) {
            (Some(p), _) => Some(pem_arg("private_key_path", p, true)?),
            (_, Some(k)) => Some(pem_arg("private_key", k, false)?),
            _ => None,
        };
        let mut by_name = HashMap::new();
        if let Some(keys) = keys {
            for (name, pair) in keys.iter() {
                let name: String = name
                    .extract()
                    .map_err(|_| PyTypeError::new_err("keys: names must be str"))?;
                let (p, s): (Option<Bound<'_, PyAny>>, Option<Bound<'_, PyAny>>) =
                    pair.extract().map_err(|_| {
                        PyTypeError::new_err(
                            "keys: each value must be a (public_pem, private_pem) tuple",
                        )
                    })?;
                let p = p.map(|p| pem_arg("keys public", &p, false)).transpose()?;
                let s = s.map(|s| pem_arg("keys private", &s, false)).transpose()?;
                by_name.insert(name, (p, s));
            }
        }
        let metadata = match metadata {
            Some(d) => d
                .iter()
                .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
                .collect::<PyResult<_>>()?,
            None => Vec::new(),
        };
        Ok(PyCryptoKeyReader {
            inner: Arc::new(StaticKeyReader {
                public,
                private,
                by_name,
                metadata,
            }),
        })
    }

    fn __repr__(&self) -> String {
        // Which keys it has, never the keys.
        let py_bool = |b: bool| if b { "True" } else { "False" };
        format!(
            "CryptoKeyReader(public={}, private={}, names={:?})",
            py_bool(self.inner.public.is_some()),
            py_bool(self.inner.private.is_some()),
            {
                let mut n: Vec<_> = self.inner.by_name.keys().collect();
                n.sort();
                n
            }
        )
    }
}

/// A key reader written in Python, as the Java client's `CryptoKeyReader` interface: an
/// object whose `get_public_key(key_name, metadata)` / `get_private_key(key_name, metadata)`
/// return the PEM key (bytes or str), or a `(pem, metadata dict)` pair (the metadata travels
/// with the wrapped data key, as `EncryptionKeyInfo`'s), or None for no such key. It is asked
/// when a producer starts or renews its data key (every 4 hours) and when a consumer meets a
/// data key it has not unwrapped yet (they are cached), so rarely: the engine thread that
/// asks waits for the interpreter then.
struct PyObjectReader {
    obj: Py<PyAny>,
}

impl std::fmt::Debug for PyObjectReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PyObjectReader")
    }
}

impl PyObjectReader {
    fn ask(
        &self,
        method: &str,
        kind: &'static str,
        name: &str,
        metadata: &[(String, String)],
    ) -> Result<KeyInfo, CryptoError> {
        let failed = |reason: String| CryptoError::Reader {
            name: name.to_owned(),
            reason,
        };
        Python::attach(|py| {
            let meta = PyDict::new(py);
            for (k, v) in metadata {
                meta.set_item(k, v)
                    .map_err(|e| failed(format!("{method}: {e}")))?;
            }
            let out = self
                .obj
                .bind(py)
                .call_method1(method, (name, meta))
                .map_err(|e| failed(format!("{method} raised {e}")))?;
            if out.is_none() {
                return Err(CryptoError::MissingKey {
                    name: name.to_owned(),
                    kind,
                });
            }
            let (pem, md) = match out.cast::<PyTuple>() {
                Ok(t) if t.len() == 2 => (t.get_item(0).ok(), Some(t.get_item(1).ok())),
                _ => (Some(out.clone()), None),
            };
            let bad_shape = || {
                failed(format!(
                    "{method} must return the PEM key (bytes or str), a (pem, metadata dict) \
                     pair, or None"
                ))
            };
            let pem = pem.ok_or_else(bad_shape)?;
            let pem = if let Ok(b) = pem.cast::<PyBytes>() {
                b.as_bytes().to_vec()
            } else if let Ok(s) = pem.extract::<String>() {
                s.into_bytes()
            } else {
                return Err(bad_shape());
            };
            let metadata = match md {
                None => Vec::new(),
                Some(m) => {
                    let m = m.ok_or_else(bad_shape)?;
                    let d = m.cast::<PyDict>().map_err(|_| bad_shape())?;
                    d.iter()
                        .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
                        .collect::<PyResult<Vec<(String, String)>>>()
                        .map_err(|_| failed(format!("{method}: metadata must be str to str")))?
                }
            };
            Ok(KeyInfo { pem, metadata })
        })
    }
}

impl KeyReader for PyObjectReader {
    fn public_key(&self, name: &str) -> Result<KeyInfo, CryptoError> {
        self.ask("get_public_key", "public", name, &[])
    }

    fn private_key(
        &self,
        name: &str,
        metadata: &[(String, String)],
    ) -> Result<KeyInfo, CryptoError> {
        self.ask("get_private_key", "private", name, metadata)
    }
}

/// A `streamwire.CryptoKeyReader`, or an object with a callable `method` (`get_public_key`
/// for a producer, `get_private_key` for a consumer).
fn reader_of(obj: &Bound<'_, PyAny>, method: &str) -> PyResult<Arc<dyn KeyReader>> {
    if let Ok(r) = obj.cast::<PyCryptoKeyReader>() {
        return Ok(r.get().inner.clone());
    }
    match obj.getattr(method) {
        Ok(m) if m.is_callable() => Ok(Arc::new(PyObjectReader {
            obj: obj.clone().unbind(),
        })),
        _ => Err(PyTypeError::new_err(format!(
            "crypto_key_reader must be a streamwire.CryptoKeyReader or an object with a \
             {method}(key_name, metadata) method"
        ))),
    }
}

/// The producer's `encryption_keys` + `crypto_key_reader`.
pub(crate) fn producer_encryption(
    encryption_keys: Option<Vec<String>>,
    crypto_key_reader: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<EncryptionConfig>> {
    let keys = encryption_keys.unwrap_or_default();
    let reader = crypto_key_reader.filter(|r| !r.is_none());
    match (keys.is_empty(), reader) {
        (true, None) => Ok(None),
        (true, Some(_)) => Err(config_err(
            "crypto_key_reader needs encryption_keys (the key names to encrypt for)".into(),
        )),
        (false, None) => Err(config_err(
            "encryption_keys needs a crypto_key_reader".into(),
        )),
        (false, Some(r)) => {
            if keys.iter().any(String::is_empty) {
                return Err(config_err("encryption_keys must not contain \"\"".into()));
            }
            let mut seen = std::collections::HashSet::new();
            let key_names: Vec<String> = keys
                .into_iter()
                .filter(|k| seen.insert(k.clone()))
                .collect();
            Ok(Some(EncryptionConfig {
                key_names,
                reader: reader_of(r, "get_public_key")?,
            }))
        }
    }
}

/// The consumer's or reader's `crypto_key_reader` + `crypto_failure_action`.
pub(crate) fn consumer_crypto(
    crypto_key_reader: Option<&Bound<'_, PyAny>>,
    crypto_failure_action: &str,
) -> PyResult<ConsumerCrypto> {
    let action = FailureAction::parse(crypto_failure_action).ok_or_else(|| {
        config_err(format!(
            "crypto_failure_action must be \"fail\", \"discard\" or \"consume\", got \
             {crypto_failure_action:?}"
        ))
    })?;
    let decryptor = crypto_key_reader
        .filter(|r| !r.is_none())
        .map(|r| reader_of(r, "get_private_key").map(|r| Arc::new(Decryptor::new(r))))
        .transpose()?;
    Ok(ConsumerCrypto { decryptor, action })
}

fn codec_name(c: i32) -> &'static str {
    match c {
        0 => "none",
        1 => "lz4",
        2 => "zlib",
        3 => "zstd",
        4 => "snappy",
        _ => "unknown",
    }
}

/// How an undecrypted message's payload was sealed (`Message.encryption_context()`, with
/// `crypto_failure_action="consume"`), enough to decrypt it elsewhere: the wrapped data key
/// per key name, the IV, then the compression to undo and, for a batch, its message count.
#[pyclass(frozen, module = "streamwire._native", name = "EncryptionContext")]
pub struct EncryptionContextObj {
    ctx: Arc<EncryptionContext>,
}

impl EncryptionContextObj {
    pub(crate) fn new(ctx: Arc<EncryptionContext>) -> Self {
        EncryptionContextObj { ctx }
    }
}

#[pymethods]
impl EncryptionContextObj {
    /// `{key name: (wrapped data key, metadata dict)}`.
    #[getter]
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, value, meta) in &self.ctx.keys {
            let m = PyDict::new(py);
            for (k, v) in meta {
                m.set_item(k, v)?;
            }
            d.set_item(name, (PyBytes::new(py, value), m))?;
        }
        Ok(d)
    }

    /// `encryption_algo` as sent ("" from the official clients: AES-256-GCM).
    #[getter]
    fn algorithm(&self) -> &str {
        &self.ctx.algorithm
    }

    /// The AES-GCM IV (`encryption_param`).
    #[getter]
    fn param<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.ctx.param)
    }

    /// The compression applied before encryption: "none", "lz4", "zlib", "zstd", "snappy".
    #[getter]
    fn compression_type(&self) -> &'static str {
        codec_name(self.ctx.compression)
    }

    /// The payload size before compression.
    #[getter]
    fn uncompressed_size(&self) -> u32 {
        self.ctx.uncompressed_size
    }

    /// The number of messages when the payload is a batch, else None.
    #[getter]
    fn batch_size(&self) -> Option<i32> {
        self.ctx.batch_size
    }

    fn __repr__(&self) -> String {
        let mut names: Vec<&str> = self.ctx.keys.iter().map(|k| k.0.as_str()).collect();
        names.sort_unstable();
        format!(
            "EncryptionContext(keys={names:?}, compression_type={:?}, uncompressed_size={}, \
             batch_size={:?})",
            codec_name(self.ctx.compression),
            self.ctx.uncompressed_size,
            self.ctx.batch_size
        )
    }
}
