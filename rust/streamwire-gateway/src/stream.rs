//! Streaming produce (`Content-Type: application/x-ndjson`): one PIP-64 message per line in,
//! one delivery report per line out, in order, while the request is still being sent. Lines
//! are sent as they arrive (pipelined); at most `IN_FLIGHT` messages wait for the broker, so a
//! fast sender is held back by the broker's pace. A line that does not parse gets an error
//! report and the stream goes on.
//!
//! The lines of one body chunk that need nothing per message (no partition of their own, no
//! delivery time or replication options) go to the producer as one run through `send_many`:
//! one reservation and one hand-over to the producer's task for the run, one group of results,
//! instead of a command and a channel per message.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use tokio::sync::{mpsc, oneshot};

use streamwire_core::error::{Error, ErrorKind};
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::producer::{Completion, Group, TopicProducer};

use crate::metrics::Metrics;
use crate::produce::{pip_message, LineFormat, Outcome, PipMessage, Prepared};

/// Reports waiting for their receipts before the request body is read further.
pub const IN_FLIGHT: usize = 10_000;

/// The response body: lines from a channel (their bytes counted in `bytes_out`).
pub struct Lines(pub mpsc::Receiver<Bytes>, pub Arc<Metrics>);

impl Body for Lines {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        this.0.poll_recv(cx).map(|o| {
            o.map(|b| {
                Metrics::add(&this.1.bytes_out, b.len());
                Ok(Frame::data(b))
            })
        })
    }
}

/// Append one report line. Written by hand: one small line per message, no JSON tree built.
fn report(o: &Outcome, out: &mut String) {
    use std::fmt::Write;
    let _ = match o {
        Ok(id) => {
            let _ = write!(
                out,
                "{{\"partition\":{},\"messageId\":\"",
                id.partition.max(0)
            );
            B64.encode_string(id.serialize(), out);
            out.push_str("\"}\n");
            Ok(())
        }
        Err(e) => {
            let msg = serde_json::to_string(&e.to_string()).unwrap_or_default();
            writeln!(
                out,
                "{{\"error_code\":{},\"error\":{msg}}}",
                crate::error::message_error_code(e)
            )
        }
    };
}

enum Pending {
    Receipt(oneshot::Receiver<Outcome>),
    Failed(Error),
    /// A run of this many messages sent together; reported once all have their results.
    Run(Arc<Group>, usize),
}

impl Pending {
    fn messages(&self) -> usize {
        match self {
            Pending::Run(_, n) => *n,
            _ => 1,
        }
    }
}

/// The reports not given yet, oldest first, and how many messages they stand for.
#[derive(Default)]
struct Window {
    pending: VecDeque<Pending>,
    messages: usize,
}

impl Window {
    fn push(&mut self, p: Pending) {
        self.messages += p.messages();
        self.pending.push_back(p);
    }
}

fn gone() -> Error {
    Error::new(ErrorKind::Disconnected, "the producer went away")
}

/// Move the reports of settled messages to `outbox`, oldest first; with `wait` (or a full
/// window) wait for the oldest instead of stopping at it.
async fn settle(window: &mut Window, outbox: &mut VecDeque<Bytes>, wait: bool, metrics: &Metrics) {
    loop {
        let must_wait = wait || window.messages >= IN_FLIGHT;
        let Some(front) = window.pending.front_mut() else {
            return;
        };
        let outcomes: Vec<Outcome> = match front {
            Pending::Failed(e) => vec![Err(e.clone())],
            Pending::Receipt(rx) => vec![match rx.try_recv() {
                Ok(o) => o,
                Err(oneshot::error::TryRecvError::Closed) => Err(gone()),
                Err(oneshot::error::TryRecvError::Empty) if must_wait => {
                    rx.await.unwrap_or_else(|_| Err(gone()))
                }
                Err(oneshot::error::TryRecvError::Empty) => return,
            }],
            Pending::Run(group, _) => {
                if group.remaining() > 0 && !must_wait {
                    return;
                }
                group.wait().await
            }
        };
        let done = window.pending.pop_front().expect("front exists");
        window.messages -= done.messages();
        let ok = outcomes.iter().filter(|o| o.is_ok()).count();
        Metrics::add(&metrics.produced, ok);
        Metrics::add(&metrics.produce_failed, outcomes.len() - ok);
        // One piece of the response for the whole run: one chunk, not one per line.
        let mut text = String::with_capacity(outcomes.len() * 64);
        for o in &outcomes {
            report(o, &mut text);
        }
        outbox.push_back(Bytes::from(text));
    }
}

/// Hand reports to the response without waiting. Most HTTP/1.1 clients read the answer only
/// once their upload is done, so waiting here would stop reading the upload: a deadlock.
/// Reports wait in `outbox` instead (about 100 bytes each), while the number of messages
/// waiting for the broker stays bounded by `IN_FLIGHT`.
fn offer(outbox: &mut VecDeque<Bytes>, out: &mpsc::Sender<Bytes>) {
    while let Some(line) = outbox.pop_front() {
        match out.try_send(line) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(line)) => {
                outbox.push_front(line);
                return;
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                outbox.clear();
                return;
            }
        }
    }
}

