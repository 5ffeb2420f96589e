//! One segment's fetch task: READ_SEGMENT in a loop on the store's shared connection, data
//! cut into chunks of whole events, handed to the stream reader through its bounded queue
//! (the read-ahead). At the tail the store holds the read until data arrives (a long poll);
//! at the end of a sealed segment the task reports the end and stops.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::sync::{mpsc, oneshot};

use streamwire_core::backoff::{Backoff, BackoffConfig};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::log::{event, Level};
use streamwire_core::metrics::{EntityMetrics, C};

use super::chunk::{Chunk, Chunker};
use super::SegRef;
use crate::client::PravegaClient;
use crate::controller::{segment_name, NodeUri, ScopedStream};
use crate::wire::{self, Reply};

/// What fetch tasks tell the stream reader.
#[derive(Debug)]
pub enum Fetched {
    Chunk(Chunk),
    /// The segment is sealed and read to its end (`offset`).
    End {
        seg: SegRef,
        offset: i64,
    },
    /// The segment cannot be read (deleted, no access).
    Failed {
        seg: SegRef,
        error: Error,
    },
}

impl Fetched {
    /// The segment it is about.
    pub fn seg(&self) -> SegRef {
        match self {
            Fetched::Chunk(c) => SegRef {
                stream: c.stream,
                id: c.segment,
            },
            Fetched::Failed { seg, .. } | Fetched::End { seg, .. } => *seg,
        }
    }
}

/// Settings of fetch tasks.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// Bytes asked for per READ_SEGMENT.
    pub read_length: i32,
    /// How long a read at the tail may be held before it is asked again.
    pub long_poll: Duration,
    /// READ_SEGMENTs in flight on one segment while it has data past what was asked
    /// (at the tail: one, a long poll).
    pub depth: usize,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            read_length: 1024 * 1024,
            long_poll: Duration::from_secs(60),
            depth: 2,
        }
    }
}

#[allow(clippy::too_many_arguments)] // the segment's identity, its settings and two sinks
pub(crate) async fn run(
    client: PravegaClient,
    stream: ScopedStream,
    seg: SegRef,
    offset: i64,
    config: FetchConfig,
    tx: mpsc::Sender<Fetched>,
    metrics: Arc<EntityMetrics>,
) {
    let segment = seg.id;
    let name = segment_name(&stream, segment);
    let mut chunker = Chunker::new(seg.stream, segment, offset);
    let mut backoff = Backoff::new(BackoffConfig {
        initial: Duration::from_millis(50),
        max: Duration::from_secs(5),
        ..BackoffConfig::default()
    });
    let mut out = Vec::new();
    // Where the segment lives: asked once, and again after an error.
    let mut node: Option<NodeUri> = None;
    // Reads in flight, in offset order, and whether the last answer proved there is data
    // past it (a full, not-at-tail answer): only then is more than one read asked for.
    let mut plan = Pipeline::default();
    loop {
        let result = async {
            let n = match &node {
                Some(n) => n.clone(),
                None => {
                    let n = client.controller().get_uri(&stream, segment).await?;
                    node = Some(n.clone());
                    n
                }
            };
            let want = if plan.more { config.depth.max(1) } else { 1 };
            // Every read carries the delegation token; the client renews it before expiry.
            let token = if plan.inflight.len() < want {
                client.delegation_token(&stream).await?
            } else {
                String::new()
            };
            while plan.inflight.len() < want {
                let at = plan.next_offset(chunker.read_offset(), config.read_length);
                let rx = ask(&client, &n, &name, at, &token, &config).await?;
                plan.inflight.push_back((at, rx));
            }
            let (_, rx) = plan.inflight.pop_front().expect("asked above");
            rx.await.unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorKind::Disconnected,
                    format!("the connection reading {name} was lost"),
                ))
            })
        }
        .await;
        if result.is_err() || result.as_ref().is_ok_and(|r| r.error().is_some()) {
            node = None;
        }
        // Anything but a full answer with more data behind it ends the pipeline: the reads
        // asked past it may start at the wrong offset (a short answer) or past the end.
        let full = matches!(&result, Ok(Reply::SegmentRead { data, at_tail, end_of_segment, .. })
            if !at_tail && !end_of_segment && data.len() == config.read_length as usize);
        if !full {
            plan.reset();
        }
        plan.more = full;
        match result {
            Ok(Reply::SegmentRead {
                data,
                end_of_segment,
                offset: at,
                ..
            }) => {
                backoff.reset();
                if at != chunker.read_offset() {
                    let e = Error::new(
                        ErrorKind::Protocol,
                        format!(
                            "segment store answered a read of {name} at {} with data at {at}",
                            chunker.read_offset()
                        ),
                    );
                    let _ = tx.send(Fetched::Failed { seg, error: e }).await;
                    return;
                }
                if let Err(e) = chunker.feed(data, &mut out) {
                    let error = Error::from(e).context(&name);
                    let _ = tx.send(Fetched::Failed { seg, error }).await;
                    return;
                }
                for c in out.drain(..) {
                    if tx.send(Fetched::Chunk(c)).await.is_err() {
                        return;
                    }
                }
                if end_of_segment && chunker.carried() == 0 {
                    let _ = tx
                        .send(Fetched::End {
                            seg,
                            offset: chunker.read_offset(),
                        })
                        .await;
                    return;
                }
            }
            Ok(Reply::SegmentIsSealed { .. }) if chunker.carried() == 0 => {
                // A read exactly at the end of a sealed segment.
                let _ = tx
                    .send(Fetched::End {
                        seg,
                        offset: chunker.read_offset(),
                    })
                    .await;
                return;
            }
            Ok(Reply::SegmentIsTruncated { start_offset, .. }) => {
                // Retention removed the data: go on from what is left (the events before it
                // are gone for every reader).
                event(Level::Warning, "pravega.reader", || {
                    (
                        format!(
                            "segment {name} truncated at {start_offset}; skipping from {}",
                            chunker.read_offset()
                        ),
                        vec![("stream", stream.to_string()), ("segment", name.clone())],
                    )
                });
                chunker = Chunker::new(seg.stream, segment, start_offset);
            }
            Ok(other) => {
                let error = other.error().unwrap_or_else(|| {
                    Error::new(
                        ErrorKind::Protocol,
                        format!("unexpected answer to READ_SEGMENT on {name}: {other:?}"),
                    )
                });
                if error.kind() == ErrorKind::Authentication {
                    // A refused or expired token: the next read asks the controller again.
                    client.forget_token(&stream);
                }
                if error.is_retriable() {
                    log_retry(&stream, &name, &error);
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
                let _ = tx.send(Fetched::Failed { seg, error }).await;
                return;
            }
            Err(e) if e.kind() == ErrorKind::Timeout => continue, // a long poll that ran out
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::Connect | ErrorKind::Disconnected | ErrorKind::Server
                ) || e.is_retriable() =>
            {
                if tx.is_closed() {
                    return;
                }
                log_retry(&stream, &name, &e);
                metrics.add(C::Reconnects, 1);
                tokio::time::sleep(backoff.next_delay()).await;
            }
            Err(error) => {
                let _ = tx.send(Fetched::Failed { seg, error }).await;
                return;
            }
        }
    }
}

