"""A Spark standalone cluster on loopback for the tests: one master and N workers started from the
installed pyspark's own ``bin/spark-class`` (no download), so Spark jobs run in executors that
are separate JVMs with their own Python workers -- as on a real cluster, only on one host.

Usage::

    with SparkStandaloneCluster() as cluster:
        spark = SparkSession.builder.master(cluster.master_url).config(...).getOrCreate()

Every process binds 127.0.0.1 (``SPARK_LOCAL_IP``) on free ports; executors inherit that from
their worker. ``python`` goes into the daemons' environment as ``PYSPARK_PYTHON`` (the recipe
of docs/deploy.md), but note what decides the executors' interpreter: the driver's
``PYSPARK_PYTHON`` (read when its SparkContext starts; default ``python3``, looked up on each
executor's ``PATH``). ``python3_dir`` puts a directory first on the daemons' ``PATH``, so that
``python3`` there is the interpreter of the test's choosing. Ready means: the master's JSON
status lists every worker ALIVE. A start failure raises :class:`SparkClusterError` with every
process's log tail.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .process import Closes, ServerProcess
from .util import LOOPBACK, free_ports, tail

__all__ = ["SparkClusterError", "SparkStandaloneCluster", "spark_home"]


class SparkClusterError(RuntimeError):
    """The Spark standalone cluster did not start."""


def spark_home() -> Path:
    """The installed pyspark package directory: it ships ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class SparkStandaloneCluster(Closes):
    """A Spark standalone master and ``workers`` workers (``cores`` cores each) on loopback."""

    def __init__(
        self,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        python: str | None = None,
        python3_dir: str | Path | None = None,
        daemon_memory: str = "384m",
        start_timeout: float = 90.0,
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.python = python or sys.executable
        self.python3_dir = Path(python3_dir) if python3_dir is not None else None
        self.daemon_memory = daemon_memory
        self.start_timeout = start_timeout
        self.home = spark_home()
        self.root = Path(tempfile.mkdtemp(prefix="streamwire-spark-cluster-"))
        ports = free_ports(2 + 2 * workers)
        self.master_port, self.webui_port = ports[0], ports[1]
        self.worker_ports = ports[2 : 2 + workers]
        self.worker_webui_ports = ports[2 + workers :]
        self.master = ServerProcess(
            "Spark master", self.root / "logs" / "master.log", error=SparkClusterError
        )
        self.worker_procs = [
            ServerProcess(
                f"Spark worker {i}", self.root / "logs" / f"worker-{i}.log", error=SparkClusterError
            )
            for i in range(workers)
        ]

    # -- properties ---------------------------------------------------------------------------
    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    @property
    def webui_url(self) -> str:
        return f"http://{LOOPBACK}:{self.webui_port}"

    @property
    def pids(self) -> list[int]:
        """PIDs of the master and workers (executors are the workers' children)."""
        return [p.pid for p in (self.master, *self.worker_procs) if p.pid is not None]

    def executor_pids(self) -> dict[int, str]:
        """PID -> executor id of the executor JVMs the workers have started (read from /proc)."""
        workers = {p.pid for p in self.worker_procs if p.pid is not None}
        out: dict[int, str] = {}
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid not in workers:
                    continue
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            if b"--executor-id" in args:
                out[int(proc.name)] = args[args.index(b"--executor-id") + 1].decode()
        return out

    # -- lifecycle ----------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        conf_dir = self.root / "conf"  # empty: no spark-defaults.conf of the host leaks in
        conf_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(self.home),
            SPARK_CONF_DIR=str(conf_dir),
            # Bind addresses (the web UIs bind 0.0.0.0 without it) and the advertised host name.
            SPARK_LOCAL_IP=LOOPBACK,
            SPARK_LOCAL_HOSTNAME=LOOPBACK,
            PYSPARK_PYTHON=self.python,
            SPARK_DAEMON_MEMORY=self.daemon_memory,
            # The REST submission server would listen on another port; nothing here uses it.
            SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        )
        # The driver's own settings must not steer the daemons' Python.
        env.pop("PYSPARK_DRIVER_PYTHON", None)
        if self.python3_dir is not None:
            # What a driver that sets no PYSPARK_PYTHON gets on the executors: `python3` on
            # their PATH (tests put an interpreter without streamwire there).
            env["PATH"] = f"{self.python3_dir}{os.pathsep}{env.get('PATH', '')}"
        return env

    def status(self) -> dict[str, Any]:
        """The master's JSON status (``/json/``): workers, cores, running applications."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=2.0) as resp:
            data: dict[str, Any] = json.loads(resp.read().decode())
            return data

    def _alive_worker_ports(self) -> set[int]:
        try:
            workers = self.status().get("workers", [])
        except (OSError, ValueError):
            return set()
        return {int(w["port"]) for w in workers if w.get("state") == "ALIVE"}

    def start(self) -> SparkStandaloneCluster:
        if self.master.running:
            return self
        env = self._env()
        self.master.start(
            [
                str(self.home / "bin" / "spark-class"),
                "org.apache.spark.deploy.master.Master",
                "--host",
                LOOPBACK,
                "--port",
                str(self.master_port),
                "--webui-port",
                str(self.webui_port),
            ],
            self._master_ready,
            timeout=self.start_timeout,
            env=env,
            interval=0.2,
        )
        # Workers start side by side: each is a JVM that takes seconds to load on shared cores.
        with ThreadPoolExecutor(max_workers=len(self.worker_procs)) as pool:
            futures = [
                pool.submit(self._start_worker, i, env) for i in range(len(self.worker_procs))
            ]
            errors = [f.exception() for f in futures]
        failed = [e for e in errors if e is not None]
        if failed:
            self.stop()
            raise SparkClusterError(f"{failed[0]}\n{self.log_tail()}") from None
        return self

    def _start_worker(self, i: int, env: dict[str, str]) -> None:
        work_dir = self.root / f"work-{i}"
        work_dir.mkdir(parents=True, exist_ok=True)
        port = self.worker_ports[i]
        self.worker_procs[i].start(
            [
                str(self.home / "bin" / "spark-class"),
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                LOOPBACK,
                "--port",
                str(port),
                "--webui-port",
                str(self.worker_webui_ports[i]),
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(work_dir),
                self.master_url,
            ],
            functools.partial(self._worker_alive, port),
            timeout=self.start_timeout,
            env=env,
            interval=0.2,
        )

    def _worker_alive(self, port: int) -> bool:
        return port in self._alive_worker_ports()

    def _master_ready(self) -> bool:
        try:
            return bool(self.status().get("url"))
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        """Stop the workers (they stop their executors), then the master, each by PID."""
        for proc in reversed(self.worker_procs):
            proc.stop(timeout=15.0)
        self.master.stop(timeout=15.0)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def executor_logs(self) -> list[Path]:
        """The executors' stdout/stderr files (``work-N/<app>/<executor>/std*``)."""
        return sorted(self.root.glob("work-*/*/*/std*"))

    def log_tail(self, lines: int = 60) -> str:
        """The last lines of the master's, the workers' and the executors' logs."""
        parts = [self.master.log_tail(lines)]
        parts += [p.log_tail(lines) for p in self.worker_procs]
        for path in self.executor_logs()[-8:]:
            text = tail(path, lines)
            if text:
                parts.append(f"--- {path} (last {lines} lines) ---\n{text}")
        return "\n".join(parts)

    def __enter__(self) -> SparkStandaloneCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return (
            f"SparkStandaloneCluster(master={self.master_url!r}, workers={self.workers}, "
            f"pids={self.pids}, root='{self.root}')"
        )


if __name__ == "__main__":  # pragma: no cover - manual use: python -m tests.peers.spark_cluster
    import signal
    import time

    # SIGTERM (or SIGINT) leaves the `with` block, which stops the daemons by PID.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with SparkStandaloneCluster() as c:
        print(c, c.status().get("aliveworkers"), flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
