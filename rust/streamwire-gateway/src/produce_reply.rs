//! The answers to a produce: one result per message in request order, in PIP-64's shape
//! (`messageIds`, base64 Java-compatible ids) or the broker dialect's
//! (`messagePublishResults`, `ledger:entry:partition`), and whether the producer's queue
//! pushed back. Pure: the outcomes come from `produce::send_all`.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde::Serialize;

use streamwire_core::error::ErrorKind;
use streamwire_pulsar::message_id::MessageId;

use crate::error::message_error_code;
use crate::produce::Outcome;

/// Back-pressure in a produce answer: `Full` when no message could be queued (nothing was
/// written: the whole request answers 429 and may be retried as is), `Some` when some were
/// refused for a full queue (their entries say `error_code` 2; the answer carries
/// `Retry-After`), `None` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pressure {
    None,
    Some,
    Full,
}

pub fn pressure(outcomes: &[Outcome]) -> Pressure {
    let full = outcomes
        .iter()
        .filter(|o| matches!(o, Err(e) if e.kind() == ErrorKind::QueueFull))
        .count();
    match full {
        0 => Pressure::None,
        n if n == outcomes.len() => Pressure::Full,
        _ => Pressure::Some,
    }
}

/// One entry of PIP-64's `messageIds`.
#[derive(Debug, Serialize, PartialEq)]
pub struct PipResult {
    pub partition: Option<i32>,
    #[serde(rename = "messageId")]
    pub message_id: Option<String>,
    pub error_code: Option<u32>,
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PipResponse {
    #[serde(rename = "messageIds")]
    pub message_ids: Vec<PipResult>,
    pub schema_version: Option<i64>,
}

/// The Java-compatible serialized id (`MessageIdData`), base64.
pub fn id_base64(id: &MessageId) -> String {
    B64.encode(id.serialize())
}

/// `schema_version`: the registry's version of the producer's schema, when it has one.
pub fn pip_response(outcomes: &[Outcome], schema_version: Option<i64>) -> PipResponse {
    PipResponse {
        message_ids: outcomes
            .iter()
            .map(|o| match o {
                Ok(id) => PipResult {
                    partition: Some(id.partition.max(0)),
                    message_id: Some(id_base64(id)),
                    error_code: None,
                    error: None,
                },
                Err(e) => PipResult {
                    partition: None,
                    message_id: None,
                    error_code: Some(message_error_code(e)),
                    error: Some(e.to_string()),
                },
            })
            .collect(),
        schema_version,
    }
}

#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BrokerResult {
    pub message_id: String,
    pub error_code: u32,
    pub error_msg: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerResponse {
    pub message_publish_results: Vec<BrokerResult>,
    pub schema_version: i64,
}

/// The broker dialect's answer: ids as `ledger:entry:partition`.
pub fn broker_response(outcomes: &[Outcome]) -> BrokerResponse {
    BrokerResponse {
        message_publish_results: outcomes
            .iter()
            .map(|o| match o {
                Ok(id) => BrokerResult {
                    message_id: format!("{}:{}:{}", id.ledger_id, id.entry_id, id.partition),
                    error_code: 0,
                    error_msg: String::new(),
                },
                Err(e) => BrokerResult {
                    message_id: String::new(),
                    error_code: message_error_code(e),
                    error_msg: e.to_string(),
                },
            })
            .collect(),
        schema_version: 0,
    }
}
