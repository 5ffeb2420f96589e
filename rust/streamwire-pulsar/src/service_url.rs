//! Service URLs: `pulsar://host:port[,host:port...]` and `pulsar+ssl://...` (pure).

use std::fmt;

use streamwire_core::error::{Error, ErrorKind, Result};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerAddr {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl BrokerAddr {
    /// Parse one broker URL as found in lookup responses (`pulsar://h:p` / `pulsar+ssl://h:p`).
    pub fn parse(url: &str) -> Result<BrokerAddr> {
        let list = ServiceUrl::parse(url)?;
        match list.hosts.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(Error::new(
                ErrorKind::Config,
                format!("expected a single broker address, got {url:?}"),
            )),
        }
    }

    pub fn url(&self) -> String {
        self.to_string()
    }

    pub fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for BrokerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "pulsar+ssl" } else { "pulsar" };
        write!(f, "{scheme}://{}", self.host_port())
    }
}

/// A service URL: one or more brokers (or proxies) to start lookups from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceUrl {
    pub hosts: Vec<BrokerAddr>,
}

fn bad(url: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::Config,
        format!("invalid service URL {url:?}: {why}"),
    )
}

impl ServiceUrl {
    pub fn parse(url: &str) -> Result<ServiceUrl> {
        let url_trim = url.trim().trim_end_matches('/');
        let (tls, rest) = if let Some(r) = url_trim.strip_prefix("pulsar+ssl://") {
            (true, r)
        } else if let Some(r) = url_trim.strip_prefix("pulsar://") {
            (false, r)
        } else {
            return Err(bad(
                url,
                "expected pulsar://host:port or pulsar+ssl://host:port",
            ));
        };
        let default_port = if tls { 6651 } else { 6650 };
        let mut hosts = Vec::new();
        for part in rest.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad(url, "empty host"));
            }
            let (host, port) = if let Some(stripped) = part.strip_prefix('[') {
                // [ipv6]:port
                let end = stripped.find(']').ok_or_else(|| bad(url, "unclosed '['"))?;
                let host = &stripped[..end];
                let after = &stripped[end + 1..];
                let port = match after.strip_prefix(':') {
                    Some(p) => p.parse::<u16>().map_err(|_| bad(url, "bad port"))?,
                    None if after.is_empty() => default_port,
                    None => return Err(bad(url, "junk after ']'")),
                };
                (host.to_owned(), port)
            } else {
                match part.rsplit_once(':') {
                    Some((h, p)) => (
                        h.to_owned(),
                        p.parse::<u16>().map_err(|_| bad(url, "bad port"))?,
                    ),
                    None => (part.to_owned(), default_port),
                }
            };
            if host.is_empty() || host.contains('/') || host.contains('@') {
                return Err(bad(url, "bad host"));
            }
            if port == 0 {
                return Err(bad(url, "port 0"));
            }
            hosts.push(BrokerAddr { host, port, tls });
        }
        Ok(ServiceUrl { hosts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        let s = ServiceUrl::parse("pulsar://localhost:6650").unwrap();
        assert_eq!(s.hosts[0].host_port(), "localhost:6650");
        assert!(!s.hosts[0].tls);
        let s = ServiceUrl::parse("pulsar+ssl://a,b:7000/").unwrap();
        assert_eq!(s.hosts.len(), 2);
        assert_eq!(s.hosts[0].port, 6651);
        assert_eq!(s.hosts[1].port, 7000);
        assert!(s.hosts[1].tls);
        let s = ServiceUrl::parse("pulsar://[::1]:6650").unwrap();
        assert_eq!(s.hosts[0].to_string(), "pulsar://[::1]:6650");
        assert_eq!(
            BrokerAddr::parse("pulsar://h:1").unwrap().to_string(),
            "pulsar://h:1"
        );
    }

    #[test]
    fn rejects_bad() {
        for u in [
            "http://x",
            "pulsar://",
            "pulsar://h:notaport",
            "pulsar://h:0",
            "x",
            "pulsar://a,,b",
        ] {
            assert_eq!(
                ServiceUrl::parse(u).unwrap_err().kind(),
                ErrorKind::Config,
                "{u}"
            );
        }
    }
}
