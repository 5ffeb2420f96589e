//! Protocol-neutral building blocks of the streamwire engine.
//!
//! Everything here is independent of any broker protocol so that the Pulsar crate (and later
//! others) share one implementation of retry timing and memory back-pressure.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// Jittered exponential backoff with an optional give-up deadline.
pub mod backoff;
/// Client-wide byte budget for pending messages (back-pressure).
pub mod budget;
/// The engine's error type.
#[allow(missing_docs)]
pub mod error;
/// One Tokio runtime per process, lazily built and rebuilt after fork.
#[allow(missing_docs)]
pub mod runtime;

pub use backoff::{Attempt, Backoff, BackoffConfig};
pub use budget::{MemoryBudget, QueueFull, Reservation, DEFAULT_MEMORY_LIMIT};
