"""A caller's partition router (``create_producer(message_router=...)``) on partitioned topics of
pulsar-lite and Apache Pulsar: every send path (``send``, ``send_async``, ``send_many``, the
asyncio ``send``) puts each message on the partition the router picked; a router that raises,
returns a non-int or an index out of range fails the send with ``InvalidArgumentError`` and
nothing of it is sent; a topic without partitions never calls the router."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any, Optional

import pytest
import streamwire
from streamwire import InvalidArgumentError, aio

from tests.peers.admin import PulsarAdmin
from tests.peers.lite import PulsarLite

PARTITIONS = 4
calls: list[tuple[Optional[str], int]] = []


def router(key: Optional[str], n: int) -> Any:
    """``k<i>`` goes to partition ``i % n``, unkeyed to the last; a few keys misbehave."""
    calls.append((key, n))
    if key is None:
        return n - 1
    if key == "raise":
        raise RuntimeError("router failed")
    bad: dict[str, Any] = {"str": "1", "big": n, "neg": -1, "bool": True, "none": None}
    if key in bad:
        return bad[key]
    return int(key[1:]) % n


def want(key: Optional[str]) -> int:
    return PARTITIONS - 1 if key is None else int(key[1:]) % PARTITIONS


@pytest.fixture(scope="module")
def partitioned_lite() -> Iterator[PulsarLite]:
    with PulsarLite({"default_partitions": PARTITIONS}) as broker:
        yield broker


def _exercise(url: str, topic: str) -> list[tuple[bytes, Optional[str]]]:
    """Send through every path; returns what was sent successfully (value, key)."""
    sent: list[tuple[bytes, Optional[str]]] = []
    calls.clear()
    with streamwire.Client(url) as client:
        p = client.create_producer(topic, message_router=router)
        assert p.num_partitions == PARTITIONS
        keys: list[Optional[str]] = [f"k{i}" for i in range(12)] + [None]
        for k in keys:
            assert p.send(b"send|%s" % str(k).encode(), key=k).partition == want(k)
            sent.append((b"send|%s" % str(k).encode(), k))
        futures = [(k, p.send_async(b"async|%s" % str(k).encode(), key=k)) for k in keys]
        for k, f in futures:
            assert f.result(timeout=30).partition == want(k)
            sent.append((b"async|%s" % str(k).encode(), k))
        values = [b"many|%s" % str(k).encode() for k in keys]
        ids = p.send_many(values, keys=keys)
        assert [i.partition for i in ids] == [want(k) for k in keys]
        sent += list(zip(values, keys))
        assert (None, PARTITIONS) in calls and ("k3", PARTITIONS) in calls

        # Misbehaving routers fail the send, typed; nothing of it goes out.
        for bad in ("raise", "str", "big", "neg", "bool", "none"):
            with pytest.raises(InvalidArgumentError, match="message_router"):
                p.send(b"bad", key=bad)
            with pytest.raises(InvalidArgumentError, match="message_router"):
                p.send_async(b"bad", key=bad)
        with pytest.raises(InvalidArgumentError) as info:
            p.send(b"bad", key="raise")
        assert isinstance(info.value.__cause__, RuntimeError)
        with pytest.raises(InvalidArgumentError):
            p.send_many([b"bad-many-1", b"bad-many-2"], keys=["k1", "big"])
        p.close()

    async def aio_sends() -> None:
        async with aio.Client(url) as client:
            ap = await client.create_producer(topic, message_router=router)
            mid = await ap.send(b"aio|k5", key="k5")
            assert mid.partition == want("k5")
            with pytest.raises(InvalidArgumentError):
                await ap.send(b"bad", key="neg")
            await ap.close()

    asyncio.run(aio_sends())
    sent.append((b"aio|k5", "k5"))
    return sent


def _read_back(url: str, topic: str, n: int) -> list[Any]:
    """Every message of the topic once. (pulsar-lite may deliver an entry a second time when
    flow permits are topped up mid-delivery, PEERS.md: the same id, so it is counted once.)"""
    by_id: dict[Any, Any] = {}
    with streamwire.Client(url) as client:
        c = client.subscribe(topic, "check", initial_position="earliest")
        end = time.monotonic() + 30
        while len(by_id) < n and time.monotonic() < end:
            for m in c.receive_many(1000, timeout=0.5):
                assert by_id.setdefault(m.message_id, m).data() == m.data()
        for m in c.receive_many(1000, timeout=0.5):  # nothing more may come
            assert by_id.setdefault(m.message_id, m).data() == m.data()
        c.close()
    return list(by_id.values())


def _check(url: str, topic: str) -> None:
    sent = _exercise(url, topic)
    got = _read_back(url, topic, len(sent))
    assert sorted(m.data() for m in got) == sorted(v for v, _ in sent), "the failed sent nothing"
    key_of = dict(sent)
    for m in got:
        assert m.message_id.partition == want(key_of[m.data()]), m.data()


def test_router_on_lite(partitioned_lite: PulsarLite, unique_topic: str) -> None:
    _check(partitioned_lite.service_url, unique_topic)


def test_router_on_apache(apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str) -> None:
    apache_admin.create_partitioned_topic(unique_topic, PARTITIONS)
    _check(apache_broker.service_url, unique_topic)


def test_router_not_called_without_partitions(lite_broker: PulsarLite, unique_topic: str) -> None:
    def refuse(key: Optional[str], n: int) -> int:
        raise AssertionError("called for a topic without partitions")

    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_producer(unique_topic, message_router=refuse) as p:
            assert p.send(b"x", key="k1").partition == -1
            assert len(p.send_many([b"a", b"b"], keys=["k1", None])) == 2
