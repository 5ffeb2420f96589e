#!/usr/bin/env python
"""The cold Spark job: what the first Data Source write and read of a fresh session cost.

Why a separate process per measurement: the costs measured here (Python planner and task
workers starting, imports, the engine's runtime and connection, JVM class loading and code
generation) are paid once per SparkSession/JVM, so every sample starts a fresh driver process.

Two child modes, each run ``--runs`` times (median reported), against one embedded pulsar-lite:

- ``first``: a fresh ``local[2]`` session runs a plain ``df.rdd.mapPartitions`` job first (the
  baseline the issue compares against), then the first 10-row Data Source write, the first
  read (``count()``), then the same three again (warm).
- ``helpers``: as ``first``, but the write and read take the executor-helper shape instead of
  the Data Source (``mapInArrow(produce_arrow(...))``; ``plan_ranges`` on the driver and
  ``mapInArrow(read_ranges_arrow(...))``), which starts no Python planner worker.
- ``oneshot``: a fresh session whose first Data Source call is a ``--rows`` write of ~100 B rows
  (no warm-up), then a ``count()`` of the topic through the Data Source; then both again (warm).
- ``plain``: Spark's own floor for ``oneshot``, with no streamwire in it: a fresh session whose
  first job moves the same ``--rows`` rows into Python workers as Arrow batches (``mapInArrow``
  that counts them: what a write must do at least), then a job whose Python workers yield that
  many ~100 B rows as Arrow batches and Spark counts them (what a read must do at least); then
  both again (warm).
- ``oneshot-helpers``: as ``oneshot``, in the executor-helper shape (no planner worker).
- ``jvm``: the part of ``plain`` that is the JVM's alone: a fresh session's first job computes
  the same ``--rows`` values and counts them, with no Python worker.

With ``--breakdown`` every child runs with ``STREAMWIRE_SPARK_TIMING`` set, and the table of
our own phases (``streamwire.spark._timing``) per call is printed under the figures.

    .venv/bin/python benches/spark_cold.py                  # both modes, 3 runs each
    .venv/bin/python benches/spark_cold.py --mode first --breakdown
    .venv/bin/python benches/spark_cold.py --conf spark.python.worker.reuse=false
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def parse_args(argv: Optional[list[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--mode",
        choices=["first", "oneshot", "oneshot-helpers", "helpers", "plain", "jvm", "both"],
        default="both",
    )
    p.add_argument("--runs", type=int, default=3, help="fresh sessions per mode (median)")
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the one-shot job")
    p.add_argument(
        "--data",
        choices=["sha", "lit"],
        default="sha",
        help="one-shot rows: a hashed tail per row (default) or one constant tail",
    )
    p.add_argument("--service-url", default=None, help="a running broker (default: embedded)")
    p.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting"
    )
    p.add_argument(
        "--read-schema",
        default="value binary",
        help="schema given to the reads ('all': every column), as in scripts/main_job.py",
    )
    p.add_argument("--breakdown", action="store_true", help="print our per-phase timings")
    p.add_argument(
        "--timeline",
        action="store_true",
        help="split every call by Spark's event log: before its first job (planning, planner "
        "workers), inside its jobs (tasks), after them (commit)",
    )
    p.add_argument(
        "--read-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra option of the Data Source reads (e.g. minPartitions=1)",
    )
    p.add_argument(
        "--register",
        action="store_true",
        help="call streamwire.spark.register(spark) after the session starts (else the source "
        "is found through Spark's lookup of installed pyspark_* modules)",
    )
    p.add_argument(
        "--baseline-pythonpath",
        metavar="DIR",
        help="also run every sample with PYTHONPATH=DIR (another checkout's python/ directory, "
        "e.g. main's), alternating with this tree's runs so both see the same machine load",
    )
    p.add_argument(
        "--child",
        choices=["first", "oneshot", "oneshot-helpers", "helpers", "plain", "jvm"],
        help=argparse.SUPPRESS,
    )
    p.add_argument("--out", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# -- child: one fresh session ------------------------------------------------------------------


def session(confs: list[str]) -> Any:
    from benches._spark import spark_session

    conf = {"spark.driver.memory": "2g"}
    for kv in confs:
        key, _, value = kv.partition("=")
        conf[key] = value
    return spark_session(app="streamwire-spark-cold", conf=conf)


def child(args: argparse.Namespace) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    t0 = time.perf_counter()
    confs = list(args.conf)
    events_dir = None
    if args.timeline:
        events_dir = tempfile.mkdtemp(prefix="streamwire-spark-events-")
        confs += [
            "spark.eventLog.enabled=true",
            f"spark.eventLog.dir=file://{events_dir}",
            "spark.eventLog.compress=false",
            "spark.eventLog.rolling.enabled=false",
        ]
    spark = session(confs)
    from pyspark.sql import functions as F

    calls: list[dict[str, Any]] = []
    url = args.service_url

    def timed(name: str, fn: Any) -> Any:
        start = time.time()
        s = time.perf_counter()
        result = fn()
        calls.append({"call": name, "start": start, "seconds": time.perf_counter() - s})
        return result

    def writer(df: Any, topic: str) -> Any:
        w = df.write.format("streamwire").option("service_url", url).option("topic", topic)
        return w.mode("append")

    def count(topic: str) -> int:
        r = spark.read.format("streamwire").option("service_url", url).option("topic", topic)
        for kv in args.read_option:
            key, _, value = kv.partition("=")
            r = r.option(key, value)
        if args.read_schema != "all":
            r = r.schema(args.read_schema)
        return int(r.load().count())

    if args.register:
        import streamwire.spark

        # No workers' check: its one-row job would start the first Python worker here, and
        # the cold first call this bench measures would no longer include that start.
        streamwire.spark.register(spark, check_workers=False)
    startup = time.perf_counter() - t0
    topic = f"persistent://public/default/cold-{uuid.uuid4().hex[:12]}"
    if args.child == "first":
        small = spark.range(10, numPartitions=2).select(
            F.col("id").cast("string").cast("binary").alias("value")
        )
        plain = spark.range(10, numPartitions=2)
        for tag in ("cold", "warm"):
            n = timed(f"mapPartitions {tag}", lambda: plain.rdd.mapPartitions(_count).collect())
            assert sum(n) == 10, n
            timed(f"write 10 {tag}", lambda: writer(small, topic).save())
            got = timed(f"read 10 {tag}", lambda: count(topic))
            assert got == (10 if tag == "cold" else 20), got
    elif args.child == "helpers":
        small = spark.range(10, numPartitions=2).select(
            F.col("id").cast("string").cast("binary").alias("value")
        )
        plain = spark.range(10, numPartitions=2)

        def helper_write() -> None:
            _helper_write(url, small, topic, 10)

        def helper_read() -> int:
            return _helper_read(spark, url, topic, args.read_schema)

        for tag in ("cold", "warm"):
            n = timed(f"mapPartitions {tag}", lambda: plain.rdd.mapPartitions(_count).collect())
            assert sum(n) == 10, n
            timed(f"write 10 {tag}", helper_write)
            got = timed(f"read 10 {tag}", helper_read)
            assert got == (10 if tag == "cold" else 20), got
    else:
        n = args.rows
        # ``sha``: a distinct 88-character tail per row (hashing costs the JVM); ``lit``: the
        # same 12-digit head and one constant tail (the cheapest distinct rows of ~100 B).
        tail = (
            F.substring(F.repeat(F.sha2(F.col("id").cast("string"), 256), 2), 1, 88)
            if args.data == "sha"
            else F.lit("x" * 88)
        )
        data = spark.range(n, numPartitions=2).select(
            F.concat(F.lpad(F.col("id").cast("string"), 12, "0"), tail)
            .cast("binary")
            .alias("value")
        )
        if args.child == "jvm":
            for tag in ("cold", "warm"):
                got = timed(
                    f"jvm-only {n} {tag}",
                    lambda: data.agg(F.count(F.length("value"))).collect()[0][0],
                )
                assert got == n, (got, n)
        elif args.child == "oneshot-helpers":
            for tag in ("cold", "warm"):
                t = f"{topic}-{tag}"
                timed(f"write {n} {tag}", lambda t=t: _helper_write(url, data, t, n))
                got = timed(f"read {n} {tag}", lambda t=t: _helper_read(spark, url, t, "x"))
                assert got == n, (got, n)
        elif args.child == "plain":
            for tag in ("cold", "warm"):
                got = timed(f"into-python {n} {tag}", lambda: _plain_into(data))
                assert got == n, (got, n)
                got = timed(f"from-python {n} {tag}", lambda: _plain_from(spark, n))
                assert got == n, (got, n)
        else:
            for tag in ("cold", "warm"):
                t = f"{topic}-{tag}"
                timed(f"write {n} {tag}", lambda t=t: writer(data, t).save())
                got = timed(f"read {n} {tag}", lambda t=t: count(t))
                assert got == n, (got, n)
    spark.stop()
    timeline = {}
    if events_dir:
        timeline = spark_timeline(events_dir, calls)
        shutil.rmtree(events_dir, ignore_errors=True)
    with open(args.out, "w") as f:
        json.dump({"startup": startup, "calls": calls, "timeline": timeline}, f)


def spark_timeline(events_dir: str, calls: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each call's wall time split by Spark's own event log (its times are ms since the epoch,
    like the calls' starts): before its first job is submitted (the driver's planning, which
    for a Python Data Source includes its planner workers), from submission to the last job's
    end, and after it (a write's commit). Also the sum of the tasks' run time."""
    jobs: list[tuple[float, float]] = []
    subs: dict[int, float] = {}
    tasks: list[float] = []
    # Spark 4 writes a directory of rolled files per application (``eventlog_v2_*``).
    for path in sorted(p for p in Path(events_dir).rglob("*") if p.is_file()):
        if path.name.startswith("appstatus"):
            continue
        with open(path) as f:
            for line in f:
                if not line.startswith("{"):
                    continue
                ev = json.loads(line)
                kind = ev.get("Event")
                if kind == "SparkListenerJobStart":
                    subs[ev["Job ID"]] = ev["Submission Time"] / 1000
                elif kind == "SparkListenerJobEnd" and ev["Job ID"] in subs:
                    jobs.append((subs[ev["Job ID"]], ev["Completion Time"] / 1000))
                elif kind == "SparkListenerTaskEnd":
                    info = ev["Task Info"]
                    tasks.append(info["Launch Time"] / 1000)
                    tasks.append((info["Finish Time"] - info["Launch Time"]) / 1000)
    out: dict[str, dict[str, float]] = {}
    for c in calls:
        lo, hi = c["start"], c["start"] + c["seconds"]
        mine = [j for j in jobs if lo - 0.01 <= j[0] <= hi + 0.01]
        if not mine:
            continue
        first = min(j[0] for j in mine)
        last = max(j[1] for j in mine)
        run = sum(tasks[i + 1] for i in range(0, len(tasks), 2) if first - 0.01 <= tasks[i] <= last)
        out[c["call"]] = {
            "before jobs": max(0.0, first - lo),
            "jobs": last - first,
            "after jobs": max(0.0, hi - last),
            "task run time (sum)": run,
        }
    return out


