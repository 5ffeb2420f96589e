//! The TANK classes of `streamwire.tank` (native halves; `python/streamwire/tank/` adds the
//! typed wrappers): client, producer with its futures, consumer and messages.

pub mod client;
pub mod consumer;
pub mod message;
pub mod producer;
