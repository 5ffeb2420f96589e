"""Typed columns for PROTOBUF_NATIVE and KEY_VALUE topics in the Spark Data Source, on Apache
Pulsar 4.0.7 (its schema registry): what streamwire's typed producers write reads as typed
columns (a protobuf message's fields; a key/value's ``key`` and ``value`` per half), the
same DataFrame written back to a topic of the same schema is what streamwire's typed
consumer (and protobuf's own ``FromString``) reads as the original values, a streaming read
has the same columns, and a DataFrame that does not fit fails on the driver."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import streamwire
from streamwire.schema import AvroSchema, KeyValueSchema, ProtobufNative, StringSchema

from tests.schemas.protos import reading_classes, reading_row, sample
from tests.schemas.records import EvolvingV1 as V1
from tests.schemas.records import EvolvingV2 as V2
from tests.spark.helpers import as_plain, available_now

N = 8


@dataclasses.dataclass
class Id:
    region: str
    n: int


def _read(spark: Any, url: str, topic: str) -> Any:
    return spark.read.format("streamwire").option("service_url", url).option("topic", topic).load()


def _write(df: Any, url: str, topic: str) -> None:
    df.write.format("streamwire").option("service_url", url).option("topic", topic).mode(
        "append"
    ).save()


def test_protobuf_topic_reads_typed_and_writes_back_what_from_string_reads(
    spark: Any, apache_broker: Any, unique_topic: str
) -> None:
    url = apache_broker.service_url
    reading, point, _ = reading_classes()
    schema = ProtobufNative(reading)
    values = [sample(reading, point, i) for i in range(N)]
    sink = unique_topic + "-copy"
    with streamwire.Client(url) as client:
        p = client.create_producer(unique_topic, schema=schema)
        p.send_many(values)
        p.close()
        client.create_producer(sink, schema=schema).close()  # registers the sink's schema
        consumer = client.subscribe(sink, "s", initial_position="earliest", schema=schema)
        df = _read(spark, url, unique_topic)
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        assert types["count"] == "int" and types["total"] == "bigint" and types["big"] == "bigint"
        assert types["level"] == "string" and types["where"] == "struct<x:double,y:double>"
        assert types["tags"] == "array<string>" and types["sizes"] == "map<string,bigint>"
        assert types["path"] == "array<struct<x:double,y:double>>"
        assert types["message_id"] == "binary" and "value" not in types
        fields = [f.name for f in reading.DESCRIPTOR.fields]
        rows = sorted(
            (as_plain(r.asDict()) for r in df.select(*fields).collect()), key=lambda r: r["sensor"]
        )
        assert rows == [reading_row(m) for m in values]
        # Spark writes the same columns to the sink: the payloads are the messages.
        _write(df.select(*fields).repartition(2), url, sink)
        got = []
        for _ in range(N):
            m = consumer.receive(timeout=30)
            consumer.acknowledge(m)
            assert reading.FromString(m.data()) == m.value
            got.append(m.value)
        consumer.close()
    assert sorted(got, key=lambda m: m.sensor) == values


def test_protobuf_misfit_fails_on_the_driver_with_nothing_sent(
    spark: Any, apache_broker: Any, unique_topic: str
) -> None:
    url = apache_broker.service_url
    reading, _, _ = reading_classes()
    with streamwire.Client(url) as client:
        client.create_producer(unique_topic, schema=ProtobufNative(reading)).close()
        for ddl, data, says in [
            ("sensor string, count string", [("a", "1")], "does not fit"),
            ("sensor string, extra int", [("a", 1)], "is not a field"),
        ]:
            with pytest.raises(Exception) as info:
                _write(spark.createDataFrame(data, ddl), url, unique_topic)
            assert says in str(info.value) and "SchemaError" in str(info.value), info.value
        r = client.create_reader(unique_topic, "earliest")
        assert not r.has_message_available()
        r.close()


def _kv_cases() -> list[tuple[str, Any, Any, Any]]:
    """(encoding, key schema, value schema, the value of row i)."""
    reading, point, _ = reading_classes()
    return [
        ("inline", StringSchema(), ProtobufNative(reading), lambda i: sample(reading, point, i)),
        ("separated", AvroSchema(Id), StringSchema(), lambda i: f"v{i}"),
    ]


@pytest.mark.parametrize("case", [0, 1], ids=["inline-string-protobuf", "separated-avro-string"])
def test_key_value_topic_reads_typed_halves_and_writes_them_back(
    spark: Any, apache_broker: Any, unique_topic: str, case: int
) -> None:
    url = apache_broker.service_url
    encoding, ks, vs, make = _kv_cases()[case]
    schema = KeyValueSchema(ks, vs, encoding=encoding)
    keys = [f"k{i}" if case == 0 else Id(f"r{i % 2}", i) for i in range(N)]
    pairs = [(k, make(i)) for i, k in enumerate(keys)]
    sink = unique_topic + "-copy"
    with streamwire.Client(url) as client:
        p = client.create_producer(unique_topic, schema=schema)
        p.send_many(pairs)
        p.close()
        client.create_producer(sink, schema=schema).close()
        consumer = client.subscribe(sink, "s", initial_position="earliest", schema=schema)
        df = _read(spark, url, unique_topic)
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        if case == 0:
            assert types["key"] == "string" and types["value"].startswith("struct<sensor:string,")
        else:
            assert types["key"] == "struct<region:string,n:bigint>" and types["value"] == "string"
        rows = [(as_plain(r.key), as_plain(r.value)) for r in df.select("key", "value").collect()]
        if case == 0:
            want = [(k, reading_row(v)) for k, v in pairs]
        else:
            want = [(dataclasses.asdict(k), v) for k, v in pairs]
        assert sorted(rows, key=repr) == sorted(want, key=repr)
        _write(df.select("key", "value").repartition(2), url, sink)
        got = []
        for _ in range(N):
            m = consumer.receive(timeout=30)
            consumer.acknowledge(m)
            got.append(m.value)
        consumer.close()
    assert sorted(got, key=repr) == sorted(pairs, key=repr)


def test_key_value_record_half_of_two_versions_reads_as_the_latest(
    spark: Any, apache_broker: Any, unique_topic: str
) -> None:
    url = apache_broker.service_url
    with streamwire.Client(url) as client:
        for cls, rows in ((V1, [V1(f"a{i}", i) for i in range(3)]), (V2, [V2("b", 10, "x")])):
            schema = KeyValueSchema(StringSchema(), AvroSchema(cls), encoding="separated")
            p = client.create_producer(unique_topic, schema=schema)
            p.send_many([(r.name, r) for r in rows])
            p.close()
    df = _read(spark, url, unique_topic)
    assert (
        df.schema["value"].dataType.simpleString() == "struct<name:string,count:bigint,note:string>"
    )
    got = sorted((r.key, r.value["count"], r.value["note"]) for r in df.collect())
    assert got == [("a0", 0, None), ("a1", 1, None), ("a2", 2, None), ("b", 10, "x")]


def test_key_value_misfit_fails_on_the_driver(
    spark: Any, apache_broker: Any, unique_topic: str
) -> None:
    url = apache_broker.service_url
    with streamwire.Client(url) as client:
        schema = KeyValueSchema(AvroSchema(Id), StringSchema(), encoding="separated")
        client.create_producer(unique_topic, schema=schema).close()
        for ddl, data, says in [
            ("key string, value string", [("a", "b")], "half is a record"),
            ("key struct<region:string,n:int>", [(("r", 1),)], "'value' column"),
        ]:
            with pytest.raises(Exception) as info:
                _write(spark.createDataFrame(data, ddl), url, unique_topic)
            assert says in str(info.value) and "SchemaError" in str(info.value), info.value
        r = client.create_reader(unique_topic, "earliest")
        assert not r.has_message_available()
        r.close()


def test_streaming_read_of_a_key_value_topic(
    spark: Any, apache_broker: Any, unique_topic: str, tmp_path: Path
) -> None:
    url = apache_broker.service_url
    reading, point, _ = reading_classes()
    schema = KeyValueSchema(StringSchema(), ProtobufNative(reading), encoding="separated")
    with streamwire.Client(url) as client:
        p = client.create_producer(unique_topic, schema=schema)
        p.send_many([(f"k{i}", sample(reading, point, i)) for i in range(6)])
        p.close()
    out = tmp_path / "out"
    opts = {"service_url": url, "topic": unique_topic, "startingOffsets": "earliest"}
    columns = ("key", "value.sensor AS sensor", "value.where AS where")
    available_now(spark, opts, out, tmp_path / "ckpt", columns)
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r.key, r.sensor, r.where.x if r.where else None) for r in rows) == [
        (f"k{i}", f"s{i}", i + 0.5 if i % 2 == 0 else None) for i in range(6)
    ]
