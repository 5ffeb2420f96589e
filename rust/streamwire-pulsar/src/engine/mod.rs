//! Pure engine logic of the Pulsar client: no sockets, no clock reads, no runtime.
//!
//! Why separate: everything here decides *what* to send (permits, partition, batch bytes,
//! compression) and is tested exhaustively without a broker; the actors only move bytes.
//! Dependencies are limited to std, `bytes`, `rand`, the compression crates and the
//! prost-generated protocol types.

/// The serialized batch payload: `[u32 BE size][SingleMessageMetadata][payload]` repeated.
pub mod batch_format;
/// Accumulates a producer's messages into batches by count, bytes and delay.
pub mod batcher;
/// A bulk send's payloads in one buffer, and batches cut straight from it.
pub mod bulk;
/// Payload compression codecs with Pulsar's wire formats.
pub mod compression;
/// Key-based batching: messages grouped by key, one key per batch entry.
pub mod key_batches;
/// The message a producer sends, before batching.
pub mod message;
/// Consumer flow-control permits (refill at half the receiver queue).
pub mod permits;
/// Choosing a partition for a message (round robin, single partition, key hash).
pub mod routing;
