"""``format("streamwire")`` and the executor helpers on a Spark standalone cluster: tasks run in
two executor JVMs of their own (checked), against pulsar-lite, the suite's TANK broker and the
multi-broker Apache cluster through its proxy. Every round trip is checked by count and an
order-independent checksum computed in Spark."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable

import streamwire.spark as sws
from pyspark.sql import functions as F
from streamwire import tank

from tests.cluster.helpers import all_running, read_all, spread_topic
from tests.peers.apache_cluster import ApacheCluster
from tests.peers.spark_cluster import SparkStandaloneCluster
from tests.peers.util import listening_sockets
from tests.spark.helpers import available_now, copy_stream


def _whereami() -> Callable[[Any], Any]:
    """A mapPartitions function reporting, per task: the executor id and PID of the JVM that
    runs it (found by walking up /proc from the Python worker) and the Python worker's PID."""

    def run(rows: Any) -> Any:
        import os

        for _ in rows:
            pass
        pid = os.getpid()
        while pid > 1:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            if b"--executor-id" in args:
                yield (args[args.index(b"--executor-id") + 1].decode(), pid, os.getpid())
                return
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        yield (None, None, os.getpid())

    return run


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_tasks_run_in_two_executor_jvms(spark: Any, spark_cluster: SparkStandaloneCluster) -> None:
    import os

    reports = spark.sparkContext.parallelize(range(8), 8).mapPartitions(_whereami()).collect()
    executors = {(ex, jvm) for ex, jvm, _ in reports}
    assert None not in {ex for ex, _ in executors}, reports
    assert len(executors) == 2, f"tasks ran in {executors}, not in two executors"
    driver_jvm = spark.sparkContext._gateway.proc.pid
    workers = {p.pid for p in spark_cluster.worker_procs}
    for _, jvm in executors:
        assert jvm not in (driver_jvm, os.getpid())
        assert _ppid(jvm) in workers, "an executor JVM that no worker of the cluster started"
    assert os.getpid() not in {py for _, _, py in reports}
    assert set(spark_cluster.executor_pids()) == {jvm for _, jvm in executors}


def test_every_cluster_process_listens_on_loopback_only(
    spark: Any, spark_cluster: SparkStandaloneCluster
) -> None:
    pids = [*spark_cluster.pids, *spark_cluster.executor_pids()]
    assert len(pids) == 5  # master, two workers, two executors
    for pid in pids:
        socks = listening_sockets(pid)
        assert socks, f"pid {pid} listens on nothing"
        assert all(addr in ("127.0.0.1", "::ffff:127.0.0.1") for addr, _ in socks), (pid, socks)


def _values(spark: Any, n: int) -> Any:
    """``n`` distinct ~100-byte values over two Spark partitions."""
    return spark.range(n, numPartitions=2).select(
        F.concat(
            F.lpad(F.col("id").cast("string"), 12, "0"),
            F.substring(F.repeat(F.sha2(F.col("id").cast("string"), 256), 2), 1, 88),
        )
        .cast("binary")
        .alias("value")
    )


def _checksum(df: Any, column: str = "value") -> tuple[int, int, int, int]:
    """(rows, distinct rows, sum of CRC32, sum of lengths) of ``column``."""
    row = df.agg(
        F.count(F.lit(1)).alias("n"),
        F.countDistinct(F.col(column)).alias("d"),
        F.sum(F.crc32(F.col(column).cast("binary"))).alias("crc"),
        F.sum(F.length(F.col(column))).alias("bytes"),
    ).collect()[0]
    return int(row.n), int(row.d), int(row.crc or 0), int(row.bytes or 0)


def _topic() -> str:
    return f"persistent://public/default/cluster-{uuid.uuid4().hex[:12]}"


