"""Pulsar transactions end to end on Apache Pulsar (the fixture runs with
``transactionCoordinatorEnabled=true``), checked with streamwire's reader and consumer and
with the official client's reader. (The official Python client, 3.13, has no transactions; the
other direction, transactions written by an official client, is in ``test_java_interop.py``.)

What is checked: committed messages are visible exactly once, aborted ones never,
uncommitted ones not before the commit; acks in a committed transaction stick, acks in an
aborted one are undone; a transaction past its timeout is aborted by the broker; the
transaction's state rules (typed errors); the context-manager forms; the asyncio forms.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import (
    InvalidTransactionStateError,
    TransactionConflictError,
    TransactionTimeoutError,
    aio,
)

from tests.interop._official_read import official_client
from tests.peers.admin import PulsarAdmin
from tests.peers.apache import ApachePulsar


@pytest.fixture(scope="module")
def client(apache_broker: ApachePulsar) -> Iterator[streamwire.Client]:
    c = streamwire.Client(apache_broker.service_url, operation_timeout=30)
    yield c
    c.close()


@pytest.fixture(scope="module")
def official(apache_broker: ApachePulsar, official_pulsar: ModuleType) -> Iterator[Any]:
    c = official_client(official_pulsar, apache_broker.service_url)
    yield c
    c.close()


def _topic() -> str:
    return f"persistent://public/default/txn-{uuid.uuid4().hex}"


def _ours(client: streamwire.Client, topic: str, *, quiet: float = 1.5) -> list[bytes]:
    """Every message our reader sees from the start, until ``quiet`` seconds pass without one."""
    got: list[bytes] = []
    with client.create_reader(topic, "earliest") as r:
        while True:
            try:
                got.append(r.read_next(timeout=quiet).data())
            except streamwire.OperationTimeoutError:
                return got


def _theirs(official: Any, official_pulsar: ModuleType, topic: str) -> list[bytes]:
    """The same with the official client's reader."""
    got: list[bytes] = []
    r = official.create_reader(topic, official_pulsar.MessageId.earliest)
    try:
        while True:
            try:
                got.append(r.read_next(1500).data())
            except official_pulsar.Timeout:
                return got
    finally:
        r.close()


def _producer(client: streamwire.Client, topic: str) -> streamwire.Producer:
    return client.create_producer(topic, batching=True, batching_max_delay=0.005)


def test_commit_makes_messages_visible_once_to_both_clients(
    client: streamwire.Client, official: Any, official_pulsar: ModuleType
) -> None:
    topic = _topic()
    p = _producer(client, topic)
    t = client.transaction(timeout=60)
    assert t.state == "OPEN"
    most, least = t.id
    assert isinstance(most, int) and isinstance(least, int)
    ids = [p.send(b"m%d" % i, txn=t) for i in range(3)]
    fut = p.send_async(b"m3", txn=t)
    # Not visible before the commit, to either client.
    assert _ours(client, topic, quiet=1.0) == []
    assert _theirs(official, official_pulsar, topic) == []
    t.commit()
    assert t.state == "COMMITTED"
    assert fut.done()  # commit waited for the receipt of the asynchronous send
    assert fut.result(timeout=0) is not None
    assert len({(i.ledger_id, i.entry_id) for i in ids}) == 3  # unbatched: one entry each
    want = [b"m0", b"m1", b"m2", b"m3"]
    assert _ours(client, topic) == want
    assert _theirs(official, official_pulsar, topic) == want
    p.close()


def test_send_many_in_a_transaction(client: streamwire.Client, apache_admin: PulsarAdmin) -> None:
    topic = _topic()
    apache_admin.create_partitioned_topic(topic, 2)
    p = client.create_producer(topic)
    t = client.transaction()
    ids = p.send_many([b"s0", b"s1", b"s2"], keys=["a", "b", "c"], txn=t)
    assert len(ids) == 3
    t2 = client.transaction()
    p.send_many([b"gone0", b"gone1"], txn=t2)
    t2.abort()
    t.commit()
    c = client.subscribe(topic, "many", initial_position="earliest")
    got: list[bytes] = []
    while more := c.receive_many(10, timeout=3):  # until 3 s pass with nothing more
        got += [m.data() for m in more]
    assert sorted(got) == [b"s0", b"s1", b"s2"]
    c.close()
    p.close()


