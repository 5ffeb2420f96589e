//! The producer's task: gathers messages, sends Produce requests pipelined (at most
//! `max_in_flight` unanswered), completes futures in order as acknowledgements arrive, and
//! after a lost connection sends every unanswered request again, in order, on a new one.
//!
//! Why re-send whole requests: TANK acknowledges a request as a whole per partition and has
//! no producer sequence numbers, so a request whose answer was lost may or may not have been
//! stored; re-sending is the only way not to lose it (at-least-once, documented). A message
//! whose `send_timeout` passes while it waits for a re-send fails with `Timeout` instead.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::log::{event, Level};

use crate::client::TankClient;
use crate::codec::RawFrame;
use crate::errors;
use crate::producer::batch::{Batcher, Sealed};
use crate::producer::{Command, Done, Dones, ProducerConfig};

struct Flight {
    seq: u64,
    sealed: Sealed,
    reply: oneshot::Receiver<Result<RawFrame>>,
}

fn failed(e: Error) -> oneshot::Receiver<Result<RawFrame>> {
    let (tx, rx) = oneshot::channel();
    let _ = tx.send(Err(e));
    rx
}

struct Actor {
    client: TankClient,
    topic: String,
    config: ProducerConfig,
    batcher: Batcher,
    flights: VecDeque<Flight>,
    next_seq: u64,
    /// Flushes waiting for every flight up to a sequence number.
    flushes: Vec<(u64, oneshot::Sender<Result<()>>)>,
    /// The first failure since the last flush returned, reported by the next flush.
    failure: Option<Error>,
    pending: Arc<AtomicUsize>,
}

