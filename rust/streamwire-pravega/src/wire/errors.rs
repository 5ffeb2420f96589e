//! What a reply means for the caller in streamwire's error kinds (pure): the engine decides
//! retries from the kind and the retriable flag, so the mapping lives in one place and is
//! tested here, not spread over the writer and the reader.

use streamwire_core::error::{Error, ErrorKind};

use super::reply::Reply;
use super::{OLDEST_COMPATIBLE_VERSION, WIRE_VERSION};

/// `AuthTokenCheckFailed.ErrorCode.TOKEN_EXPIRED`: a fresh token from the controller helps.
pub const TOKEN_EXPIRED: i32 = 1;

/// Whether the server's HELLO leaves a version both speak (the Java client's check).
pub fn check_hello(high: i32, low: i32) -> Result<(), Error> {
    if low > WIRE_VERSION || high < OLDEST_COMPATIBLE_VERSION {
        return Err(Error::new(
            ErrorKind::NotSupported,
            format!(
                "Pravega segment store speaks wire versions {low}..={high}, \
                 this client {OLDEST_COMPATIBLE_VERSION}..={WIRE_VERSION}"
            ),
        ));
    }
    Ok(())
}

impl Reply {
    /// The error this reply reports, `None` for a reply that is an answer (an append acked, a
    /// read, a failed condition, which is an outcome and not a failure).
    pub fn error(&self) -> Option<Error> {
        use Reply::*;
        Some(match self {
            WrongHost {
                segment,
                correct_host,
                ..
            } => Error::new(
                ErrorKind::Server,
                format!("segment {segment} is not on this host (owner: {correct_host:?})"),
            )
            // The controller's getURI gives the new owner: worth another try.
            .with_retriable(true),
            SegmentIsSealed { segment, .. } => {
                Error::new(ErrorKind::ReadOnly, format!("segment {segment} is sealed"))
            }
            SegmentIsTruncated {
                segment,
                start_offset,
                ..
            } => {
                let e = Error::new(
                    ErrorKind::OutOfRange,
                    format!("segment {segment} is truncated: it starts at {start_offset}"),
                );
                match u64::try_from(*start_offset) {
                    Ok(first) => e.with_detail("first_available", first),
                    Err(_) => e,
                }
            }
            SegmentAlreadyExists { segment, .. } => Error::new(
                ErrorKind::Server,
                format!("segment {segment} already exists"),
            ),
            NoSuchSegment { segment, .. } => Error::new(
                ErrorKind::PartitionNotFound,
                format!("no such segment {segment}"),
            ),
            InvalidEventNumber {
                event_number,
                stack,
                ..
            } => Error::new(
                ErrorKind::Protocol,
                format!("segment store refused event number {event_number}: {stack}"),
            )
            // The Java writer drops the connection and sets the append up again.
            .with_retriable(true),
            OperationUnsupported { operation, .. } => Error::new(
                ErrorKind::NotSupported,
                format!("segment store does not support {operation}"),
            ),
            AuthTokenCheckFailed { error_code, .. } => {
                let expired = *error_code == TOKEN_EXPIRED;
                Error::server(
                    ErrorKind::Authentication,
                    *error_code,
                    if expired {
                        "delegation token expired"
                    } else {
                        "delegation token check failed"
                    },
                )
                .with_retriable(expired)
            }
            ErrorMessage {
                segment,
                message,
                error_code,
                ..
            } => Error::server(
                ErrorKind::Server,
                *error_code,
                format!("segment store error on {segment:?}: {message}"),
            ),
            Hello { .. }
            | KeepAlive
            | AppendSetup { .. }
            | DataAppended { .. }
            | ConditionalCheckFailed { .. }
            | SegmentRead { .. }
            | StreamSegmentInfo { .. }
            | SegmentCreated { .. }
            | SegmentTruncated { .. }
            | SegmentsMerged { .. }
            | Other { .. } => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_versions() {
        assert!(check_hello(16, 5).is_ok());
        assert!(check_hello(20, 16).is_ok());
        assert!(check_hello(5, 5).is_ok());
        assert_eq!(
            check_hello(4, 1).unwrap_err().kind(),
            ErrorKind::NotSupported
        );
        assert!(check_hello(30, 17).is_err());
    }

    #[test]
    fn errors_map_to_kinds() {
        let seg = || "s/t/0.#epoch.0".to_string();
        let truncated = Reply::SegmentIsTruncated {
            request_id: 1,
            segment: seg(),
            start_offset: 40,
            stack: String::new(),
            offset: 3,
        }
        .error()
        .unwrap();
        assert_eq!(truncated.kind(), ErrorKind::OutOfRange);
        assert_eq!(truncated.detail("first_available"), Some(40));
        let wrong = Reply::WrongHost {
            request_id: 1,
            segment: seg(),
            correct_host: "h".into(),
            stack: String::new(),
        }
        .error()
        .unwrap();
        assert!(wrong.is_retriable());
        let expired = Reply::AuthTokenCheckFailed {
            request_id: 1,
            stack: String::new(),
            error_code: TOKEN_EXPIRED,
        }
        .error()
        .unwrap();
        assert_eq!(expired.kind(), ErrorKind::Authentication);
        assert!(expired.is_retriable());
        assert_eq!(expired.server_code(), Some(1));
        let failed = Reply::AuthTokenCheckFailed {
            request_id: 1,
            stack: String::new(),
            error_code: 0,
        }
        .error()
        .unwrap();
        assert!(!failed.is_retriable());
        let missing = Reply::NoSuchSegment {
            request_id: 1,
            segment: seg(),
            stack: String::new(),
            offset: -1,
        };
        assert_eq!(
            missing.error().unwrap().kind(),
            ErrorKind::PartitionNotFound
        );
        let sealed = Reply::SegmentIsSealed {
            request_id: 1,
            segment: seg(),
            stack: String::new(),
            offset: -1,
        };
        assert_eq!(sealed.error().unwrap().kind(), ErrorKind::ReadOnly);
        assert!(Reply::KeepAlive.error().is_none());
        let cond = Reply::ConditionalCheckFailed {
            writer_id: 1,
            event_number: 2,
            request_id: 3,
        };
        assert!(cond.error().is_none());
    }
}
