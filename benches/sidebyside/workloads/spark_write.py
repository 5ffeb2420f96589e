"""spark_write / spark_produce_arrow: rows/s of a PySpark (local[2]) write of ~100-byte rows to
a fresh topic.

ours:   spark_write: the ``streamwire`` Python Data Source (Arrow batches -> ``send_many``, cached
        producer); spark_produce_arrow: ``df.mapInArrow(streamwire.spark.produce_arrow(...))``
        summed to the delivered count (the executor helper for Spark 3.x and custom pipelines).
theirs: the official client inside ``rdd.foreachPartition`` (the usual PySpark pattern: one
        client + producer per partition, ``send_async`` per row, ``flush`` at the end).
Both generate the same rows from ``spark.range`` in the same session, alternating.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from typing import Any

from ..registry import Context, Unavailable, Workload, import_streamwire, register

ROWS = int(os.environ.get("SPARK_WRITE_ROWS", "200000"))


def _spark(ctx: Context) -> Any:
    spark = ctx.state.get("spark")
    if spark is None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from benches._spark import spark_session

        spark = spark_session(app="bench-spark-write", shuffle_partitions=None)
        ctx.state["spark"] = spark
    return spark


def _rows(spark: Any) -> Any:
    from pyspark.sql import functions as F

    return spark.range(ROWS, numPartitions=2).select(
        F.concat(F.lpad(F.col("id").cast("string"), 12, "0"), F.lit("x" * 88))
        .cast("binary")
        .alias("value")
    )


def _topic() -> str:
    return f"persistent://public/default/bench-spark-{uuid.uuid4().hex[:12]}"


def setup(ctx: Context) -> None:
    _spark(ctx)


def ours(ctx: Context) -> float:
    import_streamwire()
    try:
        import streamwire.spark
    except ImportError as exc:
        raise Unavailable(f"streamwire.spark not importable ({exc})") from None
    spark = _spark(ctx)
    streamwire.spark.register(spark)
    df = _rows(spark)
    t0 = time.perf_counter()
    df.write.format("streamwire").option("service_url", ctx.service_url).option(
        "topic", _topic()
    ).mode("append").save()
    return ROWS / (time.perf_counter() - t0)


def ours_arrow(ctx: Context) -> float:
    import_streamwire()
    try:
        from streamwire.spark import COUNTS_SCHEMA, produce_arrow
    except ImportError as exc:
        raise Unavailable(f"streamwire.spark not importable ({exc})") from None
    from pyspark.sql import functions as F

    spark = _spark(ctx)
    df = _rows(spark)
    t0 = time.perf_counter()
    counts = df.mapInArrow(produce_arrow(ctx.service_url, _topic()), COUNTS_SCHEMA)
    delivered = counts.agg(F.sum("rows")).collect()[0][0]
    dt = time.perf_counter() - t0
    if delivered != ROWS:
        raise RuntimeError(f"produce_arrow reported {delivered} rows delivered, not {ROWS}")
    return ROWS / dt


def theirs(ctx: Context) -> float:
    spark = _spark(ctx)
    url, topic = ctx.service_url, _topic()

    def write_partition(rows: Any) -> None:
        import pulsar

        client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            producer = client.create_producer(
                topic, batching_enabled=True, block_if_queue_full=True
            )
            errors: list[Any] = []

            def done(res: Any, _msg_id: Any) -> None:
                if res != pulsar.Result.Ok:
                    errors.append(res)

            for row in rows:
                producer.send_async(bytes(row.value), done)
            producer.flush()
            producer.close()
            if errors:
                raise RuntimeError(f"{len(errors)} sends failed: {errors[0]}")
        finally:
            client.close()

    df = _rows(spark)
    t0 = time.perf_counter()
    df.rdd.foreachPartition(write_partition)
    return ROWS / (time.perf_counter() - t0)


register(
    Workload(
        name="spark_write",
        description=f"PySpark local[2] write of {ROWS:,} ~100 B rows (DataSource vs official "
        "client in foreachPartition)",
        unit="rows/s",
        higher_is_better=True,
        ours=ours,
        theirs=theirs,
        setup=setup,
        default_iterations=1,
    )
)

register(
    Workload(
        name="spark_produce_arrow",
        description=f"PySpark local[2] write of {ROWS:,} ~100 B rows (mapInArrow(produce_arrow) "
        "vs official client in foreachPartition)",
        unit="rows/s",
        higher_is_better=True,
        ours=ours_arrow,
        theirs=theirs,
        setup=setup,
        default_iterations=1,
    )
)
