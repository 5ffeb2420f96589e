"""Readers against real brokers; the official client writes the data."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import exceptions as exc

from tests.integration._consumer_util import produce


def payloads(n: int) -> list[bytes]:
    return [f"r-{i:04d}".encode() for i in range(n)]


def drain(reader: Any, n: int) -> list[Any]:
    out: list[Any] = []
    while len(out) < n:
        batch = reader.read_many(n - len(out), timeout=10)
        assert batch, f"got {len(out)} of {n}"
        out.extend(batch)
    return out


@pytest.mark.parametrize("batching", [False, True])
def test_reader_from_earliest(
    broker: Any, official_pulsar: ModuleType, unique_topic: str, batching: bool
) -> None:
    data = payloads(40)
    produce(official_pulsar, broker.service_url, unique_topic, data, batching=batching)
    with streamwire.Client(broker.service_url) as client:
        with client.create_reader(unique_topic, "earliest") as r:
            assert r.has_message_available()
            got = drain(r, 40)
            assert [m.data() for m in got] == data
            assert not r.has_message_available()
            with pytest.raises(exc.OperationTimeoutError):
                r.read_next(timeout=0.3)


def test_reader_from_latest(broker: Any, official_pulsar: ModuleType, unique_topic: str) -> None:
    produce(official_pulsar, broker.service_url, unique_topic, payloads(5))
    with streamwire.Client(broker.service_url) as client:
        r = client.create_reader(unique_topic, "latest")
        assert not r.has_message_available()
        with pytest.raises(exc.OperationTimeoutError):
            r.read_next(timeout=0.5)
        produce(official_pulsar, broker.service_url, unique_topic, [b"new"])
        assert r.read_next(timeout=10).data() == b"new"
        r.close()


@pytest.mark.parametrize("batching", [False, True])
@pytest.mark.parametrize("inclusive", [False, True])
def test_reader_from_message_id(
    broker: Any, official_pulsar: ModuleType, unique_topic: str, batching: bool, inclusive: bool
) -> None:
    data = payloads(30)
    produce(official_pulsar, broker.service_url, unique_topic, data, batching=batching)
    with streamwire.Client(broker.service_url) as client:
        with client.create_reader(unique_topic, "earliest") as r:
            ids = [m.message_id for m in drain(r, 30)]
        start = 12
        with client.create_reader(unique_topic, ids[start], inclusive=inclusive) as r:
            first = start if inclusive else start + 1
            got = drain(r, 30 - first)
            assert [m.data() for m in got] == data[first:]
            assert [m.message_id for m in got] == ids[first:]
            assert not r.has_message_available()


def test_reader_iteration_and_types(
    broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    produce(official_pulsar, broker.service_url, unique_topic, payloads(3))
    with streamwire.Client(broker.service_url) as client:
        r = client.create_reader(unique_topic)
        it = iter(r)
        assert next(it).data() == b"r-0000"
        with pytest.raises(TypeError):
            client.create_reader(unique_topic, 5)  # type: ignore[arg-type]
        r.close()
