//! The Pravega segment store's own ceiling, measured with no client engine in the way: what
//! the Python clients' bulk paths are compared against (`benches/pravega_bench.py` runs this
//! beside them). Frames come from the crate's wire codec (`streamwire_pravega::wire`).
//!
//! - `write`: per connection one SETUP_APPEND (a fresh writer id), then APPEND_BLOCK_END blocks
//!   of `--block` bytes of `--size`-byte events, every one built before the clock starts,
//!   written with at most `--window` blocks unacknowledged. `--window 1` is one block in flight:
//!   write, wait for its DATA_APPENDED, write the next. `--call N` cuts the events into
//!   synchronous calls of N: a call's blocks go out pipelined (within the window), the next
//!   call's only once all of them are acknowledged — the most a `write_many` of N events can
//!   reach (each call's p50/p99/max time is printed). Several `--segments` (comma-separated, a
//!   stream's segments) or `--connections` run side by side, each its own connection and
//!   writer; the events are split evenly. The rate is events over first write → last ack.
//! - `read`: pipelined READ_SEGMENTs of `--block` bytes, `--window` in flight, from offset 0 to
//!   the segment's length (GET_STREAM_SEGMENT_INFO), every event counted by walking the EVENT
//!   headers in offset order.
//!
//! DATA_APPENDED is cumulative: the store acknowledges appends in event-number order and skips
//! the ack of an append whose number a later append's ack already covered (0.13's
//! `AppendProcessor.handleAppendResult` sends one only when `lastAcked < eventNumber`; the
//! completions of two pipelined appends can take the ack lock in either order). A tool that
//! waits for one reply per block (the old `benches/pravega_raw.py`) then waits forever for an
//! ack that was folded into the next one; here every ack settles all blocks up to its event
//! number, as the engine's writer does.
//!
//! Prints one line of JSON. Usage:
//! `pravega_ceiling write|read <host:port> <segment[,segment...]> [--events N] [--size B]
//! [--block B] [--window N] [--connections N] [--call N]`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};
use streamwire_pravega::wire::{
    check_hello, decode_frame, encode_append_block_end, encode_get_stream_segment_info,
    encode_hello, encode_read_segment, encode_setup_append, Reply, MAX_FRAME,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A reply as error text, cut short (error replies carry the server's whole stack trace).
fn brief(r: &Reply) -> String {
    let mut s = format!("{r:?}");
    if s.len() > 400 {
        let mut end = 400;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("...");
    }
    s
}

/// A pre-built APPEND_BLOCK_END frame and the event number of its last event.
type Block = (Bytes, i64);

/// Bytes of an EVENT header (`type:i32 length:i32`) in segment data.
const EVENT_HEADER: usize = 8;

struct Reader {
    half: OwnedReadHalf,
    buf: BytesMut,
}

impl Reader {
    async fn next(&mut self) -> Res<Reply> {
        loop {
            if let Some(r) = decode_frame(&mut self.buf, MAX_FRAME)? {
                return Ok(r);
            }
            self.buf.reserve(1 << 20);
            if self.half.read_buf(&mut self.buf).await? == 0 {
                return Err("the segment store closed the connection".into());
            }
        }
    }
}

/// A connection past HELLO.
async fn connect(addr: &str) -> Res<(Reader, OwnedWriteHalf)> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (r, mut w) = stream.into_split();
    let mut out = BytesMut::new();
    encode_hello(&mut out);
    w.write_all(&out).await?;
    let mut reader = Reader {
        half: r,
        buf: BytesMut::with_capacity(1 << 20),
    };
    match reader.next().await? {
        Reply::Hello { high, low } => check_hello(high, low)?,
        other => return Err(format!("expected HELLO, got {}", brief(&other)).into()),
    }
    Ok((reader, w))
}

/// A writer id no earlier run used (the store remembers every writer's last event number).
fn writer_id(i: u64) -> u128 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    (nanos << 32) ^ (u128::from(std::process::id()) << 16) ^ u128::from(i)
}

/// One writer's connection set up on `segment`: reader, writer, id, first event number.
async fn setup_append(
    addr: &str,
    segment: &str,
    i: u64,
) -> Res<(Reader, OwnedWriteHalf, u128, i64)> {
    let (mut reader, mut w) = connect(addr).await?;
    let id = writer_id(i);
    let mut out = BytesMut::new();
    encode_setup_append(&mut out, 1, id, segment, "")?;
    w.write_all(&out).await?;
    let last = match reader.next().await? {
        Reply::AppendSetup {
            last_event_number, ..
        } => last_event_number,
        other => return Err(format!("SETUP_APPEND on {segment}: {}", brief(&other)).into()),
    };
    Ok((reader, w, id, last.max(0) + 1))
}

