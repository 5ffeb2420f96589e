//! What `Producer.send_many` (blocking) and `Producer._asend_many` (awaitable) share: the
//! argument checks and conversion that choose the bulk path or the per-message one
//! ([`Producer::plan_many`]), the engine calls that queue the messages
//! ([`ManyPlan::queue`]), the wait for their receipts ([`Queued::wait`]) and the Python
//! answer built from them ([`Sent`]). The two shells only differ in how they wait: the
//! blocking one waits here with the GIL released, the awaitable one queues in call order
//! behind earlier sends (its `Room`) and resolves an asyncio future (FACES.md rule 3).

use std::sync::Arc;

use bytes::Bytes;
use pyo3::prelude::*;

use streamwire_core::error::Result;
use streamwire_pulsar::engine::bulk::Packed;
use streamwire_pulsar::engine::message::OutgoingMessage;
use streamwire_pulsar::message_id::MessageId;
use streamwire_pulsar::producer::bulk::{BulkGroup, IdRange};
use streamwire_pulsar::producer::{Group, TopicProducer};
use streamwire_pulsar::transaction::Transaction;

use crate::common::aio::Value;
use crate::common::errors::IntoPyResult;
use crate::common::untracked::untracked_list;
use crate::pulsar::id_ranges::{ids_list, MessageIdRanges};
use crate::pulsar::message_id::PyMessageId;
use crate::pulsar::producer::Producer;
use crate::pulsar::producer_build::all_sent;

/// A checked `send_many` call, ready for the engine: nothing is queued yet.
pub(crate) enum ManyPlan {
    /// Plain values (see [`Producer::bulk_packed`]): one buffer, no per-message item.
    Bulk(Arc<Packed>),
    /// Anything else: one message each.
    Messages {
        msgs: Vec<OutgoingMessage>,
        user_seq: bool,
        /// Every message's schema version when not the producer's own (`schema=`).
        version: Option<Bytes>,
        txn: Option<Transaction>,
    },
}

/// A queued `send_many`: where its receipts settle.
pub(crate) enum Queued {
    Bulk(Arc<BulkGroup>, usize),
    Messages(Arc<Group>, usize),
}

/// The receipts of a `send_many`, as the engine settled them.
pub(crate) enum Sent {
    Ranges(Vec<IdRange>),
    Ids(Vec<MessageId>),
}

impl Producer {
    /// Check and convert a `send_many`'s arguments: the values packed for the bulk path
    /// when the call is plain, else its messages built (encoded with the call's schema or
    /// the producer's, routed by the caller's `message_router`; a schema met for the first
    /// time is registered now, after every value is encoded, so a bad value registers
    /// nothing). A transaction no longer open is refused here, at the call.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn plan_many(
        &self,
        py: Python<'_>,
        values: &Bound<'_, PyAny>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        event_times: Option<&Bound<'_, PyAny>>,
        sequence_ids: Option<&Bound<'_, PyAny>>,
        txn: Option<Transaction>,
        schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ManyPlan> {
        // Plain values take the bulk path whatever `ids` asks: with `ids=True` the list is
        // made from the settled ranges at the end, which costs less than a queue item,
        // completion and result slot per message (docs/benchmarks.md, "ids=True on the bulk
        // path").
        let packed = self.bulk_packed(
            values,
            keys,
            properties,
            event_times,
            sequence_ids,
            txn.is_some(),
            schema,
        )?;
        if let Some(packed) = packed {
            return Ok(ManyPlan::Bulk(Arc::new(packed)));
        }
        let (msgs, user_seq, version) = self.messages(
            py,
            values,
            keys,
            properties,
            event_times,
            sequence_ids,
            schema,
        )?;
        if let Some(t) = &txn {
            t.check_open("send").py_err()?;
        }
        Ok(ManyPlan::Messages {
            msgs,
            user_seq,
            version,
            txn,
        })
    }

