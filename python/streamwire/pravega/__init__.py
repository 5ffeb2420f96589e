"""Pravega on the streamwire engine.

`Pravega <https://cncf.pravega.io>`_ stores streams as segments that split and merge as load
changes. This module is its client: scopes and streams through the controller, writers that
route events by routing key exactly as the official clients do (a key's events land in the
same segment whoever writes them), batch them into append blocks and re-send after a lost
connection or a scale without duplicates, and readers that follow every segment and its
successors and report their position as a :class:`StreamCut`.

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

Errors are the package's own (:mod:`streamwire.exceptions`): an unknown scope or stream
raises ``TopicNotFoundError``, writing to a sealed stream ``ReadOnlyError``, an event over
8 MiB ``MessageTooBigError``, and timeouts ``OperationTimeoutError``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, Optional, Union

from streamwire._native import PravegaClient as _NativeClient
from streamwire._native import PravegaEvent as Event
from streamwire._native import PravegaReader as _NativeReader
from streamwire._native import PravegaWriteFuture as WriteFuture
from streamwire._native import PravegaWriter as Writer

__all__ = [
    "Client",
    "ClientConfig",
    "Event",
    "Reader",
    "Scaling",
    "SegmentInfo",
    "StreamCut",
    "WriteFuture",
    "Writer",
]


class SegmentInfo(NamedTuple):
    """One open segment of a stream and the part of the routing-key space it owns."""

    #: The controller's id: ``epoch << 32 | number``.
    segment_id: int
    number: int
    epoch: int
    low: float
    high: float


@dataclass(frozen=True)
class Scaling:
    """An auto-scaling policy: keep each segment near ``target_rate`` events (or kilobytes)
    per second, splitting into ``scale_factor`` segments when it is exceeded."""

    target_rate: int
    scale_factor: int = 2
    by: Literal["events", "kbytes"] = "events"


@dataclass(frozen=True)
class StreamCut:
    """A position in a stream: each segment's offset, between events. Picklable and
    printable; ``StreamCut.parse(str(cut))`` gives it back."""

    text: str

    @classmethod
    def parse(cls, text: str) -> StreamCut:
        if not isinstance(text, str) or ":" not in text:
            from streamwire.exceptions import InvalidArgumentError

            raise InvalidArgumentError(f"not a stream cut: {text!r}")
        return cls(text)

    @property
    def scope(self) -> str:
        return self.text.split(":", 1)[0].split("/", 1)[0]

    @property
    def stream(self) -> str:
        return self.text.split(":", 1)[0].split("/", 1)[1]

    @property
    def positions(self) -> dict[int, int]:
        """Segment id → offset of the next event."""
        rest = self.text.split(":", 1)[1]
        if not rest:
            return {}
        return {int(s): int(o) for s, o in (p.split("=", 1) for p in rest.split(","))}

    def __str__(self) -> str:
        return self.text


Start = Union[Literal["head", "tail", "earliest", "latest"], StreamCut, str]


class Reader:
    """Reads one stream: every segment, and its successors after a scale.

    ``read`` returns one :class:`Event` (or None at the timeout), ``read_many`` a list,
    ``read_arrow`` a ``pyarrow.RecordBatch`` (columns ``value``, ``stream``, ``segment``,
    ``offset``); iterating yields events as they arrive. ``position()`` is the
    :class:`StreamCut` after the last event handed out: persist it and pass it as ``start``
    to resume with no gap and no duplicate.
    """

    def __init__(self, native: _NativeReader) -> None:
        self._native = native

    @property
    def stream(self) -> str:
        return self._native.stream

    def read(self, timeout: Optional[float] = None) -> Optional[Event]:
        return self._native.read(timeout)

    def read_many(self, max_events: int = 1000, timeout: Optional[float] = None) -> list[Event]:
        return self._native.read_many(max_events, timeout)

    def read_arrow(
        self,
        max_events: int = 10_000,
        timeout: Optional[float] = None,
        columns: Optional[list[str]] = None,
    ) -> Any:
        return self._native.read_arrow(max_events, timeout, columns)

    def position(self) -> StreamCut:
        return StreamCut(self._native.position())

    @property
    def at_end(self) -> bool:
        """True once a sealed stream has been read to its end."""
        return self._native.at_end

    def __iter__(self) -> Reader:
        return self

    def __next__(self) -> Event:
        while True:
            e = self._native.read(1.0)
            if e is not None:
                return e
            if self._native.at_end:
                raise StopIteration

    def close(self) -> None:
        self._native.close()

    def metrics(self) -> dict[str, Any]:
        """This reader's metrics (README "Metrics")."""
        return self._native.metrics()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        return self._native.__reduce__()

    def __repr__(self) -> str:
        return repr(self._native)


