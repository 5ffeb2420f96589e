//! The gateway's log: one structured access record per request, and the engine's own events,
//! through the project's logging (`streamwire_core::log`). Under Python they reach `logging`
//! (`streamwire.gateway.access`, `streamwire.pulsar.*`); the plain binary installs
//! [`install_stderr`], which writes them as logfmt lines on stderr.
//!
//! Why a writer thread: a request must not wait on a terminal or a pipe. The sink only
//! appends the line to a buffer; one thread writes whatever has queued every 50 ms.

use std::io::Write;
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

/// Records queued for the writer thread, and how many were dropped while it was full.
struct Pending {
    text: String,
    dropped: u64,
}

/// Past this much queued text, records are counted as dropped (and the count written).
const MAX_PENDING: usize = 4 << 20;

/// How often the writer thread writes what has queued.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

static PENDING: std::sync::Mutex<Pending> = std::sync::Mutex::new(Pending {
    text: String::new(),
    dropped: 0,
});

/// Write what has queued now (the binary calls it before it exits).
pub fn flush() {
    let (text, dropped) = {
        let mut p = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        (std::mem::take(&mut p.text), std::mem::take(&mut p.dropped))
    };
    let mut err = std::io::stderr().lock();
    if !text.is_empty() {
        let _ = err.write_all(text.as_bytes());
    }
    if dropped > 0 {
        let _ = writeln!(
            err,
            "ts={} level=warning target=gateway.log msg=\"{dropped} log records dropped: stderr \
             was not keeping up\"",
            rfc3339(now_ms())
        );
    }
}

/// The plain binary's log: records of `level` and above as lines on stderr (`None`: no log).
///
/// Why not a channel: waking a writer per record costs a context switch per request (a
/// profile of single-message POSTs showed it). The sink appends the line to one buffer under
/// a short lock; the writer thread wakes every `FLUSH_EVERY` and writes it with one `write`.
pub fn install_stderr(level: Option<u8>) {
    let spawned = std::thread::Builder::new()
        .name("gateway-log".into())
        .spawn(|| loop {
            std::thread::sleep(FLUSH_EVERY);
            flush();
        });
    if spawned.is_err() {
        return;
    }
    log::set_sink(Box::new(|r| {
        let text = line(&r, now_ms());
        let mut p = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        if p.text.len() + text.len() > MAX_PENDING {
            p.dropped += 1;
        } else {
            p.text.push_str(&text);
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
