"""``Producer`` with the official client's signatures: ``send`` / ``send_async`` with the
official options and callback shape ``(Result, MessageId)``, over a :class:`streamwire.Producer`."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Optional

from streamwire import _native
from streamwire.compat._common import _raise, official_errors
from streamwire.compat._enums import Result
from streamwire.compat._message import _OK, MessageId, _new
from streamwire.compat.exceptions import PulsarException, result_of
from streamwire.compat.schema import Schema
from streamwire.exceptions import StreamwireError

__all__ = ["Producer"]


def _no_adapter(exc: Optional[BaseException], msg_id: Any) -> None:
    # The adapter cache's first entry: paired with itself, a callback no program passes.
    raise AssertionError("never called")


class Producer:
    """The official ``pulsar.Producer`` on a :class:`streamwire.Producer` (made by
    ``Client.create_producer``, which passes the streamwire ``producer`` and the ``schema``)."""

    __slots__ = ("_adapter", "_check", "_p", "_schema")

    def __init__(self, producer: _native.Producer, schema: Schema) -> None:
        self._p = producer
        self._schema = schema
        self._check = schema._record_cls
        self._adapter: tuple[object, Callable[[Optional[BaseException], Any], None]] = (
            _no_adapter,
            _no_adapter,
        )

    @property
    def native(self) -> _native.Producer:
        """The underlying :class:`streamwire.Producer`."""
        return self._p

    def topic(self) -> str:
        """The topic."""
        return self._p.topic

    def producer_name(self) -> str:
        """The producer's name (given, or picked by the broker)."""
        return self._p.name

    def last_sequence_id(self) -> int:
        """The sequence id of the last message the broker has."""
        return self._p.last_sequence_id

    def _value(self, content: Any) -> Any:
        # The official client checks the value's type before anything else (TypeError).
        if content is not None and self._check is not None:
            self._schema._validate_object_type(content)
        return content

    def send(
        self,
        content: Any,
        properties: Optional[dict[str, str]] = None,
        partition_key: Optional[str] = None,
        ordering_key: Optional[str] = None,
        sequence_id: Optional[int] = None,
        replication_clusters: Optional[list[str]] = None,
        disable_replication: bool = False,
        event_timestamp: Optional[int] = None,
        deliver_at: Optional[int] = None,
        deliver_after: Optional[datetime.timedelta] = None,
    ) -> MessageId:
        """Publish and wait for the broker's receipt; returns the message's id.

        Args:
            content: the value (of the schema's type; ``bytes`` by default), or None for a
                null value (a compaction tombstone).
            properties: str-to-str properties.
            partition_key: the key (routing, compaction, Key_Shared).
            ordering_key: the Key_Shared ordering key, if not the partition key.
            sequence_id: the message's sequence id instead of the next one.
            replication_clusters: the clusters to replicate to.
            disable_replication: do not replicate this message.
            event_timestamp: the event time, ms since the epoch.
            deliver_at: deliver no earlier than this time, ms since the epoch.
            deliver_after: deliver after this ``timedelta``.
        """
        value = self._value(content)
        if value is None:
            return self._send_null(partition_key, properties, event_timestamp, sequence_id)
        try:
            return MessageId.wrap(
                self._p.send(
                    value,
                    key=partition_key,
                    ordering_key=ordering_key.encode() if ordering_key else None,
                    properties=properties,
                    event_time=event_timestamp,
                    sequence_id=sequence_id or None,
                    deliver_after=deliver_after,
                    deliver_at=deliver_at,
                    replication_clusters=replication_clusters,
                    disable_replication=disable_replication,
                )
            )
        except StreamwireError as e:
            _raise(e)

    def _send_null(
        self,
        key: Optional[str],
        properties: Optional[dict[str, str]],
        event_timestamp: Optional[int],
        sequence_id: Optional[int],
    ) -> MessageId:
        # A null value (a compaction tombstone): streamwire sends one through send_many, which
        # takes the key, properties, event time and sequence id of each message.
        try:
            (msg_id,) = self._p.send_many(
                [None],
                keys=[key],
                properties=[properties],
                event_times=[event_timestamp],
                sequence_ids=[sequence_id] if sequence_id else None,
            )
        except StreamwireError as e:
            _raise(e)
        return MessageId.wrap(msg_id)

    def send_async(
        self,
        content: Any,
        callback: Callable[[Result, MessageId], object],
        properties: Optional[dict[str, str]] = None,
        partition_key: Optional[str] = None,
        ordering_key: Optional[str] = None,
        sequence_id: Optional[int] = None,
        replication_clusters: Optional[list[str]] = None,
        disable_replication: bool = False,
        event_timestamp: Optional[int] = None,
        deliver_at: Optional[int] = None,
        deliver_after: Optional[datetime.timedelta] = None,
    ) -> None:
        """Publish without waiting; ``callback(result, msg_id)`` runs once the broker has
        answered: ``Result.Ok`` and the id, or the failure's code and an empty id
        (``(-1,-1,-1,-1)``), as the official client calls it.

        ``content``, ``properties``, ``partition_key``, ``ordering_key``, ``sequence_id``,
        ``replication_clusters``, ``disable_replication``, ``event_timestamp``, ``deliver_at``
        and ``deliver_after`` are as for :meth:`send`.
        """
        if content is None:
            # A null value goes through the blocking path (see _send_null); the callback is
            # called before send_async returns.
            try:
                msg_id = self._send_null(partition_key, properties, event_timestamp, sequence_id)
            except PulsarException as e:
                callback(e.result, MessageId())
            else:
                callback(Result.Ok, msg_id)
            return
        check = self._check
        if check is not None and not isinstance(content, check):
            self._schema._validate_object_type(content)

        cached = self._adapter
        if cached[0] is callback:
            done = cached[1]
        else:
            if not callable(callback):
                raise ValueError("Argument callback is expected to be callable")

            # Runs once per message on the engine's callback thread: kept to one frame and one
            # id object (see benches/compat_send_async.py). Programs pass the same callback
            # again and again, so its adapter is kept (callback and adapter in one tuple: a
            # send from another thread with another callback cannot pair them wrongly).
            def done(exc: Optional[BaseException], msg_id: Any) -> None:
                if exc is None:
                    # _wrap_id's two lines, inline: one Python call less per message.
                    out = _new(MessageId)
                    out._msg_id = msg_id
                    callback(_OK, out)
                else:
                    callback(result_of(exc), MessageId())

            self._adapter = (callback, done)

        try:
            if (
                properties is None
                and partition_key is None
                and ordering_key is None
                and sequence_id is None
                and event_timestamp is None
                and deliver_at is None
                and deliver_after is None
                and replication_clusters is None
                and not disable_replication
            ):
                # The common call, without building the keyword arguments.
                self._p.send_async(content, done)
            else:
                self._p.send_async(
                    content,
                    done,
                    key=partition_key,
                    ordering_key=ordering_key.encode() if ordering_key else None,
                    properties=properties,
                    event_time=event_timestamp,
                    sequence_id=sequence_id or None,
                    deliver_after=deliver_after,
                    deliver_at=deliver_at,
                    replication_clusters=replication_clusters,
                    disable_replication=disable_replication,
                )
        except StreamwireError as e:
            # A send refused (full queue, too big, closed, bad arguments): streamwire raises
            # it; the official client reports it through the callback only.
            callback(result_of(e), MessageId())

    @official_errors
    def flush(self) -> None:
        """Send what is batched and wait until the broker has it all."""
        self._p.flush()

    @official_errors
    def close(self) -> None:
        """Send what is queued and close the producer."""
        self._p.close()

    def is_connected(self) -> bool:
        """Whether the producer has a live connection to its broker."""
        return self._p.is_connected()
