//! `Controller`: typed async calls to the controller over one gRPC channel (tonic), each
//! bounded by a timeout. Messages are built and answers mapped in `types` (pure); this file
//! only sends them.

use std::future::Future;
use std::time::Duration;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::tls::{TlsConnector, TlsOptions};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

use super::admin::{self, StreamSettings};
use super::proto;
use super::proto::controller_service_client::ControllerServiceClient;
use super::transport::{connect_error, AuthHeader, TlsGrpcConnector};
use super::txn::{self, CreatedTxn, TxnState};
use super::types::{self, *};
use crate::security::{ControllerUri, Credentials};

/// How long one controller call may take unless the caller says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// `tcp://host:port` or `tls://host:port` → the gRPC endpoint tonic dials (`http://host:port`;
/// TLS, when asked for, is our connector's, see `transport`).
pub fn endpoint_of(uri: &str) -> Result<String> {
    Ok(ControllerUri::parse(uri)?.grpc_endpoint())
}

/// The controller's gRPC client with our `authorization` interceptor on every call.
type Grpc = ControllerServiceClient<InterceptedService<Channel, AuthHeader>>;

/// A failed call as our error. A status the channel made up (no answer from the controller:
/// the connection failed, e.g. plain HTTP/2 to a TLS port) carries its cause as a source;
/// that is a connection error, with the cause in words, not a server's "Unknown".
fn call_error(what: &str, status: &tonic::Status) -> Error {
    use std::error::Error as _;
    let Some(mut source) = status.source() else {
        return status_error(what, status);
    };
    let mut text = source.to_string();
    while let Some(next) = source.source() {
        text.push_str(": ");
        text.push_str(&next.to_string());
        source = next;
    }
    Error::new(
        ErrorKind::Connect,
        format!("controller {what}: the connection failed ({text})"),
    )
}

