//! Engine events (connects, reconnects, redirects, opens and closes, errors) for whoever
//! embeds the engine; the Python layer forwards them to the `logging` module.
//!
//! The cost of a disabled level must be nil on hot paths: `event` first compares the level
//! with one atomic threshold (a relaxed load) and builds nothing unless it passes. The
//! threshold is "off" until an embedding installs a sink and says which levels it wants.
//! A sink must not block: the Python one queues records for a dispatcher thread.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Severity, numbered as Python's `logging` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    /// Detail: lookups, redirects, resends.
    Debug = 10,
    /// Normal life: connects, producers and consumers opened and closed.
    Info = 20,
    /// Trouble the engine recovers from: reconnects, retries.
    Warning = 30,
    /// Failures that end something.
    Error = 40,
}

/// One event: a message and its context (`topic`, `producer`, `subscription`, `broker`...).
#[derive(Debug, Clone)]
pub struct Record {
    /// Its severity.
    pub level: Level,
    /// Where it comes from, dotted (`pulsar.producer`), below the embedding's root logger.
    pub target: &'static str,
    /// What happened.
    pub message: String,
    /// Context fields.
    pub fields: Vec<(&'static str, String)>,
}

/// Receives records; must return quickly and never block on I/O.
pub type Sink = Box<dyn Fn(Record) + Send + Sync>;

/// Nothing is enabled while the threshold is above every level.
const OFF: u8 = u8::MAX;

static THRESHOLD: AtomicU8 = AtomicU8::new(OFF);
static SINK: OnceLock<Sink> = OnceLock::new();

/// Install the process's sink (the first one wins). Events pass once a threshold is set.
pub fn set_sink(sink: Sink) -> bool {
    SINK.set(sink).is_ok()
}

/// Pass events of `level` (a Python logging level number) and above; `None`: pass none.
pub fn set_threshold(level: Option<u8>) {
    THRESHOLD.store(level.unwrap_or(OFF), Ordering::Relaxed);
}

/// Whether events of `level` would be passed on.
#[inline]
pub fn enabled(level: Level) -> bool {
    level as u8 >= THRESHOLD.load(Ordering::Relaxed)
}

/// Report an event; `build` (message and fields) runs only if `level` is enabled.
#[inline]
pub fn event(
    level: Level,
    target: &'static str,
    build: impl FnOnce() -> (String, Vec<(&'static str, String)>),
) {
    if !enabled(level) {
        return;
    }
    if let Some(sink) = SINK.get() {
        let (message, fields) = build();
        sink(Record {
            level,
            target,
            message,
            fields,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<Record>> = Mutex::new(Vec::new());
    static BUILT: AtomicUsize = AtomicUsize::new(0);

    // One test: the threshold and sink are process-wide.
    #[test]
    fn threshold_gates_building_and_delivery() {
        set_sink(Box::new(|r| SEEN.lock().unwrap().push(r)));
        let build = || {
            BUILT.fetch_add(1, Ordering::Relaxed);
            ("m".to_owned(), vec![("topic", "t".to_owned())])
        };
        set_threshold(None);
        event(Level::Error, "x", build);
        assert_eq!(BUILT.load(Ordering::Relaxed), 0, "built while off");
        set_threshold(Some(30));
        assert!(!enabled(Level::Info) && enabled(Level::Warning) && enabled(Level::Error));
        event(Level::Info, "x", build);
        assert_eq!(
            BUILT.load(Ordering::Relaxed),
            0,
            "built below the threshold"
        );
        event(Level::Warning, "pulsar.consumer", build);
        assert_eq!(BUILT.load(Ordering::Relaxed), 1);
        let seen = SEEN.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].target, "pulsar.consumer");
        assert_eq!(seen[0].fields, vec![("topic", "t".to_owned())]);
    }
}
