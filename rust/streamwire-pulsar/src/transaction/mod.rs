//! Pulsar transactions: the coordinator client, the transaction handle, and sends in a
//! transaction. (Acks in a transaction live with the consumer, `consumer::txn_ack`.)
//!
//! * [`state`] — the client-side state machine (pure);
//! * [`wire`] — transaction commands and the decoding of their answers (pure);
//! * [`coordinator`] — finding and talking to the transaction coordinators (I/O);
//! * [`txn`] — one transaction: registrations, in-flight operations, commit and abort.
//!
//! Sends in a transaction batch together (a batch belongs to one transaction: its id is in
//! the batch's metadata and on its SEND command, as the Java client's `hasSameTxn`); a
//! partition is registered with the coordinator before its first message of the transaction.

pub mod coordinator;
pub mod state;
pub mod txn;
pub mod wire;

pub use coordinator::Coordinator;
pub use state::TxnState;
pub use txn::Transaction;
pub use wire::TxnId;

use std::sync::Arc;

use streamwire_core::error::Result;

use crate::engine::message::OutgoingMessage;
use crate::producer::{Completion, EntryOptions, Group, TopicProducer};

impl TopicProducer {
    /// Send `msg` as part of `txn`: register its partition with the coordinator (once), then
    /// queue it with the transaction id (it batches with the transaction's other messages; a
    /// caller that waits on the receipt next calls `trigger_flush`). `txn` learns the receipt
    /// before `completion` does, so a commit waits for it.
    pub async fn send_in_txn(
        &self,
        msg: OutgoingMessage,
        user_sequence_id: bool,
        entry: EntryOptions,
        completion: Completion,
        txn: &Transaction,
    ) -> Result<()> {
        self.queue_in_txn(msg, user_sequence_id, entry, completion, txn)
            .await
    }
}

impl TopicProducer {
    /// Send many messages as part of `txn`, each routed as [`send_in_txn`](Self::send_in_txn)
    /// does; their results land in `group` by input position. A message that cannot be
    /// queued fails its slot (and so the transaction's commit); the rest are still sent.
    /// `schema_version`: every message's, when not the producer's own schema.
    pub async fn send_many_in_txn(
        &self,
        msgs: Vec<OutgoingMessage>,
        group: &Arc<Group>,
        user_sequence_ids: bool,
        txn: &Transaction,
        schema_version: Option<bytes::Bytes>,
    ) -> Result<()> {
        txn.check_open("send")?;
        for (i, msg) in msgs.into_iter().enumerate() {
            let slot = Completion::Group(Arc::clone(group), i);
            let entry = EntryOptions {
                schema_version: schema_version.clone(),
                ..EntryOptions::default()
            };
            if let Err(e) = self
                .queue_in_txn(msg, user_sequence_ids, entry, slot, txn)
                .await
            {
                // The slot's completion was dropped unfilled with the message: fill it.
                Completion::Group(Arc::clone(group), i).complete(Err(e));
            }
        }
        // The caller waits for every receipt: the last, partial batch goes out now.
        self.trigger_flush();
        Ok(())
    }

    async fn queue_in_txn(
        &self,
        msg: OutgoingMessage,
        user_sequence_id: bool,
        mut entry: EntryOptions,
        completion: Completion,
        txn: &Transaction,
    ) -> Result<()> {
        let guard = txn.begin_op("send")?;
        let p = self.producer_for_msg(&msg);
        txn.register_partition(&p.topic().to_string()).await?;
        entry.txn = Some(txn.id());
        p.send(
            msg,
            user_sequence_id,
            entry,
            txn.track_send(guard, completion),
        )
        .await
    }
}
