"""asyncio face of the Pravega client: ``Client``, ``Writer``, ``Reader``.

The same options and errors as :mod:`streamwire.pravega` (the checks are shared). Writes and
reads are ``asyncio.Future``\\ s the engine resolves straight into the running loop; a write
is handed over when ``write()`` is called, so writes keep their call order per writer (also
when gathered), and a full memory budget waits without blocking the loop. Cancelling a
pending read loses no event: the engine read runs to its end and its events are kept for the
next read (and counted as unread by ``position()``). The controller calls run the blocking
client's calls in a worker thread.

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

import asyncio
import functools
from types import TracebackType
from typing import Any, Optional, Union

from streamwire import _native
from streamwire._native import PravegaEvent as Event
from streamwire.exceptions import AlreadyClosedError
from streamwire.pravega import (
    UNCHANGED,
    Retention,
    Scaling,
    SegmentInfo,
    Start,
    StreamConfig,
    StreamCut,
)
from streamwire.pravega import Client as _BlockingClient
from streamwire.pravega.admin import Unchanged

__all__ = ["Client", "Event", "Reader", "Writer"]

_ONE, _MANY, _ARROW = 0, 1, 2


class Client:
    """A connection to a Pravega controller for coroutines (``tcp://host:port``).

    Args:
        controller_uri: ``tcp://host:port`` of the controller.
        timeout: seconds a controller or segment-store request may take. Default 30.0.
        connection_timeout: seconds to open a connection. Default 10.0.
        memory_limit: bytes of events that may be pending in all of this client's writers
            together (0: unlimited). Default 64 MiB.
    """

    def __init__(
        self,
        controller_uri: str,
        *,
        timeout: float = 30.0,
        connection_timeout: float = 10.0,
        memory_limit: int = 64 * 1024 * 1024,
    ) -> None:
        self._blocking = _BlockingClient(
            controller_uri,
            timeout=timeout,
            connection_timeout=connection_timeout,
            memory_limit=memory_limit,
        )
        self._native = self._blocking._native

    @property
    def controller_uri(self) -> str:
        """The controller URI this client was created with."""
        return self._native.controller_uri

    async def create_scope(self, scope: str) -> bool:
        """Create a scope; False when it existed.

        Args:
            scope: the scope name.
        """
        return await asyncio.to_thread(self._blocking.create_scope, scope)

    async def scope_exists(self, scope: str) -> bool:
        """Whether ``scope`` exists.

        Args:
            scope: the scope name.
        """
        return await asyncio.to_thread(self._blocking.scope_exists, scope)

    async def delete_scope(self, scope: str) -> bool:
        """Delete an empty scope; False when there was none.

        Args:
            scope: the scope name.
        """
        return await asyncio.to_thread(self._blocking.delete_scope, scope)

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
        """Create a stream; False when it existed (as ``streamwire.pravega.Client``).

        Args:
            scope: the scope (which must exist).
            stream: the stream name.
            segments: the number of segments. Default 1.
            scaling: an auto-scaling policy. Default None: a fixed number of segments.
            retention: a :class:`~streamwire.pravega.Retention` policy. Default None.
            tags: tags to find the stream by. Default None.
        """
        return await asyncio.to_thread(
            functools.partial(
                self._blocking.create_stream,
                scope,
                stream,
                segments,
                scaling,
                retention=retention,
                tags=tags,
            )
        )

    async def stream_config(self, scope: str, stream: str) -> StreamConfig:
        """The configuration of the ``stream`` of ``scope`` (as
        ``streamwire.pravega.Client.stream_config``).

        Args:
            scope: the scope name.
            stream: the stream name.
        """
        return await asyncio.to_thread(self._blocking.stream_config, scope, stream)

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
        """Change the stream's configuration; what is not given is kept (as
        ``streamwire.pravega.Client.update_stream``). Returns the new configuration.

        Args:
            scope: the scope name.
            stream: the stream name.
            segments: the number of segments (the minimum with auto-scaling).
            scaling: an auto-scaling policy, or None for a fixed number of segments.
            retention: a retention policy, or None to remove it.
            tags: the stream's tags (replacing the old ones).
        """
        return await asyncio.to_thread(
            functools.partial(
                self._blocking.update_stream,
                scope,
                stream,
                segments=segments,
                scaling=scaling,
                retention=retention,
                tags=tags,
            )
        )

    async def stream_tags(self, scope: str, stream: str) -> list[str]:
        """The tags of the ``stream`` of ``scope``.

        Args:
            scope: the scope name.
            stream: the stream name.
        """
        return await asyncio.to_thread(self._blocking.stream_tags, scope, stream)

    async def truncate_stream(self, scope: str, stream: str, cut: StreamCut) -> None:
        """Drop the stream's events before ``cut`` (as
        ``streamwire.pravega.Client.truncate_stream``).

        Args:
            scope: the scope name.
            stream: the stream name.
            cut: a :class:`~streamwire.pravega.StreamCut` of this stream.
        """
        await asyncio.to_thread(self._blocking.truncate_stream, scope, stream, cut)

    async def scopes(self) -> list[str]:
        """The names of every scope."""
        return await asyncio.to_thread(self._blocking.scopes)

    async def stream_exists(self, scope: str, stream: str) -> bool:
        """Whether ``stream`` exists in ``scope``.

        Args:
            scope: the scope name.
            stream: the stream name.
        """
        return await asyncio.to_thread(self._blocking.stream_exists, scope, stream)

    async def streams(self, scope: str, tag: Optional[str] = None) -> list[str]:
        """The names of the scope's streams; with ``tag``, only those carrying it.

        Args:
            scope: the scope name.
            tag: a tag to select by. Default None: every stream.
        """
        return await asyncio.to_thread(self._blocking.streams, scope, tag)

    async def seal_stream(self, scope: str, stream: str) -> None:
        """Seal the ``stream`` of ``scope``: no more writes; readers read to its end.

        Args:
            scope: the scope name.
            stream: the stream name.
        """
        await asyncio.to_thread(self._blocking.seal_stream, scope, stream)

    async def delete_stream(self, scope: str, stream: str) -> bool:
        """Delete the sealed ``stream`` of ``scope``; False when there was none.

        Args:
            scope: the scope name.
            stream: the stream name.
        """
        return await asyncio.to_thread(self._blocking.delete_stream, scope, stream)

    async def segments(self, scope: str, stream: str) -> list[SegmentInfo]:
        """The open segments of the ``stream`` of ``scope``, in key order.

        Args:
            scope: the scope name.
            stream: the stream name.
        """
        return await asyncio.to_thread(self._blocking.segments, scope, stream)

    async def head(self, scope: str, stream: str) -> StreamCut:
        """The stream cut at the oldest events the stream holds.

        Args:
            scope: the scope name.
            stream: the stream name.
        """
        return await asyncio.to_thread(self._blocking.head, scope, stream)

    async def tail(self, scope: str, stream: str) -> StreamCut:
        """The stream cut after the newest event of the stream now.

        Args:
            scope: the scope name.
            stream: the stream name.
        """
        return await asyncio.to_thread(self._blocking.tail, scope, stream)

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
        """A writer to the ``stream`` of ``scope``; options as for
        ``streamwire.pravega.Client.create_writer``.

        Args:
            scope: the stream's scope.
            stream: the stream name.
            block_if_queue_full: when the memory budget is full, wait (True) or raise
                ``ProducerQueueFullError`` (False). Default True.
            max_block: bytes per append block at most. Default 1 MiB.
            window: bytes in flight per segment at most. Default 8 MiB.
            send_timeout: seconds events wait for an unreachable segment store. Default 60.0.
        """
        native: _native.PravegaAioWriter = await self._native._acreate_writer(
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
        """A reader from ``start`` (``"head"``, ``"tail"`` or a :class:`StreamCut`).

        Args:
            scope: the stream's scope.
            stream: the stream name.
            start: where to start. Default ``"head"``.
            read_ahead: chunks fetched ahead of the caller, at most. Default 16.
            read_length: bytes per chunk at most. Default 1 MiB.
        """
        if isinstance(start, StreamCut):
            start_text = start.text
        elif isinstance(start, str):
            start_text = start
        else:
            raise TypeError(
                f"start must be 'head', 'tail' or a StreamCut, not {type(start).__name__}"
            )
        native: _native.PravegaAioReader = await self._native._acreate_reader(
            scope, stream, start_text, read_ahead=read_ahead, read_length=read_length
        )
        return Reader(native)

    async def close(self) -> None:
        """Close the client; later calls raise ``AlreadyClosedError``. Idempotent."""
        self._native.close()

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
        return self._native.__reduce__()

    def __repr__(self) -> str:
        return "<streamwire.aio" + repr(self._native)[len("<streamwire") :]


class Writer:
    """A Pravega writer for coroutines; ``write`` hands the event over at once.

    Args:
        native: the engine's writer; made by :meth:`Client.create_writer`, not by callers.
    """

    def __init__(self, native: _native.PravegaAioWriter) -> None:
        self._native = native

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

    def write(self, event: Any, routing_key: Optional[str] = None) -> asyncio.Future[None]:
        """Hand one event over now; the future resolves to None once the segment store holds
        it. Cancelling the future does not unwrite the event.

        Args:
            event: the payload (bytes-like, or str sent as UTF-8).
            routing_key: events with the same key go to the same segment, in order.
                Default None: any segment.
        """
        fut: asyncio.Future[None] = self._native._awrite(event, routing_key)
        return fut

    def write_many(self, events: Any, routing_keys: Any = None) -> asyncio.Future[int]:
        """Hand many events over (after every earlier write); resolves to their count once
        all are written.

        Args:
            events: the payloads (a list of bytes/str, or a pyarrow binary/string array).
            routing_keys: one str for every event, or one str/None per event. Default None.
        """
        fut: asyncio.Future[int] = self._native._awrite_many(events, routing_keys)
        return fut

    async def flush(self) -> None:
        """Wait until every event handed over is written; raises the first failure since
        the last flush."""
        await self._native._aflush()

    async def close(self) -> None:
        """Write what is pending, then close. Idempotent."""
        await self._native._aclose()

    @property
    def closed(self) -> bool:
        """Whether the writer is closed."""
        return self._native.closed

    async def __aenter__(self) -> Writer:
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


class Reader:
    """A Pravega reader for coroutines; ``async for`` yields events until a sealed stream
    ends.

    Args:
        native: the engine's reader; made by :meth:`Client.create_reader`, not by callers.
    """

    def __init__(self, native: _native.PravegaAioReader) -> None:
        self._native = native

    @property
    def stream(self) -> str:
        """The stream read, as ``scope/stream``."""
        return self._native.stream

    @property
    def at_end(self) -> bool:
        """True once a sealed stream has been read to its end."""
        return self._native.at_end

    @property
    def closed(self) -> bool:
        """Whether the reader is closed."""
        return self._native.closed

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
        """The next event, or None when none arrived in time (or a sealed stream ended).

        Args:
            timeout: seconds to wait at most; None waits forever. Default None.
        """
        event: Optional[Event] = await self._get(_ONE, 1, timeout, None)
        return event

    async def read_many(
        self, max_events: int = 1000, timeout: Optional[float] = None
    ) -> list[Event]:
        """Up to ``max_events`` events once at least one is there (``[]`` after ``timeout``).

        Args:
            max_events: the most events to return. Default 1000.
            timeout: seconds to wait for the first event; None waits forever. Default None.
        """
        events: list[Event] = await self._get(_MANY, max_events, timeout, None)
        return events

    async def read_arrow(
        self,
        max_events: int = 10_000,
        timeout: Optional[float] = None,
        columns: Optional[list[str]] = None,
    ) -> Any:
        """Like :meth:`read_many`, as a ``pyarrow.RecordBatch``.

        Args:
            max_events: the most events (rows) to return. Default 10,000.
            timeout: seconds to wait for the first event (then an empty batch); None waits
                forever. Default None.
            columns: a subset of ``value``, ``stream``, ``segment``, ``offset``, in the order
                wanted. Default None: all.
        """
        return await self._get(_ARROW, max_events, timeout, columns)

    async def position(self) -> StreamCut:
        """The :class:`StreamCut` after the last event taken (pass it as ``start``); waits
        for a read in progress to end."""
        text: str = await self._native._aposition()
        return StreamCut(text)

    async def close(self) -> None:
        """Close the reader; a pending read raises ``AlreadyClosedError``. Idempotent."""
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

    async def __aenter__(self) -> Reader:
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
