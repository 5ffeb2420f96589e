//! The transaction commands a client sends and the answers it reads, as pure functions.
//!
//! Coordinator answers (`NEW_TXN_RESPONSE`, `ADD_PARTITION_TO_TXN_RESPONSE`, ...) carry their
//! error inside the response itself rather than as a `CommandError`, and so does the
//! broker's `ACK_RESPONSE`: [`check_response`] turns either into the engine's error.

use streamwire_core::error::{Error, ErrorKind, Result};

use crate::protocol::pb;
use crate::protocol::pb::base_command::Type;
use crate::server_error::server_error;

/// A transaction id: the coordinator's id in the high 64 bits, a sequence in the low ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnId {
    pub most: u64,
    pub least: u64,
}

impl std::fmt::Display for TxnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.most, self.least)
    }
}

fn base(kind: Type) -> pb::BaseCommand {
    let mut cmd = pb::BaseCommand::default();
    cmd.set_type(kind);
    cmd
}

/// TC_CLIENT_CONNECT_REQUEST: makes the broker load coordinator `tc_id` (its answer says
/// whether that broker serves it).
pub fn tc_client_connect(request_id: u64, tc_id: u64) -> pb::BaseCommand {
    let mut cmd = base(Type::TcClientConnectRequest);
    cmd.tc_client_connect_request = Some(Box::new(pb::CommandTcClientConnectRequest {
        request_id,
        tc_id,
    }));
    cmd
}

/// NEW_TXN. The TTL is in milliseconds (the Java client sends `unit.toMillis(timeout)` in
/// the field the official proto names `txn_ttl_seconds`; the broker reads it as millis).
pub fn new_txn(request_id: u64, tc_id: u64, ttl_ms: u64) -> pb::BaseCommand {
    let mut cmd = base(Type::NewTxn);
    cmd.new_txn = Some(Box::new(pb::CommandNewTxn {
        request_id,
        txn_ttl_millis: Some(ttl_ms),
        tc_id: Some(tc_id),
    }));
    cmd
}

/// ADD_PARTITION_TO_TXN: before the transaction's first send to each topic-partition.
pub fn add_partition_to_txn(
    request_id: u64,
    txn: TxnId,
    partitions: Vec<String>,
) -> pb::BaseCommand {
    let mut cmd = base(Type::AddPartitionToTxn);
    cmd.add_partition_to_txn = Some(Box::new(pb::CommandAddPartitionToTxn {
        request_id,
        txnid_least_bits: Some(txn.least),
        txnid_most_bits: Some(txn.most),
        partitions,
    }));
    cmd
}

/// ADD_SUBSCRIPTION_TO_TXN: before the transaction's first ack on each subscription of a
/// topic-partition.
pub fn add_subscription_to_txn(
    request_id: u64,
    txn: TxnId,
    subscriptions: Vec<(String, String)>,
) -> pb::BaseCommand {
    let mut cmd = base(Type::AddSubscriptionToTxn);
    cmd.add_subscription_to_txn = Some(Box::new(pb::CommandAddSubscriptionToTxn {
        request_id,
        txnid_least_bits: Some(txn.least),
        txnid_most_bits: Some(txn.most),
        subscription: subscriptions
            .into_iter()
            .map(|(topic, subscription)| pb::Subscription {
                topic,
                subscription,
            })
            .collect(),
    }));
    cmd
}

/// END_TXN: commit or abort.
pub fn end_txn(request_id: u64, txn: TxnId, commit: bool) -> pb::BaseCommand {
    let mut cmd = base(Type::EndTxn);
    let mut body = pb::CommandEndTxn {
        request_id,
        txnid_least_bits: Some(txn.least),
        txnid_most_bits: Some(txn.most),
        txn_action: None,
    };
    body.set_txn_action(if commit {
        pb::TxnAction::Commit
    } else {
        pb::TxnAction::Abort
    });
    cmd.end_txn = Some(Box::new(body));
    cmd
}

