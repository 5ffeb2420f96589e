"""Producers, consumers and readers follow a partitioned topic that gains partitions
(``auto_update_partitions_interval``, as the Java client's ``autoUpdatePartitionsInterval``),
on Apache Pulsar, the partitions raised through the admin REST API as
``pulsar-admin topics update-partitioned-topic`` does.

- a producer sending all along while a 2-partition topic grows to 4 reaches partitions 2 and
  3, loses nothing and keeps each partition's order (read back with the official client); one
  with interval 0 keeps writing to partitions 0 and 1 only;
- after the growth, keyed messages go where the Java client routes the same key over 4
  partitions;
- a consumer started on 2 partitions receives what is sent to the new partitions, including
  what was sent before it noticed them, and its acknowledgements there hold; one with interval
  0 does not see them; a reader of the partitioned topic reads the new partitions too;
- a lazily started producer starts a new partition at its first message there, and a
  ``message_router`` is asked with the new count;
- a listener of a consumer of several topics gets the new partitions' messages;
- the asyncio face does the same.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import streamwire
from streamwire import aio

from tests.gather import gather
from tests.interop._official_read import (
    drain,
    java_partition,
    official_client,
    official_subscribe,
)
from tests.peers.admin import PulsarAdmin, topic_path

#: Seconds between partition checks in these tests (Java's default is 60).
INTERVAL = 0.5


def grow(admin: PulsarAdmin, topic: str, partitions: int) -> None:
    """``pulsar-admin topics update-partitioned-topic -p <partitions>``."""
    admin.request("POST", f"{topic_path(topic)}/partitions", partitions)


def wait_for(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_producer_writes_to_the_partitions_the_topic_gains(
    apache_broker: Any, apache_admin: PulsarAdmin, official_pulsar: ModuleType, unique_topic: str
) -> None:
    url = apache_broker.service_url
    apache_admin.create_partitioned_topic(unique_topic, 2)
    sent: list[tuple[int, Any]] = []
    failed: list[BaseException] = []
    stop = threading.Event()
    with streamwire.Client(url) as client:
        producer = client.create_producer(
            unique_topic, auto_update_partitions_interval=INTERVAL, batching_max_delay=0.005
        )
        fixed = client.create_producer(unique_topic, auto_update_partitions_interval=0)
        assert producer.num_partitions == fixed.num_partitions == 2

        def send_all_along() -> None:
            # Unkeyed round robin, pipelined: the growth happens while sends are in flight.
            i = 0
            try:
                while not stop.is_set():
                    sent.append((i, producer.send_async(b"m%06d" % i)))
                    i += 1
                    if i % 50 == 0:
                        time.sleep(0.01)
            except BaseException as exc:  # a send that raises fails the test below
                failed.append(exc)

        sender = threading.Thread(target=send_all_along)
        sender.start()
        try:
            time.sleep(0.5)
            grow(apache_admin, unique_topic, 4)
            wait_for(lambda: producer.num_partitions == 4, "the producer to see 4 partitions")
            time.sleep(1.0)  # more sends over the 4 partitions
        finally:
            stop.set()
            sender.join()
        producer.flush()
        assert not failed, failed
        ids = [f.result(timeout=30) for _, f in sent]
        assert {i.partition for i in ids} == {0, 1, 2, 3}
        # The producer that does not check still has (and writes to) the first two.
        time.sleep(2 * INTERVAL)
        assert fixed.num_partitions == 2
        assert {fixed.send(b"fixed-%d" % i).partition for i in range(10)} == {0, 1}
        producer.close()
        fixed.close()

    n = len(sent) + 10
    client = official_client(official_pulsar, url)
    try:
        consumer = official_subscribe(official_pulsar, client, unique_topic)
        got = drain(consumer, n, timeout=60)
        consumer.close()
    finally:
        client.close()
    assert len(got) == n, f"{len(got)} of {n} read back"
    mine = [g for g in got if g.data.startswith(b"m")]
    assert sorted(g.data for g in mine) == [b"m%06d" % i for i, _ in sent], "lost or duplicated"
    by_partition: dict[int, list[bytes]] = {}
    for g in mine:
        by_partition.setdefault(g.partition, []).append(g.data)
    assert set(by_partition) == {0, 1, 2, 3}
    for p, payloads in by_partition.items():
        assert payloads == sorted(payloads), f"partition {p} out of send order"
    # Each message is where its receipt said.
    where = {b"m%06d" % i: mid.partition for (i, _), mid in zip(sent, ids)}
    assert all(where[g.data] == g.partition for g in mine)
    assert {g.partition for g in got if g.data.startswith(b"fixed-")} == {0, 1}


def test_key_routing_after_growth_is_the_java_clients(
    apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    """After the growth a key goes where the Java client (its default ``JavaStringHash``)
    routes it over the new count, and where a producer created on the grown topic sends it.
    (The official Python client is not the reference here: its C++ core hashes keys with
    ``BoostHash`` by default, so it routes most keys elsewhere before and after a growth.)"""
    url = apache_broker.service_url
    apache_admin.create_partitioned_topic(unique_topic, 2)
    keys = [f"key-{i}" for i in range(40)]
    with streamwire.Client(url) as client:
        producer = client.create_producer(unique_topic, auto_update_partitions_interval=INTERVAL)
        before = {k: producer.send(b"x", key=k).partition for k in keys}
        assert before == {k: java_partition(k, 2) for k in keys}
        grow(apache_admin, unique_topic, 4)
        wait_for(lambda: producer.num_partitions == 4, "the producer to see 4 partitions")
        ours = {k: producer.send(b"y", key=k).partition for k in keys}
        with client.create_producer(unique_topic) as fresh:
            assert fresh.num_partitions == 4
            theirs = {k: fresh.send(b"z", key=k).partition for k in keys}
        producer.close()
    assert ours == theirs == {k: java_partition(k, 4) for k in keys}
    assert set(ours.values()) == {0, 1, 2, 3}
    assert ours != before, "some keys moved to the new partitions"


def test_consumer_receives_from_the_partitions_the_topic_gains(
    apache_broker: Any, apache_admin: PulsarAdmin, official_pulsar: ModuleType, unique_topic: str
) -> None:
    url = apache_broker.service_url
    apache_admin.create_partitioned_topic(unique_topic, 2)
    with streamwire.Client(url) as client:
        # The default initial position (latest): what the new partitions get before the
        # consumer notices them must still arrive.
        consumer = client.subscribe(
            unique_topic, "grows", auto_update_partitions_interval=2.0, subscription_type="shared"
        )
        fixed = client.subscribe(unique_topic, "fixed", auto_update_partitions_interval=0)
        reader = client.create_reader(
            unique_topic, "latest", auto_update_partitions_interval=INTERVAL
        )
        assert consumer.num_partitions == fixed.num_partitions == reader.num_partitions == 2
        grow(apache_admin, unique_topic, 4)
        # Straight to the new partitions, at once: before the consumer's next check.
        official = official_client(official_pulsar, url)
        try:
            for p in (2, 3):
                out = official.create_producer(f"{unique_topic}-partition-{p}")
                for i in range(5):
                    out.send(b"p%d-%d" % (p, i))
                out.close()
        finally:
            official.close()
        assert consumer.num_partitions == 2, "sent before the consumer noticed"
        want = sorted(b"p%d-%d" % (p, i) for p in (2, 3) for i in range(5))
        got = gather(lambda left: consumer.receive_many(20, timeout=1.0), len(want), 30)
        assert sorted(m.data() for m in got) == want
        assert {m.message_id.partition for m in got} == {2, 3}
        assert consumer.num_partitions == 4
        consumer.acknowledge(got)

        read: list[Any] = []
        deadline = time.monotonic() + 30
        while len(read) < len(want) and time.monotonic() < deadline:
            read.extend(reader.read_many(20, timeout=1.0))
        assert sorted(m.data() for m in read) == want
        assert reader.num_partitions == 4

        assert fixed.receive_many(20, timeout=2.0) == []
        assert fixed.num_partitions == 2
        fixed.close()
        reader.close()
        consumer.close()

        # The acknowledgements on the new partitions held: nothing comes again.
        again = client.subscribe(unique_topic, "grows", subscription_type="shared")
        assert again.num_partitions == 4
        assert again.receive_many(20, timeout=2.0) == []
        again.close()


def test_asyncio_producer_and_consumer_follow_growth(
    apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    url = apache_broker.service_url
    apache_admin.create_partitioned_topic(unique_topic, 1)

    async def main() -> tuple[set[int], list[bytes]]:
        async with aio.Client(url) as client:
            consumer = await client.subscribe(
                unique_topic, "aio", auto_update_partitions_interval=INTERVAL
            )
            producer = await client.create_producer(
                unique_topic, auto_update_partitions_interval=INTERVAL
            )
            assert producer.num_partitions == consumer.num_partitions == 1
            grow(apache_admin, unique_topic, 3)
            deadline = time.monotonic() + 30
            while producer.num_partitions < 3 or consumer.num_partitions < 3:
                assert time.monotonic() < deadline, "no growth seen"
                await asyncio.sleep(0.05)
            ids = [await producer.send(b"a%02d" % i) for i in range(30)]
            got: list[bytes] = []
            while len(got) < 30 and time.monotonic() < deadline:
                got.extend(m.data() for m in await consumer.receive_many(30, timeout=1.0))
            await producer.close()
            await consumer.close()
            return {i.partition for i in ids}, got

    partitions, got = asyncio.run(main())
    assert partitions == {0, 1, 2}
    assert sorted(got) == [b"a%02d" % i for i in range(30)]


def test_lazy_producer_and_router_follow_growth(
    apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    apache_admin.create_partitioned_topic(unique_topic, 2)
    asked: list[int] = []

    def last_partition(key: Any, n: int) -> int:
        asked.append(n)
        return n - 1

    with streamwire.Client(apache_broker.service_url) as client:
        lazy = client.create_producer(
            unique_topic,
            routing="single",
            lazy_start_partitioned_producers=True,
            producer_name="lazy",
            auto_update_partitions_interval=INTERVAL,
        )
        routed = client.create_producer(
            unique_topic, message_router=last_partition, auto_update_partitions_interval=INTERVAL
        )
        assert routed.send(b"r").partition == 1
        grow(apache_admin, unique_topic, 4)
        wait_for(
            lambda: lazy.num_partitions == routed.num_partitions == 4,
            "the producers to see 4 partitions",
        )
        assert routed.send(b"r").partition == 3
        assert asked[0] == 2 and asked[-1] == 4
        # Nothing is started on the new partitions until a message goes there.
        assert apache_admin.partitions_with_producer(unique_topic, 4, "lazy") <= {0, 1}
        key = next(f"k{i}" for i in range(100) if java_partition(f"k{i}", 4) == 2)
        assert lazy.send(b"k", key=key).partition == 2
        assert 2 in apache_admin.partitions_with_producer(unique_topic, 4, "lazy")
        assert 3 not in apache_admin.partitions_with_producer(unique_topic, 4, "lazy")
        lazy.close()
        routed.close()


def test_listener_of_several_topics_gets_the_new_partitions(
    apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    url = apache_broker.service_url
    plain = unique_topic + "-plain"
    apache_admin.create_partitioned_topic(unique_topic, 2)
    apache_admin.create_topic(plain)
    seen: list[tuple[str, bytes]] = []
    lock = threading.Lock()

    def listener(consumer: Any, message: Any) -> None:
        with lock:
            seen.append((message.topic, message.data()))
        consumer.acknowledge(message)

    with streamwire.Client(url) as client:
        consumer = client.subscribe(
            [unique_topic, plain],
            "listen",
            message_listener=listener,
            auto_update_partitions_interval=INTERVAL,
        )
        assert consumer.num_partitions == 3
        grow(apache_admin, unique_topic, 3)
        wait_for(lambda: consumer.num_partitions == 4, "the consumer to see 3 + 1 partitions")
        with client.create_producer(f"{unique_topic}-partition-2") as p:
            p.send(b"new")
        with client.create_producer(plain) as p:
            p.send(b"plain")

        def both() -> bool:
            with lock:
                return len(seen) == 2

        wait_for(both, "the listener to get both messages")
        consumer.close()
    assert sorted(seen) == sorted([(f"{unique_topic}-partition-2", b"new"), (plain, b"plain")])
