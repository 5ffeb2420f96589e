"""Bad input to the transaction calls that needs a broker with transactions (Apache Pulsar):
closed, committed, aborted and timed-out transactions. Rendered into ``docs/bad-input.md``
with the other rows (see ``tests/test_bad_input.py``); run by
``tests/transactions/test_txn_bad_input.py``. The rows that need no coordinator (wrong
types, bad timeouts, pulsar-lite) are in ``tests/test_bad_input.py``."""

from __future__ import annotations

import asyncio
import pickle
import time
import uuid
from dataclasses import dataclass

import streamwire
from streamwire import (
    InvalidTransactionStateError,
    TransactionConflictError,
    TransactionTimeoutError,
    aio,
)

from tests.bad_runner import BadCase


@dataclass
class TxnCtx:
    url: str
    topic: str
    client: streamwire.Client
    producer: streamwire.Producer
    consumer: streamwire.Consumer


TxnCase = BadCase[TxnCtx, object]


def _aborted(c: TxnCtx) -> streamwire.Transaction:
    t = c.client.transaction()
    t.abort()
    return t


def _committed(c: TxnCtx) -> streamwire.Transaction:
    t = c.client.transaction()
    t.commit()
    return t


def _timed_out(c: TxnCtx) -> streamwire.Transaction:
    t = c.client.transaction(timeout=0.2)
    time.sleep(0.3)
    return t


def _received(c: TxnCtx) -> streamwire.Message:
    c.producer.send(b"to ack " + uuid.uuid4().bytes)
    return c.consumer.receive(timeout=10)


def _cumulative(c: TxnCtx, txn: streamwire.Transaction) -> None:
    topic = f"{c.topic}-cumulative-{uuid.uuid4().hex}"
    with c.client.create_producer(topic) as p, c.client.subscribe(topic, "excl") as consumer:
        mid = p.send(b"one")
        consumer.acknowledge_cumulative(mid, txn=txn)


def _conflict(c: TxnCtx) -> None:
    m = _received(c)
    first = c.client.transaction()
    c.consumer.acknowledge(m, txn=first)
    second = c.client.transaction()
    try:
        c.consumer.acknowledge(m, txn=second)
    finally:
        second.abort()
        first.abort()


async def _aio_commit_after_abort(url: str) -> None:
    async with aio.Client(url) as client:
        t = await client.transaction()
        await t.abort()
        await t.commit()


TXN_CASES: list[TxnCase] = [
    TxnCase(
        "Transaction.commit()",
        "after abort",
        InvalidTransactionStateError,
        lambda c: _aborted(c).commit(),
    ),
    TxnCase(
        "Client.resume_transaction()",
        "commit of an id the coordinator does not know",
        InvalidTransactionStateError,
        lambda c: c.client.resume_transaction((0, 987_654_321)).commit(),
        note="TransactionNotFound from the broker",
    ),
    TxnCase(
        "Client.resume_transaction()",
        "an id naming a coordinator the cluster does not have",
        streamwire.InvalidArgumentError,
        lambda c: c.client.resume_transaction((1 << 40, 1)),
    ),
    TxnCase(
        "Client.resume_transaction()",
        "abort of a committed transaction",
        InvalidTransactionStateError,
        lambda c: c.client.resume_transaction(_committed(c).id).abort(),
        note="it stays committed",
    ),
    TxnCase(
        "Transaction.abort()",
        "after commit",
        InvalidTransactionStateError,
        lambda c: _committed(c).abort(),
    ),
    TxnCase(
        "Transaction.commit()",
        "after its timeout",
        TransactionTimeoutError,
        lambda c: _timed_out(c).commit(),
        note="the broker aborts it",
    ),
    TxnCase(
        "Producer.send()",
        "txn already committed",
        InvalidTransactionStateError,
        lambda c: c.producer.send(b"x", txn=_committed(c)),
        note="nothing is sent",
    ),
    TxnCase(
        "Producer.send_async()",
        "txn aborted",
        InvalidTransactionStateError,
        lambda c: c.producer.send_async(b"x", txn=_aborted(c)),
        note="nothing is sent",
    ),
    TxnCase(
        "Producer.send()",
        "txn past its timeout",
        TransactionTimeoutError,
        lambda c: c.producer.send(b"x", txn=_timed_out(c)),
        note="nothing is sent",
    ),
    TxnCase(
        "Consumer.acknowledge()",
        "txn already aborted",
        InvalidTransactionStateError,
        lambda c: c.consumer.acknowledge(_received(c), txn=_aborted(c)),
    ),
    TxnCase(
        "Consumer.acknowledge_cumulative()",
        "txn already committed",
        InvalidTransactionStateError,
        lambda c: _cumulative(c, _committed(c)),
    ),
    TxnCase(
        "Consumer.acknowledge()",
        "message already acked in another open transaction",
        TransactionConflictError,
        _conflict,
    ),
    TxnCase(
        "Transaction",
        "pickled",
        TypeError,
        lambda c: pickle.dumps(c.client.transaction()),
        note="built-in",
    ),
    TxnCase(
        "aio.Transaction.commit()",
        "after abort",
        InvalidTransactionStateError,
        lambda c: asyncio.run(_aio_commit_after_abort(c.url)),
    ),
]
