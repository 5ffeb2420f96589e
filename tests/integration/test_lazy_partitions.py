"""Lazily started partition producers (``lazy_start_partitioned_producers=True``) on Apache
Pulsar: with single-partition routing on a 6-partition topic, the broker's topic stats show a
producer only on the partitions messages went to; a keyed message to another partition starts
that one; an eager producer shows on all six (so the check can fail)."""

from __future__ import annotations

from typing import Any

import streamwire

from tests.interop._official_read import java_partition
from tests.peers.admin import AdminError, PulsarAdmin

PARTITIONS = 6


def _with_publisher(admin: PulsarAdmin, topic: str, name: str) -> set[int]:
    """The partitions on which the broker shows a producer called ``name``."""
    found: set[int] = set()
    for i in range(PARTITIONS):
        try:
            stats = admin.topic_stats(f"{topic}-partition-{i}")
        except AdminError as exc:
            if exc.status == 404:  # never loaded: no producer there
                continue
            raise
        if any(p.get("producerName") == name for p in stats.get("publishers", [])):
            found.add(i)
    return found


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
