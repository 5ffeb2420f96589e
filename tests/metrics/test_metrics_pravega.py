"""Pravega writer and reader metrics against Pravega standalone (the session's ``pravega``
fixture: slow on first start)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from streamwire import AlreadyClosedError, metrics
from streamwire import pravega as pv

from tests.gather import gather
from tests.peers.pravega import PravegaStandalone


@pytest.fixture(scope="module")
def pv_client(pravega: PravegaStandalone) -> Iterator[pv.Client]:
    with pv.Client(pravega.controller_url, timeout=30.0) as client:
        yield client


def test_writer_and_reader_counters(pv_client: pv.Client) -> None:
    scope = "mx" + uuid.uuid4().hex[:10]
    assert pv_client.create_scope(scope)
    pv_client.create_stream(scope, "s", segments=2)
    values = [b"e" * (i % 50 + 1) for i in range(400)]
    with pv_client.create_writer(scope, "s") as w:
        assert w.write_many(values[:300]) == 300
        for v in values[300:]:
            w.write_async(v)
        w.flush()
        m = w.metrics()
        assert (m["kind"], m["protocol"], m["topic"]) == ("writer", "pravega", f"{scope}/s")
        assert m["messages"] == len(values)
        assert m["bytes"] == sum(len(v) for v in values)
        assert m["errors"] == 0 and m["pending_messages"] == 0
        assert 1 <= m["batches"] <= len(values)
        assert m["send_latency_count"] == m["batches"]
    with pytest.raises(AlreadyClosedError):
        w.metrics()
    with pv_client.create_reader(scope, "s", "head") as r:
        got = gather(lambda left: r.read_many(1000, timeout=1.0), len(values), 30)
        assert len(got) == len(values)
        rm = r.metrics()
        assert (rm["kind"], rm["protocol"]) == ("reader", "pravega")
        assert rm["messages"] == len(values)
        assert rm["bytes"] == sum(len(v) for v in values)
        assert rm["batches"] >= 2  # two segments: a chunk each at least
        text = metrics.prometheus_text()
        assert 'streamwire_reader_messages_total{protocol="pravega"' in text
    totals = pv_client.metrics()
    assert totals["messages_sent"] >= len(values)
    assert totals["messages_received"] >= len(values)
