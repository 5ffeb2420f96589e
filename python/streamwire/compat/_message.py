"""``Message`` and ``MessageId`` with the official method spellings, over streamwire's
message and id objects; and the message a ``message_router`` is given."""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn, Optional, Union

from streamwire import _native
from streamwire.compat._common import _missing, _raise
from streamwire.compat._enums import CompressionType, Result
from streamwire.compat.schema import Schema
from streamwire.exceptions import StreamwireError

__all__ = ["Message", "MessageId"]


class MessageId:
    """A message's position, with the official accessors (methods, not properties).

    ``MessageId.earliest`` / ``MessageId.latest`` are the two ends of a topic;
    ``serialize()`` gives the same bytes as the official client's (the protocol's
    ``MessageIdData``), which ``deserialize`` reads back.

    Args:
        partition: the partition index (-1: a topic without partitions).
        ledger_id: the ledger.
        entry_id: the entry in the ledger.
        batch_index: the message's index in its batch (-1: not batched).
    """

    __slots__ = ("_msg_id",)
    earliest: ClassVar[MessageId]
    latest: ClassVar[MessageId]

    def __init__(
        self, partition: int = -1, ledger_id: int = -1, entry_id: int = -1, batch_index: int = -1
    ) -> None:
        self._msg_id = _native.MessageId(ledger_id, entry_id, partition, batch_index)

    @classmethod
    def wrap(cls, msg_id: _native.MessageId) -> MessageId:
        """A ``MessageId`` for ``msg_id``, a :class:`streamwire.MessageId`."""
        self = cls.__new__(cls)
        self._msg_id = msg_id
        return self

    def ledger_id(self) -> int:
        """The ledger."""
        return self._msg_id.ledger_id

    def entry_id(self) -> int:
        """The entry in the ledger."""
        return self._msg_id.entry_id

    def batch_index(self) -> int:
        """The index in the batch (-1: not batched)."""
        return self._msg_id.batch_index

    def partition(self) -> int:
        """The partition (-1: a topic without partitions)."""
        return self._msg_id.partition

    def serialize(self) -> bytes:
        """The id as bytes, to store and later :meth:`deserialize`."""
        return self._msg_id.serialize()

    @staticmethod
    def deserialize(message_id_bytes: bytes, topic: Optional[str] = None) -> MessageId:
        """A message id from ``message_id_bytes``, :meth:`serialize`'s bytes (``topic`` is
        accepted for the official signature; streamwire's ids of multi-topic consumers need no
        topic)."""
        try:
            return MessageId.wrap(_native.MessageId.deserialize(message_id_bytes))
        except StreamwireError as e:
            _raise(e)

    @property
    def native(self) -> _native.MessageId:
        """The underlying :class:`streamwire.MessageId`."""
        return self._msg_id

    def __str__(self) -> str:
        return str(self._msg_id)

    def __repr__(self) -> str:
        return str(self._msg_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MessageId) and self._msg_id == other._msg_id

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __lt__(self, other: MessageId) -> bool:
        return self._msg_id < other._msg_id

    def __le__(self, other: MessageId) -> bool:
        return self._msg_id <= other._msg_id

    def __gt__(self, other: MessageId) -> bool:
        return self._msg_id > other._msg_id

    def __ge__(self, other: MessageId) -> bool:
        return self._msg_id >= other._msg_id

    def __hash__(self) -> int:
        return hash(self._msg_id)


_new = object.__new__
_OK = Result.Ok


def _wrap_id(msg_id: _native.MessageId) -> MessageId:
    # MessageId.wrap without the classmethod call (the per-message path of send_async).
    out: MessageId = _new(MessageId)
    out._msg_id = msg_id
    return out


MessageId.earliest = MessageId.wrap(_native.MessageId.earliest)
MessageId.latest = MessageId.wrap(_native.MessageId.latest)

_Position = Union[MessageId, _native.MessageId]


def _native_id(x: Any) -> Any:
    if isinstance(x, MessageId):
        return x._msg_id
    if isinstance(x, Message):
        return x._m
    return x


