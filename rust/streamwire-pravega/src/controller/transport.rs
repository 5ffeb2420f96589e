//! How the controller's gRPC channel reaches the controller: plain TCP, or TLS from the core
//! crate's connector (ALPN `h2`, the controller's host as the verified name) handed to tonic
//! as a custom connector — tonic itself is built without TLS features, so one rustls set-up
//! serves the controller, the segment stores and Pulsar alike. Credentials ride on every call
//! as the `authorization` metadata (an interceptor).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::transport::Uri;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::tls::{TlsConnector, TlsStream};

use crate::security::Credentials;

/// Dials the controller over TLS (a tower `Service<Uri>`, as tonic's
/// `connect_with_connector` wants it).
#[derive(Clone)]
pub struct TlsGrpcConnector {
    tls: TlsConnector,
    host: String,
    port: u16,
}

impl TlsGrpcConnector {
    /// `tls` as the user configured it; `h2` is offered by ALPN on top (grpc-java's Netty
    /// server refuses a TLS connection that did not negotiate HTTP/2).
    pub fn new(tls: &TlsConnector, host: &str, port: u16) -> TlsGrpcConnector {
        TlsGrpcConnector {
            tls: tls.with_alpn(&[b"h2"]),
            host: host.to_string(),
            port,
        }
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<TlsStream>>> + Send>>;

impl tower_service::Service<Uri> for TlsGrpcConnector {
    type Response = TokioIo<TlsStream>;
    type Error = Error;
    type Future = Connecting;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<()>> {
        Poll::Ready(Ok(()))
    }

    // The Uri is the endpoint's (the same host and port): the connector was made for it.
    fn call(&mut self, _uri: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let peer = format!("controller tls://{}:{}", this.host, this.port);
            let tcp = TcpStream::connect((this.host.as_str(), this.port))
                .await
                .map_err(|e| Error::new(ErrorKind::Connect, format!("{peer}: {e}")))?;
            let _ = tcp.set_nodelay(true);
            let tls = this.tls.connect(&this.host, &peer, tcp).await?;
            Ok(TokioIo::new(tls))
        })
    }
}

/// Adds `authorization: <method> <token>` to every controller call (nothing when the
/// client has no credentials).
#[derive(Clone, Default)]
pub struct AuthHeader(Option<AsciiMetadataValue>);

impl AuthHeader {
    pub fn new(credentials: Option<&Credentials>) -> Result<AuthHeader> {
        match credentials {
            None => Ok(AuthHeader(None)),
            Some(c) => MetadataValue::try_from(c.header_value())
                .map(|v| AuthHeader(Some(v)))
                .map_err(|_| {
                    Error::invalid(format!(
                        "Pravega {} credentials are not valid gRPC metadata",
                        c.method()
                    ))
                }),
        }
    }
}

impl tonic::service::Interceptor for AuthHeader {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> std::result::Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            request.metadata_mut().insert("authorization", v.clone());
        }
        Ok(request)
    }
}

/// A tonic connection error in words: the TLS or TCP failure inside it, not "transport
/// error".
pub fn connect_error(uri: &str, e: &tonic::transport::Error) -> Error {
    use std::error::Error as _;
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(ours) = s.downcast_ref::<Error>() {
            return ours.clone();
        }
        source = s.source();
    }
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    Error::new(ErrorKind::Connect, format!("controller {uri}: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    #[test]
    fn credentials_ride_on_every_call_and_nothing_without_them() {
        let creds = Credentials::basic("admin", "1111_aaaa").unwrap();
        let mut with = AuthHeader::new(Some(&creds)).unwrap();
        let req = with.call(tonic::Request::new(())).unwrap();
        assert_eq!(
            req.metadata().get("authorization").unwrap(),
            "Basic YWRtaW46MTExMV9hYWFh"
        );
        let mut without = AuthHeader::new(None).unwrap();
        let req = without.call(tonic::Request::new(())).unwrap();
        assert!(req.metadata().get("authorization").is_none());
    }
}
