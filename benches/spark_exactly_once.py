#!/usr/bin/env python
"""What exactly-once costs a Spark streaming write to Pulsar: the same stream copy with
``deliveryGuarantee`` ``at_least_once`` and ``exactly_once``, and — the reference — with the
official client (``pulsar-client``) writing each micro-batch from ``foreachBatch`` (a producer
per partition, ``send_async`` then ``flush``: at-least-once), in turn, in one run.

Starts an Apache Pulsar standalone (transactions on) on loopback, produces ``--messages``
~100 B messages to a source topic, then in one local[2] Spark session copies the topic to a new
target topic with ``Trigger.AvailableNow`` and ``maxRecordsPerTrigger=--cap`` (so several
micro-batches, each committed), ``--rounds`` times per mode, alternating. Prints rows/s per
round and the medians, and checks every copy holds each row once.

    .venv/bin/python benches/spark_exactly_once.py --messages 200000 --cap 50000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benches._spark import spark_session
from tests.peers.apache import ApachePulsar


def produce(url: str, topic: str, n: int) -> None:
    import streamwire

    with streamwire.Client(url) as client, client.create_producer(topic) as p:
        for i in range(0, n, 20_000):
            p.send_many([f"m{j:09d}".encode() + b"x" * 90 for j in range(i, min(i + 20_000, n))])
        p.flush()


def count(url: str, topic: str) -> tuple[int, int]:
    """(messages, distinct values) visible in ``topic``."""
    import streamwire

    seen: set[bytes] = set()
    total = 0
    with streamwire.Client(url) as c, c.create_reader(topic, "earliest") as r:
        while r.has_message_available():
            for m in r.read_many(10_000, timeout=5):
                total += 1
                seen.add(m.data())
    return total, len(seen)


OFFICIAL = "official_foreachBatch"


def official_batch_writer(url: str, target: str) -> Any:
    """What a user of the official client writes: each micro-batch's partitions sent by a
    producer of their own from ``foreachBatch``."""

    def write_partition(rows: Any) -> None:
        import pulsar

        client = pulsar.Client(url)
        try:
            producer = client.create_producer(
                target, block_if_queue_full=True, batching_max_publish_delay_ms=5
            )
            for row in rows:
                producer.send_async(bytes(row.value), lambda _res, _mid: None)
            producer.flush()
        finally:
            client.close()

    def write_batch(df: Any, _batch_id: int) -> None:
        df.foreachPartition(write_partition)

    return write_batch


def copy(spark: Any, url: str, source: str, target: str, cap: int, mode: str) -> tuple[float, int]:
    ckpt = tempfile.mkdtemp(prefix="sw-eo-ckpt-")
    t0 = time.perf_counter()
    stream = (
        spark.readStream.format("streamwire")
        .option("service_url", url)
        .option("topic", source)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerTrigger", str(cap))
        .load()
        .select("value")
        .writeStream
    )
    if mode == OFFICIAL:
        stream = stream.foreachBatch(official_batch_writer(url, target))
    else:
        stream = (
            stream.format("streamwire")
            .option("service_url", url)
            .option("topic", target)
            .option("deliveryGuarantee", mode)
        )
    query = stream.option("checkpointLocation", ckpt).trigger(availableNow=True).start()
    query.awaitTermination()
    seconds = time.perf_counter() - t0
    batches = len([p for p in query.recentProgress if p["numInputRows"]])
    return seconds, batches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--cap", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import streamwire.spark

    broker = ApachePulsar().start()
    try:
        url = broker.service_url
        source = f"persistent://public/default/eo-src-{uuid.uuid4().hex[:8]}"
        produce(url, source, args.messages)
        spark = spark_session()
        streamwire.spark.register(spark)
        rates: dict[str, list[float]] = {"at_least_once": [], "exactly_once": [], OFFICIAL: []}
        for r in range(args.rounds):
            for mode in rates:
                target = f"persistent://public/default/eo-dst-{uuid.uuid4().hex[:8]}"
                seconds, batches = copy(spark, url, source, target, args.cap, mode)
                total, distinct = count(url, target)
                if (total, distinct) != (args.messages, args.messages):
                    print(f"{mode}: {total} messages, {distinct} distinct: WRONG", flush=True)
                    return 1
                rate = args.messages / seconds
                rates[mode].append(rate)
                print(
                    f"round {r + 1} {mode:21s} {seconds:6.2f} s  {batches} batches  "
                    f"{rate:,.0f} rows/s",
                    flush=True,
                )
        a, e, o = (statistics.median(rates[m]) for m in ("at_least_once", "exactly_once", OFFICIAL))
        print(
            f"median at_least_once {a:,.0f} rows/s, exactly_once {e:,.0f} rows/s "
            f"({e / a:.2f}x), official client in foreachBatch {o:,.0f} rows/s "
            f"(exactly_once {e / o:.2f}x of it)"
        )
        spark.stop()
    finally:
        broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
