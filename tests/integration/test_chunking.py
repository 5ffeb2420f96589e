"""Chunking: messages above the broker's maximum size split into chunks and reassembled.

Both directions are checked against the official client on Apache Pulsar; the round trip
through streamwire alone runs on both brokers (5 MiB maximum on each).

The Apache fixture runs with the bookie frame limit of Pulsar's shipped ``standalone.conf``
(``nettyMaxFrameSizeBytes=5253120``, 5 MiB + 10 KiB): the bookie's default of exactly 5 MiB
refuses any entry near the maximum message size -- full-size chunks from the official client
included."""

from __future__ import annotations

import os
import time
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import MessageTooBigError

from tests.interop._official_read import official_client
from tests.peers.admin import PulsarAdmin
from tests.peers.apache import ApachePulsar

MB = 1024 * 1024


@pytest.fixture
def apache_chunks(apache_broker: ApachePulsar) -> ApachePulsar:
    # The session broker is configured with room for full-size entries.
    return apache_broker


@pytest.fixture(params=["lite", "apache"])
def broker(request: pytest.FixtureRequest) -> Any:
    if request.param == "lite":
        request.node.add_marker(pytest.mark.lite)
        return request.getfixturevalue("lite_broker")
    request.node.add_marker(pytest.mark.apache)
    return request.getfixturevalue("apache_chunks")


@pytest.fixture
def apache_admin(apache_chunks: ApachePulsar) -> PulsarAdmin:
    return PulsarAdmin(apache_chunks.admin_url)


def _receive_one(c: streamwire.Consumer, timeout: float = 60) -> streamwire.Message:
    return c.receive(timeout=timeout)


@pytest.mark.parametrize("compression", [None, "lz4"])
def test_chunked_round_trip(broker: Any, unique_topic: str, compression: Any) -> None:
    big = os.urandom(20 * MB)  # random: compression cannot bring it under the maximum
    with streamwire.Client(broker.service_url) as client:
        p = client.create_producer(
            unique_topic, chunking=True, compression=compression, producer_name="chunky"
        )
        before = p.send(b"before")
        mid = p.send(big, key="k", properties={"a": "1"})
        after = p.send(b"after")
        assert before < mid < after
        # The id names the last chunk and carries the first (Java's ChunkMessageIdImpl).
        assert mid.entry_id - before.entry_id == 5  # ceil(20 MiB / ~5 MiB) = 5 chunks
        assert mid.batch_index == -1
        plain = streamwire.MessageId(mid.ledger_id, mid.entry_id, mid.partition, -1, 0)
        assert len(mid.serialize()) > len(plain.serialize())
        assert streamwire.MessageId.deserialize(mid.serialize()) == mid
        assert p.stats()["sent"] == 3
        # Subscribed after the writes: pulsar-lite may dispatch an entry written while a
        # consumer waits twice (seen with the official consumer too).
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        got = [_receive_one(c) for _ in range(3)]
        assert [m.data() for m in got] == [b"before", big, b"after"]
        m = got[1]
        assert m.message_id == mid
        assert m.message_id.serialize() == mid.serialize()
        assert (m.key, m.properties, m.producer_name) == ("k", {"a": "1"}, "chunky")
        assert m.sequence_id == 1
        st = c.stats()
        assert (st["received"], st["reconnects"], st["invalid"]) == (3, 0, 0), st
        c.acknowledge(got)
        c.close()
        # Every chunk was acknowledged: nothing comes again on the same subscription.
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        assert c.receive_many(10, timeout=2) == []
        c.close()
        p.close()


def test_unacked_chunked_message_comes_again(apache_chunks: Any, unique_topic: str) -> None:
    # Apache only: pulsar-lite ignores REDELIVER_UNACKNOWLEDGED_MESSAGES.
    big = os.urandom(11 * MB)
    with streamwire.Client(apache_chunks.service_url) as client:
        p = client.create_producer(unique_topic, chunking=True, batching=False)
        mid = p.send(big)
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        m = _receive_one(c)
        assert m.data() == big and m.message_id == mid
        c.redeliver_unacknowledged_messages()
        again = _receive_one(c)
        assert again.data() == big and again.message_id == mid
        c.acknowledge_cumulative(again)
        c.close()
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        assert c.receive_many(10, timeout=2) == []
        c.close()


