"""asyncio face of the Pravega client: ``Client``, ``Writer``, ``Reader``,
``TransactionalWriter``, ``Transaction``, ``TransactionHandle`` and ``ByteStream``.

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

import asyncio
from types import TracebackType
from typing import Any, Optional, TypeVar

from streamwire import _native
from streamwire._faces import Awaiting
from streamwire._native import PravegaEvent as Event
from streamwire._native import PravegaTransaction as _NativeTxn
from streamwire._native import PravegaTransactionalWriter as _NativeTxnWriter
from streamwire._native import PravegaTransactionHandle as _NativeTxnHandle
from streamwire._native import PravegaWriter as _NativeWriter
from streamwire.aio import _Closing, _Entered
from streamwire.aio._take import ARROW, MANY, ONE, take_within
from streamwire.exceptions import AlreadyClosedError
from streamwire.pravega import _ClientBase, _ReaderBase, _ReaderGroupBase
from streamwire.pravega._types import _Live, _Wrapped
from streamwire.pravega.byte_stream import _ByteStreamBase

__all__ = [
    "ByteStream",
    "Client",
    "Event",
    "Reader",
    "ReaderGroup",
    "Transaction",
    "TransactionHandle",
    "TransactionalWriter",
    "Writer",
]

_FACE = "streamwire.aio.pravega"


# The native objects the asyncio wrappers below share definitions over (as aio/tank.py's).
_S = TypeVar("_S", _NativeWriter, _NativeTxn, _NativeTxnHandle, _NativeTxnWriter)
_WN = TypeVar("_WN", _NativeWriter, _NativeTxn)
_EN = TypeVar("_EN", _NativeTxn, _NativeTxnHandle)


class _OnStream(_Wrapped[_S]):
    """What every asyncio writer, transaction and handle shows: its stream."""

    _FACE = _FACE

    @property
    def scope(self) -> str:
        """The stream's scope."""
        return self._native.scope

    @property
    def stream(self) -> str:
        """The stream's name (without the scope)."""
        return self._native.stream


class _Writing(_OnStream[_WN]):
    """The writes of an asyncio :class:`Writer` and :class:`Transaction` (the same calls of
    the native object)."""

    def write(self, event: Any, routing_key: Optional[str] = None) -> asyncio.Future[None]:
        """As :meth:`streamwire.pravega.Writer.write` (``event``, ``routing_key``), awaited:
        the event is handed over now, in call order (a full memory budget waits without
        blocking the loop); cancelling the future does not unwrite it."""
        return self._native._awrite(event, routing_key)

    def write_many(self, events: Any, routing_keys: Any = None) -> asyncio.Future[int]:
        """As :meth:`streamwire.pravega.Writer.write_many` (``events``, ``routing_keys``),
        awaited: handed over after every earlier write; resolves to the count."""
        return self._native._awrite_many(events, routing_keys)


class _Ending(_OnStream[_EN]):
    """What an asyncio :class:`Transaction` and :class:`TransactionHandle` share."""

    @property
    def id(self) -> int:
        """As :attr:`streamwire.pravega.Transaction.id`."""
        return self._native.id

    async def abort(self) -> None:
        """As :meth:`streamwire.pravega.Transaction.abort`, awaited."""
        await self._native._aabort()

    async def status(self) -> str:
        """As :meth:`streamwire.pravega.Transaction.status`, awaited."""
        return await self._native._astatus()


class Writer(_Writing[_NativeWriter], _Live[_NativeWriter], _Closing):
    """A Pravega writer for coroutines; ``write`` hands the event over at once.

    Args:
        native: the engine's writer; made by :meth:`Client.create_writer`, not by callers.
    """

    @property
    def pending(self) -> int:
        """Events handed over and not yet written or failed."""
        return self._native.pending

    async def flush(self) -> None:
        """As :meth:`streamwire.pravega.Writer.flush`, awaited (after every earlier write is
        handed over)."""
        await self._native._aflush()

    async def close(self) -> None:
        """As :meth:`streamwire.pravega.Writer.close`, awaited. Idempotent."""
        await self._native._aclose()


class Transaction(_Writing[_NativeTxn], _Ending[_NativeTxn], _Entered):
    """A Pravega transaction for coroutines: as :class:`streamwire.pravega.Transaction`,
    its waiting calls awaited. ``async with`` commits it at the end of the block, or aborts
    it when the block raises (one that ended in the block is left as it is).

    Args:
        native: the engine's transaction; made by :meth:`TransactionalWriter.begin`.
    """

    @property
    def open(self) -> bool:
        """As :attr:`streamwire.pravega.Transaction.open`."""
        return self._native.open

    async def flush(self, timeout: Optional[float] = None) -> None:
        """As :meth:`streamwire.pravega.Transaction.flush`, awaited."""
        await self._native._aflush(timeout)

    async def commit(
        self, *, wait: bool = True, timestamp: Optional[int] = None, timeout: Optional[float] = None
    ) -> None:
        """As :meth:`streamwire.pravega.Transaction.commit`, awaited."""
        await self._native._acommit(wait=wait, timestamp=timestamp, timeout=timeout)

    async def __aexit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if not self._native.open:
            return  # committed or aborted in the block: left as it is
        if exc_type is not None:
            await self.abort()
        else:
            await self.commit()


