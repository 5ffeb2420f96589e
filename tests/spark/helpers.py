"""Spark test helpers: seeding and verification through the official client (a test-only
stand-in), and collected values as plain Python."""

from __future__ import annotations

from types import ModuleType
from typing import Any


def seed(pulsar: ModuleType, url: str, topic: str, values: list[bytes], **send: Any) -> list[Any]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, batching_enabled=True)
        ids = [producer.send(v, **send) for v in values]
        producer.flush()
        producer.close()
        return ids
    finally:
        client.close()


def drain(pulsar: ModuleType, url: str, topic: str, timeout_ms: int = 3000) -> list[Any]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        out = []
        while True:
            try:
                out.append(reader.read_next(timeout_ms))
            except Exception:
                break
        reader.close()
        return out
    finally:
        client.close()


def as_plain(v: Any) -> Any:
    """A value collected from a DataFrame as plain Python: Rows as dicts, bytearrays as bytes,
    recursively through lists and maps."""
    if hasattr(v, "asDict"):
        return {k: as_plain(x) for k, x in v.asDict().items()}
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, list):
        return [as_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: as_plain(x) for k, x in v.items()}
    return v
