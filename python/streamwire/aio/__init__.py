"""asyncio face of the Pulsar client: ``Client``, ``Producer``, ``Consumer``, ``Reader``,
``TableView``.

Every wait is a future that the engine resolves straight into the running loop (no thread
per call, no polling): an ``asyncio.Future``, or for ``Producer.send`` a lighter
``AioSendFuture`` that asyncio accepts wherever a future goes. The engine work runs on its
own runtime and completions reach the loop in batches through one ``call_soon_threadsafe``
per batch.

The classes take the same options as the blocking ones (the checks are shared). A send is
queued when ``send()`` is called, so sends keep their call order per producer (also when
gathered); cancelling a pending receive loses no message: whatever the engine already took
for it is handed to the next receive.
"""

from __future__ import annotations

import abc
import asyncio
import datetime
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, Callable, Literal, Optional, TypeVar, Union, overload

from streamwire import _native
from streamwire._native import AioSendFuture, Message, MessageId, MessageIdRanges, Received
from streamwire.exceptions import NotSupportedError, StreamwireError
from streamwire.schema import Schema

__all__ = [
    "AioSendFuture",
    "Client",
    "Consumer",
    "Lookup",
    "Producer",
    "Reader",
    "TableView",
    "Transaction",
]

_AckTarget = Union[
    Message, MessageId, list[Union[Message, MessageId]], tuple[Union[Message, MessageId], ...]
]

_ONE, _MANY, _ARROW = 0, 1, 2

# Set on a waiting receive's future when held messages are there to take.
_RETRY = object()


def _native_txn(txn: object) -> Any:
    """The engine transaction behind a ``txn=`` argument (anything else is passed on, for
    the engine to reject with ``TypeError``)."""
    return txn._native if isinstance(txn, Transaction) else txn


class _Wrapper:
    """What every class here is: a thin face over one native object (the same object the
    blocking API uses), shown as it shows itself."""

    _native: Any

    def __repr__(self) -> str:
        return "<streamwire.aio" + repr(self._native)[len("<streamwire") :]


_E = TypeVar("_E", bound="_Entered")


class _Entered(_Wrapper):
    """A wrapper that is an async context manager (``async with x:`` gives ``x``)."""

    async def __aenter__(self: _E) -> _E:
        return self


class _Closing(_Entered, abc.ABC):
    """A wrapper that ``async with`` closes."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the native object."""

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()


class _Endpoint(_Closing):
    """What producers, consumers and readers share besides waiting calls."""

    _native: Union[_native.Producer, _native.Consumer, _native.Reader]

    @property
    def topic(self) -> str:
        """The topic it was created for."""
        return self._native.topic

    @property
    def num_partitions(self) -> int:
        """As :attr:`streamwire.Producer.num_partitions` (it grows with the topic)."""
        return self._native.num_partitions

    def is_connected(self) -> bool:
        """As :meth:`streamwire.Producer.is_connected` (never waits)."""
        return self._native.is_connected()


def _no_listener(options: dict[str, Any], name: str) -> None:
    """Refuse a listener on the asyncio face. A listener called on the event loop would be
    ``async for message in consumer: await listener(consumer, message)`` in a task, which
    the caller writes in two lines with their own error handling and cancellation; a
    blocking listener on the loop's thread would stall every other coroutine; and one on the
    client's listener threads is what the blocking ``streamwire.Client`` already offers."""
    if options.get(name) is not None:
        raise NotSupportedError(
            f"streamwire.aio takes no {name}: iterate the consumer in a task "
            "(`async for message in consumer: ...`), or use streamwire.Client's listeners"
        )


