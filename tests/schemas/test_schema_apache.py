"""Schemas on Apache Pulsar 4.0.7 (its schema registry) with the official Python client:
records each side writes the other reads as the same values, both producers share a topic,
the broker's compatibility refusal is IncompatibleSchemaError, a value that does not fit is
SchemaError with nothing sent, each message decodes with the version it was written with,
and key/value schemas round-trip."""

from __future__ import annotations

import dataclasses
import json
from types import ModuleType
from typing import Any, Optional

import pytest
import streamwire
from streamwire.exceptions import IncompatibleSchemaError, SchemaError
from streamwire.schema import AvroSchema, JsonSchema, KeyValueSchema, StringSchema

from tests.schemas.records import Inner, Reading, official_classes, official_sample, sample

N = 20
KINDS = ["avro", "json"]


def ours_for(kind: str, record: Any) -> Any:
    return AvroSchema(record) if kind == "avro" else JsonSchema(record)


def theirs_for(pulsar: ModuleType, kind: str, record: Any) -> Any:
    s = pulsar.schema
    return s.AvroSchema(record) if kind == "avro" else s.JsonSchema(record)


def expected(kind: str, i: int) -> Reading:
    # The same values both ways, enums included: the official client's JSON writes an enum
    # by its Python value and ours by its symbol, and each side reads both forms.
    return sample(i)


def official_record(pulsar: ModuleType, kind: str, i: int) -> Any:
    return official_sample(pulsar, i)


@pytest.mark.parametrize("kind", KINDS)
def test_we_read_what_the_official_client_writes(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, kind: str
) -> None:
    official_reading, _ = official_classes(official_pulsar)
    oc = official_pulsar.Client(apache_broker.service_url)
    try:
        p = oc.create_producer(
            unique_topic, schema=theirs_for(official_pulsar, kind, official_reading)
        )
        for i in range(N):
            p.send(official_record(official_pulsar, kind, i))
        p.close()
    finally:
        oc.close()
    with streamwire.Client(apache_broker.service_url) as client:
        c = client.subscribe(
            unique_topic, "s", initial_position="earliest", schema=ours_for(kind, Reading)
        )
        got = [c.receive(timeout=15) for _ in range(N)]
        assert [m.value for m in got] == [expected(kind, i) for i in range(N)]
        assert all(m.schema_version for m in got)
        c.close()


@pytest.mark.parametrize("kind", KINDS)
def test_the_official_client_reads_what_we_write(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, kind: str
) -> None:
    official_reading, _ = official_classes(official_pulsar)
    oc = official_pulsar.Client(apache_broker.service_url)
    try:
        oconsumer = oc.subscribe(
            unique_topic, "o", schema=theirs_for(official_pulsar, kind, official_reading)
        )
        with streamwire.Client(apache_broker.service_url) as client:
            p = client.create_producer(unique_topic, schema=ours_for(kind, Reading))
            assert p.schema_version is not None
            p.send(expected(kind, 0))
            p.send_many([expected(kind, i) for i in range(1, N)])
            p.close()
        for i in range(N):
            m = oconsumer.receive(15_000)
            v, want = m.value(), expected(kind, i)
            assert (v.name, v.count, v.total, v.label) == (
                want.name,
                want.count,
                want.total,
                want.label,
            )
            assert v.tags == want.tags and v.sizes == want.sizes
            assert v.precise == pytest.approx(want.precise) and v.ratio == pytest.approx(want.ratio)
            inner = v.inner  # the official client builds the nested Record either way
            assert (
                want.inner is not None and inner.a == want.inner.a and inner.tag == want.inner.tag
            )
            assert v.raw == want.raw and v.color == want.color
            oconsumer.acknowledge(m)
    finally:
        oc.close()


@pytest.mark.parametrize("kind", KINDS)
def test_both_producers_share_the_topic_and_version(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, kind: str
) -> None:
    official_reading, _ = official_classes(official_pulsar)
    oc = official_pulsar.Client(apache_broker.service_url)
    try:
        op = oc.create_producer(
            unique_topic, schema=theirs_for(official_pulsar, kind, official_reading)
        )
        with streamwire.Client(apache_broker.service_url) as client:
            p = client.create_producer(unique_topic, schema=ours_for(kind, Reading))
            op.send(official_record(official_pulsar, kind, 1))
            p.send(expected(kind, 2))
            r = client.create_reader(unique_topic, "earliest", schema=ours_for(kind, Reading))
            a, b = r.read_next(timeout=15), r.read_next(timeout=15)
            assert (a.value, b.value) == (expected(kind, 1), expected(kind, 2))
            # One definition, one registry version, whichever client registered it.
            assert a.schema_version == b.schema_version == p.schema_version
            r.close()
        op.close()
    finally:
        oc.close()