/// A connection to a Pravega controller. Cheap to clone (one shared HTTP/2 channel).
#[derive(Clone)]
pub struct Controller {
    client: Grpc,
    timeout: Duration,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Controller {
    /// Connect to `tcp://host:port` (or `tls://host:port`, over `tls`: the system's roots
    /// when it is `None`), sending `credentials` with every call; both the connection and
    /// each later call are bounded by `timeout`.
    pub async fn connect(
        uri: &str,
        timeout: Duration,
        tls: Option<&TlsConnector>,
        credentials: Option<&Credentials>,
    ) -> Result<Controller> {
        let parsed = ControllerUri::parse(uri)?;
        let auth = AuthHeader::new(credentials)?;
        let endpoint = Endpoint::from_shared(parsed.grpc_endpoint())
            .map_err(|e| Error::new(ErrorKind::Config, format!("controller URI {uri:?}: {e}")))?
            .connect_timeout(timeout)
            .tcp_nodelay(true);
        let connecting = async {
            if parsed.tls {
                let tls = match tls {
                    Some(t) => t.clone(),
                    None => TlsConnector::new(&TlsOptions::default())?,
                };
                // The origin says https (the :scheme of each call); the connector does TLS.
                let origin = format!("https://{}:{}", parsed.host, parsed.port);
                let endpoint = endpoint.origin(origin.parse().map_err(|e| {
                    Error::new(ErrorKind::Config, format!("controller URI {uri:?}: {e}"))
                })?);
                let connector = TlsGrpcConnector::new(&tls, parsed.bare_host(), parsed.port);
                endpoint
                    .connect_with_connector(connector)
                    .await
                    .map_err(|e| connect_error(uri, &e))
            } else {
                endpoint.connect().await.map_err(|e| connect_error(uri, &e))
            }
        };
        let channel = match tokio::time::timeout(timeout, connecting).await {
            Err(_) => return Err(Error::timeout(format!("connecting to controller {uri}"))),
            Ok(r) => r?,
        };
        Ok(Controller {
            client: ControllerServiceClient::with_interceptor(channel, auth),
            timeout,
        })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn call<T, F, Fut>(&self, what: &'static str, f: F) -> Result<T>
    where
        F: FnOnce(Grpc) -> Fut,
        Fut: Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
    {
        match tokio::time::timeout(self.timeout, f(self.client.clone())).await {
            Err(_) => Err(Error::timeout(format!("controller {what}"))),
            Ok(Err(status)) => Err(call_error(what, &status)),
            Ok(Ok(r)) => Ok(r.into_inner()),
        }
    }

    /// `Ok(true)` when created, `Ok(false)` when it existed already.
    pub async fn create_scope(&self, scope: &str) -> Result<bool> {
        let req = proto::ScopeInfo {
            scope: scope.to_string(),
        };
        let r = self
            .call(
                "createScope",
                |mut c| async move { c.create_scope(req).await },
            )
            .await?;
        types::scope_created(r)
    }

    pub async fn check_scope_exists(&self, scope: &str) -> Result<bool> {
        let req = proto::ScopeInfo {
            scope: scope.to_string(),
        };
        let r = self
            .call("checkScopeExists", |mut c| async move {
                c.check_scope_exists(req).await
            })
            .await?;
        Ok(r.exists)
    }

    /// `Ok(false)` when there was no such scope.
    pub async fn delete_scope(&self, scope: &str) -> Result<bool> {
        let req = proto::ScopeInfo {
            scope: scope.to_string(),
        };
        let r = self
            .call(
                "deleteScope",
                |mut c| async move { c.delete_scope(req).await },
            )
            .await?;
        types::scope_deleted(r)
    }

    /// The names of the streams of `scope` (every page of the listing).
    pub async fn list_streams(&self, scope: &str) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let mut token = String::new();
        loop {
            let req = proto::StreamsInScopeRequest {
                scope: Some(proto::ScopeInfo {
                    scope: scope.to_string(),
                }),
                continuation_token: Some(proto::ContinuationToken {
                    token: token.clone(),
                }),
            };
            let r = self
                .call("listStreamsInScope", |mut c| async move {
                    c.list_streams_in_scope(req).await
                })
                .await?;
            let (page, next) = types::streams_page(scope, r)?;
            if page.is_empty() || next.is_empty() || next == token {
                names.extend(page);
                return Ok(names);
            }
            names.extend(page);
            token = next;
        }
    }

    /// `Ok(true)` when created, `Ok(false)` when it existed already.
    pub async fn create_stream(
        &self,
        stream: &ScopedStream,
        policy: ScalingPolicy,
    ) -> Result<bool> {
        let req = stream_config(stream, policy)?;
        let r = self
            .call(
                "createStream",
                |mut c| async move { c.create_stream(req).await },
            )
            .await?;
        types::stream_created(r)
    }

    /// `Ok(true)` when created, `Ok(false)` when it existed already (its configuration is
    /// then left as it was).
    pub async fn create_stream_with(
        &self,
        stream: &ScopedStream,
        settings: &StreamSettings,
    ) -> Result<bool> {
        let req = admin::config_message(stream, settings)?;
        let r = self
            .call(
                "createStream",
                |mut c| async move { c.create_stream(req).await },
            )
            .await?;
        types::stream_created(r)
    }

    /// The stream's configuration as the controller keeps it.
    pub async fn get_stream_config(&self, stream: &ScopedStream) -> Result<StreamSettings> {
        let req = stream.info();
        let r = self
            .call("getStreamConfiguration", |mut c| async move {
                c.get_stream_configuration(req).await
            })
            .await;
        match r {
            Ok(m) => admin::settings_of(&m),
            // The controller fails the call (not a status) for a stream it does not have.
            Err(e) if !self.check_stream_exists(stream).await.unwrap_or(true) => Err(Error::new(
                ErrorKind::TopicNotFound,
                format!("stream {stream} does not exist ({e})"),
            )),
            Err(e) => Err(e),
        }
    }

    /// Replace the stream's whole configuration by `settings` (the segment count of a fixed
    /// policy is a minimum: the stream scales up to it, never down).
    pub async fn update_stream(
        &self,
        stream: &ScopedStream,
        settings: &StreamSettings,
    ) -> Result<()> {
        let req = admin::config_message(stream, settings)?;
        let r = self
            .call(
                "updateStream",
                |mut c| async move { c.update_stream(req).await },
            )
            .await?;
        admin::stream_updated("updateStream", r)
    }

    /// Drop the stream's data before `positions` (segment id → offset, a stream cut).
    pub async fn truncate_stream(
        &self,
        stream: &ScopedStream,
        positions: &std::collections::BTreeMap<i64, i64>,
    ) -> Result<()> {
        let req = admin::cut_message(stream, positions);
        let r = self
            .call("truncateStream", |mut c| async move {
                c.truncate_stream(req).await
            })
            .await?;
        admin::stream_updated("truncateStream", r)
    }

    /// Every scope's name (every page of the listing), Pravega's own left out.
    pub async fn list_scopes(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let mut token = String::new();
        loop {
            let req = proto::ScopesRequest {
                continuation_token: Some(proto::ContinuationToken {
                    token: token.clone(),
                }),
            };
            let r = self
                .call(
                    "listScopes",
                    |mut c| async move { c.list_scopes(req).await },
                )
                .await?;
            let (page, next) = admin::scopes_page(r);
            let done = page.is_empty() || next.is_empty() || next == token;
            names.extend(page.into_iter().filter(|n| admin::is_user_name(n)));
            if done {
                return Ok(names);
            }
            token = next;
        }
    }

    /// The names of the streams of `scope` that carry `tag` (every page of the listing).
    pub async fn list_streams_with_tag(&self, scope: &str, tag: &str) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let mut token = String::new();
        loop {
            let req = proto::StreamsInScopeWithTagRequest {
                scope: Some(proto::ScopeInfo {
                    scope: scope.to_string(),
                }),
                tag: tag.to_string(),
                continuation_token: Some(proto::ContinuationToken {
                    token: token.clone(),
                }),
            };
            let r = self
                .call("listStreamsInScopeForTag", |mut c| async move {
                    c.list_streams_in_scope_for_tag(req).await
                })
                .await?;
            let (page, next) = types::streams_page(scope, r)?;
            let done = page.is_empty() || next.is_empty() || next == token;
            names.extend(page);
            if done {
                return Ok(names);
            }
            token = next;
        }
    }

    pub async fn check_stream_exists(&self, stream: &ScopedStream) -> Result<bool> {
        let req = stream.info();
        let r = self
            .call("checkStreamExists", |mut c| async move {
                c.check_stream_exists(req).await
            })
            .await?;
        Ok(r.exists)
    }

    pub async fn seal_stream(&self, stream: &ScopedStream) -> Result<()> {
        let req = stream.info();
        let r = self
            .call(
                "sealStream",
                |mut c| async move { c.seal_stream(req).await },
            )
            .await?;
        types::stream_sealed(r)
    }

    /// `Ok(false)` when there was no such stream; a stream must be sealed first.
    pub async fn delete_stream(&self, stream: &ScopedStream) -> Result<bool> {
        let req = stream.info();
        let r = self
            .call(
                "deleteStream",
                |mut c| async move { c.delete_stream(req).await },
            )
            .await?;
        types::stream_deleted(r)
    }

    /// The stream's open segments, in key order.
    pub async fn get_current_segments(&self, stream: &ScopedStream) -> Result<CurrentSegments> {
        let req = stream.info();
        let r = self
            .call("getCurrentSegments", |mut c| async move {
                c.get_current_segments(req).await
            })
            .await?;
        types::current_segments(stream, r)
    }

    /// Each segment's offset at `timestamp` (ms since the epoch; 0 = the stream's head).
    pub async fn get_segments(&self, stream: &ScopedStream, timestamp: i64) -> Result<StreamCut> {
        let req = proto::GetSegmentsRequest {
            stream_info: Some(stream.info()),
            timestamp,
        };
        let r = self
            .call(
                "getSegments",
                |mut c| async move { c.get_segments(req).await },
            )
            .await?;
        Ok(types::stream_cut(r))
    }

    /// The segments that replaced `segment` after a scale (empty while it is open).
    pub async fn get_successors(&self, segment: &Segment) -> Result<Vec<Successor>> {
        let req = segment.id_message();
        let r = self
            .call("getSegmentsImmediatelyFollowing", |mut c| async move {
                c.get_segments_immediately_following(req).await
            })
            .await?;
        Ok(types::successors(&segment.stream, r))
    }

    /// The segment store that owns segment `id` of `stream`.
    pub async fn get_uri(&self, stream: &ScopedStream, id: i64) -> Result<NodeUri> {
        let req = segment_id(stream, id);
        let r = self
            .call("getURI", |mut c| async move { c.get_uri(req).await })
            .await?;
        types::node_uri(r)
    }

    pub async fn is_segment_valid(&self, stream: &ScopedStream, id: i64) -> Result<bool> {
        let req = segment_id(stream, id);
        let r = self
            .call("isSegmentValid", |mut c| async move {
                c.is_segment_valid(req).await
            })
            .await?;
        Ok(r.response)
    }

    /// The token the segment store wants for `stream` (empty when auth is off).
    pub async fn get_delegation_token(&self, stream: &ScopedStream) -> Result<String> {
        let req = stream.info();
        let r = self
            .call("getDelegationToken", |mut c| async move {
                c.get_delegation_token(req).await
            })
            .await?;
        Ok(r.delegation_token)
    }

    /// Start replacing `sealed` segments by segments over `new_ranges` (`(low, high)`);
    /// returns the epoch to pass to [`check_scale`](Self::check_scale).
    pub async fn scale(
        &self,
        stream: &ScopedStream,
        sealed: &[i64],
        new_ranges: &[(f64, f64)],
        timestamp_ms: i64,
    ) -> Result<i32> {
        let req = scale_request(stream, sealed, new_ranges, timestamp_ms)?;
        let r = self
            .call("scale", |mut c| async move { c.scale(req).await })
            .await?;
        types::scale_started(r)
    }

    /// `Ok(true)` once the scale started at `epoch` is done.
    pub async fn check_scale(&self, stream: &ScopedStream, epoch: i32) -> Result<bool> {
        let req = proto::ScaleStatusRequest {
            stream_info: Some(stream.info()),
            epoch,
        };
        let r = self
            .call(
                "checkScale",
                |mut c| async move { c.check_scale(req).await },
            )
            .await?;
        types::scale_done(r)
    }
}

/// Transactions (`txn` builds the messages and reads the answers).
impl Controller {
    /// Open a transaction on `stream` that lives `lease_ms` without a ping.
    pub async fn create_transaction(
        &self,
        stream: &ScopedStream,
        lease_ms: i64,
    ) -> Result<CreatedTxn> {
        let req = txn::create_request(stream, lease_ms);
        let r = self
            .call("createTransaction", |mut c| async move {
                c.create_transaction(req).await
            })
            .await
            .map_err(|e| txn::create_refused(e, lease_ms))?;
        txn::created(stream, r)
    }

