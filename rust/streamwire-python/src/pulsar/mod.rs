//! The Pulsar classes (`streamwire.Client`, `Producer`, `Consumer`, `Reader`, `Message`,
//! `MessageId`), exported at the top of the `streamwire` package.

pub mod auth;
pub mod client;
pub mod consumer;
pub mod dispatch;
pub mod lookup_ext;
pub mod message;
pub mod message_id;
pub mod producer;
