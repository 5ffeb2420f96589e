//! Events over 8 MiB ("large events"), written as the official clients write them: through a
//! transient segment merged into the parent segment.
//!
//! One large write is: `CREATE_TRANSIENT_SEGMENT` beside the parent (the store answers
//! `SEGMENT_CREATED` with its name), `SETUP_APPEND` on it under a fresh writer id, the EVENT
//! frame (8-byte header and data) cut into chunks of at most 8 MiB sent as pipelined
//! `CONDITIONAL_BLOCK_END`s numbered from 0 at the offsets where they must land, then
//! `MERGE_SEGMENTS` (`SEGMENTS_MERGED`), which appends the whole transient segment to the
//! parent atomically: a reader of the parent sees all of the event or none of it, and a
//! failure anywhere before the merge leaves nothing in the parent (the store deletes the
//! transient segments of a connection when the connection drops, and idle ones).
//!
//! A lost connection (or an answer that never comes) is retried within the writer's budget
//! (its `send_timeout`, with its backoff), as the Java `LargeEventWriter` retries: the whole
//! event again through a new transient segment, the half-written one abandoned (the store
//! deletes it; nothing merges it). The merge is the commit point, so the one case to think
//! about is a connection lost after `MERGE_SEGMENTS` went out and before `SEGMENTS_MERGED`
//! came back. The Java writer starts over there too, which writes the event twice if the
//! merge had happened. We first send the same merge again: the store answers
//! `SEGMENTS_MERGED` for a source it already merged (its `StreamSegmentMergedException`
//! path) as for one it merges now, so the event is in the parent once either way. Only when
//! the store no longer knows the transient segment at all (`NO_SUCH_SEGMENT`: deleted
//! unmerged when the connection dropped, or merged and already cleaned up, which cannot be
//! told apart) do we write the whole event again, as the Java writer does.
//!
//! Pure parts here: which events are large, splitting a run of events around them, the chunk
//! plan, and the state of one write (which answer is awaited, what an answer means). The
//! I/O is `write_large`, run by the writer's task in a task of its own.

use std::ops::Range;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use streamwire_core::backoff::{Backoff, BackoffConfig};
use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::log::{event, Level};

use super::batch::{event_len, Piece, Points};
use crate::client::PravegaClient;
use crate::connection::dial;
use crate::controller::ScopedStream;
use crate::wire::events::MAX_EVENT;
use crate::wire::{self, reply::NO_EVENT_NUMBER, Reply};

/// Bytes per chunk: the official writers cut the framed event at `MAX_EVENT_SIZE`.
pub const CHUNK: usize = MAX_EVENT;

/// Whether an EVENT frame of `framed` bytes (header included) needs a transient segment.
pub fn is_large(framed: usize) -> bool {
    framed > MAX_EVENT + 8
}

/// Whether `data` (whole EVENT frames) holds a large event; cheap for runs that cannot.
pub fn has_large(data: &[u8]) -> bool {
    if !is_large(data.len()) {
        return false;
    }
    let mut pos = 0;
    while pos < data.len() {
        let Ok(n) = event_len(&data[pos..]) else {
            return false;
        };
        if is_large(n) {
            return true;
        }
        pos += n;
    }
    false
}

/// A transaction takes no large event (the official transactional writer checks
/// `MAX_WRITE_SIZE` too: a transaction's segments are merged into the stream's at commit, and
/// a transient segment cannot be merged into one): refused at the call.
pub fn refuse_in_transaction(data: &[u8]) -> Result<()> {
    if has_large(data) {
        return Err(Error::new(
            ErrorKind::MessageTooBig,
            format!(
                "a transaction takes events of at most {MAX_EVENT} bytes (as the official \
                 client's transactions); write larger events with a non-transactional writer"
            ),
        ));
    }
    Ok(())
}

/// A run of events cut around its large events, in order.
#[derive(Debug)]
pub enum Step {
    /// Events that go through the segment writers as usual.
    Small(Piece),
    /// One large event.
    Large(Piece),
}