/// Blocks of `events` events of `size` bytes, `block` bytes at most each (at least one
/// event), cut at every `call` events (a synchronous call's events never share a block with
/// the next call's): the frames, each block's last event number, and the index of each
/// call's first block. Numbered from `first`.
fn build_blocks(
    id: u128,
    events: u64,
    size: usize,
    block: usize,
    call: u64,
    first: i64,
) -> Res<(Vec<Block>, Vec<usize>)> {
    let per_block = (block / (size + EVENT_HEADER)).max(1) as u64;
    let call = if call == 0 { events.max(1) } else { call };
    let mut event = BytesMut::new();
    streamwire_pravega::wire::put_event(&mut event, &vec![0x61u8; size])?;
    let mut blocks = Vec::new();
    let mut calls = Vec::new();
    let mut data = BytesMut::new();
    let mut done = 0u64;
    let mut request = 2i64;
    while done < events {
        if done.is_multiple_of(call) {
            calls.push(blocks.len());
        }
        let n = per_block.min(events - done).min(call - done % call);
        data.clear();
        for _ in 0..n {
            data.extend_from_slice(&event);
        }
        done += n;
        let last = first + done as i64 - 1;
        let mut frame = BytesMut::with_capacity(data.len() + 64);
        encode_append_block_end(&mut frame, id, &data, n as i32, last, request)?;
        blocks.push((frame.freeze(), last));
        request += 1;
    }
    Ok((blocks, calls))
}

/// What one writer's run observed.
struct WriteRun {
    blocks: usize,
    acks: u64,
    /// Each call's time from its first write to its last ack, in seconds.
    calls: Vec<f64>,
}

/// The blocks a DATA_APPENDED for `acked` settles, starting at `settled`: the new count.
fn settle(blocks: &[Block], mut settled: usize, acked: i64) -> usize {
    while settled < blocks.len() && blocks[settled].1 <= acked {
        settled += 1;
    }
    settled
}

async fn ack(reader: &mut Reader) -> Res<i64> {
    loop {
        match reader.next().await? {
            Reply::DataAppended { event_number, .. } => return Ok(event_number),
            Reply::KeepAlive => {}
            other => return Err(format!("append failed: {}", brief(&other)).into()),
        }
    }
}

