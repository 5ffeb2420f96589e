"""Small programs written exactly as for the official Python client (``pulsar-client``).

Each takes the module to use as ``pulsar`` (the official one, or ``streamwire.compat``), a
service URL and a fresh topic, and returns what it observed as plain data (no ids, no
times), so a test can run it both ways and compare. Nothing in here knows streamwire.
"""

from __future__ import annotations

import enum
import threading
import time
from types import ModuleType
from typing import Any

N = 20


def produce_consume_callbacks(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """send_async with (result, msg_id) callbacks, properties, keys, event times; receive
    with a millisecond timeout; the Timeout at the end."""
    client = pulsar.Client(
        url,
        operation_timeout_seconds=10,
        connection_timeout_ms=5000,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    consumer = client.subscribe(
        topic,
        "sub",
        consumer_type=pulsar.ConsumerType.Exclusive,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    producer = client.create_producer(
        topic,
        producer_name="p1",
        batching_enabled=True,
        batching_max_publish_delay_ms=5,
        block_if_queue_full=True,
    )
    results: list[str] = []
    ids: list[Any] = []
    done = threading.Event()

    def callback(res: Any, msg_id: Any) -> None:
        results.append(str(res))
        ids.append(msg_id)
        if len(results) == N:
            done.set()

    for i in range(N):
        producer.send_async(
            f"m{i}".encode(),
            callback,
            properties={"i": str(i)},
            partition_key=f"k{i % 3}",
            event_timestamp=1_700_000_000_000 + i,
        )
    producer.flush()
    assert done.wait(10)
    sync_id = producer.send(b"last", properties={"sync": "yes"})
    got = []
    for _ in range(N + 1):
        msg = consumer.receive(timeout_millis=5000)
        got.append(
            (
                msg.data(),
                msg.value(),
                msg.properties(),
                msg.partition_key(),
                msg.event_timestamp(),
                msg.redelivery_count(),
                msg.topic_name() == topic,
                msg.publish_timestamp() > 1_600_000_000_000,
                msg.producer_name() != "",
            )
        )
        consumer.acknowledge(msg)
    timed_out = ""
    try:
        consumer.receive(timeout_millis=200)
    except pulsar.Timeout as e:
        timed_out = type(e).__name__
    out = {
        "results": results,
        "ids_ordered": ids == sorted(ids),
        "id_methods": [(x.partition(), x.batch_index() >= 0) for x in ids[:2]],
        "sync_id_after": sync_id > ids[-1],
        "id_roundtrip": pulsar.MessageId.deserialize(sync_id.serialize()) == sync_id,
        "got": got,
        "timed_out": timed_out,
        "producer": (
            producer.topic() == topic,
            producer.producer_name(),
            producer.last_sequence_id(),
            producer.is_connected(),
        ),
        "consumer": (
            consumer.topic() == topic,
            consumer.subscription_name(),
            consumer.is_connected(),
        ),
        "result_ok": (pulsar.Result.Ok == 0, str(pulsar.Result.Ok), int(pulsar.Result.Timeout)),
    }
    producer.close()
    consumer.close()
    client.close()
    return out


def make_records(pulsar: ModuleType) -> tuple[type, type, type]:
    """A record model written with the official DSL (every field kind, an enum, nesting)."""
    schema = pulsar.schema

    class Color(enum.Enum):
        red = 1
        green = 2

    class Point(schema.Record):
        x = schema.Double()
        y = schema.Double()

    class Reading(schema.Record):
        _avro_namespace = "demo.compat"
        name = schema.String()
        count = schema.Integer()
        total = schema.Long()
        ratio = schema.Float()
        exact = schema.Double()
        ok = schema.Boolean()
        raw = schema.Bytes()
        tags = schema.Array(schema.String())
        weights = schema.Map(schema.Double())
        color = Color
        where = Point
        note = schema.String(default="none", required=True, required_default=True)
        level = schema.Integer(required=True, default=3, required_default=True)

    return Color, Point, Reading


def _reading(classes: tuple[type, type, type], i: int, with_bytes: bool = True) -> Any:
    color_cls, point_cls, reading_cls = classes
    return reading_cls(
        name=f"r{i}",
        count=i,
        total=10**12 + i,
        ratio=0.5,
        exact=i / 3,
        ok=i % 2 == 0,
        raw=b"\x00\x01" if with_bytes else None,
        tags=["a", f"t{i}"],
        weights={"w": 1.5},
        color=color_cls.green,
        where=point_cls(x=1.0, y=float(i)),
        level=i,
    )


def _fields(value: Any) -> Any:
    if hasattr(value, "_fields"):
        return {k: _fields(getattr(value, k)) for k in value._fields}
    if isinstance(value, enum.Enum):
        return ("enum", value.name)
    if isinstance(value, list):
        return [_fields(v) for v in value]
    if isinstance(value, dict):
        return {k: _fields(v) for k, v in value.items()}
    return value


def records(pulsar: ModuleType, url: str, topic: str, kind: str) -> dict[str, Any]:
    """A Record model through AvroSchema or JsonSchema: the definition, the values back as
    instances of the class."""
    classes = make_records(pulsar)
    reading_cls = classes[2]
    schema = getattr(pulsar.schema, kind)(reading_cls)
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(
        topic, "sub", schema=schema, initial_position=pulsar.InitialPosition.Earliest
    )
    producer = client.create_producer(topic, schema=schema)
    # The official JsonSchema cannot write bytes fields reliably; keep them unset there.
    with_bytes = kind == "AvroSchema"
    for i in range(3):
        producer.send(_reading(classes, i, with_bytes))
    wrong = ""
    try:
        producer.send(b"not a record")
    except TypeError as e:
        wrong = type(e).__name__
    values = []
    for _ in range(3):
        msg = consumer.receive(timeout_millis=5000)
        value = msg.value()
        values.append(
            (
                type(value).__name__,
                isinstance(value, reading_cls),
                _fields(value),
                msg.schema_version() != "",
            )
        )
        consumer.acknowledge(msg)
    client.close()
    return {"definition": reading_cls.schema(), "values": values, "wrong": wrong}


def string_schema(pulsar: ModuleType, url: str, topic: str) -> list[Any]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(
        topic,
        "sub",
        schema=pulsar.schema.StringSchema(),
        initial_position=pulsar.InitialPosition.Earliest,
    )
    producer = client.create_producer(topic, schema=pulsar.schema.StringSchema())
    producer.send("héllo")
    msg = consumer.receive(timeout_millis=5000)
    out = [msg.value(), msg.data()]
    client.close()
    return out


def readers(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """A reader from the earliest message, from a message id (exclusive and inclusive), from a
    stored (serialized) id, has_message_available, and the Timeout at the end."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic)
    ids = [producer.send(f"r{i}".encode()) for i in range(6)]
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    first = []
    while reader.has_message_available():
        first.append(reader.read_next(timeout_millis=5000).data())
    timed_out = ""
    try:
        reader.read_next(timeout_millis=200)
    except pulsar.Timeout as e:
        timed_out = type(e).__name__
    reader.close()
    from_id = client.create_reader(topic, ids[3])
    exclusive = from_id.read_next(timeout_millis=5000).data()
    from_id.close()
    inclusive_reader = client.create_reader(topic, ids[3], start_message_id_inclusive=True)
    inclusive = inclusive_reader.read_next(timeout_millis=5000).data()
    stored = pulsar.MessageId.deserialize(ids[4].serialize())
    from_stored = client.create_reader(topic, stored)
    after_stored = from_stored.read_next(timeout_millis=5000).data()
    latest = client.create_reader(topic, pulsar.MessageId.latest)
    nothing = latest.has_message_available()
    client.close()
    return {
        "first": first,
        "timed_out": timed_out,
        "exclusive": exclusive,
        "inclusive": inclusive,
        "after_stored": after_stored,
        "latest_has": nothing,
    }


def partitioned(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """A partitioned topic (4 partitions): round robin, single partition, keys, a custom
    router; a consumer of the whole topic."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    partitions = client.get_topic_partitions(topic)
    consumer = client.subscribe(
        topic,
        "sub",
        initial_position=pulsar.InitialPosition.Earliest,
        consumer_type=pulsar.ConsumerType.Shared,
    )
    rr = client.create_producer(
        topic, message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution
    )
    rr_parts = {rr.send(f"rr{i}".encode()).partition() for i in range(8)}
    keyed: dict[str, set[int]] = {}
    for i in range(12):
        key = f"key{i % 3}"
        keyed.setdefault(key, set()).add(rr.send(b"k", partition_key=key).partition())
    single = client.create_producer(
        topic, message_routing_mode=pulsar.PartitionsRoutingMode.UseSinglePartition
    )
    single_parts = {single.send(f"s{i}".encode()).partition() for i in range(6)}

    def router(msg: Any, n: int) -> int:
        return int(msg.partition_key()[1:]) % n

    custom = client.create_producer(
        topic,
        message_routing_mode=pulsar.PartitionsRoutingMode.CustomPartition,
        message_router=router,
    )
    routed = [custom.send(b"c", partition_key=f"p{i}").partition() for i in range(6)]
    total = 8 + 12 + 6 + 6
    seen = []
    for _ in range(total):
        msg = consumer.receive(timeout_millis=5000)
        seen.append((msg.data(), msg.topic_name() in partitions))
        consumer.acknowledge(msg)
    client.close()
    return {
        "partitions": [p.rsplit("-partition-", 1)[1] for p in partitions],
        "rr_parts": len(rr_parts),
        "keys_stick": all(len(v) == 1 for v in keyed.values()),
        "single": len(single_parts),
        "routed": routed,
        "seen": sorted(seen),
    }


def subscriptions(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """Shared: two consumers split the messages; Failover: one consumer gets them all;
    cumulative acknowledgement refused on Shared."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic)
    shared = [
        client.subscribe(
            topic, "shared", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=1
        )
        for _ in range(2)
    ]
    failover = [
        client.subscribe(
            topic, "failover", consumer_type=pulsar.ConsumerType.Failover, consumer_name=f"c{i}"
        )
        for i in range(2)
    ]
    exclusive = client.subscribe(topic, "exclusive")
    for i in range(10):
        producer.send(f"m{i}".encode())

    def drain(consumer: Any) -> list[bytes]:
        # 1.5 s of quiet: a loaded machine (CI) can pause dispatch for longer than 0.5 s.
        got = []
        while True:
            try:
                msg = consumer.receive(timeout_millis=1500)
            except pulsar.Timeout:
                return got
            got.append(msg.data())
            consumer.acknowledge(msg)

    shared_got = [drain(c) for c in shared]
    failover_got = [drain(c) for c in failover]
    cumulative = ""
    try:
        shared[0].acknowledge_cumulative(pulsar.MessageId.earliest)
    except pulsar.PulsarException as e:
        cumulative = type(e).__name__
    exclusive_got = len(drain(exclusive))
    client.close()
    return {
        "shared_all": sorted(shared_got[0] + shared_got[1]),
        "failover_counts": sorted(len(g) for g in failover_got),
        "cumulative_on_shared": cumulative,
        "exclusive": exclusive_got,
    }


def batching(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """Batching options: max messages per batch, key-based batching, compression."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(
        topic,
        batching_enabled=True,
        batching_max_messages=5,
        batching_max_publish_delay_ms=1000,
        compression_type=pulsar.CompressionType.LZ4,
        block_if_queue_full=True,
    )
    results: list[str] = []
    ids: list[Any] = []

    def callback(res: Any, msg_id: Any) -> None:
        results.append(str(res))
        ids.append(msg_id)

    for i in range(10):
        producer.send_async(f"b{i}".encode(), callback)
    producer.flush()
    keyed = client.create_producer(
        topic,
        batching_enabled=True,
        batching_type=pulsar.BatchingType.KeyBased,
        batching_max_publish_delay_ms=20,
        compression_type=pulsar.CompressionType.ZSTD,
    )
    for i in range(6):
        keyed.send_async(f"kb{i}".encode(), callback, partition_key=f"k{i % 2}")
    keyed.flush()
    _wait(lambda: len(results) == 16)
    got = []
    for _ in range(16):
        msg = consumer.receive(timeout_millis=5000)
        got.append((msg.data(), msg.partition_key()))
        consumer.acknowledge(msg)
    first = ids[:10]
    client.close()
    return {
        "results": results,
        "batch_indexes": [m.batch_index() for m in first],
        "entries": len({(m.ledger_id(), m.entry_id()) for m in first}),
        "plain": got[:10],
        "keyed": sorted(got[10:]),
    }


def listeners(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """message_listener(consumer, msg) with pause/resume; reader_listener."""
    client = pulsar.Client(
        url, message_listener_threads=2, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    )
    got: list[bytes] = []
    names: list[str] = []
    lock = threading.Lock()

    def listener(consumer: Any, msg: Any) -> None:
        with lock:
            got.append(msg.data())
            names.append(consumer.subscription_name())
        consumer.acknowledge(msg)

    consumer = client.subscribe(
        topic,
        "listened",
        message_listener=listener,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    read: list[bytes] = []

    def reader_listener(reader: Any, msg: Any) -> None:
        read.append(msg.value())

    client.create_reader(topic, pulsar.MessageId.earliest, reader_listener=reader_listener)
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(f"l{i}".encode())
    _wait(lambda: len(got) == 5 and len(read) == 5)
    consumer.pause_message_listener()
    time.sleep(0.3)
    for i in range(5, 8):
        producer.send(f"l{i}".encode())
    time.sleep(0.5)
    during_pause = len(got)
    consumer.resume_message_listener()
    _wait(lambda: len(got) == 8)
    refused = ""
    try:
        consumer.receive(timeout_millis=100)
    except pulsar.PulsarException as e:
        refused = type(e).__name__
    client.close()
    return {
        "got": sorted(got),
        "names": set(names),
        "during_pause": during_pause,
        "read": sorted(read)[:5],
        "receive_with_listener": refused,
    }


def _wait(cond: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def acknowledgements(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """acknowledge_cumulative then resubscribing, get_last_message_id, batch_receive with a
    policy."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic)
    consumer = client.subscribe(
        topic,
        "sub",
        initial_position=pulsar.InitialPosition.Earliest,
        negative_ack_redelivery_delay_ms=100,
    )
    ids = [producer.send(f"a{i}".encode()) for i in range(10)]
    received = [consumer.receive(timeout_millis=5000) for _ in range(5)]
    consumer.acknowledge_cumulative(received[-1])
    consumer.close()
    consumer = client.subscribe(topic, "sub", negative_ack_redelivery_delay_ms=100)
    after_cumulative = consumer.receive(timeout_millis=5000).data()
    last = consumer.get_last_message_id()
    policy = pulsar.ConsumerBatchReceivePolicy(4, -1, 1000)
    batched = client.subscribe(
        topic,
        "batched",
        batch_receive_policy=policy,
        initial_position=pulsar.InitialPosition.Earliest,
    )
    batch = [m.data() for m in batched.batch_receive()]
    client.close()
    return {"after_cumulative": after_cumulative, "last_is_last": last == ids[-1], "batch": batch}


def seeks(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """Consumer seek to a message id, to the earliest, to a publish time; reader seek;
    negative_acknowledge on a Shared subscription and its redelivery; a second exclusive
    consumer and a second exclusive producer refused (pulsar-lite drops the connection
    there)."""
    client = pulsar.Client(
        url,
        operation_timeout_seconds=5,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    ids = [producer.send(f"a{i}".encode()) for i in range(10)]
    first = [consumer.receive(timeout_millis=5000).data() for _ in range(3)]
    consumer.seek(ids[7])
    after_seek = consumer.receive(timeout_millis=5000).data()
    consumer.seek(pulsar.MessageId.earliest)
    after_earliest = consumer.receive(timeout_millis=5000).data()
    consumer.seek(int(time.time() * 1000) + 60_000)
    nothing = ""
    try:
        consumer.receive(timeout_millis=300)
    except pulsar.Timeout as e:
        nothing = type(e).__name__
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    reader.read_next(timeout_millis=5000)
    reader.seek(ids[2])
    reader_after_seek = reader.read_next(timeout_millis=5000).data()
    nacking = client.subscribe(
        topic,
        "nack",
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
        negative_ack_redelivery_delay_ms=100,
    )
    nacked = nacking.receive(timeout_millis=5000)
    nacking.negative_acknowledge(nacked)
    others = []
    counts = []
    while True:
        try:
            again = nacking.receive(timeout_millis=1000)
        except pulsar.Timeout:
            break
        nacking.acknowledge(again.message_id())
        if again.data() == nacked.data():
            counts.append(again.redelivery_count())
        else:
            others.append(again.data())
    redelivery = (nacked.data(), counts, sorted(others))
    exclusive = client.subscribe(topic, "exclusive")
    busy = ""
    try:
        client.subscribe(topic, "exclusive")
    except pulsar.ConsumerBusy as e:
        busy = type(e).__name__
    exclusive.close()
    producer.close()
    first_producer = client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    second_producer = ""
    try:
        client.create_producer(topic, access_mode=pulsar.ProducerAccessMode.Exclusive)
    except pulsar.PulsarException as e:
        second_producer = type(e).__name__
    first_producer.close()
    client.close()
    return {
        "first": first,
        "redelivery": redelivery,
        "second_exclusive_producer": second_producer,
        "after_seek": after_seek,
        "after_earliest": after_earliest,
        "nothing": nothing,
        "reader_after_seek": reader_after_seek,
        "busy": busy,
    }


def errors(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """Errors caught by their official names."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    out: dict[str, Any] = {}
    producer = client.create_producer(topic)
    producer.close()
    try:
        producer.send(b"x")
    except pulsar.AlreadyClosed as e:
        out["send_after_close"] = type(e).__name__
    failed: list[tuple[str, str]] = []
    producer.send_async(b"x", lambda res, msg_id: failed.append((str(res), str(msg_id))))
    _wait(lambda: bool(failed))
    out["send_async_after_close"] = failed
    try:
        client.create_producer(topic, batching_enabled=True, chunking_enabled=True)
    except ValueError as e:
        out["batching_and_chunking"] = type(e).__name__
    try:
        client.subscribe(topic, "s", consumer_type="shared")
    except ValueError as e:
        out["enum_as_string"] = type(e).__name__
    try:
        pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)).create_producer(
            topic, schema=pulsar.schema.StringSchema()
        ).send(b"bytes for a string schema")
    except TypeError as e:
        out["bytes_for_string"] = type(e).__name__
    out["is_pulsar_exception"] = issubclass(pulsar.Timeout, pulsar.PulsarException)
    out["exceptions_module"] = pulsar.exceptions.TopicNotFound.__name__
    client.close()
    return out


def null_values(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """send(None): a null value (tombstone), synchronously and through send_async."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic)
    producer.send(None, partition_key="gone", properties={"why": "deleted"})
    results: list[str] = []
    producer.send_async(None, lambda res, _id: results.append(str(res)), partition_key="gone2")
    producer.send(b"kept", partition_key="kept")
    producer.flush()
    _wait(lambda: len(results) == 1)
    got = []
    seen: set[str] = set()
    while len(got) < 3:
        msg = consumer.receive(timeout_millis=5000)
        # pulsar-lite may dispatch an entry twice (to either client): a message counts once.
        if str(msg.message_id()) not in seen:
            seen.add(str(msg.message_id()))
            got.append((msg.has_null_value(), msg.data(), msg.partition_key(), msg.properties()))
    client.close()
    return {"got": got, "results": results}


def interop_produce(pulsar: ModuleType, url: str, topic: str, kind: str) -> Any:
    """Produce two records with this module's Record classes (returns the schema version)."""
    classes = make_records(pulsar)
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, schema=getattr(pulsar.schema, kind)(classes[2]))
    for i in range(2):
        producer.send(_reading(classes, i, kind == "AvroSchema"))
    client.close()


def interop_consume(pulsar: ModuleType, url: str, topic: str, kind: str) -> list[Any]:
    """Read every record of the topic with this module's Record classes."""
    classes = make_records(pulsar)
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(
        topic,
        "interop-" + pulsar.__name__,
        schema=getattr(pulsar.schema, kind)(classes[2]),
        initial_position=pulsar.InitialPosition.Earliest,
    )
    out = []
    for _ in range(4):
        msg = consumer.receive(timeout_millis=10000)
        value = msg.value()
        out.append((isinstance(value, classes[2]), _fields(value), msg.schema_version()))
        consumer.acknowledge(msg)
    client.close()
    return out


def multi_topics(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """One consumer of a list of topics, one of a regex pattern; topic_name() of each."""
    import re

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    names = [f"{topic}-a", f"{topic}-b"]
    producers = [client.create_producer(name) for name in names]
    for p in producers:
        p.send(b"warm-up")
    listed = client.subscribe(names, "list", initial_position=pulsar.InitialPosition.Earliest)
    pattern = client.subscribe(
        re.compile(re.escape(topic) + "-.*"),
        "pattern",
        initial_position=pulsar.InitialPosition.Earliest,
        pattern_auto_discovery_period=1,
    )
    for i, p in enumerate(producers):
        p.send(f"to-{i}".encode())
    out: dict[str, Any] = {}
    for name, consumer in (("list", listed), ("pattern", pattern)):
        got = []
        for _ in range(4):
            msg = consumer.receive(timeout_millis=10000)
            got.append((msg.data(), msg.topic_name().rsplit("-", 1)[1]))
            consumer.acknowledge(msg)
        out[name] = sorted(got)
    client.close()
    return out


def dead_letters(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """A Shared consumer with a dead-letter policy: a message negatively acknowledged past
    max_redeliver_count goes to the dead-letter topic, read there by another consumer."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    dlq = topic + "-DLQ"
    dead = client.subscribe(dlq, "dead", initial_position=pulsar.InitialPosition.Earliest)
    consumer = client.subscribe(
        topic,
        "work",
        consumer_type=pulsar.ConsumerType.Shared,
        initial_position=pulsar.InitialPosition.Earliest,
        negative_ack_redelivery_delay_ms=100,
        dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(
            max_redeliver_count=1, dead_letter_topic=dlq
        ),
    )
    producer = client.create_producer(topic)
    producer.send(b"poison", properties={"p": "1"})
    producer.send(b"fine")
    counts = []
    fine = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            msg = consumer.receive(timeout_millis=1000)
        except pulsar.Timeout:
            if counts:
                break
            continue
        if msg.data() == b"poison":
            counts.append(msg.redelivery_count())
            consumer.negative_acknowledge(msg)
        else:
            fine.append(msg.data())
            consumer.acknowledge(msg)
    letter = dead.receive(timeout_millis=10000)
    out = {
        "counts": counts,
        "fine": fine,
        "dead": (letter.data(), letter.properties().get("p")),
    }
    client.close()
    return out


def queue_full(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """block_if_queue_full=False with a queue of 1: sends that do not fit are reported to
    their callback as ProducerQueueIsFull, the others succeed; nothing is lost silently."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, max_pending_messages=1, block_if_queue_full=False)
    results: list[str] = []
    for i in range(200):
        producer.send_async(f"q{i}".encode(), lambda res, _id: results.append(str(res)))
    producer.flush()
    _wait(lambda: len(results) >= 200)
    time.sleep(0.2)  # a second report of any send would show in the count
    client.close()
    return {"kinds": sorted(set(results)), "count": len(results)}


def key_shared(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """Two Key_Shared consumers (with a ConsumerKeySharedPolicy): each key goes to one of them."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    policy = pulsar.ConsumerKeySharedPolicy(allow_out_of_order_delivery=True)
    consumers = [
        client.subscribe(
            topic,
            "ks",
            consumer_type=pulsar.ConsumerType.KeyShared,
            key_shared_policy=policy,
            consumer_name=f"c{i}",
        )
        for i in range(2)
    ]
    producer = client.create_producer(topic)
    for i in range(40):
        producer.send(f"v{i}".encode(), partition_key=f"key{i % 8}")
    owners: dict[str, set[int]] = {}
    total = 0
    for n, consumer in enumerate(consumers):
        while True:
            try:
                msg = consumer.receive(timeout_millis=500)
            except pulsar.Timeout:
                break
            owners.setdefault(msg.partition_key(), set()).add(n)
            consumer.acknowledge(msg)
            total += 1
    client.close()
    return {
        "total": total,
        "keys": len(owners),
        "one_owner_each": all(len(v) == 1 for v in owners.values()),
        "policy": (policy.allow_out_of_order_delivery, str(policy.key_shared_mode)),
    }


def schema_evolution(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """Two versions of a Record on one topic (the second adds a field with a default): each
    version's consumer reads both versions' records into its own class."""
    schema = pulsar.schema

    def version(extra: bool) -> type:
        fields: dict[str, Any] = {
            "name": schema.String(required=True),
            "count": schema.Integer(),
        }
        if extra:
            fields["unit"] = schema.String(default="none", required=True, required_default=True)
        return type("Sample", (schema.Record,), fields)

    v1, v2 = version(False), version(True)
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    readers = {
        name: client.subscribe(
            topic, name, schema=schema.AvroSchema(cls),
            initial_position=pulsar.InitialPosition.Earliest,
        )
        for name, cls in (("old", v1), ("new", v2))
    }  # fmt: skip
    client.create_producer(topic, schema=schema.AvroSchema(v1)).send(v1(name="a", count=1))
    client.create_producer(topic, schema=schema.AvroSchema(v2)).send(
        v2(name="b", count=2, unit="kg")
    )
    out: dict[str, Any] = {}
    for name, consumer in readers.items():
        got = []
        for _ in range(2):
            value = consumer.receive(timeout_millis=10000).value()
            got.append((type(value).__name__, {k: getattr(value, k) for k in value._fields}))
        out[name] = got
    client.close()
    return out


def compression_and_chunks(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """Every compression type, and a message larger than the broker's limit sent in chunks."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    kinds = ["NONE", "LZ4", "ZLib", "ZSTD", "SNAPPY"]
    for kind in kinds:
        producer = client.create_producer(
            topic,
            compression_type=getattr(pulsar.CompressionType, kind),
            batching_enabled=True,
        )
        producer.send((kind * 200).encode())
        producer.close()
    big = bytes(range(256)) * (6 * 1024 * 1024 // 256)  # 6 MiB, above the 5 MiB default
    chunker = client.create_producer(topic, chunking_enabled=True)
    chunker.send(big)
    got = [consumer.receive(timeout_millis=10000).data() for _ in range(len(kinds) + 1)]
    client.close()
    return {"small": [g[:8] for g in got[:-1]], "big_intact": got[-1] == big}


def table_view(pulsar: ModuleType, url: str, topic: str) -> dict[str, Any]:
    """A keyed topic read as a table: the latest value per key, for_each over what is there,
    for_each_and_listen seeing what comes later, len(), str()."""
    client = pulsar.Client(url, operation_timeout_seconds=10)
    producer = client.create_producer(topic, schema=pulsar.schema.StringSchema())
    for key, value in [("a", "1"), ("b", "2"), ("a", "3")]:
        producer.send(value, partition_key=key)
    view = client.create_table_view(topic, schema=pulsar.schema.StringSchema())
    _wait(lambda: len(view) == 2)
    seen: list[tuple[str, Any]] = []
    view.for_each(lambda k, v: seen.append((k, v)))
    listened: list[tuple[str, Any]] = []
    view.for_each_and_listen(lambda k, v: listened.append((k, v)))
    producer.send("4", partition_key="c")
    _wait(lambda: ("c", "4") in listened)
    out = {
        "a": view.get("a"),
        "b": view.get("b"),
        "missing": view.get("zz"),
        "seen": sorted(seen),
        "listened": sorted(listened),
        "len": len(view),
        "str": str(view).replace(topic, "<topic>"),
    }
    view.close()
    client.close()
    return out
