"""``Consumer`` and ``Reader`` with the official client's signatures (timeouts in
milliseconds, ``batch_receive`` by policy, the official message and id wrappers), over a
:class:`streamwire.Consumer` / :class:`streamwire.Reader`. What both share (the handle, its
topic, seek, close, the skip of the sought message) lives once in :class:`_Endpoint`."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Optional, Union

import streamwire
from streamwire import _native
from streamwire.compat._common import _check_type, _raise, official_errors
from streamwire.compat._enums import ConsumerType
from streamwire.compat._message import Message, MessageId, _native_id
from streamwire.compat._options import ConsumerBatchReceivePolicy
from streamwire.compat.exceptions import CumulativeAcknowledgementNotAllowedError
from streamwire.compat.schema import Schema
from streamwire.exceptions import StreamwireError

__all__ = ["Consumer", "Reader"]


class _AfterSeek:
    """After ``seek(message_id)`` the official client delivers the messages after that id;
    the broker resends from the id itself, which streamwire delivers. Until a later message
    comes, the ones at or before the id are dropped here (not acknowledged, as the official
    client leaves them)."""

    _after: Optional[_native.MessageId] = None

    def _seeking(self, target: Any) -> None:
        nid = _native_id(target)
        ends = (_native.MessageId.earliest, _native.MessageId.latest)
        self._after = nid if isinstance(nid, _native.MessageId) and nid not in ends else None

    def _skip(self, m: _native.Message) -> bool:
        after = self._after
        if after is None:
            return False
        mid = m.message_id
        if mid.partition != after.partition:
            # Another partition's message: the id says nothing about it.
            return False
        if mid <= after:
            return True
        self._after = None
        return False

    def _next(
        self, get: Callable[[Optional[float]], _native.Message], timeout_millis: Optional[int]
    ) -> _native.Message:
        if timeout_millis is not None:
            _check_type(int, timeout_millis, "timeout_millis")
        if self._after is None:
            return get(None if timeout_millis is None else timeout_millis / 1000.0)
        deadline = None if timeout_millis is None else time.monotonic() + timeout_millis / 1e3
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            m = get(left)
            if not self._skip(m):
                return m


class _Endpoint(_AfterSeek):
    """What a consumer and a reader share: the streamwire handle ``_h``, its topic, seek,
    close, connection state."""

    _h: Union[_native.Consumer, _native.Reader]

    def topic(self) -> str:
        """The topic (or topics)."""
        return self._h.topic

    @official_errors
    def seek(self, messageid: Union[MessageId, _native.MessageId, int]) -> None:
        """Move to ``messageid`` (a ``MessageId``) or to a publish time (an int, ms since the
        epoch)."""
        if not isinstance(messageid, (MessageId, _native.MessageId, int)):
            raise ValueError(f"invalid seek_arg type {type(messageid)}")
        self._h.seek(_native_id(messageid))
        self._seeking(messageid)

    @official_errors
    def close(self) -> None:
        """Close (a consumer's subscription stays)."""
        self._h.close()

    def is_connected(self) -> bool:
        """Whether there is a live connection to the broker."""
        return self._h.is_connected()


class Consumer(_Endpoint):
    """The official ``pulsar.Consumer`` on a :class:`streamwire.Consumer` (made by
    ``Client.subscribe`` with the ``schema``, the ``batch_policy`` of ``batch_receive()``, the
    ``queue_size`` and the ``consumer_type``)."""

    _h: _native.Consumer

    def __init__(
        self,
        schema: Schema,
        batch_policy: ConsumerBatchReceivePolicy,
        queue_size: int,
        consumer_type: ConsumerType,
    ) -> None:
        self._schema = schema
        self._batch = batch_policy
        self._queue_size = queue_size
        self._cumulative_allowed = consumer_type not in (
            ConsumerType.Shared,
            ConsumerType.KeyShared,
        )

    @property
    def native(self) -> _native.Consumer:
        """The underlying :class:`streamwire.Consumer`."""
        return self._h

    def subscription_name(self) -> str:
        """The subscription."""
        return self._h.subscription_name

    def consumer_name(self) -> Optional[str]:
        """The consumer's name."""
        return self._h.consumer_name

    @official_errors
    def unsubscribe(self) -> None:
        """Remove the subscription from the broker and close the consumer."""
        self._h.unsubscribe()

    def receive(self, timeout_millis: Optional[int] = None) -> Message:
        """The next message; with ``timeout_millis``, ``Timeout`` when none came in time."""
        try:
            return Message(self._next(self._h.receive, timeout_millis), self._schema)
        except StreamwireError as e:
            _raise(e)

    @official_errors
    def batch_receive(self) -> list[Message]:
        """Messages as the batch receive policy says: until it has ``max_num_message``
        messages or ``max_num_bytes`` bytes, or its timeout passed (then maybe none)."""
        policy = self._batch
        limit = policy.max_num_message if policy.max_num_message > 0 else sys.maxsize
        byte_limit = policy.max_num_bytes if policy.max_num_bytes > 0 else None
        deadline = None if policy.timeout_ms < 0 else time.monotonic() + policy.timeout_ms / 1e3
        out: list[Message] = []
        size = 0
        while len(out) < limit and (byte_limit is None or size < byte_limit):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            try:
                got = self._h.receive_many(
                    min(limit - len(out), self._queue_size),
                    left,
                    max_bytes=None if byte_limit is None else byte_limit - size,
                )
            except streamwire.OperationTimeoutError:
                break
            for m in got:
                if self._skip(m):
                    continue
                size += len(m.data())
                out.append(Message(m, self._schema))
        return out

    @official_errors
    def acknowledge(self, message: Union[Message, MessageId]) -> None:
        """Acknowledge ``message`` (a message or its id)."""
        self._h.acknowledge(_native_id(message))

    def acknowledge_cumulative(self, message: Union[Message, MessageId]) -> None:
        """Acknowledge everything up to ``message`` (``CumulativeAcknowledgementNotAllowedError``
        on Shared and Key_Shared subscriptions, as the official client raises)."""
        if not self._cumulative_allowed:
            raise CumulativeAcknowledgementNotAllowedError(
                "cumulative acknowledgement is not allowed on shared or key_shared subscriptions"
            )
        try:
            self._h.acknowledge_cumulative(_native_id(message))
        except StreamwireError as e:
            _raise(e)

    @official_errors
    def negative_acknowledge(self, message: Union[Message, MessageId]) -> None:
        """Have ``message`` (a message or its id) delivered again after the negative-ack
        delay."""
        self._h.negative_acknowledge(_native_id(message))

    @official_errors
    def pause_message_listener(self) -> None:
        """Stop calling the message listener until :meth:`resume_message_listener`."""
        self._h.pause_message_listener()

    @official_errors
    def resume_message_listener(self) -> None:
        """Call the message listener again, from the first message not yet handed over."""
        self._h.resume_message_listener()

    @official_errors
    def redeliver_unacknowledged_messages(self) -> None:
        """Have every unacknowledged message delivered again."""
        self._h.redeliver_unacknowledged_messages()

    @official_errors
    def get_last_message_id(self) -> MessageId:
        """The id of the topic's last message."""
        return MessageId.wrap(self._h.get_last_message_id())


class Reader(_Endpoint):
    """The official ``pulsar.Reader`` on a :class:`streamwire.Reader` (made by
    ``Client.create_reader``, with the ``schema`` its messages decode with)."""

    _h: _native.Reader

    def __init__(self, schema: Schema) -> None:
        self._schema = schema

    @property
    def native(self) -> _native.Reader:
        """The underlying :class:`streamwire.Reader`."""
        return self._h

    def read_next(self, timeout_millis: Optional[int] = None) -> Message:
        """The next message; with ``timeout_millis``, ``Timeout`` when none came in time."""
        try:
            return Message(self._next(self._h.read_next, timeout_millis), self._schema)
        except StreamwireError as e:
            _raise(e)

    @official_errors
    def has_message_available(self) -> bool:
        """Whether a message is there to read from the current position."""
        return self._h.has_message_available()
