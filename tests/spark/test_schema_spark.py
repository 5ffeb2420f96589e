"""Typed columns in the Spark Data Source on Apache Pulsar 4.0.7 (its schema registry): a topic
with a JSON or Avro schema reads as the record's fields, records the official client writes
read as the same values, typed DataFrames are written as records the official client reads,
two schema versions read as the latest, and a DataFrame that does not fit the topic's schema
fails on the driver with nothing sent."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire.schema import AvroSchema

from tests.schemas.records import EvolvingV1 as V1
from tests.schemas.records import EvolvingV2 as V2
from tests.schemas.records import official_classes, official_sample, sample
from tests.spark.helpers import as_plain, available_now, copy_stream

N = 12


def _official_write(pulsar: ModuleType, url: str, topic: str, kind: str, n: int = N) -> None:
    reading, _ = official_classes(pulsar)
    schema = (
        pulsar.schema.AvroSchema(reading) if kind == "avro" else pulsar.schema.JsonSchema(reading)
    )
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, schema=schema)
        for i in range(n):
            r = official_sample(pulsar, i)
            if kind == "json":
                r.color = None  # the official JSON writes an enum by value, not symbol
            producer.send(r)
        producer.close()
    finally:
        client.close()


def _expected_row(kind: str, i: int) -> dict[str, Any]:
    r = sample(i)
    d = dataclasses.asdict(r)
    d["color"] = None if kind == "json" else r.color.name  # type: ignore[union-attr]
    return d


def _read(spark: Any, url: str, topic: str, **options: str) -> Any:
    reader = spark.read.format("streamwire").option("service_url", url).option("topic", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


@pytest.mark.parametrize("kind", ["avro", "json"])
def test_reads_official_records_as_typed_columns(
    spark: Any, apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, kind: str
) -> None:
    url = apache_broker.service_url
    _official_write(official_pulsar, url, unique_topic, kind)
    df = _read(spark, url, unique_topic)
    types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    assert types["count"] == "int" and types["total"] == "bigint"
    assert types["ratio"] == "float" and types["precise"] == "double"
    assert types["raw"] == "binary" and types["tags"] == "array<string>"
    assert types["sizes"] == "map<string,bigint>"
    assert types["inner"] == "struct<a:int,tag:string>"
    assert types["color"] == "string" and types["label"] == "string"
    assert "value" not in types and types["publish_time"] == "timestamp"
    rows = df.orderBy("total").collect()
    assert len(rows) == N
    fields = [f.name for f in dataclasses.fields(sample(0))]
    got = [{k: as_plain(r[k]) for k in fields} for r in rows]
    assert got == [_expected_row(kind, i) for i in range(N)]
    assert {r.topic for r in rows} == {unique_topic}
    assert all(r.message_id for r in rows)


@pytest.mark.parametrize("kind", ["avro", "json"])
def test_writes_typed_rows_the_official_client_reads(
    spark: Any, apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, kind: str
) -> None:
    url = apache_broker.service_url
    reading, _ = official_classes(official_pulsar)
    s = official_pulsar.schema
    schema = s.AvroSchema(reading) if kind == "avro" else s.JsonSchema(reading)
    oc = official_pulsar.Client(
        url, logger=official_pulsar.ConsoleLogger(official_pulsar.LoggerLevel.Error)
    )
    try:
        oc.create_producer(unique_topic, schema=schema).close()  # registers the schema
        consumer = oc.subscribe(
            unique_topic,
            "s",
            schema=schema,
            initial_position=official_pulsar.InitialPosition.Earliest,
        )
        rows = [_expected_row(kind, i) for i in range(N)]
        for i, r in enumerate(rows):
            r["key"] = f"k{i}"
        ddl = (
            "name string, count int, total bigint, ratio float, precise double, ok boolean, "
            "raw binary, tags array<string>, sizes map<string,bigint>, "
            "inner struct<a:int,tag:string>, label string, color string, key string"
        )
        df = spark.createDataFrame(rows, ddl).repartition(2)
        df.write.format("streamwire").option("service_url", url).option("topic", unique_topic).mode(
            "append"
        ).save()
        got = []
        for _ in range(N):
            m = consumer.receive(timeout_millis=15000)
            got.append((m.partition_key(), m.value()))
            consumer.acknowledge(m)
    finally:
        oc.close()
    got.sort(key=lambda kv: int(kv[0][1:]))
    assert [k for k, _ in got] == [f"k{i}" for i in range(N)]
    for i, (_, v) in enumerate(got):
        want = official_sample(official_pulsar, i)
        if kind == "json":
            want.color = None
        assert v.name == want.name and v.count == want.count and v.total == want.total
        assert v.ratio == want.ratio and v.precise == want.precise and v.ok == want.ok
        assert v.raw == want.raw and v.tags == want.tags and v.sizes == want.sizes
        assert (v.inner.a, v.inner.tag) == (want.inner.a, want.inner.tag)
        assert v.label == want.label
        if kind == "avro":
            assert v.color == want.color


def test_derived_schema_round_trip(spark: Any, apache_broker: Any, unique_topic: str) -> None:
    """A topic without a schema gets one derived from the DataFrame (registered by the
    producer); reading it back gives the same typed columns (timestamps and dates too)."""
    import datetime as dt

    url = apache_broker.service_url
    t0 = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)
    data = [
        (
            i,
            f"n{i}",
            float(i) / 4,
            [i, i + 1],
            {"x": f"v{i}"},
            (i % 2 == 0, None),
            None,
            t0 + dt.timedelta(seconds=i),
            dt.date(2024, 1, 1 + i),
        )
        for i in range(N)
    ]
    df = spark.createDataFrame(
        data,
        "id bigint, name string, score double, xs array<int>, m map<string,string>, "
        "st struct<flag:boolean,note:string>, opt int, at timestamp, day date",
    )
    df.write.format("streamwire").option("service_url", url).option("topic", unique_topic).option(
        "valueSchemaName", "test.Derived"
    ).mode("append").save()
    with streamwire.Client(url) as client:
        got = client.lookup().schema(unique_topic)
    assert got is not None and got[0] == "AVRO"
    definition = json.loads(got[1])
    assert definition["name"] == "Derived" and definition["namespace"] == "test"
    back = _read(spark, url, unique_topic).orderBy("id")
    names = ["id", "name", "score", "xs", "m", "st", "opt", "at", "day"]
    assert [f.name for f in back.schema.fields][:9] == names
    assert back.schema["at"].dataType.simpleString() == "timestamp"
    assert back.schema["day"].dataType.simpleString() == "date"
    rows = back.select(*names).collect()
    want = [
        (
            i,
            f"n{i}",
            float(i) / 4,
            [i, i + 1],
            {"x": f"v{i}"},
            {"flag": i % 2 == 0, "note": None},
            None,
            t0 + dt.timedelta(seconds=i),
            dt.date(2024, 1, 1 + i),
        )
        for i in range(N)
    ]
    got_rows = [tuple(as_plain(x) for x in r) for r in rows]
    # Spark gives local naive datetimes: compare instants.
    assert [(*r[:7], r[7].astimezone(dt.timezone.utc), r[8]) for r in got_rows] == want


def test_two_schema_versions_read_as_the_latest(
    spark: Any, apache_broker: Any, unique_topic: str
) -> None:
    url = apache_broker.service_url
    with streamwire.Client(url) as client:
        p1 = client.create_producer(unique_topic, schema=AvroSchema(V1))
        p1.send_many([V1(f"a{i}", i) for i in range(5)])
        p1.close()
        p2 = client.create_producer(unique_topic, schema=AvroSchema(V2))
        p2.send_many([V2(f"b{i}", 10 + i, f"note{i}") for i in range(5)])
        p2.close()
        assert p1.schema_version != p2.schema_version
    df = _read(spark, url, unique_topic)
    assert [f.name for f in df.schema.fields][:3] == ["name", "count", "note"]
    rows = df.orderBy("count").select("name", "count", "note").collect()
    assert [tuple(r) for r in rows] == [(f"a{i}", i, None) for i in range(5)] + [
        (f"b{i}", 10 + i, f"note{i}") for i in range(5)
    ]


def test_misfit_dataframe_fails_on_the_driver_with_nothing_sent(
    spark: Any, apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    url = apache_broker.service_url
    with streamwire.Client(url) as client:
        client.create_producer(unique_topic, schema=AvroSchema(V1)).close()
    bad = [
        ("name string, count bigint, extra string", [("a", 1, "x")], "is not a field"),
        ("name string, count string", [("a", "1")], "does not fit"),
        ("count bigint", [(1,)], "no column"),
    ]
    for ddl, data, says in bad:
        df = spark.createDataFrame(data, ddl)
        with pytest.raises(Exception) as info:
            df.write.format("streamwire").option("service_url", url).option(
                "topic", unique_topic
            ).mode("append").save()
        assert says in str(info.value), str(info.value)
        assert "SchemaError" in str(info.value)
    from .helpers import drain

    assert drain(official_pulsar, url, unique_topic, timeout_ms=1000) == []


def test_streaming_read_has_typed_columns(
    spark: Any, apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, tmp_path: Path
) -> None:
    url = apache_broker.service_url
    _official_write(official_pulsar, url, unique_topic, "avro", n=6)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    opts = {"service_url": url, "topic": unique_topic, "startingOffsets": "earliest"}
    available_now(spark, opts, out, ckpt, ("name", "total", "inner"))
    _official_write(official_pulsar, url, unique_topic, "avro", n=6)  # 6 more, same values
    available_now(spark, opts, out, ckpt, ("name", "total", "inner"))  # from the checkpoint
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r.name, r.total, r.inner.a) for r in rows) == sorted(
        2 * [(f"sensor-{i}", 10_000_000_000 + i, 2 * i) for i in range(6)]
    )


def test_streaming_typed_read_into_a_typed_streaming_write(
    spark: Any, apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, tmp_path: Path
) -> None:
    """Typed columns out of one topic's micro-batches into another topic as records (schema
    derived from the stream's columns), read back typed."""
    url = apache_broker.service_url
    _official_write(official_pulsar, url, unique_topic, "avro", n=8)
    sink = unique_topic + "-copy"
    source = {"service_url": url, "topic": unique_topic, "startingOffsets": "earliest"}
    columns = ("name", "total", "inner", "key")
    copy_stream(spark, source, {"service_url": url, "topic": sink}, tmp_path / "ckpt", columns)
    with streamwire.Client(url) as client:
        got = client.lookup().schema(sink)
    assert got is not None and got[0] == "AVRO"
    assert [f["name"] for f in json.loads(got[1])["fields"]] == ["name", "total", "inner"]
    rows = _read(spark, url, sink).select("name", "total", "inner").collect()
    assert sorted((r.name, r.total, r.inner.a, r.inner.tag) for r in rows) == sorted(
        (f"sensor-{i}", 10_000_000_000 + i, 2 * i, None if i % 2 else "x") for i in range(8)
    )


def test_schema_discovery_keeps_planner_imports_light(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str
) -> None:
    """schema() with valueSchema=auto (a planner worker's call) asks the registry without
    loading the read and write paths, the client cache or pyarrow."""
    import subprocess
    import sys

    _official_write(official_pulsar, apache_broker.service_url, unique_topic, "avro", n=1)
    code = (
        "import sys, streamwire.spark.datasource as d\n"
        "s = d.StreamwireDataSource({'service_url': sys.argv[1], 'topic': sys.argv[2]}).schema()\n"
        "heavy = [m for m in ('streamwire.spark.reading', 'streamwire.spark.writing',"
        " 'streamwire.spark.executor', 'streamwire.spark.cache', 'pyarrow')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
        "print(s.simpleString())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, apache_broker.service_url, unique_topic],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0] == ""
    assert out[1].startswith("struct<name:string,count:int,total:bigint,")
