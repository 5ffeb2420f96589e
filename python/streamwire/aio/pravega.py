"""asyncio face of the Pravega client: ``Client``, ``Writer``, ``Reader``.

The same native objects as :mod:`streamwire.pravega` (one class serves both faces), so the
same options, checks and errors; every wait is an ``asyncio.Future`` the engine resolves
straight into the running loop (no thread per call). A write is handed over when
``write()`` is called, so writes keep their call order per writer (also when gathered), and
a full memory budget waits without blocking the loop. Cancelling a pending read loses no
event: the engine read runs to its end and its events are kept for the next read (and
counted as unread by ``position()``).

>>> from streamwire.aio import pravega
>>> async def main() -> None:                                    # doctest: +SKIP
...     async with pravega.Client("tcp://127.0.0.1:9090") as client:
...         await client.create_scope("shop")
...         await client.create_stream("shop", "orders", segments=2)
...         writer = await client.create_writer("shop", "orders")
...         await writer.write(b"order-1", routing_key="customer-7")
...         reader = await client.create_reader("shop", "orders", start="head")
...         event = await reader.read(timeout=5)
"""

from __future__ import annotations

import abc
import asyncio
from types import TracebackType
from typing import Any, Optional, TypeVar, Union

from streamwire import _native
from streamwire._native import PravegaEvent as Event
from streamwire._native import PravegaWriter as _NativeWriter
from streamwire.exceptions import AlreadyClosedError
from streamwire.pravega import (
    UNCHANGED,
    Retention,
    Scaling,
    SegmentInfo,
    Start,
    StreamConfig,
    StreamCut,
    _ClientBase,
    _cut_text,
    _new_stream,
    _ReaderBase,
    _start_text,
    _tag_checked,
    _whole,
    _Wrapped,
)
from streamwire.pravega.admin import Unchanged, config_of, merged

__all__ = ["Client", "Event", "Reader", "Writer"]

_ONE, _MANY, _ARROW = 0, 1, 2
_FACE = "streamwire.aio.pravega"
_C = TypeVar("_C", bound="_Closing")


