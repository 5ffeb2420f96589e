"""The official client's exceptions (``pulsar.exceptions.*``), and the translation of each
streamwire error into the official class a program written for ``pulsar-client`` catches.

Every class derives from :class:`PulsarException` (as the official ones do) and carries the
``Result`` code it stands for as ``result``. A translated error keeps streamwire's original
as ``__cause__`` (``raise ... from``), so nothing it said is lost.
"""

from __future__ import annotations

from typing import Optional

from streamwire import exceptions as sw
from streamwire.compat._enums import Result

__all__ = [
    "AlreadyClosed",
    "AuthenticationError",
    "AuthorizationError",
    "BrokerMetadataError",
    "BrokerPersistenceError",
    "ChecksumError",
    "ConnectError",
    "ConsumerAssignError",
    "ConsumerBusy",
    "ConsumerNotFound",
    "ConsumerNotInitialized",
    "CryptoError",
    "CumulativeAcknowledgementNotAllowedError",
    "ErrorGettingAuthenticationData",
    "IncompatibleSchema",
    "Interrupted",
    "InvalidConfiguration",
    "InvalidMessage",
    "InvalidTopicName",
    "InvalidTxnStatusError",
    "InvalidUrl",
    "LookupError",
    "MemoryBufferIsFull",
    "MessageTooBig",
    "NotAllowedError",
    "NotConnected",
    "OperationNotSupported",
    "ProducerBlockedQuotaExceededError",
    "ProducerBlockedQuotaExceededException",
    "ProducerBusy",
    "ProducerFenced",
    "ProducerNotInitialized",
    "ProducerQueueIsFull",
    "PulsarException",
    "ReadError",
    "ServiceUnitNotReady",
    "SubscriptionNotFound",
    "Timeout",
    "TooManyLookupRequestException",
    "TopicNotFound",
    "TopicTerminated",
    "TransactionConflict",
    "TransactionCoordinatorNotFoundError",
    "TransactionNotFound",
    "UnknownError",
    "UnsupportedVersionError",
]


class PulsarException(Exception):
    """Root of the official client's exceptions."""

    result: Result = Result.UnknownError


def _make(result: Result) -> type[PulsarException]:
    # One class per Result code but Ok, named as the official client names it.
    return type(result.name, (PulsarException,), {"result": result, "__module__": __name__})


UnknownError = _make(Result.UnknownError)
InvalidConfiguration = _make(Result.InvalidConfiguration)
Timeout = _make(Result.Timeout)
LookupError = _make(Result.LookupError)
ConnectError = _make(Result.ConnectError)
ReadError = _make(Result.ReadError)
AuthenticationError = _make(Result.AuthenticationError)
AuthorizationError = _make(Result.AuthorizationError)
ErrorGettingAuthenticationData = _make(Result.ErrorGettingAuthenticationData)
BrokerMetadataError = _make(Result.BrokerMetadataError)
BrokerPersistenceError = _make(Result.BrokerPersistenceError)
ChecksumError = _make(Result.ChecksumError)
ConsumerBusy = _make(Result.ConsumerBusy)
NotConnected = _make(Result.NotConnected)
AlreadyClosed = _make(Result.AlreadyClosed)
InvalidMessage = _make(Result.InvalidMessage)
ConsumerNotInitialized = _make(Result.ConsumerNotInitialized)
ProducerNotInitialized = _make(Result.ProducerNotInitialized)
ProducerBusy = _make(Result.ProducerBusy)
TooManyLookupRequestException = _make(Result.TooManyLookupRequestException)
InvalidTopicName = _make(Result.InvalidTopicName)
InvalidUrl = _make(Result.InvalidUrl)
ServiceUnitNotReady = _make(Result.ServiceUnitNotReady)
OperationNotSupported = _make(Result.OperationNotSupported)
ProducerBlockedQuotaExceededError = _make(Result.ProducerBlockedQuotaExceededError)
ProducerBlockedQuotaExceededException = _make(Result.ProducerBlockedQuotaExceededException)
ProducerQueueIsFull = _make(Result.ProducerQueueIsFull)
MessageTooBig = _make(Result.MessageTooBig)
TopicNotFound = _make(Result.TopicNotFound)
SubscriptionNotFound = _make(Result.SubscriptionNotFound)
ConsumerNotFound = _make(Result.ConsumerNotFound)
UnsupportedVersionError = _make(Result.UnsupportedVersionError)
TopicTerminated = _make(Result.TopicTerminated)
CryptoError = _make(Result.CryptoError)
IncompatibleSchema = _make(Result.IncompatibleSchema)
ConsumerAssignError = _make(Result.ConsumerAssignError)
CumulativeAcknowledgementNotAllowedError = _make(Result.CumulativeAcknowledgementNotAllowedError)
TransactionCoordinatorNotFoundError = _make(Result.TransactionCoordinatorNotFoundError)
InvalidTxnStatusError = _make(Result.InvalidTxnStatusError)
NotAllowedError = _make(Result.NotAllowedError)
TransactionConflict = _make(Result.TransactionConflict)
TransactionNotFound = _make(Result.TransactionNotFound)
ProducerFenced = _make(Result.ProducerFenced)
MemoryBufferIsFull = _make(Result.MemoryBufferIsFull)
Interrupted = _make(Result.Interrupted)

