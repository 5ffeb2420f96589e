"""Structural types for the parts of the native API that ``streamwire.spark`` relies on.

The native stubs are finished by other work streams; typing against small protocols keeps this
package checkable with ``mypy --strict`` whatever the stub state, and documents exactly which calls
the Spark layer needs from a producer and a reader.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol

from streamwire import MessageId


class MessageLike(Protocol):
    """A received message (``streamwire`` ``Message``)."""

    @property
    def data(self) -> bytes: ...
    @property
    def key(self) -> Optional[str]: ...
    @property
    def properties(self) -> dict[str, str]: ...
    @property
    def event_time(self) -> Any: ...
    @property
    def publish_time(self) -> Any: ...
    @property
    def message_id(self) -> MessageId: ...
    @property
    def topic(self) -> str: ...
    @property
    def producer_name(self) -> Optional[str]: ...
    @property
    def sequence_id(self) -> Optional[int]: ...


class ProducerLike(Protocol):
    """The producer calls used by the writer and the executor helpers."""

    def send(
        self,
        value: bytes,
        *,
        key: Optional[str] = None,
        properties: Optional[dict[str, str]] = None,
        event_time: Optional[int] = None,
    ) -> MessageId: ...
    def send_many(self, values: Any, **kwargs: Any) -> list[MessageId]: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


class ReaderLike(Protocol):
    """The reader calls used to read one planned offset range."""

    def read_many(self, max_messages: int, timeout: Optional[float] = None) -> list[Any]: ...
    def has_message_available(self) -> bool: ...
    def close(self) -> None: ...


class ConsumerLike(Protocol):
    """The consumer calls used on the driver (last message id, committing to a subscription)."""

    def get_last_message_id(self) -> MessageId: ...
    def acknowledge_cumulative(self, message_id: Any) -> None: ...
    def close(self) -> None: ...


class LookupLike(Protocol):
    def partitions(self, topic: str) -> int: ...
    def topic_partitions(self, topic: str) -> list[str]: ...


class ClientLike(Protocol):
    """A ``streamwire.Client`` as seen by this package."""

    def lookup(self) -> Any: ...
    def create_producer(self, topic: str, **kwargs: Any) -> Any: ...
    def create_reader(self, topic: str, start_message_id: Any, **kwargs: Any) -> Any: ...
    def subscribe(self, topic: Any, subscription_name: str, **kwargs: Any) -> Any: ...
    def close(self) -> None: ...


__all__ = [
    "ClientLike",
    "ConsumerLike",
    "LookupLike",
    "MessageLike",
    "ProducerLike",
    "ReaderLike",
]
