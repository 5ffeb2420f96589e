//! Client TLS shared by the protocol crates (Pulsar's `pulsar+ssl://`, Pravega's `tls://`
//! controller and segment stores), through rustls (ring provider, no C toolchain needs
//! beyond `cc`).
//!
//! Trust: the CA bundle in `trust_certs_file` when given, else the operating system's roots
//! (`rustls-native-certs` reads the same store OpenSSL uses, so corporate CAs installed on the
//! host are honoured and nothing is fetched or compiled in). The server name sent as SNI and
//! verified is the host being dialled (a DNS name or an IP address), as the protocol crate
//! names it: every server a lookup or a controller redirects to is checked alike.
//!
//! Two opt-outs exist, both off by default and named to look dangerous in the Python API:
//! skipping hostname verification (the chain is still verified against the trusted CAs) and
//! accepting any certificate at all.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore};
use tokio::net::TcpStream;

use crate::error::{Error, ErrorKind, Result};

/// A client TLS stream over TCP.
pub type TlsStream = tokio_rustls::client::TlsStream<TcpStream>;

/// TLS settings as the user gives them (paths, flags). All off/None is the safe default:
/// system roots, hostname verification on, no client certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM bundle of CA certificates to trust instead of the system's roots.
    pub trust_certs_file: Option<PathBuf>,
    /// PEM client certificate chain for mutual TLS (needs `key_file`).
    pub cert_file: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1) for `cert_file`.
    pub key_file: Option<PathBuf>,
    /// Accept a certificate issued for another host (the chain is still verified). Dangerous.
    pub skip_hostname_verification: bool,
    /// Accept any certificate, trusted or not. Dangerous: no protection against interception.
    pub allow_insecure_connection: bool,
}

/// A ready rustls client configuration, shared by every TLS connection of a client.
#[derive(Clone)]
pub struct TlsConnector {
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsConnector(..)")
    }
}

fn config_err(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Config, msg)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate in a PEM file (at least one).
pub fn load_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let iter = CertificateDer::pem_file_iter(path)
        .map_err(|e| config_err(format!("cannot read {what} {}: {e}", path.display())))?;
    let certs = iter
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| config_err(format!("{what} {} is not valid PEM: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(config_err(format!(
            "{what} {} contains no PEM certificate",
            path.display()
        )));
    }
    Ok(certs)
}

/// The private key in a PEM file. The error never includes the file's content.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(config_err(format!(
            "cannot read TLS key file {}: {e}",
            path.display()
        )));
    }
    PrivateKeyDer::from_pem_file(path).map_err(|_| {
        config_err(format!(
            "TLS key file {} holds no usable PEM private key (PKCS#8, PKCS#1 or SEC1)",
            path.display()
        ))
    })
}

fn roots(opts: &TlsOptions) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match &opts.trust_certs_file {
        Some(path) => {
            for cert in load_certs(path, "CA bundle")? {
                store.add(cert).map_err(|e| {
                    config_err(format!(
                        "CA bundle {} holds an unusable certificate: {e}",
                        path.display()
                    ))
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(config_err(
                    "no system CA certificates found; pass tls_trust_certs_file",
                ));
            }
        }
    }
    Ok(store)
}

impl TlsConnector {
    /// Build the configuration once; a bad file or flag combination is a `Config` error here,
    /// before any connection is tried.
    pub fn new(opts: &TlsOptions) -> Result<TlsConnector> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| config_err(format!("TLS set-up failed: {e}")))?;
        let verifier: Arc<dyn ServerCertVerifier> = if opts.allow_insecure_connection {
            Arc::new(AcceptAnything(provider))
        } else {
            let webpki = WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(opts)?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|e| config_err(format!("TLS set-up failed: {e}")))?;
            if opts.skip_hostname_verification {
                Arc::new(AnyHostname(webpki))
            } else {
                webpki
            }
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match (&opts.cert_file, &opts.key_file) {
            (Some(cert), Some(key)) => {
                let chain = load_certs(cert, "TLS certificate file")?;
                let key = load_key(key)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    config_err(format!(
                        "TLS client certificate {} does not match its key: {e}",
                        cert.display()
                    ))
                })?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => {
                return Err(config_err(
                    "mutual TLS needs both tls_cert_file and tls_key_file",
                ))
            }
        };
        Ok(TlsConnector {
            config: Arc::new(config),
        })
    }

    /// The same configuration offering `protocols` by ALPN (e.g. `h2` for gRPC: servers such
    /// as grpc-java's Netty refuse an HTTP/2 connection whose TLS did not negotiate it).
    pub fn with_alpn(&self, protocols: &[&[u8]]) -> TlsConnector {
        let mut config = (*self.config).clone();
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        TlsConnector {
            config: Arc::new(config),
        }
    }

    /// TLS handshake over `tcp` to `host` (the SNI and the verified name); `peer` names the
    /// server in error messages (e.g. `pulsar+ssl://host:6651`).
    pub async fn connect(&self, host: &str, peer: &str, tcp: TcpStream) -> Result<TlsStream> {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|_| config_err(format!("{peer}: {host:?} is not a valid TLS server name")))?;
        tokio_rustls::TlsConnector::from(Arc::clone(&self.config))
            .connect(name, tcp)
            .await
            .map_err(|e| handshake_error(peer, host, &e))
    }
}

