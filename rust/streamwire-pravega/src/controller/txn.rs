//! Transactions at the controller, pure: the transaction id in its messages, the name of a
//! transaction's segment, and each transaction answer as a state or a typed error (no I/O,
//! unit-tested here; `client` sends the calls).
//!
//! Facts (Pravega 0.13's controller API and `NameUtils`): a transaction is a UUID sent as two
//! signed 64-bit halves; `createTransaction` answers it with the stream's open segments, and
//! the writer appends to `<segment>#transaction.<msb as %016x><lsb as %016x>` on each one's
//! segment store; `commitTransaction` merges those segments into their parents (in the
//! background: the state goes OPEN → COMMITTING → COMMITTED), `abortTransaction` drops them.

use streamwire_core::error::{Error, ErrorKind, Result};

use super::proto;
use super::types::{known, segment_of, ScopedStream, Segment};

/// What the controller says a transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnState {
    Unknown,
    Open,
    Committing,
    Committed,
    Aborting,
    Aborted,
}

impl TxnState {
    /// The name the official clients print (`TransactionStatus`/`Transaction.Status`).
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Unknown => "UNKNOWN",
            TxnState::Open => "OPEN",
            TxnState::Committing => "COMMITTING",
            TxnState::Committed => "COMMITTED",
            TxnState::Aborting => "ABORTING",
            TxnState::Aborted => "ABORTED",
        }
    }

    /// Committing or committed: nothing can stop it becoming visible any more.
    pub fn is_committed(self) -> bool {
        matches!(self, TxnState::Committing | TxnState::Committed)
    }

    /// Aborting or aborted: nothing of it will ever be visible.
    pub fn is_aborted(self) -> bool {
        matches!(self, TxnState::Aborting | TxnState::Aborted)
    }
}

/// A transaction just created: its id, the segments it writes to, and the store's token.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedTxn {
    pub id: u128,
    pub segments: Vec<Segment>,
    pub delegation_token: String,
}

/// The UUID as the controller's two halves.
pub fn txn_id_message(id: u128) -> proto::TxnId {
    proto::TxnId {
        high_bits: (id >> 64) as u64 as i64,
        low_bits: id as u64 as i64,
    }
}

fn txn_id_of(m: &proto::TxnId) -> u128 {
    ((m.high_bits as u64 as u128) << 64) | m.low_bits as u64 as u128
}

/// The segment store's name of transaction `id`'s segment beside `parent` (a segment's
/// qualified name).
pub fn txn_segment_name(parent: &str, id: u128) -> String {
    // `%016x` of each half, most significant first, is the 32 hex digits of the whole id.
    format!("{parent}#transaction.{id:032x}")
}

/// The UUID's usual text (8-4-4-4-12 hex digits), as the official clients and the
/// controller's logs print transaction ids.
pub fn txn_id_text(id: u128) -> String {
    let h = format!("{id:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A transaction id from its UUID text (8-4-4-4-12 hex digits, as [`txn_id_text`] prints
/// it, or the 32 digits without dashes).
pub fn parse_txn_id(text: &str) -> Result<u128> {
    let t = text.trim();
    let groups: Vec<&str> = t.split('-').collect();
    let shape_ok = match groups.len() {
        1 => t.len() == 32,
        5 => groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]),
        _ => false,
    };
    let digits: String = groups.concat();
    if !shape_ok || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::invalid(format!(
            "a transaction id is a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx) or its 128-bit \
             integer, not {text:?}"
        )));
    }
    u128::from_str_radix(&digits, 16).map_err(|e| Error::invalid(e.to_string()))
}

pub(crate) fn create_request(stream: &ScopedStream, lease_ms: i64) -> proto::CreateTxnRequest {
    proto::CreateTxnRequest {
        stream_info: Some(stream.info()),
        lease: lease_ms,
    }
}

pub(crate) fn txn_request(
    stream: &ScopedStream,
    id: u128,
    writer_id: &str,
    timestamp: i64,
) -> proto::TxnRequest {
    proto::TxnRequest {
        stream_info: Some(stream.info()),
        txn_id: Some(txn_id_message(id)),
        writer_id: writer_id.to_string(),
        timestamp,
    }
}