/// ACK inside a transaction: carries the transaction id and a request id, so the broker
/// answers with ACK_RESPONSE (a conflict is reported there).
pub fn txn_ack(
    consumer_id: u64,
    cumulative: bool,
    ids: Vec<pb::MessageIdData>,
    txn: TxnId,
    request_id: u64,
) -> pb::BaseCommand {
    let kind = if cumulative {
        pb::command_ack::AckType::Cumulative
    } else {
        pb::command_ack::AckType::Individual
    };
    let mut cmd = crate::protocol::commands::ack(consumer_id, kind, ids, None, Some(request_id));
    if let Some(a) = cmd.ack.as_mut() {
        a.txnid_least_bits = Some(txn.least);
        a.txnid_most_bits = Some(txn.most);
    }
    cmd
}

/// The message id an ack in a transaction names. A message inside a batch is acknowledged
/// by its index: `ack_set` has every bit set except this message's (set bits are the ones
/// still unacknowledged), so the rest of the batch stays with the subscription.
pub fn txn_ack_id(id: &crate::message_id::MessageId) -> pb::MessageIdData {
    let mut d = pb::MessageIdData {
        ledger_id: id.ledger_id as u64,
        entry_id: id.entry_id as u64,
        ..Default::default()
    };
    if id.partition >= 0 {
        d.partition = Some(id.partition);
    }
    if id.batch_index >= 0 && id.batch_size > 0 {
        let size = id.batch_size as u32;
        let mut words = vec![0u64; size.div_ceil(64) as usize];
        for i in 0..size {
            if i != id.batch_index as u32 {
                words[(i / 64) as usize] |= 1 << (i % 64);
            }
        }
        d.batch_index = Some(id.batch_index);
        d.batch_size = Some(id.batch_size);
        d.ack_set = words.into_iter().map(|w| w as i64).collect();
    }
    d
}

/// What a coordinator or ack answer said, once errors are taken out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnReply {
    Connected,
    NewTxn(TxnId),
    PartitionAdded,
    SubscriptionAdded,
    Ended,
    Acked,
}

fn failed(error: Option<i32>, message: Option<&str>, what: &str) -> Option<Error> {
    error.map(|c| server_error(c, message.unwrap_or("")).context(what))
}

/// Decode a transaction answer: the reply, or the broker's error (typed by its code).
pub fn check_response(cmd: &pb::BaseCommand) -> Result<TxnReply> {
    let missing = |what: &str| {
        Error::new(
            ErrorKind::Protocol,
            format!("{what} frame without its body"),
        )
    };
    match cmd.r#type() {
        Type::TcClientConnectResponse => {
            let r = cmd
                .tc_client_connect_response
                .as_ref()
                .ok_or_else(|| missing("TC_CLIENT_CONNECT_RESPONSE"))?;
            match failed(
                r.error,
                r.message.as_deref(),
                "connect to the transaction coordinator",
            ) {
                Some(e) => Err(e),
                None => Ok(TxnReply::Connected),
            }
        }
        Type::NewTxnResponse => {
            let r = cmd
                .new_txn_response
                .as_ref()
                .ok_or_else(|| missing("NEW_TXN_RESPONSE"))?;
            match failed(r.error, r.message.as_deref(), "new transaction") {
                Some(e) => Err(e),
                None => match (r.txnid_most_bits, r.txnid_least_bits) {
                    (Some(most), Some(least)) => Ok(TxnReply::NewTxn(TxnId { most, least })),
                    _ => Err(Error::new(
                        ErrorKind::Protocol,
                        "NEW_TXN_RESPONSE without a transaction id",
                    )),
                },
            }
        }
        Type::AddPartitionToTxnResponse => {
            let r = cmd
                .add_partition_to_txn_response
                .as_ref()
                .ok_or_else(|| missing("ADD_PARTITION_TO_TXN_RESPONSE"))?;
            match failed(
                r.error,
                r.message.as_deref(),
                "add a partition to the transaction",
            ) {
                Some(e) => Err(e),
                None => Ok(TxnReply::PartitionAdded),
            }
        }
        Type::AddSubscriptionToTxnResponse => {
            let r = cmd
                .add_subscription_to_txn_response
                .as_ref()
                .ok_or_else(|| missing("ADD_SUBSCRIPTION_TO_TXN_RESPONSE"))?;
            match failed(
                r.error,
                r.message.as_deref(),
                "add a subscription to the transaction",
            ) {
                Some(e) => Err(e),
                None => Ok(TxnReply::SubscriptionAdded),
            }
        }
        Type::EndTxnResponse => {
            let r = cmd
                .end_txn_response
                .as_ref()
                .ok_or_else(|| missing("END_TXN_RESPONSE"))?;
            match failed(r.error, r.message.as_deref(), "end the transaction") {
                Some(e) => Err(e),
                None => Ok(TxnReply::Ended),
            }
        }
        Type::AckResponse => {
            let r = cmd
                .ack_response
                .as_ref()
                .ok_or_else(|| missing("ACK_RESPONSE"))?;
            match failed(
                r.error,
                r.message.as_deref(),
                "acknowledge in the transaction",
            ) {
                Some(e) => Err(e),
                None => Ok(TxnReply::Acked),
            }
        }
        other => Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "unexpected {} in answer to a transaction request",
                other.as_str_name()
            ),
        )),
    }
}