def test_abort_discards_messages_for_both_clients(
    client: streamwire.Client, official: Any, official_pulsar: ModuleType
) -> None:
    topic = _topic()
    p = _producer(client, topic)
    t = client.transaction()
    p.send(b"aborted-1", txn=t)
    p.send_async(b"aborted-2", txn=t)
    t.abort()
    assert t.state == "ABORTED"
    t.abort()  # a second abort does nothing
    p.send(b"plain")
    assert _ours(client, topic) == [b"plain"]
    assert _theirs(official, official_pulsar, topic) == [b"plain"]
    p.close()


def test_context_manager_commits_or_aborts(client: streamwire.Client) -> None:
    topic = _topic()
    p = _producer(client, topic)
    with client.transaction() as t:
        p.send(b"kept", txn=t)
    assert t.state == "COMMITTED"
    with pytest.raises(KeyError):
        with client.transaction() as t2:
            p.send(b"dropped", txn=t2)
            raise KeyError("boom")
    assert t2.state == "ABORTED"
    # Ended inside the block: nothing more happens on exit.
    with client.transaction() as t3:
        p.send(b"dropped too", txn=t3)
        t3.abort()
    assert t3.state == "ABORTED"
    assert _ours(client, topic) == [b"kept"]
    p.close()


def test_acks_stick_on_commit_and_are_undone_on_abort(client: streamwire.Client) -> None:
    topic = _topic()
    p = _producer(client, topic)
    for i in range(4):
        p.send(b"a%d" % i)
    c = client.subscribe(topic, "sub", initial_position="earliest")
    msgs = [c.receive(timeout=10) for _ in range(4)]
    t1 = client.transaction()
    c.acknowledge(msgs[:2], txn=t1)
    t1.commit()
    t2 = client.transaction()
    c.acknowledge(msgs[2], txn=t2)
    c.acknowledge(msgs[3].message_id, txn=t2)
    t2.abort()
    c.close()
    # After a restart only the messages whose acks were aborted come back.
    c = client.subscribe(topic, "sub", initial_position="earliest")
    again = sorted(m.data() for m in c.receive_many(10, timeout=3))
    assert again == [b"a2", b"a3"]
    c.close()
    p.close()


def test_acks_of_batched_messages_count_per_message(client: streamwire.Client) -> None:
    """Messages of one batch acked in different transactions: each ack covers only its own
    message (the batch-index ack set), so an aborted one comes back alone."""
    topic = _topic()
    p = client.create_producer(topic, batching=True, batching_max_delay=1.0)
    futs = [p.send_async(b"b%d" % i) for i in range(4)]
    p.flush()
    ids = [f.result(timeout=10) for f in futs]
    assert len({(i.ledger_id, i.entry_id) for i in ids}) == 1  # one entry
    c = client.subscribe(topic, "batched", initial_position="earliest", subscription_type="shared")
    msgs = [c.receive(timeout=10) for _ in range(4)]
    with client.transaction() as t1:
        c.acknowledge([msgs[0], msgs[2]], txn=t1)
    t2 = client.transaction()
    c.acknowledge([msgs[1], msgs[3]], txn=t2)
    t2.abort()
    with client.transaction() as t3:
        c.acknowledge(msgs[1], txn=t3)
    c.close()
    c = client.subscribe(topic, "batched", initial_position="earliest", subscription_type="shared")
    assert [m.data() for m in c.receive_many(10, timeout=3)] == [b"b3"]
    c.close()
    p.close()


def test_cumulative_ack_in_a_transaction(client: streamwire.Client) -> None:
    topic = _topic()
    p = _producer(client, topic)
    for i in range(3):
        p.send(b"c%d" % i)
    c = client.subscribe(topic, "cum", subscription_type="exclusive", initial_position="earliest")
    got = [c.receive(timeout=10) for _ in range(3)]
    with client.transaction() as t:
        c.acknowledge_cumulative(got[1], txn=t)
    c.close()
    c = client.subscribe(topic, "cum", subscription_type="exclusive", initial_position="earliest")
    assert [m.data() for m in c.receive_many(10, timeout=3)] == [b"c2"]
    c.close()
    p.close()


def test_second_transaction_acking_the_same_message_conflicts(client: streamwire.Client) -> None:
    topic = _topic()
    p = _producer(client, topic)
    p.send(b"contested")
    c = client.subscribe(topic, "conflict", subscription_type="shared", initial_position="earliest")
    m = c.receive(timeout=10)
    t1 = client.transaction()
    t2 = client.transaction()
    c.acknowledge(m, txn=t1)
    with pytest.raises(TransactionConflictError):
        c.acknowledge(m, txn=t2)
    t1.commit()
    # The failed ack poisons t2: its commit is refused and it is aborted instead.
    with pytest.raises(streamwire.TransactionError):
        t2.commit()
    assert t2.state == "ABORTED"
    c.close()
    p.close()


