"""Runs ``tests/transactions/bad_cases.py`` on Apache Pulsar: each row raises its documented
exception and the client, producer and consumer keep working afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import streamwire

from tests.bad_runner import check_raises, ids
from tests.peers.apache import ApachePulsar
from tests.transactions.bad_cases import TXN_CASES, TxnCase, TxnCtx


@pytest.fixture(scope="module")
def ctx(apache_broker: ApachePulsar) -> Iterator[TxnCtx]:
    url = apache_broker.service_url
    topic = f"persistent://public/default/txn-bad-{uuid.uuid4().hex}"
    with streamwire.Client(url, operation_timeout=30) as client:
        yield TxnCtx(
            url=url,
            topic=topic,
            client=client,
            producer=client.create_producer(topic),
            consumer=client.subscribe(topic, "bad", subscription_type="shared"),
        )


def _still_works(c: TxnCtx) -> None:
    payload = uuid.uuid4().bytes
    with c.client.transaction() as t:
        c.producer.send(payload, txn=t)
    for _ in range(100):
        m = c.consumer.receive(timeout=10)
        c.consumer.acknowledge(m)
        if m.data() == payload:
            return
    raise AssertionError("the committed message never arrived")


@pytest.mark.parametrize("case", TXN_CASES, ids=ids(TXN_CASES))
def test_txn_bad_input(ctx: TxnCtx, case: TxnCase) -> None:
    check_raises(case, ctx, _still_works)
