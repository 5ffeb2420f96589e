//! Byte streams: a one-segment stream read and written as plain bytes (no event framing),
//! what the official clients call `ByteWriter` / `ByteReader` (Python: `ByteStream`).
//!
//! Writes are buffered and sent as `CONDITIONAL_BLOCK_END` appends: raw bytes written only if
//! the segment is exactly as long as this writer believes. So two writers never interleave
//! their bytes: the second one's append fails (`CONDITIONAL_CHECK_FAILED`) and raises instead
//! of landing in the middle of the first one's data. Up to [`WINDOW`] blocks are in flight,
//! each conditional on the ones before it landing (one writer's blocks arrive in order on one
//! connection, so only another writer can break the chain); a lost connection re-sets the
//! writer up, and the store's last event number says which blocks in flight landed: the
//! others are sent again from the new tail (the condition makes each land at most once). The
//! store acknowledges by event number, one `DATA_APPENDED` for every block up to it (it
//! answers a burst of blocks with one reply), so answers are matched by number, not request.
//!
//! Unlike the official writer, which starts at offset 0 and so fails on a stream that already
//! has data, ours starts at the segment's tail. Reads are `READ_SEGMENT`s from the read
//! position (held by the store at the tail until data comes); the bytes past what the caller
//! asked for are kept for the next read, and while reads come back full the next
//! [`READ_AHEAD`] chunks are already asked for (a backlog is read at the store's speed, not
//! one round trip per chunk).
//! Data before the head (after `truncate`) is an `OutOfRange` error naming the new head. The
//! segment store's address is asked of the controller once and again only after a
//! connection to it fails.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::sync::{mpsc, oneshot};

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::client::PravegaClient;
use crate::connection::Connection;
use crate::controller::{segment_name, NodeUri, ScopedStream};
use crate::wire::{self, reply::NO_EVENT_NUMBER, Reply};

/// Bytes buffered before a block is sent without waiting for `flush`.
pub const BLOCK: usize = 1 << 20;
/// The largest append the segment store takes (`MAX_WRITE_SIZE`, 8 MiB).
pub const MAX_BLOCK: usize = 8 << 20;
/// Bytes asked for per `READ_SEGMENT`.
const READ_LENGTH: usize = 1 << 20;
/// Chunks asked for ahead of the caller while a backlog is read.
const READ_AHEAD: usize = 2;
/// Blocks sent and not yet acknowledged, at most: enough to keep the store busy while the
/// answer to the oldest travels back (measured: one in flight reached 0.6x the official
/// writer, whose blocks are pipelined).
pub const WINDOW: usize = 4;

/// A reply to come.
type Answer = oneshot::Receiver<Result<Reply>>;

/// A block sent and not yet acknowledged.
struct InFlight {
    event: i64,
    block: Bytes,
}

