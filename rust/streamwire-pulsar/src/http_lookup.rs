//! Lookups over HTTP, for `http://` and `https://` service URLs (as the Java and C++ clients
//! do them): many deployments hand out the brokers' (or the proxy's) web address only.
//!
//! Three REST calls stand in for the binary lookup commands:
//! - owner of a topic: `GET /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}` answers
//!   `{"brokerUrl": "pulsar://...", "brokerUrlTls": "pulsar+ssl://...", ...}`;
//! - partition count: `GET /admin/v2/{domain}/{tenant}/{ns}/{topic}/partitions` answers
//!   `{"partitions": N}`;
//! - topics of a namespace: `GET /admin/v2/namespaces/{tenant}/{ns}/topics?mode=PERSISTENT`.
//!
//! A broker that does not own the topic answers `307` with the owner's web address; redirects
//! are followed (bounded). Credentials travel as the `Authorization` header (`Bearer` for
//! token auth, `Basic` for basic auth); TLS client certificates and trust settings are the
//! client's own TLS options. One short HTTP/1.1 exchange per call: lookups are rare (once per
//! producer or consumer and per reconnect), so no connection is kept.

use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, HOST, LOCATION, USER_AGENT};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use streamwire_core::error::{Error, ErrorKind, Result};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::connection::ConnectionConfig;
use crate::namespace::TopicsMode;
use crate::service_url::BrokerAddr;
use crate::topic::TopicName;

/// Redirects one HTTP call follows (as the binary lookup's bound).
const MAX_REDIRECTS: usize = 20;

/// The web hosts of an `http(s)://` service URL.
#[derive(Debug)]
pub struct HttpService {
    /// `tls` means https.
    pub hosts: Vec<BrokerAddr>,
    next: AtomicUsize,
}

/// `field` of a JSON object answer, as a string (absent, null or empty: None).
fn json_str<'a>(v: &'a serde_json::Value, field: &str) -> Option<&'a str> {
    v.get(field)
        .and_then(|f| f.as_str())
        .filter(|s| !s.is_empty())
}

fn bad_json(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Protocol, format!("{what}: bad JSON: {e}"))
}

/// `Some(service)` when `url` is an `http://` or `https://` service URL.
pub fn parse_http_service(url: &str) -> Result<Option<HttpService>> {
    let trimmed = url.trim();
    let (tls, rest) = if let Some(r) = trimmed.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = trimmed.strip_prefix("http://") {
        (false, r)
    } else {
        return Ok(None);
    };
    let rest = rest.trim_end_matches('/');
    if rest.contains('/') {
        return Err(Error::new(
            ErrorKind::Config,
            format!("invalid service URL {url:?}: an HTTP service URL has no path"),
        ));
    }
    let default_port = if tls { 443 } else { 80 };
    // The host list has the binary URL's syntax; reuse its parser for one rule set.
    let as_binary = format!("pulsar://{rest}");
    let mut hosts = crate::service_url::ServiceUrl::parse(&as_binary)
        .map_err(|e| Error::new(ErrorKind::Config, e.message().replace(&as_binary, url)))?
        .hosts;
    for (h, part) in hosts.iter_mut().zip(rest.split(',')) {
        h.tls = tls;
        // No port given: the scheme's, not the binary protocol's 6650.
        if !part.trim().trim_start_matches('[').contains(':') || part.trim().ends_with(']') {
            h.port = default_port;
        }
    }
    Ok(Some(HttpService {
        hosts,
        next: AtomicUsize::new(0),
    }))
}

/// Percent-encode one path segment (RFC 3986 unreserved characters stay as they are).
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `{domain}/{tenant}/{ns}/{topic}` with the topic's local name encoded.
fn topic_path(topic: &TopicName) -> String {
    let domain = if topic.is_persistent() {
        "persistent"
    } else {
        "non-persistent"
    };
    format!(
        "{domain}/{}/{}/{}",
        topic.tenant(),
        topic.namespace(),
        encode_segment(topic.local_name())
    )
}

/// The request paths (pure, for tests).
pub fn lookup_path(topic: &TopicName, listener: Option<&str>) -> String {
    let mut p = format!("/lookup/v2/topic/{}", topic_path(topic));
    if let Some(l) = listener {
        p.push_str("?listenerName=");
        p.push_str(&encode_segment(l));
    }
    p
}

