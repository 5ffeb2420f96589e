//! Pulsar transactions: the coordinator client, the transaction handle, and sends in a
//! transaction. (Acks in a transaction live with the consumer, `consumer::txn_ack`.)
//!
//! * [`state`] — the client-side state machine (pure);
//! * [`wire`] — transaction commands and the decoding of their answers (pure);
//! * [`coordinator`] — finding and talking to the transaction coordinators (I/O);
//! * [`txn`] — one transaction: registrations, in-flight operations, commit and abort.
//!
//! A send in a transaction goes unbatched (a batch belongs to one transaction, and a
//! one-message entry is the simplest such batch) with the transaction id in its metadata and
//! on its SEND command; its partition is registered with the coordinator first.

pub mod coordinator;
pub mod state;
pub mod txn;
pub mod wire;

pub use coordinator::Coordinator;
pub use state::TxnState;
pub use txn::Transaction;
pub use wire::TxnId;

use streamwire_core::error::Result;

use crate::engine::message::OutgoingMessage;
use crate::producer::{Completion, EntryOptions, TopicProducer};

impl TopicProducer {
    /// Send `msg` as part of `txn`: register its partition with the coordinator (once), then
    /// queue it unbatched with the transaction id. `txn` learns the receipt before
    /// `completion` does, so a commit waits for it.
    pub async fn send_in_txn(
        &self,
        msg: OutgoingMessage,
        user_sequence_id: bool,
        mut entry: EntryOptions,
        completion: Completion,
        txn: &Transaction,
    ) -> Result<()> {
        let guard = txn.begin_op("send")?;
        let p = self.producer_for(msg.key.as_deref()).clone();
        txn.register_partition(&p.topic().to_string()).await?;
        entry.txn = Some(txn.id());
        let completion = txn.track_send(guard, completion);
        p.send(msg, user_sequence_id, entry, completion).await?;
        // The caller waits on the receipt; nothing is batched with it, but the partition's
        // open batch (earlier non-transactional sends) goes out first anyway.
        p.trigger_flush();
        Ok(())
    }
}
