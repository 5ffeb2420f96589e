//! The consumer's fetch task: one Consume request at a time for every partition it reads,
//! decoded into the shared queue.
//!
//! A lost connection or a request that was never answered is retried on a new connection
//! from the same positions (positions advance only when a response is decoded), so a
//! broker restart costs a reconnect, never a message. A seek wakes the task: the request in
//! flight is abandoned and its response, if it still comes, is recognised by the partition's
//! generation and dropped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::log::{event, Level};

use crate::client::TankClient;
use crate::codec::{self, ConsumePartition, ConsumeTopic, PartitionOutcome};
use crate::consumer::positions::{OnOutOfRange, EARLIEST, TAIL};
use crate::consumer::{ConsumerConfig, Item, Shared, TankMessage};

/// A short pause after an answer that brought nothing and came back at once (a broker that
/// does not hold the request), so the task never spins.
const EMPTY_PAUSE: Duration = Duration::from_millis(20);

pub(crate) async fn run(client: TankClient, shared: Arc<Shared>, config: ConsumerConfig) {
    let mut retry_pause = Duration::from_millis(50);
    loop {
        // Wait for room in the read-ahead and for something to read.
        let request = loop {
            let wake = shared.wake.notified();
            tokio::pin!(wake);
            wake.as_mut().enable();
            {
                let st = shared.lock();
                if st.closed {
                    return;
                }
                if st.queued_bytes < config.queue_bytes {
                    let r = st.positions.request();
                    if !r.is_empty() {
                        break r;
                    }
                }
            }
            wake.await;
        };
        let started = Instant::now();
        let outcome = tokio::select! {
            r = fetch_once(&client, &shared, &config, &request) => r,
            // A seek or close: abandon this request and build the next one.
            () = shared.wake.notified() => continue,
        };
        match outcome {
            Ok(delivered) => {
                retry_pause = Duration::from_millis(50);
                if delivered == 0 && started.elapsed() < EMPTY_PAUSE / 4 {
                    tokio::time::sleep(EMPTY_PAUSE).await;
                }
            }
            Err(e) if e.kind() == ErrorKind::Closed => {
                let mut st = shared.lock();
                if !st.closed {
                    st.queue.push_back(Item::Err(e));
                    st.closed = true;
                }
                drop(st);
                shared.ready.notify_waiters();
                return;
            }
            Err(e) => {
                // Retried: the connection layer re-dials with backoff; this pause keeps a
                // broker that answers garbage from being hammered.
                event(Level::Warning, "tank.consumer", || {
                    (
                        format!("fetching failed ({e}); retrying in {retry_pause:?}"),
                        vec![("topic", shared.topic.to_string())],
                    )
                });
                shared.lock().last_error = Some(e.to_string());
                tokio::time::sleep(retry_pause).await;
                retry_pause = (retry_pause * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// Send one Consume request and queue what it brings; returns the messages queued.
async fn fetch_once(
    client: &TankClient,
    shared: &Shared,
    config: &ConsumerConfig,
    request: &[(u16, u64, u32, u64)],
) -> Result<usize> {
    let parts: Vec<ConsumePartition> = request
        .iter()
        .map(|&(partition, seq, fetch_size, _)| ConsumePartition {
            partition,
            seq,
            fetch_size,
        })
        .collect();
    let topic = shared.topic.clone();
    let max_wait_ms = u64::try_from(config.max_wait.as_millis()).unwrap_or(u64::MAX);
    let timeout = config.max_wait + client.config().operation_timeout;
    let frame = client
        .call("TANK consume", timeout, true, |out: &mut BytesMut, id| {
            codec::encode_consume(
                out,
                id,
                max_wait_ms,
                config.min_bytes,
                None,
                &[ConsumeTopic {
                    topic: topic.as_bytes(),
                    partitions: &parts,
                }],
            )
            .map_err(Error::from)
        })
        .await?;
    let resp = codec::decode_consume_response(frame.payload).map_err(Error::from)?;
    let mut st = shared.lock();
    if st.closed {
        return Err(Error::closed("TANK consumer"));
    }
    let mut delivered = 0;
    let queued_before = st.queue.len();
    for t in resp.topics {
        let Some(results) = t.partitions else {
            st.queue.push_back(Item::Err(Error::new(
                ErrorKind::TopicNotFound,
                format!("TANK topic {:?} does not exist (any more)", &*shared.topic),
            )));
            for &(p, ..) in request {
                if let Some(pos) = st.positions.get_mut(p) {
                    pos.paused = true;
                }
            }
            continue;
        };
        for r in results {
            let Some(&(_, requested, fetch_size, generation)) =
                request.iter().find(|q| q.0 == r.partition)
            else {
                continue;
            };
            let current = st.positions.get(r.partition).map(|p| p.generation);
            if current != Some(generation) {
                continue; // sought since the request was sent
            }
            delivered += apply(
                &mut st,
                &shared.topic,
                config,
                r.partition,
                requested,
                fetch_size,
                r.outcome,
            )?;
        }
    }
    let queued_something = st.queue.len() > queued_before;
    drop(st);
    if queued_something {
        shared.ready.notify_waiters();
    }
    Ok(delivered)
}

/// Apply one partition's result; returns the messages queued.
fn apply(
    st: &mut crate::consumer::State,
    topic: &str,
    config: &ConsumerConfig,
    partition: u16,
    requested: u64,
    fetch_size: u32,
    outcome: PartitionOutcome,
) -> Result<usize> {
    let pause_with = |st: &mut crate::consumer::State, e: Error| {
        st.queue.push_back(Item::Err(e));
        if let Some(pos) = st.positions.get_mut(partition) {
            pos.paused = true;
        }
    };
    match outcome {
        PartitionOutcome::Data {
            base_seq,
            high_water,
            chunk,
        } => {
            let mut msgs = Vec::new();
            let decoded = codec::decode_chunk(&chunk, base_seq, requested, high_water, &mut msgs)
                .map_err(Error::from)?;
            let n = msgs.len();
            for m in msgs {
                st.queued_bytes += m.value.len() + m.key.as_ref().map_or(0, bytes::Bytes::len);
                st.queue.push_back(Item::Msg(TankMessage {
                    partition,
                    seq: m.seq,
                    ts: m.ts,
                    key: m.key,
                    value: m.value,
                }));
            }
            let pos = st
                .positions
                .get_mut(partition)
                .expect("partition of the request");
            if n > 0 {
                pos.fetch = decoded.next_seq;
            } else if let Some(need) = decoded.incomplete_bundle_len {
                let need = u32::try_from(need).unwrap_or(u32::MAX);
                if need > config.max_fetch_size {
                    let e = Error::new(
                        ErrorKind::MessageTooBig,
                        format!(
                            "a bundle of TANK topic {topic:?} partition {partition} at seq \
                             {requested} is {need} bytes, above max_fetch_size ({})",
                            config.max_fetch_size
                        ),
                    );
                    pause_with(st, e);
                } else {
                    pos.fetch_size = need
                        .saturating_add(64)
                        .max(fetch_size.saturating_mul(2))
                        .min(config.max_fetch_size);
                }
            } else if requested == EARLIEST || requested == TAIL {
                // An empty partition (or one read to its end): wait at the tail.
                pos.fetch = high_water.saturating_add(1);
            } else {
                pos.fetch = decoded.next_seq.max(requested);
            }
            Ok(n)
        }
        PartitionOutcome::BoundaryFault {
            first_available,
            high_water,
        } => {
            match config.on_out_of_range {
                OnOutOfRange::Earliest => {
                    if let Some(pos) = st.positions.get_mut(partition) {
                        pos.fetch = first_available;
                    }
                }
                OnOutOfRange::Latest => {
                    if let Some(pos) = st.positions.get_mut(partition) {
                        pos.fetch = high_water.saturating_add(1);
                    }
                }
                OnOutOfRange::Error => {
                    let e = Error::new(
                        ErrorKind::OutOfRange,
                        format!(
                            "TANK topic {topic:?} partition {partition} has no message {requested}: \
                             it holds {first_available}..={high_water} (seek, or use \
                             on_out_of_range=\"earliest\" or \"latest\")"
                        ),
                    )
                    .with_detail("first_available", first_available)
                    .with_detail("high_water", high_water)
                    .with_detail("partition", u64::from(partition));
                    pause_with(st, e);
                }
            }
            Ok(0)
        }
        PartitionOutcome::UnknownPartition => {
            let e = Error::new(
                ErrorKind::PartitionNotFound,
                format!("TANK topic {topic:?} has no partition {partition} (any more)"),
            );
            pause_with(st, e);
            Ok(0)
        }
        other => Err(Error::new(
            ErrorKind::Server,
            format!("TANK broker could not serve topic {topic:?} partition {partition}: {other:?}"),
        )
        .with_retriable(true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::{Positions, State};
    use bytes::{BufMut, Bytes, BytesMut};
    use std::collections::VecDeque;

    fn state() -> State {
        State {
            queue: VecDeque::new(),
            queued_bytes: 0,
            positions: Positions::new(&[0], 64, |_| 1),
            closed: false,
            last_error: None,
        }
    }

    /// A chunk holding only the start of a 1000-byte bundle (a broker may cut the last
    /// bundle of a chunk at the fetch size).
    fn cut_chunk() -> Bytes {
        let mut c = BytesMut::new();
        crate::codec::wire::put_varint(&mut c, 1000);
        c.put_slice(&[0u8; 10]);
        c.freeze()
    }

    #[test]
    fn a_cut_first_bundle_grows_the_fetch_size_to_fit_it() {
        let mut st = state();
        let config = ConsumerConfig::default();
        let outcome = PartitionOutcome::Data {
            base_seq: Some(1),
            high_water: 5,
            chunk: cut_chunk(),
        };
        assert_eq!(apply(&mut st, "t", &config, 0, 1, 64, outcome).unwrap(), 0);
        let pos = st.positions.get(0).unwrap();
        assert!(pos.fetch_size >= 1002, "{}", pos.fetch_size);
        assert_eq!((pos.fetch, pos.paused), (1, false));
    }

    #[test]
    fn a_bundle_past_max_fetch_size_raises_once_and_pauses() {
        let mut st = state();
        let config = ConsumerConfig {
            max_fetch_size: 500,
            fetch_size: 64,
            ..ConsumerConfig::default()
        };
        let outcome = PartitionOutcome::Data {
            base_seq: Some(1),
            high_water: 5,
            chunk: cut_chunk(),
        };
        apply(&mut st, "t", &config, 0, 1, 64, outcome).unwrap();
        assert!(st.positions.get(0).unwrap().paused);
        match st.queue.pop_front() {
            Some(Item::Err(e)) => {
                assert_eq!(e.kind(), ErrorKind::MessageTooBig);
                assert!(e.to_string().contains("max_fetch_size"), "{e}");
            }
            _ => panic!("no error queued"),
        }
    }

    #[test]
    fn boundary_faults_follow_the_policy() {
        for (policy, fetch, paused) in [
            (OnOutOfRange::Earliest, 3, false),
            (OnOutOfRange::Latest, 10, false),
            (OnOutOfRange::Error, 1, true),
        ] {
            let mut st = state();
            let config = ConsumerConfig {
                on_out_of_range: policy,
                ..ConsumerConfig::default()
            };
            let outcome = PartitionOutcome::BoundaryFault {
                first_available: 3,
                high_water: 9,
            };
            apply(&mut st, "t", &config, 0, 1, 64, outcome).unwrap();
            let pos = st.positions.get(0).unwrap();
            assert_eq!((pos.fetch, pos.paused), (fetch, paused), "{policy:?}");
            if paused {
                let Some(Item::Err(e)) = st.queue.pop_front() else {
                    panic!("no error")
                };
                assert_eq!(e.detail("first_available"), Some(3));
                assert_eq!(e.detail("high_water"), Some(9));
            }
        }
    }
}
