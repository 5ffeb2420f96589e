//! One error type for the whole engine.
//!
//! The Python layer maps [`ErrorKind`] to one exception class in a single `match`, so every
//! failure reaches the caller typed, with a human message (Display, never Debug) and, when the
//! broker produced it, the broker's `ServerError` code.

use std::fmt;

/// What went wrong, at the granularity a caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A setting is invalid (bad URL, bad option value).
    Config,
    /// An argument to a call is invalid (bad topic name, negative size, wrong type).
    InvalidArgument,
    /// The TCP connection or the handshake could not be established.
    Connect,
    /// An established connection was lost while a request was outstanding.
    Disconnected,
    /// An operation did not complete within its timeout.
    Timeout,
    /// The broker rejected our credentials.
    Authentication,
    /// The broker accepted our credentials but refused the operation.
    Authorization,
    /// The peer sent bytes that do not follow the protocol.
    Protocol,
    /// The broker answered with an error not covered by a more specific kind.
    Server,
    /// The topic does not exist (and is not auto-created).
    TopicNotFound,
    /// Another producer holds the topic exclusively, or the name is taken.
    ProducerBusy,
    /// This producer was fenced by a newer exclusive producer.
    ProducerFenced,
    /// A message exceeds the broker's maximum message size.
    MessageTooBig,
    /// The topic was terminated: no more messages can be published.
    TopicTerminated,
    /// The pending queue or the memory budget is full and the caller asked not to wait.
    QueueFull,
    /// The handle (client, producer, consumer) was closed.
    Closed,
    /// A handle created before `fork()` was used in the child process.
    ForkedProcess,
    /// The subscription is already in use by an exclusive consumer.
    ConsumerBusy,
    /// A message's checksum did not match.
    ChecksumMismatch,
    /// The request is not supported by this broker or this client.
    NotSupported,
    /// The operation was interrupted (Ctrl-C, task cancelled).
    Interrupted,
    /// The topic exists but the partition (or segment) does not.
    PartitionNotFound,
    /// A read asked for a position the server no longer (or not yet) has; the error's
    /// details carry `first_available` and `high_water` when the server told them.
    OutOfRange,
    /// The server accepts no writes (started read-only, or the stream is sealed).
    ReadOnly,
    /// A transaction could not be started, extended or ended (coordinator unavailable,
    /// unknown transaction, an operation of it failed).
    Transaction,
    /// The broker refused an operation of a transaction because another transaction holds
    /// the same message (a second ack of it).
    TransactionConflict,
    /// The transaction is not open: committed, aborted, failed, or past its timeout.
    InvalidTransactionState,
    /// The transaction ran past its timeout and the coordinator aborted it.
    TransactionTimeout,
    /// End-to-end encryption failed: a missing or unusable key, a payload that does not
    /// authenticate, an unknown encryption algorithm.
    Crypto,
}

impl ErrorKind {
    /// Whether retrying the same operation later may succeed.
    pub fn is_retriable(self) -> bool {
        matches!(
            self,
            ErrorKind::Connect
                | ErrorKind::Disconnected
                | ErrorKind::Timeout
                | ErrorKind::QueueFull
                | ErrorKind::ProducerBusy
                | ErrorKind::ConsumerBusy
        )
    }

    /// A short stable name, used in logs and by the Python mapping.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Config => "config",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Connect => "connect",
            ErrorKind::Disconnected => "disconnected",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Authentication => "authentication",
            ErrorKind::Authorization => "authorization",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Server => "server",
            ErrorKind::TopicNotFound => "topic_not_found",
            ErrorKind::ProducerBusy => "producer_busy",
            ErrorKind::ProducerFenced => "producer_fenced",
            ErrorKind::MessageTooBig => "message_too_big",
            ErrorKind::TopicTerminated => "topic_terminated",
            ErrorKind::QueueFull => "queue_full",
            ErrorKind::Closed => "closed",
            ErrorKind::ForkedProcess => "forked_process",
            ErrorKind::ConsumerBusy => "consumer_busy",
            ErrorKind::ChecksumMismatch => "checksum_mismatch",
            ErrorKind::NotSupported => "not_supported",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::PartitionNotFound => "partition_not_found",
            ErrorKind::OutOfRange => "out_of_range",
            ErrorKind::ReadOnly => "read_only",
            ErrorKind::Transaction => "transaction",
            ErrorKind::TransactionConflict => "transaction_conflict",
            ErrorKind::InvalidTransactionState => "invalid_transaction_state",
            ErrorKind::TransactionTimeout => "transaction_timeout",
            ErrorKind::Crypto => "crypto",
        }
    }
}

/// The engine's error: a kind, a message for humans and, when the broker sent it, its code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    server_code: Option<i32>,
    retriable: bool,
    /// Named numbers a caller can act on (an out-of-range read's `first_available`...).
    details: Vec<(&'static str, u64)>,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            server_code: None,
            retriable: kind.is_retriable(),
            details: Vec::new(),
        }
    }

    /// An error that the broker reported with a `ServerError` code.
    pub fn server(kind: ErrorKind, code: i32, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            server_code: Some(code),
            retriable: kind.is_retriable(),
            details: Vec::new(),
        }
    }

    /// Override whether the error is worth retrying (some broker codes are, whatever the kind).
    pub fn with_retriable(mut self, retriable: bool) -> Self {
        self.retriable = retriable;
        self
    }

    /// Attach a named number (exposed as an attribute of the Python exception).
    pub fn with_detail(mut self, name: &'static str, value: u64) -> Self {
        self.details.push((name, value));
        self
    }

    /// The named numbers attached with [`with_detail`](Self::with_detail).
    pub fn details(&self) -> &[(&'static str, u64)] {
        &self.details
    }

    /// One named number, if attached.
    pub fn detail(&self, name: &str) -> Option<u64> {
        self.details
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn server_code(&self) -> Option<i32> {
        self.server_code
    }

    pub fn is_retriable(&self) -> bool {
        self.retriable
    }

    /// Prefix the message with context, keeping kind and code.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }

    pub fn timeout(what: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Timeout, format!("{what} timed out"))
    }

    pub fn closed(what: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Closed, format!("{what} is closed"))
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidArgument, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_and_context_prefixes() {
        let e = Error::server(ErrorKind::TopicNotFound, 5, "no such topic").context("lookup t");
        assert_eq!(e.to_string(), "lookup t: no such topic");
        assert_eq!(e.server_code(), Some(5));
        assert_eq!(e.kind(), ErrorKind::TopicNotFound);
        assert!(!e.is_retriable());
    }

    #[test]
    fn retriable_kinds() {
        assert!(Error::timeout("x").is_retriable());
        assert!(Error::new(ErrorKind::Disconnected, "x").is_retriable());
        assert!(!Error::closed("producer").is_retriable());
        assert!(!Error::invalid("bad").is_retriable());
    }
}
