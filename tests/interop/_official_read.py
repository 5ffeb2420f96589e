"""Helpers for the producer tests: the official client reads back what streamwire wrote.

The official Python client does not expose a message's sequence id; tests that check sequence
ids read them with streamwire's own consumer (:func:`sequence_ids`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional


@dataclass
class Got:
    """One message as the official consumer saw it."""

    data: bytes
    key: Optional[str]
    properties: dict[str, str]
    event_time: int  # 0 when not set (official client convention)
    producer_name: str
    ledger_id: int
    entry_id: int
    batch_index: int
    partition: int
    topic: str
    publish_time: int
    null_value: bool


def _got(m: Any) -> Got:
    mid = m.message_id()
    key = m.partition_key() if m.partition_key() else None
    return Got(
        data=m.data(),
        key=key,
        properties=dict(m.properties()),
        event_time=m.event_timestamp(),
        producer_name=m.producer_name(),
        ledger_id=mid.ledger_id(),
        entry_id=mid.entry_id(),
        batch_index=mid.batch_index(),
        partition=mid.partition(),
        topic=m.topic_name(),
        publish_time=m.publish_timestamp(),
        null_value=bool(m.has_null_value()),
    )


def official_client(official: ModuleType, url: str) -> Any:
    """An official client that logs errors only."""
    return official.Client(
        url,
        operation_timeout_seconds=30,
        logger=official.ConsoleLogger(official.LoggerLevel.Error),
    )


def official_subscribe(
    official: ModuleType, client: Any, topic: str, sub: str = "check", shared: bool = False
) -> Any:
    """An official consumer positioned at the earliest message."""
    return client.subscribe(
        topic,
        sub,
        consumer_type=official.ConsumerType.Shared if shared else official.ConsumerType.Exclusive,
        initial_position=official.InitialPosition.Earliest,
        receiver_queue_size=1000,
    )


def drain(consumer: Any, n: int, *, timeout: float = 20.0, extra_wait: float = 0.3) -> list[Got]:
    """Receive exactly ``n`` messages (acknowledging them), then check nothing more arrives
    within ``extra_wait`` seconds. Returns what arrived (more than ``n`` if extras came)."""
    out: list[Got] = []
    deadline = time.monotonic() + timeout
    while len(out) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            m = consumer.receive(timeout_millis=max(1, int(min(left, 2.0) * 1000)))
        except Exception as exc:  # official client: pulsar.Timeout
            if "Timeout" in type(exc).__name__ or "TimeOut" in str(exc):
                continue
            raise
        out.append(_got(m))
        consumer.acknowledge(m)
    if extra_wait > 0:
        end = time.monotonic() + extra_wait
        while time.monotonic() < end:
            try:
                m = consumer.receive(timeout_millis=max(1, int(extra_wait * 1000)))
            except Exception as exc:
                if "Timeout" in type(exc).__name__ or "TimeOut" in str(exc):
                    break
                raise
            out.append(_got(m))
            consumer.acknowledge(m)
    return out


def read_all(
    official: ModuleType,
    url: str,
    topic: str,
    n: int,
    *,
    timeout: float = 20.0,
    extra_wait: float = 0.3,
    sub: str = "check",
) -> list[Got]:
    """Open an official client, read ``n`` messages from the start of ``topic`` with a (new, or
    else resumed) subscription ``sub``."""
    client = official_client(official, url)
    try:
        consumer = official_subscribe(official, client, topic, sub)
        try:
            return drain(consumer, n, timeout=timeout, extra_wait=extra_wait)
        finally:
            consumer.close()
    finally:
        client.close()


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()``: over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def java_partition(key: str, n: int) -> int:
    """The partition Java's default router picks for ``key``: ``(hash & MAX_INT) % n``."""
    return (java_string_hash(key) & 0x7FFFFFFF) % n


def sequence_ids(url: str, topic: str, n: int, *, timeout: float = 20.0) -> list[tuple[bytes, int]]:
    """(payload, sequence_id) of the first ``n`` messages, read with streamwire's consumer
    (the official Python client has no accessor for the sequence id)."""
    import streamwire

    out: list[tuple[bytes, int]] = []
    with streamwire.Client(url) as client:
        c = client.subscribe(topic, "seq-check", initial_position="earliest")
        try:
            deadline = time.monotonic() + timeout
            while len(out) < n and time.monotonic() < deadline:
                for m in c.receive_many(n - len(out), timeout=2.0):
                    out.append((m.data(), m.sequence_id))
        finally:
            c.close()
    return out
