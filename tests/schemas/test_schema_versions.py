"""Schema versions on Apache Pulsar 4.0.7: GET_OR_CREATE_SCHEMA (``client.get_or_create_schema``,
``producer.register_schema`` and ``send(..., schema=)``, whose messages carry the other
schema's version), KeyValue halves decoded with the writer's version, and JSON enums both
ways with the official Python client (it writes an enum's Python value, we its symbol)."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
from types import ModuleType
from typing import Any, Optional

import pytest
import streamwire
from streamwire import aio
from streamwire.exceptions import IncompatibleSchemaError
from streamwire.schema import AvroSchema, JsonSchema, KeyValueSchema, StringSchema

from tests.schemas.records import Color, official_multi_classes


@dataclasses.dataclass
class V1:
    _avro_namespace = "multi"
    id: int
    name: Optional[str]


@dataclasses.dataclass
class V2:
    """V1 plus a field with a default (compatible both ways); registered as record V1."""

    _avro_namespace = "multi"
    id: int
    name: Optional[str]
    note: Optional[str] = None


def renamed_v2(kind: str) -> Any:
    """V2's schema under V1's record name (one registry subject, two versions)."""
    cls = AvroSchema if kind == "avro" else JsonSchema
    return cls(definition=json.loads(cls(V2).definition) | {"name": "V1"})


def v1_schema(kind: str) -> Any:
    return AvroSchema(V1) if kind == "avro" else JsonSchema(V1)


@pytest.mark.parametrize("kind", ["avro", "json"])
def test_send_with_another_schema_carries_its_version(
    apache_broker: Any, unique_topic: str, kind: str
) -> None:
    v2 = renamed_v2(kind)
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=v1_schema(kind))
        p.send(V1(1, "one"))
        p.send({"id": 2, "name": "two", "note": "new"}, schema=v2)
        f = p.send_async({"id": 3, "name": "three", "note": "n3"}, schema=v2)
        f.result(timeout=15)
        p.send(V1(4, "four"), schema=v1_schema(kind))  # its own schema: its own version
        # The version registered for V2 is what register_schema and the registry give.
        v2_version = p.register_schema(v2)
        assert v2_version and v2_version != p.schema_version
        assert client.get_or_create_schema(unique_topic, v2) == v2_version
        assert p.register_schema(v1_schema(kind)) == p.schema_version
        for schema, want in [
            (
                v2,
                [
                    {"id": 1, "name": "one", "note": None},
                    {"id": 2, "name": "two", "note": "new"},
                    {"id": 3, "name": "three", "note": "n3"},
                    {"id": 4, "name": "four", "note": None},
                ],
            ),
            (v1_schema(kind), [V1(1, "one"), V1(2, "two"), V1(3, "three"), V1(4, "four")]),
        ]:
            r = client.create_reader(unique_topic, "earliest", schema=schema)
            got = [r.read_next(timeout=15) for _ in range(4)]
            assert [m.value for m in got] == want
            assert [m.schema_version for m in got] == [
                p.schema_version,
                v2_version,
                v2_version,
                p.schema_version,
            ]
            r.close()
        p.close()


def test_the_official_client_reads_another_schemas_message(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    s = official_pulsar.schema
    OfficialV1, _ = official_multi_classes(official_pulsar)
    oc = official_pulsar.Client(apache_broker.service_url)
    try:
        with streamwire.Client(apache_broker.service_url) as client:
            p = client.create_producer(unique_topic, schema=JsonSchema(V1))
            oconsumer = oc.subscribe(unique_topic, "o", schema=s.JsonSchema(OfficialV1))
            p.send({"id": 7, "name": "seven", "note": "x"}, schema=renamed_v2("json"))
            p.send(V1(8, "eight"))
            got = [oconsumer.receive(15_000) for _ in range(2)]
            assert [(m.value().id, m.value().name) for m in got] == [(7, "seven"), (8, "eight")]
            assert got[0].schema_version() != got[1].schema_version()
            p.close()
    finally:
        oc.close()


def test_get_or_create_schema_refuses_an_incompatible_schema(
    apache_broker: Any, unique_topic: str
) -> None:
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=AvroSchema(V1))
        changed = json.loads(AvroSchema(V1).definition)
        changed["fields"][0]["type"] = "string"  # id: long -> string
        bad = AvroSchema(definition=changed)
        with pytest.raises(IncompatibleSchemaError) as info:
            client.get_or_create_schema(unique_topic, bad)
        assert info.value.server_code == 18
        with pytest.raises(IncompatibleSchemaError):
            p.send({"id": "x", "name": None}, schema=bad)
        with pytest.raises(IncompatibleSchemaError):
            p.register_schema(StringSchema())
        # Nothing of the refused sends reached the topic; the producer still works.
        p.send(V1(1, "ok"))
        r = client.create_reader(unique_topic, "earliest", schema=AvroSchema(V1))
        assert r.read_next(timeout=15).value == V1(1, "ok")
        assert r.read_many(10, timeout=0.5) == []
        p.close()


def test_asyncio_forms(apache_broker: Any, unique_topic: str) -> None:
    async def main() -> None:
        v2 = renamed_v2("avro")
        async with aio.Client(apache_broker.service_url) as client:
            p = await client.create_producer(unique_topic, schema=AvroSchema(V1))
            version = await p.register_schema(v2)
            assert version == await client.get_or_create_schema(unique_topic, v2)
            await p.send({"id": 1, "name": "a", "note": "n"}, schema=v2)
            r = await client.create_reader(unique_topic, "earliest", schema=v2)
            m = await r.read_next(timeout=15)
            assert (m.value, m.schema_version) == ({"id": 1, "name": "a", "note": "n"}, version)
            await r.close()
            await p.close()

    asyncio.run(main())


@pytest.mark.parametrize("encoding", ["inline", "separated"])
def test_key_value_halves_decode_with_the_writers_version(
    apache_broker: Any, unique_topic: str, encoding: str
) -> None:
    kv1 = KeyValueSchema(AvroSchema(V1), AvroSchema(V1), encoding=encoding)
    kv2 = KeyValueSchema(renamed_v2("avro"), renamed_v2("avro"), encoding=encoding)
    with streamwire.Client(apache_broker.service_url) as client:
        p1 = client.create_producer(unique_topic, schema=kv1)
        p1.send((V1(1, "k1"), V1(10, "v1")))
        p2 = client.create_producer(unique_topic, schema=kv2)
        p2.send(({"id": 2, "name": "k2", "note": "kn"}, {"id": 20, "name": "v2", "note": "vn"}))
        assert p1.schema_version != p2.schema_version
        # Avro binary of V1 read with V2 (or the reverse) runs out of bytes or misreads:
        # each half must decode with its writer's version, then resolve to the reader's.
        r2 = client.create_reader(unique_topic, "earliest", schema=kv2)
        a, b = r2.read_next(timeout=15), r2.read_next(timeout=15)
        assert a.value == (
            {"id": 1, "name": "k1", "note": None},
            {"id": 10, "name": "v1", "note": None},
        )
        assert b.value == (
            {"id": 2, "name": "k2", "note": "kn"},
            {"id": 20, "name": "v2", "note": "vn"},
        )
        r1 = client.create_reader(unique_topic, "earliest", schema=kv1)
        got = [r1.read_next(timeout=15).value for _ in range(2)]
        assert got == [(V1(1, "k1"), V1(10, "v1")), (V1(2, "k2"), V1(20, "v2"))]
        for x in (r1, r2, p1, p2):
            x.close()


class Shade(enum.Enum):
    """Values of several JSON kinds: the official client writes these, not the names."""

    dark = "d-value"
    light = 2
    mid = 2.5


@dataclasses.dataclass
class Painted:
    shade: Optional[Shade]
    color: Optional[Color]


def test_json_enums_both_ways_with_the_official_client(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    s = official_pulsar.schema

    class OfficialPainted(s.Record):
        shade = s.CustomEnum(Shade)
        color = s.CustomEnum(Color)

    OfficialPainted.__name__ = "Painted"
    ours = [Painted(x, c) for x, c in zip(Shade, Color)] + [Painted(None, None)]
    # The official reader reads a string as a member's name and an int as a member's value
    # (a str or float value it wrote itself it cannot read back): its records of ours in the
    # value form hold Color (int values) only.
    int_valued = [Painted(None, c) for c in Color]
    theirs_topic = unique_topic
    ours_topic = unique_topic + "-ours"
    oc = official_pulsar.Client(apache_broker.service_url)
    try:
        oconsumer = oc.subscribe(ours_topic, "o", schema=s.JsonSchema(OfficialPainted))
        op = oc.create_producer(theirs_topic, schema=s.JsonSchema(OfficialPainted))
        with streamwire.Client(apache_broker.service_url) as client:
            # Theirs: the Python values ("d-value", 2, 2.5; Color's 1, 2, 3) on the wire.
            c = client.subscribe(
                theirs_topic, "ours", initial_position="earliest", schema=JsonSchema(Painted)
            )
            for v in ours:
                op.send(OfficialPainted(shade=v.shade, color=v.color))
            got = [c.receive(timeout=15) for _ in ours]
            assert [json.loads(m.data()) for m in got[:3]] == [
                {"shade": "d-value", "color": 1},
                {"shade": 2, "color": 2},
                {"shade": 2.5, "color": 3},
            ]
            assert [m.value for m in got] == ours
            # receive_arrow reads the value form into the same symbols.
            op.send(OfficialPainted(shade=Shade.mid, color=Color.blue))
            batch = c.receive_arrow(1, timeout=15)
            assert batch.column("value").to_pylist() == [{"shade": "mid", "color": "blue"}]
            # Ours: the symbols by default, the official form with enum_values=True.
            p = client.create_producer(ours_topic, schema=JsonSchema(Painted))
            p.send_many(ours)
            pv = client.create_producer(ours_topic, schema=JsonSchema(Painted, enum_values=True))
            pv.send_many(int_valued)
            assert json.loads(JsonSchema(Painted).encode(ours[0])) == {
                "shade": "dark",
                "color": "red",
            }
            assert json.loads(JsonSchema(Painted, enum_values=True).encode(ours[0])) == {
                "shade": "d-value",
                "color": 1,
            }
            r = client.create_reader(ours_topic, "earliest", schema=JsonSchema(Painted))
            assert [r.read_next(timeout=15).value for _ in range(len(ours) + 3)] == (
                ours + int_valued
            )
            r.close()
            p.close()
            pv.close()
        theirs = [oconsumer.receive(15_000).value() for _ in range(len(ours) + 3)]
        assert [(t.shade, t.color) for t in theirs] == [
            (v.shade, v.color) for v in ours + int_valued
        ]
    finally:
        oc.close()
