"""``send_many(..., ids=False)``: the bulk path (one buffer per call, batches cut from it in
the producer, receipts settled as ranges) and the per-message fallback, against pulsar-lite
and Apache Pulsar; the official client reads back what arrived.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any, Callable

import pytest
import streamwire
import streamwire.aio
from streamwire import MessageIdRanges, OperationTimeoutError

from tests.interop._official_read import drain, official_client, official_subscribe, read_all


@pytest.fixture
def client(broker: Any) -> Iterator[streamwire.Client]:
    with streamwire.Client(broker.service_url) as c:
        yield c


def _values(n: int, tag: bytes = b"") -> list[bytes]:
    # Sizes 0..299 bytes, so batches split by bytes as well as by count.
    return [tag + (b"%d:" % i) + bytes([i % 251]) * ((i * 37) % 300) for i in range(n)]


def _check_ranges(r: MessageIdRanges, n: int) -> list[streamwire.MessageId]:
    assert isinstance(r, MessageIdRanges)
    assert len(r) == n
    ids = r.ids()
    assert ids == [r[i] for i in range(n)] == list(r)
    assert len(set(ids)) == n and ids == sorted(ids)
    assert r[-1] == ids[-1]
    with pytest.raises(IndexError):
        r[n]
    assert sum(c for *_, c in r.ranges) == n
    return ids


def test_bulk_send_read_back_by_the_official_client(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic, producer_name="bulk")
    n = 5000
    values = _values(n)
    p.send(b"before")
    r = p.send_many(values, ids=False)
    ids = _check_ranges(r, n)
    # One range per batch entry: 1,000 messages at most, 128 KiB at most.
    assert 5 <= len(r.ranges) <= 20, r.ranges
    assert all(c <= 1000 for *_, c in r.ranges)
    fut = p.send_async(b"after")
    assert p.send_many([], ids=False).ids() == []
    fut.result(10)
    got = read_all(official_pulsar, broker.service_url, unique_topic, n + 2)
    assert [g.data for g in got] == [b"before", *values, b"after"]
    assert [(g.ledger_id, g.entry_id, g.batch_index) for g in got[1 : n + 1]] == [
        (i.ledger_id, i.entry_id, i.batch_index) for i in ids
    ]
    assert all(g.producer_name == "bulk" and g.key is None for g in got)
    assert p.last_sequence_id == n + 1
    st = p.stats()
    assert st["sent"] == n + 2 and st["failed"] == 0 and len(p) == 0
    p.close()


def test_bulk_send_of_arrow_and_compressed(
    broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    with streamwire.Client(broker.service_url) as c:
        p = c.create_producer(unique_topic, compression="lz4")
        strings = pa.array([f"s{i}-ü" * (i % 7) for i in range(3000)], type=pa.string())
        large = pa.array([b"L%d" % i for i in range(10)], type=pa.large_binary())
        r1 = p.send_many(strings.slice(5, 2000), ids=False)  # an offset slice
        r2 = p.send_many(large, ids=False)
        _check_ranges(r1, 2000)
        _check_ranges(r2, 10)
        p.close()
    got = read_all(official_pulsar, broker.service_url, unique_topic, 2010)
    expected = [f"s{i}-ü".encode() * (i % 7) for i in range(5, 2005)] + [
        b"L%d" % i for i in range(10)
    ]
    assert [g.data for g in got] == expected


def test_fallback_paths_answer_alike(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    """Calls the bulk path does not take (per-message columns, a null value, batching off,
    key-based batching, chunking) still return `MessageIdRanges` with ids=False, and deliver."""
    p = client.create_producer(unique_topic)
    keyed = p.send_many([b"k0", b"k1", b"k2"], keys=["a", None, "b"], ids=False)
    _check_ranges(keyed, 3)
    nulls = p.send_many([b"x", None, b"z"], ids=False)
    _check_ranges(nulls, 3)
    unbatched = client.create_producer(unique_topic, batching=False)
    r = unbatched.send_many([b"u0", b"u1"], ids=False)
    _check_ranges(r, 2)
    assert [b for *_, b, _ in r.ranges] == [-1, -1]  # sent unbatched: no batch index
    assert r[1].batch_index == -1
    by_key = client.create_producer(unique_topic, batching_type="key_based")
    _check_ranges(by_key.send_many([b"kb0", b"kb1"], ids=False), 2)
    chunking = client.create_producer(unique_topic, batching=False, chunking=True)
    _check_ranges(chunking.send_many([b"c0"], ids=False), 1)
    got = read_all(official_pulsar, broker.service_url, unique_topic, 11)
    assert [g.data for g in got] == [
        b"k0",
        b"k1",
        b"k2",
        b"x",
        b"",
        b"z",
        b"u0",
        b"u1",
        b"kb0",
        b"kb1",
        b"c0",
    ]
    assert [g.key for g in got[:3]] == ["a", None, "b"]
    assert got[4].null_value
    for q in (p, unbatched, by_key, chunking):
        q.close()


def test_bulk_send_awaited_keeps_call_order(
    broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    async def run() -> MessageIdRanges:
        async with streamwire.aio.Client(broker.service_url) as c:
            p = await c.create_producer(unique_topic)
            first = p.send(b"first")
            bulk = p.send_many(_values(3000, b"a"), ids=False)
            ids_default = p.send_many([b"listed"])
            last = p.send(b"last")
            await first
            r = await bulk
            assert len(await ids_default) == 1
            await last
            await p.close()
            return r

    r = asyncio.run(run())
    _check_ranges(r, 3000)
    got = read_all(official_pulsar, broker.service_url, unique_topic, 3003)
    assert [g.data for g in got] == [b"first", *_values(3000, b"a"), b"listed", b"last"]


def test_bulk_send_stays_within_the_memory_budget(
    broker: Any, fault_proxy: Callable[..., Any], official_pulsar: ModuleType, unique_topic: str
) -> None:
    """A call of 2 MiB with a 64 KiB budget splits and waits: with the broker stalled no more
    than the budget is ever pending; once it answers, every message arrives."""
    proxy = fault_proxy(broker)
    values = [bytes([i % 256]) * 1024 for i in range(2048)]
    with streamwire.Client(proxy.url, memory_limit=64 * 1024) as c:
        p = c.create_producer(unique_topic, send_timeout=0)
        p.send(b"warm")
        proxy.stall(True)
        out: dict[str, Any] = {}

        def call() -> None:
            try:
                out["r"] = p.send_many(values, ids=False)
            except Exception as e:  # reported by the assertion below
                out["e"] = e

        t = threading.Thread(target=call)
        t.start()
        peak = 0
        for _ in range(20):
            time.sleep(0.05)
            peak = max(peak, len(p))
        assert t.is_alive(), "the call must wait for room"
        assert 0 < peak <= 64, peak
        proxy.stall(False)
        t.join(60)
        assert not t.is_alive() and "e" not in out, out
        _check_ranges(out["r"], 2048)
        p.close()
    got = read_all(official_pulsar, broker.service_url, unique_topic, 2049)
    assert [g.data for g in got] == [b"warm", *values]


def test_broker_gone_mid_call_raises_with_the_count_not_sent(
    broker: Any, fault_proxy: Callable[..., Any], official_pulsar: ModuleType, unique_topic: str
) -> None:
    """The broker goes away while a bulk call is under way: the call raises for the whole
    call, saying how many were not sent; exactly the others were acknowledged, and they are
    on the topic, in order."""
    proxy = fault_proxy(broker)
    n = 50_000
    values = [b"%06d" % i + b"." * 1000 for i in range(n)]
    with streamwire.Client(proxy.url, operation_timeout=3) as c:
        p = c.create_producer(unique_topic, send_timeout=1.0)
        p.send(b"warm")
        out: dict[str, Any] = {}

        def call() -> None:
            try:
                out["r"] = p.send_many(values, ids=False)
            except Exception as e:  # checked below
                out["e"] = e

        t = threading.Thread(target=call)
        t.start()
        deadline = time.monotonic() + 30
        while p.stats()["sent"] < 5000 and time.monotonic() < deadline:
            time.sleep(0.001)
        proxy.refuse(60)
        proxy.cut_all()
        t.join(60)
        assert not t.is_alive()
        e = out.get("e")
        assert isinstance(e, OperationTimeoutError), out
        acked = p.stats()["sent"] - 1  # less the warm-up
        assert 5000 <= acked < n, acked
        assert f"{n - acked} of {n} messages were not sent" in str(e), (acked, str(e))
        proxy.refuse(0)
        p.close()
    # pulsar-lite may dispatch an entry twice (or thrice) to the reader: one message per id.
    got = list(
        {
            (g.ledger_id, g.entry_id, g.batch_index, g.partition): g.data
            for g in read_all(official_pulsar, broker.service_url, unique_topic, acked + 1)
        }.values()
    )
    assert got[: acked + 1] == [b"warm", *values[:acked]]
    # Entries the broker stored but whose receipts the cut lost may follow (at least once, as
    # with any Pulsar client): they continue the sequence, nothing skipped or reordered.
    assert got[acked + 1 :] == values[acked : len(got) - 1]


def _ids_match(got: list[Any], ids: list[streamwire.MessageId]) -> None:
    assert [(g.ledger_id, g.entry_id, g.batch_index, g.partition) for g in got] == [
        (i.ledger_id, i.entry_id, i.batch_index, i.partition) for i in ids
    ]


def test_ids_true_from_the_bulk_path_match_the_per_message_path(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    """``send_many(values)`` of plain values takes the bulk path and makes its list of ids
    from the settled ranges; the same values through the per-message path (an all-None
    ``keys`` column) answer the same kind of list, and the official consumer reads every
    message at exactly the id it was given, both faces."""
    p = client.create_producer(unique_topic)
    n = 2500
    values = _values(n)
    bulk = p.send_many(values)
    per_message = p.send_many(values, keys=[None] * n)
    for ids in (bulk, per_message):
        assert isinstance(ids, list) and len(ids) == n
        assert all(isinstance(i, streamwire.MessageId) for i in ids)
        assert ids == sorted(ids) and len(set(ids)) == n

    async def awaited() -> list[streamwire.MessageId]:
        async with streamwire.aio.Client(broker.service_url) as c:
            ap = await c.create_producer(unique_topic)
            ids = await ap.send_many(values[:700])
            await ap.close()
            return ids

    aio_ids = asyncio.run(awaited())
    assert len(aio_ids) == 700
    p.close()
    got = read_all(official_pulsar, broker.service_url, unique_topic, 2 * n + 700)
    assert [g.data for g in got] == values + values + values[:700]
    _ids_match(got, bulk + per_message + aio_ids)


PARTITIONS = 3


@pytest.fixture(scope="module")
def partitioned_lite() -> Iterator[Any]:
    from tests.peers.lite import PulsarLite

    with PulsarLite({"default_partitions": PARTITIONS}) as lite:
        yield lite


def _read_partitioned(official: ModuleType, url: str, topic: str, n: int) -> list[Any]:
    """Every message of a partitioned topic once, by the official consumer. (pulsar-lite may
    deliver an entry a second time when flow permits are topped up mid-delivery, PEERS.md:
    the same id, so it is counted once.)"""
    by_id: dict[tuple[int, int, int, int], Any] = {}
    client = official_client(official, url)
    try:
        consumer = official_subscribe(official, client, topic)
        deadline = time.monotonic() + 30
        while len(by_id) < n and time.monotonic() < deadline:
            for g in drain(consumer, n - len(by_id), timeout=5, extra_wait=0):
                key = (g.partition, g.ledger_id, g.entry_id, g.batch_index)
                assert by_id.setdefault(key, g).data == g.data
        for g in drain(consumer, 0, extra_wait=0.5):  # nothing new may come
            key = (g.partition, g.ledger_id, g.entry_id, g.batch_index)
            assert by_id.setdefault(key, g).data == g.data
        consumer.close()
    finally:
        client.close()
    return list(by_id.values())


def _check_partitioned(url: str, topic: str, official: ModuleType) -> None:
    n = 5000
    values = _values(n)
    with streamwire.Client(url) as c:
        p = c.create_producer(topic)
        assert p.num_partitions == PARTITIONS
        r = p.send_many(values, ids=False)
        ids = _check_ranges_unordered(r, n)
        # One batch per partition in turn (the official client's round robin with batching).
        parts = [part for _, _, part, _, _ in r.ranges]
        assert len(parts) >= 5
        assert all(b == (a + 1) % PARTITIONS for a, b in zip(parts, parts[1:])), parts
        listed = p.send_many(values[:1500])
        assert len({i.partition for i in listed}) >= 2
        single = c.create_producer(topic, routing="single")
        one = single.send_many(values[:1200], ids=False)
        assert len({part for _, _, part, _, _ in one.ranges}) == 1

        async def awaited() -> MessageIdRanges:
            async with streamwire.aio.Client(url) as ac:
                ap = await ac.create_producer(topic)
                out = await ap.send_many(values[:2000], ids=False)
                await ap.close()
                return out

        aio = asyncio.run(awaited())
        _check_ranges_unordered(aio, 2000)
        p.close()
        single.close()
    sent = ids + listed + one.ids() + aio.ids()
    data = values + values[:1500] + values[:1200] + values[:2000]
    got = _read_partitioned(official, url, topic, len(sent))
    assert len(got) == len(sent)
    by_id = {(g.partition, g.ledger_id, g.entry_id, g.batch_index): g.data for g in got}
    assert [by_id[(i.partition, i.ledger_id, i.entry_id, i.batch_index)] for i in sent] == data
    # Each partition holds its messages in input order.
    for part in range(PARTITIONS):
        mine = [i for i in ids if i.partition == part]
        assert mine == sorted(mine)


def _check_ranges_unordered(r: MessageIdRanges, n: int) -> list[streamwire.MessageId]:
    """As `_check_ranges`, for ranges over several partitions (ids not globally sorted)."""
    assert isinstance(r, MessageIdRanges) and len(r) == n
    ids = r.ids()
    assert ids == [r[i] for i in range(n)] == list(r)
    assert len(set(ids)) == n
    assert sum(c for *_, c in r.ranges) == n
    return ids


def test_bulk_send_to_a_partitioned_topic_on_lite(
    partitioned_lite: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    _check_partitioned(partitioned_lite.service_url, unique_topic, official_pulsar)


def test_bulk_send_to_a_partitioned_topic_on_apache(
    apache_broker: Any, apache_admin: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    apache_admin.create_partitioned_topic(unique_topic, PARTITIONS)
    _check_partitioned(apache_broker.service_url, unique_topic, official_pulsar)
