//! The writer task's half for large events (over 8 MiB): choosing the segment, handing the
//! event to a task that writes it through a transient segment (`writer::large`), and
//! settling it when that task reports back. The barrier around it is in the actor's `pump`.

use streamwire_core::error::{Error, ErrorKind, Result};
use streamwire_core::log::{event, Level};

use super::{Actor, Event};
use crate::routing::segment_for;
use crate::writer::batch::{Piece, Points};
use crate::writer::large::{write_large, RetryBudget};
use crate::writer::queue::Acked;

impl Actor {
    /// Write one large event through a transient segment, in a task of its own.
    pub(super) fn start_large(&mut self, piece: Piece) {
        let refuse = |this: &mut Self, piece: Piece, e: Error| {
            let n = piece.count;
            piece.settle(Err(e.clone()));
            this.settle_failed(n, &e);
        };
        if let Some(e) = self.fatal.clone() {
            return refuse(self, piece, e);
        }
        if self.txn.is_some() {
            // The binding refuses these at the call; a Rust caller is refused here.
            let e = crate::writer::large::refuse_in_transaction(&piece.data)
                .err()
                .unwrap_or_else(|| Error::new(ErrorKind::MessageTooBig, "large event"));
            return refuse(self, piece, e);
        }
        let r = self.pick();
        // An event without a key (no point, or NaN beside keyed ones) goes to any segment.
        let point = match &piece.points {
            Points::NoKey => None,
            Points::Same(p) => Some(*p),
            Points::Each(ps) => ps.first().copied(),
        }
        .filter(|p| !p.is_nan());
        let seg = match point {
            _ if self.ranges.is_empty() => None,
            None => Some(self.ranges[r % self.ranges.len()].segment),
            Some(p) => segment_for(p, &self.ranges),
        };
        let Some(s) = seg.and_then(|seg| self.segs.get(&seg)) else {
            let e = Error::new(ErrorKind::ReadOnly, "no open segment takes the large event");
            return refuse(self, piece, e);
        };
        let (client, stream, id, name) = (
            self.client.clone(),
            self.stream.clone(),
            s.segment.id,
            s.name.clone(),
        );
        let data = piece.data.clone();
        let events = self.events.clone();
        // Retried as the writer retries its segments: until `send_timeout` after the first
        // failure, with its backoff.
        let budget = RetryBudget {
            send_timeout: self.config.send_timeout,
            backoff: self.config.backoff.clone(),
        };
        self.large = Some(piece);
        tokio::spawn(async move {
            let result = write_large(&client, &stream, id, &name, data, &budget).await;
            let _ = events.send(Event::LargeDone(result)).await;
        });
    }

    pub(super) fn on_large_done(&mut self, result: Result<()>) {
        let Some(piece) = self.large.take() else {
            return;
        };
        match result {
            Ok(()) => {
                self.on_acked(Acked {
                    events: piece.count,
                    bytes: piece.data.len().saturating_sub(8 * piece.count),
                    oldest: Some(piece.queued_at),
                });
                piece.settle(Ok(()));
            }
            Err(e) => {
                event(Level::Warning, "pravega.writer", || {
                    (
                        format!("large event not written: {e}"),
                        vec![("stream", self.stream.to_string())],
                    )
                });
                let n = piece.count;
                piece.settle(Err(e.clone()));
                self.settle_failed(n, &e);
            }
        }
    }
}
