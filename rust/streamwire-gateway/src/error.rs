//! Errors as HTTP answers: a status and PIP-64's body `{"code": <status*100+n>, "message"}`.
//!
//! One `match` decides how each engine error kind is answered, so a client can act on the
//! status alone (404 topic, 429 back-pressure with `Retry-After`, 503 broker unreachable...).

use serde::Serialize;

use streamwire_core::error::{Error, ErrorKind};

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiError {
    #[serde(skip)]
    pub status: u16,
    pub code: u32,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, n: u32, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: u32::from(status) * 100 + n,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, 1, message)
    }

    /// 42205: the request's messages cannot be produced as given (PIP-64).
    pub fn invalid_messages(message: impl Into<String>) -> Self {
        ApiError::new(422, 5, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(404, 4, message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        ApiError::new(413, 1, message)
    }

    /// The JSON body.
    pub fn body(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// Seconds a client should wait before retrying (429 and 503).
    pub fn retry_after(&self) -> Option<u32> {
        matches!(self.status, 429 | 503).then_some(1)
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let msg = e.to_string();
        // The broker's IncompatibleSchema (producer creation with a schema the topic's
        // compatibility policy refuses): the request conflicts with the topic's state.
        if e.server_code() == Some(streamwire_pulsar::server_error::code::INCOMPATIBLE_SCHEMA) {
            return ApiError::new(
                409,
                2,
                format!("the value schema is incompatible with the topic's schema: {msg}"),
            );
        }
        match e.kind() {
            ErrorKind::TopicNotFound => ApiError::new(404, 1, msg),
            ErrorKind::PartitionNotFound => ApiError::new(404, 2, msg),
            ErrorKind::InvalidArgument | ErrorKind::Config => ApiError::new(400, 1, msg),
            ErrorKind::Authentication => ApiError::new(401, 1, msg),
            ErrorKind::Authorization => ApiError::new(403, 1, msg),
            ErrorKind::MessageTooBig => ApiError::new(413, 2, msg),
            ErrorKind::QueueFull => ApiError::new(429, 1, msg),
            ErrorKind::Timeout => ApiError::new(504, 1, msg),
            ErrorKind::Connect | ErrorKind::Disconnected => ApiError::new(503, 1, msg),
            ErrorKind::TopicTerminated => ApiError::new(409, 1, msg),
            ErrorKind::NotSupported => ApiError::new(501, 1, msg),
            _ => ApiError::new(500, 1, msg),
        }
    }
}

/// PIP-64's per-message `error_code`: 2 when retrying may succeed, else 1.
pub fn message_error_code(e: &Error) -> u32 {
    if e.is_retriable() {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_become_statuses_and_codes() {
        let e: ApiError = Error::new(ErrorKind::TopicNotFound, "no topic").into();
        assert_eq!((e.status, e.code), (404, 40401));
        assert_eq!(e.body(), r#"{"code":40401,"message":"no topic"}"#);
        let e: ApiError = Error::new(ErrorKind::QueueFull, "full").into();
        assert_eq!((e.status, e.retry_after()), (429, Some(1)));
        let e: ApiError = Error::new(ErrorKind::Disconnected, "gone").into();
        assert_eq!(e.status, 503);
        assert_eq!(ApiError::invalid_messages("x").code, 42205);
        assert_eq!(message_error_code(&Error::timeout("send")), 2);
        assert_eq!(message_error_code(&Error::invalid("bad")), 1);
    }
}
