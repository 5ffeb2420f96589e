//! What a secured Pravega cluster asks of a client, as pure logic: the controller URI's
//! scheme (`tcp://` or `tls://`), the credentials sent to the controller, and the delegation
//! tokens it hands out for the segment stores (when each must be renewed).
//!
//! Facts (the official clients, pravega-client-rust and the Java `ClientConfig`): a
//! `tls://` controller URI turns TLS on for the controller and for every segment store the
//! controller names (same host and port as `getURI` answers, TLS on top); credentials are a
//! method and a token sent as gRPC metadata `authorization: <method> <token>` on every
//! controller call (`Basic base64(user:password)` for the password handler); the segment
//! store checks a JWT from the controller's `getDelegationToken` (or the token fields of
//! `getCurrentSegments` / `getSegments`), passed in the commands' `delegationToken` fields.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use streamwire_core::error::{Error, ErrorKind, Result};

use crate::controller::ScopedStream;

/// A controller endpoint as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerUri {
    pub host: String,
    pub port: u16,
    /// `tls://`: the controller and the segment stores speak TLS.
    pub tls: bool,
}

impl ControllerUri {
    /// `tcp://host:port` or `tls://host:port` (the official clients' spellings).
    pub fn parse(uri: &str) -> Result<ControllerUri> {
        let (tls, rest) = if let Some(rest) = uri.strip_prefix("tcp://") {
            (false, rest)
        } else if let Some(rest) = uri.strip_prefix("tls://") {
            (true, rest)
        } else {
            return Err(Error::new(
                ErrorKind::Config,
                format!("Pravega controller URI {uri:?} must start with tcp:// or tls://"),
            ));
        };
        let bad = || {
            Error::new(
                ErrorKind::Config,
                format!("Pravega controller URI {uri:?} is not tcp://host:port or tls://host:port"),
            )
        };
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!("Pravega controller URI {uri:?} has no port"),
            )
        })?;
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(bad)?;
        if host.is_empty() || host.contains('/') || host.contains(',') {
            return Err(bad());
        }
        Ok(ControllerUri {
            host: host.to_string(),
            port,
            tls,
        })
    }

    /// The host to dial and to verify (an IPv6 address without its brackets).
    pub fn bare_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }

    /// The URI tonic dials. Always `http://`: with TLS our own connector wraps the TCP
    /// stream (tonic is built without its TLS features, and refuses `https://` then).
    pub fn grpc_endpoint(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }
}

/// Credentials for the controller: `authorization: <method> <token>`.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    method: String,
    token: String,
}

/// Never print the secret.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({} ..)", self.method)
    }
}

impl Credentials {
    /// The password handler's `Basic` credentials (as the official clients send them).
    pub fn basic(username: &str, password: &str) -> Result<Credentials> {
        if username.is_empty() {
            return Err(Error::invalid("a Pravega username must not be empty"));
        }
        if username.contains(':') {
            return Err(Error::invalid(
                "a Pravega username must not contain ':' (Basic credentials are user:password)",
            ));
        }
        let token =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        Ok(Credentials {
            method: "Basic".to_string(),
            token,
        })
    }

    /// Any other auth handler's method (e.g. `Bearer`) and its token.
    pub fn custom(method: &str, token: &str) -> Result<Credentials> {
        let method_ok = !method.is_empty()
            && method
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
        if !method_ok {
            return Err(Error::invalid(format!(
                "a Pravega auth method is a non-empty word of letters, digits, '-', '_' and \
                 '.', got {method:?}"
            )));
        }
        // gRPC metadata values are visible ASCII (and spaces); say so before a server sees it.
        if token.is_empty() || !token.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return Err(Error::invalid(
                "a Pravega auth token must be non-empty printable ASCII",
            ));
        }
        Ok(Credentials {
            method: method.to_string(),
            token: token.to_string(),
        })
    }

    pub fn method(&self) -> &str {
        &self.method
    }

    /// The `authorization` metadata value.
    pub fn header_value(&self) -> String {
        format!("{} {}", self.method, self.token)
    }
}

/// When the delegation token `token` expires: the JWT's `exp` claim (seconds since the
/// epoch). `None` for an empty token (auth off) or one that is not a JWT with `exp`: such a
/// token is kept until a segment store refuses it.
pub fn token_expiry(token: &str) -> Option<SystemTime> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?.as_u64()?;
    Some(UNIX_EPOCH + Duration::from_secs(exp))
}

/// How long before its expiry a token is renewed (the Java client's default threshold is
/// 5 s; a little more leaves room for a slow controller call).
pub const REFRESH_BEFORE: Duration = Duration::from_secs(10);

/// Whether a token expiring at `expiry` must be renewed at `now`.
pub fn needs_refresh(expiry: Option<SystemTime>, now: SystemTime) -> bool {
    match expiry {
        None => false,
        Some(at) => now + REFRESH_BEFORE >= at,
    }
}

