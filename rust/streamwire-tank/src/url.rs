//! `tank://host[:port]` service URLs (pure).
//!
//! The C++ client's `set_default_leader("host:port")` defaults the port to 11011; we keep
//! that default and refuse anything that is not a single plain host, so a typo fails at
//! `Client(...)` with a `ConfigError` instead of at the first request.

use streamwire_core::error::{Error, ErrorKind, Result};

/// TANK's default broker port.
pub const DEFAULT_PORT: u16 = 11011;

/// Where the broker listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddr {
    pub host: String,
    pub port: u16,
}

impl std::fmt::Display for BrokerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Parse `tank://host[:port]` (IPv6 hosts in brackets).
pub fn parse(url: &str) -> Result<BrokerAddr> {
    let bad = |why: &str| {
        Error::new(
            ErrorKind::Config,
            format!("invalid TANK service URL {url:?}: {why} (expected tank://host[:port])"),
        )
    };
    let rest = url
        .strip_prefix("tank://")
        .ok_or_else(|| bad("the scheme must be tank://"))?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.is_empty() {
        return Err(bad("no host"));
    }
    if rest.contains(['/', ',', '@', '?', '#']) {
        return Err(bad("one host only, with no path, user or query"));
    }
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (h, tail) = v6.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
        match tail {
            "" => (h, None),
            t => (
                h,
                Some(t.strip_prefix(':').ok_or_else(|| bad("junk after ']'"))?),
            ),
        }
    } else {
        match rest.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad("the port must be a number from 1 to 65535")),
        },
    };
    Ok(BrokerAddr {
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_and_ports() {
        assert_eq!(
            parse("tank://127.0.0.1:1234").unwrap(),
            BrokerAddr {
                host: "127.0.0.1".into(),
                port: 1234
            }
        );
        assert_eq!(parse("tank://broker/").unwrap().port, DEFAULT_PORT);
        let v6 = parse("tank://[::1]:99").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 99));
        assert_eq!(v6.to_string(), "[::1]:99");
    }

    #[test]
    fn refuses_what_is_not_one_tank_host() {
        for bad in [
            "pulsar://h:1",
            "tank://",
            "tank://h:0",
            "tank://h:x",
            "tank://h:70000",
            "tank://a,b",
            "tank://h/path",
            "tank://[::1",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{bad}");
            assert!(e.to_string().contains("tank://host"), "{e}");
        }
    }
}
