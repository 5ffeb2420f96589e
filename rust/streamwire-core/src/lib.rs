//! Protocol-neutral building blocks of the streamwire engine.
//!
//! Everything here is independent of any broker protocol, so the protocol crates (Pulsar,
//! TANK, Pravega) stand side by side on one implementation of the runtime and fork handling,
//! retry timing, memory back-pressure, errors, framed connections, client TLS and Arrow
//! column buffers.
//! Nothing here imports a protocol crate: arrows only point down.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// Arrow column buffers filled in place (validity bitmaps, offsets, fixed-width values).
pub mod arrow;
/// Arrow columns as plain Rust data: a read-only view of a column, and arrays we build.
#[allow(missing_docs)]
pub mod arrow_view;
/// Jittered exponential backoff with an optional give-up deadline.
pub mod backoff;
/// Client-wide byte budget for pending messages (back-pressure).
pub mod budget;
/// Completions of writes (one per message, or one shared by a batch).
#[allow(missing_docs)]
pub mod completion;
/// The engine's error type.
#[allow(missing_docs)]
pub mod error;
/// A framed request/response connection (reader and writer tasks, request ids, deadlines).
pub mod framed;
/// Engine events for the embedding's log (an atomic level check when disabled).
pub mod log;
/// Client metrics: counters, gauges, latency histograms, a registry, Prometheus text.
pub mod metrics;
/// A background round that repeats while its owner lives.
pub mod periodic;
/// One logical connection that re-dials with backoff after it is lost.
pub mod redial;
/// One Tokio runtime per process, lazily built and rebuilt after fork.
#[allow(missing_docs)]
pub mod runtime;
/// Client TLS (rustls): trust, host-name checks, client certificates, a TCP stream wrapper.
pub mod tls;

pub use backoff::{Attempt, Backoff, BackoffConfig};
pub use budget::{MemoryBudget, QueueFull, Reservation, DEFAULT_MEMORY_LIMIT};