class Client(_Closing):
    """A connection to a Pulsar cluster for coroutines.

    Args:
        service_url: ``pulsar://host:port`` or ``pulsar+ssl://host:port``, or a
            :class:`streamwire.AutoClusterFailover`.
        options: keyword options as for ``streamwire.Client`` (timeouts in seconds, auth,
            TLS, ``memory_limit``...).
    """

    def __init__(self, service_url: str | _native.AutoClusterFailover, **options: Any) -> None:
        self._native: _native.Client = _native.Client(service_url, **options)

    @property
    def service_url(self) -> str:
        """The service URL in use (with ``AutoClusterFailover``: the cluster it is on now)."""
        return self._native.service_url

    async def create_producer(self, topic: str, **options: Any) -> Producer:
        """Create a producer for ``topic``.

        Args:
            topic: the topic to produce to.
            options: keyword options as for ``streamwire.Client.create_producer``.
        """
        native: _native.Producer = await self._native._acreate_producer(topic, **options)
        return Producer(native)

    async def subscribe(self, topic: Any, subscription_name: str, **options: Any) -> Consumer:
        """Subscribe to ``topic`` as ``subscription_name``.

        Args:
            topic: a topic name, a list of names, or a compiled ``re.Pattern``.
            subscription_name: the subscription (created if it does not exist).
            options: keyword options as for ``streamwire.Client.subscribe``, except
                ``message_listener``: iterate the consumer in a task instead.

        Raises:
            NotSupportedError: ``message_listener`` was given.
        """
        _no_listener(options, "message_listener")
        native: _native.Consumer = await self._native._asubscribe(
            topic, subscription_name, **options
        )
        return Consumer(native)

    async def create_reader(
        self, topic: str, start_message_id: Union[MessageId, str, None] = None, **options: Any
    ) -> Reader:
        """Create a reader of ``topic``.

        Args:
            topic: the topic to read.
            start_message_id: ``"earliest"``, ``"latest"`` or a ``MessageId``. Default None:
                earliest.
            options: keyword options as for ``streamwire.Client.create_reader``, except
                ``reader_listener``: iterate the reader in a task instead.

        Raises:
            NotSupportedError: ``reader_listener`` was given.
        """
        _no_listener(options, "reader_listener")
        native: _native.Reader = await self._native._acreate_reader(
            topic, start_message_id, **options
        )
        return Reader(native)

    async def create_table_view(
        self,
        topic: str,
        *,
        schema: Optional[Schema] = None,
        subscription_name: Optional[str] = None,
        receiver_queue_size: int = 1000,
        auto_update_partitions_interval: float = 60.0,
    ) -> TableView:
        """Read ``topic`` as a map from key to latest value, as
        :meth:`streamwire.Client.create_table_view`; resolves once the view has caught up.

        Args:
            topic: the topic to read (all its partitions).
            schema: a ``streamwire.schema`` object the values are decoded with. Default
                None: bytes.
            subscription_name: the reader's subscription name. Default None: a random one.
            receiver_queue_size: messages the broker may push ahead. Default 1000.
            auto_update_partitions_interval: seconds between checks for partitions the topic
                gained (read from their start). Default 60; 0: never.
        """
        native: _native.TableView = await self._native._acreate_table_view(
            topic,
            schema=schema,
            subscription_name=subscription_name,
            receiver_queue_size=receiver_queue_size,
            auto_update_partitions_interval=auto_update_partitions_interval,
        )
        return TableView(native)

    async def transaction(self, timeout: float = 60.0) -> Transaction:
        """Start a transaction (``async with await client.transaction() as txn:``).

        Args:
            timeout: seconds the transaction may stay open before the broker aborts it.
                Default 60.0.
        """
        native: _native.Transaction = await self._native._atransaction(timeout)
        return Transaction(native)

    async def resume_transaction(self, id: tuple[int, int], timeout: float = 60.0) -> Transaction:
        """A handle on a transaction started by another client or process, by its id
        (``Transaction.id``), to send in it or to commit or abort it from here.

        Args:
            id: ``(most_significant_bits, least_significant_bits)``.
            timeout: seconds this handle accepts sends and acks for. Default 60.0.
        """
        native: _native.Transaction = await self._native._aresume_transaction(id, timeout)
        return Transaction(native)

    async def get_or_create_schema(self, topic: str, schema: Schema) -> bytes:
        """Register ``schema`` with ``topic`` (GET_OR_CREATE_SCHEMA); its registry version.

        Args:
            topic: a topic name (one partition, or a non-partitioned topic); it must exist.
            schema: a ``streamwire.schema`` object.
        """
        version: bytes = await self._native._aget_or_create_schema(topic, schema)
        return version

    def lookup(self) -> Lookup:
        """Topic metadata lookups (owner broker, partition count) as awaitables."""
        return Lookup(self._native.lookup())

    async def close(self) -> None:
        """Close every connection; later calls raise ``AlreadyClosedError``. Idempotent."""
        self._native.close()


