"""Helpers of the multi-broker tests: topics placed on a chosen broker, this process's TCP
peers (to prove where connections go), producing with per-message outcomes, reading back."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamwire
from streamwire import OperationTimeoutError

from tests.peers.apache_cluster import ApacheCluster


def new_topic(prefix: str = "c") -> str:
    return f"persistent://public/default/{prefix}-{uuid.uuid4().hex[:12]}"


def topic_owned_by(cluster: ApacheCluster, broker: int, prefix: str = "c") -> str:
    """A fresh topic whose bundle broker ``broker`` owns (the admin lookup assigns the bundle,
    and :meth:`ApacheCluster.place` moves it when the load manager chose the other broker),
    so ownership is settled before the test starts."""
    topic = new_topic(prefix)
    cluster.place(topic, broker)
    return topic


def spread_topic(cluster: ApacheCluster, partitions: int) -> tuple[str, list[int]]:
    """A partitioned topic with partitions owned by each broker; (topic, owner per partition).
    When the load manager put every partition's bundle on one broker, the last partition's
    bundle is moved to the other one (partitions sharing that bundle move with it, so at
    least partition 0's bundle must differ: a few fresh names are tried for that)."""
    admin = cluster.admin()
    for _attempt in range(20):
        topic = new_topic("part")
        admin.create_partitioned_topic(topic, partitions)
        names = [f"{topic}-partition-{i}" for i in range(partitions)]
        bundles = [cluster.bundle_of(n) for n in names]
        if bundles[-1] == bundles[0]:
            continue
        owners = [cluster.owner(n) for n in names]
        if set(owners) != {0, 1}:
            cluster.place(names[-1], 1 - owners[0])
            owners = [cluster.owner(n) for n in names]
        if set(owners) == {0, 1}:
            return topic, owners
    raise AssertionError("no partitioned topic spread over both brokers in 20 tries")


def all_running(cluster: ApacheCluster) -> ApacheCluster:
    """``cluster`` with every broker and the proxy running (a test that killed one and failed
    before bringing it back does not spoil the next test)."""
    for b in cluster.brokers:
        if not b.running:
            cluster.restart_broker(b.index)
    if not cluster.proxy.running:
        cluster.restart_proxy()
    return cluster


def _socket_inodes(pid: int) -> set[str]:
    out: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                out.add(target[8:-1])
    return out


def tcp_peers(pid: int | None = None) -> list[tuple[str, int]]:
    """(address, port) of the remote end of every ESTABLISHED TCP connection of ``pid``
    (default: this process), read from /proc."""
    pid = pid or os.getpid()
    inodes = _socket_inodes(pid)
    peers: list[tuple[str, int]] = []
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        parts = line.split()
        remote, state, inode = parts[2], parts[3], parts[9]
        if state != "01" or inode not in inodes:  # 01 == TCP_ESTABLISHED
            continue
        addr_hex, port_hex = remote.split(":")
        addr = socket.inet_ntop(socket.AF_INET, bytes.fromhex(addr_hex)[::-1])
        peers.append((addr, int(port_hex, 16)))
    return peers


def broker_ports(cluster: ApacheCluster) -> dict[int, str]:
    """Every binary-protocol port of the brokers -> ``"b<i>-internal"`` / ``"b<i>-external"``
    (and ``"b<i>-tls"`` on a secured cluster)."""
    out: dict[int, str] = {}
    for b in cluster.brokers:
        out[b.internal_port] = f"b{b.index}-internal"
        out[b.external_port] = f"b{b.index}-external"
        if b.tls_port:  # a secured cluster
            out[b.tls_port] = f"b{b.index}-tls"
    return out


def dialled(cluster: ApacheCluster) -> dict[str, int]:
    """How many of this process's connections go to each broker listener and to the proxy
    (``proxy``, and a secured cluster's ``proxy-tls``)."""
    names = broker_ports(cluster)
    names[cluster.proxy_port] = "proxy"
    if cluster.proxy_tls_port:
        names[cluster.proxy_tls_port] = "proxy-tls"
    counts: dict[str, int] = {}
    for _addr, port in tcp_peers():
        if port in names:
            counts[names[port]] = counts.get(names[port], 0) + 1
    return counts


@dataclass
class Outcomes:
    """What happened to each message of a tracked produce run."""

    payloads: list[bytes] = field(default_factory=list)
    acked_at: dict[int, float] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def callback(self, i: int) -> Any:
        def done(err: BaseException | None, _mid: Any) -> None:
            with self.lock:
                if err is None:
                    self.acked_at[i] = time.monotonic()
                else:
                    self.failed[i] = type(err).__name__

        return done

    def acked(self) -> list[bytes]:
        return [p for i, p in enumerate(self.payloads) if i in self.acked_at]

    def first_ack_after(self, t: float) -> float | None:
        """Seconds from ``t`` to the first acknowledgement that arrived after ``t``."""
        later = [a for a in self.acked_at.values() if a > t]
        return min(later) - t if later else None


def read_all(
    url: str, topic: str, *, idle: float = 3.0, deadline: float = 120.0, **client_options: Any
) -> list[bytes]:
    """Every message stored on ``topic`` in order (a fresh client, made with
    ``client_options``, and a reader from the start).

    It reads until the broker says nothing more is available, not until a read times out:
    right after a broker restart the topic may be loading (or moving back) for longer than
    ``idle``, and an empty read then is not the end of the topic."""
    out: list[bytes] = []
    with streamwire.Client(url, operation_timeout=30, **client_options) as client:
        with client.create_reader(topic, streamwire.MessageId.earliest) as reader:
            end = time.monotonic() + deadline
            while time.monotonic() < end and reader.has_message_available():
                try:
                    batch = reader.read_many(1000, timeout=idle)
                except OperationTimeoutError:
                    continue
                out.extend(m.data() for m in batch)
    return out


def official_read_all(pulsar: Any, url: str, topic: str, *, idle_ms: int = 3000) -> list[bytes]:
    """The same with the official client (``pulsar`` is the imported module)."""
    out: list[bytes] = []
    client = pulsar.Client(url, operation_timeout_seconds=30)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        while True:
            try:
                msg = reader.read_next(timeout_millis=idle_ms)
            except pulsar.Timeout:
                break
            out.append(bytes(msg.data()))
        reader.close()
    finally:
        client.close()
    return out


def assert_exactly_once_in_order(
    acked: list[bytes], stored: list[bytes], sent: list[bytes]
) -> None:
    """Every acknowledged message stored exactly once; nothing stored that was not sent; the
    stored order is the send order (one producer, one topic)."""
    sent_set = set(sent)
    assert set(stored) <= sent_set, "stored messages that were never sent"
    dup = len(stored) - len(set(stored))
    assert dup == 0, f"{dup} messages stored twice (deduplication is on)"
    stored_set = set(stored)
    lost = [p for p in acked if p not in stored_set]
    assert not lost, f"{len(lost)} acknowledged messages lost, e.g. {lost[:3]}"
    index = {p: i for i, p in enumerate(sent)}
    positions = [index[p] for p in stored]
    assert positions == sorted(positions), "messages stored out of send order"


@dataclass
class Disruption:
    """A disruption of a produce run: how many messages had been sent when it began, and when
    it was over (for a SIGKILL: the broker is dead and reaped)."""

    sent_before: int = 0
    started_at: float = 0.0
    done_at: float = 0.0
    error: str | None = None


def produce_with_disruption(
    url: str,
    topic: str,
    disrupt: Any,
    *,
    n: int,
    disrupt_at: int,
    pace: tuple[int, float] = (200, 0.02),
    background: bool = False,
    until_recovered: bool = False,
    max_seconds: float = 120.0,
    producer_name: str | None = None,
) -> tuple[Outcomes, Disruption]:
    """Send ``n`` numbered messages with ``send_async`` (``pace``: that many, then a sleep) and
    call ``disrupt()`` once ``disrupt_at`` have been sent: inline (a SIGKILL or an unload: what
    is sent afterwards can only be acknowledged by the topic's next owner), or with
    ``background`` in a thread while sending goes on (a proxy restart). With
    ``until_recovered`` sending goes on past ``n`` until a message sent after the disruption
    has been acknowledged (then 1 s more), so the run spans the whole outage."""
    out = Outcomes()
    dis = Disruption()
    thread: threading.Thread | None = None

    def run_disrupt() -> None:
        try:
            disrupt()
        except Exception as exc:  # reported by the caller's assertions
            dis.error = repr(exc)
        dis.done_at = time.monotonic()

    start = time.monotonic()
    with streamwire.Client(url, operation_timeout=30, connection_timeout=5) as client:
        producer = client.create_producer(
            topic, producer_name=producer_name, send_timeout=120, batching_max_delay=0.005
        )
        i = 0
        recovered_at: float | None = None
        while True:
            if i == disrupt_at:
                dis.sent_before = i
                dis.started_at = time.monotonic()
                if background:
                    thread = threading.Thread(target=run_disrupt, name="disrupt", daemon=True)
                    thread.start()
                else:
                    run_disrupt()
            if i >= n and i > disrupt_at:
                if not until_recovered:
                    break
                if recovered_at is None and recovery_seconds(out, dis) is not None:
                    recovered_at = time.monotonic()
                if recovered_at is not None and time.monotonic() - recovered_at > 1.0:
                    break
                if time.monotonic() - start > max_seconds:
                    break
            payload = f"m-{i:07d}".encode()
            out.payloads.append(payload)
            producer.send_async(payload, out.callback(i))
            i += 1
            if i % pace[0] == 0:
                time.sleep(pace[1])
        producer.flush()
        producer.close()
    if thread is not None:
        thread.join(timeout=120)
    return out, dis


def recovery_seconds(out: Outcomes, dis: Disruption) -> float | None:
    """Seconds from the end of the disruption to the first acknowledgement of a message sent
    after it began (None: none yet)."""
    if not dis.done_at:
        return None
    with out.lock:
        later = [a for j, a in out.acked_at.items() if j >= dis.sent_before and a > dis.done_at]
    return min(later) - dis.done_at if later else None
