"""A task that fails mid-write and is retried: effectively-once with ``producerName`` on a
broker with deduplication on, duplicates without it (which shows the failure really happened
after rows were published).

Runs in a fresh interpreter with ``local[2,4]`` so Spark retries failed tasks (the shared
session fixture does not).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS = 20000


def _run_failing_write(url: str, topic: str, producer_name: str | None) -> None:
    extra = f'.option("producerName", {producer_name!r})' if producer_name else ""
    code = textwrap.dedent(
        f"""
        import os, sys, time
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark import TaskContext
        from pyspark.sql import SparkSession
        from pyspark.sql.functions import udf, col
        spark = (SparkSession.builder.master("local[2,4]")
                 .config("spark.ui.enabled", "false")
                 .config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.driver.host", "127.0.0.1")
                 .config("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
                 .config("spark.python.worker.reuse", "false")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("FATAL")

        @udf("binary")
        def maybe_fail(v):
            ctx = TaskContext.get()
            n = int(v.split(b"-")[1])
            if ctx.attemptNumber() == 0 and ctx.partitionId() == 0 and n == {ROWS * 3 // 4}:
                time.sleep(2)  # let the writer publish what it already has
                raise RuntimeError("injected failure mid-write")
            return v

        df = spark.createDataFrame(
            [(f"row-{{i}}".encode(),) for i in range({ROWS})], "value binary"
        ).repartition(1).select(maybe_fail(col("value")).alias("value"))
        (df.write.format("streamwire").option("service_url", {url!r})
           .option("topic", {topic!r}){extra}.mode("append").save())
        spark.stop()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]


def _read_all(official_pulsar: Any, url: str, topic: str) -> list[bytes]:
    client = official_pulsar.Client(url)
    try:
        reader = client.create_reader(topic, official_pulsar.MessageId.earliest)
        got: list[bytes] = []
        while reader.has_message_available():
            got.append(reader.read_next(5000).data())
        return got
    finally:
        client.close()


def test_retried_task_is_effectively_once_with_dedup(
    apache_broker: Any, official_pulsar: Any
) -> None:
    url = apache_broker.service_url
    # Control: without a producer name the retry re-publishes what attempt 0 already wrote.
    plain = f"persistent://public/default/retry-plain-{uuid.uuid4().hex[:10]}"
    _run_failing_write(url, plain, None)
    plain_rows = _read_all(official_pulsar, url, plain)
    assert len(set(plain_rows)) == ROWS
    assert len(plain_rows) > ROWS, "the injected failure happened before anything was written"

    named = f"persistent://public/default/retry-named-{uuid.uuid4().hex[:10]}"
    _run_failing_write(url, named, f"job-{uuid.uuid4().hex[:8]}")
    rows = _read_all(official_pulsar, url, named)
    dupes = len(rows) - len(set(rows))
    assert len(set(rows)) == ROWS, json.dumps({"distinct": len(set(rows))})
    assert dupes == 0, f"{dupes} duplicates despite deduplication"
