"""Producing and consuming on a two-broker cluster, through the Pulsar proxy and directly, on
topics owned by either broker; ours and the official client read each other's messages.

Through the proxy every connection of ours goes to the proxy's port (the lookup answers
``proxy_through_service_url`` and the owner is reached with CONNECT's ``proxy_to_broker_url``):
the tests read this process's TCP connections from /proc to prove no broker port was dialled.
Directly, a client given broker 0 follows the lookup to broker 1 for a topic broker 1 owns.
"""

from __future__ import annotations

from types import ModuleType

import pytest
import streamwire

from tests.cluster.helpers import (
    dialled,
    official_read_all,
    read_all,
    topic_owned_by,
)
from tests.peers.apache_cluster import ApacheCluster

N = 2_000


def _produce(url: str, topic: str, payloads: list[bytes]) -> streamwire.Client:
    """Send ``payloads`` with a client on ``url`` (left open: the caller checks its sockets)."""
    client = streamwire.Client(url, operation_timeout=30)
    with client.create_producer(topic, batching_max_delay=0.002) as producer:
        futures = [producer.send_async(p) for p in payloads]
        producer.flush()
        for f in futures:
            f.result(timeout=60)
    return client


@pytest.mark.parametrize("owner", [0, 1])
def test_ours_through_the_proxy_official_reads_directly(
    cluster: ApacheCluster, official_pulsar: ModuleType, owner: int
) -> None:
    topic = topic_owned_by(cluster, owner, "proxy-w")
    payloads = [f"{owner}-{i:05d}".encode() for i in range(N)]
    client = _produce(cluster.proxy_url, topic, payloads)
    try:
        # The lookup through the proxy names the owner (its internal listener) ...
        assert client.lookup().broker_url(topic) == cluster.brokers[owner].service_url
        # ... yet every connection we hold is to the proxy: the lookup never bypassed it.
        conns = dialled(cluster)
        assert conns.get("proxy", 0) >= 1, conns
        assert set(conns) == {"proxy"}, f"a broker was dialled directly: {conns}"
        metrics = client.metrics()
        assert metrics["lookups"] >= 1
        # Our consumer through the proxy.
        with client.subscribe(topic, "ours", initial_position="earliest") as consumer:
            got: list[bytes] = []
            while len(got) < N:
                batch = consumer.receive_many(500, timeout=10)
                got.extend(m.data() for m in batch)
                consumer.acknowledge(batch)
        assert got == payloads
        assert set(dialled(cluster)) == {"proxy"}
    finally:
        client.close()
    # The official client, directly from broker 0 (redirected to the owner when it is 1).
    assert official_read_all(official_pulsar, cluster.service_url, topic) == payloads


@pytest.mark.parametrize("owner", [0, 1])
def test_official_through_the_proxy_ours_reads_directly(
    cluster: ApacheCluster, official_pulsar: ModuleType, owner: int
) -> None:
    topic = topic_owned_by(cluster, owner, "proxy-r")
    payloads = [f"o{owner}-{i:05d}".encode() for i in range(N)]
    official = official_pulsar.Client(cluster.proxy_url, operation_timeout_seconds=30)
    try:
        producer = official.create_producer(
            topic, batching_max_publish_delay_ms=2, block_if_queue_full=True
        )
        results: list[object] = []
        for p in payloads:
            producer.send_async(p, lambda res, _mid: results.append(res))
        producer.flush()
        producer.close()
        assert results == [official_pulsar.Result.Ok] * N
    finally:
        official.close()
    # Ours directly, given broker 0 only: the lookup redirects to broker 1 when it owns it.
    with streamwire.Client(cluster.service_url) as client:
        assert client.lookup().broker_url(topic) == cluster.brokers[owner].service_url
        got = read_all(cluster.service_url, topic)
        conns = dialled(cluster)
    assert got == payloads
    assert "proxy" not in conns, conns


def test_direct_lookup_follows_to_the_owner(cluster: ApacheCluster) -> None:
    """Given broker 0 only, a producer on a topic of broker 1 connects to broker 1."""
    topic = topic_owned_by(cluster, 1, "direct")
    payloads = [f"d-{i:05d}".encode() for i in range(N)]
    client = _produce(cluster.service_url, topic, payloads)
    try:
        conns = dialled(cluster)
        # Broker 0 for the lookup, broker 1 for the producer; the proxy never.
        assert conns.get("b1-internal", 0) >= 1, conns
        assert "proxy" not in conns, conns
    finally:
        client.close()
    assert read_all(cluster.proxy_url, topic) == payloads