def test_incompatible_schema_raises_typed_error(apache_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=AvroSchema(Reading))
        p.send(sample(0))
        # The same record with a field changed from a string to a long: not compatible.
        changed = json.loads(AvroSchema(Reading).definition)
        changed["fields"][0]["type"] = ["null", "long"]
        with pytest.raises(IncompatibleSchemaError) as info:
            client.create_producer(unique_topic, schema=AvroSchema(definition=changed))
        assert info.value.server_code == 18
        assert isinstance(info.value, streamwire.ServerError)
        with pytest.raises(IncompatibleSchemaError):
            client.create_producer(unique_topic, schema=StringSchema())
        p.close()


def test_value_that_does_not_fit_sends_nothing(apache_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=AvroSchema(Reading))
        bad = dataclasses.replace(sample(1), count="three")  # type: ignore[arg-type]
        with pytest.raises(SchemaError, match="count"):
            p.send(bad)
        with pytest.raises(SchemaError, match="value 2"):
            p.send_many([sample(0), sample(1), bad, sample(3)])
        with pytest.raises(SchemaError):
            p.send_async(b"raw bytes")
        p.send(sample(9))
        r = client.create_reader(unique_topic, "earliest", schema=AvroSchema(Reading))
        assert r.read_next(timeout=15).value == sample(9)
        assert r.read_many(10, timeout=0.5) == [], "nothing of the failed sends reached the topic"
        p.close()


@dataclasses.dataclass
class V1:
    _avro_namespace = "evo"
    id: int
    name: Optional[str]


@dataclasses.dataclass
class V2:
    """V1 plus a field with a default: compatible both ways."""

    _avro_namespace = "evo"
    id: int
    name: Optional[str]
    note: Optional[str] = None


def test_each_message_decodes_with_its_own_version(apache_broker: Any, unique_topic: str) -> None:
    # V1 and V2 share a record name: rename V2's class as the registry sees it.
    v2_schema = AvroSchema(definition=json.loads(AvroSchema(V2).definition) | {"name": "V1"})
    with streamwire.Client(apache_broker.service_url) as client:
        p1 = client.create_producer(unique_topic, schema=AvroSchema(V1))
        p1.send(V1(1, "one"))
        p2 = client.create_producer(unique_topic, schema=v2_schema)
        p2.send({"id": 2, "name": "two", "note": "new"})
        assert p1.schema_version != p2.schema_version
        p1.send(V1(3, "three"))
        # Readers of either version read all three, each message with its writer's version
        # (Avro binary of V1 read as V2 would run out of bytes or misread).
        for schema, want in [
            (AvroSchema(V1), [V1(1, "one"), V1(2, "two"), V1(3, "three")]),
            (
                v2_schema,
                # Resolved to the reader's schema: V1's records get V2's default note.
                [
                    {"id": 1, "name": "one", "note": None},
                    {"id": 2, "name": "two", "note": "new"},
                    {"id": 3, "name": "three", "note": None},
                ],
            ),
        ]:
            r = client.create_reader(unique_topic, "earliest", schema=schema)
            got = [r.read_next(timeout=15) for _ in range(3)]
            assert [m.value for m in got] == want
            assert got[0].schema_version == got[2].schema_version != got[1].schema_version
            r.close()