def _helper_write(url: str, df: Any, topic: str, n: int) -> None:
    """The executor-helper write: a plain ``mapInArrow`` job, no planner worker."""
    import streamwire.spark as sws
    from pyspark.sql import functions as F

    counts = df.mapInArrow(sws.produce_arrow(sws.ClientConfig(url), topic), sws.COUNTS_SCHEMA)
    assert counts.agg(F.sum("rows")).collect()[0][0] == n


def _helper_read(spark: Any, url: str, topic: str, read_schema: str) -> int:
    """The executor-helper read: ranges planned in the driver's Python, ``mapInArrow``."""
    import streamwire.spark as sws

    cfg = sws.ClientConfig(url)
    df = spark.createDataFrame(sws.range_rows(sws.plan_ranges(cfg, topic)), "range string")
    schema = "value binary" if read_schema != "all" else sws.spark_schema_ddl()
    fn = sws.read_ranges_arrow(cfg)
    if read_schema != "all":
        inner = fn

        def fn(batches: Any) -> Any:
            for b in inner(batches):
                yield b.select(["value"])

    return int(df.mapInArrow(fn, schema).count())


def _count(it: Any) -> list[int]:
    return [sum(1 for _ in it)]


def _plain_into(data: Any) -> int:
    """Rows moved into Python workers as Arrow batches and counted there: a write's floor."""

    def fn(batches: Any) -> Any:
        import pyarrow as pa

        rows = 0
        for b in batches:
            rows += b.num_rows
        yield pa.RecordBatch.from_pydict({"rows": [rows]})

    return int(sum(r[0] for r in data.mapInArrow(fn, "rows long").collect()))


