"""PROTOBUF_NATIVE on Apache Pulsar 4.0.7 (its schema registry validates the descriptor):
generated message classes round-trip through send / send_many and receive, the registry
holds the Java client's schema data, receive_arrow gives typed columns decoded in Rust, a
change of root message is IncompatibleSchemaError, a message of another class is
SchemaError with nothing sent, and the asyncio forms take the same schema."""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Any

import pytest
import streamwire
from streamwire.exceptions import IncompatibleSchemaError, SchemaError
from streamwire.schema import ProtobufNative

from tests.schemas.protos import (
    check_arrow_row,
    reading_classes,
    reading_v2_class,
    sample,
    tree_class,
)

N = 12


@pytest.fixture(scope="module")
def classes() -> tuple[Any, Any, Any]:
    return reading_classes()


def test_round_trip_and_the_registry_holds_the_descriptor(
    apache_broker: Any, apache_admin: Any, unique_topic: str, classes: tuple[Any, Any, Any]
) -> None:
    from google.protobuf import descriptor_pb2

    reading, point, _ = classes
    values = [sample(reading, point, i) for i in range(N)]
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=ProtobufNative(reading))
        c = client.subscribe(
            unique_topic, "s", initial_position="earliest", schema=ProtobufNative(reading)
        )
        p.send(values[0])
        p.send_many(values[1:])
        got = [c.receive(timeout=15) for _ in range(N)]
        assert [m.value for m in got] == values
        assert all(isinstance(m.value, reading) for m in got)
        assert got[3].data() == values[3].SerializeToString()
        assert all(m.schema_version for m in got)
        c.close()
        p.close()
    path = urllib.parse.urlparse(unique_topic).netloc + urllib.parse.urlparse(unique_topic).path
    held = apache_admin.request("GET", f"schemas/{path}/schema")
    assert held["type"] == "PROTOBUF_NATIVE"
    data = json.loads(held["data"])
    assert list(data) == ["fileDescriptorSet", "rootMessageTypeName", "rootFileDescriptorName"]
    assert data["rootMessageTypeName"] == "sw.test.Reading"
    assert data["rootFileDescriptorName"] == "sw/reading.proto"
    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(data["fileDescriptorSet"]))
    # The root file and its import, each once, imports first.
    assert [f.name for f in fds.file] == ["sw/common.proto", "sw/reading.proto"]
    assert [m.name for m in fds.file[1].message_type] == ["Reading"]
    # The Java client's field summary property.
    info = json.loads(held["properties"]["__PARSING_INFO__"])
    assert info[0] == {
        "number": 1,
        "name": "sensor",
        "type": "STRING",
        "label": "LABEL_OPTIONAL",
        "definition": None,
    }
    assert [(x["name"], x["type"], x["label"]) for x in info[8:10]] == [
        ("where", "MESSAGE", "LABEL_OPTIONAL"),
        ("tags", "STRING", "LABEL_REPEATED"),
    ]


def test_receive_arrow_gives_typed_columns(
    apache_broker: Any, unique_topic: str, classes: tuple[Any, Any, Any]
) -> None:
    import pyarrow as pa

    reading, point, _ = classes
    values = [sample(reading, point, i) for i in range(N)]
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=ProtobufNative(reading))
        p.send_many(values)
        c = client.subscribe(
            unique_topic, "a", initial_position="earliest", schema=ProtobufNative(reading)
        )
        rows: list[Any] = []
        while len(rows) < N:
            batch = c.receive_arrow(100, timeout=15, columns=["value"])
            assert batch.num_rows, f"received {len(rows)} of {N}"
            col = batch.column("value")
            pt = pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])
            assert col.type == pa.struct(
                [
                    pa.field("sensor", pa.string()),
                    pa.field("count", pa.int32()),
                    pa.field("total", pa.int64()),
                    pa.field("ratio", pa.float32()),
                    pa.field("precise", pa.float64()),
                    pa.field("ok", pa.bool_()),
                    pa.field("raw", pa.binary()),
                    pa.field("level", pa.string()),
                    pa.field("where", pt),
                    pa.field("tags", pa.list_(pa.string())),
                    pa.field("sizes", pa.map_(pa.string(), pa.int64())),
                    pa.field("note", pa.string()),
                    pa.field("path", pa.list_(pt)),
                    pa.field("big", pa.int64()),
                    pa.field("delta", pa.int32()),
                ]
            )
            rows.extend(col.to_pylist())
        for row, v in zip(rows, values):
            check_arrow_row(row, v)
        c.close()
        p.close()


def test_root_message_change_is_incompatible_and_a_new_field_is_not(
    apache_broker: Any, unique_topic: str, classes: tuple[Any, Any, Any]
) -> None:
    reading, point, other = classes
    v2 = reading_v2_class()
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=ProtobufNative(reading))
        c = client.subscribe(
            unique_topic, "s", initial_position="earliest", schema=ProtobufNative(reading)
        )
        with pytest.raises(IncompatibleSchemaError) as info:
            client.create_producer(unique_topic, schema=ProtobufNative(other))
        assert info.value.server_code == 18
        # v2 adds field 16: the same root message, so the broker registers a new version;
        # a v1 reader reads v2 messages (the unknown field is skipped by field number).
        p2 = client.create_producer(unique_topic, schema=ProtobufNative(v2))
        assert p2.schema_version != p.schema_version
        p.send(sample(reading, point, 1))
        p2.send(v2(sensor="from v2", count=2, added="extra"))
        first, second = c.receive(timeout=15), c.receive(timeout=15)
        assert first.value == sample(reading, point, 1)
        assert (second.value.sensor, second.value.count) == ("from v2", 2)
        assert first.schema_version != second.schema_version
        batch = c.receive_arrow(10, timeout=0.5)
        assert batch.num_rows == 0
        p2.close()
        p.close()
        c.close()


