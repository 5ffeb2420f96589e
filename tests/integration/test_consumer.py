"""Consumer against real brokers (pulsar-lite and Apache Pulsar); the official client writes."""

from __future__ import annotations

import pickle
import time
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import exceptions as exc

from tests.integration._consumer_util import produce


def payloads(n: int, prefix: str = "m") -> list[bytes]:
    return [f"{prefix}-{i:06d}".encode() for i in range(n)]


def test_receive_and_ack(broker: Any, official_pulsar: ModuleType, unique_topic: str) -> None:
    data = payloads(100)
    produce(official_pulsar, broker.service_url, unique_topic, data, batching=True)
    with streamwire.Client(broker.service_url) as client:
        with client.subscribe(unique_topic, "s", initial_position="earliest") as c:
            got = []
            for _ in data:
                m = c.receive(timeout=10)
                got.append(m.data())
                assert m.value == m.data()
                assert m.topic == unique_topic
                c.acknowledge(m)
            assert got == data
        # Acks were flushed on close: nothing comes back.
        with client.subscribe(unique_topic, "s") as c:
            with pytest.raises(exc.OperationTimeoutError):
                c.receive(timeout=1.0)
            assert c.stats()["received"] == 0


def test_ack_list_is_all_or_nothing(
    broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    """A list with an item that is not a message fails with TypeError and acknowledges none of
    the list; a good list acknowledges every message in one call."""
    data = payloads(20)
    # unbatched: a partly acknowledged batch would come back whole to a new consumer
    produce(official_pulsar, broker.service_url, unique_topic, data, batching=False)
    with streamwire.Client(broker.service_url) as client:
        with client.subscribe(unique_topic, "s", initial_position="earliest") as c:
            msgs = []
            while len(msgs) < len(data):
                msgs.extend(c.receive_many(len(data) - len(msgs), timeout=10))
            with pytest.raises(TypeError, match="expected a Message or a MessageId"):
                c.acknowledge([msgs[0], msgs[1], 42])
            assert c.stats()["acknowledged"] == 0
            c.acknowledge(msgs[:10])
            assert c.stats()["acknowledged"] == 10
        with client.subscribe(unique_topic, "s") as c:
            again = []
            while len(again) < 10:
                again.extend(m.data() for m in c.receive_many(10, timeout=10))
            assert again == data[10:]


def test_shared_subscription_splits_messages(
    broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    data = payloads(200)
    with streamwire.Client(broker.service_url) as client:
        a = client.subscribe(unique_topic, "sh", subscription_type="shared", receiver_queue_size=10)
        b = client.subscribe(unique_topic, "sh", subscription_type="shared", receiver_queue_size=10)
        produce(official_pulsar, broker.service_url, unique_topic, data)
        seen: dict[str, list[bytes]] = {"a": [], "b": []}
        deadline = time.monotonic() + 30
        while len(seen["a"]) + len(seen["b"]) < len(data) and time.monotonic() < deadline:
            for name, c in (("a", a), ("b", b)):
                for m in c.receive_many(20, timeout=0.05):
                    seen[name].append(m.data())
                    c.acknowledge(m)
        assert sorted(seen["a"] + seen["b"]) == data
        assert seen["a"] and seen["b"], "both consumers get a share"
        a.close()
        b.close()


def test_receives_timing_out_while_messages_arrive_lose_none(
    broker: Any, broker_kind: str, unique_topic: str
) -> None:
    """A receive whose deadline passes just as a message is taken returns that message (it
    used to be dropped with the aborted task): every message trickling in is received."""
    import threading

    n = 600
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        with client.create_producer(unique_topic, batching=False) as p:

            def trickle() -> None:
                for i in range(n):
                    p.send_async(b"%d" % i)
                    if i % 20 == 0:
                        time.sleep(0.002)
                p.flush()

            t = threading.Thread(target=trickle)
            t.start()
            got: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(set(got)) < n and time.monotonic() < deadline:
                try:
                    m = c.receive(timeout=0.0005 if t.is_alive() else 1.0)
                except exc.OperationTimeoutError:
                    continue
                got.append(m.value)
                c.acknowledge(m)
            t.join()
        assert set(got) == {b"%d" % i for i in range(n)}, n - len(set(got))
        if broker_kind == "apache":  # pulsar-lite may dispatch an entry twice (docs/reliability.md)
            assert len(got) == n
        c.close()


def test_receive_timeout(broker: Any, unique_topic: str) -> None:
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(unique_topic, "s")
        t0 = time.monotonic()
        with pytest.raises(exc.OperationTimeoutError) as info:
            c.receive(timeout=0.5)
        elapsed = time.monotonic() - t0
        assert 0.45 <= elapsed < 2.0, elapsed
        assert isinstance(info.value, TimeoutError)
        t0 = time.monotonic()
        assert c.receive_many(10, timeout=0.3) == []
        assert 0.25 <= time.monotonic() - t0 < 2.0
        c.close()


def test_negative_ack_redelivers(
    broker: Any, official_pulsar: ModuleType, unique_topic: str, broker_kind: str
) -> None:
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(
            unique_topic, "n", subscription_type="shared", negative_ack_redelivery_delay=0.2
        )
        produce(official_pulsar, broker.service_url, unique_topic, [b"again"])
        m = c.receive(timeout=10)
        assert m.redelivery_count == 0
        c.negative_acknowledge(m)
        t0 = time.monotonic()
        m2 = c.receive(timeout=10)
        assert m2.data() == b"again"
        assert m2.message_id == m.message_id
        assert time.monotonic() - t0 >= 0.15
        if broker_kind == "apache":
            assert m2.redelivery_count >= 1
        c.acknowledge(m2)
        assert c.stats()["negatively_acknowledged"] == 1
        c.close()


def test_receive_many_one_crossing(
    broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    data = payloads(500)
    produce(official_pulsar, broker.service_url, unique_topic, data, batching=True)
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < len(data) and time.monotonic() < deadline:
            batch = c.receive_many(128, timeout=5)
            assert 1 <= len(batch) <= 128
            got.extend(m.data() for m in batch)
            c.acknowledge(batch)
        assert got == data
        c.close()


def test_receive_arrow(broker: Any, official_pulsar: ModuleType, unique_topic: str) -> None:
    import pyarrow as pa

    n = 50
    data = payloads(n)
    keys = [f"k{i}" if i % 2 else None for i in range(n)]
    props = [{"i": str(i), "x": "y"} if i % 3 else {} for i in range(n)]
    events = [1_700_000_000_000 + i if i % 5 else None for i in range(n)]
    produce(
        official_pulsar,
        broker.service_url,
        unique_topic,
        data,
        batching=True,
        keys=keys,
        properties=props,
        event_times=events,
        producer_name="arrow-writer",
    )
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        batches = []
        total = 0
        while total < n:
            rb = c.receive_arrow(n - total, timeout=10)
            assert isinstance(rb, pa.RecordBatch)
            batches.append(rb)
            total += rb.num_rows
        table = pa.Table.from_batches(batches)
        assert table.column("value").to_pylist() == data
        assert table.column("key").to_pylist() == keys
        assert table.schema.field("key").type == pa.string()
        assert table.schema.field("publish_time").type == pa.timestamp("ms")
        got_props = [dict(p) for p in table.column("properties").to_pylist()]
        assert got_props == props
        ev = table.column("event_time").cast(pa.int64()).to_pylist()
        assert ev == events
        assert set(table.column("producer_name").to_pylist()) == {"arrow-writer"}
        assert set(table.column("topic").to_pylist()) == {unique_topic}
        assert set(table.column("partition").to_pylist()) == {-1}
        assert table.column("redelivery_count").to_pylist() == [0] * n
        assert table.column("batch_index").to_pylist()[0] == 0
        # Acknowledging by rebuilt ids works.
        last = table.slice(n - 1).to_pylist()[0]
        c.acknowledge_cumulative(
            streamwire.MessageId(
                last["ledger_id"], last["entry_id"], last["partition"], last["batch_index"]
            )
        )
        c.close()


def test_receive_arrow_columns(broker: Any, official_pulsar: ModuleType, unique_topic: str) -> None:
    """`columns` builds only the named columns, in that order; a bad name is refused before any
    message is taken, so nothing is lost."""
    data = payloads(30)
    produce(official_pulsar, broker.service_url, unique_topic, data, batching=True, keys=["k"] * 30)
    with streamwire.Client(broker.service_url) as client:
        with client.subscribe(unique_topic, "s", initial_position="earliest") as c:
            with pytest.raises(ValueError, match=r"unknown column .payload.*value, key"):
                c.receive_arrow(30, timeout=10, columns=["value", "payload"])
            with pytest.raises(ValueError, match="named twice"):
                c.receive_arrow(30, timeout=10, columns=["key", "key"])
            with pytest.raises(TypeError):
                c.receive_arrow(30, timeout=10, columns="value")
            got: list[bytes] = []
            while len(got) < len(data):
                rb = c.receive_arrow(30, timeout=10, columns=["entry_id", "value", "key"])
                assert rb.schema.names == ["entry_id", "value", "key"]
                assert set(rb.column("key").to_pylist()) <= {"k"}
                got.extend(rb.column("value").to_pylist())
            assert got == data
        with client.create_reader(unique_topic, "earliest") as r:
            rb = r.read_arrow(30, timeout=10, columns=["message_id"])
            assert rb.schema.names == ["message_id"] and rb.num_rows > 0
            first = streamwire.MessageId.deserialize(rb.column("message_id")[0].as_py())
            assert first.batch_index == 0


def test_multi_topic_list(broker: Any, official_pulsar: ModuleType, unique_topic: str) -> None:
    t1, t2 = unique_topic + "-a", unique_topic + "-b"
    produce(official_pulsar, broker.service_url, t1, payloads(30, "a"), batching=True)
    produce(official_pulsar, broker.service_url, t2, payloads(30, "b"), batching=True)
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe([t1, t2], "s", initial_position="earliest")
        got: list[Any] = []
        while len(got) < 60:
            batch = c.receive_many(7, timeout=10)
            assert batch
            got.extend(batch)
        by_topic: dict[str, list[bytes]] = {}
        for m in got:
            by_topic.setdefault(m.topic, []).append(m.data())
            c.acknowledge(m)
        assert by_topic == {t1: payloads(30, "a"), t2: payloads(30, "b")}
        # A bare MessageId is ambiguous on a list of non-partitioned topics.
        with pytest.raises(exc.InvalidArgumentError):
            c.acknowledge(got[0].message_id)
        c.close()


def test_closed_handle_errors(broker: Any, unique_topic: str) -> None:
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(unique_topic, "s")
        c.close()
        c.close()  # idempotent
        with pytest.raises(exc.AlreadyClosedError):
            c.receive(timeout=0.1)
        with pytest.raises(exc.AlreadyClosedError):
            c.receive_many(10, timeout=0.1)
        with pytest.raises(exc.AlreadyClosedError):
            c.acknowledge(streamwire.MessageId(1, 2))
        r = client.create_reader(unique_topic, "earliest")
        r.close()
        with pytest.raises(exc.AlreadyClosedError):
            r.read_next(timeout=0.1)
    # Closing the client closes the way to subscribe.
    with pytest.raises(exc.AlreadyClosedError):
        client.subscribe(unique_topic, "s2")


def test_message_repr_is_python_spelled(broker: Any, unique_topic: str) -> None:
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        with client.create_producer(unique_topic) as p:
            p.send(b"abc", key="k0")
        m = c.receive(timeout=10)
        text = repr(m)
        assert "key='k0'" in text and f"topic='{unique_topic}'" in text, text
        assert "Some(" not in text and "3 bytes" in text
        # The official client's method spellings beside the properties.
        assert m.data() == m.value == b"abc"
        assert m.partition_key() == m.key == "k0"
        assert m.publish_timestamp() == m.publish_time > 0
        assert m.event_timestamp() == 0 and m.event_time is None
        assert m.topic_name() == m.topic == unique_topic
        c.close()


def test_pickling_refused(broker: Any, official_pulsar: ModuleType, unique_topic: str) -> None:
    produce(official_pulsar, broker.service_url, unique_topic, [b"x"])
    with streamwire.Client(broker.service_url) as client:
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(c)
        m = c.receive(timeout=10)
        with pytest.raises(TypeError, match=r"msg\.data"):
            pickle.dumps(m)
        assert pickle.loads(pickle.dumps(m.message_id)) == m.message_id
        assert repr(m).startswith("<streamwire.Message ") and "key=None" in repr(m)
        r = client.create_reader(unique_topic)
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(r)
        r.close()
        c.close()


def test_invalid_arguments(lite_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(lite_broker.service_url) as client:
        with pytest.raises(exc.ConfigError):
            client.subscribe(unique_topic, "s", subscription_type="round_robin")
        with pytest.raises(ValueError):
            client.subscribe(unique_topic, "s", receiver_queue_size=0)
        with pytest.raises(ValueError):
            client.subscribe(unique_topic, "s", initial_position="middle")
        with pytest.raises(ValueError):
            client.subscribe(unique_topic, "")
        with pytest.raises(ValueError):
            client.subscribe(unique_topic, "s", ack_timeout=-1.0)
        with pytest.raises(exc.InvalidArgumentError):
            client.subscribe("persistent://a//b", "s")
        with pytest.raises(TypeError):
            client.subscribe(123, "s")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            client.subscribe(unique_topic, "s", receiver_queue_size="big")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            client.create_reader(unique_topic, "middle")
        c = client.subscribe(unique_topic, "s")
        with pytest.raises(ValueError):
            c.receive(timeout=-1)
        with pytest.raises(ValueError):
            c.receive_many(0)
        with pytest.raises(TypeError):
            c.acknowledge("nope")  # type: ignore[arg-type]
        c.close()


def test_partitioned_topic(
    apache_broker: Any, apache_admin: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    apache_admin.create_partitioned_topic(unique_topic, 3)
    data = payloads(90)
    produce(
        official_pulsar,
        apache_broker.service_url,
        unique_topic,
        data,
        keys=[f"k{i}" for i in range(90)],
    )
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        got = []
        while len(got) < 90:
            batch = c.receive_many(10, timeout=10)
            assert batch
            got.extend(batch)
        assert sorted(m.data() for m in got) == data
        assert {m.message_id.partition for m in got} == {0, 1, 2}
        assert {m.topic for m in got} == {f"{unique_topic}-partition-{i}" for i in range(3)}
        for m in got:
            c.acknowledge(m.message_id)  # bare ids resolve by partition
        assert len(c.get_last_message_ids()) == 3
        c.close()