/// Cut `piece` into runs of small events and single large events, keeping order. Every
/// part shares the piece's completion (a per-event completion is one event: it comes back
/// whole). A piece that does not parse comes back whole as `Small` (the segment writer
/// reports it as it always did).
pub fn split_at_large(piece: Piece) -> Vec<Step> {
    let mut cuts: Vec<(Range<usize>, Range<usize>, bool)> = Vec::new(); // bytes, events, large
    let (mut start, mut pos, mut first, mut i) = (0usize, 0usize, 0usize, 0usize);
    while pos < piece.data.len() {
        let Ok(n) = event_len(&piece.data[pos..]) else {
            return vec![Step::Small(piece)];
        };
        if is_large(n) {
            if pos > start {
                cuts.push((start..pos, first..i, false));
            }
            cuts.push((pos..pos + n, i..i + 1, true));
            start = pos + n;
            first = i + 1;
        }
        pos += n;
        i += 1;
    }
    if pos > start {
        cuts.push((start..pos, first..i, false));
    }
    if cuts.len() == 1 || piece.done.share().is_none() {
        let large = cuts.first().is_some_and(|c| c.2);
        return vec![if large {
            Step::Large(piece)
        } else {
            Step::Small(piece)
        }];
    }
    let total = piece.data.len().max(1) as u64;
    let Piece {
        data,
        points,
        done,
        mut reservation,
        queued_at,
        ..
    } = piece;
    let k = cuts.len();
    let mut out = Vec::with_capacity(k);
    for (j, (bytes, events, large)) in cuts.into_iter().enumerate() {
        let res = super::batch::share_of(&mut reservation, j + 1 == k, bytes.len(), total);
        let p = Piece {
            data: data.slice(bytes),
            count: events.len(),
            points: match &points {
                Points::Each(ps) if events.len() == 1 => Points::Same(ps[events.start]),
                Points::Each(ps) => Points::Each(ps[events].to_vec()),
                other => other.clone(),
            },
            done: done.share().expect("checked: a group"),
            reservation: res,
            last_number: 0,
            queued_at,
        };
        out.push(if large {
            Step::Large(p)
        } else {
            Step::Small(p)
        });
    }
    out
}

/// One `CONDITIONAL_BLOCK_END` of a large write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkPlan {
    /// The transient segment writer's event number (0, 1, ...).
    pub number: i64,
    /// Where the chunk must land in the transient segment.
    pub offset: i64,
    /// Its bytes in the EVENT frame.
    pub bytes: Range<usize>,
}

/// The chunks of an EVENT frame of `len` bytes: consecutive, at most [`CHUNK`] each.
pub fn plan(len: usize) -> Vec<ChunkPlan> {
    (0..len.div_ceil(CHUNK))
        .map(|i| {
            let start = i * CHUNK;
            ChunkPlan {
                number: i as i64,
                offset: start as i64,
                bytes: start..(start + CHUNK).min(len),
            }
        })
        .collect()
}

/// Where one large write stands: the answer it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// `CREATE_TRANSIENT_SEGMENT` sent.
    Create,
    /// `SETUP_APPEND` sent on the transient segment.
    Setup {
        transient: String,
    },
    /// Chunks sent; the store has acknowledged up to `acked` (-1: none yet).
    Append {
        transient: String,
        chunks: i64,
        acked: i64,
    },
    /// `MERGE_SEGMENTS` of this transient segment sent (every chunk is in it).
    Merge {
        transient: String,
    },
    Done,
}

/// What the I/O does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Nothing yet (a keep-alive, an acknowledgement of some chunks).
    Wait,
    /// Set the append up on this transient segment.
    Setup(String),
    /// Send every chunk to this transient segment.
    Send(String),
    /// Merge this transient segment into the parent.
    Merge(String),
    /// The event is in the parent segment.
    Done,
}

