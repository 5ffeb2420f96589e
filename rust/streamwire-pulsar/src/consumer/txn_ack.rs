//! Acknowledgements inside a transaction.
//!
//! Unlike plain acks they are not grouped: each call registers the subscription with the
//! transaction's coordinator (once per topic-partition), then sends one ACK per partition
//! carrying the transaction id and a request id, and waits for the broker's ACK_RESPONSE, so
//! a conflict (the message is already acknowledged in another transaction) fails the call.
//! The ack only takes effect when the transaction commits; on abort the messages go back to
//! the subscription. Locally the messages count as acknowledged (no ack-timeout or
//! negative-ack redelivery for them).

use std::sync::atomic::Ordering;

use streamwire_core::error::{Error, Result};
use streamwire_core::metrics::C;

use super::actor::Control;
use super::{slot_index, Consumer, SubType};
use crate::message_id::MessageId;
use crate::transaction::wire::{self, TxnReply};
use crate::transaction::Transaction;

impl Consumer {
    /// Acknowledge `ids` (individually, or cumulatively when `cumulative`) as part of `txn`,
    /// waiting for the broker to accept every one of them.
    pub async fn acknowledge_in_txn(
        &self,
        ids: &[(Option<u32>, MessageId)],
        cumulative: bool,
        txn: &Transaction,
    ) -> Result<()> {
        self.check_open()?;
        if cumulative
            && matches!(
                self.inner.cfg.sub_type,
                SubType::Shared | SubType::KeyShared
            )
        {
            return Err(Error::invalid(
                "cumulative acknowledgement is not allowed on shared or key_shared subscriptions",
            ));
        }
        txn.check_open("acknowledge")?;
        let slots = self.slots();
        let mut resolved = Vec::with_capacity(ids.len());
        for (slot, id) in ids {
            resolved.push((slot_index(&slots, *slot, id)?, *id));
        }
        resolved.sort_by_key(|(s, _)| *s);
        for run in resolved.chunk_by(|a, b| a.0 == b.0) {
            let s = &slots[run[0].0];
            let guard = txn.begin_op("acknowledge")?;
            let res = async {
                txn.register_subscription(&s.topic_str, &self.inner.cfg.subscription)
                    .await?;
                let (conn, consumer_id) = self.ask(s, Control::Live).await?;
                let mut protos = Vec::with_capacity(run.len());
                for (_, id) in run {
                    match s.expand(id, false) {
                        Some(all) => protos.extend(all.iter().map(wire::txn_ack_id)),
                        None => protos.push(wire::txn_ack_id(id)),
                    }
                }
                let rid = conn.new_request_id();
                let cmd = wire::txn_ack(consumer_id, cumulative, protos, txn.id(), rid);
                let frame = conn.request(rid, "acknowledge in transaction", cmd).await?;
                match wire::check_response(&frame.command)? {
                    TxnReply::Acked => Ok(()),
                    other => Err(Error::new(
                        streamwire_core::error::ErrorKind::Protocol,
                        format!("unexpected answer to a transactional ack: {other:?}"),
                    )),
                }
            }
            .await;
            guard.finish(res.as_ref().map(|_| ()));
            res?;
            // Accepted: no local redelivery (ack timeout, negative ack) for these any more.
            for (_, id) in run {
                if let Some(u) = &s.unacked {
                    let mut u = u.lock().unwrap_or_else(|p| p.into_inner());
                    if cumulative {
                        u.acked_up_to(id);
                    } else {
                        u.acked(id);
                    }
                }
                s.nacks().remove(id);
                s.expand(id, true);
            }
            let n = run.len() as u64;
            s.stats.acked.fetch_add(n, Ordering::Relaxed);
            s.metrics.add(C::Acks, n);
        }
        Ok(())
    }
}
