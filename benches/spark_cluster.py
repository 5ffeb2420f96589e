#!/usr/bin/env python
"""Spark write/read rows/s through ``format("streamwire")``: a Spark standalone cluster (master
+ two one-core workers from the installed pyspark, executors in their own JVMs) against
``local[2]``, in the same run, on one embedded pulsar-lite.

Each mode runs in a driver process of its own (a process holds one SparkContext): the session
starts, a 10,000-row write and read warm it up, then ``--rounds`` rounds each write ``--rows``
rows of ~100 B to a fresh topic and read them back, the read checked by count and an
order-independent checksum (sum of CRC32 and of lengths, computed in Spark). Reported: the
median rows/s of the rounds (and the range). Same cores for both modes: the cluster's two
executors against ``local[2]``'s two task slots.

    .venv/bin/python benches/spark_cluster.py                      # 1M rows, 3 rounds
    .venv/bin/python benches/spark_cluster.py --rows 200000 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows per round")
    p.add_argument("--rounds", type=int, default=3, help="measured rounds per mode")
    p.add_argument(
        "--modes",
        default="local,cluster",
        help="comma-separated, run in this order: local (local[2]) and cluster (standalone)",
    )
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)  # a Spark master URL
    p.add_argument("--service-url", default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def child(args: argparse.Namespace) -> int:
    """One driver: warm up, then the measured rounds; prints one JSON line of results."""
    import streamwire.spark
    from pyspark.sql import functions as F

    from benches._spark import spark_session

    t0 = time.perf_counter()
    conf = {"spark.driver.memory": "2g"}
    if args.child.startswith("spark://"):
        conf.update({"spark.executor.memory": "1g", "spark.cores.max": "2"})
    spark = spark_session(args.child, "streamwire-spark-cluster-bench", conf=conf)
    if args.child.startswith("spark://"):  # both executors up before anything is timed
        while spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() < 3:
            time.sleep(0.2)
    streamwire.spark.register(spark)
    startup = time.perf_counter() - t0
    url = args.service_url

    def data(n: int) -> Any:  # value = 12-digit id + deterministic filler: 100 B, distinct
        return spark.range(n, numPartitions=2).select(
            F.concat(
                F.lpad(F.col("id").cast("string"), 12, "0"),
                F.substring(F.repeat(F.sha2(F.col("id").cast("string"), 256), 2), 1, 88),
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

    def round_trip(n: int) -> tuple[float, float]:
        topic = f"persistent://public/default/bench-{uuid.uuid4().hex[:12]}"
        df = data(n)
        t = time.perf_counter()
        df.write.format("streamwire").option("service_url", url).option("topic", topic).mode(
            "append"
        ).save()
        write_s = time.perf_counter() - t
        reader = spark.read.format("streamwire").option("service_url", url)
        t = time.perf_counter()
        got = checksum(reader.option("topic", topic).schema("value binary").load())
        read_s = time.perf_counter() - t
        expected = checksum(df)
        if got != expected:
            raise SystemExit(f"MISMATCH on {topic}: expected {expected}, read {got}")
        return write_s, read_s

    round_trip(10_000)  # warm-up: Python workers, imports, class loading, code generation
    rounds = [round_trip(args.rows) for _ in range(args.rounds)]
    spark.stop()
    print(json.dumps({"startup_s": startup, "rounds": rounds}))
    return 0


def run_mode(args: argparse.Namespace, master: str, url: str) -> dict[str, Any]:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, __file__, "--child", master, "--service-url", url]
    cmd += ["--rows", str(args.rows), "--rounds", str(args.rounds)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise SystemExit(f"{master}: exit {out.returncode}\n{out.stdout}\n{out.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.child:
        return child(args)
    from tests.peers.lite import PulsarLite
    from tests.peers.spark_cluster import SparkStandaloneCluster

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    results: dict[str, dict[str, Any]] = {}
    with PulsarLite() as broker:
        cluster = (
            SparkStandaloneCluster(workers=2, cores=1, memory="2g") if "cluster" in modes else None
        )
        try:
            if cluster is not None:
                t = time.perf_counter()
                cluster.start()
                print(
                    f"standalone cluster up in {time.perf_counter() - t:.1f}s: {cluster.master_url}"
                )
            for mode in modes:
                master = "local[2]" if mode == "local" else cluster.master_url  # type: ignore[union-attr]
                results[mode] = run_mode(args, master, broker.service_url)
                print(f"{mode}: done", flush=True)
        finally:
            if cluster is not None:
                cluster.close()
    print(f"\n{args.rows:,} rows of 100 B per round, {args.rounds} rounds, median (min-max) rows/s")
    print(f"{'mode':<36}{'write':>30}{'read':>30}{'session start':>16}")
    for mode, res in results.items():
        cells = []
        for i in (0, 1):
            rates = [args.rows / r[i] for r in res["rounds"]]
            cells.append(f"{statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})")
        label = "local[2]" if mode == "local" else "standalone (2 executors x 1 core)"
        print(f"{label:<36}{cells[0]:>30}{cells[1]:>30}{res['startup_s']:>15.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
