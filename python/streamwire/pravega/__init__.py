"""Pravega on the streamwire engine.

`Pravega <https://cncf.pravega.io>`_ stores streams as segments that split and merge as load
changes. This module is its client: scopes and streams through the controller, writers that
route events by routing key exactly as the official clients do (a key's events land in the
same segment whoever writes them), batch them into append blocks and re-send after a lost
connection or a scale without duplicates, and readers that follow every segment and its
successors and report their position as a :class:`StreamCut`, and reader groups shared with
the official clients' readers (:meth:`Client.create_reader_group`).

>>> from streamwire import pravega
>>> with pravega.Client("tcp://127.0.0.1:9090") as client:        # doctest: +SKIP
...     client.create_scope("shop")
...     client.create_stream("shop", "orders", segments=4)
...     with client.create_writer("shop", "orders") as writer:
...         writer.write(b"order-1", routing_key="customer-7")
...         writer.write_many([b"a", b"b", b"c"], routing_keys="customer-8")
...     with client.create_reader("shop", "orders", start="head") as reader:
...         batch = reader.read_arrow(10_000, timeout=1.0)
...         resume_from = reader.position()                     # a StreamCut

A secured cluster: ``tls://host:port`` (the controller and its segment stores over TLS,
host names checked against the certificates), ``tls_trust_certs_file`` for a private CA, and
``username``/``password`` (``Basic``) or ``auth_method``/``auth_token`` (any other auth
handler); the delegation tokens the segment stores check are fetched and renewed by the
client.

Errors are the package's own (:mod:`streamwire.exceptions`): an unknown scope or stream
raises ``TopicNotFoundError``, refused credentials ``AuthenticationError``, an untrusted or
mismatched certificate ``ConnectError``, writing to a sealed stream ``ReadOnlyError``, an event over
the client's ``memory_limit`` (or over 8 MiB in a transaction) ``MessageTooBigError``, and
timeouts ``OperationTimeoutError``. Events over 8 MiB outside transactions are written through a
transient segment merged atomically into the stream, as the official clients write them.
"""

from __future__ import annotations

import abc
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Optional, TypeVar, Union

from streamwire._faces import Blocking, Closes, Steps, call, two_faces
from streamwire._native import PravegaByteStream as _NativeByteStream
from streamwire._native import PravegaClient as _NativeClient
from streamwire._native import PravegaEvent as Event
from streamwire._native import PravegaReader as _NativeReader
from streamwire._native import PravegaReaderGroup as _NativeGroup
from streamwire._native import PravegaTransaction as Transaction
from streamwire._native import PravegaTransactionalWriter as TransactionalWriter
from streamwire._native import PravegaTransactionHandle as TransactionHandle
from streamwire._native import PravegaWriteFuture as WriteFuture
from streamwire._native import PravegaWriter as Writer
from streamwire.pravega._types import SegmentInfo, Start, StreamCut, _Live, _Wrapped
from streamwire.pravega.admin import (
    UNCHANGED,
    Retention,
    Scaling,
    StreamConfig,
    Unchanged,
    config_of,
    merged,
    retention_arg,
    scaling_arg,
    tags_arg,
)
from streamwire.pravega.byte_stream import ByteStream

# The public path, for pickles and the API pages (they are defined in ``_types``).
SegmentInfo.__module__ = StreamCut.__module__ = __name__

__all__ = [
    "UNCHANGED",
    "ByteStream",
    "Client",
    "ClientConfig",
    "Event",
    "Reader",
    "ReaderGroup",
    "Retention",
    "Scaling",
    "SegmentInfo",
    "StreamConfig",
    "StreamCut",
    "Transaction",
    "TransactionHandle",
    "TransactionalWriter",
    "WriteFuture",
    "Writer",
]


