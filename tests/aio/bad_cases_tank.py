"""Bad input to ``streamwire.aio.tank``: each case raises its documented typed exception, and
the same client keeps working. Rendered into ``docs/bad-input.md`` with the other rows (see
``tests/test_bad_input.py``); run by ``tests/aio/test_aio_tank_bad_input.py``."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from streamwire import (
    AlreadyClosedError,
    PartitionNotFoundError,
    TopicNotFoundError,
)
from streamwire.aio import tank as atank

from tests.bad_runner import CFG, INV, TYP, BadCase, now


@dataclass
class AioTankCtx:
    url: str
    topic: str
    client: atank.Client
    producer: atank.Producer
    consumer: atank.Consumer
    closed_producer: atank.Producer
    closed_consumer: atank.Consumer


AioTankCase = BadCase[AioTankCtx, Awaitable[Any]]


async def _client(*args: Any, **kwargs: Any) -> atank.Client:
    return atank.Client(*args, **kwargs)


AIO_TANK_CASES: list[AioTankCase] = [
    AioTankCase("aio.tank.Client()", "service_url not a str (123)", TYP, lambda c: _client(123)),
    AioTankCase(
        "aio.tank.Client()",
        "operation_timeout=-1",
        CFG,
        lambda c: _client(c.url, operation_timeout=-1),
    ),
    AioTankCase(
        "aio.tank.Client.create_producer",
        "max_in_flight=0",
        CFG,
        lambda c: c.client.create_producer(c.topic, max_in_flight=0),
    ),
    AioTankCase(
        "aio.tank.Client.create_producer",
        "unknown topic",
        TopicNotFoundError,
        lambda c: c.client.create_producer("no-such-topic-aio"),
    ),
    AioTankCase(
        "aio.tank.Client.create_consumer",
        "topic name of 65 bytes",
        INV,
        lambda c: c.client.create_consumer("x" * 65),
    ),
    AioTankCase(
        "aio.tank.Client.create_consumer",
        "start not a str or dict (3.5)",
        TYP,
        lambda c: c.client.create_consumer(c.topic, start=3.5),  # type: ignore[arg-type]
    ),
    AioTankCase(
        "aio.tank.Producer.send",
        "value not bytes-like (5)",
        TYP,
        lambda c: now(lambda: c.producer.send(5)),
    ),
    AioTankCase(
        "aio.tank.Producer.send",
        "key not bytes or str (3)",
        TYP,
        lambda c: now(lambda: c.producer.send(b"v", key=3)),  # type: ignore[arg-type]
    ),
    AioTankCase(
        "aio.tank.Producer.send",
        "partition=7 on a 1-partition topic",
        PartitionNotFoundError,
        lambda c: now(lambda: c.producer.send(b"v", partition=7)),
    ),
    AioTankCase(
        "aio.tank.Producer.send_many",
        "a None value",
        INV,
        lambda c: now(lambda: c.producer.send_many([b"a", None])),
    ),
    AioTankCase(
        "aio.tank.Consumer.receive_many",
        "max_messages=0",
        INV,
        lambda c: c.consumer.receive_many(0),
    ),
    AioTankCase(
        "aio.tank.Consumer.receive_arrow",
        "unknown column",
        ValueError,
        lambda c: c.consumer.receive_arrow(10, columns=["nope"]),
    ),
    AioTankCase(
        "aio.tank.Consumer.receive",
        "timeout=-1",
        INV,
        lambda c: c.consumer.receive(timeout=-1),
    ),
    AioTankCase(
        "aio.tank.Producer.send",
        "closed producer",
        AlreadyClosedError,
        lambda c: now(lambda: c.closed_producer.send(b"v")),
        group="closed",
    ),
    AioTankCase(
        "aio.tank.Producer.flush",
        "closed producer",
        AlreadyClosedError,
        lambda c: c.closed_producer.flush(),
        group="closed",
    ),
    AioTankCase(
        "aio.tank.Consumer.receive",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.receive(timeout=1),
        group="closed",
    ),
]
