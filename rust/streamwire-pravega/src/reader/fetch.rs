//! One segment's fetch task: READ_SEGMENT in a loop on the store's shared connection, data
//! cut into chunks of whole events, handed to the stream reader through its bounded queue
//! (the read-ahead). At the tail the store holds the read until data arrives (a long poll);
//! at the end of a sealed segment the task reports the end and stops.

use std::time::Duration;

use bytes::BytesMut;
use tokio::sync::mpsc;

use streamwire_core::backoff::{Backoff, BackoffConfig};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::log::{event, Level};

use super::chunk::{Chunk, Chunker};
use crate::client::PravegaClient;
use crate::controller::{segment_name, NodeUri, ScopedStream};
use crate::wire::{self, Reply};

/// What fetch tasks tell the stream reader.
#[derive(Debug)]
pub enum Fetched {
    Chunk(Chunk),
    /// The segment is sealed and read to its end (`offset`).
    End {
        segment: i64,
        offset: i64,
    },
    /// The segment cannot be read (deleted, no access).
    Failed {
        segment: i64,
        error: Error,
    },
}

/// Settings of fetch tasks.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// Bytes asked for per READ_SEGMENT.
    pub read_length: i32,
    /// How long a read at the tail may be held before it is asked again.
    pub long_poll: Duration,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            read_length: 1024 * 1024,
            long_poll: Duration::from_secs(60),
        }
    }
}

pub(crate) async fn run(
    client: PravegaClient,
    stream: ScopedStream,
    segment: i64,
    offset: i64,
    token: String,
    config: FetchConfig,
    tx: mpsc::Sender<Fetched>,
) {
    let name = segment_name(&stream, segment);
    let mut chunker = Chunker::new(segment, offset);
    let mut backoff = Backoff::new(BackoffConfig {
        initial: Duration::from_millis(50),
        max: Duration::from_secs(5),
        ..BackoffConfig::default()
    });
    let mut out = Vec::new();
    // Where the segment lives: asked once, and again after an error.
    let mut node: Option<NodeUri> = None;
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
            read_once(&client, &n, &name, &chunker, &token, &config).await
        }
        .await;
        if result.is_err() || result.as_ref().is_ok_and(|r| r.error().is_some()) {
            node = None;
        }
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
                    let _ = tx.send(Fetched::Failed { segment, error: e }).await;
                    return;
                }
                if let Err(e) = chunker.feed(data, &mut out) {
                    let error = Error::from(e).context(&name);
                    let _ = tx.send(Fetched::Failed { segment, error }).await;
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
                            segment,
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
                        segment,
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
                chunker = Chunker::new(segment, start_offset);
            }
            Ok(other) => {
                let error = other.error().unwrap_or_else(|| {
                    Error::new(
                        ErrorKind::Protocol,
                        format!("unexpected answer to READ_SEGMENT on {name}: {other:?}"),
                    )
                });
                if error.is_retriable() {
                    log_retry(&stream, &name, &error);
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
                let _ = tx.send(Fetched::Failed { segment, error }).await;
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
                tokio::time::sleep(backoff.next_delay()).await;
            }
            Err(error) => {
                let _ = tx.send(Fetched::Failed { segment, error }).await;
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

async fn read_once(
    client: &PravegaClient,
    node: &NodeUri,
    name: &str,
    chunker: &Chunker,
    token: &str,
    config: &FetchConfig,
) -> Result<Reply> {
    let conn = client.connection(node).await?;
    let rid = conn.next_request_id();
    let mut buf = BytesMut::with_capacity(64 + name.len());
    wire::encode_read_segment(
        &mut buf,
        name,
        chunker.read_offset(),
        config.read_length,
        token,
        rid as i64,
    )
    .map_err(Error::from)?;
    conn.request(rid, buf.freeze(), config.long_poll, "READ_SEGMENT")
        .await
}