/// A `READ_SEGMENT` asked ahead of the caller, at `offset`.
struct ReadAhead {
    offset: i64,
    answer: Answer,
}

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
    /// Every frame the store sends on the append connection.
    replies: mpsc::Receiver<Reply>,
    writer_id: u128,
    /// Number of the next block (the store remembers the last one it wrote).
    next_event: i64,
    /// Where the next block must land: the segment's length once every block in flight
    /// has landed.
    write_offset: i64,
    /// Oldest first.
    in_flight: VecDeque<InFlight>,
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
    /// The next chunks, asked for while the caller reads the current one (oldest first).
    next_reads: VecDeque<ReadAhead>,
    /// The segment store holding the segment (asked again after a failed connection).
    node: Option<NodeUri>,
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
            next_reads: VecDeque::new(),
            node: None,
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
            self.guarded(false).await?;
        }
        Ok(data.len())
    }

    /// Send everything buffered and wait until the segment store has it.
    pub async fn flush(&mut self) -> Result<()> {
        self.live()?;
        self.guarded(true).await
    }

    /// Send the next block (`all`: every buffered byte, and wait for every block in flight).
    /// On failure every byte not acknowledged is dropped and the error says how many (after
    /// a conflicting writer every later offset is wrong too).
    async fn guarded(&mut self, all: bool) -> Result<()> {
        let res = if all {
            self.send_all().await
        } else {
            self.send_one().await
        };
        if let Err(e) = res {
            let in_flight = self.appender.take().map_or(0, |a| {
                a.conn.close();
                a.in_flight.iter().map(|f| f.block.len()).sum::<usize>()
            });
            let lost = in_flight + self.buffered.len();
            self.buffered.clear();
            return Err(e.context(format!(
                "{lost} bytes for byte stream {} were not written",
                self.stream
            )));
        }
        Ok(())
    }

    async fn send_all(&mut self) -> Result<()> {
        while !self.buffered.is_empty() {
            self.send_one().await?;
        }
        while self
            .appender
            .as_ref()
            .is_some_and(|a| !a.in_flight.is_empty())
        {
            self.settle_oldest().await?;
        }
        Ok(())
    }

    /// Send one block of the buffered bytes, first making room in the window.
    async fn send_one(&mut self) -> Result<()> {
        if self.appender.is_none() {
            self.set_up().await?;
        }
        while self
            .appender
            .as_ref()
            .is_some_and(|a| a.in_flight.len() >= WINDOW)
        {
            self.settle_oldest().await?;
        }
        let n = self.buffered.len().min(MAX_BLOCK);
        let block = self.buffered.split_to(n).freeze();
        match self.start_block(block).await {
            Err(e) if retriable(&e) => self.recover().await,
            other => other,
        }
    }

    /// Send `block` as the next conditional append (the store checks that it lands at the
    /// offset where the blocks before it end). It is in the window from here, so a failed
    /// send leaves it to `recover` to send again.
    async fn start_block(&mut self, block: Bytes) -> Result<()> {
        let a = self.appender.as_mut().expect("set up before appending");
        let mut buf = BytesMut::with_capacity(48 + block.len());
        wire::encode_conditional_block_end(
            &mut buf,
            a.writer_id,
            a.next_event,
            a.write_offset,
            &block,
            a.conn.next_request_id() as i64,
        )
        .map_err(Error::from)?;
        a.write_offset += block.len() as i64;
        a.in_flight.push_back(InFlight {
            event: a.next_event,
            block,
        });
        a.next_event += 1;
        a.conn.send(buf.freeze()).await
    }

    /// Wait until the oldest block in flight is acknowledged; a lost connection is recovered
    /// from.
    async fn settle_oldest(&mut self) -> Result<()> {
        let timeout = self.client.config().request_timeout;
        let a = self.appender.as_mut().expect("blocks in flight");
        let Some(oldest) = a.in_flight.front().map(|f| f.event) else {
            return Ok(());
        };
        loop {
            let reply = match tokio::time::timeout(timeout, a.replies.recv()).await {
                Err(_) => {
                    return Err(Error::timeout(format!(
                        "byte stream {}: no answer to block {oldest} in {timeout:?}",
                        self.stream
                    )))
                }
                Ok(None) => None,
                Ok(Some(r)) => Some(r),
            };
            match reply {
                Some(Reply::KeepAlive) => continue,
                Some(Reply::DataAppended { event_number, .. }) => {
                    while a.in_flight.front().is_some_and(|f| f.event <= event_number) {
                        a.in_flight.pop_front();
                    }
                    if event_number >= oldest {
                        return Ok(());
                    }
                }
                Some(Reply::ConditionalCheckFailed { .. }) => {
                    let offset = a.write_offset
                        - a.in_flight
                            .iter()
                            .map(|f| f.block.len() as i64)
                            .sum::<i64>();
                    return Err(Error::new(
                        ErrorKind::Server,
                        format!(
                            "byte stream {} was appended to by another writer (it is no \
                             longer {offset} bytes long)",
                            self.stream
                        ),
                    ));
                }
                Some(other) => return Err(unexpected(other, "CONDITIONAL_BLOCK_END")),
                None => return self.recover().await,
            }
        }
    }

    /// The append connection went: set up again; the blocks the store's last event number
    /// covers landed, the others are sent again, in order, from the tail.
    async fn recover(&mut self) -> Result<()> {
        let pending = match self.appender.take() {
            Some(a) => {
                a.conn.close();
                a.in_flight
            }
            None => VecDeque::new(),
        };
        self.node = None;
        let last = self.set_up().await?;
        for f in pending.into_iter().filter(|f| f.event > last) {
            self.start_block(f.block).await?;
        }
        Ok(())
    }

    /// The segment store's address (asked of the controller once, until a connection to it
    /// fails).
    async fn node(&mut self) -> Result<NodeUri> {
        if let Some(n) = &self.node {
            return Ok(n.clone());
        }
        let n = self
            .client
            .controller()
            .get_uri(&self.stream, self.segment)
            .await?;
        self.node = Some(n.clone());
        Ok(n)
    }

    /// Dial the segment's store, `SETUP_APPEND`, and start at the segment's tail; returns the
    /// store's last event number of this writer.
    async fn set_up(&mut self) -> Result<i64> {
        let (conn, replies, last) = crate::writer::setup(
            &self.client,
            &self.stream,
            self.segment,
            &self.name,
            self.writer_id,
        )
        .await?;
        let token = self.client.delegation_token(&self.stream).await?;
        let tail = match self.segment_info(&token).await {
            Ok(info) => info.write_offset,
            Err(e) => {
                conn.close();
                return Err(e);
            }
        };
        self.appender = Some(Appender {
            conn,
            replies,
            writer_id: self.writer_id,
            next_event: next_event_after(last),
            write_offset: tail,
            in_flight: VecDeque::new(),
        });
        Ok(last)
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
        loop {
            // The store holds a read at the tail for a while; ours waits a little longer,
            // and no longer than the caller's deadline.
            let wait = self.client.config().request_timeout + Duration::from_secs(5);
            let wait = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()).min(wait),
                None => wait,
            };
            // A chunk asked for ahead at another offset (the tail was reached before it) is
            // dropped: its bytes are asked for again where the reader is.
            let answer = loop {
                match self.next_reads.pop_front() {
                    Some(r) if r.offset == self.read_offset => break r.answer,
                    Some(_) => continue,
                    None => break self.ask(self.read_offset).await?,
                }
            };
            let reply = match tokio::time::timeout(wait, answer).await {
                Ok(Ok(r)) => r,
                Ok(Err(_)) => Err(Error::new(
                    ErrorKind::Disconnected,
                    "the read connection ended",
                )),
                Err(_) => Err(Error::timeout(format!(
                    "reading byte stream {} at offset {}",
                    self.stream, self.read_offset
                ))),
            };
            let reply = match reply {
                Err(e) if e.kind() == ErrorKind::Timeout && deadline.is_none() => continue,
                Err(e) if matches!(e.kind(), ErrorKind::Connect | ErrorKind::Disconnected) => {
                    self.node = None;
                    return Err(e);
                }
                r => r?,
            };
            match reply {
                Reply::SegmentRead {
                    data,
                    end_of_segment,
                    ..
                } => {
                    if !data.is_empty() {
                        if data.len() >= READ_LENGTH {
                            // A backlog: the next chunks are asked for now, read while the
                            // caller takes this one.
                            let mut next = self
                                .next_reads
                                .back()
                                .map_or(self.read_offset + data.len() as i64, |r| {
                                    r.offset + READ_LENGTH as i64
                                });
                            while self.next_reads.len() < READ_AHEAD {
                                let answer = self.ask(next).await?;
                                self.next_reads.push_back(ReadAhead {
                                    offset: next,
                                    answer,
                                });
                                next += READ_LENGTH as i64;
                            }
                        }
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

    /// Queue a `READ_SEGMENT` of a whole chunk at `offset` (what the caller did not ask for
    /// is kept for the next reads: a line-by-line reader asks for one byte at a time).
    async fn ask(&mut self, offset: i64) -> Result<Answer> {
        let node = self.node().await?;
        let token = self.client.delegation_token(&self.stream).await?;
        let conn = match self.client.connection(&node).await {
            Ok(c) => c,
            Err(e) => {
                self.node = None;
                return Err(e);
            }
        };
        let rid = conn.next_request_id();
        let mut buf = BytesMut::with_capacity(64 + self.name.len());
        wire::encode_read_segment(
            &mut buf,
            &self.name,
            offset,
            READ_LENGTH as i32,
            &token,
            rid as i64,
        )
        .map_err(Error::from)?;
        // The deadline here is the connection's sweep of forgotten requests; the caller's
        // own wait is applied where the answer is awaited.
        let sweep = self.client.config().request_timeout * 4 + Duration::from_secs(5);
        conn.start_request(rid, buf.freeze(), Instant::now() + sweep, "READ_SEGMENT")
            .await
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
            self.next_reads.clear();
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
        let node = self.node().await?;
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
        Ok(self.segment_info(&token).await?.start_offset)
    }

    /// The offset the next byte written lands at (bytes still buffered not counted).
    pub async fn tail_offset(&self) -> Result<i64> {
        self.live()?;
        let token = self.client.delegation_token(&self.stream).await?;
        Ok(self.segment_info(&token).await?.write_offset)
    }

    async fn segment_info(&self, token: &str) -> Result<crate::client::SegmentInfo> {
        self.client
            .segment_info(&self.stream, self.segment, token)
            .await
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
