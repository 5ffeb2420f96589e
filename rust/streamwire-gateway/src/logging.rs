//! The gateway's log: one structured access record per request, and the engine's own events,
//! through the project's logging (`streamwire_core::log`). Under Python they reach `logging`
//! (`streamwire.gateway.access`, `streamwire.pulsar.*`); the plain binary installs
//! [`install_stderr`], which writes them as logfmt lines on stderr.
//!
//! Why a writer thread: a request must not wait on a terminal or a pipe. The sink only
//! queues the record; one thread writes whatever has queued with one `write` per batch.

use std::io::Write;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use streamwire_core::log::{self, Level, Record};

/// The access records' target (Python: the `streamwire.gateway.access` logger).
pub const ACCESS: &str = "gateway.access";

/// One request, as its access record has it.
pub struct Access<'a> {
    pub peer: std::net::SocketAddr,
    pub method: &'a str,
    pub path: &'a str,
    pub route: &'static str,
    pub status: u16,
    pub elapsed: Duration,
}

/// Report a request (nothing is built unless INFO is enabled).
pub fn access(a: &Access<'_>) {
    log::event(Level::Info, ACCESS, || {
        let ms = format!("{:.3}", a.elapsed.as_secs_f64() * 1000.0);
        let fields = vec![
            ("peer", a.peer.to_string()),
            ("method", a.method.to_string()),
            ("path", a.path.to_string()),
            ("route", a.route.to_string()),
            ("status", a.status.to_string()),
            ("ms", ms),
        ];
        (logfmt(&fields), fields)
    });
}

/// `k=v` pairs, values quoted when they need it.
pub fn logfmt(fields: &[(&str, String)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push('=');
        push_value(&mut out, v);
    }
    out
}

fn push_value(out: &mut String, v: &str) {
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '=' && c != '\\');
    if plain {
        out.push_str(v);
    } else {
        // JSON string quoting: escapes quotes, backslashes and control characters.
        out.push_str(&serde_json::to_string(v).unwrap_or_default());
    }
}

/// `level` names for `--log-level`, as Python's numbers (`None`: off).
pub fn parse_level(s: &str) -> Option<Option<u8>> {
    Some(match s.to_ascii_lowercase().as_str() {
        "debug" => Some(Level::Debug as u8),
        "info" => Some(Level::Info as u8),
        "warning" | "warn" => Some(Level::Warning as u8),
        "error" => Some(Level::Error as u8),
        "off" | "none" => None,
        _ => return None,
    })
}

fn level_name(l: Level) -> &'static str {
    match l {
        Level::Debug => "debug",
        Level::Info => "info",
        Level::Warning => "warning",
        Level::Error => "error",
    }
}

/// UTC RFC 3339 with milliseconds, from Unix milliseconds (days to a civil date: the
/// proleptic Gregorian algorithm of Howard Hinnant's `civil_from_days`).
pub fn rfc3339(unix_ms: u64) -> String {
    let (secs, ms) = (unix_ms / 1000, unix_ms % 1000);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// One record as the binary writes it: `ts=… level=… target=… <message> [fields]` (an
/// access record's message already is its fields).
pub fn line(r: &Record, unix_ms: u64) -> String {
    let mut out = format!(
        "ts={} level={} target={} ",
        rfc3339(unix_ms),
        level_name(r.level),
        r.target
    );
    if r.target == ACCESS {
        out.push_str(&r.message);
    } else {
        out.push_str("msg=");
        push_value(&mut out, &r.message);
        if !r.fields.is_empty() {
            out.push(' ');
            out.push_str(&logfmt(&r.fields));
        }
    }
    out.push('\n');
    out
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The plain binary's log: records of `level` and above as lines on stderr, written by a
/// thread of their own (`None`: no log).
pub fn install_stderr(level: Option<u8>) {
    let (tx, rx) = mpsc::channel::<(Record, u64)>();
    let spawned = std::thread::Builder::new()
        .name("gateway-log".into())
        .spawn(move || {
            let stderr = std::io::stderr();
            while let Ok(first) = rx.recv() {
                let mut text = line(&first.0, first.1);
                while let Ok((r, t)) = rx.try_recv() {
                    text.push_str(&line(&r, t));
                    if text.len() > 64 * 1024 {
                        break;
                    }
                }
                let _ = stderr.lock().write_all(text.as_bytes());
            }
        });
    if spawned.is_err() {
        return;
    }
    // A Sender is Send but not Sync: the sink shares it behind a lock held only to queue.
    let tx = std::sync::Mutex::new(tx);
    log::set_sink(Box::new(move |r| {
        let t = now_ms();
        if let Ok(tx) = tx.lock() {
            let _ = tx.send((r, t));
        }
    }));
    log::set_threshold(level);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logfmt_quotes_what_needs_it() {
        let f = vec![
            ("path", "/topics/a/b/c".to_string()),
            ("odd", "a b\"c".to_string()),
            ("empty", String::new()),
        ];
        assert_eq!(logfmt(&f), r#"path=/topics/a/b/c odd="a b\"c" empty="""#);
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339(1_795_661_999_999), "2026-11-26T02:59:59.999Z");
    }

    #[test]
    fn lines_and_levels() {
        let r = Record {
            level: Level::Info,
            target: ACCESS,
            message: "method=GET status=200".into(),
            fields: vec![("method", "GET".into())],
        };
        assert_eq!(
            line(&r, 0),
            "ts=1970-01-01T00:00:00.000Z level=info target=gateway.access method=GET status=200\n"
        );
        let r = Record {
            level: Level::Warning,
            target: "pulsar.producer",
            message: "reconnecting to the broker".into(),
            fields: vec![("topic", "t".into())],
        };
        assert_eq!(
            line(&r, 0),
            "ts=1970-01-01T00:00:00.000Z level=warning target=pulsar.producer \
             msg=\"reconnecting to the broker\" topic=t\n"
        );
        assert_eq!(parse_level("INFO"), Some(Some(20)));
        assert_eq!(parse_level("off"), Some(None));
        assert_eq!(parse_level("loud"), None);
    }
}
