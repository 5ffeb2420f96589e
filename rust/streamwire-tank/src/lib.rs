//! TANK on the streamwire engine.
//!
//! Layout (arrows point down; this crate uses `streamwire-core`, never another protocol):
//!
//! - `codec/` — the wire format, pure: frames, requests, responses, bundles, chunks.
//! - `url` — `tank://host[:port]`.
//! - `connection` — TCP, the broker's greeting ping, then core's framed connection
//!   (pipelined requests matched by request id, deadlines, keepalive).
//! - `client` — one re-dialled connection per client and the administrative calls.
//! - `producer/` — routing, per-partition bundles, pipelined Produce with re-send after a
//!   lost connection (at-least-once).
//! - `consumer/` — long-polling fetch task, bounded read-ahead, positions and seeks.
//! - `errors` — the broker's codes as engine errors.
#![forbid(unsafe_code)]

pub mod client;
pub mod codec;
pub mod connection;
pub mod consumer;
pub mod errors;
pub mod fuzzing;
pub mod producer;
pub mod url;
