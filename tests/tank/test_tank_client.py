"""streamwire.tank against a TANK broker (the real one when STREAMWIRE_TANK_BIN is set, else
the broker double): admin calls, produce and consume in every form, positions, seeks, tail
long-polling, large bundles, out-of-range reads and typed errors."""

from __future__ import annotations

import gc
import pickle
import threading
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from streamwire import (
    ConnectError,
    InvalidArgumentError,
    OperationTimeoutError,
    OutOfRangeError,
    PartitionNotFoundError,
    TopicNotFoundError,
    tank,
)

from tests.gather import gather


def fresh(client: tank.Client, partitions: int = 1) -> str:
    name = "t" + uuid.uuid4().hex[:20]
    client.create_topic(name, partitions=partitions)
    return name


def drain(consumer: tank.Consumer, n: int, timeout: float = 10.0) -> list[tank.Message]:
    return gather(lambda left: consumer.receive_many(10_000, timeout=0.5), n, timeout)


def test_admin_calls(tank_client: tank.Client) -> None:
    topic = fresh(tank_client, partitions=3)
    parts = tank_client.partitions(topic)
    assert [p.partition for p in parts] == [0, 1, 2]
    assert all(p.high_water == 0 for p in parts)
    names = {t.name: t for t in tank_client.topics()}
    assert names[topic].partitions == 3
    status = tank_client.status()
    assert status["topics"] >= 1 and status["partitions"] >= 3
    with pytest.raises(InvalidArgumentError) as exists:
        tank_client.create_topic(topic, partitions=3)
    assert exists.value.details == {"already_exists": 1}
    with pytest.raises(TopicNotFoundError):
        tank_client.partitions("nope-" + uuid.uuid4().hex[:8])
    with pytest.raises(InvalidArgumentError):
        tank_client.create_topic("x" * 65)