def test_state_rules_raise_typed_errors(client: streamwire.Client) -> None:
    topic = _topic()
    p = _producer(client, topic)
    c = client.subscribe(topic, "rules")
    t = client.transaction()
    t.abort()
    with pytest.raises(InvalidTransactionStateError):
        t.commit()
    with pytest.raises(InvalidTransactionStateError):
        p.send(b"x", txn=t)
    with pytest.raises(InvalidTransactionStateError):
        p.send_async(b"x", txn=t)
    done = client.transaction()
    done.commit()
    with pytest.raises(InvalidTransactionStateError):
        done.abort()
    with pytest.raises(InvalidTransactionStateError):
        done.commit()
    p.send(b"plain")
    m = c.receive(timeout=10)
    with pytest.raises(InvalidTransactionStateError):
        c.acknowledge(m, txn=done)
    with pytest.raises(TypeError):
        p.send(b"x", txn="not a transaction")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        c.acknowledge(m, txn=object())  # type: ignore[arg-type]
    c.acknowledge(m)  # the consumer and producer still work
    assert p.send(b"still fine") is not None
    c.close()
    p.close()


def test_timed_out_transaction_is_aborted_by_the_broker(
    client: streamwire.Client, official: Any, official_pulsar: ModuleType
) -> None:
    topic = _topic()
    p = _producer(client, topic)
    t = client.transaction(timeout=1.0)
    p.send(b"too late", txn=t)
    time.sleep(1.5)
    assert t.state == "TIMED_OUT"
    with pytest.raises(TransactionTimeoutError):
        p.send(b"x", txn=t)
    with pytest.raises(TransactionTimeoutError):
        t.commit()
    p.send(b"after")
    # Once the coordinator has aborted it, readers move past it and never see it.
    deadline = time.monotonic() + 20
    seen: list[bytes] = []
    while time.monotonic() < deadline and not seen:
        seen = _ours(client, topic, quiet=1.0)
    assert seen == [b"after"]
    assert _theirs(official, official_pulsar, topic) == [b"after"]
    p.close()


def test_partitioned_topic_transaction(
    client: streamwire.Client, apache_admin: PulsarAdmin
) -> None:
    topic = _topic()
    apache_admin.create_partitioned_topic(topic, 3)
    p = client.create_producer(topic)
    with client.transaction() as t:
        for i in range(6):
            p.send(b"p%d" % i, key=f"k{i}", txn=t)
    c = client.subscribe(topic, "parts", initial_position="earliest")
    got = sorted(m.data() for m in c.receive_many(6, timeout=10))
    while len(got) < 6:
        more = c.receive_many(6, timeout=5)
        if not more:
            break
        got = sorted(got + [m.data() for m in more])
    assert got == [b"p%d" % i for i in range(6)]
    c.close()
    p.close()


def test_asyncio_forms(apache_broker: ApachePulsar) -> None:
    async def main() -> tuple[list[bytes], list[bytes], str]:
        async with aio.Client(apache_broker.service_url) as client:
            topic = _topic()
            p = await client.create_producer(topic)
            async with await client.transaction() as t:
                await p.send(b"aio-1", txn=t)
                await p.send_many([b"aio-2"], txn=t)
            t2 = await client.transaction()
            await p.send(b"aio-aborted", txn=t2)
            await t2.abort()
            state = t2.state
            c = await client.subscribe(topic, "aio", initial_position="earliest")
            got = [(await c.receive(timeout=10)) for _ in range(2)]
            t3 = await client.transaction()
            await c.acknowledge(got[0], txn=t3)
            await t3.commit()
            t4 = await client.transaction()
            await c.acknowledge(got[1], txn=t4)
            await t4.abort()
            with pytest.raises(InvalidTransactionStateError):
                await t4.commit()
            await c.close()
            c = await client.subscribe(topic, "aio", initial_position="earliest")
            again = [m.data() for m in await c.receive_many(10, timeout=3)]
            await c.close()
            await p.close()
            return [m.data() for m in got], again, state

    got, again, state = asyncio.run(main())
    assert got == [b"aio-1", b"aio-2"]
    assert again == [b"aio-2"]
    assert state == "ABORTED"
