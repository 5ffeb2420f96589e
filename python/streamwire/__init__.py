"""streamwire: a fast, fork-safe Apache Pulsar client with a Rust/Tokio engine.

Importing this package starts no thread, runtime or connection; the engine starts on first
use, and again in a child process after ``fork()``. It sets one environment variable unless
the user already did: ``MIMALLOC_ARENA_EAGER_COMMIT=0``, read by the engine's allocator (see
``streamwire/_alloc_env.py``).
"""

from __future__ import annotations

import atexit
import os

from streamwire import (
    _alloc_env,  # noqa: F401  (allocator settings, before the engine loads)
    _logging,  # noqa: F401  (NullHandler; engine log level follows logging)
    _native,
    exceptions,
    metrics,
)
from streamwire._native import (
    AutoClusterFailover,
    Client,
    Consumer,
    CryptoKeyReader,
    EncryptionContext,
    Lookup,
    Message,
    MessageId,
    MessageIdRanges,
    Producer,
    Reader,
    SendFuture,
    ServiceInfo,
    TableView,
    Transaction,
    configure,
)
from streamwire.auth import AuthBasic, AuthOauth2, AuthPlugin, AuthTls
from streamwire.exceptions import (
    AlreadyClosedError,
    AuthenticationError,
    AuthorizationError,
    ChecksumError,
    ConfigError,
    ConnectError,
    ConsumerBusyError,
    CryptoError,
    DisconnectedError,
    ForkedProcessError,
    IncompatibleSchemaError,
    InvalidArgumentError,
    InvalidTransactionStateError,
    MessageTooBigError,
    NotSupportedError,
    OperationTimeoutError,
    OutOfRangeError,
    PartitionNotFoundError,
    ProducerBusyError,
    ProducerFencedError,
    ProducerQueueFullError,
    ProtocolError,
    ReadOnlyError,
    SchemaError,
    ServerError,
    StreamwireError,
    TopicNotFoundError,
    TopicTerminatedError,
    TransactionConflictError,
    TransactionError,
    TransactionTimeoutError,
    WorkerPythonError,
)

__all__ = [
    "AlreadyClosedError",
    "AuthBasic",
    "AuthOauth2",
    "AuthPlugin",
    "AuthTls",
    "AuthenticationError",
    "AuthorizationError",
    "AutoClusterFailover",
    "ChecksumError",
    "Client",
    "ConfigError",
    "ConnectError",
    "Consumer",
    "ConsumerBusyError",
    "CryptoError",
    "CryptoKeyReader",
    "DisconnectedError",
    "EncryptionContext",
    "ForkedProcessError",
    "IncompatibleSchemaError",
    "InvalidArgumentError",
    "InvalidTransactionStateError",
    "Lookup",
    "Message",
    "MessageId",
    "MessageIdRanges",
    "MessageTooBigError",
    "NotSupportedError",
    "OperationTimeoutError",
    "OutOfRangeError",
    "PartitionNotFoundError",
    "Producer",
    "ProducerBusyError",
    "ProducerFencedError",
    "ProducerQueueFullError",
    "ProtocolError",
    "ReadOnlyError",
    "Reader",
    "SchemaError",
    "SendFuture",
    "ServerError",
    "ServiceInfo",
    "StreamwireError",
    "TableView",
    "TopicNotFoundError",
    "TopicTerminatedError",
    "Transaction",
    "TransactionConflictError",
    "TransactionError",
    "TransactionTimeoutError",
    "WorkerPythonError",
    "__version__",
    "configure",
    "exceptions",
    "metrics",
]


def _version() -> str:
    """The installed distribution's version (its metadata, which maturin takes from the Cargo
    workspace's ``version``); the compiled engine's own copy of that same Cargo version when the
    package is imported from a source tree that was never installed."""
    from importlib import metadata

    try:
        return metadata.version("streamwire")
    except metadata.PackageNotFoundError:
        return _native.__version__


def __getattr__(name: str) -> str:
    # Looked up on first use, so that ``import streamwire`` does not pay for importlib.metadata.
    if name == "__version__":
        version = _version()
        globals()["__version__"] = version
        return version
    raise AttributeError(f"module 'streamwire' has no attribute {name!r}")


_after_fork_hooks: list[object] = []


def _after_fork_in_child() -> None:
    # The engine notices the new pid by itself; this hook lets Python-side caches (such as
    # streamwire.spark's client cache) drop handles that belong to the parent.
    for hook in list(_after_fork_hooks):
        if callable(hook):
            hook()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _stop_callbacks_at_exit() -> None:
    _native._shutdown_callbacks()


atexit.register(_stop_callbacks_at_exit)
