"""One adapter per protocol, chosen by the service URL's scheme, so every command of the CLI
works the same way on Pulsar (``pulsar://``, ``pulsar+ssl://``), TANK (``tank://``) and
Pravega (``tcp://`` — the controller; a topic is ``scope/stream``).

Each adapter speaks only the public Python API, as a user's script would.
"""

from __future__ import annotations

import abc
import functools
import importlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional, Protocol

from streamwire.exceptions import InvalidArgumentError


@dataclass
class Record:
    """One message or event as the CLI prints it."""

    value: bytes
    position: str
    key: Optional[str] = None
    partition: Optional[int] = None
    time_ms: Optional[int] = None
    properties: dict[str, str] = field(default_factory=dict)
    #: Acknowledges it (Pulsar subscriptions): called once the record is handled, so a
    #: record the command never got to is not acknowledged.
    ack: Optional[Callable[[], None]] = None

    def handled(self) -> None:
        if self.ack is not None:
            self.ack()


class Sender(Protocol):
    """What ``perf produce`` drives: hand one value over, get something to wait on."""

    def send(self, value: bytes) -> Callable[[], object]: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


def _text(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else b.decode("utf-8", "backslashreplace")


def _polled(
    take: Callable[[], list[Any]], idle: Optional[float], ended: Callable[[], bool] = bool
) -> Iterator[Any]:
    """Items from ``take()`` (a batch a call, waiting briefly) until ``idle`` seconds pass
    without one, or ``ended()`` says the source is finished."""
    last = time.monotonic()
    while not (idle is not None and time.monotonic() - last >= idle) and not ended():
        batch = take()
        if batch:
            last = time.monotonic()
        yield from batch


class _Sender:
    """``perf produce``'s view of any protocol's producer: ``send_async``/``write_async``
    returns a future whose ``result`` is what the waiter thread waits on."""

    def __init__(self, handle: Any, send: Callable[[bytes], Any]) -> None:
        self.handle = handle
        self._send = send

    def send(self, value: bytes) -> Callable[[], object]:
        return self._send(value).result  # type: ignore[no-any-return]

    def flush(self) -> None:
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()


@dataclass
class _Source:
    """What a protocol reads records from: ``handle`` (closed when the read ends),
    ``take(max, timeout)`` for the next few messages, ``ended()`` whether the source is
    finished, and ``record`` to turn a message into a :class:`Record`."""

    handle: Any
    take: Callable[[int, float], list[Any]]
    record: Callable[[Any], Record]
    ended: Callable[[], bool] = bool


class Backend(abc.ABC):
    """What every command runs, whatever the protocol: a subclass says only how its
    client produces, opens a source of records, makes a producer for ``perf``, and which
    features its protocol lacks (the error a user gets for asking)."""

    name: str
    #: The error for ``--property`` (``None``: messages have properties).
    no_properties: Optional[str] = None
    #: The error for ``--subscription`` (``None``: the protocol has subscriptions).
    no_subscriptions: Optional[str] = None
    #: The module whose ``Client`` speaks the protocol (imported on use, so that a command
    #: loads only the protocol it talks).
    module: str

    def __init__(self, url: str) -> None:
        self.client: Any = importlib.import_module(self.module).Client(url)

    @abc.abstractmethod
    def _produce(self, topic: str, values: Iterable[bytes], key: Optional[str], props: Any) -> int:
        """Send ``values`` to ``topic``; the number sent."""

    @abc.abstractmethod
    def _source(
        self, topic: str, start: str, subscription: Optional[str], subscription_type: str
    ) -> _Source:
        """The records of ``topic`` from ``start`` (a subscription where the protocol has one)."""

    @abc.abstractmethod
    def _producer(self, topic: str) -> tuple[Any, Callable[[bytes], Any]]:
        """A producer (flushed and closed by ``perf``) and its ``send_async``."""

    def produce(
        self, topic: str, values: Iterable[bytes], key: Optional[str], props: dict[str, str]
    ) -> int:
        if props and self.no_properties is not None:
            raise InvalidArgumentError(self.no_properties)
        return self._produce(topic, values, key, props)

    def records(
        self,
        topic: str,
        start: str,
        subscription: Optional[str],
        subscription_type: str,
        idle: Optional[float],
    ) -> Iterator[Record]:
        if subscription is not None and self.no_subscriptions is not None:
            raise InvalidArgumentError(self.no_subscriptions)
        source = self._source(topic, start, subscription, subscription_type)
        with source.handle:
            for m in _polled(lambda: source.take(1000, 0.2), idle, source.ended):
                yield source.record(m)

    @abc.abstractmethod
    def lookup(self, topic: str) -> list[dict[str, Any]]:
        """Where ``topic`` (or each of its partitions) is served, as rows."""

    @abc.abstractmethod
    def topics(self, where: Optional[str]) -> list[str]:
        """The topic names (of the namespace or scope ``where``)."""

    def sender(self, topic: str) -> Sender:
        return _Sender(*self._producer(topic))

    def close(self) -> None:
        self.client.close()


# -- Pulsar -------------------------------------------------------------------------------


class PulsarBackend(Backend):
    name = "pulsar"
    module = "streamwire"

    def _produce(self, topic: str, values: Iterable[bytes], key: Optional[str], props: Any) -> int:
        n = 0
        with self.client.create_producer(topic) as p:
            futures = [p.send_async(v, key=key, properties=props or None) for v in values]
            p.flush()
            for f in futures:
                f.result()
                n += 1
        return n

    def _source(
        self, topic: str, start: str, subscription: Optional[str], subscription_type: str
    ) -> _Source:
        if subscription is None:
            reader = self.client.create_reader(topic, start)
            return _Source(reader, reader.read_many, _pulsar_record)
        consumer = self.client.subscribe(
            topic, subscription, subscription_type=subscription_type, initial_position=start
        )

        def record(m: Any) -> Record:
            return _pulsar_record(m, functools.partial(consumer.acknowledge, m))

        return _Source(consumer, consumer.receive_many, record)

    def lookup(self, topic: str) -> list[dict[str, Any]]:
        lk = self.client.lookup()
        names = lk.topic_partitions(topic) if lk.partitions(topic) else [topic]
        return [{"topic": t, "broker": lk.broker_url(t)} for t in names]

    def topics(self, where: Optional[str]) -> list[str]:
        return sorted(self.client.lookup().topics_of_namespace(where or "public/default"))

    def _producer(self, topic: str) -> tuple[Any, Callable[[bytes], Any]]:
        p = self.client.create_producer(topic)
        return p, p.send_async


def _pulsar_record(m: Any, ack: Optional[Callable[[], None]] = None) -> Record:
    mid = m.message_id
    return Record(
        value=m.value,
        position=f"{mid.ledger_id}:{mid.entry_id}:{mid.partition}:{mid.batch_index}",
        key=m.key,
        partition=mid.partition,
        time_ms=m.publish_time,
        properties=m.properties,
        ack=ack,
    )


# -- TANK ---------------------------------------------------------------------------------


class TankBackend(Backend):
    name = "tank"
    module = "streamwire.tank"
    no_properties = "TANK messages have no properties"
    no_subscriptions = "TANK has no subscriptions: read from --start and keep the printed positions"

    def _produce(self, topic: str, values: Iterable[bytes], key: Optional[str], props: Any) -> int:
        vals = list(values)
        keys = None if key is None else [key.encode()] * len(vals)
        p = self.client.create_producer(topic)
        try:
            return int(p.send_many(vals, keys=keys))
        finally:
            p.close()

    def _source(
        self, topic: str, start: str, subscription: Optional[str], subscription_type: str
    ) -> _Source:
        if start not in ("earliest", "latest"):
            raise InvalidArgumentError(f"--start is earliest or latest, not {start!r}")
        where: Literal["earliest", "latest"] = "earliest" if start == "earliest" else "latest"
        consumer = self.client.create_consumer(topic, start=where, max_wait=0.2)
        return _Source(consumer, consumer.receive_many, _tank_record)

    def lookup(self, topic: str) -> list[dict[str, Any]]:
        return [p._asdict() for p in self.client.partitions(topic)]

    def topics(self, where: Optional[str]) -> list[str]:
        return sorted(t.name for t in self.client.topics())

    def _producer(self, topic: str) -> tuple[Any, Callable[[bytes], Any]]:
        p = self.client.create_producer(topic)
        return p, p.send_async


def _tank_record(m: Any) -> Record:
    return Record(
        value=m.value,
        position=f"{m.partition}:{m.seq}",
        key=_text(m.key),
        partition=m.partition,
        time_ms=m.timestamp,
    )


# -- Pravega ------------------------------------------------------------------------------


def _scoped(topic: str) -> tuple[str, str]:
    scope, sep, stream = topic.partition("/")
    if not sep or not scope or not stream or "/" in stream:
        raise InvalidArgumentError(f"a Pravega topic is scope/stream, not {topic!r}")
    return scope, stream


class PravegaBackend(Backend):
    name = "pravega"
    module = "streamwire.pravega"
    no_properties = "Pravega events have no properties"
    no_subscriptions = "streamwire reads Pravega without reader groups: keep the printed stream cut"

    def _produce(self, topic: str, values: Iterable[bytes], key: Optional[str], props: Any) -> int:
        w = self.client.create_writer(*_scoped(topic))
        try:
            return int(w.write_many(list(values), routing_keys=key))
        finally:
            w.close()

    def _source(
        self, topic: str, start: str, subscription: Optional[str], subscription_type: str
    ) -> _Source:
        where = {"earliest": "head", "latest": "tail"}.get(start, start)
        r = self.client.create_reader(*_scoped(topic), where)
        return _Source(
            r,
            r.read_many,
            lambda e: Record(value=e.value, position=f"{e.segment}:{e.offset}"),
            lambda: bool(r.at_end),
        )

    def lookup(self, topic: str) -> list[dict[str, Any]]:
        return [s._asdict() for s in self.client.segments(*_scoped(topic))]

    def topics(self, where: Optional[str]) -> list[str]:
        if not where:
            raise InvalidArgumentError("name the Pravega scope whose streams to list")
        return sorted(f"{where}/{s}" for s in self.client.streams(where))

    def _producer(self, topic: str) -> tuple[Any, Callable[[bytes], Any]]:
        w = self.client.create_writer(*_scoped(topic))
        return w, w.write_async


def open_backend(url: str, topic: Optional[str] = None) -> Backend:
    """The adapter for ``url``'s scheme; ``topic`` is checked before anything connects."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "tcp" and topic is not None:
        _scoped(topic)
    if scheme in ("pulsar", "pulsar+ssl"):
        return PulsarBackend(url)
    if scheme == "tank":
        return TankBackend(url)
    if scheme == "tcp":
        return PravegaBackend(url)
    raise InvalidArgumentError(
        f"unknown service URL {url!r}: use pulsar://, pulsar+ssl://, tank:// or tcp:// (Pravega)"
    )
