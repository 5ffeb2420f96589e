"""Producing and consuming while the connection is cut every second and the broker restarts.

Bounded versions of the issue-7 fault runs (each well under a minute per broker):

- produce: ``N`` messages with ``send_async`` (paced over several seconds) through a fault proxy
  whose connections are cut every ~1 s; pulsar-lite (a dedicated instance) is restarted once in
  the middle, Apache Pulsar has its topic unloaded instead (a JVM restart costs too much here).
  Afterwards everything is read back: every message whose future succeeded is present; on Apache
  (deduplication on) none is there twice. On pulsar-lite (no deduplication) duplicates are
  reported, not failed.
- consume (individual ack): at-least-once, nothing skipped.
- consume (cumulative ack): nothing after the acknowledged position is ever skipped: each message
  received is at most one past the highest seen so far, and everything is seen.

The counts are printed (``-s`` shows them) and attached to the test report as ``user_properties``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import streamwire
from streamwire import OperationTimeoutError

from tests.peers.admin import PulsarAdmin
from tests.peers.faultproxy import FaultProxy
from tests.peers.lite import PulsarLite

PRODUCE_N = 50_000
CONSUME_N = 20_000
CUT_EVERY = 1.0
PACE_BATCH = 500  # send this many, then sleep PACE_SLEEP: ~8 s of producing for 50k messages
PACE_SLEEP = 0.08


@dataclass
class Cutter:
    """A thread cutting every proxy connection every ``every`` seconds; ``disrupt`` runs once."""

    proxy: FaultProxy
    every: float = CUT_EVERY
    disrupt: Callable[[], None] | None = None
    disrupt_after_cuts: int = 3
    #: Stop cutting once ``disrupt`` ran (pulsar-lite: see ``target``).
    stop_after_disrupt: bool = False
    cuts: int = 0
    connections_cut: int = 0
    disrupted: bool = False
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Cutter:
        self._thread = threading.Thread(target=self._run, name="cutter", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            if self.stop_after_disrupt and self.disrupted:
                continue
            try:
                self.connections_cut += self.proxy.cut_all()
                self.cuts += 1
                if (
                    self.disrupt is not None
                    and not self.disrupted
                    and self.cuts >= self.disrupt_after_cuts
                ):
                    self.disrupted = True
                    self.disrupt()
            except Exception as e:  # reported by the test, never swallowed silently
                self.errors.append(repr(e))


@pytest.fixture
def own_lite() -> Iterator[PulsarLite]:
    """A dedicated pulsar-lite: restarting it does not disturb the session broker."""
    broker = PulsarLite()
    try:
        broker.start()
        yield broker
    finally:
        broker.close()


@pytest.fixture(params=["lite", "apache"])
def target(request: pytest.FixtureRequest) -> tuple[str, Any, Callable[[str], None]]:
    """(kind, broker, disrupt(topic)): restart a dedicated lite, or unload the Apache topic.

    On pulsar-lite the consume tests stop cutting after the restart: lite 0.2.0 sometimes keeps
    the consumer of a cut connection on an exclusive subscription and refuses every re-subscribe
    after it (see docs/reliability.md); only a restart clears that, so cuts after the last
    restart would test lite's bug, not the client."""
    kind: str = request.param
    if kind == "lite":
        lite: PulsarLite = request.getfixturevalue("own_lite")
        return kind, lite, lambda _topic: lite.restart()
    apache = request.getfixturevalue("apache_broker")
    admin: PulsarAdmin = request.getfixturevalue("apache_admin")
    return kind, apache, admin.unload


def read_back(url: str, topic: str, *, idle: float = 3.0) -> Counter[bytes]:
    """Every message stored on ``topic`` (a fresh client, no faults), counted by payload."""
    seen: Counter[bytes] = Counter()
    with streamwire.Client(url, operation_timeout=30) as client:
        with client.create_reader(topic, streamwire.MessageId.earliest) as reader:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    batch = reader.read_many(1000, timeout=idle)
                except OperationTimeoutError:
                    break
                if not batch:
                    break
                seen.update(m.data() for m in batch)
    return seen


def report(request: pytest.FixtureRequest, title: str, counts: dict[str, Any]) -> None:
    line = f"{title}: " + ", ".join(f"{k}={v}" for k, v in counts.items())
    print("\n" + line)
    request.node.user_properties.append((title, counts))