pub fn partitions_path(topic: &TopicName) -> String {
    // As the Java client: a topic that would be auto-created counts as existing.
    format!(
        "/admin/v2/{}/partitions?checkAllowAutoCreation=true",
        topic_path(topic)
    )
}

pub fn namespace_topics_path(namespace: &str, mode: TopicsMode) -> String {
    // The admin API's `mode` names the same choice as the binary command's enum.
    let mode = match mode {
        TopicsMode::Persistent => "PERSISTENT",
        TopicsMode::NonPersistent => "NON_PERSISTENT",
        TopicsMode::All => "ALL",
    };
    format!("/admin/v2/namespaces/{namespace}/topics?mode={mode}")
}

/// Where a redirect points: the host, and the path with its query.
fn parse_location(location: &str) -> Result<(BrokerAddr, String)> {
    let bad = || {
        Error::new(
            ErrorKind::Protocol,
            format!("the broker redirected to {location:?}, which is not an http(s) URL"),
        )
    };
    let (tls, rest) = if let Some(r) = location.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = location.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(bad());
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let service = parse_http_service(&format!(
        "{}://{authority}",
        if tls { "https" } else { "http" }
    ))
    .map_err(|_| bad())?
    .ok_or_else(bad)?;
    match service.hosts.into_iter().next() {
        Some(host) => Ok((host, path.to_owned())),
        None => Err(bad()),
    }
}

/// The engine error for a non-2xx, non-redirect answer.
fn status_error(status: StatusCode, body: &[u8], what: &str) -> Error {
    // Pulsar's REST errors are `{"reason": "..."}`; keep the first line of the reason.
    // Jetty's own error answers (to `Accept: application/json`) are
    // `{"message": "...", "status": "401", ...}` instead, and HTML pages otherwise.
    let json = serde_json::from_slice::<serde_json::Value>(body).ok();
    let field = |key: &str| {
        json.as_ref()
            .and_then(|v| v.get(key))
            .and_then(|r| r.as_str())
            .map(str::to_owned)
    };
    let pulsar_reason = field("reason");
    let from_resource = pulsar_reason.is_some();
    let reason = pulsar_reason
        .or_else(|| field("message"))
        .unwrap_or_else(|| plain_reason(body));
    let reason = reason
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("---"))
        .unwrap_or("")
        .trim_start_matches("Message: ")
        .to_owned();
    let kind = match status {
        // Pulsar answers 401 both when the credentials are refused (its authentication filter,
        // before any REST resource runs: Jetty's HTML error page) and when an authenticated
        // role lacks the permission (the resource's `{"reason": "Unauthorized to ..."}`). The
        // binary protocol tells the two apart (AuthenticationError / AuthorizationError), so
        // a JSON reason, which only a resource past authentication writes, is authorization.
        StatusCode::UNAUTHORIZED if from_resource => ErrorKind::Authorization,
        StatusCode::UNAUTHORIZED => ErrorKind::Authentication,
        StatusCode::FORBIDDEN => ErrorKind::Authorization,
        StatusCode::NOT_FOUND => ErrorKind::TopicNotFound,
        StatusCode::PRECONDITION_FAILED | StatusCode::BAD_REQUEST => ErrorKind::InvalidArgument,
        _ => ErrorKind::Server,
    };
    // A broker starting, unloading or in failover answers 5xx; the binary protocol's
    // ServiceNotReady is retried likewise.
    let retriable = status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS;
    Error::new(kind, format!("{what}: HTTP {status}: {reason}")).with_retriable(retriable)
}

/// The text of a non-JSON error body. Jetty's error pages (the answer of Pulsar's
/// authentication filter, and of the proxy's) are HTML whose first line is `<html>`: their
/// `<title>` ("Error 401 Authentication required") is the message.
fn plain_reason(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if let Some(start) = text.find("<title>") {
        let rest = &text[start + "<title>".len()..];
        if let Some(end) = rest.find("</title>") {
            return rest[..end].trim().to_owned();
        }
    }
    text.into_owned()
}

