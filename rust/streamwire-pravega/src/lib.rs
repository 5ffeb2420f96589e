//! Pravega on the streamwire engine (foundations: wire codec, routing, controller).
//!
//! Layout (this crate uses `streamwire-core`, never another protocol crate):
//!
//! - `wire/` — the segment store's wire protocol, pure: frames (`type:i32 length:i32` big
//!   endian), Java `writeUTF` strings, every command a client sends and every reply it must act
//!   on, and EVENT framing inside segment data (an event split across two reads).
//! - `routing` — the official clients' routing-key hash (`HashHelper.hashToRange`, seed
//!   "EventRouter"), so a key's events land in the segment the official writers pick.
//! - `controller/` — the controller client over gRPC (tonic; our own `.proto` in
//!   `proto/pravega_controller.proto`): scopes, streams, current segments with key ranges,
//!   successors after a scale, segment store URIs, stream cuts. Mapping is pure (`types`),
//!   I/O in `client`, every call bounded by a timeout; `transport` gives tonic our TLS
//!   connector and puts the credentials on every call.
//! - `security` — pure: `tcp://` / `tls://` controller URIs, credentials (`Basic` or any
//!   method), delegation tokens' expiry. TLS itself is `streamwire_core::tls` (shared with
//!   Pulsar); segment store connections (`connection`) wrap it when the URI is `tls://`.
//!
//! The event writer and the stream reader are built on these; `group` (reader groups,
//! shared with the official clients: state in a table segment, `wire::table`) on the reader; `txn` (transactional writes)
//! on the writer; `byte_stream` reads and writes a one-segment stream as plain bytes
//! (conditional appends, no event framing).
#![forbid(unsafe_code)]

pub mod byte_stream;
pub mod client;
pub mod connection;
pub mod controller;
pub mod fuzzing;
pub mod group;
pub mod reader;
pub mod routing;
pub mod security;
pub mod txn;
pub mod wire;
pub mod writer;