class Transaction(_Entered):
    """A Pulsar transaction for coroutines (as ``streamwire.Transaction``): ``async with``
    commits when the block ends normally and aborts when it raises.

    Args:
        native: the engine's transaction; made by :meth:`Client.transaction`, not by callers.
    """

    def __init__(self, native: _native.Transaction) -> None:
        self._native: _native.Transaction = native

    @property
    def id(self) -> tuple[int, int]:
        """``(most_significant_bits, least_significant_bits)`` of the transaction id."""
        return self._native.id

    @property
    def state(self) -> str:
        """``"OPEN"``, ``"COMMITTING"``, ``"ABORTING"``, ``"COMMITTED"``, ``"ABORTED"``,
        ``"ERROR"`` or ``"TIMED_OUT"``."""
        return self._native.state

    @property
    def timeout(self) -> float:
        """The timeout it was started with, in seconds."""
        return self._native.timeout

    async def commit(self) -> None:
        """Commit once every send and ack of the transaction is acknowledged by the broker."""
        await self._native._acommit()

    async def abort(self) -> None:
        """Abort: its messages are discarded, its acknowledged messages delivered again."""
        await self._native._aabort()

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if exc_type is not None:
            if self.state != "ABORTED":
                try:
                    await self.abort()
                except StreamwireError:
                    pass  # the block's own error matters more; the broker aborts at timeout
            return
        if self.state not in ("COMMITTED", "ABORTED"):
            await self.commit()


class Lookup(_Wrapper):
    """Topic metadata lookups for coroutines (as ``streamwire.Lookup``).

    Args:
        native: the engine's lookup; made by :meth:`Client.lookup`, not by callers.
    """

    def __init__(self, native: _native.Lookup) -> None:
        self._native: _native.Lookup = native

    async def broker_url(self, topic: str) -> str:
        """The URL of the broker that owns ``topic``.

        Args:
            topic: a topic name (one partition, or a non-partitioned topic).
        """
        url: str = await self._native._abroker_url(topic)
        return url

    async def partitions(self, topic: str) -> int:
        """The number of partitions of ``topic``; 0 means it is not partitioned.

        Args:
            topic: a topic name.
        """
        n: int = await self._native._apartitions(topic)
        return n

    async def topic_partitions(self, topic: str) -> list[str]:
        """The partition topic names of ``topic`` (or the topic itself if not partitioned).

        Args:
            topic: a topic name.
        """
        names: list[str] = await self._native._atopic_partitions(topic)
        return names


