"""Lazily started partition producers (``lazy_start_partitioned_producers=True``) on Apache
Pulsar: with single-partition routing on a 6-partition topic, the broker's topic stats show a
producer only on the partitions messages went to; a keyed message to another partition starts
that one; an eager producer shows on all six (so the check can fail). A partition whose
producer cannot start (another client holds it with an exclusive producer) fails the sends
routed to it with a typed error at once, as the official client does, and every other
message arrives: nothing is lost silently."""

from __future__ import annotations

import contextlib
import time
from types import ModuleType
from typing import Any, Optional

import pytest
import streamwire
from streamwire import exceptions as exc

from tests.interop._official_read import java_partition
from tests.peers.admin import PulsarAdmin

PARTITIONS = 6


def _with_publisher(admin: PulsarAdmin, topic: str, name: str) -> set[int]:
    """The partitions on which the broker shows a producer called ``name``."""
    return admin.partitions_with_producer(topic, PARTITIONS, name)


def test_lazy_start_creates_only_the_partitions_used(
    apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    apache_admin.create_partitioned_topic(unique_topic, PARTITIONS)
    with streamwire.Client(apache_broker.service_url) as client:
        lazy = client.create_producer(
            unique_topic,
            routing="single",
            lazy_start_partitioned_producers=True,
            producer_name="lazy",
        )
        assert lazy.num_partitions == PARTITIONS
        assert lazy.is_connected()
        used = {lazy.send(b"x").partition for _ in range(10)}
        assert len(used) == 1
        assert _with_publisher(apache_admin, unique_topic, "lazy") == used
        # A keyed message goes by its key: to another partition, which starts then.
        key = next(f"k{i}" for i in range(100) if java_partition(f"k{i}", PARTITIONS) not in used)
        other = lazy.send(b"y", key=key).partition
        assert other == java_partition(key, PARTITIONS)
        assert _with_publisher(apache_admin, unique_topic, "lazy") == used | {other}
        futures = [lazy.send_async(b"z", key=key) for _ in range(5)]
        lazy.flush()
        assert {f.result(timeout=30).partition for f in futures} == {other}
        assert lazy.is_connected()

        eager = client.create_producer(unique_topic, routing="single", producer_name="eager")
        assert _with_publisher(apache_admin, unique_topic, "eager") == set(range(PARTITIONS))
        eager.close()
        lazy.close()
        assert _with_publisher(apache_admin, unique_topic, "lazy") == set()

        consumer = client.subscribe(unique_topic, "check", initial_position="earliest")
        got: list[Any] = []
        while len(got) < 16:
            batch = consumer.receive_many(100, timeout=10)
            assert batch, f"received {len(got)} of 16"
            got.extend(batch)
        consumer.close()
    assert sorted(m.data() for m in got) == sorted([b"x"] * 10 + [b"y"] + [b"z"] * 5)
    assert {m.producer_name for m in got} == {"lazy"}


def test_lazy_start_unnamed_producer_shares_the_first_name(
    apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    # The broker names the partition created first; the lazily started ones take that name.
    apache_admin.create_partitioned_topic(unique_topic, PARTITIONS)
    with streamwire.Client(apache_broker.service_url) as client:
        with client.create_producer(
            unique_topic, routing="key_hash", lazy_start_partitioned_producers=True
        ) as p:
            name = p.name
            parts = {p.send(b"m", key=f"key-{i}").partition for i in range(40)}
            assert len(parts) > 1
        consumer = client.subscribe(unique_topic, "check", initial_position="earliest")
        got: list[Any] = []
        while len(got) < 40:
            batch = consumer.receive_many(100, timeout=10)
            assert batch, f"received {len(got)} of 40"
            got.extend(batch)
        consumer.close()
    assert {m.producer_name for m in got} == {name}


def _route(key: Optional[str], n: int) -> int:
    """``p<i>`` goes to partition ``i``; unkeyed (the official client asks once, when it
    starts its first partition) to 0."""
    return int(key[1:]) % n if key else 0


def test_a_lazy_partition_that_cannot_start_fails_its_sends_typed(
    apache_broker: Any,
    apache_admin: PulsarAdmin,
    official_pulsar: ModuleType,
    unique_topic: str,
) -> None:
    pulsar = official_pulsar
    busy = (exc.ProducerBusyError, exc.ProducerFencedError)
    apache_admin.create_partitioned_topic(unique_topic, PARTITIONS)
    official = pulsar.Client(apache_broker.service_url, operation_timeout_seconds=30)
    try:
        with streamwire.Client(apache_broker.service_url, operation_timeout=30) as client:
            ours = client.create_producer(
                unique_topic,
                lazy_start_partitioned_producers=True,
                message_router=_route,
                producer_name="lazy",
            )
            theirs = official.create_producer(
                unique_topic,
                lazy_start_partitioned_producers=True,
                message_router=lambda m, n: _route(m.partition_key() or None, n),
                producer_name="theirs",
                batching_enabled=True,
            )
            # Each started one partition at creation; `blocked` is started by neither, and
            # another client holds it with an exclusive producer, so no other may start there.
            started = _with_publisher(apache_admin, unique_topic, "lazy") | _with_publisher(
                apache_admin, unique_topic, "theirs"
            )
            blocked, fine = [i for i in range(PARTITIONS) if i not in started][:2]
            holder = official.create_producer(
                f"{unique_topic}-partition-{blocked}",
                access_mode=pulsar.ProducerAccessMode.Exclusive,
            )

            start = time.monotonic()
            with pytest.raises(busy) as ei:
                ours.send(b"b0", key=f"p{blocked}")
            took_ours = time.monotonic() - start
            assert isinstance(ei.value, exc.ServerError)
            start = time.monotonic()
            with pytest.raises(pulsar.ProducerBusy):
                theirs.send(b"b0", partition_key=f"p{blocked}")
            took_theirs = time.monotonic() - start
            note = f"time to the error: ours {took_ours:.3f} s, official {took_theirs:.3f} s"
            assert took_ours < 5.0, note
            print(note)

            # Asynchronous sends to it fail, typed; those to a partition that can start arrive.
            failing = [ours.send_async(b"b%d" % i, key=f"p{blocked}") for i in range(1, 6)]
            going = [ours.send_async(b"f%d" % i, key=f"p{fine}") for i in range(5)]
            ours.flush()
            for f in failing:
                assert isinstance(f.exception(timeout=30), busy), f.exception(timeout=0)
            assert {f.result(timeout=30).partition for f in going} == {fine}
            # The partition stays failed (the official client answers NotConnected from then
            # on); ours keeps raising the typed error that stopped it, even once freed.
            holder.close()
            with pytest.raises(busy):
                ours.send(b"b6", key=f"p{blocked}")
            with pytest.raises(pulsar.NotConnected):
                theirs.send(b"b6", partition_key=f"p{blocked}")
            assert ours.send(b"f5", key=f"p{fine}").partition == fine
            ours.close()
            # The official producer's close() raises AlreadyClosed once one of its lazily
            # started partitions failed (3.13), and so does its client's.
            with contextlib.suppress(pulsar.AlreadyClosed):
                theirs.close()

            consumer = client.subscribe(unique_topic, "check", initial_position="earliest")
            got: list[Any] = []
            while batch := consumer.receive_many(100, timeout=3):  # until 3 s of nothing
                got.extend(batch)
            consumer.close()
        assert sorted(m.data() for m in got) == [b"f%d" % i for i in range(6)]
        assert {m.message_id.partition for m in got} == {fine}
    finally:
        with contextlib.suppress(pulsar.AlreadyClosed):
            official.close()
