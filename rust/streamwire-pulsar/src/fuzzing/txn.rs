//! Fuzz body for the decoding of transaction answers (`transaction::wire::check_response`):
//! arbitrary bytes are decoded as a command, and whatever decodes must be judged without a
//! panic, consistently with the request id the connection would route it by.

use prost::Message;

use super::SplitMix64;
use crate::protocol::pb;
use crate::protocol::pb::base_command::Type;
use crate::transaction::wire::{check_response, response_request_id, TxnReply};

/// Decode `data` as a `BaseCommand` and check the transaction answer decoding on it.
pub fn fuzz_txn_response(data: &[u8]) {
    let Ok(cmd) = pb::BaseCommand::decode(data) else {
        return;
    };
    let res = check_response(&cmd);
    let routed = response_request_id(&cmd);
    // A transaction answer with its body is always routed by its request id.
    let is_txn_answer = matches!(
        cmd.r#type(),
        Type::TcClientConnectResponse
            | Type::NewTxnResponse
            | Type::AddPartitionToTxnResponse
            | Type::AddSubscriptionToTxnResponse
            | Type::EndTxnResponse
    );
    if is_txn_answer && res.is_ok() {
        assert!(routed.is_some());
    }
    if let Ok(TxnReply::NewTxn(id)) = res {
        let r = cmd
            .new_txn_response
            .as_ref()
            .expect("a txn id needs its body");
        assert!(r.error.is_none());
        assert_eq!(Some(id.most), r.txnid_most_bits);
        assert_eq!(Some(id.least), r.txnid_least_bits);
    }
    if let Err(e) = &res {
        assert!(!e.message().is_empty());
    }
}

/// An encoded, well-formed transaction answer (some with an error code) for the stable
/// fuzz test to damage.
pub fn valid_txn_response(rng: &mut SplitMix64) -> Vec<u8> {
    let rid = rng.next_u64();
    let error = (rng.below(3) == 0).then(|| rng.below(30) as i32);
    let mut cmd = pb::BaseCommand::default();
    match rng.below(6) {
        0 => {
            cmd.set_type(Type::TcClientConnectResponse);
            cmd.tc_client_connect_response = Some(Box::new(pb::CommandTcClientConnectResponse {
                request_id: rid,
                error,
                message: error.map(|_| "no".to_owned()),
            }));
        }
        1 => {
            cmd.set_type(Type::NewTxnResponse);
            cmd.new_txn_response = Some(Box::new(pb::CommandNewTxnResponse {
                request_id: rid,
                txnid_least_bits: Some(rng.next_u64()),
                txnid_most_bits: Some(rng.below(16) as u64),
                error,
                message: None,
            }));
        }
        2 => {
            cmd.set_type(Type::AddPartitionToTxnResponse);
            cmd.add_partition_to_txn_response =
                Some(Box::new(pb::CommandAddPartitionToTxnResponse {
                    request_id: rid,
                    error,
                    ..Default::default()
                }));
        }
        3 => {
            cmd.set_type(Type::AddSubscriptionToTxnResponse);
            cmd.add_subscription_to_txn_response =
                Some(Box::new(pb::CommandAddSubscriptionToTxnResponse {
                    request_id: rid,
                    error,
                    ..Default::default()
                }));
        }
        4 => {
            cmd.set_type(Type::EndTxnResponse);
            cmd.end_txn_response = Some(Box::new(pb::CommandEndTxnResponse {
                request_id: rid,
                error,
                ..Default::default()
            }));
        }
        _ => {
            cmd.set_type(Type::AckResponse);
            cmd.ack_response = Some(Box::new(pb::CommandAckResponse {
                consumer_id: rng.below(10) as u64,
                request_id: Some(rid),
                error,
                ..Default::default()
            }));
        }
    }
    cmd.encode_to_vec()
}
