"""TANK under faults, on the suite's TANK broker kind (real or double), each test on a broker
of its own: the broker killed and restarted mid-produce and mid-consume, connections cut and
stalled through the fault proxy. Every acknowledged message is read back; a consumer that
resumes from its positions reads each stored message exactly once, in order per partition;
a stalled broker ends every blocking call in ``OperationTimeoutError``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest
from streamwire import OperationTimeoutError, tank

from tests.peers.faultproxy import FaultProxy
from tests.peers.tank import TankBroker

N = 20_000


def produce_through(
    url: str, topic: str, fault: Callable[[], None], n: int = N
) -> tuple[set[int], int]:
    """Send ``n`` numbered messages with ``send_async`` (the fault injected a third of the way);
    return the numbers acknowledged and how many failed."""
    acked: set[int] = set()
    failed = 0
    with tank.Client(url, operation_timeout=20) as client:
        producer = client.create_producer(topic, send_timeout=60)
        futures = []
        for i in range(n):
            futures.append(producer.send_async(b"%08d" % i, partition=i % 2))
            if i == n // 3:
                fault()
            if i % 500 == 0:
                time.sleep(0.002)  # spread the sends over the fault
        for i, f in enumerate(futures):
            try:
                f.result(timeout=90)
                acked.add(i)
            except Exception:
                failed += 1
        producer.close()
    return acked, failed


def read_all(url: str, topic: str, expect_at_least: int, timeout: float = 60) -> list[tank.Message]:
    got: list[tank.Message] = []
    with tank.Client(url, operation_timeout=20) as client:
        with client.create_consumer(topic, max_wait=0.2) as consumer:
            deadline = time.monotonic() + timeout
            while len(got) < expect_at_least and time.monotonic() < deadline:
                got += consumer.receive_many(10_000, timeout=0.5)
            got += consumer.receive_many(10_000, timeout=0.5)
    return got


def check_exactly_once_per_partition(msgs: list[tank.Message]) -> None:
    for p in (0, 1):
        seqs = [m.seq for m in msgs if m.partition == p]
        assert seqs == list(range(1, len(seqs) + 1)), f"partition {p}: gap or repeat"


def create(url: str, topic: str) -> None:
    with tank.Client(url) as c:
        c.create_topic(topic, partitions=2)


def test_broker_killed_and_restarted_mid_produce(fresh_tank: TankBroker) -> None:
    create(fresh_tank.url, "restarts")
    acked, failed = produce_through(
        fresh_tank.url, "restarts", lambda: fresh_tank.restart(hard=True)
    )
    assert failed == 0 and len(acked) == N
    msgs = read_all(fresh_tank.url, "restarts", N)
    numbers = {int(m.value) for m in msgs}
    assert acked <= numbers, f"{len(acked - numbers)} acknowledged messages missing"
    check_exactly_once_per_partition(msgs)
    # At-least-once: re-sent requests may be stored twice, never out of order within a run.
    for p in (0, 1):
        values = [int(m.value) for m in msgs if m.partition == p]
        assert sorted(set(values)) == sorted(v for v in acked if v % 2 == p)


def test_consumer_resumes_across_a_broker_restart(fresh_tank: TankBroker) -> None:
    create(fresh_tank.url, "reads")
    with tank.Client(fresh_tank.url) as c, c.create_producer("reads") as p:
        for part in (0, 1):
            p.send_many([b"%08d" % i for i in range(N // 2)], partition=part)
    got: list[tank.Message] = []
    with tank.Client(fresh_tank.url, operation_timeout=20) as client:
        consumer = client.create_consumer("reads", max_wait=0.2, queue_bytes=4096)
        restarted = False
        deadline = time.monotonic() + 60
        while len(got) < N and time.monotonic() < deadline:
            got += consumer.receive_many(500, timeout=0.5)
            if not restarted and len(got) > N // 3:
                fresh_tank.restart(hard=True)
                restarted = True
        positions = consumer.positions()
        consumer.close()
    assert restarted and len(got) == N
    check_exactly_once_per_partition(got)
    assert positions == {0: N // 2 + 1, 1: N // 2 + 1}


def test_cuts_through_the_fault_proxy(
    fresh_tank: TankBroker,
    fault_proxy: Callable[..., FaultProxy],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="streamwire")
    proxy = fault_proxy(("127.0.0.1", fresh_tank.port), rewrite_lookup=False)
    url = f"tank://127.0.0.1:{proxy.port}"
    create(url, "cuts")
    stop = threading.Event()

    def cutter() -> None:
        while not stop.wait(0.3):
            proxy.cut_all()

    t = threading.Thread(target=cutter, daemon=True)
    t.start()
    try:
        acked, failed = produce_through(url, "cuts", lambda: None)
        msgs = read_all(url, "cuts", N)
    finally:
        stop.set()
        t.join()
    assert failed == 0 and len(acked) == N
    assert acked <= {int(m.value) for m in msgs}
    check_exactly_once_per_partition(msgs)
    # Connects and losses were logged under streamwire.tank.connection, naming the broker.
    conn = [r for r in caplog.records if r.name == "streamwire.tank.connection"]
    assert any(r.levelno == logging.INFO and "connected to" in r.getMessage() for r in conn)
    lost = [r for r in conn if "reconnecting" in r.getMessage()]
    assert lost and lost[0].levelno == logging.WARNING
    assert lost[0].broker == f"127.0.0.1:{proxy.port}"  # type: ignore[attr-defined]


def test_a_stalled_broker_ends_calls_in_timeouts(
    fresh_tank: TankBroker, fault_proxy: Callable[..., FaultProxy]
) -> None:
    proxy = fault_proxy(("127.0.0.1", fresh_tank.port), rewrite_lookup=False)
    url = f"tank://127.0.0.1:{proxy.port}"
    create(url, "stalled")
    with tank.Client(url, operation_timeout=1.0) as client:
        producer = client.create_producer("stalled", send_timeout=2.0)
        consumer = client.create_consumer("stalled", max_wait=0.2)
        proxy.stall(True)
        t0 = time.monotonic()
        with pytest.raises(OperationTimeoutError):
            client.topics()
        with pytest.raises(OperationTimeoutError):
            producer.send(b"x")
        assert time.monotonic() - t0 < 10
        assert consumer.receive_many(10, timeout=0.5) == []
        proxy.stall(False)
        producer.send(b"after")
        # The timed-out send may still have been stored (the proxy held its bytes): a timeout
        # says "may or may not", never "lost" or "not sent".
        values = [consumer.receive(timeout=10).value]
        if values[0] == b"x":
            values.append(consumer.receive(timeout=10).value)
        assert values[-1] == b"after"
