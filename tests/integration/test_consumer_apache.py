"""Consumer behaviour that only Apache Pulsar implements faithfully (see PEERS.md): exclusive
ordering on non-batched entries, seek, termination, unload mid-stream, batch-index acks."""

from __future__ import annotations

import re
import threading
import time
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import exceptions as exc

from tests.integration._consumer_util import produce


def payloads(n: int) -> list[bytes]:
    return [f"{i:08d}".encode() for i in range(n)]


def test_exclusive_ordering_no_duplicates(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    n = 20_000
    data = payloads(n)
    produce(official_pulsar, apache_broker.service_url, unique_topic, data, batching=False)
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(
            unique_topic, "ord", initial_position="earliest", receiver_queue_size=500
        )
        got: list[bytes] = []
        deadline = time.monotonic() + 120
        while len(got) < n and time.monotonic() < deadline:
            batch = c.receive_many(1000, timeout=10)
            got.extend(m.data() for m in batch)
            if batch:
                c.acknowledge_cumulative(batch[-1])
        assert got == data
        assert c.receive_many(10, timeout=0.5) == []
        c.close()


def test_exclusive_ordering_100k_batched(apache_broker: Any, unique_topic: str) -> None:
    """The same over 100k batched messages from our own producer."""
    n = 100_000
    data = [f"{i:08d}".encode() for i in range(n)]
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(unique_topic, "ord", initial_position="earliest")
        with client.create_producer(unique_topic, batching_max_messages=500) as p:
            for i in range(0, n, 10_000):
                p.send_many(data[i : i + 10_000])
            p.flush()
        got: list[bytes] = []
        end = time.monotonic() + 60
        while len(got) < n and time.monotonic() < end:
            batch = c.receive_many(5000, timeout=5)
            got.extend(m.data() for m in batch)
            if batch:
                c.acknowledge_cumulative(batch[-1])
        assert len(got) == n
        assert got == data
        assert c.receive_many(10, timeout=0.5) == []
        c.close()


def test_seek_by_id_and_time(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    data = payloads(50)
    produce(official_pulsar, apache_broker.service_url, unique_topic, data[:25])
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    produce(official_pulsar, apache_broker.service_url, unique_topic, data[25:])
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(unique_topic, "seek", initial_position="earliest")
        msgs = []
        while len(msgs) < 50:
            msgs.extend(c.receive_many(50, timeout=10))
        c.acknowledge(msgs)
        c.seek(msgs[10].message_id)
        again = c.receive(timeout=10)
        assert again.data() == data[10]
        c.seek(middle)
        assert c.receive(timeout=10).data() == data[25]
        c.seek(0)  # the beginning
        assert c.receive(timeout=10).data() == data[0]
        assert c.get_last_message_id() == msgs[-1].message_id
        c.close()
        # Readers seek by id too.
        r = client.create_reader(unique_topic, "latest")
        r.seek(msgs[40].message_id)
        assert r.read_next(timeout=10).data() == data[40]
        # ... and by publish time: the broker resets the reader's cursor and we resume it.
        r.seek(middle)
        assert r.read_next(timeout=10).data() == data[25]
        assert [m.data() for m in r.read_many(24, timeout=10)] == data[26:]
        r.seek(0)
        assert r.read_next(timeout=10).data() == data[0]
        r.close()
        # A fresh reader from "latest" seeking back in time reads everything after that time.
        with client.create_reader(unique_topic, "latest") as r2:
            r2.seek(middle)
            got = []
            while len(got) < 25:
                got.extend(m.data() for m in r2.read_many(25, timeout=10))
            assert got == data[25:]


def test_end_of_topic(
    apache_broker: Any, apache_admin: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    produce(official_pulsar, apache_broker.service_url, unique_topic, payloads(3))
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(unique_topic, "end", initial_position="earliest")
        apache_admin.terminate(unique_topic)
        got = []
        for m in c:  # iteration stops at the end of a terminated topic (once all is acked)
            got.append(m)
            c.acknowledge(m)
        assert [m.data() for m in got] == payloads(3)
        assert c.has_reached_end_of_topic()
        with pytest.raises(exc.TopicTerminatedError):
            c.receive(timeout=5)
        c.close()


def test_unload_mid_stream_no_loss_no_duplicates(
    apache_broker: Any, apache_admin: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    n = 6000
    data = payloads(n)
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(
            unique_topic, "unload", initial_position="earliest", receiver_queue_size=100
        )
        writer = threading.Thread(
            target=produce,
            args=(official_pulsar, apache_broker.service_url, unique_topic, data),
            kwargs={"batching": True},
        )
        writer.start()
        got: list[bytes] = []
        unloads = 0
        deadline = time.monotonic() + 120
        while len(got) < n and time.monotonic() < deadline:
            for m in c.receive_many(50, timeout=5):
                got.append(m.data())
                c.acknowledge(m)
            if unloads < 2 and len(got) > (unloads + 1) * n // 3:
                apache_admin.unload(unique_topic)
                unloads += 1
        writer.join()
        assert unloads == 2
        assert len(got) == len(set(got)), "duplicates handed to the app"
        assert got == data
        assert c.stats()["reconnects"] >= 2
        c.close()


def test_batch_index_ack(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    data = payloads(10)
    produce(official_pulsar, apache_broker.service_url, unique_topic, data, batching=True)
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(
            unique_topic,
            "bia",
            initial_position="earliest",
            batch_index_ack=True,
            subscription_type="shared",
        )
        msgs = []
        while len(msgs) < 10:
            msgs.extend(c.receive_many(10, timeout=10))
        assert msgs[0].message_id.batch_size > 1, "the writer batched"
        c.acknowledge([m for m in msgs if int(m.data()) % 2 == 0])
        c.close()
        c = client.subscribe(unique_topic, "bia", batch_index_ack=True, subscription_type="shared")
        again = []
        while True:
            batch = c.receive_many(10, timeout=2)
            if not batch:
                break
            again.extend(batch)
        assert sorted(m.data() for m in again) == [d for d in data if int(d) % 2 == 1]
        c.close()


def test_regex_subscription(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    t1, t2 = unique_topic + "-x1", unique_topic + "-x2"
    produce(official_pulsar, apache_broker.service_url, t1, [b"one"])
    produce(official_pulsar, apache_broker.service_url, t2, [b"two"])
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(
            re.compile(re.escape(unique_topic) + "-x.*"), "rx", initial_position="earliest"
        )
        got = set()
        while len(got) < 2:
            got.update(m.data() for m in c.receive_many(10, timeout=10))
        assert got == {b"one", b"two"}
        c.close()


def test_broker_stats_and_unsubscribe(apache_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(unique_topic, "st", receiver_queue_size=77)
        st = c.stats(broker=True)
        assert st["broker"][0]["available_permits"] == 77
        c.unsubscribe()
        with pytest.raises(exc.AlreadyClosedError):
            c.receive(timeout=0.1)
