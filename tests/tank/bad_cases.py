"""Bad input to ``streamwire.tank``: each case raises its documented typed exception and the
same client keeps working. Rendered into ``docs/bad-input.md`` with the Pulsar rows (see
``tests/test_bad_input.py``); run by ``tests/tank/test_tank_bad_input.py``."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from streamwire import (
    AlreadyClosedError,
    ConnectError,
    ForkedProcessError,
    PartitionNotFoundError,
    ProducerQueueFullError,
    TopicNotFoundError,
    tank,
)

from tests.bad_runner import CFG, INV, TYP, BadCase


@dataclass
class TankCtx:
    url: str
    topic: str
    client: tank.Client
    producer: tank.Producer
    consumer: tank.Consumer
    closed_client: tank.Client
    closed_producer: tank.Producer
    closed_consumer: tank.Consumer
    tiny_client: tank.Client  # memory_limit=1 KiB, producer does not block


TankCase = BadCase[TankCtx, object]


TANK_CASES: list[TankCase] = [
    TankCase(
        "tank.Client()", "wrong scheme (pulsar://)", CFG, lambda c: tank.Client("pulsar://h:1")
    ),
    TankCase("tank.Client()", "no host (tank://)", CFG, lambda c: tank.Client("tank://")),
    TankCase("tank.Client()", "port 0", CFG, lambda c: tank.Client("tank://h:0")),
    TankCase("tank.Client()", "two hosts", CFG, lambda c: tank.Client("tank://a:1,b:2")),
    TankCase("tank.Client()", "service_url not a str (5)", TYP, lambda c: tank.Client(5)),  # type: ignore[arg-type]
    TankCase(
        "tank.Client()",
        "operation_timeout=0",
        CFG,
        lambda c: tank.Client(c.url, operation_timeout=0),
    ),
    TankCase(
        "tank.Client()", "memory_limit=-1", CFG, lambda c: tank.Client(c.url, memory_limit=-1)
    ),
    TankCase(
        "tank.Client.topics()",
        "unreachable broker (port 1)",
        ConnectError,
        lambda c: tank.Client("tank://127.0.0.1:1", operation_timeout=0.5).topics(),
    ),
    TankCase("tank.Client", "pickled", TYP, lambda c: pickle.dumps(c.client)),
    TankCase("tank.Client.create_topic()", "empty name", INV, lambda c: c.client.create_topic("")),
    TankCase(
        "tank.Client.create_topic()",
        "name over 64 bytes",
        INV,
        lambda c: c.client.create_topic("x" * 65),
    ),
    TankCase(
        "tank.Client.create_topic()", "partitions=0", INV, lambda c: c.client.create_topic("z", 0)
    ),
    TankCase(
        "tank.Client.create_topic()",
        "partitions=70000",
        INV,
        lambda c: c.client.create_topic("z", 70000),
    ),
    TankCase(
        "tank.Client.create_topic()",
        "config not str/mapping (5)",
        TYP,
        lambda c: c.client.create_topic("z", 1, 5),  # type: ignore[arg-type]
    ),
    TankCase(
        "tank.Client.create_topic()",
        "topic exists",
        INV,
        lambda c: c.client.create_topic(c.topic, 2),
        note='`details["already_exists"] == 1`',
    ),
    TankCase(
        "tank.Client.partitions()",
        "unknown topic",
        TopicNotFoundError,
        lambda c: c.client.partitions("no-such-topic"),
    ),
    TankCase(
        "tank.Client.create_producer()",
        "unknown topic",
        TopicNotFoundError,
        lambda c: c.client.create_producer("no-such-topic"),
    ),
    TankCase(
        "tank.Client.create_producer()",
        "compression='zstd'",
        INV,
        lambda c: c.client.create_producer(c.topic, compression="zstd"),  # type: ignore[arg-type]
    ),
    TankCase(
        "tank.Client.create_producer()",
        "batch_max_messages=0",
        CFG,
        lambda c: c.client.create_producer(c.topic, batch_max_messages=0),
    ),
    TankCase(
        "tank.Client.create_producer()",
        "send_timeout=-1",
        CFG,
        lambda c: c.client.create_producer(c.topic, send_timeout=-1),
    ),
    TankCase(
        "tank.Client.create_consumer()",
        "unknown partition [9]",
        PartitionNotFoundError,
        lambda c: c.client.create_consumer(c.topic, partitions=[9]),
    ),
    TankCase(
        "tank.Client.create_consumer()",
        "start='middle'",
        INV,
        lambda c: c.client.create_consumer(c.topic, start="middle"),  # type: ignore[arg-type]
    ),
    TankCase(
        "tank.Client.create_consumer()",
        "start={0: -1}",
        INV,
        lambda c: c.client.create_consumer(c.topic, start={0: -1}),
    ),
    TankCase(
        "tank.Client.create_consumer()",
        "on_out_of_range='skip'",
        CFG,
        lambda c: c.client.create_consumer(c.topic, on_out_of_range="skip"),  # type: ignore[arg-type]
    ),
    TankCase(
        "tank.Client.create_consumer()",
        "fetch_size=0",
        CFG,
        lambda c: c.client.create_consumer(c.topic, fetch_size=0),
    ),
    TankCase(
        "tank.Client.create_consumer()",
        "max_wait=-1",
        CFG,
        lambda c: c.client.create_consumer(c.topic, max_wait=-1),
    ),
    TankCase("tank.Producer.send()", "value not bytes (5)", TYP, lambda c: c.producer.send(5)),  # type: ignore[arg-type]
    TankCase(
        "tank.Producer.send()", "key of 256 bytes", INV, lambda c: c.producer.send(b"v", b"k" * 256)
    ),
    TankCase("tank.Producer.send()", "key not bytes (5)", TYP, lambda c: c.producer.send(b"v", 5)),  # type: ignore[arg-type]
    TankCase(
        "tank.Producer.send()",
        "partition=7 (topic has 1)",
        PartitionNotFoundError,
        lambda c: c.producer.send(b"v", partition=7),
    ),
    TankCase(
        "tank.Producer.send()", "timestamp=-1", INV, lambda c: c.producer.send(b"v", timestamp=-1)
    ),
    TankCase(
        "tank.Producer.send_async()",
        "budget full, block_if_queue_full=False",
        ProducerQueueFullError,
        lambda c: c.tiny_client.create_producer(c.topic, block_if_queue_full=False).send_async(
            b"x" * 2048
        ),
        note="also `MessageTooBigError` when one message exceeds the whole budget",
    ),
    TankCase(
        "tank.Producer.send_many()",
        "a single bytes value",
        TYP,
        lambda c: c.producer.send_many(b"ab"),
    ),
    TankCase(
        "tank.Producer.send_many()",
        "a None value",
        INV,
        lambda c: c.producer.send_many([b"a", None]),  # type: ignore[list-item]
    ),
    TankCase(
        "tank.Producer.send_many()",
        "keys shorter than values",
        INV,
        lambda c: c.producer.send_many([b"a", b"b"], keys=[b"k"]),
    ),
    TankCase(
        "tank.Producer.send_many()",
        "pyarrow int64 array",
        TYP,
        lambda c: c.producer.send_many(__import__("pyarrow").array([1, 2])),
    ),
    TankCase("tank.Producer.flush()", "timeout=-1", INV, lambda c: c.producer.flush(timeout=-1)),
    TankCase("tank.Producer", "pickled", TYP, lambda c: pickle.dumps(c.producer)),
    TankCase(
        "tank.Consumer.receive_many()",
        "max_messages=0",
        INV,
        lambda c: c.consumer.receive_many(0),
    ),
    TankCase(
        "tank.Consumer.receive()", "timeout=-1", INV, lambda c: c.consumer.receive(timeout=-1)
    ),
    TankCase(
        "tank.Consumer.receive_arrow()",
        "unknown column",
        ValueError,
        lambda c: c.consumer.receive_arrow(10, timeout=0.1, columns=["nope"]),
    ),
    TankCase(
        "tank.Consumer.seek()",
        "partition not read (3)",
        PartitionNotFoundError,
        lambda c: c.consumer.seek(3, 1),
    ),
    TankCase("tank.Consumer.seek()", "seq=-1", INV, lambda c: c.consumer.seek(0, -1)),
    TankCase("tank.Consumer", "pickled", TYP, lambda c: pickle.dumps(c.consumer)),
    # -- closed handles -------------------------------------------------------------------------
    TankCase(
        "tank.Client.topics()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.topics(),
        "closed",
    ),
    TankCase(
        "tank.Client.create_producer()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.create_producer(c.topic),
        "closed",
    ),
    TankCase(
        "tank.Producer.send()",
        "closed producer",
        AlreadyClosedError,
        lambda c: c.closed_producer.send(b"x"),
        "closed",
    ),
    TankCase(
        "tank.Producer.send_many()",
        "closed producer",
        AlreadyClosedError,
        lambda c: c.closed_producer.send_many([b"x"]),
        "closed",
    ),
    TankCase(
        "tank.Consumer.receive()",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.receive(timeout=0.1),
        "closed",
    ),
    TankCase(
        "tank.Consumer.seek()",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.seek(0, 1),
        "closed",
    ),
    # -- fork -----------------------------------------------------------------------------------
    TankCase(
        "tank.Client.topics()",
        "parent's client in a forked child",
        ForkedProcessError,
        lambda c: c.client.topics(),
        "fork",
    ),
    TankCase(
        "tank.Producer.send()",
        "parent's producer in a forked child",
        ForkedProcessError,
        lambda c: c.producer.send(b"x"),
        "fork",
    ),
    TankCase(
        "tank.Consumer.receive()",
        "parent's consumer in a forked child",
        ForkedProcessError,
        lambda c: c.consumer.receive(timeout=0.1),
        "fork",
    ),
]