def test_round_trip_every_send_form(tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    with tank_client.create_producer(topic) as producer:
        producer.send(b"one", b"k1", timestamp=1_700_000_000_000)
        fut = producer.send_async(b"two")
        assert fut.result(timeout=10) is None and fut.done() and fut.exception() is None
        assert producer.send_many([b"three", b"four"], keys=[b"k3", None]) == 2
        arrow_values = pa.array([b"five", b"six"], type=pa.binary())
        assert producer.send_many(arrow_values, timestamps=[5, 6]) == 2
        producer.flush()
    assert tank_client.partitions(topic)[0].high_water == 6
    with tank_client.create_consumer(topic) as consumer:
        msgs = drain(consumer, 6)
    assert [m.value for m in msgs] == [b"one", b"two", b"three", b"four", b"five", b"six"]
    # receive_many's messages hold only Rust data: the cyclic collector does not track them.
    assert not any(gc.is_tracked(m) for m in msgs)
    assert [m.seq for m in msgs] == [1, 2, 3, 4, 5, 6]
    assert msgs[0].key == b"k1" and msgs[0].timestamp == 1_700_000_000_000
    assert msgs[2].key == b"k3" and msgs[3].key is None
    assert [m.timestamp for m in msgs[4:]] == [5, 6]
    assert all(m.topic == topic and m.partition == 0 for m in msgs)
    assert abs(msgs[1].timestamp - time.time() * 1000) < 60_000


@pytest.mark.parametrize("compression", [None, "snappy", "auto"])
def test_bulk_with_compression_and_arrow_reads(
    tank_client: tank.Client, compression: str | None
) -> None:
    topic = fresh(tank_client, partitions=2)
    values = [b"%06d:" % i + b"x" * (i % 50) for i in range(5000)]
    with tank_client.create_producer(topic, compression=compression) as producer:
        producer.send_many(values[:2500], partition=0)
        producer.send_many(values[2500:], partition=1)
    with tank_client.create_consumer(topic) as consumer:
        batches = []
        seen = 0
        deadline = time.monotonic() + 15
        while seen < 5000 and time.monotonic() < deadline:
            b = consumer.receive_arrow(4096, timeout=0.5)
            seen += b.num_rows
            batches.append(b)
        table = pa.Table.from_batches(batches)
    assert table.column_names == ["value", "key", "timestamp", "topic", "partition", "seq"]
    assert table.num_rows == 5000
    for p, expect in ((0, values[:2500]), (1, values[2500:])):
        rows = table.filter(pc.equal(table["partition"], p))
        assert rows["value"].to_pylist() == expect
        assert rows["seq"].to_pylist() == list(range(1, len(expect) + 1))


def test_key_routing_is_stable(tank_client: tank.Client) -> None:
    topic = fresh(tank_client, partitions=4)
    with tank_client.create_producer(topic) as producer:
        for i in range(200):
            producer.send_async(b"v%d" % i, b"key-%d" % (i % 10))
        producer.flush()
    with tank_client.create_consumer(topic) as consumer:
        msgs = drain(consumer, 200)
    where: dict[bytes, set[int]] = {}
    for m in msgs:
        assert m.key is not None
        where.setdefault(m.key, set()).add(m.partition)
    assert len(msgs) == 200 and all(len(ps) == 1 for ps in where.values())
    assert len({p for ps in where.values() for p in ps}) > 1


def test_positions_resume_without_gap_or_repeat(tank_client: tank.Client) -> None:
    topic = fresh(tank_client, partitions=2)
    with tank_client.create_producer(topic) as producer:
        producer.send_many([b"a%d" % i for i in range(100)], partition=0)
        producer.send_many([b"b%d" % i for i in range(100)], partition=1)
    with tank_client.create_consumer(topic, queue_bytes=64) as first:
        taken = first.receive_many(70, timeout=5)
        positions = first.positions()
    with tank_client.create_consumer(topic, start=positions) as second:
        rest = drain(second, 200 - len(taken))
    ids = [(m.partition, m.seq) for m in taken + rest]
    assert sorted(ids) == [(p, s) for p in (0, 1) for s in range(1, 101)]
    assert len(set(ids)) == 200


def test_seek_and_latest(tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    with tank_client.create_producer(topic) as producer:
        producer.send_many([b"%d" % i for i in range(10)])
        with tank_client.create_consumer(topic, start="latest", max_wait=0.2) as late:
            with pytest.raises(OperationTimeoutError):
                late.receive(timeout=0.5)
            producer.send(b"new")
            assert late.receive(timeout=5).value == b"new"
    with tank_client.create_consumer(topic) as consumer:
        assert consumer.receive(timeout=5).seq == 1
        consumer.seek(0, 8)
        assert [m.seq for m in drain(consumer, 4)] == [8, 9, 10, 11]
        with pytest.raises(PartitionNotFoundError):
            consumer.seek(3, 1)


def test_tail_long_poll_wakes_on_new_data(tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    with tank_client.create_consumer(topic, max_wait=5.0) as consumer:
        t0 = time.monotonic()
        assert consumer.receive_many(10, timeout=0.3) == []
        assert 0.25 < time.monotonic() - t0 < 2.0
        with tank_client.create_producer(topic) as producer:
            threading.Timer(0.3, lambda: producer.send(b"late")).start()
            t0 = time.monotonic()
            msg = consumer.receive(timeout=10)
            assert msg.value == b"late"
            assert time.monotonic() - t0 < 3.0


def test_a_bundle_larger_than_the_fetch_size_is_read(tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    big = b"B" * 300_000
    with tank_client.create_producer(topic) as producer:
        producer.send(big)
        producer.send(b"after")
    with tank_client.create_consumer(topic, fetch_size=1024) as consumer:
        msgs = drain(consumer, 2)
    assert [len(m.value) for m in msgs] == [300_000, 5]


def test_out_of_range_policies(tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    with tank_client.create_producer(topic) as producer:
        producer.send_many([b"%d" % i for i in range(10)])
    with tank_client.create_consumer(topic, start={0: 500}) as consumer:
        with pytest.raises(OutOfRangeError) as err:
            consumer.receive(timeout=5)
        assert err.value.first_available == 1 and err.value.high_water == 10
        consumer.seek(0, 10)
        assert consumer.receive(timeout=5).seq == 10
    with tank_client.create_consumer(topic, start={0: 500}, on_out_of_range="earliest") as c:
        assert c.receive(timeout=5).seq == 1
    with tank_client.create_consumer(
        topic, start={0: 500}, on_out_of_range="latest", max_wait=0.2
    ) as c:
        with pytest.raises(OperationTimeoutError):
            c.receive(timeout=0.6)


def test_typed_errors(tank_client: tank.Client, tank_broker: object) -> None:
    missing = "missing-" + uuid.uuid4().hex[:8]
    with pytest.raises(TopicNotFoundError):
        tank_client.create_producer(missing)
    with pytest.raises(TopicNotFoundError):
        tank_client.create_consumer(missing)
    topic = fresh(tank_client, partitions=2)
    with tank_client.create_producer(topic) as producer:
        with pytest.raises(PartitionNotFoundError):
            producer.send(b"x", partition=2)
        with pytest.raises(InvalidArgumentError):
            producer.send(b"x", b"k" * 256)
        with pytest.raises(TypeError):
            producer.send(123)  # type: ignore[arg-type]
    with pytest.raises(PartitionNotFoundError):
        tank_client.create_consumer(topic, partitions=[5])
    with pytest.raises(TypeError, match="ClientConfig"):
        pickle.dumps(tank_client)
    cfg = pickle.loads(pickle.dumps(tank.ClientConfig("tank://127.0.0.1:1", operation_timeout=1.0)))
    with cfg.create() as dead:
        t0 = time.monotonic()
        with pytest.raises(ConnectError):
            dead.topics()
        assert time.monotonic() - t0 < 5


def test_message_repr_is_python_spelled(tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    with tank_client.create_producer(topic) as p:
        p.send(b"abc", b"k\x00")
    with tank_client.create_consumer(topic, start="earliest") as c:
        (m,) = drain(c, 1)
    text = repr(m)
    assert f"topic='{topic}'" in text and "key=b'k\\x00'" in text, text
    assert "3 bytes" in text and "Some(" not in text
