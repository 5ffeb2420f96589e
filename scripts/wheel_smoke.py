"""Smoke test of an installed streamwire wheel, as a user gets it: run by scripts/wheel_smoke.sh
with a fresh virtualenv's interpreter, from a directory outside the source tree, with no Rust
toolchain on PATH.

It checks, each step timed:
1. ``import streamwire`` comes from the virtualenv (not the source tree), as the abi3 module;
2. produce then consume 1,000 messages against a pulsar-lite it starts itself (loopback), sent
   as bytes, bytearray, memoryview, str and (with pyspark's pyarrow) a pyarrow array;
3. the Spark Data Source, found by its short name ``format("streamwire")`` with no
   registration (PySpark discovers the installed ``pyspark_streamwire`` package): a DataFrame
   written, then read back;
4. the ``streamwire`` console script: ``--version`` (the package version), else ``--help``.

Standard library only besides what the wheel and its ``[spark]`` extra install, so nothing from
the source tree is needed. Exit status 0 only if every step passed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

MESSAGES = 1_000


def step(name: str, t0: float) -> float:
    now = time.perf_counter()
    print(f"wheel smoke: {name} ok ({now - t0:.1f} s)", flush=True)
    return now


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_lite(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """pulsar-lite on a free loopback port; its metrics server (0.0.0.0 by default) off."""
    from pulsar_lite.binary_finder import find_pulsar_lite_binary

    port = free_port()
    config = workdir / "pulsar-lite.toml"
    config.write_text("[metrics]\nenabled = false\n")
    log = (workdir / "pulsar-lite.log").open("wb")
    proc = subprocess.Popen(
        [
            str(find_pulsar_lite_binary()),
            "--addr",
            f"127.0.0.1:{port}",
            "--db-path",
            str(workdir / "db"),
            "--config",
            str(config),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"pulsar-lite exited with {proc.returncode}; log in {workdir}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"pulsar://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("pulsar-lite did not listen within 30 s")


def check_import(source_tree: Path) -> None:
    import streamwire
    import streamwire._native as native

    where = Path(streamwire.__file__).resolve()
    if source_tree in where.parents:
        raise SystemExit(f"streamwire was imported from the source tree: {where}")
    if not Path(native.__file__).name.endswith(".abi3.so"):
        raise SystemExit(f"not the abi3 extension: {native.__file__}")
    print(f"wheel smoke: streamwire {streamwire.__version__} from {where.parent}")


def produce_consume(url: str, arrow: bool) -> None:
    """Every kind of value a send takes, through the paths the abi3 build reads differently
    (bytes-likes and strs; a pyarrow array's buffers when pyarrow is installed)."""
    import streamwire

    topic = f"persistent://public/default/wheel-smoke-{uuid.uuid4().hex[:8]}"
    sent = [b"m%05d" % i for i in range(MESSAGES)]
    quarter = MESSAGES // 4
    with streamwire.Client(url) as client:
        with client.subscribe(topic, "smoke", initial_position="earliest") as consumer:
            with client.create_producer(topic) as producer:
                producer.send(sent[0], key="k")
                producer.send_many(sent[1:quarter])
                producer.send_many([bytearray(v) for v in sent[quarter : 2 * quarter]])
                producer.send_many([memoryview(v) for v in sent[2 * quarter : 3 * quarter]])
                rest = sent[3 * quarter :]
                if arrow:
                    import pyarrow as pa

                    half = len(rest) // 2
                    producer.send_many(pa.array(rest[:half], type=pa.binary()))
                    producer.send_many([v.decode() for v in rest[half:]])
                else:
                    producer.send_many([v.decode() for v in rest])
                producer.flush()
            got: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(got) < MESSAGES and time.monotonic() < deadline:
                msgs = consumer.receive_many(MESSAGES, timeout=1.0)
                got += [m.value for m in msgs]
                consumer.acknowledge(msgs)
    if got != sent:
        raise SystemExit(f"consumed {len(got)} messages, not the {MESSAGES} sent in order")


def spark_round_trip(url: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("streamwire-wheel-smoke")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        topic = f"wheel-smoke-spark-{uuid.uuid4().hex[:8]}"
        df = spark.range(100).selectExpr("cast(concat('r', id) as binary) as value")
        # No streamwire.spark.register(): the short name must resolve by discovery alone.
        df.write.format("streamwire").option("service_url", url).option("topic", topic).mode(
            "append"
        ).save()
        back = (
            spark.read.format("streamwire")
            .option("service_url", url)
            .option("topic", topic)
            .load()
            .select("value")
            .collect()
        )
        values = sorted(bytes(r.value) for r in back)
        if values != sorted(b"r%d" % i for i in range(100)):
            raise SystemExit(f"Spark read back {len(values)} rows, not the 100 written")
    finally:
        spark.stop()
        # The JVM ends when its stdin closes (at this process's exit, otherwise): wait for it
        # here, so that it is gone before wheel_smoke.sh removes the virtualenv whose jars its
        # shutdown hooks still read (they printed a NoSuchFileException trace after "all ok").
        from pyspark import SparkContext

        proc = getattr(SparkContext._gateway, "proc", None)
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
            proc.wait(timeout=60)


def cli(venv_bin: Path) -> None:
    import streamwire

    exe = str(venv_bin / "streamwire")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True)
    if out.returncode == 0:
        if streamwire.__version__ not in out.stdout:
            raise SystemExit(f"streamwire --version printed {out.stdout!r}")
        print(f"wheel smoke: streamwire --version: {out.stdout.strip()}")
        return
    # This branch has no --version yet: the console script must at least run.
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True)
    if "usage" not in out.stdout:
        raise SystemExit(f"streamwire --help printed {out.stdout!r}")
    print("wheel smoke: streamwire --version is absent; --help ran")


def main() -> int:
    source_tree = Path(sys.argv[1]).resolve()
    spark = "--no-spark" not in sys.argv
    t = t0 = time.perf_counter()
    check_import(source_tree)
    t = step("import", t)
    with tempfile.TemporaryDirectory(prefix="streamwire-wheel-lite-") as work:
        lite, url = start_lite(Path(work))
        try:
            t = step("pulsar-lite start", t)
            produce_consume(url, arrow=spark)
            t = step(f"produce/consume {MESSAGES}", t)
            if spark:
                spark_round_trip(url)
                t = step("Spark format('streamwire') write + read", t)
        finally:
            lite.terminate()
            lite.wait(10)
    cli(Path(sys.executable).parent)
    step("CLI", t)
    print(f"wheel smoke: all ok in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