_BY_RESULT: dict[Result, type[PulsarException]] = {
    c.result: c
    for c in list(globals().values())
    if isinstance(c, type) and c is not PulsarException and issubclass(c, PulsarException)
}

# The broker's ServerError codes (PulsarApi.proto) -> the Result the official client reports.
_SERVER_CODE: dict[int, Result] = {
    0: Result.UnknownError,
    1: Result.BrokerMetadataError,
    2: Result.BrokerPersistenceError,
    3: Result.AuthenticationError,
    4: Result.AuthorizationError,
    5: Result.ConsumerBusy,
    6: Result.ServiceUnitNotReady,
    7: Result.ProducerBlockedQuotaExceededError,
    8: Result.ProducerBlockedQuotaExceededException,
    9: Result.ChecksumError,
    10: Result.UnsupportedVersionError,
    11: Result.TopicNotFound,
    12: Result.SubscriptionNotFound,
    13: Result.ConsumerNotFound,
    14: Result.TooManyLookupRequestException,
    15: Result.TopicTerminated,
    16: Result.ProducerBusy,
    17: Result.InvalidTopicName,
    18: Result.IncompatibleSchema,
    19: Result.ConsumerAssignError,
    20: Result.TransactionCoordinatorNotFoundError,
    21: Result.InvalidTxnStatusError,
    22: Result.NotAllowedError,
    23: Result.TransactionConflict,
    24: Result.TransactionNotFound,
    25: Result.ProducerFenced,
}

# Most specific first: the first class the error is an instance of wins.
_BY_CLASS: tuple[tuple[type[BaseException], Result], ...] = (
    (sw.OperationTimeoutError, Result.Timeout),
    (sw.TransactionTimeoutError, Result.Timeout),
    (sw.TransactionConflictError, Result.TransactionConflict),
    (sw.InvalidTransactionStateError, Result.InvalidTxnStatusError),
    (sw.TransactionError, Result.UnknownError),
    (sw.ConnectError, Result.ConnectError),
    (sw.DisconnectedError, Result.NotConnected),
    (sw.AuthenticationError, Result.AuthenticationError),
    (sw.AuthorizationError, Result.AuthorizationError),
    (sw.ChecksumError, Result.ChecksumError),
    (sw.TopicNotFoundError, Result.TopicNotFound),
    (sw.PartitionNotFoundError, Result.TopicNotFound),
    (sw.TopicTerminatedError, Result.TopicTerminated),
    (sw.IncompatibleSchemaError, Result.IncompatibleSchema),
    (sw.ProducerBusyError, Result.ProducerBusy),
    (sw.ProducerFencedError, Result.ProducerFenced),
    (sw.ConsumerBusyError, Result.ConsumerBusy),
    (sw.MessageTooBigError, Result.MessageTooBig),
    (sw.ProducerQueueFullError, Result.ProducerQueueIsFull),
    (sw.AlreadyClosedError, Result.AlreadyClosed),
    (sw.NotSupportedError, Result.OperationNotSupported),
    (sw.ConfigError, Result.InvalidConfiguration),
    (sw.InvalidArgumentError, Result.InvalidConfiguration),
    (sw.ProtocolError, Result.UnknownError),
    (sw.CryptoError, Result.CryptoError),
)


def result_of(exc: BaseException) -> Result:
    """The official ``Result`` code for a streamwire error (``UnknownError`` when none fits)."""
    if isinstance(exc, PulsarException):
        return exc.result
    code: Optional[int] = getattr(exc, "server_code", None)
    if isinstance(exc, sw.ServerError) and code in _SERVER_CODE and type(exc) is sw.ServerError:
        return _SERVER_CODE[code]
    for cls, result in _BY_CLASS:
        if isinstance(exc, cls):
            if result is Result.TopicNotFound and code == 12:
                return Result.SubscriptionNotFound
            if result is Result.ProducerQueueIsFull and "memory" in str(exc).lower():
                return Result.MemoryBufferIsFull
            return result
    if code in _SERVER_CODE:
        return _SERVER_CODE[code]
    return Result.UnknownError


def translate(exc: BaseException) -> BaseException:
    """The official exception for ``exc``: a streamwire error becomes the official class (its
    cause kept); a ``SchemaError`` stays as it is (a ``ValueError``, as the official schemas
    raise on a value that does not fit); anything else is returned unchanged."""
    if not isinstance(exc, sw.StreamwireError) or isinstance(exc, sw.SchemaError):
        return exc
    out = _BY_RESULT[result_of(exc)](str(exc))
    out.__cause__ = exc
    return out
