"""The streamwire exception hierarchy.

Every error raised by streamwire is a :class:`StreamwireError`. Subclasses also inherit the
built-in exception they mean, so ``except TimeoutError`` or ``except ValueError`` work as
expected. Each error carries ``retriable`` (whether trying again later may succeed),
``server_code`` (the broker's ``ServerError`` code when the broker reported it, else ``None``)
and ``details`` (named numbers the caller can act on, such as an out-of-range read's
``first_available``; empty for most errors).

The classes are defined here, in Python, so that they pickle by name (Spark ships task
failures between processes).
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = [
    "AlreadyClosedError",
    "AuthenticationError",
    "AuthorizationError",
    "ChecksumError",
    "ConfigError",
    "ConnectError",
    "ConsumerBusyError",
    "CryptoError",
    "DisconnectedError",
    "ForkedProcessError",
    "IncompatibleSchemaError",
    "InterruptedError_",
    "InvalidArgumentError",
    "InvalidTransactionStateError",
    "MessageTooBigError",
    "NotSupportedError",
    "OperationTimeoutError",
    "OutOfRangeError",
    "PartitionNotFoundError",
    "ProducerBusyError",
    "ProducerFencedError",
    "ProducerQueueFullError",
    "ProtocolError",
    "ReadOnlyError",
    "SchemaError",
    "ServerError",
    "StreamwireError",
    "TopicNotFoundError",
    "TopicTerminatedError",
    "TransactionConflictError",
    "TransactionError",
    "TransactionTimeoutError",
    "WorkerPythonError",
]


class StreamwireError(Exception):
    """Root of every streamwire error."""

    def __init__(
        self,
        message: str = "",
        *,
        retriable: bool = False,
        server_code: Optional[int] = None,
        details: Optional[dict[str, int]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retriable = retriable
        self.server_code = server_code
        self.details: dict[str, int] = dict(details or {})

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (type(self), self.message, self.retriable, self.server_code, self.details),
        )

    def __str__(self) -> str:
        return self.message


def _rebuild(
    cls: type[StreamwireError],
    message: str,
    retriable: bool,
    server_code: Optional[int],
    details: Optional[dict[str, int]] = None,
) -> StreamwireError:
    return cls(message, retriable=retriable, server_code=server_code, details=details)


class ConfigError(StreamwireError, ValueError):
    """A client, producer or consumer setting is invalid."""


class WorkerPythonError(ConfigError):
    """The Python that Spark runs on the workers cannot import streamwire (or cannot start).
    ``python`` is that interpreter as the workers reported it (``sys.executable``), else as
    configured (``PYSPARK_PYTHON``); the message says how to fix it."""

    def __init__(self, message: str = "", *, python: Optional[str] = None) -> None:
        super().__init__(message)
        self._python = python

    @property
    def python(self) -> Optional[str]:
        return self._python

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_worker_python, (self.message, self._python))


def _rebuild_worker_python(message: str, python: Optional[str]) -> WorkerPythonError:
    return WorkerPythonError(message, python=python)


class InvalidArgumentError(StreamwireError, ValueError):
    """An argument is invalid (for example a malformed topic name)."""


class SchemaError(InvalidArgumentError):
    """A value does not fit its schema (nothing was sent), a payload does not decode with
    its schema, or a schema definition is invalid."""


class MessageTooBigError(StreamwireError, ValueError):
    """A message is larger than the broker accepts (and chunking is off)."""


class ConnectError(StreamwireError, ConnectionError):
    """A connection to a broker could not be established (refused, unreachable, timed out)."""


class DisconnectedError(StreamwireError, ConnectionError):
    """An established connection was lost while an operation was in flight."""


class OperationTimeoutError(StreamwireError, TimeoutError):
    """An operation did not complete within its timeout."""


class AuthenticationError(StreamwireError, PermissionError):
    """The broker rejected the client's credentials."""


class AuthorizationError(StreamwireError, PermissionError):
    """The broker refused the operation for this role."""


class ProtocolError(StreamwireError):
    """The peer sent bytes that do not follow its protocol."""


class ChecksumError(ProtocolError):
    """A message's CRC32C checksum did not match its content."""


class ServerError(StreamwireError):
    """The broker reported an error (see ``server_code``)."""


class TopicNotFoundError(ServerError):
    """The topic or subscription does not exist."""


class PartitionNotFoundError(ServerError):
    """The topic exists but the partition does not."""


class OutOfRangeError(ServerError, LookupError):
    """A read asked for a position the server does not have (retention removed it, or it is
    past the end). ``first_available`` and ``high_water`` say what the server has, when it
    told them (else ``None``)."""

    @property
    def first_available(self) -> Optional[int]:
        return self.details.get("first_available")

    @property
    def high_water(self) -> Optional[int]:
        return self.details.get("high_water")


class ReadOnlyError(ServerError):
    """The server accepts no writes (it runs read-only)."""


class TopicTerminatedError(ServerError):
    """The topic was terminated; nothing more can be published to it."""


class IncompatibleSchemaError(ServerError):
    """The topic's schema registry refused the schema (not compatible with the topic's)."""


class ProducerBusyError(ServerError):
    """Another producer holds the topic exclusively, or uses the same producer name."""


class ProducerFencedError(ServerError):
    """This producer was fenced by a newer exclusive producer."""


class ConsumerBusyError(ServerError):
    """The subscription is held by an exclusive consumer."""


class TransactionError(StreamwireError):
    """A transaction could not be started or ended, or an operation in it failed (the
    coordinator is unavailable, the broker does not know the transaction, a send of it
    failed so it was aborted)."""


class TransactionConflictError(TransactionError):
    """The broker refused an acknowledgement in a transaction: another transaction holds the
    same message."""


class InvalidTransactionStateError(TransactionError, RuntimeError):
    """The transaction is not open: it was committed, aborted, failed or timed out."""


class TransactionTimeoutError(TransactionError, TimeoutError):
    """The transaction ran past its timeout; the coordinator aborted it."""


class CryptoError(StreamwireError):
    """End-to-end encryption failed: a missing or unusable key, a payload that does not
    authenticate (tampered or truncated), or an unknown encryption algorithm. The message
    names the key, never its bytes."""


class NotSupportedError(StreamwireError):
    """The broker or this client does not support the request."""


class ProducerQueueFullError(StreamwireError, BufferError):
    """The producer's pending queue or the client memory budget is full."""


class AlreadyClosedError(StreamwireError, RuntimeError):
    """The client, producer, consumer or reader was closed."""


class ForkedProcessError(StreamwireError, RuntimeError):
    """A handle created before ``fork()`` was used in the child process."""


class InterruptedError_(StreamwireError):
    """An operation was interrupted (reserved; Ctrl-C raises KeyboardInterrupt)."""
