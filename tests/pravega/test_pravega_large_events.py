"""Events over 8 MiB ("large events") on the real Pravega 0.13 standalone: written through a
transient segment merged into the stream's segment, by every write call of both Python faces,
in order with the small events around them, read back whole by our reader and by the
official one; refused in a transaction, as the official client refuses them.

Volumes stay small: the standalone's cache is 128 MiB."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time

import pytest
from streamwire import MessageTooBigError, ReadOnlyError, StreamwireError, pravega
from streamwire.aio import pravega as apv

from tests.peers.faultproxy import TO_BROKER
from tests.peers.pravega import PravegaStandalone
from tests.pravega.test_pravega_client import read_n
from tests.pravega.test_pravega_interop import official_read_all

MiB = 1024 * 1024


def big(tag: int, size: int) -> bytes:
    """A payload of `size` bytes whose content depends on `tag` (a mix-up shows)."""
    block = hashlib.sha256(b"%d" % tag).digest() * 128  # 4 KiB
    return (block * (size // len(block) + 1))[:size]


def test_large_events_in_order_with_small_ones_read_back_by_both_readers(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s")
    nine, twenty = big(1, 9 * MiB), big(2, 20 * MiB)
    events = [b"small-0", nine, b"small-1", b"small-2", twenty, b"small-3"]
    with pv_client.create_writer(scope, "s") as w:
        w.write(events[0])
        w.write(nine)
        fut = w.write_async(b"small-1")  # handed over before the large one after it
        assert w.write_many([b"small-2", twenty, b"small-3"]) == 3
        assert fut.result(timeout=30) is None
        w.flush()  # the pending count is updated once the writer's task is done with a step
        assert w.pending == 0
    with pv_client.create_reader(scope, "s", "head") as r:
        got = read_n(r, len(events), timeout=60)
        assert r.read(timeout=0.5) is None, "nothing more"
    assert [len(e.value) for e in got] == [len(e) for e in events]
    assert [e.value for e in got] == events, "whole, in the order written"
    theirs = official_read_all(pravega.controller_url, scope, "s", len(events))
    assert [len(e) for e in theirs] == [len(e) for e in events]
    assert theirs == events, "the official reader reads the merged events too"


def test_write_many_async_and_routing_keys_keep_per_key_order(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "k", segments=2)
    # "k1" and "k0" hash to different segments of two (checked below).
    events = [b"a0", big(3, 9 * MiB), b"a1", b"b1", big(4, 9 * MiB)]
    keys = ["k1", "k0", "k1", "k0", "k1"]
    with pv_client.create_writer(scope, "k") as w:
        fut = w.write_many_async(events, routing_keys=keys)
        w.write(b"a2", routing_key="k1")  # handed over after the large ones: lands after them
        assert fut.result(timeout=60) is None
    with pv_client.create_reader(scope, "k", "head") as r:
        got = read_n(r, len(events) + 1, timeout=60)
        assert r.read(timeout=0.5) is None, "nothing more"
    by_segment: dict[int, list[bytes]] = {}
    for e in got:
        by_segment.setdefault(e.segment, []).append(e.value)
    seg_a = next(e.segment for e in got if e.value == b"a0")
    seg_b = next(e.segment for e in got if e.value == b"b1")
    assert seg_a != seg_b, "the two keys route to different segments"
    assert by_segment[seg_a] == [b"a0", b"a1", events[4], b"a2"], "per-key order"
    assert by_segment[seg_b] == [events[1], b"b1"], "per-key order"


def test_asyncio_face_writes_and_reads_large_events(pravega: PravegaStandalone, scope: str) -> None:
    events = [b"first", big(5, 12 * MiB), b"last"]

    async def run() -> list[bytes]:
        async with apv.Client(pravega.controller_url, timeout=30.0) as client:
            await client.create_stream(scope, "aio")
            async with await client.create_writer(scope, "aio") as w:
                await w.write(events[0])
                await w.write(events[1])
                assert await w.write_many([events[2]]) == 1
            async with await client.create_reader(scope, "aio", "head") as r:
                got: list[bytes] = []
                while len(got) < len(events):
                    e = await r.read(timeout=30)
                    assert e is not None, "every event arrives"
                    got.append(e.value)
                return got

    assert asyncio.run(run()) == events


def test_transactions_refuse_large_events_at_the_call(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "t")
    with pv_client.create_transactional_writer(scope, "t") as tw:
        txn = tw.begin()
        with pytest.raises(MessageTooBigError, match="transaction"):
            txn.write(big(6, 8 * MiB + 1))
        with pytest.raises(MessageTooBigError, match="transaction"):
            txn.write_many([b"ok", big(7, 9 * MiB)])
        txn.write(b"x" * (8 * MiB))  # the largest a transaction takes
        txn.commit()
    with pv_client.create_reader(scope, "t", "head") as r:
        got = read_n(r, 1, timeout=30)
        assert [len(e.value) for e in got] == [8 * MiB]
        assert r.read(timeout=0.5) is None, "the refused calls wrote nothing"


def test_official_writer_large_events_we_read_and_what_it_does_at_20_mib(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    """The official Python writer (PyPI ``pravega`` 0.3.8) writes events over 8 MiB through a
    transient segment too, and we read them; it cannot write 20 MiB (its serializer stops at
    its 16 MiB command limit: ``SizeLimit``, raised by ``flush``) and then writes nothing."""
    import pravega_client

    pv_client.create_stream(scope, "o")
    manager = pravega_client.StreamManager(pravega.controller_url)
    theirs = manager.create_writer(scope, "o", 1000)
    payload = big(8, 9 * MiB)
    theirs.write_event_bytes(b"before")
    theirs.write_event_bytes(payload)
    theirs.write_event_bytes(b"after")
    theirs.flush()
    with pv_client.create_reader(scope, "o", "head") as r:
        got = read_n(r, 3, timeout=60)
        assert [e.value for e in got] == [b"before", payload, b"after"]
        theirs.write_event_bytes(big(9, 20 * MiB))
        with pytest.raises(ValueError, match="SizeLimit"):
            theirs.flush()
        assert r.read(timeout=1.0) is None, "nothing of the 20 MiB event"


def test_a_sealed_segment_fails_the_large_write_and_nothing_of_it_is_read(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "sealed")
    with pv_client.create_writer(scope, "sealed") as w:
        w.write(b"first")
        pv_client.seal_stream(scope, "sealed")
        with pytest.raises(ReadOnlyError):
            w.write(big(10, 9 * MiB), timeout=60)
    with pv_client.create_reader(scope, "sealed", "head") as r:
        assert [e.value for e in read_n(r, 1)] == [b"first"]
        assert r.read(timeout=1.0) is None, "nothing of the refused event"


def test_a_connection_lost_during_the_large_write_is_retried_and_writes_it_once(
    pravega: PravegaStandalone,
    pv_client: pravega.Client,
    scope: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Cut once while the chunks are on their way: the writer writes the whole event again
    through a new transient segment (the half-written one is dropped, never merged), as the
    Java writer does; the event is read back once, whole, by our reader and the official
    one, between the events around it."""
    # The retry is a warning, and it is what this test looks for: the level is the test's own,
    # whatever other tests of the process configured.
    caplog.set_level(logging.WARNING, logger="streamwire")
    proxy = pravega.proxy
    assert proxy is not None
    pv_client.create_stream(scope, "cut")
    event = big(11, 20 * MiB)
    with pv_client.create_writer(scope, "cut") as w:
        w.write(b"first")
        # Every byte delayed 0.5 s each way, so the chunks' acknowledgements (and so the
        # merge) come at least a second after the chunks reach the store. The cut comes once
        # the first MiB of them has reached it: the write is then appending chunks, whatever
        # the machine's load (a fixed sleep missed that phase under the CI's load).
        proxy.set_latency(0.5)
        try:
            before = proxy.bytes_forwarded[TO_BROKER]
            fut = w.write_async(event)
            deadline = time.monotonic() + 60
            while proxy.bytes_forwarded[TO_BROKER] - before < MiB:
                assert time.monotonic() < deadline, "the chunks never reached the store"
                time.sleep(0.005)
            assert proxy.cut_all() >= 1
        finally:
            proxy.set_latency(0.0)
        assert fut.result(timeout=60) is None, "retried, not failed"
        w.write(b"after")
    # The engine's log records reach Python logging through its dispatcher thread: give a
    # loaded machine time to deliver the retry's record.
    deadline = time.monotonic() + 15
    while True:
        retries = [r.getMessage() for r in caplog.records if "large event" in r.getMessage()]
        if any("(appending chunks)" in m and "retrying" in m for m in retries):
            break
        assert time.monotonic() < deadline, retries
        time.sleep(0.05)
    want = [b"first", event, b"after"]
    with pv_client.create_reader(scope, "cut", "head") as r:
        got = [e.value for e in read_n(r, 3, timeout=60)]
        assert r.read(timeout=1.0) is None, "nothing more: written once, no part of it twice"
    assert [len(e) for e in got] == [len(e) for e in want]
    assert got == want
    theirs = official_read_all(pravega.controller_url, scope, "cut", 3)
    assert theirs == want, "the official reader reads it once, whole"


def test_a_large_write_that_cannot_reconnect_fails_after_the_send_timeout(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    """Retried only within the writer's budget (``send_timeout``): with every new
    connection refused, the event fails with a typed error saying so; nothing is read."""
    proxy = pravega.proxy
    assert proxy is not None
    pv_client.create_stream(scope, "refused")
    with pv_client.create_writer(scope, "refused", send_timeout=1.5) as w:
        w.write(b"first")  # the writer's own connection is up before the refusals
        proxy.refuse(4.0)
        t0 = time.monotonic()
        try:
            with pytest.raises(StreamwireError, match=r"large event.*retried for"):
                w.write(big(12, 9 * MiB), timeout=30)
        finally:
            proxy.refuse(0.0)
        assert 1.5 <= time.monotonic() - t0 < 10
        w.write(b"after")
    with pv_client.create_reader(scope, "refused", "head") as r:
        assert [e.value for e in read_n(r, 2)] == [b"first", b"after"]
        assert r.read(timeout=1.0) is None, "nothing of the failed event"