class _Closing(abc.ABC):
    """``async with``: closes on exit (every asyncio Pravega object)."""

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
    """A connection to a Pravega controller for coroutines (``tcp://host:port``).

    Args:
        controller_uri, timeout, connection_timeout, memory_limit: as for
            :class:`streamwire.pravega.Client`.
    """

    _FACE = _FACE

    async def create_scope(self, scope: str) -> bool:
        """As :meth:`streamwire.pravega.Client.create_scope` (``scope``), awaited."""
        return await self._native._acreate_scope(scope)

    async def scope_exists(self, scope: str) -> bool:
        """As :meth:`streamwire.pravega.Client.scope_exists` (``scope``), awaited."""
        return await self._native._ascope_exists(scope)

    async def delete_scope(self, scope: str) -> bool:
        """As :meth:`streamwire.pravega.Client.delete_scope` (``scope``), awaited."""
        return await self._native._adelete_scope(scope)

    async def create_stream(
        self,
        scope: str,
        stream: str,
        segments: int = 1,
        scaling: Optional[Scaling] = None,
        *,
        retention: Optional[Retention] = None,
        tags: Optional[list[str]] = None,
    ) -> bool:
        """As :meth:`streamwire.pravega.Client.create_stream` (``scope``, ``stream``,
        ``segments``, ``scaling``, ``retention``, ``tags``), awaited."""
        args = _new_stream(segments, scaling, retention, tags)
        return await self._native._acreate_stream(scope, stream, *args)

    async def stream_config(self, scope: str, stream: str) -> StreamConfig:
        """As :meth:`streamwire.pravega.Client.stream_config` (``scope``, ``stream``),
        awaited."""
        return config_of(await self._native._astream_config(scope, stream))

    async def update_stream(
        self,
        scope: str,
        stream: str,
        *,
        segments: Union[int, Unchanged] = UNCHANGED,
        scaling: Union[Scaling, Unchanged, None] = UNCHANGED,
        retention: Union[Retention, Unchanged, None] = UNCHANGED,
        tags: Union[list[str], Unchanged] = UNCHANGED,
    ) -> StreamConfig:
        """As :meth:`streamwire.pravega.Client.update_stream` (``scope``, ``stream``,
        ``segments``, ``scaling``, ``retention``, ``tags``), awaited."""
        current = await self.stream_config(scope, stream)
        new = merged(current, segments, scaling, retention, tags)
        await self._native._aupdate_stream(scope, stream, **_whole(new))
        return new

    async def stream_tags(self, scope: str, stream: str) -> list[str]:
        """As :meth:`streamwire.pravega.Client.stream_tags` (``scope``, ``stream``),
        awaited."""
        return list((await self.stream_config(scope, stream)).tags)

    async def truncate_stream(self, scope: str, stream: str, cut: StreamCut) -> None:
        """As :meth:`streamwire.pravega.Client.truncate_stream` (``scope``, ``stream``,
        ``cut``), awaited."""
        await self._native._atruncate_stream(scope, stream, _cut_text(cut))

    async def scopes(self) -> list[str]:
        """As :meth:`streamwire.pravega.Client.scopes`, awaited."""
        return await self._native._ascopes()

    async def stream_exists(self, scope: str, stream: str) -> bool:
        """As :meth:`streamwire.pravega.Client.stream_exists` (``scope``, ``stream``),
        awaited."""
        return await self._native._astream_exists(scope, stream)

    async def streams(self, scope: str, tag: Optional[str] = None) -> list[str]:
        """As :meth:`streamwire.pravega.Client.streams` (``scope``, ``tag``), awaited."""
        if tag is None:
            return await self._native._astreams(scope)
        return await self._native._astreams_with_tag(scope, _tag_checked(tag))

    async def seal_stream(self, scope: str, stream: str) -> None:
        """As :meth:`streamwire.pravega.Client.seal_stream` (``scope``, ``stream``),
        awaited."""
        await self._native._aseal_stream(scope, stream)

    async def delete_stream(self, scope: str, stream: str) -> bool:
        """As :meth:`streamwire.pravega.Client.delete_stream` (``scope``, ``stream``),
        awaited."""
        return await self._native._adelete_stream(scope, stream)

    async def segments(self, scope: str, stream: str) -> list[SegmentInfo]:
        """As :meth:`streamwire.pravega.Client.segments` (``scope``, ``stream``), awaited."""
        return [SegmentInfo(*s) for s in await self._native._asegments(scope, stream)]

    async def scale_stream(
        self,
        scope: str,
        stream: str,
        sealed: list[int],
        new_ranges: list[tuple[float, float]],
        timeout: Optional[float] = None,
    ) -> None:
        """As :meth:`streamwire.pravega.Client.scale_stream` (``scope``, ``stream``,
        ``sealed``, ``new_ranges``, ``timeout``), awaited."""
        await self._native._ascale_stream(scope, stream, list(sealed), list(new_ranges), timeout)

    async def head(self, scope: str, stream: str) -> StreamCut:
        """As :meth:`streamwire.pravega.Client.head` (``scope``, ``stream``), awaited."""
        return StreamCut(await self._native._astream_cut(scope, stream, "head"))

    async def tail(self, scope: str, stream: str) -> StreamCut:
        """As :meth:`streamwire.pravega.Client.tail` (``scope``, ``stream``), awaited."""
        return StreamCut(await self._native._astream_cut(scope, stream, "tail"))

    async def segment_ranges(
        self, scope: str, stream: str, start: StreamCut, end: StreamCut
    ) -> list[tuple[int, int, int]]:
        """As :meth:`streamwire.pravega.Client.segment_ranges` (``scope``, ``stream``,
        ``start``, ``end``), awaited."""
        return await self._native._asegment_ranges(scope, stream, str(start), str(end))

    async def create_writer(
        self,
        scope: str,
        stream: str,
        *,
        block_if_queue_full: bool = True,
        max_block: int = 1024 * 1024,
        window: int = 8 * 1024 * 1024,
        send_timeout: float = 60.0,
    ) -> Writer:
        """As :meth:`streamwire.pravega.Client.create_writer` (``scope``, ``stream``,
        ``block_if_queue_full``, ``max_block``, ``window``, ``send_timeout``), awaited; a
        full memory budget makes writes wait in the writer's lane, never the loop."""
        native: _NativeWriter = await self._native._acreate_writer(
            scope,
            stream,
            block_if_queue_full=block_if_queue_full,
            max_block=max_block,
            window=window,
            send_timeout=send_timeout,
        )
        return Writer(native)

    async def create_reader(
        self,
        scope: str,
        stream: str,
        start: Start = "head",
        *,
        read_ahead: int = 16,
        read_length: int = 1024 * 1024,
    ) -> Reader:
        """As :meth:`streamwire.pravega.Client.create_reader` (``scope``, ``stream``,
        ``start``, ``read_ahead``, ``read_length``), awaited."""
        native: _native.PravegaReader = await self._native._acreate_reader(
            scope, stream, _start_text(start), read_ahead=read_ahead, read_length=read_length
        )
        return Reader(native)

    async def close(self) -> None:
        """Close the client; later calls raise ``AlreadyClosedError``. Idempotent."""
        self._native.close()


