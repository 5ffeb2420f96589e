//! Streaming produce (`Content-Type: application/x-ndjson`): one PIP-64 message per line in,
//! one delivery report per line out, in order, while the request is still being sent. Lines
//! are sent as they arrive (pipelined); at most `IN_FLIGHT` messages wait for the broker, so a
//! fast sender is held back by the broker's pace. A line that does not parse gets an error
//! report and the stream goes on.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use tokio::sync::{mpsc, oneshot};

use streamwire_core::error::{Error, ErrorKind};
use streamwire_pulsar::producer::{Completion, TopicProducer};

use crate::metrics::Metrics;
use crate::produce::{id_base64, pip_message, Outcome, PipMessage, ValueFormat};

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

fn report(o: &Outcome) -> Bytes {
    // Written by hand: one small line per message, no JSON tree built for it.
    let line = match o {
        Ok(id) => format!(
            "{{\"partition\":{},\"messageId\":\"{}\"}}\n",
            id.partition.max(0),
            id_base64(id)
        ),
        Err(e) => {
            let msg = serde_json::to_string(&e.to_string()).unwrap_or_default();
            format!(
                "{{\"error_code\":{},\"error\":{msg}}}\n",
                crate::error::message_error_code(e)
            )
        }
    };
    Bytes::from(line)
}

enum Pending {
    Receipt(oneshot::Receiver<Outcome>),
    Failed(Error),
}

fn gone() -> Error {
    Error::new(ErrorKind::Disconnected, "the producer went away")
}

/// Move the reports of settled messages to `outbox`, oldest first; with `wait` (or a full
/// window) wait for the oldest instead of stopping at it.
async fn settle(
    pending: &mut VecDeque<Pending>,
    outbox: &mut VecDeque<Bytes>,
    wait: bool,
    metrics: &Metrics,
) {
    loop {
        let must_wait = wait || pending.len() >= IN_FLIGHT;
        let Some(front) = pending.front_mut() else {
            return;
        };
        let outcome: Outcome = match front {
            Pending::Failed(e) => Err(e.clone()),
            Pending::Receipt(rx) => match rx.try_recv() {
                Ok(o) => o,
                Err(oneshot::error::TryRecvError::Closed) => Err(gone()),
                Err(oneshot::error::TryRecvError::Empty) if must_wait => {
                    rx.await.unwrap_or_else(|_| Err(gone()))
                }
                Err(oneshot::error::TryRecvError::Empty) => return,
            },
        };
        pending.pop_front();
        Metrics::add(
            if outcome.is_ok() {
                &metrics.produced
            } else {
                &metrics.produce_failed
            },
            1,
        );
        outbox.push_back(report(&outcome));
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
    format: ValueFormat,
    partition: Option<u32>,
    mut body: Incoming,
    max_line: usize,
    out: mpsc::Sender<Bytes>,
    metrics: Arc<Metrics>,
) {
    let mut buf = BytesMut::new();
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut line_no = 0usize;
    let mut outbox: VecDeque<Bytes> = VecDeque::new();
    loop {
        settle(&mut pending, &mut outbox, false, &metrics).await;
        offer(&mut outbox, &out);
        match body.frame().await {
            None => {
                if !buf.is_empty() {
                    let line = buf.split().freeze();
                    line_no += 1;
                    pending
                        .push_back(send_line(&producer, format, partition, &line, line_no).await);
                }
                break;
            }
            Some(Err(e)) => {
                pending.push_back(Pending::Failed(Error::new(
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
                    pending.push_back(
                        send_line(&producer, format, partition, &line[..nl], line_no).await,
                    );
                }
                if buf.len() > max_line {
                    pending.push_back(Pending::Failed(Error::invalid(format!(
                        "line {} is over {max_line} bytes",
                        line_no + 1
                    ))));
                    break;
                }
            }
        }
    }
    settle(&mut pending, &mut outbox, true, &metrics).await;
    for line in outbox {
        if out.send(line).await.is_err() {
            return;
        }
    }
}

async fn send_line(
    producer: &TopicProducer,
    format: ValueFormat,
    partition: Option<u32>,
    line: &[u8],
    n: usize,
) -> Pending {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Pending::Failed(Error::invalid(format!("line {n} is empty")));
    }
    let msg: PipMessage = match serde_json::from_slice(line) {
        Ok(m) => m,
        Err(e) => return Pending::Failed(Error::invalid(format!("line {n}: {e}"))),
    };
    let m = match pip_message(msg, format, n - 1) {
        Ok(m) => m,
        Err(e) => return Pending::Failed(Error::invalid(format!("line {n}: {}", e.message))),
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
