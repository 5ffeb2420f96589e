"""Pravega transactions against the real standalone, both faces, with the official client
(PyPI ``pravega``) as the other side: committed events become visible together to our reader
and to the official one, aborted and timed-out ones never, nothing before the commit; the
official client's committed transaction is read by ours."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from streamwire import (
    AlreadyClosedError,
    InvalidTransactionStateError,
    TransactionTimeoutError,
    pravega,
)
from streamwire.aio import pravega as apravega

from tests.peers.pravega import PravegaStandalone
from tests.pravega.test_pravega_client import read_n
from tests.pravega.test_pravega_interop import official_read_all, per_key

KEYS = [f"k{i}" for i in range(16)]


def keyed(n: int, tag: str) -> tuple[list[bytes], list[str]]:
    """``n`` events ``<key>:<i>:<tag>`` over :data:`KEYS`, and their keys."""
    keys = [KEYS[i % len(KEYS)] for i in range(n)]
    return [f"{k}:{i}:{tag}".encode() for i, k in enumerate(keys)], keys


def nothing_more(reader: pravega.Reader, seconds: float = 1.5) -> list[pravega.Event]:
    """What the reader gets within ``seconds`` (expected: nothing)."""
    got: list[pravega.Event] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got += reader.read_many(100, timeout=0.3)
    return got


def test_committed_events_become_visible_together_to_us_and_the_official_reader(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s", segments=2)
    events, keys = keyed(300, "c")
    with pv_client.create_transactional_writer(scope, "s") as tw:
        txn = tw.begin()
        assert txn.open and txn.status() == "OPEN"
        uuid.UUID(int=txn.id)  # a UUID's 128 bits
        for e, k in zip(events[:100], keys[:100]):
            txn.write(e, routing_key=k)
        assert txn.write_many(events[100:], routing_keys=keys[100:]) == 200
        txn.flush()
        with pv_client.create_reader(scope, "s", "head") as r:
            assert nothing_more(r) == [], "nothing is visible before the commit"
            txn.commit()
            assert not txn.open
            assert txn.status() == "COMMITTED"
            got = read_n(r, len(events))
            assert nothing_more(r, 0.5) == []
    values = [e.value for e in got]
    assert sorted(values) == sorted(events), "every event once"
    order = {
        k: [int(v.split(b":")[1]) for v in values if v.startswith(f"{k}:".encode())] for k in KEYS
    }
    assert all(v == sorted(v) for v in order.values()), f"per-key order: {order}"
    theirs = official_read_all(pravega.controller_url, scope, "s", len(events))
    assert sorted(theirs) == sorted(events)


def test_aborted_and_failed_transactions_leave_nothing_visible(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s", segments=2)
    tw = pv_client.create_transactional_writer(scope, "s")
    aborted = tw.begin()
    aborted.write_many([b"aborted-%d" % i for i in range(50)])
    aborted.flush()
    aborted.abort()
    aborted.abort()  # idempotent
    assert aborted.status() in ("ABORTING", "ABORTED")
    # The context manager aborts when its block raises, and commits when it ends.
    with pytest.raises(RuntimeError, match="boom"):
        with tw.begin() as failing:
            failing.write(b"raised")
            raise RuntimeError("boom")
    assert failing.status() in ("ABORTING", "ABORTED")
    with tw.begin() as kept:
        kept.write_many([b"kept-%d" % i for i in range(10)])
    assert kept.status() == "COMMITTED"
    with pv_client.create_reader(scope, "s", "head") as r:
        got = read_n(r, 10, timeout=10)
        got += nothing_more(r)
    assert sorted(e.value for e in got) == sorted(b"kept-%d" % i for i in range(10))


def test_the_official_clients_transactions_are_read_by_ours(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    import pravega_client

    pv_client.create_stream(scope, "s", segments=2)
    manager = pravega_client.StreamManager(pravega.controller_url)
    theirs = manager.create_transaction_writer(scope, "s", 7)
    committed = theirs.begin_txn()
    for i in range(40):
        committed.write_event_bytes(b"theirs-%d" % i, routing_key=KEYS[i % 4])
    dropped = theirs.begin_txn()
    dropped.write_event_bytes(b"dropped")
    dropped.abort()
    committed.commit()
    with pv_client.create_reader(scope, "s", "head") as r:
        got = read_n(r, 40)
        got += nothing_more(r)
    assert sorted(e.value for e in got) == sorted(b"theirs-%d" % i for i in range(40))


def test_ours_and_the_official_transactions_interleave_on_one_stream(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    import pravega_client

    pv_client.create_stream(scope, "s", segments=3)
    manager = pravega_client.StreamManager(pravega.controller_url)
    theirs = manager.create_transaction_writer(scope, "s", 9)
    tw = pv_client.create_transactional_writer(scope, "s", writer_id="ours")
    assert tw.writer_id == "ours"
    expected: list[bytes] = []
    for n in range(3):
        ours = tw.begin()
        their = theirs.begin_txn()
        for k in KEYS[:6]:
            ours.write(f"{k}:{2 * n}".encode(), routing_key=k)
            their.write_event_bytes(f"{k}:{2 * n + 1}".encode(), routing_key=k)
        expected += [f"{k}:{2 * n}".encode() for k in KEYS[:6]]
        expected += [f"{k}:{2 * n + 1}".encode() for k in KEYS[:6]]
        ours.commit()
        their.commit()
    got = official_read_all(pravega.controller_url, scope, "s", len(expected))
    assert sorted(got) == sorted(expected)
    assert all(v == list(range(6)) for v in per_key(got).values()), (
        "each transaction's key lands in the segment the other client's picks: order kept"
    )


def test_a_lease_that_runs_out_aborts_and_a_pinged_one_does_not(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s")
    tw = pv_client.create_transactional_writer(scope, "s", lease=LEASE)
    unpinged = tw.begin(ping=False)
    pinged = tw.begin()
    unpinged.write(b"expired")
    pinged.write(b"pinged")
    deadline = time.monotonic() + LEASE * 4 + 30
    while unpinged.status() == "OPEN" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert unpinged.status() in ("ABORTING", "ABORTED")
    with pytest.raises(TransactionTimeoutError):
        unpinged.commit()
    assert pinged.status() == "OPEN", "the pinged one outlived its lease"
    pinged.commit()
    with pv_client.create_reader(scope, "s", "head") as r:
        got = read_n(r, 1)
        got += nothing_more(r)
    assert [e.value for e in got] == [b"pinged"]


def test_ended_transactions_and_closed_writers_raise_typed_errors(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "s")
    tw = pv_client.create_transactional_writer(scope, "s")
    txn = tw.begin()
    txn.write(b"x")
    txn.commit()
    with pytest.raises(InvalidTransactionStateError, match="committed"):
        txn.commit()
    with pytest.raises(InvalidTransactionStateError):
        txn.write(b"late")
    with pytest.raises(InvalidTransactionStateError):
        txn.abort()
    other = tw.begin()
    other.abort()
    with pytest.raises(InvalidTransactionStateError, match="aborted"):
        other.commit()
    with pytest.raises(InvalidTransactionStateError):
        other.write_many([b"late"])
    # A block that raises after its own commit: the commit stands, the exception is the
    # block's (not an abort refused).
    with pytest.raises(KeyError):
        with tw.begin() as done:
            done.write(b"kept")
            done.commit()
            raise KeyError("after the commit")
    assert done.status() == "COMMITTED"
    tw.close()
    assert tw.closed
    with pytest.raises(AlreadyClosedError):
        tw.begin()


def test_asyncio_face(pravega: PravegaStandalone, scope: str) -> None:
    async def main() -> list[bytes]:
        async with apravega.Client(pravega.controller_url) as client:
            await client.create_stream(scope, "a", segments=2)
            tw = await client.create_transactional_writer(scope, "a")
            async with tw:
                txn = await tw.begin()
                assert isinstance(txn, apravega.Transaction)
                await asyncio.gather(*(txn.write(b"a-%d" % i, routing_key="k") for i in range(50)))
                assert await txn.write_many([b"b-%d" % i for i in range(50)]) == 50
                await txn.flush()
                assert await txn.status() == "OPEN"
                await txn.commit()
                assert await txn.status() == "COMMITTED"
                with pytest.raises(InvalidTransactionStateError):
                    await txn.commit()
                with pytest.raises(ValueError):
                    async with await tw.begin() as failing:
                        await failing.write(b"never")
                        raise ValueError("no")
                assert await failing.status() in ("ABORTING", "ABORTED")
                async with await tw.begin() as ok:
                    await ok.write(b"c-0")
                assert await ok.status() == "COMMITTED"
            assert tw.closed
            reader = await client.create_reader(scope, "a", "head")
            async with reader:
                got: list[bytes] = []
                for _ in range(40):
                    got += [e.value for e in await reader.read_many(200, timeout=0.5)]
                    if len(got) >= 101:
                        break
                got += [e.value for e in await reader.read_many(200, timeout=1.0)]
            return got

    got = asyncio.run(main())
    want = [b"a-%d" % i for i in range(50)] + [b"b-%d" % i for i in range(50)] + [b"c-0"]
    assert sorted(got) == sorted(want)
    a_order = [int(v[2:]) for v in got if v.startswith(b"a-")]
    assert a_order == list(range(50)), "gathered writes keep their call order"


def test_a_transaction_is_ended_by_its_id_from_another_client(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    """``Client.transaction(scope, stream, id)``: what a Spark driver does with its tasks'
    transactions. Begun and written by one client, committed, aborted, pinged and asked
    about by another, by the int id or the UUID text."""
    pv_client.create_stream(scope, "s", segments=2)
    tw = pv_client.create_transactional_writer(scope, "s")
    kept, dropped, late = tw.begin(), tw.begin(), tw.begin()
    kept.write_many([b"kept-%d" % i for i in range(30)], routing_keys="k")
    dropped.write_many([b"dropped"])
    late.write(b"late")
    for t in (kept, dropped, late):
        t.flush()
    with type(pv_client)(pravega.controller_url) as other:
        h = other.transaction(scope, "s", kept.id)
        assert (h.id, h.scope, h.stream) == (kept.id, scope, "s")
        assert str(uuid.UUID(int=kept.id)) in repr(h)
        assert h.status() == "OPEN"
        with pv_client.create_reader(scope, "s", "head") as r:
            assert nothing_more(r, 1.0) == [], "nothing is visible before the commit"
            h.commit()
            assert h.status() == "COMMITTED"
            h.commit()  # asked again (a lost answer, a re-run): nothing happens
            got = read_n(r, 30) + nothing_more(r, 1.0)
        assert sorted(e.value for e in got) == sorted(b"kept-%d" % i for i in range(30))
        with pytest.raises(InvalidTransactionStateError, match="COMMITTED"):
            h.abort()
        by_text = other.transaction(scope, "s", str(uuid.UUID(int=dropped.id)))
        by_text.abort()
        by_text.abort()  # idempotent
        assert by_text.status() in ("ABORTING", "ABORTED")
        with pytest.raises(TransactionTimeoutError):
            by_text.commit()
        pinged = other.transaction(scope, "s", late.id)
        pinged.ping(30.0)
        pinged.commit(wait=False, writer_id="driver", timestamp=1_700_000_000_000)
        assert pinged.status() in ("COMMITTING", "COMMITTED")
        assert other.transaction(scope, "s", 0x5EED).status() == "UNKNOWN"
        with pytest.raises(InvalidTransactionStateError, match="unknown"):
            other.transaction(scope, "s", 0x5EED).commit()
    with pv_client.create_reader(scope, "s", "head") as r:
        got = read_n(r, 31) + nothing_more(r)
    assert sorted(e.value for e in got) == sorted([b"kept-%d" % i for i in range(30)] + [b"late"])


def test_the_official_clients_transaction_is_committed_by_our_handle(
    pravega: PravegaStandalone, pv_client: pravega.Client, scope: str
) -> None:
    """The official client's transaction committed by our handle (its own ``get_txn`` cannot
    commit a transaction its writer did not write: ``TxnFailedException``); the asyncio handle
    too."""
    import pravega_client

    pv_client.create_stream(scope, "s")
    manager = pravega_client.StreamManager(pravega.controller_url)
    theirs = manager.create_transaction_writer(scope, "s", 11)
    their_txn = theirs.begin_txn()
    their_txn.write_event_bytes(b"theirs")
    pv_client.transaction(scope, "s", their_txn.get_txn_id()).commit()
    assert pv_client.transaction(scope, "s", their_txn.get_txn_id()).status() == "COMMITTED"

    async def aio_commit() -> str:
        async with apravega.Client(pravega.controller_url) as client:
            t = await client.create_transactional_writer(scope, "s")
            txn = await t.begin()
            await txn.write(b"aio")
            await txn.flush()
            h = client.transaction(scope, "s", txn.id)
            assert isinstance(h, apravega.TransactionHandle)
            assert repr(h).startswith("<streamwire.aio.pravega.TransactionHandle")
            await h.ping(30.0)
            await h.commit()
            return await h.status()

    assert asyncio.run(aio_commit()) == "COMMITTED"
    got = official_read_all(pravega.controller_url, scope, "s", 2)
    assert sorted(got) == [b"aio", b"theirs"]


#: The shortest lease the standalone's controller accepts (seconds); see the lease test.
LEASE = 10.0
