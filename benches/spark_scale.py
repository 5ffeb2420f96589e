#!/usr/bin/env python
"""The Spark Data Source on a long backlog: a topic over many ledgers, drained with a cap.

Starts an Apache Pulsar standalone with small ledgers (``managedLedgerMaxEntriesPerLedger``,
infinite retention) on loopback, produces ``--messages`` unbatched ~100 B messages (the last 1%
after a recorded time), then in one local[2] Spark session:

1. drains the topic with ``Trigger.AvailableNow`` and ``maxRecordsPerTrigger`` (with
   ``admin.url``: exact caps; and without it: caps by peeking), into a ``noop`` sink: rows/s,
   the number of micro-batches, the largest and the smallest;
2. reads the last 1% by ``startingTime`` and the whole topic with a batch ``count()``: wall
   time, and the messages the broker dispatched for each (topic stats ``msgOutCounter``).

    .venv/bin/python benches/spark_scale.py --messages 1000000 --cap 100000
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benches._spark import spark_session
from tests.peers.admin import topic_path
from tests.peers.apache import ApachePulsar


def produce(url: str, topic: str, n: int, start: int) -> None:
    import streamwire

    with streamwire.Client(url) as client:
        # A long backlog on a loaded machine: a slow receipt is waited for, not failed.
        p = client.create_producer(topic, batching=False, send_timeout=600)
        for i in range(start, start + n, 20_000):
            p.send_many(
                [f"m{j:09d}".encode() + b"x" * 90 for j in range(i, min(i + 20_000, start + n))]
            )
        p.flush()
        p.close()


def drain(spark: Any, topic: str, url: str, cap: int, admin_url: str | None) -> dict[str, Any]:
    reader = (
        spark.readStream.format("streamwire")
        .option("service_url", url)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerTrigger", str(cap))
    )
    if admin_url:
        reader = reader.option("admin.url", admin_url)
    ckpt = tempfile.mkdtemp(prefix="sw-scale-ckpt-")
    t0 = time.perf_counter()
    query = (
        reader.load()
        .select("value")
        .writeStream.format("noop")
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.perf_counter() - t0
    shutil.rmtree(ckpt, ignore_errors=True)
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    sizes = [int(p["numInputRows"]) for p in progress]
    # Where a micro-batch's time goes (Spark's own phases, medians over the batches, ms):
    # latestOffset and queryPlanning are the source's planning, addBatch the reading.
    phases = {
        k: int(statistics.median(int(p["durationMs"].get(k, 0)) for p in progress))
        for k in (
            "latestOffset",
            "queryPlanning",
            "addBatch",
            "walCommit",
            "commitOffsets",
            "triggerExecution",
        )
    }
    return {
        "rows": sum(sizes),
        "seconds": round(seconds, 1),
        "rows/s": int(sum(sizes) / seconds),
        "batches": len(sizes),
        "largest": max(sizes),
        "smallest": min(sizes),
        "median ms per batch": phases,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--cap", type=int, default=10_000)
    ap.add_argument("--entries-per-ledger", type=int, default=5000)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    broker = ApachePulsar(
        extra_conf={
            "managedLedgerMaxEntriesPerLedger": str(args.entries_per_ledger),
            "managedLedgerMinLedgerRolloverTimeMinutes": "0",
            "defaultRetentionTimeInMinutes": "-1",
            "defaultRetentionSizeInMB": "-1",
        }
    )
    with broker:
        admin = broker.admin()
        topic = f"persistent://public/default/scale-{uuid.uuid4().hex[:8]}"
        head = args.messages - args.messages // 100
        t0 = time.perf_counter()
        produce(broker.service_url, topic, head, 0)
        time.sleep(0.05)
        tail_time = int(time.time() * 1000)
        time.sleep(0.05)
        produce(broker.service_url, topic, args.messages - head, head)
        stats = admin.request("GET", f"{topic_path(topic)}/internalStats")
        ledgers = len(stats["ledgers"])
        print(f"produced {args.messages} in {time.perf_counter() - t0:.1f} s; {ledgers} ledgers")

        import streamwire.spark

        spark = spark_session(conf={"spark.sql.streaming.numRecentProgressUpdates": "100000"})
        streamwire.spark.register(spark)
        try:
            url = broker.service_url
            print("drain, admin.url:   ", drain(spark, topic, url, args.cap, broker.admin_url))
            print("drain, peeking:     ", drain(spark, topic, url, args.cap, None))

            def timed_count(**options: str) -> tuple[int, float, int]:
                before = int(admin.topic_stats(topic)["msgOutCounter"])
                reader = spark.read.format("streamwire").option("service_url", url)
                for k, v in options.items():
                    reader = reader.option(k, v)
                t = time.perf_counter()
                n = reader.option("topic", topic).schema("value binary").load().count()
                seconds = time.perf_counter() - t
                return n, seconds, int(admin.topic_stats(topic)["msgOutCounter"]) - before

            n, s, out = timed_count(startingTime=str(tail_time))
            print(f"last 1% by startingTime: {n} rows, {s:.2f} s, {out} messages dispatched")
            n, s, out = timed_count()
            print(f"full scan:               {n} rows, {s:.2f} s, {out} messages dispatched")
        finally:
            spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