class Producer(_Endpoint):
    """A producer for coroutines. ``send`` queues at once and returns a future.

    Args:
        native: the engine's producer; made by :meth:`Client.create_producer`, not by
            callers.
    """

    def __init__(self, native: _native.Producer) -> None:
        self._native: _native.Producer = native
        # ``send`` is the engine's call itself on each producer (it takes this module's
        # ``Transaction`` too), so a send costs no Python frame, ``**options`` dict or second
        # call. The method below documents it and behaves the same.
        self.send = native._asend  # type: ignore[method-assign,assignment]

    @property
    def name(self) -> str:
        """The producer name (given, or assigned by the broker)."""
        return self._native.name

    async def register_schema(self, schema: Schema) -> bytes:
        """Register ``schema`` with the producer's topic for ``send(..., schema=schema)``;
        its registry version. A ``send`` with a schema not registered yet blocks for that
        round trip, so await this first.

        Args:
            schema: a ``streamwire.schema`` object.
        """
        version: bytes = await self._native._aregister_schema(schema)
        return version

    def send(self, value: Any, **options: Any) -> AioSendFuture:
        """Queue one message now; the returned future resolves to its ``MessageId``.

        The future is an ``AioSendFuture``, not an ``asyncio.Future``: asyncio accepts it
        wherever a future goes (``await``, ``gather``, ``wait``, ``wait_for``,
        ``as_completed``, ``shield``) and it costs far less. Cancelling it only stops the
        wait: the message was queued by this call and is still sent.

        Args:
            value: the payload (bytes-like, or str sent as UTF-8).
            options: keyword options as for ``streamwire.Producer.send`` (key, properties,
                event_time...).
        """
        return self._native._asend(value, **options)

    @overload
    def send_many(
        self, values: Any, *, ids: Literal[True] = True, **options: Any
    ) -> asyncio.Future[list[MessageId]]: ...
    @overload
    def send_many(
        self, values: Any, *, ids: Literal[False], **options: Any
    ) -> asyncio.Future[MessageIdRanges]: ...
    def send_many(self, values: Any, *, ids: bool = True, **options: Any) -> asyncio.Future[Any]:
        """Queue many messages (after every earlier send); resolves to their ids in order.

        Args:
            values: the payloads (a sequence, or a pyarrow binary/string array).
            ids: True: resolve to the list of ``MessageId``. False: to a
                ``MessageIdRanges`` (one range per batch entry). Plain values take the bulk
                path with no per-message item either way, as ``streamwire.Producer.send_many``.
                Default True.
            options: keyword options as for ``streamwire.Producer.send_many`` (keys,
                properties, event_times, sequence_ids, txn, schema: a schema other than the
                producer's, whose version every message carries; registered once, the first
                time it blocks the call for that round trip).
        """
        if "txn" in options:
            options["txn"] = _native_txn(options["txn"])
        fut: asyncio.Future[Any] = self._native._asend_many(values, ids=ids, **options)
        return fut

    async def flush(self) -> None:
        """Wait until every message sent so far is acknowledged or failed."""
        await self._native._aflush()

    async def close(self) -> None:
        """Flush and close. Idempotent."""
        await self._native._aclose()

    def stats(self) -> dict[str, Any]:
        """Counters and publish-latency percentiles (milliseconds), as ``Producer.stats``."""
        return self._native.stats()

    def __len__(self) -> int:
        return len(self._native)


_R = TypeVar("_R", bound="_Receiving")


