"""TANK on the streamwire engine.

`TANK <https://github.com/phaistos-networks/TANK>`_ is a partitioned, append-only log broker
with a small binary protocol. This module is its client: topics and partitions, producers
that gather messages into bundles (optionally Snappy-compressed) and pipeline them, and
consumers that long-poll at the tail, read ahead a bounded number of bytes, and report the
positions to persist.

>>> from streamwire import tank
>>> with tank.Client("tank://127.0.0.1:11011") as client:      # doctest: +SKIP
...     client.create_topic("events", partitions=4)
...     with client.create_producer("events") as producer:
...         producer.send(b"hello", key=b"user-1")
...         producer.send_many([b"a", b"b", b"c"], partition=0)
...     with client.create_consumer("events", start="earliest") as consumer:
...         batch = consumer.receive_arrow(10_000, timeout=1.0)
...         resume_from = consumer.positions()                 # {partition: next seq}

Errors are the package's own (:mod:`streamwire.exceptions`): an unknown topic raises
``TopicNotFoundError``, an unknown partition ``PartitionNotFoundError``, a read outside what
the broker stores ``OutOfRangeError`` (with ``first_available`` and ``high_water``), a
read-only broker ``ReadOnlyError``, and timeouts ``OperationTimeoutError``.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Generic, Literal, NamedTuple, Optional, TypeVar, Union

from streamwire._faces import Closes, Steps, call, two_faces
from streamwire._native import TankClient as _NativeClient
from streamwire._native import TankConsumer as Consumer
from streamwire._native import TankMessage as Message
from streamwire._native import TankProducer as Producer
from streamwire._native import TankSendFuture as SendFuture

__all__ = [
    "Client",
    "ClientConfig",
    "Consumer",
    "Message",
    "PartitionInfo",
    "Producer",
    "SendFuture",
    "TopicInfo",
]

Start = Union[Literal["earliest", "latest"], Mapping[int, int]]


class PartitionInfo(NamedTuple):
    """One partition as the broker reports it.

    Args:
        partition: the partition number.
        first_available: sequence number of the oldest message still stored.
        high_water: sequence number of the newest message (0 when none was ever written).
    """

    partition: int
    #: Sequence number of the oldest message still stored.
    first_available: int
    #: Sequence number of the newest message (0 when none was ever written).
    high_water: int


class TopicInfo(NamedTuple):
    """One topic of the broker.

    Args:
        name: the topic name.
        partitions: its number of partitions.
        enabled: whether the broker serves it.
    """

    name: str
    partitions: int
    enabled: bool


def _config_text(config: Union[str, Mapping[str, Any], None]) -> str:
    if config is None:
        return ""
    if isinstance(config, str):
        return config
    if isinstance(config, Mapping):
        return "".join(f"{k}={v}\n" for k, v in config.items())
    raise TypeError(f"config must be a str, a mapping or None, not {type(config).__name__}")


def _start(start: Optional[Start]) -> Union[str, dict[int, int], None]:
    return start if isinstance(start, str) or start is None else dict(start)


_P = TypeVar("_P")
_C = TypeVar("_C")


class _ClientBase(abc.ABC, Generic[_P, _C]):
    """What the blocking and the asyncio ``Client`` share: the native client (one class
    serving both faces), the options, ``service_url``, ``metrics``, repr, the pickling
    refusal, and every call that waits, written once (``@two_faces``: returning on the
    blocking face, awaited on the asyncio face). ``_P`` and ``_C`` are the face's producer
    and consumer classes."""

    __slots__ = ("_native",)
    #: The module named in ``repr``.
    _FACE = "streamwire.tank"

    def __init__(
        self,
        service_url: str,
        *,
        operation_timeout: float = 30.0,
        connection_timeout: float = 10.0,
        memory_limit: int = 64 * 1024 * 1024,
    ) -> None:
        self._native = _NativeClient(
            service_url,
            operation_timeout=operation_timeout,
            connection_timeout=connection_timeout,
            memory_limit=memory_limit,
        )

    @abc.abstractmethod
    def _producer(self, native: Producer) -> _P:
        """The face's producer over ``native``."""

    @abc.abstractmethod
    def _consumer(self, native: Consumer) -> _C:
        """The face's consumer over ``native``."""

    @property
    def service_url(self) -> str:
        """The service URL this client was created with."""
        return self._native.service_url

    def metrics(self) -> dict[str, Any]:
        """This client's metrics and its producers' and consumers' totals (keys:
        docs/observability.md)."""
        return self._native.metrics()

    @two_faces
    def create_topic(
        self,
        topic: str,
        partitions: int = 1,
        config: Union[str, Mapping[str, Any], None] = None,
    ) -> Steps[None]:
        """Create ``topic`` with ``partitions`` partitions.

        Args:
            topic: the topic name (1 to 64 bytes).
            partitions: the number of partitions (1 to 65535). Default 1.
            config: the topic's configuration: ``key=value`` lines, or a mapping of them.
                Default None.

        Raises:
            InvalidArgumentError: with ``details["already_exists"]`` when it exists.
        """
        yield call("create_topic", topic, partitions, _config_text(config))

    @two_faces
    def partitions(self, topic: str) -> Steps[list[PartitionInfo]]:
        """First available and high-water sequence numbers of each partition of ``topic``.

        Raises ``TopicNotFoundError`` for an unknown topic.
        """
        got: list[tuple[int, int, int]] = yield call("partitions", topic)
        return [PartitionInfo(*p) for p in got]

    @two_faces
    def topics(self) -> Steps[list[TopicInfo]]:
        """Every topic the broker has."""
        got: list[tuple[str, int, bool]] = yield call("topics")
        return [TopicInfo(*t) for t in got]

    @two_faces
    def status(self) -> Steps[dict[str, int]]:
        """The broker's status: topics, partitions, open partitions, start time, version."""
        got: dict[str, int] = yield call("status")
        return got

    @two_faces
    def reload_config(self, topic: str, partition: int) -> Steps[None]:
        """Ask the broker to re-read ``<data>/<topic>/<partition>/config``.

        Args:
            topic: the topic name.
            partition: the partition whose configuration to reload.
        """
        yield call("reload_config", topic, partition)

    @two_faces
    def create_producer(
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
    ) -> Steps[_P]:
        """A producer for ``topic`` (which must exist).

        Messages gather per partition into bundles of up to ``batch_max_messages`` /
        ``batch_max_bytes``, sent at the latest ``batch_delay`` seconds after the first;
        ``compression="snappy"`` compresses every bundle, ``"auto"`` those of more than 512
        messages or 1 KiB (the C++ client's rule). Without a key or partition, messages go
        round-robin one batch at a time; with a key, to ``fnv1a_32(key) % partitions``.
        Pending bytes count against the client's ``memory_limit``: a full budget blocks, or
        raises ``ProducerQueueFullError`` with ``block_if_queue_full=False`` (on the asyncio
        face a full budget makes sends wait in the producer's lane, never the loop).

        Args:
            topic: the topic to produce to.
            batch_max_messages: messages per bundle at most. Default 1000.
            batch_max_bytes: bytes per bundle at most. Default 128 KiB.
            batch_delay: seconds a bundle waits for more messages after its first.
                Default 0.001.
            compression: None, ``"snappy"`` or ``"auto"``. Default None.
            max_in_flight: bundles sent and not yet acknowledged, at most. Default 32.
            send_timeout: seconds a message may wait for its acknowledgement before it
                fails with ``OperationTimeoutError``. Default 30.0.
            block_if_queue_full: wait (True) or raise (False) when the budget is full.
                Default True.
        """
        native: Producer = yield call(
            "create_producer",
            topic,
            batch_max_messages=batch_max_messages,
            batch_max_bytes=batch_max_bytes,
            batch_delay=batch_delay,
            compression=compression,
            max_in_flight=max_in_flight,
            send_timeout=send_timeout,
            block_if_queue_full=block_if_queue_full,
        )
        return self._producer(native)

    @two_faces
    def create_consumer(
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
    ) -> Steps[_C]:
        """A consumer of ``topic`` (all partitions, or the listed ones).

        ``start`` is ``"earliest"``, ``"latest"`` or ``{partition: seq}`` (as returned by
        :meth:`Consumer.positions`). The broker holds a request at the tail up to
        ``max_wait`` seconds (until ``min_bytes`` arrived); each partition asks for up to
        ``fetch_size`` bytes, grown up to ``max_fetch_size`` to fit one large bundle; up to
        ``queue_bytes`` are read ahead. ``on_out_of_range`` decides what a read outside what
        the broker stores (retention) does: raise ``OutOfRangeError`` once, or continue from
        the earliest or latest message.

        Args:
            topic: the topic to read.
            partitions: the partitions to read. Default None: all.
            start: where to start. Default ``"earliest"``.
            max_wait: seconds the broker holds a request at the tail. Default 1.0.
            min_bytes: bytes the broker waits for before answering. Default 0.
            fetch_size: bytes asked for per partition. Default 1 MiB.
            max_fetch_size: the most ``fetch_size`` grows to. Default 64 MiB.
            queue_bytes: bytes read ahead at most. Default 32 MiB.
            on_out_of_range: ``"error"``, ``"earliest"`` or ``"latest"``. Default ``"error"``.
        """
        native: Consumer = yield call(
            "create_consumer",
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
        return self._consumer(native)

    @two_faces
    def close(self) -> Steps[None]:
        """Close the connection; later calls raise ``AlreadyClosedError``. Idempotent."""
        yield call("close")

    def __reduce__(self) -> Any:
        raise TypeError(
            "a live streamwire TANK Client cannot be pickled or sent to another process; "
            "pass a streamwire.tank.ClientConfig and call .create() inside the worker"
        )

    def __repr__(self) -> str:
        return f"<{self._FACE}" + repr(self._native)[len("<streamwire.tank") :]


class Client(_ClientBase[Producer, Consumer], Closes):
    """A connection to one TANK broker (``tank://host[:port]``, port 11011 by default).

    Nothing is dialled until the first call. Thread-safe: share one per process. Live
    clients do not pickle; pass a :class:`ClientConfig` to other processes instead. After
    ``fork()``, a client made in the parent raises ``ForkedProcessError`` in the child.

    Args:
        service_url: ``tank://host[:port]``.
        operation_timeout: seconds a broker request (topic admin, producer or consumer
            creation) may take. Default 30.0.
        connection_timeout: seconds to open a connection. Default 10.0.
        memory_limit: bytes of payload that may be pending in all of this client's producers
            together (0: unlimited). Default 64 MiB.

    Raises:
        ConfigError: a bad option or URL.
    """

    __slots__ = ()

    def _producer(self, native: Producer) -> Producer:
        return native

    def _consumer(self, native: Consumer) -> Consumer:
        return native


@dataclass(frozen=True)
class ClientConfig:
    """Everything needed to make a :class:`Client`: picklable, for other processes.

    Args:
        service_url: ``tank://host[:port]``.
        operation_timeout: seconds, as for :class:`Client`. Default 30.0.
        connection_timeout: seconds, as for :class:`Client`. Default 10.0.
        memory_limit: bytes, as for :class:`Client`. Default 64 MiB.
    """

    service_url: str
    operation_timeout: float = 30.0
    connection_timeout: float = 10.0
    memory_limit: int = 64 * 1024 * 1024

    def create(self) -> Client:
        """A new :class:`Client` with these settings (call it in the process that uses it)."""
        return Client(**asdict(self))  # the fields are the client's arguments, by name
