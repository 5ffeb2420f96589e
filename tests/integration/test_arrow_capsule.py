"""Bulk sends take any Arrow library's columns through the Arrow PyCapsule interface
(``__arrow_c_stream__`` / ``__arrow_c_array__``), not only pyarrow's: polars Series (which
export the ``binary_view`` / ``string_view`` layouts) for values, keys and timestamps, on
Pulsar (read back by the official client), TANK and Pravega; and pyarrow's own view arrays."""

from __future__ import annotations

import datetime as dt
import uuid
from types import ModuleType
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
import streamwire
from streamwire import pravega as pv
from streamwire import tank

VALUES = [b"alpha", b"", b"gamma" * 50, b"\x00\xff"]


def test_pulsar_send_many_takes_polars_columns(
    lite_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    t0 = dt.datetime(2026, 1, 2, 3, 4, 5, 678000)
    values = pl.Series("value", VALUES)
    keys = pl.Series("key", ["k0", None, "k2", "k3"])
    times = pl.Series("t", [t0] * 4)
    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_producer(unique_topic) as producer:
            assert len(producer.send_many(values, keys=keys, event_times=times)) == 4
            # string_view: a str column is sent as its UTF-8 bytes.
            producer.send_many(pl.Series(["é", "z"]))
            # pyarrow's own view layout too.
            producer.send_many(pa.array([b"v1", b"v2"], type=pa.binary_view()))
    c = official_pulsar.Client(lite_broker.service_url)
    try:
        r = c.create_reader(unique_topic, official_pulsar.MessageId.earliest)
        got = [r.read_next(10_000) for _ in range(8)]
    finally:
        c.close()
    assert [m.data() for m in got] == [*VALUES, "é".encode(), b"z", b"v1", b"v2"]
    assert [m.partition_key() for m in got[:4]] == ["k0", "", "k2", "k3"]
    want_ms = int(t0.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert {m.event_timestamp() for m in got[:4]} == {want_ms}


def test_tank_send_many_takes_polars_columns(tank_broker: Any) -> None:
    topic = "cap" + uuid.uuid4().hex[:12]
    with tank.Client(tank_broker.url) as c:
        c.create_topic(topic, partitions=1)
        with c.create_producer(topic) as p:
            p.send_many(pl.Series(VALUES), keys=pl.Series([b"a", None, b"c", b"d"]))
        with c.create_consumer(topic, start="earliest") as consumer:
            got: list[tank.Message] = []
            while len(got) < 4:
                got += consumer.receive_many(10, timeout=5)
    assert [m.value for m in got] == VALUES
    assert [m.key for m in got] == [b"a", None, b"c", b"d"]


def test_pravega_write_many_takes_polars_columns(pravega: Any) -> None:
    scope = "cap" + uuid.uuid4().hex[:10]
    with pv.Client(pravega.controller_url) as c:
        c.create_scope(scope)
        c.create_stream(scope, "s", segments=1)
        with c.create_writer(scope, "s") as w:
            w.write_many(pl.Series(VALUES), routing_keys=pl.Series(["r"] * 4))
        with c.create_reader(scope, "s", "head") as r:
            got: list[pv.Event] = []
            while len(got) < 4:
                got += r.read_many(4 - len(got), timeout=5)
    assert [e.value for e in got] == VALUES


def test_a_column_of_the_wrong_type_is_refused_typed(lite_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(lite_broker.service_url) as client:
        with client.create_producer(unique_topic) as producer:
            with pytest.raises(TypeError, match="binary or string"):
                producer.send_many(pl.Series([1, 2, 3]))
