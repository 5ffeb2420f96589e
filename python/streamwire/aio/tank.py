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

import asyncio
from typing import Any, Generic, Optional, TypeVar, Union

from streamwire import _native
from streamwire._faces import Awaiting
from streamwire._native import TankMessage as Message
from streamwire.aio import _Closing
from streamwire.aio._take import ARROW, MANY, ONE, take_within
from streamwire.exceptions import AlreadyClosedError, OperationTimeoutError
from streamwire.tank import _ClientBase

__all__ = ["Client", "Consumer", "Message", "Producer"]


_N = TypeVar("_N", _native.TankProducer, _native.TankConsumer)


def _never() -> bool:
    """A TANK topic never ends: a receive waits for its whole timeout."""
    return False


class _Wrapper(_Closing, Generic[_N]):
    """The asyncio face of a native producer or consumer: the same object the blocking face
    uses and its pickling refusal (the repr is ``streamwire.aio``'s)."""

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
        native = self._native
        got = await take_within(
            native._await_messages, native._take, kind, max_messages, timeout, columns, _never
        )
        if kind == ONE and got is None:
            raise OperationTimeoutError("no message arrived before the timeout")
        return got

    async def receive(self, timeout: Optional[float] = None) -> Message:
        """As :meth:`streamwire.tank.Consumer.receive`, awaited."""
        msg: Message = await self._get(ONE, 1, timeout, None)
        return msg

    async def receive_many(
        self, max_messages: int = 1000, timeout: Optional[float] = None
    ) -> list[Message]:
        """As :meth:`streamwire.tank.Consumer.receive_many`, awaited."""
        msgs: list[Message] = await self._get(MANY, max_messages, timeout, None)
        return msgs

    async def receive_arrow(
        self,
        max_messages: int = 10_000,
        timeout: Optional[float] = None,
        columns: Optional[list[str]] = None,
    ) -> Any:
        """As :meth:`streamwire.tank.Consumer.receive_arrow`, awaited."""
        return await self._get(ARROW, max_messages, timeout, columns)

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


class Client(_ClientBase[Producer, Consumer], Awaiting, _Closing):
    """A connection to one TANK broker for coroutines (``tank://host[:port]``): the calls of
    :class:`streamwire.tank.Client`, each a coroutine here (the same definitions, awaited).

    Args:
        service_url, operation_timeout, connection_timeout, memory_limit: as for
            :class:`streamwire.tank.Client`.

    Raises:
        ConfigError: a bad option or URL.
    """

    __slots__ = ()
    _FACE = "streamwire.aio.tank"

    def _producer(self, native: _native.TankProducer) -> Producer:
        return Producer(native)

    def _consumer(self, native: _native.TankConsumer) -> Consumer:
        return Consumer(native)