class _Receiving(_Endpoint):
    """What Consumer and Reader share: receives that hand back what a cancelled one took,
    and every call that is the same on both (seek, last id, close, iteration...)."""

    _native: Union[_native.Consumer, _native.Reader]

    def __init__(self, start: Callable[..., asyncio.Future[Any]]) -> None:
        # The native awaitable receive: the consumer's ``_areceive`` or the reader's ``_aread``.
        self._areceive = start
        self._held = _native.Held()
        # Receives waiting for the engine, oldest first.
        self._waiters: list[asyncio.Future[Any]] = []

    def _start(
        self,
        kind: int,
        max_messages: int,
        timeout: Optional[float],
        columns: Optional[list[str]],
        max_bytes: Optional[int],
    ) -> asyncio.Future[Any]:
        """Ask the engine for messages (the held ones first)."""
        return self._areceive(
            self._held, self._orphaned, kind, max_messages, timeout, columns, max_bytes
        )

    async def _get(
        self,
        kind: int,
        max_messages: int,
        timeout: Optional[float],
        columns: Optional[list[str]],
        max_bytes: Optional[int] = None,
    ) -> Any:
        while True:
            fut = self._start(kind, max_messages, timeout, columns, max_bytes)
            if fut.done():
                return fut.result()  # taken at once: no await, nothing to cancel
            self._waiters.append(fut)
            try:
                got = await fut
            except asyncio.CancelledError:
                # Cancelled after the engine's messages arrived: hand them back.
                if fut.done() and not fut.cancelled() and type(fut.result()) is Received:
                    fut.result().orphan()
                raise
            finally:
                self._waiters.remove(fut)
            if got is _RETRY:
                continue  # messages were handed back meanwhile: take them
            received: Received = got
            return received.value()

    def _orphaned(self, received: Received) -> None:
        """A cancelled receive's messages: held for the next receive, and the oldest receive
        still waiting is woken to take them."""
        received.move_into(self._held)
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(_RETRY)
                return

    async def _one(self, timeout: Optional[float] = None) -> Message:
        """The next message; ``OperationTimeoutError`` after ``timeout`` seconds (None: wait
        forever). As :meth:`streamwire.Consumer.receive`, awaited."""
        msg: Message = await self._get(_ONE, 1, timeout, None)
        return msg

    async def _many(
        self,
        max_messages: int,
        timeout: Optional[float] = None,
        *,
        max_bytes: Optional[int] = None,
    ) -> list[Message]:
        """Up to ``max_messages`` (and ``max_bytes`` of payload, at least one message) once
        at least one is there (``[]`` after ``timeout`` seconds; None: wait forever). As
        :meth:`streamwire.Consumer.receive_many`, awaited."""
        msgs: list[Message] = await self._get(_MANY, max_messages, timeout, None, max_bytes)
        return msgs

    async def _arrow(
        self,
        max_messages: int,
        timeout: Optional[float] = None,
        *,
        columns: Optional[list[str]] = None,
        max_bytes: Optional[int] = None,
    ) -> Any:
        """Up to ``max_messages`` (and ``max_bytes`` of payload) as a ``pyarrow.RecordBatch``
        (an empty one after ``timeout`` seconds; None: wait forever), the ``columns`` named
        (None: all). As :meth:`streamwire.Consumer.receive_arrow`, awaited."""
        return await self._get(_ARROW, max_messages, timeout, columns, max_bytes)

    def has_reached_end_of_topic(self) -> bool:
        """As :meth:`streamwire.Consumer.has_reached_end_of_topic` (never waits)."""
        return self._native.has_reached_end_of_topic()

    async def seek(self, target: Union[MessageId, Message, int]) -> None:
        """As :meth:`streamwire.Consumer.seek`, awaited; messages held for the next receive
        (handed back by cancelled receives) are dropped.

        Args:
            target: a ``MessageId`` (or a ``Message``), or a publish time in ms since the
                epoch (0: the beginning).
        """
        fut = self._native._aseek(target)
        # Only once the seek is under way (a bad target raised above and changed nothing).
        self._held.clear()
        await fut

    async def get_last_message_id(self) -> MessageId:
        """As :meth:`streamwire.Consumer.get_last_message_id`, awaited."""
        mid: MessageId = await self._native._aget_last_message_id()
        return mid

    async def close(self) -> None:
        """As :meth:`streamwire.Consumer.close`, awaited. Idempotent."""
        await self._native._aclose()

    def __aiter__(self: _R) -> _R:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self._one()
        except StreamwireError:
            if self._native.has_reached_end_of_topic() and not len(self._held):
                raise StopAsyncIteration from None
            raise


class Consumer(_Receiving):
    """A subscription's consumer for coroutines; ``async for`` yields messages.

    Args:
        native: the engine's consumer; made by :meth:`Client.subscribe`, not by callers.
    """

    def __init__(self, native: _native.Consumer) -> None:
        super().__init__(native._areceive)
        self._native: _native.Consumer = native

    @property
    def subscription_name(self) -> str:
        """The subscription's name."""
        return self._native.subscription_name

    receive = _Receiving._one
    receive_many = _Receiving._many
    receive_arrow = _Receiving._arrow

    async def acknowledge(self, message: _AckTarget, *, txn: Optional[Transaction] = None) -> None:
        """Acknowledge the ``message``: a Message, a MessageId, or a list of them.

        Args:
            message: a Message, a MessageId, or a list/tuple of them.
            txn: a :class:`Transaction`: the ack is sent at once and awaited, and takes
                effect when the transaction commits. Default None: grouped, never waits.
        """
        if txn is None:
            self._native.acknowledge(message)
            return
        await self._native._aacknowledge_txn(message, _native_txn(txn), False)

    async def acknowledge_cumulative(
        self, message: Union[Message, MessageId], *, txn: Optional[Transaction] = None
    ) -> None:
        """Acknowledge ``message`` and every earlier one (not on shared subscriptions).

        Args:
            message: a Message or a MessageId.
            txn: a :class:`Transaction`, as for :meth:`acknowledge`. Default None.
        """
        if txn is None:
            self._native.acknowledge_cumulative(message)
            return
        await self._native._aacknowledge_txn(message, _native_txn(txn), True)

    async def negative_acknowledge(self, message: _AckTarget) -> None:
        """Have ``message`` (or each of a list) redelivered after the consumer's
        ``negative_ack_redelivery_delay``."""
        self._native.negative_acknowledge(message)

    async def unsubscribe(self) -> None:
        """As :meth:`streamwire.Consumer.unsubscribe`, awaited."""
        await self._native._aunsubscribe()

    async def reconsume_later(
        self,
        message: Message,
        delay: Union[float, datetime.timedelta] = 0.0,
        properties: Optional[Mapping[str, str]] = None,
    ) -> None:
        """As :meth:`streamwire.Consumer.reconsume_later`, awaited."""
        await self._native._areconsume_later(message, delay, properties)

    async def redeliver_unacknowledged_messages(self) -> None:
        """As :meth:`streamwire.Consumer.redeliver_unacknowledged_messages`, awaited."""
        await self._native._aredeliver_unacknowledged_messages()

    async def get_last_message_ids(self) -> list[MessageId]:
        """As :meth:`streamwire.Consumer.get_last_message_ids`, awaited."""
        ids: list[MessageId] = await self._native._aget_last_message_ids()
        return ids

    def stats(self) -> dict[str, Any]:
        """Local counters, as ``streamwire.Consumer.stats()``."""
        return self._native.stats()


