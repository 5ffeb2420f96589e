//! Pulsar protocol support for streamwire.
//!
//! Modules (one concern each; pure logic is kept apart from I/O):
//! * [`protocol`] — wire format: frame codec, CRC32C, command builders. No I/O, no Tokio.
//! * [`crypto`] — end-to-end encryption of payloads (AES-GCM data key, RSA-OAEP or ECIES
//!   wrapped), pure.
//! * [`schema`] — typed messages: registry schema descriptions, Avro binary / JSON / KeyValue
//!   payload codecs (pure) and GetSchema / GetOrCreateSchema requests.
//!
//! `fuzzing` is a hidden helper shared by the cargo-fuzz target and the stable-toolchain
//! fuzz test; it is not part of the supported API.

#![forbid(unsafe_code)]

pub mod protocol;

pub mod auth;
pub mod client;
pub mod connection;
pub mod consumer;
pub mod crypto;
pub mod engine;
pub mod failover;
pub mod http_lookup;
pub mod message_id;
pub mod namespace;
pub mod producer;
pub mod reconnect;
pub mod schema;
pub mod server_error;
pub mod service_url;
pub mod table_view;
pub mod topic;
pub mod transaction;

#[doc(hidden)]
pub mod fuzzing;