def _read(spark: Any, url: str, topic: str, **options: str) -> Any:
    reader = spark.read.format("streamwire").option("service_url", url).option("topic", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def test_batch_write_then_read_back(spark: Any, lite_broker: Any) -> None:
    url, topic = lite_broker.service_url, _topic()
    data = _values(spark, 20_000)
    expected = _checksum(data)
    data.write.format("streamwire").option("service_url", url).option("topic", topic).mode(
        "append"
    ).save()
    # minPartitions=2: the read is split by entries, so both executors read.
    back = _read(spark, url, topic, minPartitions="2")
    assert back.rdd.getNumPartitions() == 2
    assert _checksum(back) == expected
    assert expected[0] == expected[1] == 20_000


def test_executors_write_and_read_a_topic_on_both_brokers_through_the_proxy(
    spark: Any, apache_cluster: ApacheCluster, tmp_path: Path
) -> None:
    """Both clusters together: the executors (two JVMs) write a partitioned topic whose
    partitions live on both Pulsar brokers, reaching them only through the Pulsar proxy, then
    read it back as a batch and as a stream; each partition is checked on the brokers."""
    cluster = all_running(apache_cluster)
    topic, owners = spread_topic(cluster, 4)
    url = cluster.proxy_url
    data = spark.range(8_000).select(
        F.format_string("%012d", F.col("id")).cast("binary").alias("value"),
        F.format_string("k%02d", F.col("id") % 16).alias("key"),
    )
    expected = _checksum(data.select("value"))
    data.repartition(2).write.format("streamwire").option("service_url", url).option(
        "topic", topic
    ).mode("append").save()
    per_partition = [len(read_all(cluster.service_url, f"{topic}-partition-{i}")) for i in range(4)]
    assert all(per_partition) and sum(per_partition) == 8_000, (per_partition, owners)
    assert _checksum(_read(spark, url, topic).select("value")) == expected
    opts = {"service_url": url, "topic": topic, "startingOffsets": "earliest"}
    out = tmp_path / "out"
    available_now(spark, opts, out, tmp_path / "ckpt", ("value",), timeout=180)
    assert _checksum(spark.read.parquet(str(out))) == expected


def test_streaming_read_to_files(spark: Any, lite_broker: Any, tmp_path: Path) -> None:
    url, topic = lite_broker.service_url, _topic()
    first, second = (
        _values(spark, 3_000),
        _values(spark, 5_000).where(F.col("value") >= "000000003000"),
    )
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def run() -> Any:
        opts = {"service_url": url, "topic": topic, "startingOffsets": "earliest"}
        return available_now(spark, opts, out, ckpt, ("value",), timeout=180)

    first.write.format("streamwire").option("service_url", url).option("topic", topic).mode(
        "append"
    ).save()
    run()
    assert _checksum(spark.read.parquet(str(out))) == _checksum(first)
    second.write.format("streamwire").option("service_url", url).option("topic", topic).mode(
        "append"
    ).save()
    run()  # resumes from the checkpoint: only the new 2,000
    assert _checksum(spark.read.parquet(str(out))) == _checksum(_values(spark, 5_000))


def test_streaming_write_from_a_stream(spark: Any, lite_broker: Any, tmp_path: Path) -> None:
    url, source, sink = lite_broker.service_url, _topic(), _topic()
    data = _values(spark, 4_000)
    data.write.format("streamwire").option("service_url", url).option("topic", source).mode(
        "append"
    ).save()
    options = {"service_url": url, "topic": source, "startingOffsets": "earliest"}
    to = {"service_url": url, "topic": sink}
    query = copy_stream(spark, options, to, tmp_path / "ckpt", ("value",), timeout=180)
    assert sum(p["numInputRows"] for p in query.recentProgress) == 4_000
    assert _checksum(_read(spark, url, sink)) == _checksum(data)


def test_executor_helpers_produce_arrow_and_read_ranges(spark: Any, lite_broker: Any) -> None:
    cfg = sws.ClientConfig(lite_broker.service_url)
    topic = _topic()
    data = _values(spark, 10_000)
    counts = data.mapInArrow(sws.produce_arrow(cfg, topic), sws.COUNTS_SCHEMA)
    assert counts.agg(F.sum("rows")).collect()[0][0] == 10_000

    ranges = sws.plan_ranges(cfg, topic, min_partitions=2)
    assert len(ranges) == 2
    rdf = spark.createDataFrame(sws.range_rows(ranges), "range string").repartition(2)
    got = rdf.mapInArrow(sws.read_ranges_arrow(cfg), sws.spark_schema_ddl())
    assert _checksum(got) == _checksum(data)


def test_tank_batch_round_trip(spark: Any, tank_broker: Any) -> None:
    url = tank_broker.url
    topic = "cl" + uuid.uuid4().hex[:16]
    with tank.Client(url) as c:
        c.create_topic(topic, partitions=2)
    data = _values(spark, 6_000).withColumn("key", F.substring("value", 11, 2))
    data.write.format("streamwire").option("service_url", url).option("topic", topic).mode(
        "append"
    ).save()
    back = spark.read.format("streamwire").option("service_url", url).option("topic", topic).load()
    assert _checksum(back) == _checksum(data)
    # A key's rows share a TANK partition; each partition's seqs run 1..n with no gap.
    rows = back.select("key", "partition", "seq").collect()
    assert {r.partition for r in rows} == {0, 1}
    for k in {bytes(r.key) for r in rows}:
        assert len({r.partition for r in rows if bytes(r.key) == k}) == 1
    for p in (0, 1):
        seqs = sorted(r.seq for r in rows if r.partition == p)
        assert seqs == list(range(1, len(seqs) + 1))


def test_the_workers_check_reports_the_executors_interpreter(spark: Any) -> None:
    import sys

    import streamwire

    report = sws.check_workers(spark)
    assert report is not None
    assert report.python == sys.executable  # PYSPARK_PYTHON as the session's driver set it
    assert report.streamwire_version == streamwire.__version__
    assert report.python_version == sys.version.split()[0]
