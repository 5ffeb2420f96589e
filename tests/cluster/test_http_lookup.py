"""``http://`` service URLs: lookups, partition counts and namespace listings over REST (as
the Java and C++ clients do), producers and consumers on the owner's binary port.

A broker that does not own the topic answers the lookup with a 307 to the owner's web
address, which is followed; the proxy's web port forwards the REST calls to a broker.
"""

from __future__ import annotations

import re
import time
from types import ModuleType

import pytest
import streamwire
from streamwire import OperationTimeoutError

from tests.cluster.helpers import new_topic, official_read_all, topic_owned_by
from tests.peers.apache_cluster import ApacheCluster

N = 500


@pytest.mark.parametrize("entry", ["broker0", "proxy"])
@pytest.mark.parametrize("owner", [0, 1])
def test_http_service_url_produces_on_either_broker(
    cluster: ApacheCluster, official_pulsar: ModuleType, entry: str, owner: int
) -> None:
    topic = topic_owned_by(cluster, owner, "http")
    url = cluster.web_url if entry == "broker0" else cluster.proxy_web_url
    payloads = [f"h-{i:04d}".encode() for i in range(N)]
    with streamwire.Client(url) as client:
        assert client.service_url == url
        assert client.lookup().broker_url(topic) == cluster.brokers[owner].service_url
        with client.create_producer(topic) as producer:
            futures = [producer.send_async(p) for p in payloads]
            producer.flush()
            for f in futures:
                f.result(timeout=30)
        with client.subscribe(topic, "http", initial_position="earliest") as consumer:
            got: list[bytes] = []
            while len(got) < N:
                batch = consumer.receive_many(N, timeout=10)
                got.extend(m.data() for m in batch)
                consumer.acknowledge(batch)
        assert got == payloads
        assert client.metrics()["lookups"] >= 2
    assert official_read_all(official_pulsar, cluster.service_url, topic) == payloads


def test_http_partition_metadata_and_listener(cluster: ApacheCluster) -> None:
    topic = new_topic("http-part")
    cluster.admin().create_partitioned_topic(topic, 4)
    with streamwire.Client(cluster.web_url) as client:
        assert client.lookup().partitions(topic) == 4
        assert client.lookup().partitions(new_topic("http-none")) == 0
        owners = {client.lookup().broker_url(p) for p in client.lookup().topic_partitions(topic)}
        assert owners <= {b.service_url for b in cluster.brokers}
        with client.create_producer(topic, routing="round_robin", batching=False) as producer:
            for i in range(8):
                producer.send(f"p{i}".encode())
    one = topic_owned_by(cluster, 1, "http-listener")
    with streamwire.Client(cluster.web_url, listener_name="external") as client:
        assert client.lookup().broker_url(one) == cluster.brokers[1].external_url
    with streamwire.Client(cluster.web_url, listener_name="bogus") as client:
        t0 = time.monotonic()
        with pytest.raises(streamwire.ConfigError, match='no advertised listener named "bogus"'):
            client.lookup().broker_url(one)
        # Not retried as a broker in failover would be (that runs into the 30 s operation
        # timeout); 20 s leaves room for the broker's own slow error path on a loaded machine
        # (over 10 s once under load ~10, while it passes in ~1 s alone).
        assert time.monotonic() - t0 < 20


def test_http_pattern_subscription_lists_the_namespace(cluster: ApacheCluster) -> None:
    prefix = new_topic("http-pat").rsplit("/", 1)[1]
    topics = [f"persistent://public/default/{prefix}-{i}" for i in range(3)]
    with streamwire.Client(cluster.service_url) as client:
        for t in topics:
            with client.create_producer(t) as p:
                p.send(t.encode())
    with streamwire.Client(cluster.web_url) as client:
        pattern = re.compile(f"persistent://public/default/{prefix}-.*")
        with client.subscribe(pattern, "pat", initial_position="earliest") as consumer:
            got: set[bytes] = set()
            deadline = time.monotonic() + 30
            while len(got) < 3 and time.monotonic() < deadline:
                try:
                    got.add(consumer.receive(timeout=2).data())
                except OperationTimeoutError:
                    continue
    assert got == {t.encode() for t in topics}


@pytest.mark.parametrize("bad", ["http://", "http://h:x", "http://h:8080/admin/v2"])
def test_bad_http_service_urls_are_config_errors(bad: str) -> None:
    with pytest.raises(streamwire.ConfigError, match="invalid service URL"):
        streamwire.Client(bad)
