"""Streaming reads: checkpointed offsets survive a restart with no loss and no duplicates."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

from .helpers import available_now, copy_stream, seed


def _run_available_now(
    spark: Any, url: str, topic: str, out: Path, ckpt: Path, **options: str
) -> Any:
    opts = {"service_url": url, "topic": topic, "startingOffsets": "earliest", **options}
    return available_now(spark, opts, out, ckpt)


def test_restart_from_checkpoint_no_loss_no_duplicates(
    spark: Any, broker: Any, unique_topic: str, official_pulsar: ModuleType, tmp_path: Path
) -> None:
    url = broker.service_url
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first = [f"a{i}".encode() for i in range(300)]
    seed(official_pulsar, url, unique_topic, first)
    _run_available_now(spark, url, unique_topic, out, ckpt)
    assert spark.read.parquet(str(out)).count() == 300

    second = [f"b{i}".encode() for i in range(200)]
    seed(official_pulsar, url, unique_topic, second)
    q = _run_available_now(spark, url, unique_topic, out, ckpt)  # restarts from the checkpoint
    got = [r.v for r in spark.read.parquet(str(out)).collect()]
    assert len(got) == 500
    assert sorted(got) == sorted(v.decode() for v in first + second)
    offsets = q.lastProgress["sources"][0]["endOffset"]
    offsets = json.loads(offsets) if isinstance(offsets, str) else offsets
    assert unique_topic in offsets and {"ledger", "entry", "batch"} <= set(offsets[unique_topic])


def test_max_records_per_trigger_makes_several_batches(
    spark: Any, lite_broker: Any, unique_topic: str, official_pulsar: ModuleType, tmp_path: Path
) -> None:
    url = lite_broker.service_url
    client = official_pulsar.Client(
        url, logger=official_pulsar.ConsoleLogger(official_pulsar.LoggerLevel.Error)
    )
    producer = client.create_producer(unique_topic, batching_enabled=False)
    for i in range(60):
        producer.send(f"n{i}".encode())
    client.close()
    q = _run_available_now(
        spark, url, unique_topic, tmp_path / "o", tmp_path / "c", maxRecordsPerTrigger="20"
    )
    got = [r.v for r in spark.read.parquet(str(tmp_path / "o")).collect()]
    assert sorted(got) == sorted(f"n{i}" for i in range(60))
    assert len(q.recentProgress) >= 3
    assert max(p["numInputRows"] for p in q.recentProgress) <= 20


def test_max_bytes_per_trigger_makes_several_batches(
    spark: Any, broker: Any, unique_topic: str, official_pulsar: ModuleType, tmp_path: Path
) -> None:
    url = broker.service_url
    client = official_pulsar.Client(
        url, logger=official_pulsar.ConsoleLogger(official_pulsar.LoggerLevel.Error)
    )
    producer = client.create_producer(unique_topic, batching_enabled=False)
    values = [f"{i:03d}".encode() + b"x" * 97 for i in range(60)]  # 100 B each
    for v in values:
        producer.send(v)
    client.close()
    q = _run_available_now(
        spark, url, unique_topic, tmp_path / "o", tmp_path / "c", maxBytesPerTrigger="2000"
    )
    got = [r.v for r in spark.read.parquet(str(tmp_path / "o")).collect()]
    assert sorted(got) == sorted(v.decode() for v in values)
    sizes = [p["numInputRows"] for p in q.recentProgress]
    assert len(sizes) >= 3, sizes
    assert max(sizes) <= 20, sizes  # 2000 B a trigger at 100 B a message


def test_commit_to_subscription_acknowledges_committed_offsets(
    spark: Any,
    apache_broker: Any,
    apache_admin: Any,
    unique_topic: str,
    official_pulsar: ModuleType,
    tmp_path: Path,
) -> None:
    """Spark commits a micro-batch's end offset when it plans the next one: the subscription
    follows one batch behind, and only when asked to."""
    import time

    url = apache_broker.service_url
    out = tmp_path / "o"
    seed(official_pulsar, url, unique_topic, [f"c{i}".encode() for i in range(120)])
    query = (
        spark.readStream.format("streamwire")
        .option("service_url", url)
        .option("topic", unique_topic)
        .option("startingOffsets", "earliest")
        .option("commitToSubscription", "spark-q")
        .load()
        .selectExpr("cast(value as string) as v")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "c"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )

    def wait_rows(n: int) -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert query.exception() is None, query.exception()
            if out.exists() and any(out.glob("*.parquet")):
                if spark.read.schema("v string").parquet(str(out)).count() >= n:
                    return
            time.sleep(0.5)
        raise AssertionError(f"streaming query did not reach {n} rows")

    try:
        wait_rows(120)
        seed(official_pulsar, url, unique_topic, [f"d{i}".encode() for i in range(10)])
        wait_rows(130)
    finally:
        query.stop()
    assert spark.read.schema("v string").parquet(str(out)).count() == 130
    subs = apache_admin.topic_stats(unique_topic)["subscriptions"]
    assert set(subs) == {"spark-q"}, subs  # planning left no probe subscriptions behind
    assert subs["spark-q"]["msgBacklog"] <= 10, subs  # the first batch (120) was acknowledged


def test_stream_to_stream_copy(
    spark: Any, lite_broker: Any, unique_topic: str, official_pulsar: ModuleType, tmp_path: Path
) -> None:
    url = lite_broker.service_url
    target = unique_topic + "-copy"
    seed(
        official_pulsar,
        url,
        unique_topic,
        [f"s{i}".encode() for i in range(250)],
        partition_key="k",
    )
    source = {"service_url": url, "topic": unique_topic, "startingOffsets": "earliest"}
    sink = {"service_url": url, "topic": target}
    copy_stream(spark, source, sink, tmp_path / "c", ("value", "key", "properties"))
    rows = (
        spark.read.format("streamwire").option("service_url", url).option("topic", target).load()
    ).collect()
    assert sorted(bytes(r.value) for r in rows) == sorted(f"s{i}".encode() for i in range(250))
    assert {r.key for r in rows} == {"k"}