def test_a_message_of_another_class_sends_nothing(
    apache_broker: Any, unique_topic: str, classes: tuple[Any, Any, Any]
) -> None:
    reading, point, _ = classes
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=ProtobufNative(reading))
        with pytest.raises(SchemaError, match="Point"):
            p.send(point(x=1.0))
        with pytest.raises(SchemaError, match="value 1"):
            p.send_many([sample(reading, point, 0), point(x=1.0), sample(reading, point, 2)])
        with pytest.raises(SchemaError):
            p.send_async(b"raw bytes")
        with pytest.raises(SchemaError):
            p.send({"sensor": "a dict"})
        marker = reading(sensor="after")
        p.send(marker)
        r = client.create_reader(unique_topic, "earliest", schema=ProtobufNative(reading))
        assert r.read_next(timeout=15).value == marker
        assert r.read_many(10, timeout=0.5) == [], "nothing of the failed sends reached the topic"
        p.close()


def test_asyncio_producer_consumer_and_reader(
    apache_broker: Any, unique_topic: str, classes: tuple[Any, Any, Any]
) -> None:
    import asyncio

    from streamwire import aio

    reading, point, _ = classes
    values = [sample(reading, point, i) for i in range(3)]

    async def main() -> None:
        async with aio.Client(apache_broker.service_url) as client:
            schema = ProtobufNative(reading)
            p = await client.create_producer(unique_topic, schema=schema)
            c = await client.subscribe(
                unique_topic, "a", initial_position="earliest", schema=schema
            )
            await p.send(values[0])
            await p.send_many(values[1:])
            assert (await c.receive(timeout=15)).value == values[0]
            batch = await c.receive_arrow(10, timeout=15)
            assert [row["sensor"] for row in batch.column("value").to_pylist()] == ["s1", "s2"]
            r = await client.create_reader(unique_topic, "earliest", schema=schema)
            assert [(await r.read_next(timeout=15)).value for _ in range(3)] == values
            await r.close()
            await c.close()
            await p.close()

    asyncio.run(main())


def test_codec_round_trip_without_a_broker(classes: tuple[Any, Any, Any]) -> None:
    reading, point, other = classes
    schema = ProtobufNative(reading)
    v = sample(reading, point, 4)
    assert schema.encode(v) == v.SerializeToString()
    assert schema.decode(v.SerializeToString()) == v
    assert schema.schema_type == 20
    assert json.loads(schema.definition)["rootMessageTypeName"] == "sw.test.Reading"
    with pytest.raises(SchemaError):
        schema.decode(b"\x0a\xff")
    with pytest.raises(SchemaError):
        schema.encode(other(sensor="x"))


def test_a_recursive_message_keeps_its_inner_occurrence_as_bytes_in_arrow(
    apache_broker: Any, unique_topic: str
) -> None:
    tree = tree_class()
    value = tree(name="root", child=tree(name="leaf", child=tree(name="deeper")))
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=ProtobufNative(tree))
        c = client.subscribe(
            unique_topic, "s", initial_position="earliest", schema=ProtobufNative(tree)
        )
        p.send_many([value, value])
        assert c.receive(timeout=15).value == value
        batch = c.receive_arrow(10, timeout=15, columns=["value"])
        rows = batch.column("value").to_pylist()
        child = value.child.SerializeToString()
        assert rows == [{"name": "root", "child": child}]
        p.close()
        c.close()


@pytest.mark.parametrize("encoding", ["inline", "separated"])
def test_as_the_value_half_of_a_key_value_schema(
    apache_broker: Any, unique_topic: str, classes: tuple[Any, Any, Any], encoding: str
) -> None:
    from streamwire.schema import KeyValueSchema, StringSchema

    reading, point, _ = classes
    schema = KeyValueSchema(StringSchema(), ProtobufNative(reading), encoding=encoding)
    values = [(f"k{i}", sample(reading, point, i)) for i in range(3)]
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=schema)
        c = client.subscribe(unique_topic, "s", initial_position="earliest", schema=schema)
        p.send_many(values)
        assert [c.receive(timeout=15).value for _ in values] == values
        p.close()
        c.close()


def test_none_is_a_null_value(
    apache_broker: Any, unique_topic: str, classes: tuple[Any, Any, Any]
) -> None:
    # None goes out as null_value (as the Java client sends a null) and reads back as None,
    # a null row in Arrow; it used to be an empty payload, read back as an all-default message.
    reading, point, _ = classes
    values = [sample(reading, point, 0), None, sample(reading, point, 1)]
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(unique_topic, schema=ProtobufNative(reading))
        c = client.subscribe(
            unique_topic, "s", initial_position="earliest", schema=ProtobufNative(reading)
        )
        a = client.subscribe(
            unique_topic, "a", initial_position="earliest", schema=ProtobufNative(reading)
        )
        p.send(values[0])
        p.send_many(values[1:])
        got = [c.receive(timeout=15) for _ in values]
        assert [m.value for m in got] == values
        assert got[1].data() == b""
        rows: list[Any] = []
        while len(rows) < len(values):
            batch = a.receive_arrow(10, timeout=15, columns=["value"])
            assert batch.num_rows
            rows.extend(batch.column("value").to_pylist())
        assert rows[1] is None and rows[0]["sensor"] == "s0" and rows[2]["sensor"] == "s1"
        p.close()
        c.close()
        a.close()