/// Read `body` line by line, produce each message, and write the reports to `out` in order.
pub async fn run(
    producer: Arc<TopicProducer>,
    format: LineFormat,
    partition: Option<u32>,
    mut body: Incoming,
    max_line: usize,
    out: mpsc::Sender<Bytes>,
    metrics: Arc<Metrics>,
) {
    let mut buf = BytesMut::new();
    let mut window = Window::default();
    let mut line_no = 0usize;
    let mut outbox: VecDeque<Bytes> = VecDeque::new();
    let mut run = Run::default();
    loop {
        settle(&mut window, &mut outbox, false, &metrics).await;
        offer(&mut outbox, &out);
        match body.frame().await {
            None => {
                if !buf.is_empty() {
                    let line = buf.split().freeze();
                    line_no += 1;
                    let m = parse_line(&format, &line, line_no);
                    window.push(send_one(&producer, partition, m, line_no).await);
                }
                break;
            }
            Some(Err(e)) => {
                window.push(Pending::Failed(Error::new(
                    ErrorKind::Disconnected,
                    format!("the request body broke off: {e}"),
                )));
                break;
            }
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                Metrics::add(&metrics.bytes_in, data.len());
                buf.extend_from_slice(&data);
                while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                    let line = buf.split_to(nl + 1).freeze();
                    line_no += 1;
                    match parse_line(&format, &line[..nl], line_no) {
                        Ok(m) if run.takes(&m, partition) => run.add(m),
                        m => {
                            if let Some(p) = run.send(&producer).await {
                                window.push(p);
                            }
                            window.push(send_one(&producer, partition, m, line_no).await);
                        }
                    }
                    if window.messages + run.msgs.len() >= IN_FLIGHT {
                        if let Some(p) = run.send(&producer).await {
                            window.push(p);
                        }
                        settle(&mut window, &mut outbox, false, &metrics).await;
                        offer(&mut outbox, &out);
                    }
                }
                if let Some(p) = run.send(&producer).await {
                    window.push(p);
                }
                if buf.len() > max_line {
                    window.push(Pending::Failed(Error::invalid(format!(
                        "line {} is over {max_line} bytes",
                        line_no + 1
                    ))));
                    break;
                }
            }
        }
    }
    settle(&mut window, &mut outbox, true, &metrics).await;
    for line in outbox {
        if out.send(line).await.is_err() {
            return;
        }
    }
}

/// Consecutive plain messages (no partition of their own, default entry options, the same
/// kind of sequence ids), sent together.
#[derive(Default)]
struct Run {
    msgs: Vec<OutgoingMessage>,
    user_sequence_ids: bool,
}

impl Run {
    fn takes(&self, m: &Prepared, path_partition: Option<u32>) -> bool {
        path_partition.is_none()
            && m.partition.is_none()
            && m.entry.is_default()
            && (self.msgs.is_empty() || m.user_sequence_id == self.user_sequence_ids)
    }

    fn add(&mut self, m: Prepared) {
        self.user_sequence_ids = m.user_sequence_id;
        self.msgs.push(m.msg);
    }

    /// Hand the run to the producer (waiting for room, as one message would).
    async fn send(&mut self, producer: &TopicProducer) -> Option<Pending> {
        if self.msgs.is_empty() {
            return None;
        }
        let msgs = std::mem::take(&mut self.msgs);
        let n = msgs.len();
        let group = Group::new(n);
        if let Err(e) = producer
            .send_many(msgs, &group, self.user_sequence_ids)
            .await
        {
            group.fail_unfilled(&e);
        }
        Some(Pending::Run(group, n))
    }
}

fn parse_line(format: &LineFormat, line: &[u8], n: usize) -> std::result::Result<Prepared, Error> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::invalid(format!("line {n} is empty")));
    }
    let msg: PipMessage =
        serde_json::from_slice(line).map_err(|e| Error::invalid(format!("line {n}: {e}")))?;
    pip_message(msg, format, n - 1).map_err(|e| Error::invalid(format!("line {n}: {}", e.message)))
}

/// Send one message on its own (it has a partition or options of its own, or failed to parse).
async fn send_one(
    producer: &TopicProducer,
    partition: Option<u32>,
    m: std::result::Result<Prepared, Error>,
    n: usize,
) -> Pending {
    let m = match m {
        Ok(m) => m,
        Err(e) => return Pending::Failed(e),
    };
    let parts = producer.partition_producers();
    let (tx, rx) = oneshot::channel();
    let target = m.partition.or(partition);
    let partitioned = parts
        .first()
        .is_some_and(|p| p.topic().partition_index().is_some());
    let sent = match target {
        Some(p) if partitioned && (p as usize) < parts.len() => {
            parts[p as usize]
                .send(m.msg, m.user_sequence_id, m.entry, Completion::Once(tx))
                .await
        }
        Some(p) => Err(Error::new(
            ErrorKind::PartitionNotFound,
            format!("line {n}: partition {p} does not exist"),
        )),
        None => {
            producer
                .send(m.msg, m.user_sequence_id, m.entry, Completion::Once(tx))
                .await
        }
    };
    match sent {
        Ok(()) => Pending::Receipt(rx),
        Err(e) => Pending::Failed(e),
    }
}