def _plain_from(spark: Any, n: int) -> int:
    """Rows of ~100 B built by Python workers as Arrow batches and counted by Spark: a read's
    floor (each of 2 tasks yields n/2 rows in batches of 10,000, one shared 100 B value)."""
    per = n // 2

    def fn(batches: Any) -> Any:
        import pyarrow as pa

        for _ in batches:
            pass
        chunk = pa.array([b"x" * 100] * 10_000, pa.binary())
        left = per
        while left > 0:
            k = min(left, 10_000)
            yield pa.RecordBatch.from_arrays([chunk.slice(0, k)], ["value"])
            left -= k

    return int(spark.range(2, numPartitions=2).mapInArrow(fn, "value binary").count())


# -- parent ------------------------------------------------------------------------------------


def run_child(
    args: argparse.Namespace, mode: str, url: str, pythonpath: Optional[str] = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        timing = os.path.join(tmp, "timing.jsonl")
        cmd = [sys.executable, __file__, "--child", mode, "--out", out, "--service-url", url]
        cmd += ["--rows", str(args.rows), "--read-schema", args.read_schema, "--data", args.data]
        if args.register:
            cmd.append("--register")
        if args.timeline:
            cmd.append("--timeline")
        for kv in args.conf:
            cmd += ["--conf", kv]
        for kv in args.read_option:
            cmd += ["--read-option", kv]
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        if args.breakdown:
            env["STREAMWIRE_SPARK_TIMING"] = timing
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-4000:])
            raise SystemExit(f"child {mode} failed ({proc.returncode})")
        with open(out) as f:
            result: dict[str, Any] = json.load(f)
        phases = []
        if os.path.exists(timing):
            with open(timing) as f:
                phases = [json.loads(line) for line in f if line.strip()]
        result["phases"] = phases
        return result


