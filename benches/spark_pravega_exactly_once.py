#!/usr/bin/env python
"""What exactly-once costs a Spark streaming write to Pravega: the same stream copy with
``deliveryGuarantee`` ``at_least_once`` and ``exactly_once``, in turn, in one run.

Starts the Pravega standalone on loopback, writes ``--events`` 100 B events to a source stream
(``--segments`` segments), then in one local[2] Spark session copies the stream to a new
target stream with ``Trigger.AvailableNow`` and ``maxRecordsPerTrigger=--cap`` (so several
micro-batches, each committed), ``--rounds`` times per mode, alternating. Prints rows/s per
round and the medians, and checks every copy holds each row once.

    .venv/bin/python benches/spark_pravega_exactly_once.py --events 200000 --cap 50000 --rounds 3
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

from streamwire import pravega

from benches._spark import spark_session
from tests.peers.pravega import PravegaStandalone


def produce(url: str, scope: str, stream: str, n: int) -> None:
    with pravega.Client(url) as c, c.create_writer(scope, stream) as w:
        for i in range(0, n, 20_000):
            batch = [b"e%09d" % j + b"x" * 90 for j in range(i, min(i + 20_000, n))]
            w.write_many(batch, [f"k{j % 64}" for j in range(len(batch))])
        w.flush()


def count(url: str, scope: str, stream: str) -> tuple[int, int]:
    """(events, distinct values) visible in the stream, read to its tail now."""
    seen: set[bytes] = set()
    total = 0
    with pravega.Client(url) as c:
        tail = c.tail(scope, stream).positions
        with c.create_reader(scope, stream, "head") as r:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                pos = r.position().positions
                if all(pos.get(s, -1) >= o for s, o in tail.items()):
                    break
                batch = r.read_arrow(100_000, timeout=0.5, columns=["value"])
                total += batch.num_rows
                seen.update(batch.column(0).to_pylist())
    return total, len(seen)


def copy(spark: Any, url: str, scope: str, source: str, target: str, cap: int, mode: str) -> Any:
    ckpt = tempfile.mkdtemp(prefix="sw-pveo-ckpt-")
    t0 = time.perf_counter()
    query = (
        spark.readStream.format("streamwire")
        .option("service_url", url)
        .option("scope", scope)
        .option("stream", source)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerTrigger", str(cap))
        .load()
        .selectExpr("value", "cast(segment as string) as routing_key")
        .writeStream.format("streamwire")
        .option("service_url", url)
        .option("scope", scope)
        .option("stream", target)
        .option("deliveryGuarantee", mode)
        .option("checkpointLocation", ckpt)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    seconds = time.perf_counter() - t0
    shutil.rmtree(ckpt, ignore_errors=True)
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    batches = len([p for p in query.recentProgress if p["numInputRows"]])
    return seconds, batches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--cap", type=int, default=50_000)
    ap.add_argument("--segments", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import streamwire.spark

    server = PravegaStandalone(heap="2g").start()
    try:
        url = server.controller_url
        scope = "bench" + uuid.uuid4().hex[:8]
        with pravega.Client(url) as c:
            c.create_scope(scope)
            c.create_stream(scope, "src", segments=args.segments)
        produce(url, scope, "src", args.events)
        spark = spark_session()
        streamwire.spark.register(spark)
        rates: dict[str, list[float]] = {"at_least_once": [], "exactly_once": []}
        for r in range(args.rounds):
            for mode in rates:
                target = f"dst-{mode.split('_')[0]}-{r}"
                with pravega.Client(url) as c:
                    c.create_stream(scope, target, segments=args.segments)
                seconds, batches = copy(spark, url, scope, "src", target, args.cap, mode)
                total, distinct = count(url, scope, target)
                if (total, distinct) != (args.events, args.events):
                    print(f"{mode}: {total} events, {distinct} distinct: WRONG", flush=True)
                    return 1
                rate = args.events / seconds
                rates[mode].append(rate)
                print(
                    f"round {r + 1} {mode:14s} {seconds:6.2f} s  {batches} batches  "
                    f"{rate:,.0f} rows/s",
                    flush=True,
                )
        a, e = (statistics.median(rates[m]) for m in ("at_least_once", "exactly_once"))
        print(f"median at_least_once {a:,.0f} rows/s, exactly_once {e:,.0f} rows/s ({e / a:.2f}x)")
        spark.stop()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