    /// Renew transaction `id`'s lease for `lease_ms`.
    pub async fn ping_transaction(
        &self,
        stream: &ScopedStream,
        id: u128,
        lease_ms: i64,
    ) -> Result<()> {
        let req = txn::ping_request(stream, id, lease_ms);
        let r = self
            .call("pingTransaction", |mut c| async move {
                c.ping_transaction(req).await
            })
            .await?;
        txn::pinged(id, r)
    }

    /// Ask for transaction `id` to be committed (it is COMMITTING when this returns);
    /// `writer_id` and `timestamp` (ms, `i64::MIN`: none) feed the stream's watermarks.
    pub async fn commit_transaction(
        &self,
        stream: &ScopedStream,
        id: u128,
        writer_id: &str,
        timestamp: i64,
    ) -> Result<()> {
        let req = txn::txn_request(stream, id, writer_id, timestamp);
        let r = self
            .call("commitTransaction", |mut c| async move {
                c.commit_transaction(req).await
            })
            .await?;
        txn::txn_status("commitTransaction", id, r)
    }

    /// Ask for transaction `id` to be aborted.
    pub async fn abort_transaction(&self, stream: &ScopedStream, id: u128) -> Result<()> {
        let req = txn::txn_request(stream, id, "", i64::MIN);
        let r = self
            .call("abortTransaction", |mut c| async move {
                c.abort_transaction(req).await
            })
            .await?;
        txn::txn_status("abortTransaction", id, r)
    }

    /// Transaction `id`'s state now.
    pub async fn transaction_state(&self, stream: &ScopedStream, id: u128) -> Result<TxnState> {
        let req = txn::txn_request(stream, id, "", i64::MIN);
        let r = self
            .call("checkTransactionState", |mut c| async move {
                c.check_transaction_state(req).await
            })
            .await?;
        txn::state(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_the_channel_made_up_is_a_connect_error_with_its_cause() {
        // No answer from the controller: tonic's status carries the I/O failure as its source.
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let status = tonic::Status::from_error(Box::new(io));
        let e = call_error("checkScopeExists", &status);
        assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
        assert!(e.message().contains("reset by peer"), "{e}");
        // The controller's own answer keeps its code's meaning.
        let e = call_error(
            "createScope",
            &tonic::Status::unauthenticated("bad password"),
        );
        assert_eq!(e.kind(), ErrorKind::Authentication, "{e}");
    }
}
