"""Executor helpers (produce_arrow, produce_partition, read_ranges_arrow), cache, fork, pickling."""

from __future__ import annotations

import os
import pickle
from types import ModuleType
from typing import Any

import pytest
import streamwire
import streamwire.spark as sws
from pyspark.sql import functions as F
from streamwire.spark import cache

from .helpers import drain


def test_produce_arrow_then_read_ranges(spark: Any, broker: Any, unique_topic: str) -> None:
    cfg = sws.ClientConfig(broker.service_url)
    df = spark.range(5_000, numPartitions=2).select(
        F.col("id").cast("string").alias("value")  # string values are accepted as-is
    )
    counts = df.mapInArrow(sws.produce_arrow(cfg, unique_topic), sws.COUNTS_SCHEMA)
    total = counts.agg(F.sum("rows").alias("n")).collect()[0].n
    assert total == 5_000

    ranges = sws.plan_ranges(cfg, unique_topic)
    assert len(ranges) == 1
    rdf = spark.createDataFrame(sws.range_rows(ranges), "range string")
    got = rdf.mapInArrow(sws.read_ranges_arrow(cfg), sws.spark_schema_ddl())
    values = sorted(int(r.value) for r in got.select("value").collect())
    assert values == list(range(5_000))


def test_produce_partition_for_rdds(
    spark: Any, lite_broker: Any, unique_topic: str, official_pulsar: ModuleType
) -> None:
    cfg = sws.ClientConfig(lite_broker.service_url)
    rdd = spark.sparkContext.parallelize([f"r{i}" for i in range(1000)], 2)
    sent = rdd.mapPartitions(sws.produce_partition(cfg, unique_topic)).sum()
    assert sent == 1000
    rows = spark.sparkContext.parallelize([{"value": b"x", "k": "kk"}] * 10, 2)
    rows.foreachPartition(sws.produce_partition(cfg, unique_topic, key="k"))
    msgs = drain(official_pulsar, lite_broker.service_url, unique_topic)
    assert len(msgs) == 1010
    assert sum(1 for m in msgs if m.partition_key() == "kk") == 10


def _worker_stats(url: str) -> Any:
    def run(rows: Any) -> Any:
        for _ in rows:  # a worker that leaves input unread is not reused by Spark
            pass
        client = sws.ClientConfig(url).client()
        client.lookup().partitions("persistent://public/default/whatever")
        s = cache.stats()
        yield (os.getpid(), s.clients_created, s.client_hits)

    return run


def test_worker_reuse_reuses_the_cached_client(spark: Any, lite_broker: Any) -> None:
    import time

    sc = spark.sparkContext
    reports: list[tuple[int, int, int]] = []
    for _ in range(6):
        job = sc.parallelize([0, 1], 2).mapPartitions(_worker_stats(lite_broker.service_url))
        reports += job.collect()
        time.sleep(0.3)  # let the workers go back to Spark's idle pool
    # never more than one client per worker process, and reused workers hit the cache
    assert all(created == 1 for _, created, _ in reports), reports
    pids = [pid for pid, _, _ in reports]
    assert len(set(pids)) < len(pids), f"Spark did not reuse any Python worker: {reports}"
    assert any(hits >= 1 for _, _, hits in reports), f"no worker reused its client: {reports}"


def _fork_check(url: str) -> Any:
    def run(rows: Any) -> Any:
        for _ in rows:
            pass
        cfg = sws.ClientConfig(url)
        parent_client = cfg.client()
        parent_client.lookup().partitions("persistent://public/default/p")
        read_fd, write_fd = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the forked grandchild
            code = 0
            try:
                fresh = cfg.client()
                if fresh is parent_client:
                    code = 2
                else:
                    fresh.lookup().partitions("persistent://public/default/p")
                    try:
                        parent_client.lookup().partitions("persistent://public/default/p")
                        code = 3  # the parent's handle must refuse
                    except streamwire.ForkedProcessError:
                        pass
                    if cache.stats().clients_created != 1:
                        code = 4
            except BaseException:
                code = 5
            os.write(write_fd, bytes([code]))
            os._exit(0)
        os.close(write_fd)
        code = os.read(read_fd, 1)
        os.waitpid(child, 0)
        # the parent's cache is untouched by the child
        yield (code[0] if code else 99, cfg.client() is parent_client)

    return run


