"""asyncio face of the TANK client: ``Client``, ``Producer``, ``Consumer``.

The same native objects as :mod:`streamwire.tank` (one class serves both faces), so the same
options, checks and errors; every wait is an ``asyncio.Future`` the engine resolves straight
into the running loop (no thread per call). A send is handed over when ``send()`` is
called, so sends keep their call order per producer (also when gathered), and a full memory
budget waits without blocking the loop. Cancelling a pending receive loses no message:
whatever the engine handed out for it is kept for the next one.

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

import abc
import asyncio
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Generic, Literal, Optional, TypeVar, Union

from streamwire import _native
from streamwire._native import TankMessage as Message
from streamwire.exceptions import AlreadyClosedError, OperationTimeoutError
from streamwire.tank import PartitionInfo, Start, TopicInfo, _ClientBase, _config_text, _start

__all__ = ["Client", "Consumer", "Message", "Producer"]

_ONE, _MANY, _ARROW = 0, 1, 2

_N = TypeVar("_N", _native.TankProducer, _native.TankConsumer)
_C = TypeVar("_C", bound="_Closing")


class _Closing(abc.ABC):
    """``async with``: closes on exit (every asyncio TANK object)."""

    __slots__ = ()

    @abc.abstractmethod
    async def close(self) -> None:
        """Close (each class says what that means)."""

    async def __aenter__(self: _C) -> _C:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()


class Client(_ClientBase, _Closing):
    """A connection to one TANK broker for coroutines (``tank://host[:port]``).

    Args:
        service_url, operation_timeout, connection_timeout, memory_limit: as for
            :class:`streamwire.tank.Client`.

    Raises:
        ConfigError: a bad option or URL.
    """

    __slots__ = ()
    _FACE = "streamwire.aio.tank"

    async def create_topic(
        self,
        topic: str,
        partitions: int = 1,
        config: Union[str, Mapping[str, Any], None] = None,
    ) -> None:
        """As :meth:`streamwire.tank.Client.create_topic`, awaited."""
        await self._native._acreate_topic(topic, partitions, _config_text(config))

    async def partitions(self, topic: str) -> list[PartitionInfo]:
        """As :meth:`streamwire.tank.Client.partitions`, awaited."""
        return [PartitionInfo(*p) for p in await self._native._apartitions(topic)]

    async def topics(self) -> list[TopicInfo]:
        """As :meth:`streamwire.tank.Client.topics`, awaited."""
        return [TopicInfo(*t) for t in await self._native._atopics()]

    async def status(self) -> dict[str, int]:
        """As :meth:`streamwire.tank.Client.status`, awaited."""
        return await self._native._astatus()

    async def reload_config(self, topic: str, partition: int) -> None:
        """As :meth:`streamwire.tank.Client.reload_config`, awaited."""
        await self._native._areload_config(topic, partition)

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
        """As :meth:`streamwire.tank.Client.create_producer`, awaited."""
        native = await self._native._acreate_producer(
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
        """As :meth:`streamwire.tank.Client.create_consumer`, awaited."""
        native = await self._native._acreate_consumer(
            topic,
            partitions=partitions,
            start=_start(start),
            max_wait=max_wait,
            min_bytes=min_bytes,
            fetch_size=fetch_size,
            max_fetch_size=max_fetch_size,
            queue_bytes=queue_bytes,
            on_out_of_range=on_out_of_range,
        )
        return Consumer(native)

    async def close(self) -> None:
        """As :meth:`streamwire.tank.Client.close`, awaited. Idempotent."""
        await self._native._aclose()


class _Wrapper(_Closing, Generic[_N]):
    """The asyncio face of a native producer or consumer: the same object the blocking face
    uses, its pickling refusal and its repr."""

    __slots__ = ("_native",)

    def __init__(self, native: _N) -> None:
        self._native: _N = native

    @property
    def topic(self) -> str:
        """The topic this producer writes to / this consumer reads."""
        return self._native.topic

    def metrics(self) -> dict[str, Any]:
        """This object's metrics, as the blocking face's ``metrics()`` (never waits)."""
        return self._native.metrics()

    def __reduce__(self) -> Any:
        return self._native.__reduce__()

    def __repr__(self) -> str:
        return "<streamwire.aio" + repr(self._native)[len("<streamwire") :]


class Producer(_Wrapper[_native.TankProducer]):
    """A TANK producer for coroutines (over the ``native`` one that
    :meth:`Client.create_producer` makes); ``send`` hands the message over at once."""

    __slots__ = ()

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
        """As :meth:`streamwire.tank.Producer.send`, as a future: the message is handed over
        now (in call order); cancelling the future does not unsend it."""
        return self._native._asend(value, key, partition=partition, timestamp=timestamp)

    def send_many(
        self,
        values: Any,
        *,
        keys: Any = None,
        timestamps: Any = None,
        partition: Optional[int] = None,
    ) -> asyncio.Future[int]:
        """As :meth:`streamwire.tank.Producer.send_many`, as a future handed over now (after
        every earlier send), resolving to the count."""
        return self._native._asend_many(
            values, keys=keys, timestamps=timestamps, partition=partition
        )

    async def flush(self) -> None:
        """As :meth:`streamwire.tank.Producer.flush`, awaited."""
        await self._native._aflush()

    async def close(self) -> None:
        """As :meth:`streamwire.tank.Producer.close`, awaited. Idempotent."""
        await self._native._aclose()


class Consumer(_Wrapper[_native.TankConsumer]):
    """A TANK consumer for coroutines (over the ``native`` one that
    :meth:`Client.create_consumer` makes); ``async for`` yields messages as they arrive."""

    __slots__ = ()

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
        """As :meth:`streamwire.tank.Consumer.receive`, awaited."""
        msg: Message = await self._get(_ONE, 1, timeout, None)
        return msg

    async def receive_many(
        self, max_messages: int = 1000, timeout: Optional[float] = None
    ) -> list[Message]:
        """As :meth:`streamwire.tank.Consumer.receive_many`, awaited."""
        msgs: list[Message] = await self._get(_MANY, max_messages, timeout, None)
        return msgs

    async def receive_arrow(
        self,
        max_messages: int = 10_000,
        timeout: Optional[float] = None,
        columns: Optional[list[str]] = None,
    ) -> Any:
        """As :meth:`streamwire.tank.Consumer.receive_arrow`, awaited."""
        return await self._get(_ARROW, max_messages, timeout, columns)

    def seek(self, partition: int, seq: int) -> None:
        """As :meth:`streamwire.tank.Consumer.seek` (never waits)."""
        self._native.seek(partition, seq)

    def positions(self) -> dict[int, int]:
        """As :meth:`streamwire.tank.Consumer.positions` (never waits)."""
        return self._native.positions()

    async def close(self) -> None:
        """As :meth:`streamwire.tank.Consumer.close`. Idempotent."""
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
