//! Byte streams: a one-segment stream read and written as plain bytes (no event framing),
//! what the official clients call `ByteWriter` / `ByteReader` (Python: `ByteStream`).
//!
//! Writes are buffered and sent as `CONDITIONAL_BLOCK_END` appends: raw bytes written only if
//! the segment is exactly as long as this writer believes. So two writers never interleave
//! their bytes: the second one's append fails (`CONDITIONAL_CHECK_FAILED`) and raises instead
//! of landing in the middle of the first one's data. One block is in flight at a time and
//! each is answered before the next goes (1 MiB blocks keep loopback near the store's own
//! speed); a lost connection re-sets the writer up, and the store's last event number says
//! whether the block in flight landed (the condition makes a resend land at most once).
//!
//! Unlike the official writer, which starts at offset 0 and so fails on a stream that already
//! has data, ours starts at the segment's tail. Reads are `READ_SEGMENT`s from the read
//! position (held by the store at the tail until data comes); the bytes past what the caller
//! asked for are kept for the next read. Data before the head (after `truncate`) is an
//! `OutOfRange` error naming the new head.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::client::PravegaClient;
use crate::connection::{dial, Connection};
use crate::controller::{segment_name, ScopedStream};
use crate::wire::{self, reply::NO_EVENT_NUMBER, Reply};

/// Bytes buffered before a block is sent without waiting for `flush`.
pub const BLOCK: usize = 1 << 20;
/// The largest append the segment store takes (`MAX_WRITE_SIZE`, 8 MiB).
pub const MAX_BLOCK: usize = 8 << 20;
/// Bytes asked for per `READ_SEGMENT`.
const READ_LENGTH: usize = 1 << 20;

/// Where `seek` counts from (Python's `whence` 0, 1, 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whence {
    Start,
    Current,
    End,
}

impl Whence {
    pub fn from_io(whence: i32) -> Result<Whence> {
        match whence {
            0 => Ok(Whence::Start),
            1 => Ok(Whence::Current),
            2 => Ok(Whence::End),
            w => Err(Error::invalid(format!(
                "whence must be 0 (start), 1 (current) or 2 (end), not {w}"
            ))),
        }
    }
}

/// The read position a seek lands at (pure): `offset` from `whence`, never before 0.
pub fn seek_target(whence: Whence, offset: i64, current: i64, tail: i64) -> Result<i64> {
    let base = match whence {
        Whence::Start => 0,
        Whence::Current => current,
        Whence::End => tail,
    };
    match base.checked_add(offset) {
        Some(at) if at >= 0 => Ok(at),
        _ => Err(Error::invalid(format!(
            "seek to {offset} from {whence:?} (at {base}) lands before the stream's start"
        ))),
    }
}

/// This writer's append session on the segment.
struct Appender {
    conn: Connection,
    writer_id: u128,
    /// Number of the next block (the store remembers the last one it wrote).
    next_event: i64,
    /// Where the next block must land: the segment's length as far as we know.
    write_offset: i64,
}

/// A byte stream: see the module comment. Not shared between tasks (the binding locks it).
pub struct ByteStream {
    client: PravegaClient,
    stream: ScopedStream,
    segment: i64,
    name: String,
    writer_id: u128,
    buffered: BytesMut,
    appender: Option<Appender>,
    read_offset: i64,
    /// Bytes at `read_offset` fetched and not yet handed out.
    read_ahead: Bytes,
    closed: bool,
}

