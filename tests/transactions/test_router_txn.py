"""A caller's partition router (``message_router=``) together with transactions, on a
partitioned topic of Apache Pulsar (transaction coordinator on).

Every send path (``send``, ``send_async``, ``send_many``, the asyncio ``send``) with ``txn=``
puts each message on the partition the router picked (deliberately not the one the key's hash
would pick); the official client's reader of each partition is the judge: nothing of the
transaction is visible before the commit, after it each partition holds exactly what the router
sent there, and the messages of an aborted transaction never appear.
"""

from __future__ import annotations

import asyncio
import uuid
from types import ModuleType
from typing import Any, Optional

import streamwire
from streamwire import aio

from tests.interop._official_read import java_partition, official_client
from tests.peers.admin import PulsarAdmin
from tests.peers.apache import ApachePulsar

PARTITIONS = 3


def _route(key: Optional[str], n: int) -> int:
    """``k<i>`` to partition ``(2 * i + 1) % n``; unkeyed to partition 0."""
    return 0 if key is None else (2 * int(key[1:]) + 1) % n


def _by_partition(official: Any, pulsar: ModuleType, topic: str) -> dict[int, list[bytes]]:
    """What the official client's reader of each partition reads from its start, until 1.5 s
    pass without a message."""
    out: dict[int, list[bytes]] = {}
    for i in range(PARTITIONS):
        got: list[bytes] = []
        r = official.create_reader(f"{topic}-partition-{i}", pulsar.MessageId.earliest)
        try:
            while True:
                try:
                    got.append(r.read_next(1500).data())
                except pulsar.Timeout:
                    break
        finally:
            r.close()
        out[i] = got
    return out


def test_router_places_transactional_messages_visible_on_commit_only(
    apache_broker: ApachePulsar, apache_admin: PulsarAdmin, official_pulsar: ModuleType
) -> None:
    pulsar = official_pulsar
    topic = f"persistent://public/default/txn-router-{uuid.uuid4().hex}"
    apache_admin.create_partitioned_topic(topic, PARTITIONS)
    keys: list[Optional[str]] = [f"k{i}" for i in range(6)] + [None]
    # The router disagrees with the key hash for some keys, so the check can tell them apart.
    assert any(k and _route(k, PARTITIONS) != java_partition(k, PARTITIONS) for k in keys)
    official = official_client(pulsar, apache_broker.service_url)
    want: dict[int, list[bytes]] = {i: [] for i in range(PARTITIONS)}
    try:
        with streamwire.Client(apache_broker.service_url, operation_timeout=30) as client:
            p = client.create_producer(topic, message_router=_route, batching_max_delay=0.005)
            t = client.transaction(timeout=120)
            for k in keys:
                value = b"send|%s" % str(k).encode()
                assert p.send(value, key=k, txn=t).partition == _route(k, PARTITIONS)
                want[_route(k, PARTITIONS)].append(value)
            futures = [(k, p.send_async(b"async|%s" % str(k).encode(), key=k, txn=t)) for k in keys]
            for k, f in futures:
                assert f.result(timeout=30).partition == _route(k, PARTITIONS)
                want[_route(k, PARTITIONS)].append(b"async|%s" % str(k).encode())
            values = [b"many|%s" % str(k).encode() for k in keys]
            ids = p.send_many(values, keys=keys, txn=t)
            assert [i.partition for i in ids] == [_route(k, PARTITIONS) for k in keys]
            for k, v in zip(keys, values):
                want[_route(k, PARTITIONS)].append(v)

            # An aborted transaction's messages, routed the same way, never appear.
            gone = client.transaction()
            p.send(b"aborted|k1", key="k1", txn=gone)
            p.send_many([b"aborted|k2", b"aborted|none"], keys=["k2", None], txn=gone)
            gone.abort()

            # Nothing of the open transaction is visible yet.
            assert _by_partition(official, pulsar, topic) == {i: [] for i in range(PARTITIONS)}
            t.commit()
            seen = _by_partition(official, pulsar, topic)
            assert seen == want, seen

            # The asyncio face, the same router and a transaction committed there.
            async def aio_sends() -> list[int]:
                async with aio.Client(apache_broker.service_url, operation_timeout=30) as ac:
                    ap = await ac.create_producer(topic, message_router=_route)
                    at = await ac.transaction()
                    parts = [
                        (await ap.send(b"aio|%s" % k.encode(), key=k, txn=at)).partition
                        for k in ("k4", "k5")
                    ]
                    await at.commit()
                    await ap.close()
                    return parts

            assert asyncio.run(aio_sends()) == [_route("k4", PARTITIONS), _route("k5", PARTITIONS)]
            want[_route("k4", PARTITIONS)].append(b"aio|k4")
            want[_route("k5", PARTITIONS)].append(b"aio|k5")
            assert _by_partition(official, pulsar, topic) == want
            p.close()
    finally:
        official.close()
