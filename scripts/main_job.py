#!/usr/bin/env python
"""The streamwire main job: a PySpark round trip through the ``streamwire`` Data Source.

Starts an embedded pulsar-lite broker (unless ``--service-url`` / ``STREAMWIRE_SERVICE_URL`` names
a cluster), creates a SparkSession (``local[2]``, or ``--master spark://host:port`` for a Spark
cluster), checks that the workers' Python can import streamwire (a clear error naming the
interpreter and the fix if not; docs/deploy.md), generates ``--rows`` rows of ~100 bytes, writes
them to a fresh topic through the Data Source, reads them back through the Data Source, and checks
the row count and an order-independent checksum (sum of CRC32 and of lengths, computed in Spark on
both sides). Exits non-zero on any mismatch.

It reports throughput twice: **cold** first (the write is the session's first job and the read
its first Data Source read, as in a user's one-shot job: Python workers starting, imports, JVM
class loading and code generation included), then **warm** (the same write to a second topic and
``--read-passes`` reads of it, in the now warm session). The workers' check is one short job that
runs before the cold write (so the first Python worker start is paid there, and printed);
``--skip-worker-check`` leaves it out, for cold figures measured as before it existed.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows to write and read back")
    p.add_argument("--value-size", type=int, default=100, help="bytes per value (>= 24)")
    p.add_argument("--partitions", type=int, default=2, help="Spark partitions for the write")
    p.add_argument(
        "--service-url",
        default=os.environ.get("STREAMWIRE_SERVICE_URL"),
        help="use this cluster instead of an embedded pulsar-lite (env STREAMWIRE_SERVICE_URL)",
    )
    p.add_argument("--topic", default=None, help="topic (default: a fresh unique one)")
    p.add_argument(
        "--read-partitions", type=int, default=0, help="minPartitions for the read (0: per topic)"
    )
    p.add_argument(
        "--read-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Data Source read option, e.g. receiverQueueSize=5000 (repeatable)",
    )
    p.add_argument(
        "--read-schema",
        default="value binary",
        help="schema given to the read, which selects the columns built and sent to Spark "
        "('all': every column of the source)",
    )
    p.add_argument(
        "--read-passes",
        type=int,
        default=1,
        help="warm reads of the second topic (each verified and timed)",
    )
    p.add_argument(
        "--master",
        default="local[2]",
        help="Spark master URL, e.g. spark://127.0.0.1:7077 for a standalone cluster "
        "(default local[2]); the executors must reach --service-url",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting, e.g. spark.executor.memory=1g (repeatable)",
    )
    p.add_argument(
        "--skip-worker-check",
        action="store_true",
        help="do not check that the workers' Python imports streamwire before the first job",
    )
    p.add_argument("--quiet", action="store_true", help="no progress line")
    return p.parse_args(argv)


class Progress:
    """A one-line status from Spark's status tracker: stage, tasks done, elapsed, est. rows/s."""

    def __init__(self, spark: Any, label: str, rows: int, enabled: bool) -> None:
        self.sc = spark.sparkContext
        self.label = label
        self.rows = rows
        self.enabled = enabled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.start = 0.0

    def __enter__(self) -> Progress:
        self.start = time.perf_counter()
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.enabled:
            self._thread.join()
            sys.stderr.write("\r" + " " * 100 + "\r")
            sys.stderr.flush()

    def _run(self) -> None:
        tracker = self.sc.statusTracker()
        while not self._stop.wait(0.5):
            done = total = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            elapsed = time.perf_counter() - self.start
            line = f"[{self.label}] {elapsed:6.1f}s  tasks {done}/{total}  ({self.rows:,} rows)"
            sys.stderr.write("\r" + line.ljust(80))
            sys.stderr.flush()


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.value_size < 24:
        print("--value-size must be at least 24", file=sys.stderr)
        return 2
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    broker = None
    url = args.service_url
    if not url:
        from tests.peers.lite import PulsarLite

        broker = PulsarLite().start()
        url = broker.service_url
        print(f"embedded pulsar-lite at {url} (pid {broker.pid})")
    else:
        print(f"using cluster {url}")
    topic = args.topic or f"persistent://public/default/main-job-{uuid.uuid4().hex[:12]}"
    try:
        return run(args, url, topic)
    finally:
        if broker is not None:
            broker.close()