/// The `Authorization` header for the configured auth method.
async fn authorization(config: &ConnectionConfig) -> Result<Option<HeaderValue>> {
    let Some(auth) = &config.auth else {
        return Ok(None);
    };
    let value = match auth.method_name() {
        "token" => format!(
            "Bearer {}",
            String::from_utf8_lossy(&auth.fetch().await?).trim()
        ),
        "basic" => format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(auth.fetch().await?)
        ),
        // The client certificate is presented in the TLS handshake.
        "tls" => return Ok(None),
        other => {
            return Err(Error::new(
                ErrorKind::NotSupported,
                format!(
                    "auth method {other:?} cannot be sent over an http(s):// service URL; \
                     use a pulsar:// or pulsar+ssl:// service URL"
                ),
            ))
        }
    };
    HeaderValue::from_str(&value).map(Some).map_err(|_| {
        Error::new(
            ErrorKind::Authentication,
            "the credentials are not a valid header",
        )
    })
}

impl HttpService {
    fn first_host(&self) -> &BrokerAddr {
        let i = self.next.load(Ordering::Relaxed) % self.hosts.len();
        &self.hosts[i]
    }

    /// Owner of `topic`: its `pulsar://` (or `pulsar+ssl://` for https) broker URL.
    pub async fn lookup(&self, config: &ConnectionConfig, topic: &TopicName) -> Result<BrokerAddr> {
        let path = lookup_path(topic, config.listener_name.as_deref());
        let body = self.get(config, &path, "lookup").await?;
        // Pulsar's LookupData: brokerUrl, brokerUrlTls, httpUrl, nativeUrl.
        let data: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| bad_json(&format!("lookup of {topic}"), e))?;
        let field = if self.first_host().tls {
            "brokerUrlTls"
        } else {
            "brokerUrl"
        };
        let url = json_str(&data, field).ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                format!("lookup of {topic}: the answer names no {field}"),
            )
        })?;
        BrokerAddr::parse(url)
    }

    /// Number of partitions of `topic` (0: not partitioned).
    pub async fn partitions(&self, config: &ConnectionConfig, topic: &TopicName) -> Result<u32> {
        let body = self
            .get(config, &partitions_path(topic), "partition metadata")
            .await?;
        let meta: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| bad_json(&format!("partition metadata of {topic}"), e))?;
        let n = meta.get("partitions").and_then(|n| n.as_u64()).unwrap_or(0);
        u32::try_from(n).map_err(|_| bad_json(&format!("partition metadata of {topic}"), n))
    }

    /// Persistent topics of `namespace` (`tenant/ns`).
    pub async fn namespace_topics(
        &self,
        config: &ConnectionConfig,
        namespace: &str,
        mode: TopicsMode,
    ) -> Result<Vec<String>> {
        let body = self
            .get(
                config,
                &namespace_topics_path(namespace, mode),
                "topics of namespace",
            )
            .await?;
        let list: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| bad_json(&format!("topics of {namespace}"), e))?;
        let items = list
            .as_array()
            .ok_or_else(|| bad_json(&format!("topics of {namespace}"), "not a list"))?;
        items
            .iter()
            .map(|t| {
                t.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| bad_json(&format!("topics of {namespace}"), "not a name"))
            })
            .collect()
    }

    /// GET `path` from the service (each host in turn while they refuse connections),
    /// following redirects; the body of the 200 answer.
    async fn get(&self, config: &ConnectionConfig, path: &str, what: &str) -> Result<Bytes> {
        let auth = authorization(config).await?;
        let start = self.next.load(Ordering::Relaxed);
        let mut last_err = None;
        for i in 0..self.hosts.len() {
            let idx = (start + i) % self.hosts.len();
            match self
                .get_following(config, &auth, &self.hosts[idx], path, what)
                .await
            {
                Err(e) if e.kind() == ErrorKind::Connect => last_err = Some(e),
                other => {
                    self.next.store(idx, Ordering::Relaxed);
                    return other;
                }
            }
        }
        Err(last_err.unwrap_or_else(|| Error::new(ErrorKind::Config, "service URL has no hosts")))
    }

    async fn get_following(
        &self,
        config: &ConnectionConfig,
        auth: &Option<HeaderValue>,
        host: &BrokerAddr,
        path: &str,
        what: &str,
    ) -> Result<Bytes> {
        let mut host = host.clone();
        let mut path = path.to_owned();
        for _ in 0..=MAX_REDIRECTS {
            let (status, location, body) = tokio::time::timeout(
                config.operation_timeout,
                exchange(config, auth, &host, &path),
            )
            .await
            .map_err(|_| {
                Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "{what}: no answer from http{}://{} within {:?}",
                        if host.tls { "s" } else { "" },
                        host.host_port(),
                        config.operation_timeout
                    ),
                )
            })??;
            if status.is_success() {
                return Ok(body);
            }
            if status.is_redirection() {
                let loc = location.ok_or_else(|| {
                    Error::new(
                        ErrorKind::Protocol,
                        format!("{what}: HTTP {status} without a Location"),
                    )
                })?;
                (host, path) = parse_location(&loc)?;
                continue;
            }
            return Err(status_error(status, &body, what));
        }
        Err(Error::new(
            ErrorKind::Server,
            format!("{what} was redirected more than {MAX_REDIRECTS} times"),
        ))
    }
}