def assign(calls: list[dict[str, Any]], phases: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each timed phase belongs to the driver call whose window holds its start."""
    by_call: dict[str, list[Any]] = {c["call"]: [] for c in calls}
    for ph in phases:
        for c in calls:
            if c["start"] <= ph["start"] <= c["start"] + c["seconds"]:
                by_call[c["call"]].append(ph)
                break
    return by_call


IMPORT_PHASE = "import streamwire.spark.datasource"


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def report(mode: str, runs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    names = [c["call"] for c in runs[0]["calls"]]
    print(f"\n## {mode} ({len(runs)} fresh sessions; median [min-max])")
    print(f"session start: {median([r['startup'] for r in runs]):.2f}s")
    print(f"{'call':<28}{'seconds':>26}{'rows/s':>14}")
    for name in names:
        secs = [next(c["seconds"] for c in r["calls"] if c["call"] == name) for r in runs]
        m = median(secs)
        rows = int(name.split()[1]) if name.split()[1].isdigit() else 0
        rate = f"{rows / m:,.0f}" if rows >= 1000 else ""
        spread = f"{m:.2f} [{min(secs):.2f}-{max(secs):.2f}]"
        print(f"{name:<28}{spread:>26}{rate:>14}")
    if mode.startswith(("first", "helpers")):
        for tag in ("cold", "warm"):
            for call in (f"write 10 {tag}", f"read 10 {tag}"):
                extra = [
                    next(c["seconds"] for c in r["calls"] if c["call"] == call)
                    - next(c["seconds"] for c in r["calls"] if c["call"] == f"mapPartitions {tag}")
                    for r in runs
                ]
                print(f"{call} - mapPartitions {tag} (same process): {median(extra):+.2f}s")
    if args.timeline:
        print("\nSpark's event log per call (median over runs, seconds):")
        for name in names:
            parts: dict[str, list[float]] = {}
            for r in runs:
                for k, v in r.get("timeline", {}).get(name, {}).items():
                    parts.setdefault(k, []).append(v)
            if parts:
                cells = ", ".join(f"{k} {median(v):.2f}" for k, v in parts.items())
                print(f"  {name:<26}{cells}")
    if not args.breakdown:
        return
    print("\nour phases per call (sum over processes, median over runs; n = occurrences):")
    for name in names:
        sums: dict[str, list[float]] = {}
        counts: dict[str, int] = {}
        ages: dict[str, list[float]] = {}
        for r in runs:
            per = assign(r["calls"], r["phases"])[name]
            local: dict[str, float] = {}
            for ph in per:
                local[ph["phase"]] = local.get(ph["phase"], 0.0) + ph["seconds"]
                counts[ph["phase"]] = counts.get(ph["phase"], 0) + 1
                if ph["phase"] == IMPORT_PHASE and ph.get("age") is not None:
                    ages.setdefault(ph["phase"], []).append(ph["age"] - ph["seconds"])
            for k, total in local.items():
                sums.setdefault(k, []).append(total)
        if not sums:
            continue
        print(f"  {name}:")
        for k, v in sorted(sums.items(), key=lambda kv: -median(kv[1])):
            print(f"    {k:<36}{median(v):8.3f}s  n={counts[k] / len(runs):.1f}")
        if ages:
            a = ages[IMPORT_PHASE]
            print(f"    (processes importing us: started {median(a):.2f}s before the import)")


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    if args.child:
        child(args)
        return 0
    broker = None
    url = args.service_url
    if not url:
        from tests.peers.lite import PulsarLite

        broker = PulsarLite().start()
        url = broker.service_url
    try:
        modes = ["first", "helpers", "oneshot", "plain"] if args.mode == "both" else [args.mode]
        print(
            f"broker {url}; confs {args.conf or 'default'}; read schema {args.read_schema!r}; "
            f"register() {args.register}"
        )
        variants: list[tuple[str, Optional[str]]] = [("this tree", None)]
        if args.baseline_pythonpath:
            variants.insert(0, (f"baseline {args.baseline_pythonpath}", args.baseline_pythonpath))
        for mode in modes:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
            for i in range(args.runs):
                for name, path in variants:
                    r = run_child(args, mode, url, path)
                    runs[name].append(r)
                    line = ", ".join(f"{c['call']} {c['seconds']:.2f}s" for c in r["calls"])
                    print(f"  {mode} run {i + 1} [{name}]: {line}", flush=True)
            for name, _ in variants:
                report(f"{mode} [{name}]", runs[name], args)
    finally:
        if broker is not None:
            broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