def test_chunking_off_still_refuses_big_messages(broker: Any, unique_topic: str) -> None:
    with streamwire.Client(broker.service_url) as client:
        p = client.create_producer(unique_topic, chunking=False)
        with pytest.raises(MessageTooBigError):
            p.send(b"x" * (5 * MB + 1))
        assert p.stats()["sent"] == 0
        p.close()


def test_chunked_backlog_is_cleared_on_ack_apache(
    apache_chunks: Any, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    with streamwire.Client(apache_chunks.service_url) as client:
        c = client.subscribe(unique_topic, "s", initial_position="earliest", ack_grouping_time=0)
        p = client.create_producer(unique_topic, chunking=True)
        for _ in range(2):
            p.send(os.urandom(7 * MB))
        got = [_receive_one(c) for _ in range(2)]
        assert apache_admin.topic_stats(unique_topic)["subscriptions"]["s"]["msgBacklog"] == 4
        c.acknowledge(got[0])
        c.acknowledge(got[1].message_id)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stats = apache_admin.topic_stats(unique_topic)["subscriptions"]["s"]
            if stats["msgBacklog"] == 0:
                break
            time.sleep(0.2)
        assert stats["msgBacklog"] == 0, stats
        c.close()


def test_official_reads_our_chunked_message(
    apache_chunks: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    big = os.urandom(20 * MB)
    oc = official_client(official_pulsar, apache_chunks.service_url)
    try:
        sub = oc.subscribe(
            unique_topic, "official", initial_position=official_pulsar.InitialPosition.Earliest
        )
        with streamwire.Client(apache_chunks.service_url) as client:
            p = client.create_producer(unique_topic, chunking=True, compression="zstd")
            mid = p.send(big, properties={"x": "y"})
            p.send(b"tail")
            p.close()
        m = sub.receive(timeout_millis=60_000)
        assert m.data() == big
        assert m.properties() == {"x": "y"}
        oid = m.message_id()
        assert (oid.ledger_id(), oid.entry_id(), oid.partition()) == (
            mid.ledger_id,
            mid.entry_id,
            mid.partition,
        )
        # The official client's serialized chunk id is ours, byte for byte.
        assert oid.serialize() == mid.serialize()
        sub.acknowledge(m)
        assert sub.receive(timeout_millis=30_000).data() == b"tail"
        sub.close()
    finally:
        oc.close()


def test_we_read_the_official_chunked_message(
    apache_chunks: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    big = os.urandom(12 * MB)
    oc = official_client(official_pulsar, apache_chunks.service_url)
    try:
        prod = oc.create_producer(
            unique_topic,
            chunking_enabled=True,
            batching_enabled=False,
            producer_name="official-chunks",
            compression_type=official_pulsar.CompressionType.LZ4,
        )
        oid = prod.send(big, partition_key="pk", properties={"p": "q"})
        prod.send(b"next")
        prod.close()
    finally:
        oc.close()
    with streamwire.Client(apache_chunks.service_url) as client:
        c = client.subscribe(unique_topic, "s", initial_position="earliest")
        m = _receive_one(c)
        assert m.data() == big
        assert (m.key, m.properties, m.producer_name) == ("pk", {"p": "q"}, "official-chunks")
        assert m.sequence_id == 0
        ours = m.message_id
        assert (ours.ledger_id, ours.entry_id, ours.batch_index) == (
            oid.ledger_id(),
            oid.entry_id(),
            -1,
        )
        assert ours.serialize() == oid.serialize()
        assert _receive_one(c).data() == b"next"
        assert c.stats()["invalid"] == 0
        c.close()