/// One GET over a fresh connection: (status, Location header, body).
async fn exchange(
    config: &ConnectionConfig,
    auth: &Option<HeaderValue>,
    host: &BrokerAddr,
    path: &str,
) -> Result<(StatusCode, Option<String>, Bytes)> {
    let connect_err = |e: std::io::Error| {
        Error::new(
            ErrorKind::Connect,
            format!("cannot connect to {}: {e}", host.host_port()),
        )
    };
    let tcp = tokio::time::timeout(config.connect_timeout, TcpStream::connect(host.host_port()))
        .await
        .map_err(|_| {
            Error::new(
                ErrorKind::Connect,
                format!(
                    "connecting to {} took longer than {:?}",
                    host.host_port(),
                    config.connect_timeout
                ),
            )
        })?
        .map_err(connect_err)?;
    tcp.set_nodelay(true).map_err(connect_err)?;
    let mut req = Request::get(path)
        .header(HOST, host.host_port())
        .header(ACCEPT, "application/json")
        .header(USER_AGENT, config.client_version.as_str());
    if let Some(a) = auth {
        req = req.header(AUTHORIZATION, a.clone());
    }
    let req = req
        .body(Empty::<Bytes>::new())
        .map_err(|e| Error::invalid(format!("cannot build the request for {path}: {e}")))?;
    if host.tls {
        let tls = config.tls.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                "an https:// service URL needs TLS settings",
            )
        })?;
        let stream = tls.connect(&host.host, &host.to_string(), tcp).await?;
        send(stream, req, host).await
    } else {
        send(tcp, req, host).await
    }
}

