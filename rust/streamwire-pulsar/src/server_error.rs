//! Mapping of the broker's `ServerError` codes to engine error kinds (pure).
//!
//! Codes are the wire values of the protocol's `ServerError` enum. Which of them are worth
//! retrying follows the Java client: a broker that is not ready, overloaded or mid-failover
//! will usually accept the same request a moment later.

use streamwire_core::error::{Error, ErrorKind};

pub mod code {
    pub const UNKNOWN_ERROR: i32 = 0;
    pub const METADATA_ERROR: i32 = 1;
    pub const PERSISTENCE_ERROR: i32 = 2;
    pub const AUTHENTICATION_ERROR: i32 = 3;
    pub const AUTHORIZATION_ERROR: i32 = 4;
    pub const CONSUMER_BUSY: i32 = 5;
    pub const SERVICE_NOT_READY: i32 = 6;
    pub const PRODUCER_BLOCKED_QUOTA_EXCEEDED_ERROR: i32 = 7;
    pub const PRODUCER_BLOCKED_QUOTA_EXCEEDED_EXCEPTION: i32 = 8;
    pub const CHECKSUM_ERROR: i32 = 9;
    pub const UNSUPPORTED_VERSION_ERROR: i32 = 10;
    pub const TOPIC_NOT_FOUND: i32 = 11;
    pub const SUBSCRIPTION_NOT_FOUND: i32 = 12;
    pub const CONSUMER_NOT_FOUND: i32 = 13;
    pub const TOO_MANY_REQUESTS: i32 = 14;
    pub const TOPIC_TERMINATED_ERROR: i32 = 15;
    pub const PRODUCER_BUSY: i32 = 16;
    pub const INVALID_TOPIC_NAME: i32 = 17;
    pub const INCOMPATIBLE_SCHEMA: i32 = 18;
    pub const CONSUMER_ASSIGN_ERROR: i32 = 19;
    pub const TRANSACTION_COORDINATOR_NOT_FOUND: i32 = 20;
    pub const INVALID_TXN_STATUS: i32 = 21;
    pub const NOT_ALLOWED_ERROR: i32 = 22;
    pub const TRANSACTION_CONFLICT: i32 = 23;
    pub const TRANSACTION_NOT_FOUND: i32 = 24;
    pub const PRODUCER_FENCED: i32 = 25;
}

/// The protocol's name for a code, for messages.
pub fn code_name(c: i32) -> &'static str {
    use code::*;
    match c {
        UNKNOWN_ERROR => "UnknownError",
        METADATA_ERROR => "MetadataError",
        PERSISTENCE_ERROR => "PersistenceError",
        AUTHENTICATION_ERROR => "AuthenticationError",
        AUTHORIZATION_ERROR => "AuthorizationError",
        CONSUMER_BUSY => "ConsumerBusy",
        SERVICE_NOT_READY => "ServiceNotReady",
        PRODUCER_BLOCKED_QUOTA_EXCEEDED_ERROR => "ProducerBlockedQuotaExceededError",
        PRODUCER_BLOCKED_QUOTA_EXCEEDED_EXCEPTION => "ProducerBlockedQuotaExceededException",
        CHECKSUM_ERROR => "ChecksumError",
        UNSUPPORTED_VERSION_ERROR => "UnsupportedVersionError",
        TOPIC_NOT_FOUND => "TopicNotFound",
        SUBSCRIPTION_NOT_FOUND => "SubscriptionNotFound",
        CONSUMER_NOT_FOUND => "ConsumerNotFound",
        TOO_MANY_REQUESTS => "TooManyRequests",
        TOPIC_TERMINATED_ERROR => "TopicTerminatedError",
        PRODUCER_BUSY => "ProducerBusy",
        INVALID_TOPIC_NAME => "InvalidTopicName",
        INCOMPATIBLE_SCHEMA => "IncompatibleSchema",
        CONSUMER_ASSIGN_ERROR => "ConsumerAssignError",
        TRANSACTION_COORDINATOR_NOT_FOUND => "TransactionCoordinatorNotFound",
        INVALID_TXN_STATUS => "InvalidTxnStatus",
        NOT_ALLOWED_ERROR => "NotAllowedError",
        TRANSACTION_CONFLICT => "TransactionConflict",
        TRANSACTION_NOT_FOUND => "TransactionNotFound",
        PRODUCER_FENCED => "ProducerFenced",
        _ => "UnrecognisedServerError",
    }
}

/// Build the engine error for a broker `ServerError` code and message.
pub fn server_error(c: i32, message: &str) -> Error {
    use code::*;
    let kind = match c {
        AUTHENTICATION_ERROR => ErrorKind::Authentication,
        AUTHORIZATION_ERROR => ErrorKind::Authorization,
        CONSUMER_BUSY => ErrorKind::ConsumerBusy,
        TOPIC_NOT_FOUND | SUBSCRIPTION_NOT_FOUND => ErrorKind::TopicNotFound,
        TOPIC_TERMINATED_ERROR => ErrorKind::TopicTerminated,
        PRODUCER_BUSY => ErrorKind::ProducerBusy,
        PRODUCER_FENCED => ErrorKind::ProducerFenced,
        INVALID_TOPIC_NAME => ErrorKind::InvalidArgument,
        CHECKSUM_ERROR => ErrorKind::ChecksumMismatch,
        UNSUPPORTED_VERSION_ERROR | NOT_ALLOWED_ERROR => ErrorKind::NotSupported,
        TRANSACTION_CONFLICT => ErrorKind::TransactionConflict,
        INVALID_TXN_STATUS | TRANSACTION_NOT_FOUND => ErrorKind::InvalidTransactionState,
        TRANSACTION_COORDINATOR_NOT_FOUND => ErrorKind::Transaction,
        _ => ErrorKind::Server,
    };
    let retriable = matches!(
        c,
        SERVICE_NOT_READY
            | TOO_MANY_REQUESTS
            | METADATA_ERROR
            | PERSISTENCE_ERROR
            | UNKNOWN_ERROR
            | CONSUMER_BUSY
            | PRODUCER_BUSY
            // A coordinator that is still loading (right after a broker start or a
            // failover) answers this; the Java client retries it with backoff.
            | TRANSACTION_COORDINATOR_NOT_FOUND
    );
    let text = if message.is_empty() {
        format!("broker error {}", code_name(c))
    } else {
        format!("broker error {}: {message}", code_name(c))
    };
    Error::server(kind, c, text).with_retriable(retriable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_kinds_and_retriability() {
        let e = server_error(code::TOPIC_NOT_FOUND, "gone");
        assert_eq!(e.kind(), ErrorKind::TopicNotFound);
        assert_eq!(e.server_code(), Some(11));
        assert!(!e.is_retriable());
        assert_eq!(e.to_string(), "broker error TopicNotFound: gone");
        let e = server_error(code::SERVICE_NOT_READY, "");
        assert_eq!(e.kind(), ErrorKind::Server);
        assert!(e.is_retriable());
        assert_eq!(
            server_error(code::AUTHORIZATION_ERROR, "no").kind(),
            ErrorKind::Authorization
        );
        assert_eq!(server_error(999, "x").kind(), ErrorKind::Server);
    }
}