def test_fork_in_a_worker_gets_a_fresh_client(spark: Any, lite_broker: Any) -> None:
    result = (
        spark.sparkContext.parallelize([0], 1)
        .mapPartitions(_fork_check(lite_broker.service_url))
        .collect()
    )
    assert result == [(0, True)]


def test_live_client_in_a_closure_fails_with_the_pattern(spark: Any, lite_broker: Any) -> None:
    client = streamwire.Client(lite_broker.service_url)
    try:
        with pytest.raises(Exception, match="ClientConfig") as info:
            spark.sparkContext.parallelize([1], 1).map(lambda x: (x, client)).collect()
        assert "create the client inside the worker" in str(info.value)
        with pytest.raises(TypeError, match="ClientConfig"):
            sws.produce_arrow(client, "t")  # type: ignore[arg-type]
    finally:
        client.close()


def test_config_pickles_and_hides_the_token() -> None:
    cfg = sws.ClientConfig("pulsar://127.0.0.1:6650", auth_token="secret")
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert "secret" not in repr(cfg)


def test_importing_starts_nothing() -> None:
    import subprocess
    import sys

    code = (
        "import threading, sys, streamwire, streamwire.spark\n"
        "assert 'pyspark' not in sys.modules, 'streamwire.spark imported pyspark'\n"
        "assert threading.active_count() == 1\n"
        "assert not streamwire._native._runtime_started()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_payload_bytes_without_compute_matches_per_value_lengths() -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    from streamwire.spark.writing import _payload_bytes

    cases = [
        pa.array([b"ab", None, b"cde"]),
        pa.array(["ab", "", "c\u00e9"]),
        pa.array([b"ab", b"c"], pa.large_binary()),
        pa.array([b"ab", b"xyz", b"c"]).slice(1),
        pa.array([b"ab", b"xyz", b"c"]).slice(1, 1),
        pa.chunked_array([[b"ab"], [b"cdef"]]),
        pa.array([], pa.binary()),
    ]
    for values in cases:
        expected = int(pc.sum(pc.binary_length(values)).as_py() or 0)
        assert _payload_bytes(values) == expected, values


def test_planner_imports_stay_light() -> None:
    """The Data Source module (imported by every Spark planner worker) loads neither the read
    and write paths nor pyarrow; they load when a reader or writer runs."""
    import subprocess
    import sys

    code = (
        "import sys, streamwire.spark.datasource as d\n"
        "heavy = [m for m in ('streamwire.spark.reading', 'streamwire.spark.writing',"
        " 'streamwire.spark.executor', 'streamwire.spark.tank_source',"
        " 'streamwire.spark.pravega_source', 'streamwire.spark._log_source',"
        " 'streamwire.spark.cache', 'pyarrow')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
        # valueSchema=none: no registry look-up (auto asks the broker; see test_schema_spark)
        "print(d.StreamwireDataSource({'service_url': 'pulsar://x', 'topic': 't',"
        " 'valueSchema': 'none'}).schema())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == ""
    assert out[1].startswith("`value` binary, `key` string")


def test_phase_timers_write_json_lines_only_when_enabled(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from streamwire.spark import _timing

    path = tmp_path / "timing.jsonl"
    monkeypatch.delenv("STREAMWIRE_SPARK_TIMING", raising=False)
    with _timing.phase("off"):
        pass
    assert not path.exists()
    monkeypatch.setenv("STREAMWIRE_SPARK_TIMING", str(path))
    with _timing.phase("on"):
        pass
    _timing.mark_import("import x")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["phase"] for r in records] == ["on", "import x"]
    assert records[0]["pid"] == os.getpid()
    assert records[0]["seconds"] >= 0
    assert records[0]["age"] is None or records[0]["age"] >= records[0]["seconds"]
