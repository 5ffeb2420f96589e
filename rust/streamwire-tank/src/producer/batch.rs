//! What a producer sends, decided without I/O: messages gathered per partition, when a
//! request is due, whether a bundle is compressed, and the encoded Produce request.
//!
//! One request carries one bundle per partition that has messages, so a burst spread over
//! many partitions is one round trip. Compression follows the C++ client's "intelligent"
//! rule for `Auto`: Snappy once a bundle has more than 512 messages or more than 1 KiB of
//! keys and values, since below that the saving does not pay for the work.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, Result};

use crate::codec::{self, Compression, OutMsg, ProducePartition, ProduceTopic};
use crate::producer::Done;

/// How bundles are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressionChoice {
    None,
    Snappy,
    /// Snappy above 512 messages or 1 KiB of content (the C++ client's rule).
    Auto,
}

impl CompressionChoice {
    pub fn parse(s: Option<&str>) -> Result<Self> {
        match s {
            None | Some("none") => Ok(Self::None),
            Some("snappy") => Ok(Self::Snappy),
            Some("auto") => Ok(Self::Auto),
            Some(other) => Err(Error::invalid(format!(
                "compression must be None, \"snappy\" or \"auto\", not {other:?}"
            ))),
        }
    }

    fn for_bundle(self, messages: usize, content_bytes: usize) -> Compression {
        match self {
            Self::None => Compression::None,
            Self::Snappy => Compression::Snappy,
            Self::Auto if messages > 512 || content_bytes > 1024 => Compression::Snappy,
            Self::Auto => Compression::None,
        }
    }
}

/// When to send.
#[derive(Debug, Clone)]
pub struct BatchLimits {
    pub max_messages: usize,
    pub max_bytes: usize,
    pub max_delay: Duration,
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits {
            max_messages: 1000,
            max_bytes: 128 * 1024,
            max_delay: Duration::from_millis(1),
        }
    }
}

/// One message waiting to be sent.
#[derive(Debug, Clone)]
pub struct Pending {
    pub key: Option<Bytes>,
    pub ts: u64,
    pub value: Bytes,
}

impl Pending {
    pub fn size(&self) -> usize {
        self.value.len() + self.key.as_ref().map_or(0, Bytes::len)
    }
}

/// The messages of one partition not yet in a request.
#[derive(Default)]
struct Slot {
    msgs: Vec<Pending>,
    dones: Vec<Done>,
    bytes: usize,
    since: Option<Instant>,
    reservation: Option<Reservation>,
}

/// The messages of one request, per partition, kept until the broker answers (and
/// re-sent as they are after a reconnect).
pub struct Sealed {
    pub frame: Bytes,
    pub parts: Vec<SealedPart>,
    /// When the oldest message of the request was handed to the producer.
    pub since: Instant,
}

pub struct SealedPart {
    pub partition: u16,
    pub dones: Vec<Done>,
    pub messages: usize,
    pub _reservation: Option<Reservation>,
}

/// Per-partition gathering for one topic.
pub struct Batcher {
    topic: Bytes,
    slots: Vec<Slot>,
    limits: BatchLimits,
    compression: CompressionChoice,
    /// Messages gathered in all slots.
    queued: usize,
    scratch: Vec<u8>,
}

impl Batcher {
    pub fn new(
        topic: &str,
        partitions: u16,
        limits: BatchLimits,
        compression: CompressionChoice,
    ) -> Self {
        Batcher {
            topic: Bytes::copy_from_slice(topic.as_bytes()),
            slots: (0..partitions).map(|_| Slot::default()).collect(),
            limits,
            compression,
            queued: 0,
            scratch: Vec::new(),
        }
    }

    pub fn partitions(&self) -> u16 {
        self.slots.len() as u16
    }

    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Add a message to `partition`'s slot; `reservation` holds its bytes of the budget.
    /// Returns true when that slot is full and a request is due.
    pub fn push(
        &mut self,
        partition: u16,
        msg: Pending,
        done: Done,
        reservation: Option<Reservation>,
        now: Instant,
    ) -> bool {
        let slot = &mut self.slots[partition as usize];
        slot.bytes += msg.size();
        slot.msgs.push(msg);
        slot.dones.push(done);
        slot.since.get_or_insert(now);
        if let Some(r) = reservation {
            match slot.reservation.as_mut() {
                Some(held) => {
                    // Same budget by construction; a foreign one is simply dropped (released).
                    let _ = held.merge(r);
                }
                None => slot.reservation = Some(r),
            }
        }
        self.queued += 1;
        slot.msgs.len() >= self.limits.max_messages || slot.bytes >= self.limits.max_bytes
    }

    /// When the oldest gathered message must go out, if any is gathered.
    pub fn deadline(&self) -> Option<Instant> {
        self.slots
            .iter()
            .filter_map(|s| s.since)
            .min()
            .map(|t| t + self.limits.max_delay)
    }

    /// Encode everything gathered into one Produce request (one bundle per partition with
    /// messages), or `None` when nothing is gathered. `request_id` is patched on re-sends.
    pub fn seal(&mut self, request_id: u32) -> Result<Option<Sealed>> {
        if self.queued == 0 {
            return Ok(None);
        }
        let mut bundles: Vec<(u16, BytesMut)> = Vec::new();
        let mut parts = Vec::new();
        let mut since: Option<Instant> = None;
        for (p, slot) in self.slots.iter_mut().enumerate() {
            if slot.msgs.is_empty() {
                continue;
            }
            let compression = self.compression.for_bundle(slot.msgs.len(), slot.bytes);
            let mut bundle = BytesMut::with_capacity(slot.bytes + 16 * slot.msgs.len() + 16);
            let out: Vec<OutMsg<'_>> = slot
                .msgs
                .iter()
                .map(|m| OutMsg {
                    key: m.key.as_deref(),
                    ts: m.ts,
                    value: &m.value,
                })
                .collect();
            codec::encode_bundle(&mut bundle, &out, compression, &mut self.scratch)
                .map_err(Error::from)?;
            drop(out);
            bundles.push((p as u16, bundle));
            since = Some(since.map_or(slot.since.unwrap_or_else(Instant::now), |s| {
                s.min(slot.since.unwrap_or(s))
            }));
            parts.push(SealedPart {
                partition: p as u16,
                messages: slot.msgs.len(),
                dones: std::mem::take(&mut slot.dones),
                _reservation: slot.reservation.take(),
            });
            slot.msgs.clear();
            slot.bytes = 0;
            slot.since = None;
        }
        self.queued = 0;
        let total: usize = bundles.iter().map(|(_, b)| b.len() + 8).sum();
        let mut frame = BytesMut::with_capacity(total + 64);
        let topics = [ProduceTopic {
            topic: &self.topic,
            partitions: bundles
                .iter()
                .map(|(p, b)| ProducePartition {
                    partition: *p,
                    bundle: b,
                    base_seq: None,
                })
                .collect(),
        }];
        codec::encode_produce(&mut frame, request_id, &topics).map_err(Error::from)?;
        Ok(Some(Sealed {
            frame: frame.freeze(),
            parts,
            since: since.unwrap_or_else(Instant::now),
        }))
    }
}
