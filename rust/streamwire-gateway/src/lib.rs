//! The PIP-64 REST gateway: produce and read Pulsar over HTTP, on the streamwire engine.
//!
//! Layout (arrows point down: this crate uses the Pulsar crate and the core, nothing uses
//! it but the binding and its own binary):
//!
//! - `callers` — `Authorization: Bearer` parsing and the bounded LRU of callers' clients (pure).
//! - `config` — flags and environment (pure).
//! - `route` — which endpoint a method and path are (pure).
//! - `error` — errors as HTTP statuses and PIP-64 codes (pure).
//! - `schemas` — the schema fields checked, and the typed schema they give (pure).
//! - `typed` — values of every supported schema type between JSON and payloads (pure).
//! - `proto_json` — PROTOBUF_NATIVE messages between proto3 JSON and wire bytes (pure).
//! - `fuzzing` — the fuzz body of the `proto_json` encoder (hidden).
//! - `produce` — the three produce bodies to engine messages and back (pure), and sending.
//! - `produce_reply` — the answers to a produce (PIP-64 and broker-dialect shapes, back-pressure).
//! - `decode` — values read back as JSON by their writer's schema version (GET_SCHEMA, cached).
//! - `read` — a stateless reader per `GET …/messages`.
//! - `stream` — streaming produce: NDJSON lines in, delivery reports out, in order.
//! - `consumers` — consumer instances: ids naming their node, the registry, idle expiry.
//! - `consume` — the consumer-instance and cursor endpoints.
//! - `logging` — the access record per request and the binary's stderr log (logfmt).
//! - `metrics` — the counters (atomics) and their Prometheus text (pure).
//! - `openapi` — the static OpenAPI document (`openapi.json`), tested against the router.
//! - `fetch_stream` — a consumer instance's messages as an NDJSON or server-sent-events stream.
//! - `state` — the shared Pulsar client, the per-topic producers and the instances.
//! - `tls` — the rustls acceptor for `--tls-cert`/`--tls-key`.
//! - `server` — hyper, keep-alive, limits, access log, graceful shutdown.
#![forbid(unsafe_code)]

pub mod callers;
pub mod config;
pub mod consume;
pub mod consumers;
pub mod decode;
pub mod error;
pub mod fetch_stream;
#[doc(hidden)]
pub mod fuzzing;
pub mod logging;
pub mod metrics;
pub mod openapi;
pub mod produce;
pub mod produce_reply;
pub mod proto_json;
pub mod read;
pub mod route;
pub mod schemas;
pub mod server;
pub mod state;
pub mod stream;
pub mod tls;
pub mod typed;

pub use config::GatewayConfig;
pub use server::{serve, serve_on};
