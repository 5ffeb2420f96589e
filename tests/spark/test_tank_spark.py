"""``format("streamwire")`` on TANK (``service_url`` = ``tank://...``), against the suite's TANK
broker (real or double): batch write and read back, offsets, column selection, and streaming
reads restarted from a checkpoint with no gap and no duplicate."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

from streamwire import tank

from tests.spark.helpers import available_now, copy_stream


def fresh(url: str, partitions: int) -> str:
    name = "sp" + uuid.uuid4().hex[:16]
    with tank.Client(url) as c:
        c.create_topic(name, partitions=partitions)
    return name


def produce(url: str, topic: str, values: list[bytes], partitions: int) -> None:
    with tank.Client(url) as c, c.create_producer(topic) as p:
        for part in range(partitions):
            p.send_many(values[part::partitions], partition=part)


def test_batch_write_then_read(spark: Any, tank_broker: Any) -> None:
    url = tank_broker.url
    topic = fresh(url, 2)
    t0 = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    rows = [(f"v{i}".encode(), f"k{i % 7}".encode(), t0) for i in range(1000)]
    df = spark.createDataFrame(rows, "value binary, key binary, timestamp timestamp")
    df.write.format("streamwire").mode("append").option("service_url", url).option(
        "topic", topic
    ).save()
    back = spark.read.format("streamwire").option("service_url", url).option("topic", topic).load()
    assert back.columns == ["value", "key", "timestamp", "topic", "partition", "seq"]
    got = back.collect()
    assert sorted(bytes(r.value) for r in got) == sorted(r[0] for r in rows)
    assert {r.timestamp.astimezone(dt.timezone.utc) for r in got} == {t0}
    # A key's rows share a partition; seqs per partition are 1..n with no gap.
    for k in {bytes(r.key) for r in got}:
        assert len({r.partition for r in got if bytes(r.key) == k}) == 1
    for p in (0, 1):
        seqs = sorted(r.seq for r in got if r.partition == p)
        assert seqs == list(range(1, len(seqs) + 1))


def test_offsets_and_column_selection(spark: Any, tank_broker: Any) -> None:
    url = tank_broker.url
    topic = fresh(url, 1)
    produce(url, topic, [b"%d" % i for i in range(100)], 1)
    df = (
        spark.read.format("streamwire")
        .schema("value binary, seq bigint")
        .option("service_url", url)
        .option("topic", topic)
        .option("startingOffsets", json.dumps({topic: {"0": 11}}))
        .option("endingOffsets", json.dumps({topic: {"0": 21}}))
        .load()
    )
    got = sorted((r.seq, bytes(r.value)) for r in df.collect())
    assert got == [(s, b"%d" % (s - 1)) for s in range(11, 21)]


def _stream(spark: Any, url: str, topic: str, out: Path, ckpt: Path, **options: str) -> Any:
    opts = {"service_url": url, "topic": topic, "startingOffsets": "earliest", **options}
    return available_now(spark, opts, out, ckpt, ("cast(value as string) as v", "partition", "seq"))


def test_streaming_restarts_from_the_checkpoint(
    spark: Any, tank_broker: Any, tmp_path: Path
) -> None:
    url = tank_broker.url
    topic = fresh(url, 2)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    produce(url, topic, [b"a%d" % i for i in range(300)], 2)
    q = _stream(spark, url, topic, out, ckpt, maxRecordsPerTrigger="100")
    assert len(q.recentProgress) >= 3
    assert max(p["numInputRows"] for p in q.recentProgress) <= 100
    produce(url, topic, [b"b%d" % i for i in range(200)], 2)
    _stream(spark, url, topic, out, ckpt)
    rows = spark.read.parquet(str(out)).collect()
    assert len(rows) == 500
    for p in (0, 1):
        assert sorted(r.seq for r in rows if r.partition == p) == list(range(1, 251))
    assert {r.v for r in rows} == {f"a{i}" for i in range(300)} | {f"b{i}" for i in range(200)}


def test_streaming_write_copies_a_topic_and_resumes(
    spark: Any, tank_broker: Any, tmp_path: Path
) -> None:
    """``writeStream.format("streamwire")`` to TANK: a stream read from one topic is written
    to another, micro-batch by micro-batch; a second run resumes from the checkpoint and
    writes only what was added (every event once)."""
    url = tank_broker.url
    source, sink = fresh(url, 2), fresh(url, 1)
    opts = {"service_url": url, "topic": source, "startingOffsets": "earliest"}
    to = {"service_url": url, "topic": sink}
    produce(url, source, [b"a%d" % i for i in range(300)], 2)
    q = copy_stream(
        spark, {**opts, "maxRecordsPerTrigger": "100"}, to, tmp_path / "ckpt", ("value", "key")
    )
    assert sum(p["numInputRows"] for p in q.recentProgress) == 300
    produce(url, source, [b"b%d" % i for i in range(200)], 2)
    copy_stream(spark, opts, to, tmp_path / "ckpt", ("value", "key"))
    back = spark.read.format("streamwire").option("service_url", url).option("topic", sink).load()
    got = sorted(bytes(r.value) for r in back.collect())
    assert got == sorted([b"a%d" % i for i in range(300)] + [b"b%d" % i for i in range(200)])