def test_produce_with_cuts_and_restart(
    request: pytest.FixtureRequest,
    target: tuple[str, Any, Callable[[str], None]],
    fault_proxy: Callable[..., FaultProxy],
    unique_topic: str,
) -> None:
    kind, broker, disrupt = target
    proxy = fault_proxy(broker)
    # A durable subscription keeps what is written: without one (and with Apache's default
    # retention of 0) the broker may delete a ledger closed by the unload before it is read
    # back, which would count as loss here (seen once in CI: the first 19,000 "lost").
    with streamwire.Client(broker.service_url) as keeper:
        keeper.subscribe(unique_topic, "keep", initial_position="earliest").close()
    payloads = [f"m-{i:06d}".encode() for i in range(PRODUCE_N)]
    callbacks: Counter[str] = Counter()
    cb_lock = threading.Lock()

    def on_sent(err: BaseException | None, _mid: Any) -> None:
        with cb_lock:
            callbacks["error" if err is not None else "ok"] += 1

    t0 = time.monotonic()
    with streamwire.Client(proxy.url, operation_timeout=30, connection_timeout=5) as client:
        producer = client.create_producer(
            unique_topic, producer_name=f"cuts-{kind}", send_timeout=60, batching_max_delay=0.005
        )
        futures = []
        with Cutter(proxy, disrupt=lambda: disrupt(unique_topic)) as cutter:
            for i, payload in enumerate(payloads):
                futures.append(producer.send_async(payload, on_sent))
                if i % PACE_BATCH == PACE_BATCH - 1:
                    time.sleep(PACE_SLEEP)
            producer.flush()
        acked: list[bytes] = []
        failed: Counter[str] = Counter()
        for payload, fut in zip(payloads, futures):
            err = fut.exception(timeout=90)
            if err is None:
                acked.append(payload)
            else:
                failed[type(err).__name__] += 1
        producer.close()
    produce_s = time.monotonic() - t0
    assert not cutter.errors, cutter.errors
    assert cutter.disrupted, "the broker restart / topic unload never happened"
    assert cutter.cuts >= 3

    seen = read_back(broker.service_url, unique_topic)
    missing = [p for p in acked if seen[p] == 0]
    duplicates = sum(c - 1 for c in seen.values() if c > 1)
    report(
        request,
        f"produce[{kind}]",
        {
            "sent": PRODUCE_N,
            "acknowledged": len(acked),
            "failed": dict(failed),
            "callbacks": dict(callbacks),
            "stored": sum(seen.values()),
            "distinct": len(seen),
            "lost": len(missing),
            "duplicates": duplicates,
            "cuts": cutter.cuts,
            "connections_cut": cutter.connections_cut,
            "seconds": round(produce_s, 1),
        },
    )
    assert sum(callbacks.values()) == PRODUCE_N
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {missing[:5]}"
    assert set(seen) <= set(payloads)
    # With retries and a 60 s send timeout nothing should fail outright on a loopback broker.
    assert len(acked) == PRODUCE_N, dict(failed)
    if kind == "apache":
        assert duplicates == 0, f"{duplicates} duplicates with deduplication on"


def _produce_plain(url: str, topic: str, n: int) -> list[bytes]:
    payloads = [f"c-{i:06d}".encode() for i in range(n)]
    with streamwire.Client(url) as client:
        with client.create_producer(topic, batching_max_delay=0.005) as producer:
            futures = [producer.send_async(p) for p in payloads]
            producer.flush()
            for f in futures:
                f.result(timeout=60)
    return payloads


@pytest.mark.parametrize("ack", ["individual", "cumulative"])
def test_consume_with_cuts_and_restart(
    request: pytest.FixtureRequest,
    target: tuple[str, Any, Callable[[str], None]],
    fault_proxy: Callable[..., FaultProxy],
    unique_topic: str,
    ack: str,
) -> None:
    kind, broker, disrupt = target
    proxy = fault_proxy(broker)
    sub = f"cuts-{ack}"
    with streamwire.Client(proxy.url, operation_timeout=30, connection_timeout=5) as client:
        # Create the subscription before producing, so it starts at the first message.
        consumer = client.subscribe(
            unique_topic, sub, initial_position="earliest", receiver_queue_size=500
        )
        payloads = _produce_plain(broker.service_url, unique_topic, CONSUME_N)
        index = {p: i for i, p in enumerate(payloads)}
        received: Counter[bytes] = Counter()
        skipped_ahead: list[tuple[int, int]] = []
        highest = -1
        t0 = time.monotonic()
        with Cutter(
            proxy, disrupt=lambda: disrupt(unique_topic), stop_after_disrupt=kind == "lite"
        ) as cutter:
            deadline = time.monotonic() + 120
            batches = 0
            last_progress = time.monotonic()
            lite_unstuck = 0
            while len(received) < CONSUME_N and time.monotonic() < deadline:
                try:
                    msgs = consumer.receive_many(200, timeout=1.0)
                except OperationTimeoutError:
                    msgs = []
                if not msgs:
                    # pulsar-lite 0.2.0 can keep a cut connection's consumer on the exclusive
                    # subscription and refuse every re-subscribe (docs/reliability.md); only a
                    # restart clears it. Stuck after the planned disruption: restart it again (twice
                    # at most) rather than test lite's bug; each one is reported.
                    stuck = time.monotonic() - last_progress > 15
                    if kind == "lite" and cutter.disrupted and stuck and lite_unstuck < 2:
                        broker.restart()
                        lite_unstuck += 1
                        last_progress = time.monotonic()
                    continue
                last_progress = time.monotonic()
                for m in msgs:
                    i = index[m.data()]
                    if i > highest + 1:
                        skipped_ahead.append((highest, i))
                    highest = max(highest, i)
                    received[m.data()] += 1
                if ack == "individual":
                    consumer.acknowledge(msgs)
                else:
                    consumer.acknowledge_cumulative(msgs[-1])
                batches += 1
                # Pace the consumer so cuts land while it is still receiving (~8 s in all).
                if batches % 5 == 0:
                    time.sleep(0.4)
            stop_at_cut = cutter.cuts
        consumer.close()
    consume_s = time.monotonic() - t0
    assert not cutter.errors, cutter.errors
    missing = [p for p in payloads if received[p] == 0]
    redelivered = sum(c - 1 for c in received.values() if c > 1)
    report(
        request,
        f"consume[{kind},{ack}]",
        {
            "produced": CONSUME_N,
            "distinct_received": len(received),
            "redelivered": redelivered,
            "missing": len(missing),
            "skipped_ahead": len(skipped_ahead),
            "cuts": stop_at_cut,
            "disrupted": cutter.disrupted,
            "extra_lite_restarts": lite_unstuck,
            "seconds": round(consume_s, 1),
        },
    )
    assert not missing, f"{len(missing)} messages never received, e.g. {missing[:5]}"
    assert cutter.cuts >= 3 and cutter.disrupted
    if ack == "cumulative":
        # Exclusive subscription, in order: a gap would show as a jump past highest + 1.
        assert not skipped_ahead, skipped_ahead[:5]