impl Phase {
    /// What the write was doing, for errors.
    pub fn name(&self) -> &'static str {
        match self {
            Phase::Create => "creating the transient segment",
            Phase::Setup { .. } => "setting up the append",
            Phase::Append { .. } => "appending chunks",
            Phase::Merge { .. } => "merging",
            Phase::Done => "done",
        }
    }

    /// Move on with the store's answer `reply` to a write of `chunks` chunks; an error
    /// reply, or an answer that does not fit the phase, fails the write (nothing was merged
    /// before `Done`, so nothing of the event is visible).
    pub fn on_reply(&mut self, reply: Reply, chunks: i64) -> Result<Next> {
        if matches!(reply, Reply::KeepAlive) {
            return Ok(Next::Wait);
        }
        let unexpected = |phase: &Phase, reply: &Reply| {
            reply.error().unwrap_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("unexpected answer while writing a large event ({phase:?}): {reply:?}"),
                )
            })
        };
        let next = match (&mut *self, reply) {
            (Phase::Create, Reply::SegmentCreated { segment, .. }) => {
                *self = Phase::Setup {
                    transient: segment.clone(),
                };
                Next::Setup(segment)
            }
            (
                Phase::Setup { transient },
                Reply::AppendSetup {
                    last_event_number, ..
                },
            ) => {
                if last_event_number != NO_EVENT_NUMBER {
                    return Err(Error::new(
                        ErrorKind::Protocol,
                        format!("the new transient segment {transient} already has data"),
                    ));
                }
                let transient = std::mem::take(transient);
                *self = Phase::Append {
                    transient: transient.clone(),
                    chunks,
                    acked: -1,
                };
                Next::Send(transient)
            }
            // The store acknowledges by event number, possibly several chunks at once.
            (
                Phase::Append {
                    transient,
                    chunks,
                    acked,
                },
                Reply::DataAppended { event_number, .. },
            ) => {
                *acked = (*acked).max(event_number);
                if *acked + 1 >= *chunks {
                    let transient = std::mem::take(transient);
                    *self = Phase::Merge {
                        transient: transient.clone(),
                    };
                    Next::Merge(transient)
                } else {
                    Next::Wait
                }
            }
            (Phase::Merge { .. }, Reply::SegmentsMerged { .. }) => {
                *self = Phase::Done;
                Next::Done
            }
            (phase, other) => return Err(unexpected(phase, &other)),
        };
        Ok(next)
    }
}

impl Phase {
    /// After an attempt failed here: the transient segment to merge again when the merge
    /// was sent (its answer lost), else `None` (the whole event again).
    pub fn merge_sent(&self) -> Option<String> {
        match self {
            Phase::Merge { transient } => Some(transient.clone()),
            _ => None,
        }
    }
}

/// The answer to a `MERGE_SEGMENTS` sent again after the first one's answer was lost:
/// `Some(Next::Done)` when the transient segment is in the parent (merged now, or by the
/// first request), `None` when the store does not know it any more (write the whole event
/// again), `Some(Next::Wait)` for a keep-alive.
pub fn on_merge_again(reply: Reply) -> Result<Option<Next>> {
    match reply {
        Reply::KeepAlive => Ok(Some(Next::Wait)),
        Reply::SegmentsMerged { .. } => Ok(Some(Next::Done)),
        Reply::NoSuchSegment { .. } => Ok(None),
        other => Err(other.error().unwrap_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                format!("unexpected answer to a repeated merge of a large event: {other:?}"),
            )
        })),
    }
}

/// Whether a failed attempt is tried again (within the budget): a lost or refused
/// connection, or an answer that did not come in time.
pub fn worth_retrying(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Connect | ErrorKind::Disconnected | ErrorKind::Timeout
    ) || e.is_retriable()
}

/// How long and how a large write is retried: the writer's own settings.
#[derive(Debug, Clone)]
pub struct RetryBudget {
    /// Failures go on being retried until this long after the first one.
    pub send_timeout: Duration,
    pub backoff: BackoffConfig,
}

