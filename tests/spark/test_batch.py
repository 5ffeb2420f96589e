"""Batch read/write through the ``streamwire`` Python Data Source, on both brokers."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from types import ModuleType
from typing import Any

import pytest
import streamwire
from pyspark.sql import functions as F

from .helpers import drain, seed


def _load(spark: Any, url: str, **options: str) -> Any:
    reader = spark.read.format("streamwire").option("service_url", url)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _write_df(spark: Any, n: int, prefix: str = "v") -> Any:
    return (
        spark.range(n)
        .select(
            F.concat(F.lit(prefix), F.col("id").cast("string")).cast("binary").alias("value"),
            F.concat(F.lit("k"), (F.col("id") % 7).cast("string")).alias("key"),
            F.create_map(F.lit("i"), F.col("id").cast("string")).alias("properties"),
            (F.lit(1_700_000_000_000) + F.col("id")).cast("long").alias("event_time_ms"),
        )
        .withColumn("event_time", F.timestamp_millis(F.col("event_time_ms")))
        .drop("event_time_ms")
    )


def test_write_then_read_round_trip(spark: Any, broker: Any, unique_topic: str) -> None:
    n = 2_000
    _write_df(spark, n).repartition(2).write.format("streamwire").option(
        "service_url", broker.service_url
    ).option("topic", unique_topic).mode("append").save()

    df = _load(spark, broker.service_url, topic=unique_topic)
    assert df.columns == [
        "value",
        "key",
        "topic",
        "partition",
        "message_id",
        "publish_time",
        "event_time",
        "properties",
        "producer_name",
        "sequence_id",
    ]
    rows = df.collect()
    assert len(rows) == n
    by_value = {bytes(r.value): r for r in rows}
    assert len(by_value) == n
    r = by_value[b"v42"]
    assert r.key == "k0"
    assert r.properties == {"i": "42"}
    assert r.topic == unique_topic
    assert r.event_time.replace(tzinfo=None) == dt.datetime(2023, 11, 14, 22, 13, 20, 42_000)
    ids = {streamwire.MessageId.deserialize(bytes(x.message_id)) for x in rows}
    assert len(ids) == n  # every message has its own id


def test_read_what_the_official_client_wrote(
    spark: Any, broker: Any, unique_topic: str, official_pulsar: ModuleType
) -> None:
    values = [f"m{i}".encode() for i in range(500)]
    seed(
        official_pulsar,
        broker.service_url,
        unique_topic,
        values,
        partition_key="pk",
        properties={"a": "b"},
    )
    rows = _load(spark, broker.service_url, topic=unique_topic).collect()
    assert sorted(bytes(r.value) for r in rows) == sorted(values)
    assert {r.key for r in rows} == {"pk"}
    assert all(r.properties == {"a": "b"} for r in rows)


def test_written_rows_are_read_by_the_official_client(
    spark: Any, broker: Any, unique_topic: str, official_pulsar: ModuleType
) -> None:
    _write_df(spark, 300).write.format("streamwire").option(
        "service.url",
        broker.service_url,  # the Scala connector's spelling
    ).option("topic", unique_topic).mode("append").save()
    msgs = drain(official_pulsar, broker.service_url, unique_topic)
    assert sorted(m.data() for m in msgs) == sorted(f"v{i}".encode() for i in range(300))
    m = next(m for m in msgs if m.data() == b"v5")
    assert m.partition_key() == "k5"
    assert m.properties() == {"i": "5"}
    assert m.event_timestamp() == 1_700_000_000_005


def test_topics_list_and_scala_names(spark: Any, broker: Any, official_pulsar: ModuleType) -> None:
    t1 = f"persistent://public/default/a-{uuid.uuid4().hex}"
    t2 = f"persistent://public/default/b-{uuid.uuid4().hex}"
    seed(official_pulsar, broker.service_url, t1, [b"x1", b"x2"])
    seed(official_pulsar, broker.service_url, t2, [b"y1"], partition_key="kk")
    df = _load(spark, broker.service_url, topics=f"{t1}, {t2}", scalaNames="true")
    assert {
        "value",
        "__key",
        "__topic",
        "__messageId",
        "__publishTime",
        "__eventTime",
        "__messageProperties",
    } <= set(df.columns)
    rows = df.collect()
    assert sorted((r["__topic"], bytes(r.value)) for r in rows) == sorted(
        [(t1, b"x1"), (t1, b"x2"), (t2, b"y1")]
    )
    assert df.rdd.getNumPartitions() == 2  # one input partition per topic partition


def test_starting_and_ending_offsets_json(
    spark: Any, broker: Any, unique_topic: str, official_pulsar: ModuleType
) -> None:
    values = [f"m{i:03d}".encode() for i in range(50)]
    seed(official_pulsar, broker.service_url, unique_topic, values)
    rows = _load(spark, broker.service_url, topic=unique_topic).collect()
    ordered = sorted(rows, key=lambda r: streamwire.MessageId.deserialize(bytes(r.message_id)))
    assert [bytes(r.value) for r in ordered] == values  # ids order like the topic

    def pos(row: Any) -> dict[str, int]:
        mid = streamwire.MessageId.deserialize(bytes(row.message_id))
        return {"ledger": mid.ledger_id, "entry": mid.entry_id, "batch": mid.batch_index}

    start, end = ordered[10], ordered[37]
    got = _load(
        spark,
        broker.service_url,
        topic=unique_topic,
        startingOffsets=json.dumps({unique_topic: pos(start)}),
        endingOffsets=json.dumps({unique_topic: pos(end)}),
    ).collect()
    assert sorted(bytes(r.value) for r in got) == values[10:38]  # both ends inclusive

    # "latest" as a start means "after the last message now": nothing for a batch read
    assert (
        _load(spark, broker.service_url, topic=unique_topic, startingOffsets="latest").count() == 0
    )


def test_latest_end_is_resolved_at_planning(
    spark: Any, broker: Any, unique_topic: str, official_pulsar: ModuleType
) -> None:
    """A bounded read: messages produced while tasks run are not included, none are missed."""
    seed(official_pulsar, broker.service_url, unique_topic, [b"a"] * 20)
    df = _load(spark, broker.service_url, topic=unique_topic)
    assert df.count() == 20
    seed(official_pulsar, broker.service_url, unique_topic, [b"b"] * 5)
    assert df.count() == 20  # an analysed DataFrame keeps its planned (bounded) ranges
    assert _load(spark, broker.service_url, topic=unique_topic).count() == 25


def test_empty_topic_reads_no_rows(
    spark: Any, broker: Any, unique_topic: str, official_pulsar: ModuleType
) -> None:
    seed(official_pulsar, broker.service_url, unique_topic, [])
    assert _load(spark, broker.service_url, topic=unique_topic).count() == 0


def test_missing_options_fail_clearly(spark: Any, lite_broker: Any) -> None:
    with pytest.raises(Exception, match="exactly one of 'topic'"):
        _load(spark, lite_broker.service_url).collect()
    with pytest.raises(Exception, match="service_url"):
        spark.read.format("streamwire").option("topic", "x").load().collect()


def test_producer_names_are_deterministic_per_partition(
    spark: Any, apache_broker: Any, unique_topic: str
) -> None:
    prefix = f"job-{uuid.uuid4().hex[:8]}"
    _write_df(spark, 400).repartition(2).write.format("streamwire").option(
        "service_url", apache_broker.service_url
    ).option("topic", unique_topic).option("producerName", prefix).mode("append").save()
    rows = _load(spark, apache_broker.service_url, topic=unique_topic).collect()
    assert len(rows) == 400
    assert {r.producer_name for r in rows} == {f"{prefix}-0", f"{prefix}-1"}


def test_key_based_batching_write(spark: Any, apache_broker: Any, unique_topic: str) -> None:
    # batchingType=key_based: each entry the sink writes holds one key (rows' keys interleave).
    n = 2_000
    _write_df(spark, n).repartition(2).write.format("streamwire").option(
        "service_url", apache_broker.service_url
    ).option("topic", unique_topic).option("batchingType", "key_based").mode("append").save()
    rows = _load(spark, apache_broker.service_url, topic=unique_topic).collect()
    assert len(rows) == n
    keys_of_entry: dict[tuple[int, int], set[str]] = {}
    for r in rows:
        mid = streamwire.MessageId.deserialize(bytes(r.message_id))
        keys_of_entry.setdefault((mid.ledger_id, mid.entry_id), set()).add(r.key)
    assert all(len(ks) == 1 for ks in keys_of_entry.values()), "one key per entry"
    assert len(keys_of_entry) < n // 10, "batched"


def test_partitioned_topic(
    spark: Any, apache_broker: Any, apache_admin: Any, unique_topic: str
) -> None:
    apache_admin.create_partitioned_topic(unique_topic, 3)
    _write_df(spark, 900).write.format("streamwire").option(
        "service_url", apache_broker.service_url
    ).option("topic", unique_topic).option("batchingEnabled", "false").mode("append").save()
    df = _load(spark, apache_broker.service_url, topic=unique_topic)
    assert df.rdd.getNumPartitions() == 3
    rows = df.collect()
    assert len(rows) == 900
    assert {r.partition for r in rows} == {0, 1, 2}
    assert {r.topic for r in rows} == {f"{unique_topic}-partition-{i}" for i in range(3)}
    # minPartitions splits a partition's range by entries inside its ledger
    split = _load(spark, apache_broker.service_url, topic=unique_topic, minPartitions="9")
    assert split.rdd.getNumPartitions() >= 6
    assert sorted(bytes(r.value) for r in split.collect()) == sorted(bytes(r.value) for r in rows)


def test_per_row_topic_column(spark: Any, broker: Any) -> None:
    t1 = f"persistent://public/default/r1-{uuid.uuid4().hex}"
    t2 = f"persistent://public/default/r2-{uuid.uuid4().hex}"
    df = spark.createDataFrame([(b"a", t1), (b"b", t2), (b"c", t1)], "value binary, topic string")
    df.write.format("streamwire").option("service_url", broker.service_url).mode("append").save()
    got = _load(spark, broker.service_url, topics=f"{t1},{t2}").collect()
    assert sorted((r.topic, bytes(r.value)) for r in got) == [(t1, b"a"), (t1, b"c"), (t2, b"b")]


def test_undeliverable_write_fails_the_job(spark: Any, unique_topic: str) -> None:
    df = spark.createDataFrame([(b"x",)], "value binary")
    with pytest.raises(Exception, match=r"(?i)connect|refused|timed out|timeout"):
        df.write.format("streamwire").option("service_url", "pulsar://127.0.0.1:1").option(
            "topic", unique_topic
        ).option("connectionTimeout", "2").option("operationTimeout", "3").mode("append").save()


def test_topics_pattern(spark: Any, apache_broker: Any, official_pulsar: ModuleType) -> None:
    tag = uuid.uuid4().hex[:10]
    t1 = f"persistent://public/default/pat-{tag}-one"
    t2 = f"persistent://public/default/pat-{tag}-two"
    other = f"persistent://public/default/nopat-{tag}"
    seed(official_pulsar, apache_broker.service_url, t1, [b"p1"])
    seed(official_pulsar, apache_broker.service_url, t2, [b"p2", b"p3"])
    seed(official_pulsar, apache_broker.service_url, other, [b"no"])
    df = _load(
        spark, apache_broker.service_url, topicsPattern=f"persistent://public/default/pat-{tag}-.*"
    )
    rows = df.collect()
    assert sorted((r.topic, bytes(r.value)) for r in rows) == [
        (t1, b"p1"),
        (t2, b"p2"),
        (t2, b"p3"),
    ]


def test_user_schema_selects_columns(
    spark: Any, broker: Any, unique_topic: str, official_pulsar: ModuleType
) -> None:
    """A schema given to the read selects (and orders) the columns the source builds; the values
    are those of the full read."""
    values = [f"s{i}".encode() for i in range(300)]
    seed(official_pulsar, broker.service_url, unique_topic, values, partition_key="pk")
    full = {
        bytes(r.value): r for r in _load(spark, broker.service_url, topic=unique_topic).collect()
    }
    df = (
        spark.read.format("streamwire")
        .option("service_url", broker.service_url)
        .option("topic", unique_topic)
        .schema("message_id binary, value binary, key string")
        .load()
    )
    assert df.columns == ["message_id", "value", "key"]
    rows = df.collect()
    assert sorted(bytes(r.value) for r in rows) == sorted(values)
    for r in rows:
        assert bytes(r.message_id) == bytes(full[bytes(r.value)].message_id)
        assert r.key == "pk"
    only = spark.read.format("streamwire").option("service_url", broker.service_url)
    only = only.option("topic", unique_topic).schema("value binary").load()
    assert only.agg(F.sum(F.length("value"))).collect()[0][0] == sum(len(v) for v in values)


def test_user_schema_errors_name_the_columns(spark: Any, lite_broker: Any) -> None:
    def load(schema: str) -> Any:
        return (
            spark.read.format("streamwire")
            .option("service_url", lite_broker.service_url)
            .option("topic", "persistent://public/default/never-read")
            .schema(schema)
            .load()
            .collect()
        )

    with pytest.raises(Exception, match=r"no column 'payload'.*value binary"):
        load("payload binary")
    with pytest.raises(Exception, match="'value' is binary in this source, not string"):
        load("value string")