    /// The values of a plain `send_many` packed for the bulk path, or None when the call
    /// needs the per-message path: a per-message column (keys, properties, event times,
    /// sequence ids), a transaction, a schema (the producer's or `schema=`), a message
    /// router, a null value, or producer settings the bulk path does not handle (a
    /// partitioned topic, batching off or key-based, chunking).
    #[allow(clippy::too_many_arguments)]
    fn bulk_packed(
        &self,
        values: &Bound<'_, PyAny>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        event_times: Option<&Bound<'_, PyAny>>,
        sequence_ids: Option<&Bound<'_, PyAny>>,
        txn: bool,
        schema: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Packed>> {
        let plain = keys.is_none()
            && properties.is_none()
            && event_times.is_none()
            && sequence_ids.is_none()
            && !txn
            && schema.is_none_or(|s| s.is_none())
            && self.codec.is_none()
            && self.router.is_none()
            && self.inner.bulk_eligible();
        if !plain {
            return Ok(None);
        }
        crate::common::columns::packed(values)
    }
}

impl ManyPlan {
    /// Hand the messages to the engine. What cannot be queued (the producer closed, a
    /// message too big) is already failed in the returned group, for the messages not
    /// queued, so waiting on it reports the call's outcome either way.
    pub(crate) async fn queue(self, tp: &TopicProducer) -> Queued {
        match self {
            ManyPlan::Bulk(packed) => {
                let n = packed.len();
                let group = BulkGroup::new(n);
                let _ = tp.send_bulk(packed, &group).await;
                Queued::Bulk(group, n)
            }
            ManyPlan::Messages {
                msgs,
                user_seq,
                version,
                txn,
            } => {
                let n = msgs.len();
                let group = Group::new(n);
                let queued = match &txn {
                    Some(t) => {
                        tp.send_many_in_txn(msgs, &group, user_seq, t, version)
                            .await
                    }
                    None => {
                        let queued = tp
                            .send_many_with_schema(msgs, &group, user_seq, version)
                            .await;
                        // The caller waits for every receipt, so the call's last, partial
                        // batch goes out now rather than at the batching delay (as a
                        // blocking `send`).
                        tp.trigger_flush();
                        queued
                    }
                };
                if let Err(e) = queued {
                    group.fail_unfilled(&e);
                }
                Queued::Messages(group, n)
            }
        }
    }

    /// Queue and wait for every receipt (the blocking `send_many`, and a transactional
    /// `_asend_many`, which does not queue behind earlier sends).
    pub(crate) async fn send(self, tp: Arc<TopicProducer>) -> Result<Sent> {
        self.queue(&tp).await.wait().await
    }

    pub(crate) fn is_txn(&self) -> bool {
        matches!(self, ManyPlan::Messages { txn: Some(_), .. })
    }
}

impl Queued {
    /// Every receipt: the ids (or ranges) in input order, or the first failure noting how
    /// many messages were not sent.
    pub(crate) async fn wait(self) -> Result<Sent> {
        match self {
            Queued::Bulk(group, n) => group.wait().await.all_sent(n).map(Sent::Ranges),
            Queued::Messages(group, n) => all_sent(group.wait().await, n).map(Sent::Ids),
        }
    }
}

impl Sent {
    /// What `send_many` returns: the list of `MessageId`s (`ids=True`) or a
    /// `MessageIdRanges`, whichever way the receipts came.
    pub(crate) fn into_py(self, py: Python<'_>, ids: bool) -> PyResult<Bound<'_, PyAny>> {
        match (self, ids) {
            (Sent::Ranges(r), true) => Ok(ids_list(py, &r)?.into_any()),
            (Sent::Ranges(r), false) => Ok(Bound::new(py, MessageIdRanges::new(r))?.into_any()),
            (Sent::Ids(v), true) => {
                Ok(untracked_list(py, v.into_iter().map(PyMessageId::from))?.into_any())
            }
            (Sent::Ids(v), false) => {
                let r = MessageIdRanges::new(IdRange::compress(&v));
                Ok(Bound::new(py, r)?.into_any())
            }
        }
    }

    /// The same, for an awaitable: built on the event loop's thread.
    pub(crate) fn into_value(self, ids: bool) -> Value {
        match (self, ids) {
            (Sent::Ids(v), true) => Value::Ids(v),
            (sent, _) => Value::Build(Box::new(move |py| Ok(sent.into_py(py, ids)?.unbind()))),
        }
    }
}
