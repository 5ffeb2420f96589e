//! What a producer sends, decided without I/O: messages gathered per partition, when a
//! request is due, whether a bundle is compressed, and the encoded Produce request.
//!
//! One request carries one bundle per partition that has messages, so a burst spread over
//! many partitions is one round trip. Compression follows the C++ client's "intelligent"
//! rule for `Auto`: Snappy once a bundle has more than 512 messages or more than 1 KiB of
//! keys and values, since below that the saving does not pay for the work.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};

use streamwire_core::budget::Reservation;
use streamwire_core::error::{Error, Result};

use crate::codec::wire::put_varint;
use crate::codec::{self, Compression, MsgType, OutMsg};
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
    /// Completions, each for a run of messages (a `send_many` is one entry per partition).
    dones: Vec<(Done, usize)>,
    bytes: usize,
    since: Option<Instant>,
    reservation: Option<Reservation>,
}

/// The messages of one request, per partition, kept until the broker answers (and
/// re-sent as they are after a reconnect).
pub struct Sealed {
    pub request_id: u32,
    pub frame: Bytes,
    pub parts: Vec<SealedPart>,
    /// When the oldest message of the request was handed to the producer.
    pub since: Instant,
}

pub struct SealedPart {
    pub partition: u16,
    pub dones: Vec<(Done, usize)>,
    pub messages: usize,
    /// Key and value bytes of those messages (for metrics).
    pub bytes: usize,
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
    /// A compressed bundle before it is copied behind its length.
    bundle: BytesMut,
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
            bundle: BytesMut::new(),
        }
    }

    pub fn partitions(&self) -> u16 {
        self.slots.len() as u16
    }

    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Add a message to `partition`'s slot. Returns true when that slot is full and a request
    /// is due. Its completion follows with [`settle_with`](Self::settle_with).
    pub fn push(&mut self, partition: u16, msg: Pending, now: Instant) -> bool {
        let slot = &mut self.slots[partition as usize];
        slot.bytes += msg.size();
        slot.msgs.push(msg);
        slot.since.get_or_insert(now);
        self.queued += 1;
        slot.msgs.len() >= self.limits.max_messages || slot.bytes >= self.limits.max_bytes
    }

    /// `done` completes the last `n` messages pushed to `partition`; `reservation` holds
    /// their bytes of the budget until then.
    pub fn settle_with(
        &mut self,
        partition: u16,
        done: Done,
        n: usize,
        reservation: Option<Reservation>,
    ) {
        let slot = &mut self.slots[partition as usize];
        slot.dones.push((done, n));
        if let Some(r) = reservation {
            match slot.reservation.as_mut() {
                // Same budget by construction; a foreign one is simply dropped (released).
                Some(held) => {
                    let _ = held.merge(r);
                }
                None => slot.reservation = Some(r),
            }
        }
    }

    /// Fail every gathered message with `e` (a request that could not be encoded: never
    /// dropped silently). Returns how many messages failed.
    pub fn fail_all(&mut self, e: &Error) -> usize {
        let mut n = 0;
        for slot in &mut self.slots {
            for (d, k) in slot.dones.drain(..) {
                d.complete(Err(e.clone()), k);
            }
            n += slot.msgs.len();
            slot.msgs.clear();
            slot.bytes = 0;
            slot.since = None;
            slot.reservation = None;
        }
        self.queued = 0;
        n
    }

    /// Whether a slot is full (a request is due now).
    pub fn is_due(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.msgs.len() >= self.limits.max_messages || s.bytes >= self.limits.max_bytes)
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
    /// messages), or `None` when nothing is gathered. Uncompressed bundles are encoded in
    /// place behind their exact length, so each value is copied once, into the request.
    pub fn seal(&mut self, request_id: u32) -> Result<Option<Sealed>> {
        if self.queued == 0 {
            return Ok(None);
        }
        // A request names at most 255 partitions; the rest wait for the next one.
        let used: Vec<usize> = (0..self.slots.len())
            .filter(|&p| !self.slots[p].msgs.is_empty())
            .take(255)
            .collect();
        let total: usize = used
            .iter()
            .map(|&p| self.slots[p].bytes + 16 * self.slots[p].msgs.len() + 24)
            .sum();
        let mut frame = BytesMut::with_capacity(total + 96);
        let at = codec::begin_produce(
            &mut frame,
            MsgType::Produce,
            request_id,
            codec::CLIENT_ID,
            1,
        )
        .map_err(Error::from)?;
        codec::put_topic_header(&mut frame, &self.topic, used.len()).map_err(Error::from)?;
        let mut parts = Vec::with_capacity(used.len());
        let mut since: Option<Instant> = None;
        for p in used {
            let slot = &mut self.slots[p];
            let compression = self.compression.for_bundle(slot.msgs.len(), slot.bytes);
            let out: Vec<OutMsg<'_>> = slot
                .msgs
                .iter()
                .map(|m| OutMsg {
                    key: m.key.as_deref(),
                    ts: m.ts,
                    value: &m.value,
                })
                .collect();
            frame.put_u16_le(p as u16);
            match compression {
                Compression::None => {
                    put_varint(&mut frame, codec::plain_bundle_len(&out) as u32);
                    codec::encode_bundle(&mut frame, &out, compression, &mut self.scratch)
                        .map_err(Error::from)?;
                }
                Compression::Snappy => {
                    self.bundle.clear();
                    codec::encode_bundle(&mut self.bundle, &out, compression, &mut self.scratch)
                        .map_err(Error::from)?;
                    put_varint(&mut frame, self.bundle.len() as u32);
                    frame.extend_from_slice(&self.bundle);
                }
            }
            drop(out);
            since = match (since, slot.since) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            self.queued -= slot.msgs.len();
            parts.push(SealedPart {
                partition: p as u16,
                messages: slot.msgs.len(),
                bytes: slot.bytes,
                dones: std::mem::take(&mut slot.dones),
                _reservation: slot.reservation.take(),
            });
            slot.msgs.clear();
            slot.bytes = 0;
            slot.since = None;
        }
        codec::end_frame(&mut frame, at).map_err(Error::from)?;
        Ok(Some(Sealed {
            request_id,
            frame: frame.freeze(),
            parts,
            since: since.unwrap_or_else(Instant::now),
        }))
    }
}
