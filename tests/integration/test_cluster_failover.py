"""Automatic failover between two clusters (`streamwire.AutoClusterFailover`), each a real
pulsar-lite broker: the primary is killed under a running producer and consumer, the client
moves to the secondary, and moves back once the primary is up again. The official client's
`pulsar.AutoClusterFailover` with the same settings is run beside ours on the same two
clusters: it must end where ours does."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pulsar
import pytest
import streamwire
from streamwire import AutoClusterFailover, ConfigError, OperationTimeoutError

from tests.cluster.helpers import read_all
from tests.peers.lite import PulsarLite


@pytest.fixture
def clusters() -> Iterator[tuple[PulsarLite, PulsarLite]]:
    """Two independent one-broker clusters (killed and restarted by the tests)."""
    with PulsarLite() as a, PulsarLite() as b:
        try:
            yield a, b
        finally:
            a.close()
            b.close()


def _topic() -> str:
    return f"persistent://public/default/failover-{uuid.uuid4().hex[:10]}"


def _wait_for(cond: object, seconds: float) -> float:
    """Seconds until ``cond()`` held (fails the test after ``seconds``)."""
    assert callable(cond)
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < seconds, "condition not reached in time"
        time.sleep(0.05)
    return time.monotonic() - t0


def test_producer_and_consumer_follow_the_client_to_the_secondary_and_back(
    clusters: tuple[PulsarLite, PulsarLite],
) -> None:
    primary, secondary = clusters
    topic = _topic()
    failover = AutoClusterFailover(
        primary.service_url,
        [secondary.service_url],
        check_interval=0.2,
        failover_threshold=2,
        switch_back_threshold=3,
    )
    with streamwire.Client(failover, operation_timeout=10) as client:
        assert client.service_url == primary.service_url
        consumer = client.subscribe(topic, "s", initial_position="earliest")
        producer = client.create_producer(topic, send_timeout=60)
        producer.send(b"on-primary")
        got = consumer.receive(timeout=10)
        assert got.data() == b"on-primary"
        consumer.acknowledge(got)

        primary.kill()
        # Two failed probes 0.2 s apart, then the switch.
        took = _wait_for(lambda: client.service_url == secondary.service_url, 10)
        assert took < 5
        # The producer reconnects on the secondary: a send made now is stored there.
        producer.send(b"on-secondary")
        got = consumer.receive(timeout=30)
        assert got.data() == b"on-secondary"
        consumer.acknowledge(got)
        assert read_all(secondary.service_url, topic) == [b"on-secondary"]

        primary.restart()
        _wait_for(lambda: client.service_url == primary.service_url, 15)
        producer.send(b"back-on-primary")
        # Back on the primary the subscription resumes from its cursor there; an ack the
        # kill cut off may bring b"on-primary" once more (at least once), nothing else.
        seen = []
        while not seen or seen[-1] != b"back-on-primary":
            m = consumer.receive(timeout=30)
            seen.append(m.data())
            consumer.acknowledge(m)
        assert set(seen) <= {b"on-primary", b"back-on-primary"}, seen
        assert read_all(primary.service_url, topic) == [b"on-primary", b"back-on-primary"]
        producer.close()
        consumer.close()


def test_no_switch_while_the_secondary_is_down_too_and_the_official_client_agrees(
    clusters: tuple[PulsarLite, PulsarLite],
) -> None:
    """With both clusters down the client stays where it is (nowhere better to go); when only
    the secondary comes back it moves there. The official client, configured alike, ends on
    the same cluster."""
    primary, secondary = clusters
    topic = _topic()
    ours = streamwire.Client(
        AutoClusterFailover(primary.service_url, [secondary.service_url], check_interval=0.2),
        operation_timeout=10,
    )
    theirs = pulsar.Client(
        pulsar.AutoClusterFailover(
            pulsar.ServiceInfo(primary.service_url),
            [pulsar.ServiceInfo(secondary.service_url)],
            check_interval_ms=200,
        ),
        operation_timeout_seconds=10,
    )
    try:
        ours_p = ours.create_producer(topic, send_timeout=60)
        theirs_p = theirs.create_producer(topic)
        secondary.stop()
        primary.kill()
        time.sleep(1.5)
        assert ours.service_url == primary.service_url
        secondary.restart()
        _wait_for(lambda: ours.service_url == secondary.service_url, 10)
        ours_p.send(b"ours")
        theirs_p.send(b"theirs")
        # Both sends went to the secondary, the only cluster up.
        assert sorted(read_all(secondary.service_url, topic)) == [b"ours", b"theirs"]
    finally:
        ours.close()
        theirs.close()


def test_options_are_checked_and_reported() -> None:
    f = AutoClusterFailover(
        "pulsar://127.0.0.1:1",
        ["pulsar://127.0.0.1:2", "pulsar://127.0.0.1:3"],
        check_interval=0.5,
        failover_threshold=3,
        switch_back_threshold=4,
    )
    assert (f.primary, f.secondary) == (
        "pulsar://127.0.0.1:1",
        ["pulsar://127.0.0.1:2", "pulsar://127.0.0.1:3"],
    )
    assert (f.check_interval, f.failover_threshold, f.switch_back_threshold) == (0.5, 3, 4)
    assert "failover_threshold=3" in repr(f)
    with pytest.raises(ConfigError, match="at least one"):
        AutoClusterFailover("pulsar://127.0.0.1:1", [])
    with pytest.raises(TypeError, match="not a str"):
        AutoClusterFailover("pulsar://127.0.0.1:1", "pulsar://127.0.0.1:2")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="failover_threshold"):
        AutoClusterFailover("pulsar://127.0.0.1:1", ["pulsar://127.0.0.1:2"], failover_threshold=0)
    with pytest.raises(ConfigError, match="check_interval"):
        AutoClusterFailover("pulsar://127.0.0.1:1", ["pulsar://127.0.0.1:2"], check_interval=0)
    # A bad URL among the clusters fails at the client, not at the first switch.
    with pytest.raises(ConfigError):
        streamwire.Client(AutoClusterFailover("pulsar://127.0.0.1:1", ["kafka://x:1"]))
    with pytest.raises(TypeError, match="AutoClusterFailover"):
        streamwire.Client(42)  # type: ignore[arg-type]
    # Nothing reachable: calls time out as with one dead cluster (typed, no hang).
    with streamwire.Client(f, operation_timeout=1, connection_timeout=0.5) as c:
        assert "failover" in repr(c)
        with pytest.raises((OperationTimeoutError, streamwire.StreamwireError)):
            c.create_producer(_topic())
