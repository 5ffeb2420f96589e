//! The Connect/Connected exchange (and authentication data for it).

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::protocol::{self, pb, FrameDecoder};
use crate::server_error::server_error;
use crate::service_url::BrokerAddr;

/// The protocol version we advertise.
pub const PROTOCOL_VERSION: i32 = protocol::CLIENT_PROTOCOL_VERSION;

/// Feature flags announced in CONNECT: the codec's, plus auth refresh (the connection
/// answers AUTH_CHALLENGE with fresh credentials instead of being dropped).
pub(super) fn feature_flags() -> pb::FeatureFlags {
    let mut flags = protocol::commands::codec_feature_flags();
    flags.supports_auth_refresh = Some(true);
    flags
}

/// Send Connect, wait for Connected. Returns the stream, the broker's Connected, and any bytes
/// read past it (the broker may pipeline frames right after Connected).
pub(super) async fn handshake<S>(
    mut stream: S,
    physical: &BrokerAddr,
    proxy_to: Option<&BrokerAddr>,
    config: &super::ConnectionConfig,
) -> Result<(S, pb::CommandConnected, BytesMut)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (method, data) = match &config.auth {
        Some(a) => (
            Some(a.method_name()),
            Some(a.fetch().await.map_err(|e| e.context(physical))?),
        ),
        None => (None, None),
    };
    let proxy_url = proxy_to.map(|b| b.host_port());
    let cmd = protocol::commands::connect(
        &config.client_version,
        PROTOCOL_VERSION,
        method,
        data,
        feature_flags(),
        proxy_url.as_deref(),
    );
    let mut out = BytesMut::new();
    protocol::encode_command(&cmd, &mut out);
    let lost = |e: std::io::Error| {
        Error::new(
            ErrorKind::Connect,
            format!("handshake with {physical} failed: {e}"),
        )
    };
    stream.write_all(&out).await.map_err(lost)?;
    let mut decoder = FrameDecoder::new(protocol::DEFAULT_MAX_FRAME_SIZE);
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        let decoded = decoder.decode(&mut buf).map_err(|e| {
            Error::new(
                ErrorKind::Protocol,
                format!("bad handshake reply from {physical}: {e}"),
            )
        })?;
        if let Some(frame) = decoded {
            use pb::base_command::Type;
            match frame.command.r#type() {
                Type::Connected => {
                    let connected = frame.command.connected.map(|c| *c).unwrap_or_default();
                    return Ok((stream, connected, buf));
                }
                Type::Error => {
                    let e = frame.command.error.unwrap_or_default();
                    return Err(server_error(e.error, &e.message)
                        .context(format!("handshake with {physical}")));
                }
                Type::AuthChallenge => {
                    // Multi-step methods continue here; token/basic brokers never ask.
                    let Some(auth) = &config.auth else {
                        return Err(Error::new(
                            ErrorKind::Authentication,
                            format!("{physical} asked for credentials but no auth is configured"),
                        ));
                    };
                    let challenge = frame
                        .command
                        .auth_challenge
                        .and_then(|c| c.challenge)
                        .and_then(|d| d.auth_data)
                        .unwrap_or_default();
                    let answer = auth
                        .respond(challenge)
                        .await
                        .map_err(|e| e.context(physical))?;
                    let mut o = BytesMut::new();
                    let cmd = protocol::commands::auth_response(
                        &config.client_version,
                        PROTOCOL_VERSION,
                        auth.method_name(),
                        answer,
                    );
                    protocol::encode_command(&cmd, &mut o);
                    stream.write_all(&o).await.map_err(lost)?;
                    continue;
                }
                Type::Ping => {
                    let mut o = BytesMut::new();
                    protocol::encode_command(&protocol::commands::pong(), &mut o);
                    stream.write_all(&o).await.map_err(lost)?;
                    continue;
                }
                other => {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!("unexpected {other:?} from {physical} during handshake"),
                    ));
                }
            }
        }
        let n = stream.read_buf(&mut buf).await.map_err(lost)?;
        if n == 0 {
            // Brokers that reject authentication often just close the socket.
            let kind = if config.auth.is_some() {
                ErrorKind::Authentication
            } else {
                ErrorKind::Connect
            };
            return Err(Error::new(
                kind,
                format!("{physical} closed the connection during the handshake"),
            ));
        }
    }
}
