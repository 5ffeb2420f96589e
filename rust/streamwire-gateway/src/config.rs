//! Gateway settings from flags and environment (pure, tested): flags win over the
//! environment, which wins over the defaults.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use streamwire_core::error::{Error, ErrorKind, Result};

/// Everything the gateway needs to run.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// The Pulsar cluster (`pulsar://` or `pulsar+ssl://`).
    pub service_url: String,
    pub listen: SocketAddr,
    /// Bodies above this answer 413.
    pub max_body_bytes: usize,
    /// Messages above this in one request answer 413.
    pub max_messages: usize,
    /// Every request ends by then (a read's own `timeout` is capped by it).
    pub request_timeout: Duration,
    /// Producers unused this long are closed.
    pub producer_idle: Duration,
    /// Messages one producer holds unacknowledged at most; past it messages fail with
    /// `error_code` 2 (a request none of whose messages could be queued answers 429).
    pub max_pending_messages: usize,
    /// Consumer instances unused this long are closed.
    pub consumer_idle: Duration,
    /// This node's name inside consumer instance ids (`None`: derived from the advertised URL).
    pub node_id: Option<String>,
    /// The URL clients reach this node at, for `base_uri` (`None`: `http://<listen address>`).
    pub advertised_url: Option<String>,
    /// With `tls_key`: serve HTTPS with this PEM certificate chain.
    pub tls_cert: Option<PathBuf>,
    /// With `tls_cert`: the PEM private key.
    pub tls_key: Option<PathBuf>,
    /// The plain binary's log level on stderr (Python numbers; `None`: off). Under Python,
    /// `logging`'s own configuration decides instead.
    pub log_level: Option<u8>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            service_url: "pulsar://127.0.0.1:6650".into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_body_bytes: 5 * 1024 * 1024,
            max_messages: 10_000,
            request_timeout: Duration::from_secs(30),
            producer_idle: Duration::from_secs(300),
            max_pending_messages: 200_000,
            consumer_idle: Duration::from_secs(300),
            node_id: None,
            advertised_url: None,
            tls_cert: None,
            tls_key: None,
            log_level: Some(20),
        }
    }
}

/// The flags and their environment variables.
pub const USAGE: &str = "streamwire-gateway [--service-url URL] [--listen ADDR:PORT] \
[--max-body-bytes N] [--max-messages N] [--request-timeout SECS] [--producer-idle SECS] \
[--consumer-idle SECS] [--node-id ID] [--advertised-url URL] [--tls-cert PEM --tls-key PEM] \
[--log-level debug|info|warning|error|off] [--max-pending-messages N]
endpoints besides PIP-64: GET /healthz, /readyz, /metrics (Prometheus text), /openapi.json; \
Authorization: Bearer <token> acts at the broker as that token's role; \
--tls-cert and --tls-key (both) serve HTTPS; \
one access-log line per request (logfmt on stderr at --log-level info, the default; \
under Python the streamwire.gateway.access logger)
environment: STREAMWIRE_GATEWAY_SERVICE_URL, STREAMWIRE_GATEWAY_LISTEN, \
STREAMWIRE_GATEWAY_MAX_BODY_BYTES, STREAMWIRE_GATEWAY_MAX_MESSAGES, \
STREAMWIRE_GATEWAY_REQUEST_TIMEOUT, STREAMWIRE_GATEWAY_PRODUCER_IDLE, \
STREAMWIRE_GATEWAY_CONSUMER_IDLE, STREAMWIRE_GATEWAY_NODE_ID, STREAMWIRE_GATEWAY_ADVERTISED_URL, \
STREAMWIRE_GATEWAY_TLS_CERT, STREAMWIRE_GATEWAY_TLS_KEY, STREAMWIRE_GATEWAY_LOG_LEVEL, \
STREAMWIRE_GATEWAY_MAX_PENDING_MESSAGES";