fn log_retry(stream: &ScopedStream, name: &str, error: &Error) {
    event(Level::Warning, "pravega.reader", || {
        (
            format!("reading segment {name} failed ({error}); retrying"),
            vec![
                ("stream", stream.to_string()),
                ("segment", name.to_string()),
            ],
        )
    });
}

/// The reads of one segment in flight: `(offset, reply)` in the order they were asked.
#[derive(Default)]
struct Pipeline {
    inflight: std::collections::VecDeque<(i64, oneshot::Receiver<Result<Reply>>)>,
    more: bool,
}

impl Pipeline {
    /// Where the next read starts: past the last one in flight, or where the data stops.
    fn next_offset(&self, read_offset: i64, read_length: i32) -> i64 {
        match self.inflight.back() {
            Some((at, _)) => at + i64::from(read_length),
            None => read_offset,
        }
    }

    /// Forget the reads in flight (their answers, when they come, are dropped).
    fn reset(&mut self) {
        self.inflight.clear();
    }
}

/// Send one READ_SEGMENT of `name` at `offset`; the receiver gets its answer.
async fn ask(
    client: &PravegaClient,
    node: &NodeUri,
    name: &str,
    offset: i64,
    token: &str,
    config: &FetchConfig,
) -> Result<oneshot::Receiver<Result<Reply>>> {
    let conn = client.connection(node).await?;
    let rid = conn.next_request_id();
    let mut buf = BytesMut::with_capacity(64 + name.len());
    wire::encode_read_segment(
        &mut buf,
        name,
        offset,
        config.read_length,
        token,
        rid as i64,
    )
    .map_err(Error::from)?;
    let deadline = std::time::Instant::now() + config.long_poll;
    conn.start_request(rid, buf.freeze(), deadline, "READ_SEGMENT")
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelined_reads_ask_consecutive_ranges_and_restart_where_the_data_stops() {
        let mut p = Pipeline::default();
        assert_eq!(
            p.next_offset(500, 100),
            500,
            "nothing in flight: where the data stops"
        );
        for _ in 0..3 {
            let at = p.next_offset(500, 100);
            let (_tx, rx) = oneshot::channel();
            p.inflight.push_back((at, rx));
        }
        let asked: Vec<i64> = p.inflight.iter().map(|(a, _)| *a).collect();
        assert_eq!(asked, vec![500, 600, 700]);
        p.reset();
        assert!(p.inflight.is_empty());
        assert_eq!(
            p.next_offset(560, 100),
            560,
            "after a short answer: from its end"
        );
    }
}