@pytest.mark.parametrize("encoding", ["inline", "separated"])
def test_key_value_round_trip(apache_broker: Any, unique_topic: str, encoding: str) -> None:
    # The official Python client has no KeyValue schema: ours to ours on Apache.
    schema = KeyValueSchema(StringSchema(), AvroSchema(Inner), encoding=encoding)
    values = [(f"k{i}", Inner(a=i, tag=None)) for i in range(5)]
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=schema)
        p.send(values[0])
        p.send_many(values[1:])
        c = client.subscribe(unique_topic, "kv", initial_position="earliest", schema=schema)
        got = [c.receive(timeout=15) for _ in values]
        assert [m.value for m in got] == values
        if encoding == "separated":
            # The key is the message key (base64 of the key's encoding), so it routes.
            assert got[1].key == "azE="
        else:
            assert got[1].key is None
        with pytest.raises(IncompatibleSchemaError):
            client.create_producer(
                unique_topic,
                schema=KeyValueSchema(StringSchema(), StringSchema(), encoding=encoding),
            )
        c.close()


def test_receive_arrow_gives_typed_columns(apache_broker: Any, unique_topic: str) -> None:
    import pyarrow as pa

    records = [sample(i) for i in range(12)]
    records[3] = dataclasses.replace(records[3], inner=None, tags=None, name=None)
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=AvroSchema(Reading))
        p.send_many(records)
        c = client.subscribe(
            unique_topic, "a", initial_position="earliest", schema=AvroSchema(Reading)
        )
        got: list[Any] = []
        while len(got) < len(records):
            batch = c.receive_arrow(100, timeout=15, columns=["value", "message_id"])
            assert batch.num_rows, f"received {len(got)} of {len(records)}"
            value = batch.column("value")
            assert value.type == pa.struct(
                [
                    pa.field("name", pa.string()),
                    pa.field("count", pa.int32()),
                    pa.field("total", pa.int64()),
                    pa.field("ratio", pa.float32()),
                    pa.field("precise", pa.float64()),
                    pa.field("ok", pa.bool_()),
                    pa.field("raw", pa.binary()),
                    pa.field("tags", pa.list_(pa.string())),
                    pa.field("sizes", pa.map_(pa.string(), pa.int64())),
                    pa.field(
                        "inner",
                        pa.struct([pa.field("a", pa.int32()), pa.field("tag", pa.string())]),
                    ),
                    pa.field("label", pa.string()),
                    pa.field("color", pa.string()),
                ]
            )
            got.extend(value.to_pylist())
        for row, r in zip(got, records):
            want = dataclasses.asdict(r)
            want["color"] = r.color.name if r.color else None
            want["sizes"] = list(r.sizes.items()) if r.sizes is not None else None
            want["ratio"] = pytest.approx(r.ratio)
            assert row == want
        c.close()


def test_asyncio_producer_consumer_and_reader(apache_broker: Any, unique_topic: str) -> None:
    import asyncio

    from streamwire import aio

    async def main() -> None:
        async with aio.Client(apache_broker.service_url) as client:
            p = await client.create_producer(unique_topic, schema=JsonSchema(Inner))
            c = await client.subscribe(
                unique_topic, "a", initial_position="earliest", schema=JsonSchema(Inner)
            )
            await p.send(Inner(a=1, tag="one"))
            await p.send_many([Inner(a=2, tag=None), Inner(a=3, tag="three")])
            assert (await c.receive(timeout=15)).value == Inner(a=1, tag="one")
            batch = await c.receive_arrow(10, timeout=15)
            assert batch.column("value").to_pylist()[0] == {"a": 2, "tag": None}
            r = await client.create_reader(unique_topic, "earliest", schema=JsonSchema(Inner))
            assert [(await r.read_next(timeout=15)).value for _ in range(3)] == [
                Inner(a=1, tag="one"),
                Inner(a=2, tag=None),
                Inner(a=3, tag="three"),
            ]
            await r.close()
            await c.close()
            await p.close()

    asyncio.run(main())


def test_partitioned_topic(apache_broker: Any, apache_admin: Any, unique_topic: str) -> None:
    apache_admin.create_partitioned_topic(unique_topic, 3)
    values = [sample(i) for i in range(30)]
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=AvroSchema(Reading))
        assert p.num_partitions == 3 and p.schema_version is not None
        p.send_many(values)
        c = client.subscribe(
            unique_topic, "p", initial_position="earliest", schema=AvroSchema(Reading)
        )
        got = [c.receive(timeout=15) for _ in values]
        assert sorted((m.value for m in got), key=lambda r: r.count or 0) == values
        # Read from partition topics: each partition's messages decode with the topic's schema.
        assert all(m.topic.startswith(f"{unique_topic}-partition-") for m in got)
        c.close()