/// One connection's writer: `blocks` pre-built, at most `window` unacknowledged, and a
/// call's blocks only once every block of the calls before it is acknowledged (one call =
/// everything: fully pipelined). Writes and reads take turns on one task: the store's
/// acknowledgements are a few dozen bytes, so they wait in the socket buffer meanwhile.
async fn write_one(
    mut reader: Reader,
    mut w: OwnedWriteHalf,
    blocks: Vec<Block>,
    calls: Vec<usize>,
    window: usize,
    start: Arc<tokio::sync::Barrier>,
) -> Res<WriteRun> {
    start.wait().await;
    let (mut acks, mut settled, mut next) = (0u64, 0usize, 0usize);
    let mut times = Vec::with_capacity(calls.len());
    for (i, &first) in calls.iter().enumerate() {
        let end = calls.get(i + 1).copied().unwrap_or(blocks.len());
        debug_assert_eq!(first, next);
        let t = Instant::now();
        while settled < end {
            while next < end && next - settled < window {
                w.write_all(&blocks[next].0).await?;
                next += 1;
            }
            settled = settle(&blocks, settled, ack(&mut reader).await?);
            acks += 1;
        }
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(WriteRun {
        blocks: blocks.len(),
        acks,
        calls: times,
    })
}

struct Opts {
    events: u64,
    size: usize,
    block: usize,
    window: usize,
    connections: usize,
    /// Events per synchronous call (0: one call of everything).
    call: u64,
}

async fn write(addr: &str, segments: &[String], o: &Opts) -> Res<String> {
    let start = Arc::new(tokio::sync::Barrier::new(o.connections + 1));
    let per = o.events / o.connections as u64;
    let mut tasks = Vec::new();
    for i in 0..o.connections {
        let segment = &segments[i % segments.len()];
        let (reader, w, id, first) = setup_append(addr, segment, i as u64).await?;
        let (blocks, calls) = build_blocks(id, per, o.size, o.block, o.call, first)?;
        tasks.push(tokio::spawn(write_one(
            reader,
            w,
            blocks,
            calls,
            o.window,
            start.clone(),
        )));
    }
    // Every connection set up and every frame built: the clock starts for all at once.
    start.wait().await;
    let t0 = Instant::now();
    let (mut blocks, mut acks, mut calls) = (0usize, 0u64, Vec::new());
    for t in tasks {
        let run = t.await??;
        blocks += run.blocks;
        acks += run.acks;
        calls.extend(run.calls);
    }
    let seconds = t0.elapsed().as_secs_f64();
    let events = per * o.connections as u64;
    let mut line = format!(
        "{{\"mode\": \"write\", \"events\": {events}, \"size\": {}, \"block\": {}, \
         \"window\": {}, \"connections\": {}, \"call\": {}, \"seconds\": {seconds:.6}, \
         \"events_per_s\": {:.0}, \"mb_per_s\": {:.1}, \"blocks\": {blocks}, \"acks\": {acks}",
        o.size,
        o.block,
        o.window,
        o.connections,
        o.call,
        events as f64 / seconds,
        (events * o.size as u64) as f64 / seconds / 1e6,
    );
    if o.call > 0 && !calls.is_empty() {
        calls.sort_by(f64::total_cmp);
        let pct = |q: f64| calls[((calls.len() - 1) as f64 * q) as usize] * 1e3;
        line += &format!(
            ", \"call_p50_ms\": {:.3}, \"call_p99_ms\": {:.3}, \"call_max_ms\": {:.3}",
            pct(0.5),
            pct(0.99),
            pct(1.0)
        );
    }
    Ok(line + "}")
}

/// Counts whole events in segment data handed over in offset order (an event may straddle
/// two reads).
#[derive(Default)]
struct EventCounter {
    /// Bytes of the current event still to skip (its data, after its header).
    skip: usize,
    /// A header cut by a read's end.
    partial: Vec<u8>,
    events: u64,
}

impl EventCounter {
    fn feed(&mut self, mut data: &[u8]) -> Res<()> {
        loop {
            if self.skip > 0 {
                let n = self.skip.min(data.len());
                self.skip -= n;
                data = &data[n..];
                if self.skip > 0 {
                    return Ok(());
                }
                self.events += 1;
            }
            if data.is_empty() {
                return Ok(());
            }
            let need = EVENT_HEADER - self.partial.len();
            let n = need.min(data.len());
            self.partial.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.partial.len() < EVENT_HEADER {
                return Ok(());
            }
            let h = &self.partial;
            let kind = i32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            let len = i32::from_be_bytes([h[4], h[5], h[6], h[7]]);
            if kind != 0 || len < 0 {
                return Err(format!("not an EVENT header: type {kind} length {len}").into());
            }
            self.partial.clear();
            self.skip = len as usize;
            if self.skip == 0 {
                self.events += 1;
            }
        }
    }
}

async fn read(addr: &str, segment: &str, o: &Opts) -> Res<String> {
    let (mut reader, mut w) = connect(addr).await?;
    let mut out = BytesMut::new();
    encode_get_stream_segment_info(&mut out, 1, segment, "")?;
    w.write_all(&out).await?;
    let end = match reader.next().await? {
        Reply::StreamSegmentInfo { write_offset, .. } => write_offset,
        other => {
            return Err(format!("GET_STREAM_SEGMENT_INFO {segment}: {}", brief(&other)).into())
        }
    };
    let block = i64::try_from(o.block)?;
    let t0 = Instant::now();
    // request id -> (offset, length) asked
    let mut asked: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    // offset -> data answered, not counted yet (answers may come out of offset order)
    let mut answered: BTreeMap<i64, Bytes> = BTreeMap::new();
    let (mut next_ask, mut counted, mut request) = (0i64, 0i64, 2i64);
    let mut counter = EventCounter::default();
    let mut reads = 0u64;
    while counted < end {
        out.clear();
        while asked.len() < o.window && next_ask < end {
            let n = block.min(end - next_ask);
            encode_read_segment(&mut out, segment, next_ask, n as i32, "", request)?;
            asked.insert(request, (next_ask, n));
            next_ask += n;
            request += 1;
        }
        if !out.is_empty() {
            w.write_all(&out).await?;
        }
        let (request_id, offset, data) = match reader.next().await? {
            Reply::SegmentRead {
                request_id,
                offset,
                data,
                ..
            } => (request_id, offset, data),
            Reply::KeepAlive => continue,
            other => return Err(format!("read failed: {}", brief(&other)).into()),
        };
        reads += 1;
        let (at, len) = asked.remove(&request_id).ok_or("an answer to no request")?;
        let got = data.len() as i64;
        if offset != at || got > len {
            return Err(format!("asked {len} at {at}, got {got} at {offset}").into());
        }
        if got < len {
            // A short answer: the rest of that range is asked again right away.
            out.clear();
            encode_read_segment(&mut out, segment, at + got, (len - got) as i32, "", request)?;
            asked.insert(request, (at + got, len - got));
            request += 1;
            w.write_all(&out).await?;
        }
        if got > 0 {
            answered.insert(offset, data);
        }
        while let Some(d) = answered.remove(&counted) {
            counter.feed(&d)?;
            counted += d.len() as i64;
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    if counter.skip != 0 || !counter.partial.is_empty() {
        return Err("the segment ends inside an event".into());
    }
    let events = counter.events;
    Ok(format!(
        "{{\"mode\": \"read\", \"events\": {events}, \"bytes\": {end}, \"block\": {}, \
         \"window\": {}, \"seconds\": {seconds:.6}, \"events_per_s\": {:.0}, \
         \"mb_per_s\": {:.1}, \"reads\": {reads}}}",
        o.block,
        o.window,
        events as f64 / seconds,
        end as f64 / seconds / 1e6,
    ))
}

fn parse_opts(mode: &str, segments: usize, rest: &[String]) -> Res<Opts> {
    let mut o = Opts {
        events: 300_000,
        size: 100,
        block: 1 << 20,
        window: if mode == "read" { 4 } else { 8 },
        connections: segments,
        call: 0,
    };
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--events" => o.events = v.parse()?,
            "--size" => o.size = v.parse()?,
            "--block" => o.block = v.parse()?,
            "--window" => o.window = v.parse()?,
            "--connections" => o.connections = v.parse()?,
            "--call" => o.call = v.parse()?,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    if o.window == 0 || o.connections == 0 || o.block == 0 {
        return Err("--window, --connections and --block must be at least 1".into());
    }
    Ok(o)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        return Err(
            "usage: pravega_ceiling write|read <host:port> <segment[,segment...]> \
                    [--events N] [--size B] [--block B] [--window N] [--connections N] \
                    [--call N]"
                .into(),
        );
    }
    let (mode, addr) = (args[1].as_str(), args[2].as_str());
    let segments: Vec<String> = args[3].split(',').map(str::to_owned).collect();
    let o = parse_opts(mode, segments.len(), &args[4..])?;
    let line = match mode {
        "write" => write(addr, &segments, &o).await?,
        "read" => read(addr, &segments[0], &o).await?,
        other => return Err(format!("unknown mode {other}").into()),
    };
    println!("{line}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_never_share_a_block() {
        let (blocks, calls) = build_blocks(7, 10, 100, 3 * 108, 4, 1).unwrap();
        let lasts: Vec<i64> = blocks.iter().map(|b| b.1).collect();
        assert_eq!((lasts, calls), (vec![3, 4, 7, 8, 10], vec![0, 2, 4]));
    }

    #[test]
    fn counts_events_across_any_split() {
        let mut data = BytesMut::new();
        for n in [0usize, 3, 100, 7] {
            streamwire_pravega::wire::put_event(&mut data, &vec![1u8; n]).unwrap();
        }
        for cut in 0..data.len() {
            let mut c = EventCounter::default();
            c.feed(&data[..cut]).unwrap();
            c.feed(&data[cut..]).unwrap();
            assert_eq!(c.events, 4, "cut at {cut}");
            assert!(c.skip == 0 && c.partial.is_empty());
        }
    }

    #[test]
    fn an_ack_settles_every_block_up_to_its_number() {
        let (blocks, calls) = build_blocks(7, 10, 100, 3 * 108, 0, 1).unwrap();
        let lasts: Vec<i64> = blocks.iter().map(|b| b.1).collect();
        assert_eq!((lasts, calls), (vec![3, 6, 9, 10], vec![0]));
        assert_eq!(settle(&blocks, 0, 2), 0);
        assert_eq!(settle(&blocks, 0, 6), 2); // one ack covered two blocks
        assert_eq!(settle(&blocks, 2, 10), 4);
    }
}
