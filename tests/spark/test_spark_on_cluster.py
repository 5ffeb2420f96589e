"""The Data Source on the multi-broker cluster: a partitioned topic whose partitions live on
both brokers, reached through the Pulsar proxy, an HTTP service URL and a named listener, a
streaming query that goes on across a SIGKILL of the broker owning its topic, and a running
query whose Pulsar sink's topic owner is killed under it.

The cluster (tests/peers/apache_cluster.py: ZooKeeper, a bookie, two brokers advertising an
``internal`` and an ``external`` listener, a proxy) is started once per test run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import streamwire

from tests.cluster.helpers import all_running, read_all, spread_topic, topic_owned_by
from tests.peers.apache_cluster import ApacheCluster

pytestmark = pytest.mark.cluster

PARTITIONS = 4


@pytest.fixture
def cluster(apache_cluster: ApacheCluster) -> ApacheCluster:
    return all_running(apache_cluster)


def _rows(spark: Any, n: int) -> Any:
    from pyspark.sql import functions as F

    return spark.range(n).select(
        F.format_string("v%05d", F.col("id")).cast("binary").alias("value"),
        F.format_string("k%02d", F.col("id") % 16).alias("key"),
    )


def _load(spark: Any, url: str, topic: str, **options: str) -> list[bytes]:
    reader = spark.read.format("streamwire").option("service_url", url).option("topic", topic)
    for k, v in options.items():
        reader = reader.option(k, v)
    return sorted(bytes(r.value) for r in reader.load().select("value").collect())


def test_partitions_on_both_brokers_through_the_proxy_and_http(
    spark: Any, cluster: ApacheCluster
) -> None:
    topic, owners = spread_topic(cluster, PARTITIONS)
    n = 4_000
    _rows(spark, n).repartition(2).write.format("streamwire").option(
        "service_url", cluster.proxy_url
    ).option("topic", topic).mode("append").save()
    want = sorted(f"v{i:05d}".encode() for i in range(n))
    # Every partition got messages (key-hash routing over 16 keys), on both brokers.
    per_partition = [len(read_all(cluster.service_url, f"{topic}-partition-{i}")) for i in range(4)]
    assert all(per_partition) and sum(per_partition) == n, (per_partition, owners)
    assert _load(spark, cluster.proxy_url, topic) == want
    # Lookups as REST calls (307 to the owner followed), data from each partition's owner.
    assert _load(spark, cluster.web_url, topic) == want


def test_listener_name_reaches_the_executors(spark: Any, cluster: ApacheCluster) -> None:
    topic = topic_owned_by(cluster, 1, "spark-listener")
    entry = cluster.brokers[0].external_url
    _rows(spark, 500).write.format("streamwire").option("service_url", entry).option(
        "topic", topic
    ).option("listenerName", "internal").mode("append").save()
    want = sorted(f"v{i:05d}".encode() for i in range(500))
    assert _load(spark, entry, topic, listenerName="external") == want
    # A name no broker advertises fails the job with the engine's ConfigError, so the option
    # did reach the executors' clients.
    with pytest.raises(Exception, match='no advertised listener named "bogus"'):
        _load(spark, entry, topic, listenerName="bogus")


def test_streaming_read_goes_on_after_the_owner_is_killed(
    spark: Any, cluster: ApacheCluster, tmp_path: Path
) -> None:
    """Micro-batches before and after a SIGKILL of the topic's owner: the restarted query takes
    the topic from the surviving broker and delivers every message exactly once."""
    topic = topic_owned_by(cluster, 1, "spark-kill")
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"

    def produce(prefix: str, n: int) -> None:
        with streamwire.Client(cluster.proxy_url, operation_timeout=60) as client:
            with client.create_producer(topic, send_timeout=120) as producer:
                producer.send_many([f"{prefix}{i:04d}".encode() for i in range(n)])

    def run() -> Any:
        query = (
            spark.readStream.format("streamwire")
            .option("service_url", cluster.proxy_url)
            .option("topic", topic)
            .option("startingOffsets", "earliest")
            .option("maxRecordsPerTrigger", "400")
            .load()
            .selectExpr("cast(value as string) as v")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(ckpt))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(180)
        assert query.exception() is None, query.exception()
        return query

    produce("a", 1_000)
    run()
    cluster.kill_broker(1)
    try:
        # Written while the owner is dead: the producer waits for the takeover.
        produce("b", 1_000)
        run()
    finally:
        cluster.restart_broker(1)
    got = [r.v for r in spark.read.parquet(str(out)).collect()]
    want = [f"a{i:04d}" for i in range(1_000)] + [f"b{i:04d}" for i in range(1_000)]
    assert len(got) == len(want)
    assert sorted(got) == sorted(want)


def test_a_running_query_with_the_pulsar_sink_goes_on_through_a_kill_of_the_sinks_owner(
    spark: Any, cluster: ApacheCluster, tmp_path: Path
) -> None:
    """A query that is never stopped: a Pulsar source (owned by broker 0) copied by the Pulsar
    sink into a topic owned by broker 1, which is SIGKILLed while the query runs and rows keep
    coming. The sink's producers wait for the takeover (their sends are not failed in the
    meantime), the query goes on without a restart, and every source row reaches the output
    at least once (the sink's stated guarantee; the brokers deduplicate by producer name and
    sequence id, so none is expected twice either, but only loss fails the test)."""
    import time

    source = topic_owned_by(cluster, 0, "sink-kill-in")
    sink = topic_owned_by(cluster, 1, "sink-kill-out")

    def produce(prefix: str, n: int) -> None:
        with streamwire.Client(cluster.proxy_url, operation_timeout=60) as client:
            with client.create_producer(source, send_timeout=120) as producer:
                producer.send_many([f"{prefix}{i:04d}".encode() for i in range(n)])

    def written() -> int:
        return int(sum((p.get("numInputRows") or 0) for p in query.recentProgress))

    def wait_for(rows: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while written() < rows:
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, f"{written()} of {rows} rows after {seconds} s"
            time.sleep(0.5)

    produce("a", 1_000)
    query = (
        spark.readStream.format("streamwire")
        .option("service_url", cluster.proxy_url)
        .option("topic", source)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerTrigger", "250")
        .load()
        .select("value")
        .writeStream.format("streamwire")
        .option("service_url", cluster.proxy_url)
        .option("topic", sink)
        .option("operationTimeout", "60000")
        .option("sendTimeoutMs", "120000")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        wait_for(500, 120)
        cluster.kill_broker(1)
        try:
            produce("b", 1_000)
            wait_for(2_000, 180)
            assert query.isActive, "the query stopped"
        finally:
            cluster.restart_broker(1)
    finally:
        query.stop()
    got = read_all(cluster.proxy_url, sink)
    want = {f"a{i:04d}".encode() for i in range(1_000)} | {
        f"b{i:04d}".encode() for i in range(1_000)
    }
    assert want <= set(got), f"{len(want - set(got))} rows lost"
    assert len(got) >= len(want)
