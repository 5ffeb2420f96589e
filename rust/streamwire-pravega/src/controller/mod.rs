//! The controller client (gRPC): which segments a stream has, where each one lives, scopes
//! and streams created and removed.
//!
//! Layout: `proto` is generated at build time from `proto/pravega_controller.proto` (our own
//! description of the RPCs a data client uses); `types` holds our Rust types and every
//! request/answer mapping, pure and unit-tested, `admin` the same for stream administration
//! (retention, tags, updates, truncation), `txn` for transactions; `client` and `transport` (plain or TLS channel,
//! credentials on every call) are the only parts that do I/O.

pub mod admin;
pub mod client;
pub mod transport;
pub mod txn;
pub mod types;

#[cfg(test)]
mod tests;

pub use admin::{Retention, StreamSettings, NO_MAX};
pub use client::{endpoint_of, Controller, DEFAULT_TIMEOUT};
pub use txn::{parse_txn_id, txn_id_text, txn_segment_name, CreatedTxn, TxnState};
pub use types::{
    scale_request, segment_name, status_error, stream_config, CurrentSegments, NodeUri,
    ScalingPolicy, ScopedStream, Segment, StreamCut, Successor,
};

/// Code generated from `proto/pravega_controller.proto`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod proto {
    tonic::include_proto!("io.pravega.controller.stream.api.grpc.v1");
}