/// A clear message for a failed TLS handshake with `peer` at `host` (no Debug dumps of
/// rustls internals).
pub fn handshake_error(peer: &str, host: &str, e: &std::io::Error) -> Error {
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    // A certificate the client refuses (untrusted CA, wrong name, expired) is refused again
    // on every attempt: not retriable, so a producer or a lookup fails at once instead of
    // redialling until its operation timeout.
    let permanent = matches!(tls, Some(rustls::Error::InvalidCertificate(_)));
    let why = match tls {
        Some(rustls::Error::InvalidCertificate(c)) => certificate_problem(c, host),
        Some(rustls::Error::AlertReceived(alert)) => format!(
            "the server refused the TLS handshake ({}; a client certificate may be required \
             or not trusted)",
            format!("{alert:?}").to_lowercase()
        ),
        Some(other) => format!("TLS error: {other}"),
        None => format!("TLS handshake failed: {e}"),
    };
    let err = Error::new(
        ErrorKind::Connect,
        format!("cannot connect to {peer}: {why}"),
    );
    if permanent {
        err.with_retriable(false)
    } else {
        err
    }
}

fn certificate_problem(c: &CertificateError, host: &str) -> String {
    match c {
        CertificateError::UnknownIssuer => "the server's certificate is not signed by a trusted \
             CA (set tls_trust_certs_file to the CA bundle that issued it)"
            .to_owned(),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            format!(
                "the server's certificate is not valid for host {host:?} (hostname \
                 verification failed; connect with a name the certificate lists)"
            )
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "the server's certificate has expired".to_owned()
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet".to_owned()
        }
        CertificateError::Revoked => "the server's certificate was revoked".to_owned(),
        CertificateError::BadSignature => "the server's certificate has a bad signature".to_owned(),
        CertificateError::BadEncoding => "the server's certificate is malformed".to_owned(),
        other => format!("the server's certificate was rejected ({other})"),
    }
}

/// Verifies the chain against the trusted roots but accepts any host name.
#[derive(Debug)]
struct AnyHostname(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostname {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            // webpki checks the chain first: a name error means the chain was fine.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Accepts any certificate (handshake signatures are still checked, so the peer holds the
/// key of the certificate it shows — but nothing says that certificate is the server's).
#[derive(Debug)]
struct AcceptAnything(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnything {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str, content: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sw-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, content).unwrap();
        p
    }

    #[test]
    fn default_uses_system_roots() {
        // The build machine has a system CA store; an empty one is a clear Config error.
        match TlsConnector::new(&TlsOptions::default()) {
            Ok(_) => {}
            Err(e) => assert!(e.message().contains("no system CA"), "{e}"),
        }
    }

    #[test]
    fn bad_ca_files_are_config_errors() {
        let missing = TlsOptions {
            trust_certs_file: Some("/nonexistent/ca.pem".into()),
            ..Default::default()
        };
        let e = TlsConnector::new(&missing).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.message().contains("/nonexistent/ca.pem"), "{e}");

        let empty = TlsOptions {
            trust_certs_file: Some(tmp("empty.pem", "not a certificate\n")),
            ..Default::default()
        };
        let e = TlsConnector::new(&empty).unwrap_err();
        assert!(e.message().contains("no PEM certificate"), "{e}");

        let garbage = TlsOptions {
            trust_certs_file: Some(tmp(
                "garbage.pem",
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
            )),
            ..Default::default()
        };
        assert_eq!(
            TlsConnector::new(&garbage).unwrap_err().kind(),
            ErrorKind::Config
        );
    }

    #[test]
    fn key_errors_never_show_the_key() {
        let p = tmp("bad.key", "SECRETKEYMATERIAL, but no PEM block\n");
        let e = load_key(&p).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.message().contains("no usable PEM private key"), "{e}");
        assert!(!e.message().contains("SECRETKEY"), "{e}");
        let e = load_key(Path::new("/nonexistent/k.pem")).unwrap_err();
        assert!(e.message().contains("cannot read TLS key file"), "{e}");
    }

    #[test]
    fn mtls_needs_both_files() {
        let o = TlsOptions {
            cert_file: Some("/x.pem".into()),
            allow_insecure_connection: true,
            ..Default::default()
        };
        let e = TlsConnector::new(&o).unwrap_err();
        assert!(
            e.message().contains("both tls_cert_file and tls_key_file"),
            "{e}"
        );
        let insecure = TlsOptions {
            allow_insecure_connection: true,
            ..Default::default()
        };
        assert!(TlsConnector::new(&insecure).is_ok());
    }

    #[test]
    fn alpn_is_added_to_a_copy() {
        let insecure = TlsOptions {
            allow_insecure_connection: true,
            ..Default::default()
        };
        let plain = TlsConnector::new(&insecure).unwrap();
        let h2 = plain.with_alpn(&[b"h2"]);
        assert_eq!(h2.config.alpn_protocols, vec![b"h2".to_vec()]);
        assert!(plain.config.alpn_protocols.is_empty());
    }

    #[test]
    fn handshake_errors_read_well() {
        let (peer, host) = ("pulsar+ssl://example.test:6651", "example.test");
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        );
        let e = handshake_error(peer, host, &io);
        assert_eq!(e.kind(), ErrorKind::Connect);
        assert!(e.message().contains("not signed by a trusted CA"), "{e}");
        assert!(e.message().contains(peer), "{e}");
        assert!(!e.is_retriable(), "a refused certificate is refused again");
        let io = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::NotValidForName),
        );
        let e = handshake_error(peer, host, &io);
        assert!(
            e.message().contains("not valid for host \"example.test\""),
            "{e}"
        );
    }
}