impl ByteStream {
    /// Open `stream`, which must have exactly one segment (a fixed scaling policy of one).
    pub async fn open(client: &PravegaClient, stream: ScopedStream) -> Result<ByteStream> {
        let current = client.controller().get_current_segments(&stream).await?;
        let segment = match current.segments.as_slice() {
            [one] => one.id,
            [] => {
                return Err(Error::new(
                    ErrorKind::Closed,
                    format!("stream {stream} is sealed (it has no open segment)"),
                ))
            }
            many => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "a byte stream needs a stream of exactly one segment; {stream} has {} \
                         (create it with segments=1 and no auto-scaling)",
                        many.len()
                    ),
                ))
            }
        };
        Ok(ByteStream {
            client: client.clone(),
            name: segment_name(&stream, segment),
            stream,
            segment,
            writer_id: rand::random::<u128>(),
            buffered: BytesMut::new(),
            appender: None,
            read_offset: 0,
            read_ahead: Bytes::new(),
            closed: false,
        })
    }

    pub fn stream(&self) -> &ScopedStream {
        &self.stream
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    fn live(&self) -> Result<()> {
        if self.closed {
            Err(Error::closed("byte stream"))
        } else {
            Ok(())
        }
    }

    /// Bytes written and not yet sent (`flush` sends them).
    pub fn buffered(&self) -> usize {
        self.buffered.len()
    }

    /// Buffer `data`; whole blocks go out now. The bytes are durable once `flush` returns.
    pub async fn write(&mut self, data: &[u8]) -> Result<usize> {
        self.live()?;
        self.buffered.extend_from_slice(data);
        while self.buffered.len() >= BLOCK {
            self.send_next().await?;
        }
        Ok(data.len())
    }

    /// Send everything buffered and wait until the segment store has it.
    pub async fn flush(&mut self) -> Result<()> {
        self.live()?;
        while !self.buffered.is_empty() {
            self.send_next().await?;
        }
        Ok(())
    }

    /// Send the next block; on failure the buffered bytes are dropped and the error says how
    /// many (a conflicting writer makes every later offset wrong too).
    async fn send_next(&mut self) -> Result<()> {
        let n = self.buffered.len().min(MAX_BLOCK);
        let block = self.buffered.split_to(n).freeze();
        if let Err(e) = self.send_block(block).await {
            let lost = n + self.buffered.len();
            self.buffered.clear();
            if let Some(a) = self.appender.take() {
                a.conn.close();
            }
            return Err(e.context(format!(
                "{lost} bytes for byte stream {} were not written",
                self.stream
            )));
        }
        Ok(())
    }

    async fn send_block(&mut self, block: Bytes) -> Result<()> {
        if self.appender.is_none() {
            self.set_up().await?;
        }
        let event = self.appender.as_ref().map_or(0, |a| a.next_event);
        match self.append(&block).await {
            Err(e) if retriable(&e) => {
                // The connection went: set up again. If the store's last event number is
                // this block's, it landed before the answer was lost (the tail counts it);
                // if not, it is sent again at the same offset (it can land only once).
                if let Some(a) = self.appender.take() {
                    a.conn.close();
                }
                if self.set_up().await? >= event {
                    return Ok(());
                }
                self.append(&block).await
            }
            other => other,
        }
    }

    /// Dial the segment's store, `SETUP_APPEND`, and start at the segment's tail; returns the
    /// store's last event number of this writer.
    async fn set_up(&mut self) -> Result<i64> {
        let node = self
            .client
            .controller()
            .get_uri(&self.stream, self.segment)
            .await?;
        let (conn, _unsolicited) = dial::<true>(&node, &self.client.config().dial).await?;
        let token = self.client.delegation_token(&self.stream).await?;
        let rid = conn.next_request_id();
        let mut buf = BytesMut::with_capacity(64 + self.name.len());
        wire::encode_setup_append(&mut buf, rid as i64, self.writer_id, &self.name, &token)
            .map_err(Error::from)?;
        let timeout = self.client.config().request_timeout;
        let last = match conn
            .request(rid, buf.freeze(), timeout, "SETUP_APPEND")
            .await?
        {
            Reply::AppendSetup {
                last_event_number, ..
            } => last_event_number,
            other => {
                conn.close();
                return Err(unexpected(other, "SETUP_APPEND"));
            }
        };
        let tail = self
            .client
            .segment_info(&self.stream, self.segment, &token)
            .await?
            .write_offset;
        self.appender = Some(Appender {
            conn,
            writer_id: self.writer_id,
            next_event: next_event_after(last),
            write_offset: tail,
        });
        Ok(last)
    }

    async fn append(&mut self, block: &Bytes) -> Result<()> {
        let timeout = self.client.config().request_timeout;
        let a = self.appender.as_mut().expect("set up before appending");
        let rid = a.conn.next_request_id();
        let mut buf = BytesMut::with_capacity(48 + block.len());
        wire::encode_conditional_block_end(
            &mut buf,
            a.writer_id,
            a.next_event,
            a.write_offset,
            block,
            rid as i64,
        )
        .map_err(Error::from)?;
        match a
            .conn
            .request(rid, buf.freeze(), timeout, "CONDITIONAL_BLOCK_END")
            .await?
        {
            Reply::DataAppended {
                current_segment_write_offset,
                ..
            } => {
                a.next_event += 1;
                a.write_offset = if current_segment_write_offset >= 0 {
                    current_segment_write_offset
                } else {
                    a.write_offset + block.len() as i64
                };
                Ok(())
            }
            Reply::ConditionalCheckFailed { .. } => Err(Error::new(
                ErrorKind::Server,
                format!(
                    "byte stream {} was appended to by another writer (it is no longer {} \
                     bytes long)",
                    self.stream, a.write_offset
                ),
            )),
            other => Err(unexpected(other, "CONDITIONAL_BLOCK_END")),
        }
    }

    /// The read position (the offset of the next byte `read` returns).
    pub fn tell(&self) -> i64 {
        self.read_offset
    }

    /// Up to `max` bytes from the read position: at least one, waiting for data at the tail
    /// (until `timeout`: then `Timeout`); empty only at the end of a sealed stream.
    pub async fn read(&mut self, max: usize, timeout: Option<Duration>) -> Result<Bytes> {
        self.live()?;
        if max == 0 {
            return Ok(Bytes::new());
        }
        if !self.read_ahead.is_empty() {
            return Ok(self.hand_out(max));
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let node = self
            .client
            .controller()
            .get_uri(&self.stream, self.segment)
            .await?;
        loop {
            let token = self.client.delegation_token(&self.stream).await?;
            let conn = self.client.connection(&node).await?;
            let rid = conn.next_request_id();
            let mut buf = BytesMut::with_capacity(64 + self.name.len());
            // Always a whole chunk: what the caller did not ask for is kept for the next
            // reads (a line-by-line reader asks for one byte at a time).
            let ask = READ_LENGTH as i32;
            wire::encode_read_segment(
                &mut buf,
                &self.name,
                self.read_offset,
                ask,
                &token,
                rid as i64,
            )
            .map_err(Error::from)?;
            // The store holds a read at the tail for a while; ours waits a little longer,
            // and no longer than the caller's deadline.
            let wait = self.client.config().request_timeout + Duration::from_secs(5);
            let wait = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(wait),
                None => wait,
            };
            let reply = match conn.request(rid, buf.freeze(), wait, "READ_SEGMENT").await {
                Err(e) if e.kind() == ErrorKind::Timeout && deadline.is_none() => continue,
                r => r?,
            };
            match reply {
                Reply::SegmentRead {
                    data,
                    end_of_segment,
                    ..
                } => {
                    if !data.is_empty() {
                        self.read_ahead = data;
                        return Ok(self.hand_out(max));
                    }
                    if end_of_segment {
                        return Ok(Bytes::new());
                    }
                }
                Reply::SegmentIsTruncated { start_offset, .. } => {
                    return Err(Error::new(
                        ErrorKind::OutOfRange,
                        format!(
                            "byte stream {} was truncated: its data now starts at offset \
                             {start_offset}, the read position is {} (seek to the head)",
                            self.stream, self.read_offset
                        ),
                    ))
                }
                other => return Err(unexpected(other, "READ_SEGMENT")),
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Error::timeout(format!(
                    "reading byte stream {} at offset {}",
                    self.stream, self.read_offset
                )));
            }
        }
    }

    fn hand_out(&mut self, max: usize) -> Bytes {
        let n = max.min(self.read_ahead.len());
        let out = self.read_ahead.split_to(n);
        self.read_offset += n as i64;
        out
    }

    /// Move the read position; returns it.
    pub async fn seek(&mut self, offset: i64, whence: Whence) -> Result<i64> {
        self.live()?;
        let tail = match whence {
            Whence::End => self.tail_offset().await?,
            _ => 0,
        };
        let at = seek_target(whence, offset, self.read_offset, tail)?;
        if at != self.read_offset {
            self.read_ahead = Bytes::new();
            self.read_offset = at;
        }
        Ok(at)
    }

    /// Drop the data before `offset` (the official `truncate`: the head moves, not the tail).
    pub async fn truncate(&mut self, offset: i64) -> Result<()> {
        self.live()?;
        if offset < 0 {
            return Err(Error::invalid(format!(
                "offset must be 0 or more, not {offset}"
            )));
        }
        let node = self
            .client
            .controller()
            .get_uri(&self.stream, self.segment)
            .await?;
        let conn = self.client.connection(&node).await?;
        let token = self.client.delegation_token(&self.stream).await?;
        let rid = conn.next_request_id();
        let mut buf = BytesMut::with_capacity(64 + self.name.len());
        wire::encode_truncate_segment(&mut buf, rid as i64, &self.name, offset, &token)
            .map_err(Error::from)?;
        let timeout = self.client.config().request_timeout;
        match conn
            .request(rid, buf.freeze(), timeout, "TRUNCATE_SEGMENT")
            .await?
        {
            Reply::SegmentTruncated { .. } => Ok(()),
            other => Err(unexpected(other, "TRUNCATE_SEGMENT")),
        }
    }

    /// The first readable offset (0 until `truncate`).
    pub async fn head_offset(&self) -> Result<i64> {
        self.live()?;
        let token = self.client.delegation_token(&self.stream).await?;
        Ok(self
            .client
            .segment_info(&self.stream, self.segment, &token)
            .await?
            .start_offset)
    }

    /// The offset the next byte written lands at (bytes still buffered not counted).
    pub async fn tail_offset(&self) -> Result<i64> {
        self.live()?;
        let token = self.client.delegation_token(&self.stream).await?;
        Ok(self
            .client
            .segment_info(&self.stream, self.segment, &token)
            .await?
            .write_offset)
    }

    /// Flush, then seal the stream: no byte can be added after this, and readers reach its
    /// end (`read` returns nothing there).
    pub async fn seal(&mut self) -> Result<()> {
        self.flush().await?;
        self.client.controller().seal_stream(&self.stream).await
    }

    /// Flush, then close the append connection. Idempotent; a failed flush still closes.
    pub async fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let flushed = self.flush().await;
        self.closed = true;
        if let Some(a) = self.appender.take() {
            a.conn.close();
        }
        flushed
    }
}

