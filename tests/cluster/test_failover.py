"""Ownership changes under a running producer or consumer on the two-broker cluster
(deduplication on): topic unload, a namespace bundle split, SIGKILL of the owning broker, a
restart of the Pulsar proxy.

Every message whose send was acknowledged must be stored exactly once, in send order; nothing
may fail (send timeout 120 s). A consumer that lives through an unload receives everything, each
message first seen in order, and its acknowledgements hold (no backlog afterwards). The recovery
time after a broker kill -- from the broker's death to the first acknowledgement of a message
sent after it -- is printed (``-s``) and attached to the report as a user property.
"""

from __future__ import annotations

import threading
import time

import pytest
import streamwire
from streamwire import OperationTimeoutError

from tests.cluster.helpers import (
    assert_exactly_once_in_order,
    produce_with_disruption,
    read_all,
    recovery_seconds,
    topic_owned_by,
)
from tests.peers.apache_cluster import SESSION_TIMEOUT_MS, ApacheCluster

N = 20_000


def _report(request: pytest.FixtureRequest, title: str, counts: dict[str, object]) -> None:
    print(f"\n{title}: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    request.node.user_properties.append((title, counts))


@pytest.mark.parametrize("via", ["proxy", "direct"])
def test_unload_during_produce(
    request: pytest.FixtureRequest, cluster: ApacheCluster, via: str
) -> None:
    topic = topic_owned_by(cluster, 1, "unload-p")
    url = cluster.proxy_url if via == "proxy" else cluster.service_url
    out, dis = produce_with_disruption(
        url, topic, lambda: cluster.unload(topic), n=N, disrupt_at=N // 3
    )
    assert dis.error is None, dis.error
    stored = read_all(cluster.service_url, topic)
    _report(
        request,
        f"unload during produce [{via}]",
        {
            "sent": len(out.payloads),
            "acked": len(out.acked_at),
            "failed": len(out.failed),
            "stored": len(stored),
            "recovery_s": round(recovery_seconds(out, dis) or -1, 3),
        },
    )
    assert not out.failed, out.failed
    assert len(out.acked_at) == len(out.payloads)
    assert_exactly_once_in_order(out.acked(), stored, out.payloads)


def test_bundle_split_during_produce(
    request: pytest.FixtureRequest, cluster: ApacheCluster
) -> None:
    """The topic's namespace bundle is split in two (with unloading) under a producer through
    the proxy: the topic's new bundle may be placed on either broker."""
    topic = topic_owned_by(cluster, 0, "split-p")
    bundle = cluster.bundle_of(topic)
    before = cluster.bundles()
    out, dis = produce_with_disruption(
        cluster.proxy_url,
        topic,
        lambda: cluster.split_bundle(bundle=bundle),
        n=N,
        disrupt_at=N // 3,
    )
    assert dis.error is None, dis.error
    after = cluster.bundles()
    stored = read_all(cluster.service_url, topic)
    _report(
        request,
        "bundle split during produce",
        {
            "bundle": bundle,
            "bundles_before": len(before),
            "bundles_after": len(after),
            "new_bundle": cluster.bundle_of(topic),
            "acked": len(out.acked_at),
            "stored": len(stored),
            "recovery_s": round(recovery_seconds(out, dis) or -1, 3),
        },
    )
    assert len(after) == len(before) + 1 and bundle not in after
    assert not out.failed, out.failed
    assert len(out.acked_at) == len(out.payloads)
    assert_exactly_once_in_order(out.acked(), stored, out.payloads)


@pytest.mark.parametrize("via", ["proxy", "direct"])
def test_unload_during_consume(
    request: pytest.FixtureRequest, cluster: ApacheCluster, via: str
) -> None:
    topic = topic_owned_by(cluster, 0, "unload-c")
    url = cluster.proxy_url if via == "proxy" else cluster.service_url
    payloads = [f"u-{i:06d}".encode() for i in range(N)]
    index = {p: i for i, p in enumerate(payloads)}
    with streamwire.Client(url, operation_timeout=30) as client:
        consumer = client.subscribe(
            topic, "through-unload", initial_position="earliest", receiver_queue_size=500
        )
        with client.create_producer(topic, batching_max_delay=0.002) as producer:
            futures = [producer.send_async(p) for p in payloads]
            producer.flush()
            for f in futures:
                f.result(timeout=60)
        first_seen: list[int] = []
        seen: set[bytes] = set()
        duplicates = 0
        unloaded = False
        deadline = time.monotonic() + 120
        while len(seen) < N and time.monotonic() < deadline:
            if not unloaded and len(seen) >= N // 3:
                cluster.unload(topic)
                unloaded = True
            try:
                batch = consumer.receive_many(200, timeout=2)
            except OperationTimeoutError:
                continue
            for m in batch:
                d = m.data()
                if d in seen:
                    duplicates += 1  # a redelivery of a message not yet acknowledged
                else:
                    seen.add(d)
                    first_seen.append(index[d])
            consumer.acknowledge(batch)
        consumer.close()
        _report(
            request,
            f"unload during consume [{via}]",
            {"received": len(seen), "redelivered": duplicates},
        )
        assert unloaded
        assert len(seen) == N, f"{N - len(seen)} messages never received"
        assert first_seen == sorted(first_seen), "a message was first received out of order"
        # The acknowledgements were kept: a new consumer of the subscription finds nothing.
        with client.subscribe(topic, "through-unload") as again:
            with pytest.raises(OperationTimeoutError):
                again.receive(timeout=2)


@pytest.mark.parametrize("via", ["proxy", "direct"])
def test_owner_killed_during_produce(
    request: pytest.FixtureRequest, cluster: ApacheCluster, via: str
) -> None:
    """SIGKILL of the owning broker; the other one takes the topic once the dead one's
    metadata session expires. Directly, the client is given both brokers (a service URL with
    two hosts), as a client of a multi-broker cluster without a proxy would be."""
    victim = 1
    topic = topic_owned_by(cluster, victim, f"kill-{via}")
    if via == "proxy":
        url = cluster.proxy_url
    else:
        hosts = ",".join(f"127.0.0.1:{b.internal_port}" for b in cluster.brokers)
        url = f"pulsar://{hosts}"
    out, dis = produce_with_disruption(
        url,
        topic,
        lambda: cluster.kill_broker(victim),
        n=N,
        disrupt_at=N // 4,
        until_recovered=True,
        max_seconds=150,
    )
    assert dis.error is None, dis.error
    recovery = recovery_seconds(out, dis)
    new_owner = cluster.owner(topic)
    # Bring the broker back (and let it take bundles again) before reading back.
    t0 = time.monotonic()
    cluster.restart_broker(victim)
    restart_s = time.monotonic() - t0
    stored = read_all(cluster.proxy_url, topic)
    _report(
        request,
        f"owner killed during produce [{via}]",
        {
            "sent": len(out.payloads),
            "acked": len(out.acked_at),
            "failed": len(out.failed),
            "stored": len(stored),
            "recovery_s": round(recovery or -1, 2),
            "session_timeout_s": SESSION_TIMEOUT_MS / 1000,
            "broker_restart_s": round(restart_s, 1),
        },
    )
    assert new_owner != victim
    assert recovery is not None, "no message sent after the kill was ever acknowledged"
    assert not out.failed, out.failed
    assert len(out.acked_at) == len(out.payloads)
    assert_exactly_once_in_order(out.acked(), stored, out.payloads)


def test_owner_killed_during_consume(
    request: pytest.FixtureRequest, cluster: ApacheCluster
) -> None:
    """SIGKILL of the owning broker under a consumer through the proxy: it resumes on the new
    owner from its acknowledged position; everything is received, first receptions in order."""
    victim = 1
    topic = topic_owned_by(cluster, victim, "kill-consume")
    payloads = [f"k-{i:06d}".encode() for i in range(N)]
    index = {p: i for i, p in enumerate(payloads)}
    with streamwire.Client(cluster.proxy_url, operation_timeout=30) as client:
        consumer = client.subscribe(
            topic, "through-kill", initial_position="earliest", receiver_queue_size=500
        )
        with client.create_producer(topic, batching_max_delay=0.002) as producer:
            futures = [producer.send_async(p) for p in payloads]
            producer.flush()
            for f in futures:
                f.result(timeout=60)
        first_seen: list[int] = []
        seen: set[bytes] = set()
        duplicates = 0
        killed_at: float | None = None
        resumed_after: float | None = None
        deadline = time.monotonic() + 150
        while len(seen) < N and time.monotonic() < deadline:
            if killed_at is None and len(seen) >= N // 3:
                cluster.kill_broker(victim)
                killed_at = time.monotonic()
            try:
                batch = consumer.receive_many(200, timeout=2)
            except OperationTimeoutError:
                continue
            if killed_at is not None and resumed_after is None and batch:
                # Messages already in the receive queue do not count as resumption.
                if consumer.metrics()["reconnects"] > 0:
                    resumed_after = time.monotonic() - killed_at
            for m in batch:
                d = m.data()
                if d in seen:
                    duplicates += 1
                else:
                    seen.add(d)
                    first_seen.append(index[d])
            consumer.acknowledge(batch)
        reconnects = consumer.metrics()["reconnects"]
        consumer.close()
        cluster.restart_broker(victim)
        _report(
            request,
            "owner killed during consume [proxy]",
            {
                "received": len(seen),
                "redelivered": duplicates,
                "reconnects": reconnects,
                "resumed_after_s": round(resumed_after or -1, 2),
            },
        )
        assert killed_at is not None
        assert len(seen) == N, f"{N - len(seen)} messages never received"
        assert first_seen == sorted(first_seen), "a message was first received out of order"
        assert reconnects >= 1
        with client.subscribe(topic, "through-kill") as again:
            with pytest.raises(OperationTimeoutError):
                again.receive(timeout=2)


def test_proxy_restarted_mid_stream(request: pytest.FixtureRequest, cluster: ApacheCluster) -> None:
    """A producer and a consumer both through the proxy; the proxy is stopped and started
    again (same port) while they run."""
    topic = topic_owned_by(cluster, 1, "proxy-restart")
    received: list[bytes] = []
    stop = threading.Event()
    errors: list[str] = []

    def consume() -> None:
        try:
            with streamwire.Client(cluster.proxy_url, operation_timeout=30) as client:
                with client.subscribe(
                    topic, "live", initial_position="earliest", receiver_queue_size=500
                ) as consumer:
                    while not stop.is_set():
                        try:
                            batch = consumer.receive_many(500, timeout=1)
                        except OperationTimeoutError:
                            continue
                        received.extend(m.data() for m in batch)
                        consumer.acknowledge(batch)
        except Exception as exc:
            errors.append(repr(exc))

    # Subscribe before producing so the subscription starts at the first message.
    with streamwire.Client(cluster.proxy_url) as client:
        client.subscribe(topic, "live", initial_position="earliest").close()
    reader = threading.Thread(target=consume, name="consume", daemon=True)
    reader.start()
    try:
        out, dis = produce_with_disruption(
            cluster.proxy_url,
            topic,
            cluster.restart_proxy,
            n=N,
            disrupt_at=N // 4,
            background=True,
            until_recovered=True,
        )
        deadline = time.monotonic() + 60
        while len(set(received)) < len(out.acked_at) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop.set()
        reader.join(timeout=60)
    assert dis.error is None, dis.error
    assert not errors, errors
    stored = read_all(cluster.service_url, topic)
    first_seen: list[bytes] = []
    seen: set[bytes] = set()
    for p in received:
        if p not in seen:
            seen.add(p)
            first_seen.append(p)
    _report(
        request,
        "proxy restarted mid-stream",
        {
            "sent": len(out.payloads),
            "acked": len(out.acked_at),
            "stored": len(stored),
            "received": len(seen),
            "redelivered": len(received) - len(seen),
            "proxy_restart_s": round(dis.done_at - dis.started_at, 1),
            "recovery_s": round(recovery_seconds(out, dis) or -1, 2),
        },
    )
    assert not out.failed, out.failed
    assert_exactly_once_in_order(out.acked(), stored, out.payloads)
    assert first_seen == stored, "the consumer through the proxy missed or reordered messages"