/// Write one EVENT frame (`framed`, header included) to `parent` (segment `id` of `stream`)
/// through a transient segment, retrying lost connections within `budget` (see the module
/// comment). `Ok` once it is merged, exactly once; a failure leaves the parent without any
/// of it.
pub async fn write_large(
    client: &PravegaClient,
    stream: &ScopedStream,
    id: i64,
    parent: &str,
    framed: Bytes,
    budget: &RetryBudget,
) -> Result<()> {
    let mut backoff = Backoff::new(budget.backoff.clone());
    let mut first_failure: Option<Instant> = None;
    // A merge sent whose answer was lost: sent again before anything else.
    let mut remerge: Option<String> = None;
    loop {
        let mut phase = Phase::Create;
        let result = match remerge.take() {
            Some(transient) => {
                phase = Phase::Merge {
                    transient: transient.clone(),
                };
                match merge_again(client, stream, id, parent, &transient).await {
                    Ok(true) => Ok(()),
                    // Gone: written again at once, as a first attempt.
                    Ok(false) => continue,
                    Err(e) => Err(e),
                }
            }
            None => attempt(client, stream, id, parent, &framed, &mut phase).await,
        };
        let e = match result {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        if e.kind() == ErrorKind::Authentication {
            client.forget_token(stream);
        }
        let since = *first_failure.get_or_insert_with(Instant::now);
        let what = || {
            format!(
                "large event of {} bytes to segment {parent} was not written ({})",
                framed.len() - 8,
                phase.name()
            )
        };
        if !worth_retrying(&e) {
            return Err(e.context(what()));
        }
        if since.elapsed() >= budget.send_timeout {
            return Err(e.context(format!("{}, retried for {:?}", what(), budget.send_timeout)));
        }
        remerge = phase.merge_sent();
        event(Level::Warning, "pravega.writer", || {
            (
                format!("{}: {e}; retrying", what()),
                vec![("stream", stream.to_string()), ("segment", parent.into())],
            )
        });
        // Never past the budget: the last attempt is made at its end.
        let left = budget.send_timeout.saturating_sub(since.elapsed());
        tokio::time::sleep(backoff.next_delay().min(left)).await;
    }
}

/// One connection to `parent`'s store, its reply stream and the delegation token.
async fn open(
    client: &PravegaClient,
    stream: &ScopedStream,
    id: i64,
) -> Result<(
    crate::connection::Connection,
    tokio::sync::mpsc::Receiver<Reply>,
    String,
)> {
    let token = client.delegation_token(stream).await?;
    let node = client.controller().get_uri(stream, id).await?;
    let (c, replies) = dial::<false>(&node, &client.config().dial).await?;
    Ok((c, replies, token))
}

/// The next answer on a large write's connection, within the request timeout.
async fn answer(
    client: &PravegaClient,
    conn: &crate::connection::Connection,
    replies: &mut tokio::sync::mpsc::Receiver<Reply>,
    phase: &Phase,
    parent: &str,
) -> Result<Reply> {
    let timeout = client.config().request_timeout;
    match tokio::time::timeout(timeout, replies.recv()).await {
        Err(_) => Err(Error::timeout(format!(
            "large event on {parent}: no answer in {timeout:?} ({phase:?})"
        ))),
        Ok(None) => Err(conn.end_reason().unwrap_or_else(|| {
            Error::new(
                ErrorKind::Disconnected,
                format!("segment store closed the connection ({phase:?})"),
            )
        })),
        Ok(Some(r)) => Ok(r),
    }
}

/// One whole attempt: create, set up, chunks, merge. `phase` says how far it got.
async fn attempt(
    client: &PravegaClient,
    stream: &ScopedStream,
    id: i64,
    parent: &str,
    framed: &Bytes,
    phase: &mut Phase,
) -> Result<()> {
    let writer_id = rand::random::<u128>();
    let chunks = plan(framed.len());
    let mut out = BytesMut::with_capacity(128 + parent.len());
    let (conn, mut replies, token) = open(client, stream, id).await?;
    let result = async {
        wire::encode_create_transient_segment(&mut out, 1, writer_id, parent, &token)?;
        conn.send(out.split().freeze()).await?;
        loop {
            let reply = answer(client, &conn, &mut replies, phase, parent).await?;
            match phase.on_reply(reply, chunks.len() as i64)? {
                Next::Wait => {}
                Next::Setup(transient) => {
                    wire::encode_setup_append(&mut out, 2, writer_id, &transient, &token)?;
                    conn.send(out.split().freeze()).await?;
                }
                Next::Send(_) => {
                    // Pipelined: the conditions keep the chunks in place, the window is the
                    // event itself (at most a few hundred chunks of what the caller holds).
                    for (i, c) in chunks.iter().enumerate() {
                        wire::encode_conditional_block_end(
                            &mut out,
                            writer_id,
                            c.number,
                            c.offset,
                            &framed[c.bytes.clone()],
                            3 + i as i64,
                        )?;
                        conn.send(out.split().freeze()).await?;
                    }
                }
                Next::Merge(transient) => {
                    let id = 3 + chunks.len() as i64;
                    wire::encode_merge_segments(&mut out, id, parent, &transient, &token)?;
                    conn.send(out.split().freeze()).await?;
                }
                Next::Done => return Ok(()),
            }
        }
    }
    .await;
    conn.close();
    result
}

/// Send the merge of `transient` into `parent` again: true once it is merged, false when
/// the store does not know `transient` any more.
async fn merge_again(
    client: &PravegaClient,
    stream: &ScopedStream,
    id: i64,
    parent: &str,
    transient: &str,
) -> Result<bool> {
    let (conn, mut replies, token) = open(client, stream, id).await?;
    let phase = Phase::Merge {
        transient: transient.to_owned(),
    };
    let result = async {
        let mut out = BytesMut::with_capacity(128 + parent.len() + transient.len());
        wire::encode_merge_segments(&mut out, 1, parent, transient, &token)?;
        conn.send(out.split().freeze()).await?;
        loop {
            let reply = answer(client, &conn, &mut replies, &phase, parent).await?;
            match on_merge_again(reply)? {
                Some(Next::Wait) => {}
                Some(_) => return Ok(true),
                None => return Ok(false),
            }
        }
    }
    .await;
    conn.close();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::batch::{one_event, BatchBuilder};
    use proptest::prelude::*;
    use streamwire_core::completion::{Done, Group};

    proptest! {
        /// The chunks cover the frame exactly, in order, none over the limit, numbered from 0
        /// at the offsets where the previous ones end.
        #[test]
        fn chunks_tile_the_frame(len in 0usize..(5 * CHUNK + 3)) {
            let p = plan(len);
            let mut at = 0usize;
            for (i, c) in p.iter().enumerate() {
                prop_assert_eq!(c.number, i as i64);
                prop_assert_eq!(c.offset, at as i64);
                prop_assert_eq!(c.bytes.start, at);
                prop_assert!(!c.bytes.is_empty() && c.bytes.len() <= CHUNK);
                at = c.bytes.end;
            }
            prop_assert_eq!(at, len);
        }

        /// Splitting keeps every event, in order, each large one alone.
        #[test]
        fn split_keeps_order_and_isolates_large_events(sizes in proptest::collection::vec(
            prop_oneof![0usize..40, Just(MAX_EVENT), Just(MAX_EVENT + 1)], 1..6)) {
            let mut b = BatchBuilder::default();
            let events: Vec<Vec<u8>> = sizes.iter().enumerate()
                .map(|(i, n)| vec![i as u8; *n]).collect();
            for e in &events {
                b.push(e, Some(&format!("k{}", e.len()))).unwrap();
            }
            let (g, _rx) = Group::new(events.len());
            let steps = split_at_large(Piece::new(b.finish(), Done::Group(g), None));
            let mut seen = Vec::new();
            for s in steps {
                let (p, large) = match s { Step::Small(p) => (p, false), Step::Large(p) => (p, true) };
                prop_assert_eq!(large, has_large(&p.data));
                if large { prop_assert_eq!(p.count, 1); }
                let mut pos = 0;
                let mut n = 0;
                while pos < p.data.len() {
                    let len = event_len(&p.data[pos..]).unwrap();
                    seen.push(p.data[pos + 8..pos + len].to_vec());
                    pos += len;
                    n += 1;
                }
                prop_assert_eq!(n, p.count);
                match &p.points {
                    Points::Each(ps) => prop_assert_eq!(ps.len(), p.count),
                    Points::Same(_) => prop_assert_eq!(p.count, 1),
                    Points::NoKey => prop_assert!(false, "keys were given"),
                }
            }
            prop_assert_eq!(seen, events);
        }
    }

    #[test]
    fn only_events_over_8_mib_are_large() {
        assert!(!is_large(MAX_EVENT + 8));
        assert!(is_large(MAX_EVENT + 9));
        let small = one_event(&vec![0u8; MAX_EVENT], None).unwrap();
        assert!(!has_large(&small.data));
        let big = one_event(&vec![0u8; MAX_EVENT + 1], None).unwrap();
        assert!(has_large(&big.data));
        let (tx, _rx) = tokio::sync::oneshot::channel();
        let steps = split_at_large(Piece::new(big, Done::One(tx), None));
        assert!(matches!(steps.as_slice(), [Step::Large(p)] if p.count == 1));
    }

    fn appended(n: i64) -> Reply {
        Reply::DataAppended {
            writer_id: 1,
            event_number: n,
            previous_event_number: n - 1,
            request_id: 3,
            current_segment_write_offset: -1,
        }
    }

    #[test]
    fn a_write_goes_create_setup_send_merge_done() {
        let mut p = Phase::Create;
        let created = Reply::SegmentCreated {
            request_id: 1,
            segment: "s/t/0.#epoch.0#transient.ab".into(),
        };
        assert_eq!(
            p.on_reply(created, 3).unwrap(),
            Next::Setup("s/t/0.#epoch.0#transient.ab".into())
        );
        assert_eq!(p.on_reply(Reply::KeepAlive, 3).unwrap(), Next::Wait);
        let setup = Reply::AppendSetup {
            request_id: 2,
            segment: "s/t/0.#epoch.0#transient.ab".into(),
            writer_id: 1,
            last_event_number: NO_EVENT_NUMBER,
        };
        assert!(matches!(p.on_reply(setup, 3).unwrap(), Next::Send(_)));
        assert_eq!(p.on_reply(appended(0), 3).unwrap(), Next::Wait);
        // One answer may acknowledge several chunks.
        assert!(matches!(p.on_reply(appended(2), 3).unwrap(), Next::Merge(t) if t.ends_with("ab")));
        let merged = Reply::SegmentsMerged {
            request_id: 6,
            target: "s/t/0.#epoch.0".into(),
            source: "s/t/0.#epoch.0#transient.ab".into(),
            new_target_write_offset: 20 << 20,
        };
        assert_eq!(p.on_reply(merged, 3).unwrap(), Next::Done);
        assert_eq!(p, Phase::Done);
    }

    #[test]
    fn failures_and_surprises_fail_the_write() {
        let sealed = Reply::SegmentIsSealed {
            request_id: 1,
            segment: "s/t/0".into(),
            stack: String::new(),
            offset: -1,
        };
        let e = Phase::Create.on_reply(sealed, 2).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ReadOnly);
        let mut merging = Phase::Merge {
            transient: "t".into(),
        };
        let e = merging.on_reply(appended(0), 2).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Protocol);
        let used = Reply::AppendSetup {
            request_id: 2,
            segment: "t".into(),
            writer_id: 1,
            last_event_number: 4,
        };
        let mut setup = Phase::Setup {
            transient: "t".into(),
        };
        assert!(setup.on_reply(used, 2).is_err());
        let failed = Reply::ConditionalCheckFailed {
            writer_id: 1,
            event_number: 1,
            request_id: 4,
        };
        let mut appending = Phase::Append {
            transient: "t".into(),
            chunks: 2,
            acked: 0,
        };
        assert!(appending.on_reply(failed, 2).is_err());
    }

    #[test]
    fn a_lost_merge_is_sent_again_and_anything_else_starts_over() {
        // Where an attempt stopped decides the retry: a merge sent is merged again (the
        // store answers SEGMENTS_MERGED for a source it merged already), anything earlier
        // is written whole again through a new transient segment.
        for (phase, again) in [
            (Phase::Create, None),
            (
                Phase::Setup {
                    transient: "t".into(),
                },
                None,
            ),
            (
                Phase::Append {
                    transient: "t".into(),
                    chunks: 3,
                    acked: 1,
                },
                None,
            ),
            (
                Phase::Merge {
                    transient: "t".into(),
                },
                Some("t".to_owned()),
            ),
        ] {
            assert_eq!(phase.merge_sent(), again, "{phase:?}");
        }
        let merged = Reply::SegmentsMerged {
            request_id: 1,
            target: "s/t/0.#epoch.0".into(),
            source: "t".into(),
            new_target_write_offset: 1,
        };
        assert_eq!(on_merge_again(merged).unwrap(), Some(Next::Done));
        assert_eq!(on_merge_again(Reply::KeepAlive).unwrap(), Some(Next::Wait));
        let gone = Reply::NoSuchSegment {
            request_id: 1,
            segment: "t".into(),
            stack: String::new(),
            offset: -1,
        };
        assert_eq!(
            on_merge_again(gone).unwrap(),
            None,
            "gone: write it whole again"
        );
        let sealed = Reply::SegmentIsSealed {
            request_id: 1,
            segment: "s/t/0".into(),
            stack: String::new(),
            offset: -1,
        };
        assert_eq!(
            on_merge_again(sealed).unwrap_err().kind(),
            ErrorKind::ReadOnly
        );
    }

    #[test]
    fn lost_connections_and_silences_are_retried_refusals_are_not() {
        for k in [
            ErrorKind::Connect,
            ErrorKind::Disconnected,
            ErrorKind::Timeout,
        ] {
            assert!(worth_retrying(&Error::new(k, "x")), "{k:?}");
        }
        for k in [
            ErrorKind::ReadOnly,
            ErrorKind::Authentication,
            ErrorKind::Protocol,
            ErrorKind::MessageTooBig,
        ] {
            assert!(!worth_retrying(&Error::new(k, "x")), "{k:?}");
        }
    }
}