/// The event number after the store's last one (`NO_EVENT_NUMBER`: a new writer).
fn next_event_after(last: i64) -> i64 {
    if last == NO_EVENT_NUMBER {
        1
    } else {
        last + 1
    }
}

fn retriable(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Disconnected | ErrorKind::Connect)
}

fn unexpected(reply: Reply, what: &str) -> Error {
    reply.error().unwrap_or_else(|| {
        Error::new(
            ErrorKind::Protocol,
            format!("unexpected answer to {what}: {reply:?}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeks_count_from_start_current_or_end_and_never_go_before_zero() {
        assert_eq!(seek_target(Whence::Start, 5, 100, 200).unwrap(), 5);
        assert_eq!(seek_target(Whence::Current, -40, 100, 200).unwrap(), 60);
        assert_eq!(seek_target(Whence::End, -3, 100, 200).unwrap(), 197);
        assert_eq!(seek_target(Whence::End, 10, 100, 200).unwrap(), 210);
        let e = seek_target(Whence::Current, -101, 100, 200).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(seek_target(Whence::Current, i64::MIN, 100, 200).is_err());
        assert!(Whence::from_io(3).is_err());
        assert_eq!(Whence::from_io(2).unwrap(), Whence::End);
    }

    #[test]
    fn a_new_writer_starts_at_event_one() {
        assert_eq!(next_event_after(NO_EVENT_NUMBER), 1);
        assert_eq!(next_event_after(7), 8);
    }
}