pub(crate) async fn run(
    client: TankClient,
    topic: String,
    partitions: u16,
    config: ProducerConfig,
    mut rx: mpsc::Receiver<Command>,
    pending: Arc<AtomicUsize>,
) {
    let mut a = Actor {
        batcher: Batcher::new(&topic, partitions, config.batch.clone(), config.compression),
        client,
        topic,
        config,
        flights: VecDeque::new(),
        next_seq: 1,
        flushes: Vec::new(),
        failure: None,
        pending,
    };
    let mut closing: Option<oneshot::Sender<Result<()>>> = None;
    loop {
        if closing.is_some() && a.flights.is_empty() && a.batcher.queued() == 0 {
            break;
        }
        let deadline = a.batcher.deadline();
        let can_take = closing.is_none() && a.flights.len() < a.config.max_in_flight;
        tokio::select! {
            biased;
            reply = async { (&mut a.flights.front_mut().expect("checked non-empty").reply).await },
                if !a.flights.is_empty() =>
            {
                let reply = reply.unwrap_or_else(|_| {
                    Err(Error::new(ErrorKind::Disconnected, "connection lost"))
                });
                a.on_reply(reply).await;
            }
            cmd = rx.recv(), if can_take => match cmd {
                Some(Command::Send { items, dones, reservation }) => {
                    a.gather(items, dones, reservation).await;
                }
                Some(Command::Flush(tx)) => {
                    a.send_gathered().await;
                    a.flushes.push((a.next_seq - 1, tx));
                    a.settle_flushes();
                }
                Some(Command::Close(tx)) => {
                    a.send_gathered().await;
                    closing = Some(tx);
                }
                None => {
                    // Every handle is gone: send what is gathered and finish.
                    a.send_gathered().await;
                    closing.get_or_insert_with(|| oneshot::channel().0);
                }
            },
            () = sleep_until(deadline), if deadline.is_some() && can_take => {
                a.send_gathered().await;
            }
        }
    }
    let result = a.failure.take().map_or(Ok(()), Err);
    if let Some(tx) = closing {
        let _ = tx.send(result);
    }
    rx.close();
    // Anything that raced the close fails rather than vanishing.
    while let Ok(cmd) = rx.try_recv() {
        match cmd {
            Command::Send { items, dones, .. } => {
                a.pending.fetch_sub(items.len(), Ordering::AcqRel);
                match dones {
                    Dones::Each(ds) => ds
                        .into_iter()
                        .for_each(|d| d.complete(Err(Error::closed("TANK producer")), 1)),
                    Dones::Group(g) => {
                        Done::Group(g).complete(Err(Error::closed("TANK producer")), items.len())
                    }
                }
            }
            Command::Flush(tx) | Command::Close(tx) => {
                let _ = tx.send(Err(Error::closed("TANK producer")));
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

impl Actor {
    /// Put a command's messages into their partitions' slots, each run of messages of one
    /// partition with one completion and one piece of the reservation. A slot that fills up
    /// goes out at once, mid-command: a big `send_many` becomes a pipeline of requests of the
    /// batch size, not one huge request sent after all of it was gathered.
    async fn gather(
        &mut self,
        items: Vec<(u16, crate::producer::Pending)>,
        dones: Dones,
        mut reservation: Option<streamwire_core::budget::Reservation>,
    ) {
        let now = Instant::now();
        match dones {
            Dones::Each(ds) => {
                for ((p, msg), d) in items.into_iter().zip(ds) {
                    let part = reservation
                        .as_mut()
                        .and_then(|r| r.split(msg.size() as u64));
                    let due = self.batcher.push(p, msg, now);
                    self.batcher.settle_with(p, d, 1, part);
                    if due {
                        self.send_gathered().await;
                    }
                }
            }
            Dones::Group(g) => {
                let total = items.len();
                let mut run: Option<(u16, usize, u64)> = None;
                for (i, (p, msg)) in items.into_iter().enumerate() {
                    if let Some((rp, n, bytes)) = run {
                        if rp != p {
                            let part = reservation.as_mut().and_then(|r| r.split(bytes));
                            self.batcher
                                .settle_with(rp, Done::Group(g.clone()), n, part);
                            run = None;
                        }
                    }
                    let size = msg.size() as u64;
                    let due = self.batcher.push(p, msg, now);
                    let (_, n, bytes) = run.get_or_insert((p, 0, 0));
                    *n += 1;
                    *bytes += size;
                    if due && i + 1 < total {
                        if let Some((rp, n, bytes)) = run.take() {
                            let part = reservation.as_mut().and_then(|r| r.split(bytes));
                            self.batcher
                                .settle_with(rp, Done::Group(g.clone()), n, part);
                        }
                        self.send_gathered().await;
                    }
                }
                if let Some((rp, n, _)) = run {
                    // The last run takes what is left of the reservation.
                    self.batcher
                        .settle_with(rp, Done::Group(g), n, reservation.take());
                }
            }
        }
        if self.batcher.is_due() {
            self.send_gathered().await;
        }
    }

    /// Wait for the oldest request's answer while `max_in_flight` are unanswered.
    async fn make_room(&mut self) {
        while self.flights.len() >= self.config.max_in_flight {
            let Some(front) = self.flights.front_mut() else {
                return;
            };
            let reply = (&mut front.reply)
                .await
                .unwrap_or_else(|_| Err(Error::new(ErrorKind::Disconnected, "connection lost")));
            self.on_reply(reply).await;
        }
    }

    /// Seal what is gathered into requests (255 partitions at most each) and send them.
    async fn send_gathered(&mut self) {
        loop {
            let id = self.client.next_request_id();
            let sealed = match self.batcher.seal(id) {
                Ok(Some(s)) => s,
                Ok(None) => return,
                Err(e) => {
                    // Cannot happen for messages `prepare` accepted; if it does, every
                    // gathered message fails with the reason rather than hanging.
                    let n = self.batcher.fail_all(&e);
                    self.pending.fetch_sub(n, Ordering::AcqRel);
                    self.failure.get_or_insert(e);
                    return;
                }
            };
            self.make_room().await;
            let seq = self.next_seq;
            self.next_seq += 1;
            let reply = self.transmit(&sealed).await;
            self.flights.push_back(Flight { seq, sealed, reply });
        }
    }

    /// Put one request on the connection (dialling if needed); failures come back through
    /// the receiver, where the re-send logic handles them.
    /// A re-send goes on a new connection, so it keeps the request's id.
    async fn transmit(&self, sealed: &Sealed) -> oneshot::Receiver<Result<RawFrame>> {
        let deadline = Instant::now() + self.client.config().operation_timeout;
        let conn = match self.client.connection(deadline).await {
            Ok(c) => c,
            Err(e) => return failed(e),
        };
        match conn
            .start_request(
                u64::from(sealed.request_id),
                sealed.frame.clone(),
                deadline,
                "TANK produce",
            )
            .await
        {
            Ok(rx) => rx,
            Err(e) => failed(e),
        }
    }

    async fn on_reply(&mut self, reply: Result<RawFrame>) {
        match reply {
            Ok(frame) => {
                let flight = self.flights.pop_front().expect("a reply has a flight");
                let outcome = errors::produce_outcome(&self.topic, &flight.sealed, &frame);
                self.complete(flight, outcome);
                self.settle_flushes();
            }
            Err(e) if e.kind() == ErrorKind::Closed => {
                while let Some(f) = self.flights.pop_front() {
                    self.complete_all(f, Err(Error::closed("TANK client")));
                }
                self.settle_flushes();
            }
            Err(e) => self.resend_all(e).await,
        }
    }

    /// The connection failed under the oldest request: drop the connection, fail what is
    /// past its send timeout, and send the rest again in order.
    async fn resend_all(&mut self, cause: Error) {
        if cause.kind() == ErrorKind::Timeout {
            self.client.reset_connection().await;
        }
        let now = Instant::now();
        let mut kept = VecDeque::with_capacity(self.flights.len());
        while let Some(f) = self.flights.pop_front() {
            if now.duration_since(f.sealed.since) >= self.config.send_timeout {
                let e = Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "producing to TANK topic {:?} timed out after {:?} ({cause}); the \
                         messages may or may not have been stored",
                        self.topic, self.config.send_timeout
                    ),
                );
                event(Level::Error, "tank.producer", || {
                    (e.to_string(), vec![("topic", self.topic.to_string())])
                });
                self.complete_all(f, Err(e));
            } else {
                kept.push_back(f);
            }
        }
        if !kept.is_empty() {
            event(Level::Warning, "tank.producer", || {
                (
                    format!("resending {} requests after: {cause}", kept.len()),
                    vec![("topic", self.topic.to_string())],
                )
            });
        }
        for mut f in kept {
            f.reply = self.transmit(&f.sealed).await;
            self.flights.push_back(f);
        }
        self.settle_flushes();
    }

    fn complete_all(&mut self, flight: Flight, result: Result<()>) {
        let n = flight.sealed.parts.len();
        self.complete(flight, (0..n).map(|_| result.clone()).collect());
    }

    /// Complete each part's messages with its outcome (one per part, in order).
    fn complete(&mut self, flight: Flight, outcome: Vec<Result<()>>) {
        for (part, result) in flight.sealed.parts.into_iter().zip(outcome) {
            if let Err(e) = &result {
                self.failure.get_or_insert_with(|| e.clone());
            }
            self.pending.fetch_sub(part.messages, Ordering::AcqRel);
            for (d, n) in part.dones {
                d.complete(result.clone(), n);
            }
        }
    }

    /// Answer flushes whose requests are all settled.
    fn settle_flushes(&mut self) {
        let oldest = self.flights.front().map_or(u64::MAX, |f| f.seq);
        let mut i = 0;
        while i < self.flushes.len() {
            if self.flushes[i].0 < oldest {
                let (_, tx) = self.flushes.swap_remove(i);
                let _ = tx.send(self.failure.take().map_or(Ok(()), Err));
            } else {
                i += 1;
            }
        }
    }
}