pub(crate) fn ping_request(
    stream: &ScopedStream,
    id: u128,
    lease_ms: i64,
) -> proto::PingTxnRequest {
    proto::PingTxnRequest {
        stream_info: Some(stream.info()),
        txn_id: Some(txn_id_message(id)),
        lease: lease_ms,
    }
}

/// `createTransaction`'s answer: the id and the segments (in key order).
pub(crate) fn created(stream: &ScopedStream, r: proto::CreateTxnResponse) -> Result<CreatedTxn> {
    let id = r.txn_id.as_ref().map(txn_id_of).ok_or_else(|| {
        Error::new(
            ErrorKind::Protocol,
            "controller created a transaction without an id",
        )
    })?;
    if r.active_segments.is_empty() || r.active_segments.iter().any(|s| s.segment_id.is_none()) {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "controller gave transaction {} no segments",
                txn_id_text(id)
            ),
        ));
    }
    let mut segments: Vec<Segment> = r
        .active_segments
        .iter()
        .map(|s| segment_of(s, stream))
        .collect();
    segments.sort_by(|a, b| a.low.total_cmp(&b.low));
    Ok(CreatedTxn {
        id,
        segments,
        delegation_token: r.delegation_token,
    })
}

/// A refused `createTransaction`: the 0.13 controller answers a lease outside its bounds
/// with gRPC `UNKNOWN` and words ("lease should be greater than minimum lease", "lease value
/// too large, max value is …"), which is the caller's bad argument, not a server failure.
pub(crate) fn create_refused(e: Error, lease_ms: i64) -> Error {
    if e.kind() == ErrorKind::Server && e.message().contains("lease") {
        return Error::new(
            ErrorKind::InvalidArgument,
            format!("a lease of {lease_ms} ms was refused: {}", e.message()),
        );
    }
    e
}

/// `commitTransaction` / `abortTransaction` (`what`): accepted, or why not.
pub(crate) fn txn_status(what: &str, id: u128, r: proto::TxnStatus) -> Result<()> {
    use proto::txn_status::Status;
    let text = txn_id_text(id);
    match known::<Status>(what, r.status)? {
        Status::Success => Ok(()),
        Status::StreamNotFound => Err(Error::new(
            ErrorKind::TopicNotFound,
            format!("controller {what}: the stream of transaction {text} does not exist"),
        )),
        Status::TransactionNotFound => Err(Error::new(
            ErrorKind::InvalidTransactionState,
            format!("controller {what}: transaction {text} not found"),
        )),
        Status::Failure => Err(Error::new(
            ErrorKind::Transaction,
            format!("controller {what}: transaction {text} failed"),
        )),
    }
}

/// `pingTransaction`: the lease is renewed, or the transaction can no longer be written.
pub(crate) fn pinged(id: u128, r: proto::PingTxnStatus) -> Result<()> {
    use proto::ping_txn_status::Status;
    let text = txn_id_text(id);
    let (kind, why) = match known::<Status>("pingTransaction", r.status)? {
        Status::Ok => return Ok(()),
        Status::LeaseTooLarge => (
            ErrorKind::InvalidArgument,
            "the lease is larger than the controller allows",
        ),
        Status::MaxExecutionTimeExceeded | Status::ScaleGraceTimeExceeded => (
            ErrorKind::TransactionTimeout,
            "it ran past its maximum execution time",
        ),
        Status::Committed => (ErrorKind::InvalidTransactionState, "it is committed"),
        Status::Aborted => (
            ErrorKind::TransactionTimeout,
            "it was aborted (its lease expired, or it was aborted elsewhere)",
        ),
        Status::Disconnected | Status::Unknown => (
            ErrorKind::Transaction,
            "the controller does not know its state",
        ),
    };
    Err(Error::new(kind, format!("transaction {text}: {why}")))
}