class Message:
    """A received message, with the official method spellings (``data()``, ``value()``,
    ``properties()``, ``message_id()``, ...): the streamwire ``message`` and the ``schema``
    its value decodes with."""

    __slots__ = ("_m", "_schema")

    def __init__(self, message: _native.Message, schema: Schema) -> None:
        self._m = message
        self._schema = schema

    def data(self) -> bytes:
        """The payload bytes."""
        return self._m.data()

    def value(self) -> Any:
        """The payload decoded with the schema (a ``Record`` instance for record schemas)."""
        if self._schema._native is None:
            return self._m.data()
        try:
            return self._m.value
        except StreamwireError as e:
            _raise(e)

    def properties(self) -> dict[str, str]:
        """The message's properties (str to str)."""
        return self._m.properties

    def partition_key(self) -> str:
        """The key ("" when the message has none, as the official client returns)."""
        return self._m.key or ""

    def ordering_key(self) -> str:
        """The ordering key as text ("" when none)."""
        key = self._m.ordering_key
        return key.decode("utf-8", "surrogateescape") if key else ""

    def publish_timestamp(self) -> int:
        """Publish time, milliseconds since the epoch."""
        return self._m.publish_time

    def event_timestamp(self) -> int:
        """Event time in milliseconds (0 when the producer set none)."""
        return self._m.event_time or 0

    def message_id(self) -> MessageId:
        """The message's id."""
        return _wrap_id(self._m.message_id)

    def topic_name(self) -> str:
        """The topic (the partition's name on a partitioned topic)."""
        return self._m.topic

    def redelivery_count(self) -> int:
        """How many times the broker delivered the message before."""
        return self._m.redelivery_count

    def schema_version(self) -> str:
        """The schema version the message was written with, as text ("" when none)."""
        version = self._m.schema_version
        return version.decode("latin-1") if version else ""

    def producer_name(self) -> str:
        """The name of the producer that sent it."""
        return self._m.producer_name

    def has_null_value(self) -> bool:
        """Whether it is a null value (a compaction tombstone)."""
        return self._m.has_null_value()

    def encryption_context(self) -> Optional[EncryptionContext]:
        """How the payload is encrypted, when it was delivered undecrypted
        (``ConsumerCryptoFailureAction.CONSUME``); None otherwise."""
        ctx = self._m.encryption_context()
        return None if ctx is None else EncryptionContext(ctx)

    def __str__(self) -> str:
        return f"Message(id={self._m.message_id}, topic={self._m.topic!r})"


class EncryptionKey:
    """One recipient of an encrypted message (the official ``EncryptionKey``).

    Args:
        key: the key name.
        value: the data key, wrapped with that name's public key.
        metadata: the key reader's metadata for that name.
    """

    def __init__(self, key: str, value: bytes, metadata: dict[str, str]) -> None:
        self._key, self._value, self._metadata = key, value, metadata

    @property
    def key(self) -> str:
        """The key name."""
        return self._key

    @property
    def value(self) -> bytes:
        """The data key, wrapped with that name's public key."""
        return self._value

    @property
    def metadata(self) -> dict[str, str]:
        """The key reader's metadata for that name."""
        return self._metadata

    def __repr__(self) -> str:
        return (
            f"EncryptionKey(key={self._key}, value_len={len(self._value)}, "
            f"metadata={self._metadata})"
        )


class EncryptionContext:
    """How an undecrypted message's payload was sealed (the official ``EncryptionContext``).

    Args:
        ctx: the native ``streamwire.EncryptionContext`` (from ``Message.encryption_context()``).
    """

    def __init__(self, ctx: _native.EncryptionContext) -> None:
        self._ctx = ctx

    def keys(self) -> list[EncryptionKey]:
        """The recipients' wrapped data keys."""
        return [EncryptionKey(k, v, m) for k, (v, m) in self._ctx.keys.items()]

    def param(self) -> bytes:
        """The AES-GCM IV."""
        return self._ctx.param

    def algorithm(self) -> str:
        """``encryption_algo`` as sent ("" from the official clients)."""
        return self._ctx.algorithm

    def compression_type(self) -> CompressionType:
        """The compression to undo after decryption."""
        return _CODEC[self._ctx.compression_type]

    def uncompressed_message_size(self) -> int:
        """The payload size before compression."""
        return self._ctx.uncompressed_size

    def batch_size(self) -> int:
        """The number of messages in the batch (-1: not a batch)."""
        size = self._ctx.batch_size
        return -1 if size is None else size


_CODEC = {
    "none": CompressionType.NONE,
    "lz4": CompressionType.LZ4,
    "zlib": CompressionType.ZLib,
    "zstd": CompressionType.ZSTD,
    "snappy": CompressionType.SNAPPY,
}


class _RoutedMessage:
    # What a message_router is given: streamwire routes by the partition key alone, so the
    # payload is not at hand (building a message object per send would cost every send).
    __slots__ = ("_key",)

    def __init__(self, key: Optional[str]) -> None:
        self._key = key

    def partition_key(self) -> str:
        return self._key or ""

    def has_partition_key(self) -> bool:
        return self._key is not None

    def data(self) -> NoReturn:
        _missing("the payload of the message given to message_router (only partition_key())")

    def properties(self) -> NoReturn:
        _missing("the properties of the message given to message_router (only partition_key())")
