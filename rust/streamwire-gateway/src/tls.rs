//! HTTPS for the gateway: a rustls server configuration (ring provider, TLS 1.2 and 1.3,
//! ALPN `http/1.1`) from a PEM certificate chain and private key, built once at start so a
//! bad file is a configuration error before the gateway listens.

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::tls::{load_certs, load_key};

/// The acceptor for `cert` (PEM chain, leaf first) and `key` (PEM private key).
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor> {
    let chain = load_certs(cert, "TLS certificate file")?;
    let private = load_key(key)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::new(ErrorKind::Config, format!("TLS versions: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "the TLS key {} does not fit the certificate {}: {e}",
                    key.display(),
                    cert.display()
                ),
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_non_pem_files_are_config_errors() {
        let dir = std::env::temp_dir().join(format!("sw-gw-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "not pem at all\n").unwrap();
        let missing = dir.join("missing.pem");
        for (c, k) in [(&missing, &junk), (&junk, &junk)] {
            let e = acceptor(c, k).err().expect("an error");
            assert_eq!(e.kind(), ErrorKind::Config, "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