/// `checkTransactionState`.
pub(crate) fn state(r: proto::TxnState) -> Result<TxnState> {
    use proto::txn_state::State;
    Ok(match known::<State>("checkTransactionState", r.state)? {
        State::Unknown => TxnState::Unknown,
        State::Open => TxnState::Open,
        State::Committing => TxnState::Committing,
        State::Committed => TxnState::Committed,
        State::Aborting => TxnState::Aborting,
        State::Aborted => TxnState::Aborted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: u128 = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;

    #[test]
    fn the_id_round_trips_through_its_signed_halves() {
        let m = txn_id_message(ID);
        assert_eq!(m.high_bits, 0x0123_4567_89ab_cdef);
        // The low half has its top bit set: a negative long on the wire.
        assert!(m.low_bits < 0);
        assert_eq!(txn_id_of(&m), ID);
        assert_eq!(txn_id_of(&txn_id_message(u128::MAX)), u128::MAX);
    }

    #[test]
    fn a_transaction_segment_is_named_after_its_parent_and_both_halves() {
        assert_eq!(
            txn_segment_name("s/t/0.#epoch.0", 0x1_0000_0000_0000_0002),
            "s/t/0.#epoch.0#transaction.00000000000000010000000000000002"
        );
        assert_eq!(txn_id_text(ID), "01234567-89ab-cdef-fedc-ba9876543210");
    }

    #[test]
    fn an_id_parses_back_from_its_text_and_bad_text_is_refused() {
        assert_eq!(parse_txn_id(&txn_id_text(ID)).unwrap(), ID);
        assert_eq!(
            parse_txn_id("0123456789abcdeffedcba9876543210").unwrap(),
            ID
        );
        assert_eq!(
            parse_txn_id(" 01234567-89AB-cdef-fedc-ba9876543210 ").unwrap(),
            ID
        );
        for bad in [
            "",
            "xyz",
            "01234567-89ab-cdef-fedc-ba987654321",
            "0123456789abcdef-fedcba9876543210",
            "g1234567-89ab-cdef-fedc-ba9876543210",
            "+123456789abcdeffedcba9876543210",
        ] {
            let e = parse_txn_id(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad:?}");
        }
    }

    #[test]
    fn answers_become_states_or_typed_errors() {
        use proto::ping_txn_status::Status as P;
        use proto::txn_status::Status as S;
        let ok = proto::TxnStatus {
            status: S::Success as i32,
        };
        assert!(txn_status("commitTransaction", ID, ok).is_ok());
        let e = txn_status(
            "commitTransaction",
            ID,
            proto::TxnStatus {
                status: S::TransactionNotFound as i32,
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidTransactionState);
        let e = pinged(
            ID,
            proto::PingTxnStatus {
                status: P::Aborted as i32,
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TransactionTimeout, "{e}");
        assert!(pinged(ID, proto::PingTxnStatus { status: 0 }).is_ok());
        // A status this client does not know is an error, not prost's default.
        assert!(pinged(ID, proto::PingTxnStatus { status: 99 }).is_err());
        let s = state(proto::TxnState {
            state: proto::txn_state::State::Committing as i32,
        })
        .unwrap();
        assert!(s.is_committed() && !s.is_aborted());
        assert_eq!(s.name(), "COMMITTING");
    }

    #[test]
    fn a_lease_the_controller_refuses_is_a_bad_argument() {
        let refused = Error::server(
            ErrorKind::Server,
            2,
            "controller createTransaction: Unknown lease should be greater than minimum lease",
        );
        let e = create_refused(refused, 5000);
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.message().contains("5000 ms"), "{e}");
        let other = Error::new(ErrorKind::Connect, "down");
        assert_eq!(create_refused(other, 5000).kind(), ErrorKind::Connect);
    }

    #[test]
    fn a_created_transaction_needs_an_id_and_segments() {
        let st = ScopedStream::new("s", "t");
        let range = |id: i64, low: f64, high: f64| proto::SegmentRange {
            segment_id: Some(proto::SegmentId {
                stream_info: Some(st.info()),
                segment_id: id,
            }),
            min_key: low,
            max_key: high,
        };
        let r = proto::CreateTxnResponse {
            txn_id: Some(txn_id_message(ID)),
            active_segments: vec![range(1, 0.5, 1.0), range(0, 0.0, 0.5)],
            delegation_token: String::new(),
        };
        let c = created(&st, r.clone()).unwrap();
        assert_eq!(c.id, ID);
        assert_eq!(c.segments.iter().map(|s| s.id).collect::<Vec<_>>(), [0, 1]);
        let no_id = proto::CreateTxnResponse {
            txn_id: None,
            ..r.clone()
        };
        assert!(created(&st, no_id).is_err());
        let no_segments = proto::CreateTxnResponse {
            active_segments: vec![],
            ..r
        };
        assert!(created(&st, no_segments).is_err());
    }
}