class Client:
    """A connection to a Pravega controller (``tcp://host:port``) and the segment stores it
    names. Thread-safe; create one per process and share it. Clients do not pickle; pass a
    :class:`ClientConfig` to other processes instead. After ``os.fork()`` create a new one."""

    def __init__(
        self,
        controller_uri: str,
        *,
        timeout: float = 30.0,
        connection_timeout: float = 10.0,
        memory_limit: int = 64 * 1024 * 1024,
    ) -> None:
        self._native = _NativeClient(
            controller_uri,
            timeout=timeout,
            connection_timeout=connection_timeout,
            memory_limit=memory_limit,
        )

    @property
    def controller_uri(self) -> str:
        return self._native.controller_uri

    def metrics(self) -> dict[str, Any]:
        """This client's metrics and its writers' and readers' totals (README "Metrics")."""
        return self._native.metrics()

    def create_scope(self, scope: str) -> bool:
        """Create a scope; False when it existed."""
        return self._native.create_scope(scope)

    def scope_exists(self, scope: str) -> bool:
        return self._native.scope_exists(scope)

    def delete_scope(self, scope: str) -> bool:
        """Delete an empty scope; False when there was none."""
        return self._native.delete_scope(scope)

    def create_stream(
        self, scope: str, stream: str, segments: int = 1, scaling: Optional[Scaling] = None
    ) -> bool:
        """Create a stream of ``segments`` segments (the minimum when ``scaling`` is given);
        False when it existed."""
        policy = None
        if scaling is not None:
            if not isinstance(scaling, Scaling):
                raise TypeError(f"scaling must be a pravega.Scaling, not {type(scaling).__name__}")
            policy = (scaling.by, scaling.target_rate, scaling.scale_factor)
        return self._native.create_stream(scope, stream, segments, policy)

    def stream_exists(self, scope: str, stream: str) -> bool:
        return self._native.stream_exists(scope, stream)

    def streams(self, scope: str) -> list[str]:
        """The names of the scope's streams."""
        return self._native.streams(scope)

    def seal_stream(self, scope: str, stream: str) -> None:
        """Seal a stream: no more writes; readers read to its end."""
        self._native.seal_stream(scope, stream)

    def delete_stream(self, scope: str, stream: str) -> bool:
        """Delete a sealed stream; False when there was none."""
        return self._native.delete_stream(scope, stream)

    def segments(self, scope: str, stream: str) -> list[SegmentInfo]:
        """The stream's open segments, in key order."""
        return [SegmentInfo(*s) for s in self._native.segments(scope, stream)]

    def scale_stream(
        self,
        scope: str,
        stream: str,
        sealed: list[int],
        new_ranges: list[tuple[float, float]],
        timeout: Optional[float] = None,
    ) -> None:
        """Replace the ``sealed`` segments (ids) by segments over ``new_ranges`` (which must
        cover exactly the sealed segments' key ranges) and wait until the scale is done."""
        self._native.scale_stream(scope, stream, list(sealed), list(new_ranges), timeout)

    def create_writer(
        self,
        scope: str,
        stream: str,
        *,
        block_if_queue_full: bool = True,
        max_block: int = 1024 * 1024,
        window: int = 8 * 1024 * 1024,
        send_timeout: float = 60.0,
    ) -> Writer:
        """A writer to one stream. ``window`` bounds the bytes in flight per segment,
        ``send_timeout`` how long events wait for an unreachable segment store."""
        return self._native.create_writer(
            scope,
            stream,
            block_if_queue_full=block_if_queue_full,
            max_block=max_block,
            window=window,
            send_timeout=send_timeout,
        )

    def create_reader(
        self,
        scope: str,
        stream: str,
        start: Start = "head",
        *,
        read_ahead: int = 16,
        read_length: int = 1024 * 1024,
    ) -> Reader:
        """A reader from ``start``: ``"head"`` (the oldest events), ``"tail"`` (new events
        only) or a :class:`StreamCut` from ``Reader.position()``. ``read_ahead`` chunks of up
        to ``read_length`` bytes are fetched ahead of the caller."""
        if isinstance(start, StreamCut):
            start_text = start.text
        elif isinstance(start, str):
            start_text = start
        else:
            raise TypeError(
                f"start must be 'head', 'tail' or a StreamCut, not {type(start).__name__}"
            )
        return Reader(
            self._native.create_reader(
                scope, stream, start_text, read_ahead=read_ahead, read_length=read_length
            )
        )

    def head(self, scope: str, stream: str) -> StreamCut:
        """The stream cut at the oldest events the stream holds."""
        return StreamCut(self._native.stream_cut(scope, stream, "head"))

    def tail(self, scope: str, stream: str) -> StreamCut:
        """The stream cut after the newest event now."""
        return StreamCut(self._native.stream_cut(scope, stream, "tail"))

    def segment_ranges(
        self, scope: str, stream: str, start: StreamCut, end: StreamCut
    ) -> list[tuple[int, int, int]]:
        """Each segment's byte range between two cuts: ``(segment_id, from, to)``, ``to``
        exclusive, following successors of segments sealed in between."""
        return self._native.segment_ranges(scope, stream, str(start), str(end))

    def close(self) -> None:
        self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        return self._native.__reduce__()

    def __repr__(self) -> str:
        return repr(self._native)


@dataclass(frozen=True)
class ClientConfig:
    """Everything needed to make a :class:`Client`: picklable, for other processes."""

    controller_uri: str
    timeout: float = 30.0
    connection_timeout: float = 10.0
    memory_limit: int = 64 * 1024 * 1024

    def create(self) -> Client:
        return Client(
            self.controller_uri,
            timeout=self.timeout,
            connection_timeout=self.connection_timeout,
            memory_limit=self.memory_limit,
        )