const KEYS: [(&str, &str); 13] = [
    ("--service-url", "STREAMWIRE_GATEWAY_SERVICE_URL"),
    ("--listen", "STREAMWIRE_GATEWAY_LISTEN"),
    ("--max-body-bytes", "STREAMWIRE_GATEWAY_MAX_BODY_BYTES"),
    ("--max-messages", "STREAMWIRE_GATEWAY_MAX_MESSAGES"),
    ("--request-timeout", "STREAMWIRE_GATEWAY_REQUEST_TIMEOUT"),
    ("--producer-idle", "STREAMWIRE_GATEWAY_PRODUCER_IDLE"),
    ("--consumer-idle", "STREAMWIRE_GATEWAY_CONSUMER_IDLE"),
    ("--node-id", "STREAMWIRE_GATEWAY_NODE_ID"),
    ("--advertised-url", "STREAMWIRE_GATEWAY_ADVERTISED_URL"),
    ("--tls-cert", "STREAMWIRE_GATEWAY_TLS_CERT"),
    ("--tls-key", "STREAMWIRE_GATEWAY_TLS_KEY"),
    ("--log-level", "STREAMWIRE_GATEWAY_LOG_LEVEL"),
    (
        "--max-pending-messages",
        "STREAMWIRE_GATEWAY_MAX_PENDING_MESSAGES",
    ),
];

fn bad(msg: String) -> Error {
    Error::new(ErrorKind::Config, msg)
}

fn secs(name: &str, v: &str) -> Result<Duration> {
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err(bad(format!(
            "{name} must be a positive number of seconds, got {v:?}"
        ))),
    }
}

fn count(name: &str, v: &str) -> Result<usize> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(bad(format!("{name} must be a positive integer, got {v:?}"))),
    }
}