class Reader(_Receiving):
    """A reader for coroutines; ``async for`` yields messages.

    Args:
        native: the engine's reader; made by :meth:`Client.create_reader`, not by callers.
    """

    def __init__(self, native: _native.Reader) -> None:
        super().__init__(native._aread)
        self._native: _native.Reader = native

    read_next = _Receiving._one
    read_many = _Receiving._many
    read_arrow = _Receiving._arrow

    async def has_message_available(self) -> bool:
        """As :meth:`streamwire.Reader.has_message_available`, awaited."""
        got: bool = await self._native._ahas_message_available()
        return got


_TableViewCallback = Callable[[str, Any], object]


class TableView(_Closing):
    """A topic as a map from key to latest value, for coroutines (as
    :class:`streamwire.TableView`). Reads never wait (the map is in the engine, kept
    current by its own task), so they are plain methods; only ``close`` is awaited.
    Listener callbacks run on the view's listener thread, not on the event loop: a callback
    that touches the loop's objects hands over with ``loop.call_soon_threadsafe``.

    Args:
        native: the engine's view; made by :meth:`Client.create_table_view`, not by callers.
    """

    def __init__(self, native: _native.TableView) -> None:
        self._native: _native.TableView = native

    @property
    def topic(self) -> str:
        """The topic the view reads."""
        return self._native.topic

    def get(self, key: str) -> Optional[Any]:
        """As :meth:`streamwire.TableView.get`."""
        return self._native.get(key)

    def keys(self) -> list[str]:
        """As :meth:`streamwire.TableView.keys`."""
        return self._native.keys()

    def values(self) -> list[Any]:
        """As :meth:`streamwire.TableView.values`."""
        return self._native.values()

    def items(self) -> list[tuple[str, Any]]:
        """As :meth:`streamwire.TableView.items`."""
        return self._native.items()

    def for_each(self, callback: _TableViewCallback) -> None:
        """As :meth:`streamwire.TableView.for_each` (in the calling thread)."""
        self._native.for_each(callback)

    def for_each_and_listen(self, callback: _TableViewCallback) -> None:
        """As :meth:`streamwire.TableView.for_each_and_listen`: the existing entries in the
        calling thread, later changes on the view's listener thread."""
        self._native.for_each_and_listen(callback)

    def listen(self, callback: _TableViewCallback) -> None:
        """As :meth:`streamwire.TableView.listen` (on the view's listener thread)."""
        self._native.listen(callback)

    def __len__(self) -> int:
        return len(self._native)

    def __contains__(self, key: object) -> bool:
        return key in self._native

    def __iter__(self) -> Iterator[str]:
        return iter(self._native)

    async def close(self) -> None:
        """Stop following the topic; later reads raise ``AlreadyClosedError``. Idempotent."""
        await self._native._aclose()
