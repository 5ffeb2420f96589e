"""Schemas on pulsar-lite: it takes the schema in PRODUCER / SUBSCRIBE but keeps no registry
(no versions, no compatibility checks), so typed values round-trip with the reader's schema."""

from __future__ import annotations

from typing import Any

import pytest
import streamwire
from streamwire.schema import AvroSchema, JsonSchema, KeyValueSchema, StringSchema

from tests.schemas.records import Inner, Reading, sample


@pytest.mark.parametrize("make", [AvroSchema, JsonSchema], ids=["avro", "json"])
def test_typed_round_trip_on_lite(lite_broker: Any, unique_topic: str, make: Any) -> None:
    with streamwire.Client(lite_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=make(Reading))
        assert not p.schema_version  # no registry: no version
        p.send(sample(0))
        p.send_many([sample(i) for i in range(1, 5)])
        c = client.subscribe(unique_topic, "s", initial_position="earliest", schema=make(Reading))
        got = [c.receive(timeout=10) for _ in range(5)]
        assert [m.value for m in got] == [sample(i) for i in range(5)]
        assert got[0].data() == make(Reading).encode(sample(0))


def test_key_value_on_lite(lite_broker: Any, unique_topic: str) -> None:
    schema = KeyValueSchema(StringSchema(), AvroSchema(Inner), encoding="separated")
    with streamwire.Client(lite_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=schema)
        p.send(("k", Inner(a=1, tag=None)))
        r = client.create_reader(unique_topic, "earliest", schema=schema)
        assert r.read_next(timeout=10).value == ("k", Inner(a=1, tag=None))


@pytest.mark.parametrize("encoding", ["inline", "separated"])
def test_key_value_none_halves_on_lite(lite_broker: Any, unique_topic: str, encoding: str) -> None:
    # A None half of any schema is a null half, as the Java client sends it: INLINE a -1
    # length; SEPARATED a None value is null_value with an empty payload (read back as None,
    # not decoded from b"") and a None key no message key (not base64 of b"", "" on reading).
    schema = KeyValueSchema(StringSchema(), AvroSchema(Inner), encoding=encoding)
    values = [("k", None), (None, Inner(a=1, tag="t")), (None, None), ("", Inner(a=2, tag=None))]
    with streamwire.Client(lite_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=schema)
        p.send(values[0])
        p.send_many(values[1:])
        r = client.create_reader(unique_topic, "earliest", schema=schema)
        got = [r.read_next(timeout=10) for _ in values]
        assert [m.value for m in got] == values
        if encoding == "separated":
            assert [m.key for m in got] == ["aw==", None, None, ""]
            assert got[0].data() == b""