class _ReaderBase(_Live[_NativeReader]):
    """What :class:`Reader` and ``streamwire.aio.pravega.Reader`` share: ``closed``,
    ``metrics()`` and these."""

    @property
    def stream(self) -> str:
        """The stream read, as ``scope/stream`` (for a reader of a group of several
        streams, the first of them: see :attr:`streams`)."""
        return self._native.stream

    @property
    def streams(self) -> list[str]:
        """Every stream read, as ``scope/stream``: the one stream of a stream's reader, all
        the streams of its group for a group's reader (each :class:`Event` says which it
        came from)."""
        return self._native.streams

    @property
    def at_end(self) -> bool:
        """True once a sealed stream has been read to its end."""
        return self._native.at_end

    @two_faces
    def position(self) -> Steps[StreamCut]:
        """The :class:`StreamCut` after the last event handed out (pass it as ``start``);
        waits for a read in progress to end (on the asyncio face, events a cancelled read
        left are counted as unread). ``InvalidArgumentError`` for a reader of a group of
        several streams: :meth:`stream_cuts` gives one per stream."""
        text: str = yield call("position")
        return StreamCut(text)

    @two_faces
    def stream_cuts(self) -> Steps[list[StreamCut]]:
        """The position after the last event handed out, a :class:`StreamCut` per stream
        read (in the order of :attr:`streams`); as :meth:`position` otherwise."""
        texts: list[str] = yield call("stream_cuts")
        return [StreamCut(t) for t in texts]

    @property
    def group_reader(self) -> bool:
        """True for a reader group's reader (made by ``ReaderGroup.create_reader``)."""
        return self._native.group_reader is not None

    @two_faces
    def offline(self) -> Steps[bool]:
        """A reader group's reader leaves its group: its segments go back to the group at
        the position after the last event handed out (another reader continues from there,
        nothing lost, nothing read twice); later reads raise ``AlreadyClosedError``. False
        when it was offline already; ``InvalidArgumentError`` for a reader outside a group.
        ``close()`` does it too."""
        done: bool = yield call("offline")
        return done

    @two_faces
    def close(self) -> Steps[None]:
        """Close the reader's connections; a pending read raises ``AlreadyClosedError``. A
        reader group's reader goes :meth:`offline` first. Idempotent."""
        yield call("close")


