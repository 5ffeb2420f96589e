//! The broker's own ceiling, measured with no client engine in the way: what a Python client's
//! bulk paths are compared against (`benches/pulsar_ceiling.py` runs this beside them).
//!
//! - `produce`: every SEND frame (batches of `--batch` plain messages of `--size` bytes) is
//!   built before the clock starts, then written pipelined on one connection while a reader
//!   counts receipts; the rate is messages over first write → last receipt.
//! - `produce-window`: the same frames, pipelined with at most `[per_call]` messages (10,000 by
//!   default, our producers' `max_pending_messages`) written and not yet acknowledged.
//! - `produce-calls`: the same frames, written `[per_call]` messages (10,000 by default) at a
//!   time, each group's receipts awaited before the next is written: what a synchronous bulk
//!   call of that size (ours `send_many`) can reach at most, its pipeline drained per call.
//! - `dispatch`: one exclusive subscription from the earliest message of a topic that already
//!   holds `--messages` messages; permits are granted far ahead and nothing is acknowledged;
//!   the rate is messages (counted from each entry's `num_messages_in_batch`) over subscribe →
//!   last message.
//! - `inflight1`: `[batch]` connections (8 by default), each its own producer on the topic,
//!   each sending single unbatched messages with one in flight: write, wait for the receipt,
//!   write the next. What any request/response front (the PIP-64 gateway's single-message
//!   POSTs from 8 keep-alive clients) can reach at most on this broker, with nothing of its
//!   own in the way; also prints the receipts' p50/p99 in ms.
//!
//! Prints one line of JSON: `{"mode": ..., "messages": n, "seconds": s, "msg_per_s": r}`.
//! Usage: `pulsar_ceiling produce|produce-window|produce-calls|dispatch|inflight1 <host:port> <topic>
//! <messages> [size] [batch|connections] [per_call]`.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use streamwire_pulsar::engine::batcher::{BatchBuilder, BatchConfig};
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::protocol::commands::{self, codec_feature_flags};
use streamwire_pulsar::protocol::pb::base_command::Type;
use streamwire_pulsar::protocol::{
    encode_command, encode_payload_command, pb, Frame, FrameDecoder, ProducerParams,
    SubscribeParams, CLIENT_PROTOCOL_VERSION, DEFAULT_MAX_FRAME_SIZE,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct Reader {
    half: OwnedReadHalf,
    buf: BytesMut,
    decoder: FrameDecoder,
    /// PINGs seen and not answered yet (the writer answers them).
    pongs: u32,
}

impl Reader {
    async fn next(&mut self) -> Res<Frame> {
        loop {
            if let Some(f) = self.decoder.decode(&mut self.buf)? {
                return Ok(f);
            }
            self.buf.reserve(1 << 20);
            if self.half.read_buf(&mut self.buf).await? == 0 {
                return Err("the broker closed the connection".into());
            }
        }
    }

    /// Frames until one of type `want` (an ERROR or SEND_ERROR ends the run).
    async fn until(&mut self, want: Type) -> Res<Frame> {
        loop {
            let f = self.next().await?;
            match f.command_type() {
                Some(t) if t == want => return Ok(f),
                Some(Type::Ping) => self.pongs += 1,
                Some(Type::Error) | Some(Type::SendError) => {
                    return Err(format!("broker error: {:?}", f.command).into())
                }
                _ => {}
            }
        }
    }
}

async fn connect(addr: &str) -> Res<(Reader, tokio::net::tcp::OwnedWriteHalf)> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (r, mut w) = stream.into_split();
    let mut out = BytesMut::new();
    let cmd = commands::connect(
        "streamwire-ceiling",
        CLIENT_PROTOCOL_VERSION,
        None,
        None,
        codec_feature_flags(),
        None,
    );
    encode_command(&cmd, &mut out);
    w.write_all(&out).await?;
    let mut reader = Reader {
        half: r,
        buf: BytesMut::with_capacity(1 << 20),
        decoder: FrameDecoder::default(),
        pongs: 0,
    };
    reader.until(Type::Connected).await?;
    Ok((reader, w))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A connection with producer `id` on `topic`: its reader, writer and the broker-given
/// producer name (what every SEND's metadata carries).
async fn open_producer(
    addr: &str,
    topic: &str,
    id: u64,
) -> Res<(Reader, tokio::net::tcp::OwnedWriteHalf, String)> {
    let (mut reader, mut w) = connect(addr).await?;
    let mut out = BytesMut::new();
    let params = ProducerParams {
        topic: topic.to_owned(),
        producer_id: id,
        request_id: 1,
        producer_name: None,
        user_provided_producer_name: false,
        encrypted: false,
        metadata: Vec::new(),
        schema: None,
        epoch: 0,
        access_mode: pb::ProducerAccessMode::Shared,
        topic_epoch: None,
        txn_enabled: false,
        initial_subscription_name: None,
    };
    encode_command(&commands::producer(&params), &mut out);
    w.write_all(&out).await?;
    let ok = reader.until(Type::ProducerSuccess).await?;
    let name = ok
        .command
        .producer_success
        .map(|p| p.producer_name)
        .unwrap_or_default();
    Ok((reader, w, name))
}

/// `window`: Some(w) keeps at most `w` messages written and not yet acknowledged (a client's
/// pending-messages window), writing the next entry as each receipt comes back.
/// `per_call`: None writes every frame at once (pipelined); Some(k) writes the frames of k
/// messages and waits for their receipts before writing the next ones (the shape of a
/// synchronous `send_many` of k messages, with nothing of a client in the way).
async fn produce(
    addr: &str,
    topic: &str,
    messages: u64,
    size: usize,
    batch: u32,
    per_call: Option<u64>,
    window: Option<u64>,
) -> Res<f64> {
    let (mut reader, mut w, name) = open_producer(addr, topic, 1).await?;
    // Every frame built before the clock starts.
    let payload = bytes::Bytes::from(vec![0x61u8; size]);
    let mut builder = BatchBuilder::new(BatchConfig {
        max_messages: batch,
        max_bytes: 5 << 20,
        ..BatchConfig::default()
    });
    let mut frames = BytesMut::new();
    // Where each call's frames end in `frames`, and how many entries each call has.
    let mut calls: Vec<(usize, u64)> = Vec::new();
    let (mut ends, mut sizes): (Vec<usize>, Vec<u64>) = (Vec::new(), Vec::new());
    let mut entries = 0u64;
    let mut seq = 0u64;
    let started = Instant::now();
    while seq < messages {
        let n = u64::from(batch).min(messages - seq);
        for i in 0..n {
            let _ = builder.add(OutgoingMessage::new(payload.clone(), seq + i), started);
        }
        let b = builder.take().ok_or("empty batch")?;
        let md = pb::MessageMetadata {
            producer_name: name.clone(),
            sequence_id: b.first_sequence_id,
            publish_time: now_ms(),
            num_messages_in_batch: Some(b.num_messages as i32),
            uncompressed_size: Some(b.uncompressed_size as u32),
            highest_sequence_id: Some(b.last_sequence_id),
            ..Default::default()
        };
        let cmd = commands::send(
            1,
            b.first_sequence_id,
            b.num_messages as i32,
            Some(b.last_sequence_id),
            false,
            false,
        );
        encode_payload_command(&cmd, &md, &b.payload, &mut frames, DEFAULT_MAX_FRAME_SIZE)?;
        entries += 1;
        seq += n;
        ends.push(frames.len());
        sizes.push(n);
        if let Some(k) = per_call {
            if seq.is_multiple_of(k.max(1)) || seq == messages {
                let before: u64 = calls.iter().map(|c| c.1).sum();
                calls.push((frames.len(), entries - before));
            }
        }
    }
    if let Some(window) = window {
        // Entries' ends in `frames` and sizes, to write one at a time.
        let t0 = Instant::now();
        let (mut from, mut written, mut acked, mut in_flight) = (0usize, 0usize, 0u64, 0u64);
        while acked < entries {
            while written < ends.len() && in_flight + sizes[written] <= window.max(sizes[written]) {
                w.write_all(&frames[from..ends[written]]).await?;
                from = ends[written];
                in_flight += sizes[written];
                written += 1;
            }
            reader.until(Type::SendReceipt).await?;
            in_flight -= sizes[acked as usize];
            acked += 1;
        }
        return Ok(t0.elapsed().as_secs_f64());
    }
    if per_call.is_some() {
        let t0 = Instant::now();
        let mut from = 0;
        for (end, n) in calls {
            w.write_all(&frames[from..end]).await?;
            for _ in 0..n {
                reader.until(Type::SendReceipt).await?;
            }
            from = end;
        }
        return Ok(t0.elapsed().as_secs_f64());
    }
    let t0 = Instant::now();
    let writer = tokio::spawn(async move {
        w.write_all(&frames).await?;
        Ok::<_, std::io::Error>(w)
    });
    let mut receipts = 0u64;
    while receipts < entries {
        reader.until(Type::SendReceipt).await?;
        receipts += 1;
    }
    let dt = t0.elapsed().as_secs_f64();
    drop(writer.await??);
    Ok(dt)
}

/// One connection's producer sending `messages` single messages one at a time; the
/// round-trip time of each, in seconds.
async fn one_in_flight(
    addr: String,
    topic: String,
    messages: u64,
    size: usize,
    id: u64,
) -> Res<Vec<f64>> {
    let (mut reader, mut w, name) = open_producer(&addr, &topic, id).await?;
    let payload = vec![0x61u8; size];
    let mut frames = Vec::with_capacity(messages as usize);
    for seq in 0..messages {
        let md = pb::MessageMetadata {
            producer_name: name.clone(),
            sequence_id: seq,
            publish_time: now_ms(),
            ..Default::default()
        };
        let cmd = commands::send(id, seq, 1, None, false, false);
        let mut f = BytesMut::new();
        encode_payload_command(&cmd, &md, &payload, &mut f, DEFAULT_MAX_FRAME_SIZE)?;
        frames.push(f.freeze());
    }
    let mut rtts = Vec::with_capacity(frames.len());
    for f in frames {
        let t = Instant::now();
        w.write_all(&f).await?;
        reader.until(Type::SendReceipt).await?;
        rtts.push(t.elapsed().as_secs_f64());
    }
    Ok(rtts)
}

/// `connections` producers, each with one message in flight; (seconds, p50 ms, p99 ms).
async fn inflight1(
    addr: &str,
    topic: &str,
    messages: u64,
    size: usize,
    connections: u64,
) -> Res<(f64, f64, f64)> {
    // A short warm-up per connection is part of each task's first sends; measured from the
    // first write of all to the last receipt of all.
    let per = messages / connections;
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..connections)
        .map(|i| {
            let (addr, topic) = (addr.to_owned(), topic.to_owned());
            // The task's output must be Send: the error travels as text.
            tokio::spawn(async move {
                one_in_flight(addr, topic, per, size, i + 1)
                    .await
                    .map_err(|e| e.to_string())
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    let dt = t0.elapsed().as_secs_f64();
    all.sort_by(f64::total_cmp);
    let pct = |q: f64| all[((all.len() - 1) as f64 * q) as usize] * 1e3;
    Ok((dt, pct(0.5), pct(0.99)))
}

async fn dispatch(addr: &str, topic: &str, messages: u64) -> Res<f64> {
    let (mut reader, mut w) = connect(addr).await?;
    let mut out = BytesMut::new();
    let params = SubscribeParams {
        topic: topic.to_owned(),
        subscription: format!("ceiling-{}", now_ms()),
        sub_type: pb::command_subscribe::SubType::Exclusive,
        consumer_id: 1,
        request_id: 1,
        initial_position: pb::command_subscribe::InitialPosition::Earliest,
        ..SubscribeParams::default()
    };
    let t0 = Instant::now();
    encode_command(&commands::subscribe(&params), &mut out);
    w.write_all(&out).await?;
    reader.until(Type::Success).await?;
    // Permits count messages; grant far ahead and top up at half-way marks.
    const GRANT: u32 = 40_000;
    out.clear();
    encode_command(&commands::flow(1, GRANT), &mut out);
    w.write_all(&out).await?;
    let mut got = 0u64;
    let mut next_grant = u64::from(GRANT / 2);
    while got < messages {
        let f = reader.until(Type::Message).await?;
        if reader.pongs > 0 {
            reader.pongs = 0;
            out.clear();
            encode_command(&commands::pong(), &mut out);
            w.write_all(&out).await?;
        }
        let n = f
            .payload
            .as_ref()
            .and_then(|p| p.metadata.as_ref().ok())
            .and_then(|m| m.num_messages_in_batch)
            .unwrap_or(1);
        got += n.max(1) as u64;
        if got >= next_grant {
            next_grant += u64::from(GRANT / 2);
            out.clear();
            encode_command(&commands::flow(1, GRANT / 2), &mut out);
            // One cumulative ack per grant: brokers stop dispatching to a consumer holding
            // too many unacknowledged messages (pulsar-lite after ~90k).
            if let Some(m) = &f.command.message {
                let ack = commands::ack(
                    1,
                    pb::command_ack::AckType::Cumulative,
                    vec![m.message_id.clone()],
                    None,
                    None,
                );
                encode_command(&ack, &mut out);
            }
            w.write_all(&out).await?;
        }
    }
    Ok(t0.elapsed().as_secs_f64())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        return Err(
            "usage: pulsar_ceiling produce|produce-window|produce-calls|dispatch|inflight1 <host:port> <topic> \
             <messages> [size] [batch|connections] [per_call]"
                .into(),
        );
    }
    let (mode, addr, topic) = (&args[1], &args[2], &args[3]);
    let messages: u64 = args[4].parse()?;
    let size: usize = args.get(5).map_or(Ok(100), |s| s.parse())?;
    let batch: u32 = args.get(6).map_or(Ok(1000), |s| s.parse())?;
    if mode == "inflight1" {
        let connections = args.get(6).map_or(Ok(8), |s| s.parse())?;
        let (seconds, p50, p99) = inflight1(addr, topic, messages, size, connections).await?;
        let sent = messages / connections * connections;
        println!(
            "{{\"mode\": \"{mode}\", \"messages\": {sent}, \"seconds\": {seconds:.6}, \
             \"msg_per_s\": {:.0}, \"connections\": {connections}, \"p50_ms\": {p50:.3}, \
             \"p99_ms\": {p99:.3}}}",
            sent as f64 / seconds
        );
        return Ok(());
    }
    let seconds = match mode.as_str() {
        "produce" => produce(addr, topic, messages, size, batch, None, None).await?,
        "produce-calls" => {
            let per_call = args.get(7).map_or(Ok(10_000), |s| s.parse())?;
            produce(addr, topic, messages, size, batch, Some(per_call), None).await?
        }
        "produce-window" => {
            let window = args.get(7).map_or(Ok(10_000), |s| s.parse())?;
            produce(addr, topic, messages, size, batch, None, Some(window)).await?
        }
        "dispatch" => dispatch(addr, topic, messages).await?,
        other => return Err(format!("unknown mode {other}").into()),
    };
    println!(
        "{{\"mode\": \"{mode}\", \"messages\": {messages}, \"seconds\": {seconds:.6}, \
         \"msg_per_s\": {:.0}}}",
        messages as f64 / seconds
    );
    Ok(())
}