impl GatewayConfig {
    /// Parse `args` (without the program name) over `env` (a lookup of variables).
    pub fn parse(args: &[String], env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut values: Vec<Option<String>> = KEYS.iter().map(|(_, e)| env(e)).collect();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) => (f, Some(v.to_string())),
                None => (a.as_str(), None),
            };
            let Some(i) = KEYS.iter().position(|(f, _)| *f == flag) else {
                return Err(bad(format!("unknown argument {a:?}\nusage: {USAGE}")));
            };
            let v = match inline {
                Some(v) => v,
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| bad(format!("{flag} needs a value")))?,
            };
            values[i] = Some(v);
        }
        let mut c = GatewayConfig::default();
        if let Some(v) = &values[0] {
            if !(v.starts_with("pulsar://") || v.starts_with("pulsar+ssl://")) {
                return Err(bad(format!(
                    "--service-url must be pulsar:// or pulsar+ssl://, got {v:?}"
                )));
            }
            c.service_url = v.clone();
        }
        if let Some(v) = &values[1] {
            c.listen = v
                .parse()
                .map_err(|_| bad(format!("--listen must be ADDR:PORT, got {v:?}")))?;
        }
        if let Some(v) = &values[2] {
            c.max_body_bytes = count("--max-body-bytes", v)?;
        }
        if let Some(v) = &values[3] {
            c.max_messages = count("--max-messages", v)?;
        }
        if let Some(v) = &values[4] {
            c.request_timeout = secs("--request-timeout", v)?;
        }
        if let Some(v) = &values[5] {
            c.producer_idle = secs("--producer-idle", v)?;
        }
        if let Some(v) = &values[6] {
            c.consumer_idle = secs("--consumer-idle", v)?;
        }
        if let Some(v) = &values[7] {
            if !crate::consumers::valid_node_id(v) {
                return Err(bad(format!(
                    "--node-id must be 1 to 64 of A-Z a-z 0-9 - _, got {v:?}"
                )));
            }
            c.node_id = Some(v.clone());
        }
        if let Some(v) = &values[8] {
            let ok = (v.starts_with("http://") || v.starts_with("https://"))
                && !v.contains(['?', '#', ' ']);
            if !ok {
                return Err(bad(format!(
                    "--advertised-url must be an http:// or https:// URL, got {v:?}"
                )));
            }
            c.advertised_url = Some(v.trim_end_matches('/').to_string());
        }
        match (&values[9], &values[10]) {
            (Some(cert), Some(key)) if !cert.is_empty() && !key.is_empty() => {
                c.tls_cert = Some(PathBuf::from(cert));
                c.tls_key = Some(PathBuf::from(key));
            }
            (None, None) => {}
            _ => {
                return Err(bad(
                    "--tls-cert and --tls-key go together (both non-empty, or neither)".into(),
                ))
            }
        }
        if let Some(v) = &values[11] {
            c.log_level = crate::logging::parse_level(v).ok_or_else(|| {
                bad(format!(
                    "--log-level must be debug, info, warning, error or off, got {v:?}"
                ))
            })?;
        }
        if let Some(v) = &values[12] {
            c.max_pending_messages = count("--max-pending-messages", v)?;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_win_over_environment_over_defaults() {
        let env = |k: &str| match k {
            "STREAMWIRE_GATEWAY_LISTEN" => Some("127.0.0.1:9000".to_string()),
            "STREAMWIRE_GATEWAY_SERVICE_URL" => Some("pulsar://env:6650".to_string()),
            _ => None,
        };
        let c = GatewayConfig::parse(&args(&["--service-url", "pulsar://flag:1"]), env).unwrap();
        assert_eq!(c.service_url, "pulsar://flag:1");
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.max_body_bytes, 5 * 1024 * 1024);
        assert_eq!(c.log_level, Some(20));
        let c = GatewayConfig::parse(&args(&["--log-level=off"]), |_| None).unwrap();
        assert_eq!(c.log_level, None);
        let c = GatewayConfig::parse(&[], |k| {
            (k == "STREAMWIRE_GATEWAY_LOG_LEVEL").then(|| "warning".to_string())
        })
        .unwrap();
        assert_eq!(c.log_level, Some(30));
        let c = GatewayConfig::parse(&args(&["--max-pending-messages", "7"]), |_| None).unwrap();
        assert_eq!(c.max_pending_messages, 7);
        let c = GatewayConfig::parse(
            &args(&["--max-messages=7", "--request-timeout", "2.5"]),
            |_| None,
        )
        .unwrap();
        assert_eq!(
            (c.max_messages, c.request_timeout),
            (7, Duration::from_millis(2500))
        );
        let c = GatewayConfig::parse(
            &args(&[
                "--consumer-idle=1.5",
                "--node-id",
                "gw-1",
                "--advertised-url",
                "http://lb.example:80/",
            ]),
            |k| (k == "STREAMWIRE_GATEWAY_NODE_ID").then(|| "env".to_string()),
        )
        .unwrap();
        assert_eq!(c.consumer_idle, Duration::from_millis(1500));
        assert_eq!(c.node_id.as_deref(), Some("gw-1"));
        assert_eq!(c.advertised_url.as_deref(), Some("http://lb.example:80"));
        let c = GatewayConfig::parse(&args(&["--tls-cert", "c.pem"]), |k| {
            (k == "STREAMWIRE_GATEWAY_TLS_KEY").then(|| "k.pem".to_string())
        })
        .unwrap();
        assert_eq!(
            (c.tls_cert.as_deref(), c.tls_key.as_deref()),
            (
                Some(std::path::Path::new("c.pem")),
                Some(std::path::Path::new("k.pem"))
            )
        );
    }

    #[test]
    fn bad_values_are_config_errors() {
        for a in [
            vec!["--listen", "nope"],
            vec!["--service-url", "http://x"],
            vec!["--max-body-bytes", "0"],
            vec!["--request-timeout", "-1"],
            vec!["--what"],
            vec!["--listen"],
            vec!["--consumer-idle", "0"],
            vec!["--node-id", "a.b"],
            vec!["--node-id", ""],
            vec!["--advertised-url", "ftp://x"],
            vec!["--tls-cert", "c.pem"],
            vec!["--tls-key", "k.pem"],
            vec!["--tls-cert", "", "--tls-key", "k.pem"],
            vec!["--log-level", "loud"],
            vec!["--max-pending-messages", "0"],
        ] {
            let e = GatewayConfig::parse(&args(&a), |_| None).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{a:?}");
        }
    }
}