class Reader(_ReaderBase, Closes):
    """Reads one stream (every segment, and its successors after a scale), or, made by
    :meth:`ReaderGroup.create_reader`, the segments its group gives it of every stream the
    group reads.

    ``read`` returns one :class:`Event` (or None at the timeout), ``read_many`` a list,
    ``read_arrow`` a ``pyarrow.RecordBatch`` (columns ``value``, ``stream``, ``segment``,
    ``offset``); iterating yields events as they arrive. ``position()`` is the
    :class:`StreamCut` after the last event handed out: persist it and pass it as ``start``
    to resume with no gap and no duplicate.

    Args:
        native: the engine's reader; made by :meth:`Client.create_reader`, not by callers.
    """

    def read(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, or None when none arrived in time (or a sealed stream ended).

        Args:
            timeout: seconds to wait at most; None waits forever. Default None.
        """
        return self._native.read(timeout)

    def read_many(self, max_events: int = 1000, timeout: Optional[float] = None) -> list[Event]:
        """Up to ``max_events`` events: waits for the first, then takes what is fetched.

        Args:
            max_events: the most events to return. Default 1000.
            timeout: seconds to wait for the first event (then ``[]``); None waits forever.
                Default None.
        """
        return self._native.read_many(max_events, timeout)

    def read_arrow(
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
            columns: a subset of ``value``, ``stream``, ``segment``, ``offset``, in the
                order wanted. Default None: all.
        """
        return self._native.read_arrow(max_events, timeout, columns)

    def __iter__(self) -> Reader:
        return self

    def __next__(self) -> Event:
        while True:
            e = self._native.read(1.0)
            if e is not None:
                return e
            if self._native.at_end:
                raise StopIteration


_GR = TypeVar("_GR")


class _ReaderGroupBase(_Wrapped[_NativeGroup], abc.ABC, Generic[_GR]):
    """What :class:`ReaderGroup` and ``streamwire.aio.pravega.ReaderGroup`` share; ``_R`` is
    the face's reader class."""

    @abc.abstractmethod
    def _reader(self, native: _NativeReader) -> _GR:
        """The face's reader over ``native``."""

    @property
    def scope(self) -> str:
        """The scope the group belongs to."""
        return self._native.scope

    @property
    def name(self) -> str:
        """The group's name."""
        return self._native.name

    @property
    def streams(self) -> list[str]:
        """The streams the group reads, as ``scope/stream``."""
        return self._native.streams

    @two_faces
    def create_reader(
        self,
        reader_id: str,
        *,
        refresh: Optional[float] = None,
        read_ahead: int = 16,
        read_length: int = 1024 * 1024,
    ) -> Steps[_GR]:
        """A reader joining the group as ``reader_id``: a :class:`Reader` whose segments the
        group gives. At its first read it takes its fair share (``ceil(segments /
        readers)``) of the unassigned segments; every ``refresh`` seconds it records its
        positions, takes more when segments are free and it is under its share, and hands
        one back when over it (the official readers' rule). A sealed segment read to its end
        goes back to the group, which hands its successors out once all their predecessors
        are read. :meth:`Reader.offline` (or ``close()``) leaves the group.

        Args:
            reader_id: the reader's id in the group (unique among the readers online).
            refresh: seconds between membership rounds. Default None: the group's refresh
                time (3 s).
            read_ahead: chunks fetched ahead of the caller, at most. Default 16.
            read_length: bytes per chunk at most. Default 1 MiB.
        """
        native: _NativeReader = yield call(
            "create_reader",
            reader_id,
            refresh=refresh,
            read_ahead=read_ahead,
            read_length=read_length,
        )
        return self._reader(native)

    @two_faces
    def readers(self) -> Steps[list[str]]:
        """The ids of the readers online (ours and the official clients'), sorted."""
        ids: list[str] = yield call("readers")
        return ids

    @two_faces
    def reader_offline(self, reader_id: str, position: Optional[StreamCut] = None) -> Steps[bool]:
        """Take reader ``reader_id`` offline (one whose process died): its segments go back
        to the group at ``position`` (segments missing there at the offsets it last
        recorded). False when it was not online.

        Args:
            reader_id: the reader's id.
            position: where it stopped. Default None: its last recorded offsets.
        """
        text = None if position is None else _cut_text(position)
        done: bool = yield call("reader_offline", reader_id, text)
        return done

    @two_faces
    def stream_cuts(self) -> Steps[list[StreamCut]]:
        """The group's position: a :class:`StreamCut` per stream it reads (each segment
        being read or waiting to be, at its last recorded offset)."""
        texts: list[str] = yield call("stream_cuts")
        return [StreamCut(t) for t in texts]


class ReaderGroup(_ReaderGroupBase[Reader], Blocking):
    """A reader group: readers (ours and the official ``pravega`` clients') that split
    its streams' segments. Made by :meth:`Client.create_reader_group` or
    :meth:`Client.open_reader_group`.

    Args:
        native: the engine's group; made by the client, not by callers.
    """

    def _reader(self, native: _NativeReader) -> Reader:
        return Reader(native)


def _start_text(start: Start) -> str:
    """``create_reader``'s ``start`` as the engine's text."""
    if isinstance(start, StreamCut):
        return start.text
    if isinstance(start, str):
        return start
    raise TypeError(f"start must be 'head', 'tail' or a StreamCut, not {type(start).__name__}")


_NewStream = tuple[
    int,
    Optional[tuple[str, int, int]],
    Optional[tuple[str, int, Optional[int]]],
    Optional[list[str]],
]


def _new_stream(
    segments: int,
    scaling: Optional[Scaling],
    retention: Optional[Retention],
    tags: Optional[list[str]],
) -> _NewStream:
    """``create_stream``'s settings as the engine's arguments."""
    return (
        segments,
        scaling_arg(scaling),
        retention_arg(retention),
        None if tags is None else tags_arg(tags),
    )


def _whole(new: StreamConfig) -> dict[str, Any]:
    """A whole configuration as ``update_stream``'s engine arguments."""
    return {
        "segments": new.segments,
        "scaling": scaling_arg(new.scaling),
        "retention": retention_arg(new.retention),
        "tags": list(new.tags),
        "timestamp_aggregation_timeout": new.timestamp_aggregation_timeout,
        "rollover_size_bytes": new.rollover_size_bytes,
    }


def _cut_text(cut: StreamCut) -> str:
    if not isinstance(cut, StreamCut):
        raise TypeError(f"cut must be a pravega.StreamCut, not {type(cut).__name__}")
    return cut.text


def _tag_checked(tag: object) -> str:
    if not isinstance(tag, str):
        raise TypeError(f"tag must be a str, not {type(tag).__name__}")
    return tag


_W = TypeVar("_W")
_R = TypeVar("_R")
_TW = TypeVar("_TW")
_B = TypeVar("_B")
_G = TypeVar("_G")
_TH = TypeVar("_TH")


class _ClientBase(_Wrapped[_NativeClient], abc.ABC, Generic[_W, _R, _TW, _B, _G, _TH]):
    """What :class:`Client` and ``streamwire.aio.pravega.Client`` share: the connection (the
    options are :class:`Client`'s), its state, and every call that waits, written once
    (``@two_faces``: returning on the blocking face, awaited on the asyncio face). ``_W`` and
    ``_R`` are the face's writer and reader classes, ``_TW`` its transactional writer, ``_B``
    its byte stream, ``_G`` its reader group, ``_TH`` its handle of a transaction known by
    id."""

    def __init__(
        self,
        controller_uri: str,
        *,
        timeout: float = 30.0,
        connection_timeout: float = 10.0,
        memory_limit: int = 64 * 1024 * 1024,
        tls_trust_certs_file: Union[str, os.PathLike[str], None] = None,
        tls_disable_hostname_verification_DANGEROUS: bool = False,
        username: Optional[str] = None,
        password: Optional[str] = None,
        auth_method: Optional[str] = None,
        auth_token: Optional[str] = None,
    ) -> None:
        self._native = _NativeClient(
            controller_uri,
            timeout=timeout,
            connection_timeout=connection_timeout,
            memory_limit=memory_limit,
            tls_trust_certs_file=tls_trust_certs_file,
            tls_disable_hostname_verification_DANGEROUS=tls_disable_hostname_verification_DANGEROUS,
            username=username,
            password=password,
            auth_method=auth_method,
            auth_token=auth_token,
        )

    @abc.abstractmethod
    def _writer(self, native: Writer) -> _W:
        """The face's writer over ``native``."""

    @abc.abstractmethod
    def _reader(self, native: _NativeReader) -> _R:
        """The face's reader over ``native``."""

    @abc.abstractmethod
    def _txn_writer(self, native: TransactionalWriter) -> _TW:
        """The face's transactional writer over ``native``."""

    @abc.abstractmethod
    def _byte_stream(self, native: _NativeByteStream) -> _B:
        """The face's byte stream over ``native``."""

    @abc.abstractmethod
    def _group(self, native: _NativeGroup) -> _G:
        """The face's reader group over ``native``."""

    @abc.abstractmethod
    def _txn_handle(self, native: TransactionHandle) -> _TH:
        """The face's transaction handle over ``native``."""

    def transaction(self, scope: str, stream: str, txn_id: Union[int, str]) -> _TH:
        """The transaction ``txn_id`` of the ``stream`` of ``scope``, begun elsewhere (another
        process: e.g. a Spark task whose driver commits it): a :class:`TransactionHandle`
        that commits, aborts, pings or asks the status by id. Nothing is asked of the
        controller until one of those is called.

        Args:
            scope: the stream's scope.
            stream: the stream name.
            txn_id: :attr:`Transaction.id` (an int), or the id's UUID text.
        """
        return self._txn_handle(self._native.transaction(scope, stream, txn_id))

    @property
    def controller_uri(self) -> str:
        """The controller URI this client was created with."""
        return self._native.controller_uri

    def metrics(self) -> dict[str, Any]:
        """This client's metrics and its writers' and readers' totals (docs/observability.md)."""
        return self._native.metrics()

    @property
    def closed(self) -> bool:
        """Whether the client is closed."""
        return self._native.closed

    @two_faces
    def create_scope(self, scope: str) -> Steps[bool]:
        """Create a ``scope``; False when it existed."""
        created: bool = yield call("create_scope", scope)
        return created

    @two_faces
    def scope_exists(self, scope: str) -> Steps[bool]:
        """Whether ``scope`` exists."""
        exists: bool = yield call("scope_exists", scope)
        return exists

    @two_faces
    def delete_scope(self, scope: str) -> Steps[bool]:
        """Delete an empty ``scope``; False when there was none."""
        deleted: bool = yield call("delete_scope", scope)
        return deleted

    @two_faces
    def create_stream(
        self,
        scope: str,
        stream: str,
        segments: int = 1,
        scaling: Optional[Scaling] = None,
        *,
        retention: Optional[Retention] = None,
        tags: Optional[list[str]] = None,
    ) -> Steps[bool]:
        """Create a stream of ``segments`` segments (the minimum when ``scaling`` is given);
        False when it existed (its configuration is then left as it was).

        Args:
            scope: the scope (which must exist).
            stream: the stream name.
            segments: the number of segments. Default 1.
            scaling: an auto-scaling policy. Default None: a fixed number of segments.
            retention: a :class:`Retention` policy (automatic truncation). Default None.
            tags: tags to find the stream by (``streams(scope, tag=...)``); each 1 to 256
                characters, at most 128. Default None.
        """
        args = _new_stream(segments, scaling, retention, tags)
        created: bool = yield call("create_stream", scope, stream, *args)
        return created

    @two_faces
    def stream_config(self, scope: str, stream: str) -> Steps[StreamConfig]:
        """The configuration of the ``stream`` of ``scope``: segments, scaling, retention
        and tags.

        Raises:
            TopicNotFoundError: there is no such stream.
        """
        raw: Any = yield call("stream_config", scope, stream)
        return config_of(raw)

    @two_faces
    def update_stream(
        self,
        scope: str,
        stream: str,
        *,
        segments: Union[int, Unchanged] = UNCHANGED,
        scaling: Union[Scaling, Unchanged, None] = UNCHANGED,
        retention: Union[Retention, Unchanged, None] = UNCHANGED,
        tags: Union[list[str], Unchanged] = UNCHANGED,
    ) -> Steps[StreamConfig]:
        """Change the configuration of the ``stream`` of ``scope``; what is not given is
        kept. Returns the new configuration.

        The configuration is read, changed and written back whole (the controller replaces
        it in one piece): a concurrent update of another setting can be lost, as with the
        official clients.

        Args:
            scope: the stream's scope.
            stream: the stream name.
            segments: the number of segments (the minimum with auto-scaling); a fixed
                stream scales up to it, never down.
            scaling: an auto-scaling policy, or None for a fixed number of segments.
            retention: a :class:`Retention` policy, or None to remove it.
            tags: the stream's tags (replacing the old ones; ``[]`` removes them all).

        Raises:
            TopicNotFoundError: there is no such stream.
            ReadOnlyError: the stream is sealed.
        """
        raw: Any = yield call("stream_config", scope, stream)
        new = merged(config_of(raw), segments, scaling, retention, tags)
        yield call("update_stream", scope, stream, **_whole(new))
        return new

    @two_faces
    def stream_tags(self, scope: str, stream: str) -> Steps[list[str]]:
        """The tags of the ``stream`` of ``scope``."""
        raw: Any = yield call("stream_config", scope, stream)
        return list(config_of(raw).tags)

    @two_faces
    def truncate_stream(self, scope: str, stream: str, cut: StreamCut) -> Steps[None]:
        """Drop the events of the ``stream`` of ``scope`` before ``cut`` (a
        :class:`StreamCut`, e.g. a reader's ``position()``): readers from ``"head"`` start
        there.

        Raises:
            InvalidArgumentError: ``cut`` is of another stream, or names no segment.
            ServerError: the controller refused the cut (not a cut of this stream's
                segments).
        """
        yield call("truncate_stream", scope, stream, _cut_text(cut))

    @two_faces
    def scopes(self) -> Steps[list[str]]:
        """The names of every scope (Pravega's own, such as ``_system``, left out)."""
        names: list[str] = yield call("scopes")
        return names

    @two_faces
    def stream_exists(self, scope: str, stream: str) -> Steps[bool]:
        """Whether ``stream`` exists in ``scope``."""
        exists: bool = yield call("stream_exists", scope, stream)
        return exists

    @two_faces
    def streams(self, scope: str, tag: Optional[str] = None) -> Steps[list[str]]:
        """The names of the scope's streams; with ``tag``, only those carrying it.

        Args:
            scope: the scope.
            tag: a tag to select by. Default None: every stream.
        """
        if tag is None:
            names: list[str] = yield call("streams", scope)
        else:
            names = yield call("streams_with_tag", scope, _tag_checked(tag))
        return names

    @two_faces
    def seal_stream(self, scope: str, stream: str) -> Steps[None]:
        """Seal the ``stream`` of ``scope``: no more writes; readers read to its end."""
        yield call("seal_stream", scope, stream)

    @two_faces
    def delete_stream(self, scope: str, stream: str) -> Steps[bool]:
        """Delete the sealed ``stream`` of ``scope``; False when there was none."""
        deleted: bool = yield call("delete_stream", scope, stream)
        return deleted

    @two_faces
    def segments(self, scope: str, stream: str) -> Steps[list[SegmentInfo]]:
        """The open segments of the ``stream`` of ``scope``, in key order."""
        got: list[tuple[int, int, int, float, float]] = yield call("segments", scope, stream)
        return [SegmentInfo(*s) for s in got]

    @two_faces
    def scale_stream(
        self,
        scope: str,
        stream: str,
        sealed: list[int],
        new_ranges: list[tuple[float, float]],
        timeout: Optional[float] = None,
    ) -> Steps[None]:
        """Replace the ``sealed`` segments (ids) by segments over ``new_ranges`` (which must
        cover exactly the sealed segments' key ranges) and wait until the scale is done.

        Args:
            scope: the stream's scope.
            stream: the stream name.
            sealed: the ids of the segments to replace.
            new_ranges: ``(low, high)`` routing-key ranges of the new segments.
            timeout: seconds to wait for the scale at most. Default None: the client's
                ``timeout``.
        """
        yield call("scale_stream", scope, stream, list(sealed), list(new_ranges), timeout)

    @two_faces
    def create_writer(
        self,
        scope: str,
        stream: str,
        *,
        block_if_queue_full: bool = True,
        max_block: int = 1024 * 1024,
        window: int = 8 * 1024 * 1024,
        send_timeout: float = 60.0,
    ) -> Steps[_W]:
        """A writer to the ``stream`` of ``scope``.

        Args:
            scope: the stream's scope.
            stream: the stream name.
            block_if_queue_full: when the client's ``memory_limit`` is full, wait (True) or
                raise ``ProducerQueueFullError`` (False); on the asyncio face, a full budget
                makes writes wait in the writer's lane, never the loop. Default True.
            max_block: bytes per append block at most. Default 1 MiB.
            window: bytes in flight per segment at most. Default 8 MiB.
            send_timeout: seconds events wait for an unreachable segment store before they
                fail. Default 60.0.
        """
        native: Writer = yield call(
            "create_writer",
            scope,
            stream,
            block_if_queue_full=block_if_queue_full,
            max_block=max_block,
            window=window,
            send_timeout=send_timeout,
        )
        return self._writer(native)

    @two_faces
    def create_transactional_writer(
        self,
        scope: str,
        stream: str,
        *,
        writer_id: Optional[str] = None,
        lease: float = 30.0,
        block_if_queue_full: bool = True,
        max_block: int = 1024 * 1024,
        window: int = 8 * 1024 * 1024,
        send_timeout: float = 60.0,
    ) -> Steps[_TW]:
        """A writer of transactions to the ``stream`` of ``scope``: ``begin()`` a
        :class:`Transaction`, write to it, then ``commit()`` (its events become visible
        together) or ``abort()`` (none ever does).

        Args:
            scope: the stream's scope.
            stream: the stream name.
            writer_id: the id sent with each commit (the stream's watermarks are kept per
                writer). Default None: a random UUID.
            lease: seconds a transaction lives without a ping; an open transaction is pinged
                in the background, so the lease only runs out when the process stops (or
                ``begin(ping=False)``). The controller refuses a lease outside its bounds.
                Default 30.0.
            block_if_queue_full: as for :meth:`create_writer`. Default True.
            max_block: as for :meth:`create_writer`. Default 1 MiB.
            window: as for :meth:`create_writer`. Default 8 MiB.
            send_timeout: as for :meth:`create_writer`. Default 60.0.
        """
        native: TransactionalWriter = yield call(
            "create_transactional_writer",
            scope,
            stream,
            writer_id=writer_id,
            lease=lease,
            block_if_queue_full=block_if_queue_full,
            max_block=max_block,
            window=window,
            send_timeout=send_timeout,
        )
        return self._txn_writer(native)

    @two_faces
    def create_reader(
        self,
        scope: str,
        stream: str,
        start: Start = "head",
        *,
        read_ahead: int = 16,
        read_length: int = 1024 * 1024,
    ) -> Steps[_R]:
        """A reader from ``start``: ``"head"`` (the oldest events), ``"tail"`` (new events
        only) or a :class:`StreamCut` from ``Reader.position()``. ``read_ahead`` chunks of up
        to ``read_length`` bytes are fetched ahead of the caller.

        Args:
            scope: the stream's scope.
            stream: the stream name.
            start: where to start. Default ``"head"``.
            read_ahead: chunks fetched ahead of the caller, at most. Default 16.
            read_length: bytes per chunk at most. Default 1 MiB.
        """
        native: _NativeReader = yield call(
            "create_reader",
            scope,
            stream,
            _start_text(start),
            read_ahead=read_ahead,
            read_length=read_length,
        )
        return self._reader(native)

    @two_faces
    def create_reader_group(
        self,
        scope: str,
        group: str,
        streams: Union[str, list[str]],
        start: Optional[Start] = None,
    ) -> Steps[_G]:
        """Reader group ``group`` of ``scope`` reading ``streams`` (names in ``scope``), or
        the existing one of that name, left as it is. Its state is kept where and as the
        official clients keep it (the table segment ``<scope>/<group>_kvtable``), so readers
        of the ``pravega`` package (``StreamManager.create_reader_group``, same scope and
        name) and ours (:meth:`ReaderGroup.create_reader`) split its segments between them.

        Args:
            scope: the group's scope (and its streams').
            group: the group's name.
            streams: a stream name, or several.
            start: ``"head"``, ``"tail"`` or a :class:`StreamCut` of one of the streams (the
                others start at their head). Default None: the head.
        """
        names = [streams] if isinstance(streams, str) else list(streams)
        native: _NativeGroup = yield call(
            "create_reader_group",
            scope,
            group,
            names,
            "head" if start is None else _start_text(start),
        )
        return self._group(native)

    @two_faces
    def open_reader_group(self, scope: str, group: str) -> Steps[_G]:
        """The existing reader group ``group`` of ``scope`` (whoever created it);
        ``TopicNotFoundError`` when there is none."""
        native: _NativeGroup = yield call("open_reader_group", scope, group)
        return self._group(native)

    @two_faces
    def delete_reader_group(self, scope: str, group: str) -> Steps[bool]:
        """Delete reader group ``group`` of ``scope`` (its state): False when there was
        none. Its readers' next membership round fails."""
        done: bool = yield call("delete_reader_group", scope, group)
        return done

    @two_faces
    def create_byte_stream(self, scope: str, stream: str) -> Steps[_B]:
        """The ``stream`` of ``scope`` as bytes (:class:`ByteStream`): it must have exactly
        one segment (``create_stream(..., segments=1)``, no auto-scaling). Reading starts at
        offset 0, writing at the tail.

        Args:
            scope: the stream's scope.
            stream: the stream name.
        """
        native: _NativeByteStream = yield call("create_byte_stream", scope, stream)
        return self._byte_stream(native)

    @two_faces
    def head(self, scope: str, stream: str) -> Steps[StreamCut]:
        """The stream cut at the oldest events the ``stream`` of ``scope`` holds."""
        text: str = yield call("stream_cut", scope, stream, "head")
        return StreamCut(text)

    @two_faces
    def tail(self, scope: str, stream: str) -> Steps[StreamCut]:
        """The stream cut after the newest event of the ``stream`` of ``scope`` now."""
        text: str = yield call("stream_cut", scope, stream, "tail")
        return StreamCut(text)

    @two_faces
    def segment_ranges(
        self, scope: str, stream: str, start: StreamCut, end: StreamCut
    ) -> Steps[list[tuple[int, int, int]]]:
        """Each segment's byte range between two cuts: ``(segment_id, from, to)``, ``to``
        exclusive, following successors of segments sealed in between.

        Args:
            scope: the stream's scope.
            stream: the stream name.
            start: the earlier cut.
            end: the later cut.
        """
        got: list[tuple[int, int, int]] = yield call(
            "segment_ranges", scope, stream, str(start), str(end)
        )
        return got


class Client(
    _ClientBase[Writer, Reader, TransactionalWriter, ByteStream, ReaderGroup, TransactionHandle],
    Closes,
):
    """A connection to a Pravega controller (``tcp://host:port``, or ``tls://host:port``)
    and the segment stores it names. Thread-safe; create one per process and share it.
    Clients do not pickle; pass a :class:`ClientConfig` to other processes instead. After
    ``os.fork()`` create a new one.

    Args:
        controller_uri: ``tcp://host:port`` of the controller, or ``tls://host:port``: then
            the controller and every segment store are reached over TLS (the host names the
            controller gives for the segment stores are checked like its own).
        timeout: seconds a controller or segment-store request may take. Default 30.0.
        connection_timeout: seconds to open a connection. Default 10.0.
        memory_limit: bytes of events that may be pending in all of this client's writers
            together (0: unlimited). Default 64 MiB.
        tls_trust_certs_file: PEM file of the CA certificates to trust (default: the
            system's). Only with ``tls://``.
        tls_disable_hostname_verification_DANGEROUS: accept a certificate issued for
            another host name (the chain is still checked). Default False.
        username, password: ``Basic`` credentials (Pravega's password auth handler).
        auth_method, auth_token: credentials for another auth handler, sent as
            ``authorization: <auth_method> <auth_token>`` (e.g. ``"Bearer"`` and a token).
    """

    def _writer(self, native: Writer) -> Writer:
        return native

    def _reader(self, native: _NativeReader) -> Reader:
        return Reader(native)

    def _txn_writer(self, native: TransactionalWriter) -> TransactionalWriter:
        return native

    def _byte_stream(self, native: _NativeByteStream) -> ByteStream:
        return ByteStream(native)

    def _group(self, native: _NativeGroup) -> ReaderGroup:
        return ReaderGroup(native)

    def _txn_handle(self, native: TransactionHandle) -> TransactionHandle:
        return native

    def close(self) -> None:
        """Close the client's connections; later calls raise ``AlreadyClosedError``."""
        self._native.close()


@dataclass(frozen=True)
class ClientConfig:
    """Everything needed to make a :class:`Client`: picklable, for other processes.

    Args:
        controller_uri: ``tcp://host:port`` or ``tls://host:port`` of the controller.
        timeout: seconds, as for :class:`Client`. Default 30.0.
        connection_timeout: seconds, as for :class:`Client`. Default 10.0.
        memory_limit: bytes, as for :class:`Client`. Default 64 MiB.
        tls_trust_certs_file: as for :class:`Client`.
        tls_disable_hostname_verification_DANGEROUS: as for :class:`Client`.
        username, password: as for :class:`Client` (the password is left out of the
            ``repr``).
        auth_method, auth_token: as for :class:`Client` (the token is left out of the
            ``repr``).
    """

    controller_uri: str
    timeout: float = 30.0
    connection_timeout: float = 10.0
    memory_limit: int = 64 * 1024 * 1024
    tls_trust_certs_file: Optional[str] = None
    tls_disable_hostname_verification_DANGEROUS: bool = False
    username: Optional[str] = None
    password: Optional[str] = field(default=None, repr=False)
    auth_method: Optional[str] = None
    auth_token: Optional[str] = field(default=None, repr=False)

    def create(self) -> Client:
        """A new :class:`Client` with these settings (call it in the process that uses it)."""
        return Client(**asdict(self))  # the fields are the client's arguments, by name
