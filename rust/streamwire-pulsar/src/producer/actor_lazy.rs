//! A lazily started producer: a partition of a partitioned topic opened with
//! `ProducerConfig::lazy_start` (Java's `lazyStartPartitionedProducers`). Its handle exists at
//! once, but it is created on the broker only when the first message is sent to it, so a
//! producer that routes to few partitions (single-partition routing, a router of one's own)
//! holds no broker producer and no connection for the others. Until then flushes and closes
//! answer at once; the first send connects, and then the producer runs as any other. If
//! creating it fails, the messages that started it, and every one sent to it later, fail with
//! that error until the producer is closed. A child module of `actor` (it drives the actor).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use streamwire_core::error::Error;
use tokio::sync::mpsc;

use super::super::bulk::BulkChunk;
use super::super::{Command, ProducerConfig, Queued, Shared};
use super::Actor;
use crate::client::PulsarClient;

/// Wait for the first send, then create the producer on the broker and run it.
pub(in crate::producer) async fn start_lazily(
    client: PulsarClient,
    config: Arc<ProducerConfig>,
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Command>,
) {
    let first = loop {
        match rx.recv().await {
            None => return,
            Some(cmd @ (Command::Send(_) | Command::Bulk(_))) => break cmd,
            // Nothing was sent: nothing to flush or to wait for.
            Some(Command::Flush(tx)) => {
                let _ = tx.send(());
            }
            Some(Command::Trigger) => {}
            Some(Command::Close(tx)) => {
                shared.closed.store(true, Ordering::Release);
                let _ = tx.send(Ok(()));
                return;
            }
        }
    };
    shared.idle.store(false, Ordering::Release);
    match Actor::connect_or_back(client, config, Arc::clone(&shared), rx).await {
        Ok(mut actor) => {
            match first {
                Command::Send(items) => actor.on_send(items).await,
                Command::Bulk(chunk) => actor.on_bulk(chunk).await,
                _ => unreachable!("the loop above breaks on sends only"),
            }
            actor.run().await;
        }
        Err((err, mut rx)) => {
            // Nothing can be sent here: every message routed to this partition, now and
            // later, fails with the error that stopped it (as a producer fenced or refused
            // after it ran), not with "closed" — the application did not close anything.
            // The official client also keeps failing them (with NotConnected). The task
            // lives until the producer is closed or dropped.
            fail_command(&shared, first, &err);
            while let Some(cmd) = rx.recv().await {
                match cmd {
                    Command::Send(items) => fail(&shared, items, &err),
                    Command::Bulk(chunk) => fail_bulk(&shared, chunk, &err),
                    Command::Flush(tx) => {
                        let _ = tx.send(());
                    }
                    Command::Trigger => {}
                    Command::Close(tx) => {
                        shared.closed.store(true, Ordering::Release);
                        let _ = tx.send(Ok(()));
                        return;
                    }
                }
            }
        }
    }
}

/// Fail the first send (messages or a bulk chunk) with `err`.
fn fail_command(shared: &Shared, cmd: Command, err: &Error) {
    match cmd {
        Command::Send(items) => fail(shared, items, err),
        Command::Bulk(chunk) => fail_bulk(shared, chunk, err),
        _ => {}
    }
}

/// Fail a bulk chunk with `err`, freeing what it holds first.
fn fail_bulk(shared: &Shared, chunk: BulkChunk, err: &Error) {
    let n = chunk.len();
    shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
    shared.stats.on_failed(n as u64);
    let BulkChunk {
        group,
        reservation,
        permits,
        ..
    } = chunk;
    drop((reservation, permits));
    group.failed(n, err);
}

/// Fail queued messages with `err`, freeing what they hold first (as the actor does).
fn fail(shared: &Shared, items: Vec<Queued>, err: &Error) {
    let n = items.len();
    shared.pending_messages.fetch_sub(n, Ordering::AcqRel);
    shared.stats.on_failed(n as u64);
    for q in items {
        let Queued {
            completion,
            reservation,
            permits,
            ..
        } = q;
        drop((reservation, permits));
        completion.complete(Err(err.clone()));
    }
}
