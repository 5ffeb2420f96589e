"""asyncio face of the TANK client: ``Client``, ``Producer``, ``Consumer``.

The same options and errors as :mod:`streamwire.tank` (the checks are shared); every wait is
an ``asyncio.Future`` the engine resolves straight into the running loop. A send is handed
over when ``send()`` is called, so sends keep their call order per producer (also when
gathered), and a full memory budget waits without blocking the loop. Cancelling a pending
receive loses no message: whatever the engine handed out for it is kept for the next one.

>>> from streamwire.aio import tank
>>> async def main() -> None:                                    # doctest: +SKIP
...     async with tank.Client("tank://127.0.0.1:11011") as client:
...         producer = await client.create_producer("events")
...         await producer.send(b"hello", key=b"user-1")
...         consumer = await client.create_consumer("events", start="earliest")
...         async for message in consumer:
...             print(message.value)
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Literal, Optional, Union

from streamwire import _native
from streamwire._native import TankMessage as Message
from streamwire.exceptions import AlreadyClosedError, OperationTimeoutError
from streamwire.tank import PartitionInfo, Start, TopicInfo, _config_text

__all__ = ["Client", "Consumer", "Message", "Producer"]

_ONE, _MANY, _ARROW = 0, 1, 2


class Client:
    """A connection to one TANK broker for coroutines (``tank://host[:port]``).

    Args:
        service_url: ``tank://host[:port]``.
        operation_timeout: seconds a broker request may take. Default 30.0.
        connection_timeout: seconds to open a connection. Default 10.0.
        memory_limit: bytes of payload that may be pending in all of this client's producers
            together (0: unlimited). Default 64 MiB.

    Raises:
        ConfigError: a bad option or URL.
    """

    def __init__(
        self,
        service_url: str,
        *,
        operation_timeout: float = 30.0,
        connection_timeout: float = 10.0,
        memory_limit: int = 64 * 1024 * 1024,
    ) -> None:
        self._native = _native.TankClient(
            service_url,
            operation_timeout=operation_timeout,
            connection_timeout=connection_timeout,
            memory_limit=memory_limit,
        )

    @property
    def service_url(self) -> str:
        """The service URL this client was created with."""
        return self._native.service_url

    async def create_topic(
        self,
        topic: str,
        partitions: int = 1,
        config: Union[str, Mapping[str, Any], None] = None,
    ) -> None:
        """Create ``topic`` (as ``streamwire.tank.Client.create_topic``, in a worker thread).

        Args:
            topic: the topic name (1 to 64 bytes).
            partitions: the number of partitions (1 to 65535). Default 1.
            config: the topic's configuration: ``key=value`` lines, or a mapping. Default None.
        """
        text = _config_text(config)
        await asyncio.to_thread(self._native.create_topic, topic, partitions, text)

    async def partitions(self, topic: str) -> list[PartitionInfo]:
        """First available and high-water sequence numbers of each partition of ``topic``.

        Args:
            topic: the topic name.
        """
        rows = await asyncio.to_thread(self._native.partitions, topic)
        return [PartitionInfo(*p) for p in rows]

    async def topics(self) -> list[TopicInfo]:
        """Every topic the broker has."""
        rows = await asyncio.to_thread(self._native.topics)
        return [TopicInfo(*t) for t in rows]

    async def create_producer(
        self,
        topic: str,
        *,
        batch_max_messages: int = 1000,
        batch_max_bytes: int = 128 * 1024,
        batch_delay: float = 0.001,
        compression: Optional[Literal["snappy", "auto"]] = None,
        max_in_flight: int = 32,
        send_timeout: float = 30.0,
        block_if_queue_full: bool = True,
    ) -> Producer:
        """A producer for ``topic`` (which must exist); options as for
        ``streamwire.tank.Client.create_producer``.

        Args:
            topic: the topic to produce to.
            batch_max_messages: messages per bundle at most. Default 1000.
            batch_max_bytes: bytes per bundle at most. Default 128 KiB.
            batch_delay: seconds a bundle waits for more messages. Default 0.001.
            compression: None, ``"snappy"`` or ``"auto"``. Default None.
            max_in_flight: bundles sent and not yet acknowledged, at most. Default 32.
            send_timeout: seconds a message may wait for its acknowledgement. Default 30.0.
            block_if_queue_full: wait (True) or raise ``ProducerQueueFullError`` (False)
                when the client's memory budget is full. Default True.
        """
        native: _native.TankAioProducer = await self._native._acreate_producer(
            topic,
            batch_max_messages=batch_max_messages,
            batch_max_bytes=batch_max_bytes,
            batch_delay=batch_delay,
            compression=compression,
            max_in_flight=max_in_flight,
            send_timeout=send_timeout,
            block_if_queue_full=block_if_queue_full,
        )
        return Producer(native)

    async def create_consumer(
        self,
        topic: str,
        *,
        partitions: Optional[list[int]] = None,
        start: Start = "earliest",
        max_wait: float = 1.0,
        min_bytes: int = 0,
        fetch_size: int = 1024 * 1024,
        max_fetch_size: int = 64 * 1024 * 1024,
        queue_bytes: int = 32 * 1024 * 1024,
        on_out_of_range: Literal["error", "earliest", "latest"] = "error",
    ) -> Consumer:
        """A consumer of ``topic``; options as for ``streamwire.tank.Client.create_consumer``.

        Args:
            topic: the topic to read.
            partitions: the partitions to read. Default None: all.
            start: ``"earliest"``, ``"latest"`` or ``{partition: seq}``. Default
                ``"earliest"``.
            max_wait: seconds the broker holds a request at the tail. Default 1.0.
            min_bytes: bytes the broker waits for before answering. Default 0.
            fetch_size: bytes asked for per partition. Default 1 MiB.
            max_fetch_size: the most ``fetch_size`` grows to. Default 64 MiB.
            queue_bytes: bytes read ahead at most. Default 32 MiB.
            on_out_of_range: ``"error"``, ``"earliest"`` or ``"latest"``. Default ``"error"``.
        """
        native: _native.TankAioConsumer = await self._native._acreate_consumer(
            topic,
            partitions=partitions,
            start=start if isinstance(start, str) or start is None else dict(start),
            max_wait=max_wait,
            min_bytes=min_bytes,
            fetch_size=fetch_size,
            max_fetch_size=max_fetch_size,
            queue_bytes=queue_bytes,
            on_out_of_range=on_out_of_range,
        )
        return Consumer(native)

    def metrics(self) -> dict[str, Any]:
        """This client's metrics and its producers' and consumers' totals."""
        return self._native.metrics()

    async def close(self) -> None:
        """Close the connection; later calls raise ``AlreadyClosedError``. Idempotent."""
        await asyncio.to_thread(self._native.close)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __reduce__(self) -> Any:
        raise TypeError(
            "a live streamwire TANK Client cannot be pickled or sent to another process; "
            "pass a streamwire.tank.ClientConfig and create the client inside the worker"
        )

    def __repr__(self) -> str:
        return "<streamwire.aio" + repr(self._native)[len("<streamwire") :]


class Producer:
    """A TANK producer for coroutines; ``send`` hands the message over at once.

    Args:
        native: the engine's producer; made by :meth:`Client.create_producer`, not by
            callers.
    """

    def __init__(self, native: _native.TankAioProducer) -> None:
        self._native = native

    @property
    def topic(self) -> str:
        """The topic this producer writes to."""
        return self._native.topic

    @property
    def partitions(self) -> int:
        """The topic's number of partitions."""
        return self._native.partitions

    @property
    def pending(self) -> int:
        """Messages handed over and not yet acknowledged or failed."""
        return self._native.pending

    def send(
        self,
        value: Any,
        *,
        key: Union[bytes, str, None] = None,
        partition: Optional[int] = None,
        timestamp: Optional[int] = None,
    ) -> asyncio.Future[None]:
        """Hand one message over now; the future resolves to None once the broker
        acknowledged it. Cancelling the future does not unsend the message.

        Args:
            value: the payload (bytes-like, or str sent as UTF-8).
            key: bytes or str; routes to ``fnv1a_32(key) % partitions`` unless ``partition``
                is given. Default None: round-robin.
            partition: send to this partition. Default None.
            timestamp: milliseconds since the epoch. Default None: now.
        """
        fut: asyncio.Future[None] = self._native._asend(
            value, key, partition=partition, timestamp=timestamp
        )
        return fut

    def send_many(
        self,
        values: Any,
        *,
        keys: Any = None,
        timestamps: Any = None,
        partition: Optional[int] = None,
    ) -> asyncio.Future[int]:
        """Hand many messages over (after every earlier send); resolves to their count once
        all are acknowledged.

        Args:
            values: the payloads (a list of bytes/str, or a pyarrow binary/string array).
            keys: one key (bytes, str or None) per value. Default None.
            timestamps: one time in ms since the epoch (or None: now) per value. Default None.
            partition: send every message to this partition. Default None.
        """
        fut: asyncio.Future[int] = self._native._asend_many(
            values, keys=keys, timestamps=timestamps, partition=partition
        )
        return fut

    async def flush(self) -> None:
        """Wait until every message sent so far is acknowledged; raises the first failure
        since the last flush."""
        await self._native._aflush()

    async def close(self) -> None:
        """Flush, then close; later sends raise ``AlreadyClosedError``. Idempotent."""
        await self._native._aclose()

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __reduce__(self) -> Any:
        return self._native.__reduce__()

    def __repr__(self) -> str:
        return repr(self._native)


class Consumer:
    """A TANK consumer for coroutines; ``async for`` yields messages as they arrive.

    Args:
        native: the engine's consumer; made by :meth:`Client.create_consumer`, not by
            callers.
    """

    def __init__(self, native: _native.TankAioConsumer) -> None:
        self._native = native

    @property
    def topic(self) -> str:
        """The topic this consumer reads."""
        return self._native.topic

    @property
    def partitions(self) -> list[int]:
        """The partitions this consumer reads."""
        return self._native.partitions

    @property
    def queued(self) -> int:
        """Messages read ahead and not yet taken."""
        return self._native.queued

    async def _get(
        self, kind: int, max_messages: int, timeout: Optional[float], columns: Optional[list[str]]
    ) -> Any:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        left = timeout
        while True:
            await self._native._await_messages(max_messages, left, columns)
            # No await between the wake-up and the take: a cancelled receive took nothing.
            got = self._native._take(kind, max_messages, columns)
            empty = (
                got is None if kind == _ONE else (got.num_rows == 0 if kind == _ARROW else not got)
            )
            if not empty:
                return got
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    if kind == _ONE:
                        raise OperationTimeoutError("no message arrived before the timeout")
                    return got

    async def receive(self, timeout: Optional[float] = None) -> Message:
        """The next message; ``OperationTimeoutError`` when ``timeout`` passes first.

        Args:
            timeout: seconds to wait at most; None waits forever. Default None.
        """
        msg: Message = await self._get(_ONE, 1, timeout, None)
        return msg

    async def receive_many(
        self, max_messages: int = 1000, timeout: Optional[float] = None
    ) -> list[Message]:
        """Up to ``max_messages`` messages once at least one is there (``[]`` after
        ``timeout``).

        Args:
            max_messages: the most messages to return. Default 1000.
            timeout: seconds to wait for the first message; None waits forever. Default None.
        """
        msgs: list[Message] = await self._get(_MANY, max_messages, timeout, None)
        return msgs

    async def receive_arrow(
        self,
        max_messages: int = 10_000,
        timeout: Optional[float] = None,
        columns: Optional[list[str]] = None,
    ) -> Any:
        """Like :meth:`receive_many`, as a ``pyarrow.RecordBatch``.

        Args:
            max_messages: the most messages (rows) to return. Default 10,000.
            timeout: seconds to wait for the first message (then an empty batch); None waits
                forever. Default None.
            columns: the column names wanted, in order (value, key, timestamp, topic,
                partition, seq). Default None: all.
        """
        return await self._get(_ARROW, max_messages, timeout, columns)

    def seek(self, partition: int, seq: int) -> None:
        """Continue ``partition`` from ``seq`` (0: its first available message).

        Args:
            partition: one of this consumer's partitions.
            seq: the sequence number of the next message to read.
        """
        self._native.seek(partition, seq)

    def positions(self) -> dict[int, int]:
        """``{partition: next seq}`` not yet taken: pass it back as ``start=`` to resume."""
        return self._native.positions()

    async def close(self) -> None:
        """Stop reading; later calls raise ``AlreadyClosedError``. Idempotent."""
        self._native.close()

    def __aiter__(self) -> Consumer:
        return self

    async def __anext__(self) -> Message:
        if self._native.closed:
            raise StopAsyncIteration
        try:
            return await self.receive()
        except AlreadyClosedError:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __reduce__(self) -> Any:
        return self._native.__reduce__()

    def __repr__(self) -> str:
        return repr(self._native)