/// The request id a transaction answer is for (the connection routes it to its waiter).
pub fn response_request_id(cmd: &pb::BaseCommand) -> Option<u64> {
    match cmd.r#type() {
        Type::TcClientConnectResponse => cmd
            .tc_client_connect_response
            .as_ref()
            .map(|c| c.request_id),
        Type::NewTxnResponse => cmd.new_txn_response.as_ref().map(|c| c.request_id),
        Type::AddPartitionToTxnResponse => cmd
            .add_partition_to_txn_response
            .as_ref()
            .map(|c| c.request_id),
        Type::AddSubscriptionToTxnResponse => cmd
            .add_subscription_to_txn_response
            .as_ref()
            .map(|c| c.request_id),
        Type::EndTxnResponse => cmd.end_txn_response.as_ref().map(|c| c.request_id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message_id::MessageId;
    use crate::protocol::{encode_command, FrameDecoder};
    use bytes::BytesMut;
    use proptest::prelude::*;

    fn round_trip(cmd: &pb::BaseCommand) -> pb::BaseCommand {
        let mut buf = BytesMut::new();
        encode_command(cmd, &mut buf);
        let mut dec = FrameDecoder::new(1 << 20);
        dec.decode(&mut buf).unwrap().unwrap().command
    }

    #[test]
    fn builders_set_what_the_broker_reads() {
        let t = TxnId { most: 3, least: 77 };
        let c = round_trip(&new_txn(5, 3, 60_000));
        assert_eq!(c.r#type(), Type::NewTxn);
        let n = c.new_txn.unwrap();
        assert_eq!(
            (n.request_id, n.tc_id, n.txn_ttl_millis),
            (5, Some(3), Some(60_000))
        );
        let c = round_trip(&end_txn(6, t, false));
        let e = c.end_txn.unwrap();
        assert_eq!(e.txn_action(), pb::TxnAction::Abort);
        assert_eq!((e.txnid_most_bits, e.txnid_least_bits), (Some(3), Some(77)));
        let c = round_trip(&txn_ack(9, true, vec![], t, 10));
        let a = c.ack.unwrap();
        assert_eq!(a.ack_type(), pb::command_ack::AckType::Cumulative);
        assert_eq!((a.request_id, a.txnid_least_bits), (Some(10), Some(77)));
        let c = round_trip(&add_subscription_to_txn(
            1,
            t,
            vec![("t".into(), "s".into())],
        ));
        assert_eq!(
            c.add_subscription_to_txn.unwrap().subscription[0].subscription,
            "s"
        );
        let c = round_trip(&tc_client_connect(2, 0));
        assert_eq!(c.tc_client_connect_request.unwrap().tc_id, 0);
    }

    #[test]
    fn errors_inside_responses_are_typed() {
        let mut c = base(Type::AckResponse);
        c.ack_response = Some(Box::new(pb::CommandAckResponse {
            consumer_id: 1,
            error: Some(23),
            message: Some("held by another txn".into()),
            request_id: Some(4),
            ..Default::default()
        }));
        let e = check_response(&c).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TransactionConflict);
        assert!(e.message().contains("held by another txn"));
        let mut c = base(Type::NewTxnResponse);
        c.new_txn_response = Some(Box::new(pb::CommandNewTxnResponse {
            request_id: 1,
            error: Some(20),
            ..Default::default()
        }));
        let e = check_response(&c).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Transaction);
        assert!(e.is_retriable());
        let mut c = base(Type::EndTxnResponse);
        c.end_txn_response = Some(Box::new(pb::CommandEndTxnResponse {
            request_id: 1,
            error: Some(24),
            ..Default::default()
        }));
        assert_eq!(
            check_response(&c).unwrap_err().kind(),
            ErrorKind::InvalidTransactionState
        );
        // A body-less frame is a protocol error, not a panic.
        assert_eq!(
            check_response(&base(Type::EndTxnResponse))
                .unwrap_err()
                .kind(),
            ErrorKind::Protocol
        );
    }

    #[test]
    fn batch_index_ack_set_clears_only_this_message() {
        let id = MessageId::new(4, 5, -1, 2, 3);
        let d = txn_ack_id(&id);
        assert_eq!(d.ack_set, vec![0b011]);
        assert_eq!(d.batch_index, Some(2));
        let d = txn_ack_id(&MessageId::new(4, 5, 1, -1, 0));
        assert!(d.ack_set.is_empty());
        assert_eq!(d.partition, Some(1));
    }

    proptest! {
        #[test]
        fn new_txn_response_round_trips(rid in any::<u64>(), most in any::<u64>(), least in any::<u64>(), err in proptest::option::of(0i32..30)) {
            let mut c = base(Type::NewTxnResponse);
            c.new_txn_response = Some(Box::new(pb::CommandNewTxnResponse {
                request_id: rid,
                txnid_most_bits: Some(most),
                txnid_least_bits: Some(least),
                error: err,
                message: None,
            }));
            let back = round_trip(&c);
            prop_assert_eq!(response_request_id(&back), Some(rid));
            match (check_response(&back), err) {
                (Ok(TxnReply::NewTxn(id)), None) => prop_assert_eq!(id, TxnId { most, least }),
                (Err(e), Some(code)) => prop_assert_eq!(e.server_code(), Some(code)),
                (r, e) => prop_assert!(false, "{:?} for error {:?}", r, e),
            }
        }

        #[test]
        fn requests_round_trip(rid in any::<u64>(), most in any::<u64>(), least in any::<u64>(), commit in any::<bool>(), parts in proptest::collection::vec("[a-z0-9/:-]{1,20}", 0..4)) {
            let t = TxnId { most, least };
            let e = round_trip(&end_txn(rid, t, commit)).end_txn.unwrap();
            prop_assert_eq!(e.request_id, rid);
            prop_assert_eq!(e.txn_action() == pb::TxnAction::Commit, commit);
            let a = round_trip(&add_partition_to_txn(rid, t, parts.clone())).add_partition_to_txn.unwrap();
            prop_assert_eq!(a.partitions, parts);
            prop_assert_eq!((a.txnid_most_bits, a.txnid_least_bits), (Some(most), Some(least)));
        }

        #[test]
        fn ack_set_has_one_clear_bit(size in 1i32..200, idx_seed in any::<u32>()) {
            let idx = (idx_seed % size as u32) as i32;
            let d = txn_ack_id(&MessageId::new(1, 2, -1, idx, size));
            let words: Vec<u64> = d.ack_set.iter().map(|w| *w as u64).collect();
            let ones: u32 = words.iter().map(|w| w.count_ones()).sum();
            prop_assert_eq!(ones, size as u32 - 1);
            prop_assert_eq!(words[(idx / 64) as usize] & (1 << (idx % 64)), 0);
        }
    }
}