class TransactionHandle(_Ending[_NativeTxnHandle]):
    """A transaction known by its id, for coroutines: as
    :class:`streamwire.pravega.TransactionHandle`, its calls awaited.

    Args:
        native: the engine's handle; made by :meth:`Client.transaction`.
    """

    async def commit(
        self,
        *,
        writer_id: Optional[str] = None,
        wait: bool = True,
        timestamp: Optional[int] = None,
        timeout: Optional[float] = None,
    ) -> None:
        """As :meth:`streamwire.pravega.TransactionHandle.commit`, awaited."""
        await self._native._acommit(
            writer_id=writer_id, wait=wait, timestamp=timestamp, timeout=timeout
        )

    async def ping(self, lease: float) -> None:
        """As :meth:`streamwire.pravega.TransactionHandle.ping`, awaited."""
        await self._native._aping(lease)


class TransactionalWriter(_OnStream[_NativeTxnWriter], _Live[_NativeTxnWriter], _Closing):
    """Begins transactions on one stream, for coroutines: as
    :class:`streamwire.pravega.TransactionalWriter`.

    Args:
        native: the engine's writer; made by :meth:`Client.create_transactional_writer`.
    """

    @property
    def writer_id(self) -> str:
        """As :attr:`streamwire.pravega.TransactionalWriter.writer_id`."""
        return self._native.writer_id

    @property
    def lease(self) -> float:
        """As :attr:`streamwire.pravega.TransactionalWriter.lease`."""
        return self._native.lease

    async def begin(self, *, ping: bool = True) -> Transaction:
        """As :meth:`streamwire.pravega.TransactionalWriter.begin`, awaited."""
        native: _NativeTxn = await self._native._abegin(ping=ping)
        return Transaction(native)

    async def close(self) -> None:
        """As :meth:`streamwire.pravega.TransactionalWriter.close`, awaited. Idempotent."""
        await self._native._aclose()


class Reader(_ReaderBase, Awaiting, _Closing):
    """A Pravega reader for coroutines; ``async for`` yields events until a sealed stream
    ends.

    Args:
        native: the engine's reader; made by :meth:`Client.create_reader`, not by callers.
    """

    _FACE = _FACE

    async def _get(
        self, kind: int, max_events: int, timeout: Optional[float], columns: Optional[list[str]]
    ) -> Any:
        native = self._native
        return await take_within(
            native._await_events,
            native._take,
            kind,
            max_events,
            timeout,
            columns,
            lambda: native.at_end,  # read at each wake-up: a sealed stream ends the wait
        )

    async def read(self, timeout: Optional[float] = None) -> Optional[Event]:
        """As :meth:`streamwire.pravega.Reader.read` (``timeout``), awaited; cancelling it
        loses no event."""
        event: Optional[Event] = await self._get(ONE, 1, timeout, None)
        return event

    async def read_many(
        self, max_events: int = 1000, timeout: Optional[float] = None
    ) -> list[Event]:
        """As :meth:`streamwire.pravega.Reader.read_many` (``max_events``, ``timeout``),
        awaited; cancelling it loses no event."""
        events: list[Event] = await self._get(MANY, max_events, timeout, None)
        return events

    async def read_arrow(
        self,
        max_events: int = 10_000,
        timeout: Optional[float] = None,
        columns: Optional[list[str]] = None,
    ) -> Any:
        """As :meth:`streamwire.pravega.Reader.read_arrow` (``max_events``, ``timeout``,
        ``columns``), awaited; cancelling it loses no event."""
        return await self._get(ARROW, max_events, timeout, columns)

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


class ByteStream(_ByteStreamBase, Awaiting, _Closing):
    """A Pravega stream of one segment as bytes, for coroutines: the calls of
    :class:`streamwire.pravega.ByteStream`, each a coroutine here (the same definitions,
    awaited; calls on one byte stream run in call order).

    Args:
        native: the engine's byte stream; made by :meth:`Client.create_byte_stream`.
    """

    _FACE = _FACE


class ReaderGroup(_ReaderGroupBase[Reader], Awaiting):
    """A reader group for coroutines: the calls of :class:`streamwire.pravega.ReaderGroup`,
    each a coroutine here (the same definitions, awaited); its readers are
    :class:`Reader` objects.

    Args:
        native: the engine's group; made by :meth:`Client.create_reader_group`.
    """

    _FACE = _FACE

    def _reader(self, native: _native.PravegaReader) -> Reader:
        return Reader(native)


class Client(
    _ClientBase[Writer, Reader, TransactionalWriter, ByteStream, ReaderGroup, TransactionHandle],
    Awaiting,
    _Closing,
):
    """A connection to a Pravega controller for coroutines (``tcp://host:port`` or
    ``tls://host:port``): the calls of :class:`streamwire.pravega.Client`, each a coroutine
    here (the same definitions, awaited).

    Args:
        controller_uri, timeout, connection_timeout, memory_limit: as for
            :class:`streamwire.pravega.Client`, and so are its TLS and credential arguments
            (``tls_trust_certs_file``, ``tls_disable_hostname_verification_DANGEROUS``,
            ``username``, ``password``, ``auth_method``, ``auth_token``).
    """

    _FACE = _FACE

    def _writer(self, native: _NativeWriter) -> Writer:
        return Writer(native)

    def _reader(self, native: _native.PravegaReader) -> Reader:
        return Reader(native)

    def _txn_writer(self, native: _NativeTxnWriter) -> TransactionalWriter:
        return TransactionalWriter(native)

    def _byte_stream(self, native: _native.PravegaByteStream) -> ByteStream:
        return ByteStream(native)

    def _group(self, native: _native.PravegaReaderGroup) -> ReaderGroup:
        return ReaderGroup(native)

    def _txn_handle(self, native: _NativeTxnHandle) -> TransactionHandle:
        return TransactionHandle(native)

    async def close(self) -> None:
        """Close the client; later calls raise ``AlreadyClosedError``. Idempotent."""
        self._native.close()
