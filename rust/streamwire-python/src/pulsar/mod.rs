//! The Pulsar classes (`streamwire.Client`, `Producer`, `Consumer`, `Reader`, `Message`,
//! `MessageId`), exported at the top of the `streamwire` package.

pub mod aio_consumer;
pub mod aio_producer;
pub mod auth;
pub mod client;
pub mod consumer;
pub mod consumer_options;
pub mod crypto;
pub mod deliver_time;
pub mod dispatch;
pub mod failover;
pub mod id_ranges;
pub mod listener;
pub mod lookup_ext;
pub mod lookup_schema;
pub mod many;
pub mod message;
pub mod message_id;
pub mod producer;
pub mod producer_build;
pub mod schema;
pub mod schema_arrow;
pub mod schema_encode_halves;
pub mod schema_multi;
pub mod schema_protobuf;
pub mod schema_send;
pub mod schema_values;
pub mod send_future;
pub mod send_many;
pub mod table_view;
pub mod transaction;
