"""``listener_name=``: lookups ask for one of the brokers' advertised listeners.

Every broker of the cluster advertises ``internal`` (its ``brokerServicePort``) and
``external`` (a second port). A client names the listener it can reach and is then handed
that listener's address for every topic, whichever port it entered by; the tests read this
process's connections from /proc to see which ports were dialled.
"""

from __future__ import annotations

import time

import pytest
import streamwire

from tests.cluster.helpers import dialled, read_all, topic_owned_by
from tests.peers.apache_cluster import ApacheCluster

N = 500


@pytest.mark.parametrize("listener", ["internal", "external"])
def test_listener_name_picks_the_advertised_listener(cluster: ApacheCluster, listener: str) -> None:
    topic = topic_owned_by(cluster, 1, f"listener-{listener}")
    other = "internal" if listener == "external" else "external"
    # Enter by broker 0's *other* listener: the name, not the port entered by, decides.
    b0 = cluster.brokers[0]
    entry = b0.external_url if listener == "internal" else b0.service_url
    b1 = cluster.brokers[1]
    want = b1.external_url if listener == "external" else b1.service_url
    payloads = [f"{listener}-{i:04d}".encode() for i in range(N)]
    with streamwire.Client(entry, listener_name=listener) as client:
        assert client.lookup().broker_url(topic) == want
        with client.create_producer(topic) as producer:
            futures = [producer.send_async(p) for p in payloads]
            producer.flush()
            for f in futures:
                f.result(timeout=30)
        conns = dialled(cluster)
    assert conns.get(f"b1-{listener}", 0) >= 1, conns
    assert f"b1-{other}" not in conns, conns
    assert read_all(cluster.service_url, topic) == payloads


def test_without_a_listener_name_the_listener_entered_by_answers(cluster: ApacheCluster) -> None:
    """The broker's own rule (PIP-95), which the option overrides: a lookup arriving on the
    external port is answered with external addresses."""
    topic = topic_owned_by(cluster, 1, "listener-none")
    with streamwire.Client(cluster.brokers[0].external_url) as client:
        assert client.lookup().broker_url(topic) == cluster.brokers[1].external_url
    with streamwire.Client(cluster.service_url) as client:
        assert client.lookup().broker_url(topic) == cluster.brokers[1].service_url


def test_an_unknown_listener_is_a_config_error(cluster: ApacheCluster) -> None:
    topic = topic_owned_by(cluster, 0, "listener-bogus")
    with streamwire.Client(cluster.service_url, listener_name="bogus") as client:
        t0 = time.monotonic()
        with pytest.raises(streamwire.ConfigError, match='no advertised listener named "bogus"'):
            client.create_producer(topic)
        # Not retried until the operation timeout as a broker in failover would be.
        assert time.monotonic() - t0 < 10
        with pytest.raises(streamwire.ConfigError, match="bogus"):
            client.lookup().broker_url(topic)


@pytest.mark.parametrize("bad", ["", "a,b", "internal:pulsar://x:1"])
def test_listener_name_must_be_a_name(bad: str) -> None:
    with pytest.raises(streamwire.ConfigError, match="listener_name"):
        streamwire.Client("pulsar://127.0.0.1:6650", listener_name=bad)