class Writer(_Wrapped[_NativeWriter], _Closing):
    """A Pravega writer for coroutines; ``write`` hands the event over at once.

    Args:
        native: the engine's writer; made by :meth:`Client.create_writer`, not by callers.
    """

    _FACE = _FACE

    @property
    def scope(self) -> str:
        """The stream's scope."""
        return self._native.scope

    @property
    def stream(self) -> str:
        """The stream's name (without the scope)."""
        return self._native.stream

    @property
    def pending(self) -> int:
        """Events handed over and not yet written or failed."""
        return self._native.pending

    @property
    def closed(self) -> bool:
        """Whether the writer is closed."""
        return self._native.closed

    def metrics(self) -> dict[str, Any]:
        """This writer's metrics (docs/observability.md)."""
        return self._native.metrics()

    def write(self, event: Any, routing_key: Optional[str] = None) -> asyncio.Future[None]:
        """As :meth:`streamwire.pravega.Writer.write` (``event``, ``routing_key``), awaited:
        the event is handed over now, in call order; cancelling the future does not unwrite
        it."""
        fut: asyncio.Future[None] = self._native._awrite(event, routing_key)
        return fut

    def write_many(self, events: Any, routing_keys: Any = None) -> asyncio.Future[int]:
        """As :meth:`streamwire.pravega.Writer.write_many` (``events``, ``routing_keys``),
        awaited: handed over after every earlier write; resolves to the count."""
        fut: asyncio.Future[int] = self._native._awrite_many(events, routing_keys)
        return fut

    async def flush(self) -> None:
        """As :meth:`streamwire.pravega.Writer.flush`, awaited (after every earlier write is
        handed over)."""
        await self._native._aflush()

    async def close(self) -> None:
        """As :meth:`streamwire.pravega.Writer.close`, awaited. Idempotent."""
        await self._native._aclose()


class Reader(_ReaderBase, _Closing):
    """A Pravega reader for coroutines; ``async for`` yields events until a sealed stream
    ends.

    Args:
        native: the engine's reader; made by :meth:`Client.create_reader`, not by callers.
    """

    _FACE = _FACE

    async def _get(
        self, kind: int, max_events: int, timeout: Optional[float], columns: Optional[list[str]]
    ) -> Any:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        left = timeout
        while True:
            await self._native._await_events(max_events, left, columns)
            # No await between the wake-up and the take: a cancelled read took nothing.
            got = self._native._take(kind, max_events, columns)
            if kind == _ONE:
                empty = got is None
            elif kind == _ARROW:
                empty = got.num_rows == 0
            else:
                empty = not got
            if not empty or self._native.at_end:
                return got
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    return got

    async def read(self, timeout: Optional[float] = None) -> Optional[Event]:
        """As :meth:`streamwire.pravega.Reader.read` (``timeout``), awaited; cancelling it
        loses no event."""
        event: Optional[Event] = await self._get(_ONE, 1, timeout, None)
        return event

    async def read_many(
        self, max_events: int = 1000, timeout: Optional[float] = None
    ) -> list[Event]:
        """As :meth:`streamwire.pravega.Reader.read_many` (``max_events``, ``timeout``),
        awaited; cancelling it loses no event."""
        events: list[Event] = await self._get(_MANY, max_events, timeout, None)
        return events

    async def read_arrow(
        self,
        max_events: int = 10_000,
        timeout: Optional[float] = None,
        columns: Optional[list[str]] = None,
    ) -> Any:
        """As :meth:`streamwire.pravega.Reader.read_arrow` (``max_events``, ``timeout``,
        ``columns``), awaited; cancelling it loses no event."""
        return await self._get(_ARROW, max_events, timeout, columns)

    async def position(self) -> StreamCut:
        """As :meth:`streamwire.pravega.Reader.position`, awaited (events a cancelled read
        left are counted as unread)."""
        text: str = await self._native._aposition()
        return StreamCut(text)

    async def close(self) -> None:
        """As :meth:`streamwire.pravega.Reader.close`, awaited. Idempotent."""
        await self._native._aclose()

    def __aiter__(self) -> Reader:
        return self

    async def __anext__(self) -> Event:
        while True:
            try:
                event = await self.read()
            except AlreadyClosedError:
                raise StopAsyncIteration from None
            if event is not None:
                return event
            if self._native.at_end:
                raise StopAsyncIteration