async fn send<S>(
    io: S,
    req: Request<Empty<Bytes>>,
    host: &BrokerAddr,
) -> Result<(StatusCode, Option<String>, Bytes)>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let http_err = |e: hyper::Error| {
        Error::new(
            ErrorKind::Disconnected,
            format!("HTTP exchange with {} failed: {e}", host.host_port()),
        )
        .with_retriable(true)
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(http_err)?;
    // The connection task ends when the exchange is over (the sender is dropped).
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let resp = sender.send_request(req).await.map_err(http_err)?;
    let status = resp.status();
    let location = resp
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(http_err)?
        .to_bytes();
    drop(sender);
    driver.abort();
    Ok((status, location, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_http_service_urls() {
        assert!(parse_http_service("pulsar://h:6650").unwrap().is_none());
        let s = parse_http_service("http://127.0.0.1:8080/")
            .unwrap()
            .unwrap();
        assert_eq!(s.hosts[0].host_port(), "127.0.0.1:8080");
        assert!(!s.hosts[0].tls);
        let s = parse_http_service("https://a,b:8443").unwrap().unwrap();
        assert_eq!(s.hosts[0].host_port(), "a:443");
        assert_eq!(s.hosts[1].host_port(), "b:8443");
        assert!(s.hosts[1].tls);
        let s = parse_http_service("http://[::1]").unwrap().unwrap();
        assert_eq!(s.hosts[0].port, 80);
        for bad in [
            "http://",
            "http://h:x",
            "http://h:8080/admin",
            "http://a,,b",
        ] {
            let e = parse_http_service(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{bad}");
            assert!(e.to_string().contains(bad), "{e}");
        }
    }

    #[test]
    fn builds_the_java_clients_paths() {
        let t = TopicName::parse("persistent://public/default/a b%").unwrap();
        assert_eq!(
            lookup_path(&t, None),
            "/lookup/v2/topic/persistent/public/default/a%20b%25"
        );
        assert_eq!(
            lookup_path(&t, Some("external")),
            "/lookup/v2/topic/persistent/public/default/a%20b%25?listenerName=external"
        );
        let t = TopicName::parse("non-persistent://t/n/x-partition-3").unwrap();
        assert_eq!(
            partitions_path(&t),
            "/admin/v2/non-persistent/t/n/x-partition-3/partitions?checkAllowAutoCreation=true"
        );
        assert_eq!(
            namespace_topics_path("t/n", TopicsMode::Persistent),
            "/admin/v2/namespaces/t/n/topics?mode=PERSISTENT"
        );
        assert_eq!(
            namespace_topics_path("t/n", TopicsMode::NonPersistent),
            "/admin/v2/namespaces/t/n/topics?mode=NON_PERSISTENT"
        );
        assert_eq!(
            namespace_topics_path("t/n", TopicsMode::All),
            "/admin/v2/namespaces/t/n/topics?mode=ALL"
        );
    }

    #[test]
    fn follows_redirect_locations() {
        let (h, p) =
            parse_location("http://127.0.0.1:8081/lookup/v2/topic/persistent/a/b/c?x=1").unwrap();
        assert_eq!(h.host_port(), "127.0.0.1:8081");
        assert!(!h.tls);
        assert_eq!(p, "/lookup/v2/topic/persistent/a/b/c?x=1");
        let (h, _) = parse_location("https://b.example").unwrap();
        assert_eq!((h.port, h.tls), (443, true));
        assert_eq!(
            parse_location("/relative").unwrap_err().kind(),
            ErrorKind::Protocol
        );
    }

    #[test]
    fn maps_statuses_to_error_kinds() {
        let body = br#"{"reason":"\n --- An unexpected error occurred in the server ---\n\nMessage: the broker do not have bogus listener\n\nStacktrace:\n..."}"#;
        let e = status_error(StatusCode::INTERNAL_SERVER_ERROR, body, "lookup of t");
        assert_eq!(e.kind(), ErrorKind::Server);
        assert!(e.is_retriable());
        assert!(
            e.to_string()
                .ends_with("the broker do not have bogus listener"),
            "{e}"
        );
        let e = status_error(StatusCode::UNAUTHORIZED, b"", "lookup");
        assert_eq!(e.kind(), ErrorKind::Authentication);
        assert!(!e.is_retriable());
        // Refused credentials: the authentication filter's Jetty answer, JSON or HTML.
        let jetty = b"{\n\"servlet\":\"x\",\n\"message\":\"Authentication required\",\n\"status\":\"401\"\n}";
        let e = status_error(StatusCode::UNAUTHORIZED, jetty, "lookup");
        assert_eq!(e.kind(), ErrorKind::Authentication);
        assert!(
            e.to_string()
                .ends_with("HTTP 401 Unauthorized: Authentication required"),
            "{e}"
        );
        // The HTML page (its title is the message).
        let page = b"<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html\"/>\n\
            <title>Error 401 Authentication required</title>\n</head>\n<body>...</body></html>";
        let e = status_error(StatusCode::UNAUTHORIZED, page, "lookup");
        assert_eq!(e.kind(), ErrorKind::Authentication);
        assert!(
            e.to_string()
                .ends_with("HTTP 401 Unauthorized: Error 401 Authentication required"),
            "{e}"
        );
        // An authenticated role without the permission: the REST resource's JSON reason.
        let body = br#"{"reason":"Unauthorized to validateTopicOperation for operation [LOOKUP] on topic [persistent://public/default/t]"}"#;
        let e = status_error(StatusCode::UNAUTHORIZED, body, "lookup");
        assert_eq!(e.kind(), ErrorKind::Authorization);
        assert!(!e.is_retriable());
        assert!(
            e.to_string()
                .contains("Unauthorized to validateTopicOperation"),
            "{e}"
        );
        assert_eq!(
            status_error(
                StatusCode::NOT_FOUND,
                br#"{"reason":"Topic not found"}"#,
                "x"
            )
            .kind(),
            ErrorKind::TopicNotFound
        );
    }
}