def run(args: argparse.Namespace, url: str, topic: str) -> int:
    import streamwire
    import streamwire.spark
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    t0 = time.perf_counter()
    builder = (
        SparkSession.builder.master(args.master)
        .appName("streamwire-main-job")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "2g")
    )
    for kv in args.conf:
        key, _, value = kv.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    print(
        f"spark {spark.version} ({args.master}) up in {time.perf_counter() - t0:.1f}s; "
        f"topic {topic}"
    )
    if not args.skip_worker_check:
        t1 = time.perf_counter()
        try:
            report = streamwire.spark.check_workers(spark)
        except streamwire.WorkerPythonError as exc:
            print(f"error: {exc}", file=sys.stderr)
            spark.stop()
            return 3
        if report is not None:
            print(
                f"workers' Python {report.python} (Python {report.python_version}) imports "
                f"streamwire {report.streamwire_version}: checked in "
                f"{time.perf_counter() - t1:.1f}s"
            )
    # format("streamwire") is found without this too (pyspark_streamwire), but only through Spark's
    # lookup of Python data sources: one more Python planner daemon on the first call. A source
    # registered on the session is found first and that lookup never runs (docs/spark.md).
    streamwire.spark.register(spark, check_workers=False)

    n, size = args.rows, args.value_size
    filler = size - 12 - 8
    # value = 12-digit id + 8 hex of its crc + deterministic filler: ~size bytes, all distinct
    data = spark.range(n, numPartitions=args.partitions).select(
        F.concat(
            F.lpad(F.col("id").cast("string"), 12, "0"),
            F.lpad(F.hex(F.crc32(F.col("id").cast("string").cast("binary"))), 8, "0"),
            F.substring(F.repeat(F.sha2(F.col("id").cast("string"), 256), 4), 1, filler),
        )
        .cast("binary")
        .alias("value")
    )

    def checksum(df: Any) -> tuple[int, int, int]:
        row = df.agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.crc32(F.col("value"))).alias("crc"),
            F.sum(F.length(F.col("value"))).alias("bytes"),
        ).collect()[0]
        return int(row.n), int(row.crc or 0), int(row.bytes or 0)

    def source(name: str) -> Any:
        # One input partition per topic partition; --read-partitions N splits the range by
        # entries (on 2 cores shared with an embedded broker one reader measured faster).
        reader = spark.read.format("streamwire").option("service_url", url).option("topic", name)
        if args.read_schema != "all":
            # Spark cannot prune a Python source's columns; a schema naming only what the job
            # needs (the checksum reads `value`) makes the source build and ship only that.
            reader = reader.schema(args.read_schema)
        if args.read_partitions:
            reader = reader.option("minPartitions", str(args.read_partitions))
        for kv in args.read_option:
            key, _, value = kv.partition("=")
            reader = reader.option(key, value)
        return reader.load()

    def write(name: str, label: str) -> float:
        with Progress(spark, label, n, not args.quiet) as prog:
            data.write.format("streamwire").option("service_url", url).option("topic", name).mode(
                "append"
            ).save()
            return time.perf_counter() - prog.start

    def read(name: str, label: str) -> tuple[tuple[int, int, int], float]:
        with Progress(spark, label, n, not args.quiet) as prog:
            got = checksum(source(name))
            return got, time.perf_counter() - prog.start

    # Cold: the session's first job is the Data Source write, then its first read (what a
    # one-shot job pays: Python planner/task workers, imports, JVM class loading, codegen).
    timings: list[tuple[str, float, tuple[int, int, int]]] = []
    cold_write_s = write(topic, "write (cold)")
    got, cold_read_s = read(topic, "read (cold)")
    expected = checksum(data)
    nbytes = expected[2]
    timings.append(("write (cold)", cold_write_s, expected))
    timings.append(("read (cold)", cold_read_s, got))
    # Warm: the same write to a second topic, then its reads, in the now warm session.
    warm = f"{topic}-warm"
    timings.append(("write (warm)", write(warm, "write (warm)"), expected))
    for i in range(max(1, args.read_passes)):
        label = "read (warm)" if args.read_passes <= 1 else f"read (warm) {i + 1}"
        got, secs = read(warm, label)
        timings.append((label, secs, got))

    for label, secs, got in timings:
        size = nbytes if label.startswith("write") else got[2]
        rows = n if label.startswith("write") else got[0]
        print(
            f"{label + ':':<20}{rows:,} rows, {size / 1e6:,.1f} MB in {secs:.2f}s -> "
            f"{rows / secs:,.0f} rows/s, {size / 1e6 / secs:,.1f} MB/s"
        )
    spark.stop()
    bad = [(label, got) for label, _, got in timings if got != expected]
    for label, got in bad:
        print(
            f"MISMATCH in {label}: expected (rows, crc-sum, bytes) = {expected}, got {got}",
            file=sys.stderr,
        )
    if bad:
        return 1
    got = timings[1][2]
    print(
        f"OK: {got[0]:,} rows, checksum {got[1]} matches on every read; "
        f"total {time.perf_counter() - t0:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