/// Delegation tokens per stream, each with its expiry (pure: the caller asks the controller
/// when [`get`](Self::get) has nothing usable).
#[derive(Debug, Default)]
pub struct TokenCache {
    tokens: HashMap<ScopedStream, (String, Option<SystemTime>)>,
}

impl TokenCache {
    /// `stream`'s token unless it is missing or due for renewal at `now`.
    pub fn get(&self, stream: &ScopedStream, now: SystemTime) -> Option<&str> {
        match self.tokens.get(stream) {
            Some((token, expiry)) if !needs_refresh(*expiry, now) => Some(token),
            _ => None,
        }
    }

    /// Keep `token` (as the controller gave it) for `stream`.
    pub fn put(&mut self, stream: &ScopedStream, token: String) {
        let expiry = token_expiry(&token);
        self.tokens.insert(stream.clone(), (token, expiry));
    }

    /// Drop `stream`'s token (a segment store refused it).
    pub fn forget(&mut self, stream: &ScopedStream) {
        self.tokens.remove(stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_uris() {
        let u = ControllerUri::parse("tls://localhost:9090").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.tls), ("localhost", 9090, true));
        assert_eq!(u.grpc_endpoint(), "http://localhost:9090");
        assert!(!ControllerUri::parse("tcp://127.0.0.1:1").unwrap().tls);
        for bad in [
            "http://h:1",
            "pravega://h:1",
            "tls://h",
            "tls://:9090",
            "tcp://h:0",
            "tcp://h:x",
            "tcp://a:1,b:2",
            "tcp://h/x:1",
        ] {
            let e = ControllerUri::parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{bad}");
        }
        let e = ControllerUri::parse("https://h:1").unwrap_err();
        assert!(e.message().contains("tcp:// or tls://"), "{e}");
    }

    #[test]
    fn basic_credentials_are_the_official_header() {
        let c = Credentials::basic("admin", "1111_aaaa").unwrap();
        // base64("admin:1111_aaaa")
        assert_eq!(c.header_value(), "Basic YWRtaW46MTExMV9hYWFh");
        assert!(!format!("{c:?}").contains("YWRt"));
        assert!(Credentials::basic("", "x").is_err());
        assert!(Credentials::basic("a:b", "x").is_err());
    }

    #[test]
    fn custom_credentials_are_checked() {
        let c = Credentials::custom("Bearer", "abc.def").unwrap();
        assert_eq!(c.header_value(), "Bearer abc.def");
        assert_eq!(
            Credentials::custom("", "t").unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        assert!(Credentials::custom("Be arer", "t").is_err());
        assert!(Credentials::custom("Bearer", "").is_err());
        assert!(Credentials::custom("Bearer", "new\nline").is_err());
    }

    fn jwt(claims: &str) -> String {
        let b = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        format!("{}.{}.sig", b(r#"{"alg":"HS512"}"#), b(claims))
    }

    #[test]
    fn token_expiry_reads_the_exp_claim() {
        let t = jwt(r#"{"sub":"admin","aud":"segmentstore","iat":1569837384,"exp":1569837434}"#);
        assert_eq!(
            token_expiry(&t),
            Some(UNIX_EPOCH + Duration::from_secs(1569837434))
        );
        assert_eq!(token_expiry(""), None);
        assert_eq!(token_expiry("not-a-jwt"), None);
        assert_eq!(token_expiry(&jwt(r#"{"sub":"x"}"#)), None);
        assert_eq!(token_expiry("a.!!!.c"), None);
    }

    #[test]
    fn the_cache_renews_before_expiry_and_after_a_refusal() {
        let s = ScopedStream::new("sc", "st");
        let other = ScopedStream::new("sc", "other");
        let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
        let mut cache = TokenCache::default();
        assert_eq!(
            cache.get(&s, at(0)),
            None,
            "nothing yet: ask the controller"
        );
        let token = jwt(r#"{"sub":"u","exp":1000}"#);
        cache.put(&s, token.clone());
        assert_eq!(cache.get(&s, at(900)), Some(token.as_str()));
        assert_eq!(cache.get(&other, at(900)), None, "tokens are per stream");
        assert_eq!(
            cache.get(&s, at(995)),
            None,
            "due within REFRESH_BEFORE: renew"
        );
        assert_eq!(cache.get(&s, at(2000)), None, "expired");
        cache.forget(&s);
        assert_eq!(cache.get(&s, at(0)), None);
        // Auth off: an empty token, kept for good (no expiry to renew at).
        cache.put(&s, String::new());
        assert_eq!(cache.get(&s, at(u32::MAX as u64)), Some(""));
    }

    #[test]
    fn refresh_before_expiry() {
        let at = UNIX_EPOCH + Duration::from_secs(1000);
        assert!(!needs_refresh(None, at));
        assert!(!needs_refresh(Some(at), at - Duration::from_secs(60)));
        assert!(needs_refresh(Some(at), at - Duration::from_secs(5)));
        assert!(needs_refresh(Some(at), at + Duration::from_secs(5)));
    }
}
