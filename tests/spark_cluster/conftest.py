"""Fixtures for PySpark on a Spark standalone cluster (issue 30).

- ``spark_cluster`` (session): a :class:`~tests.peers.spark_cluster.SparkStandaloneCluster`
  (master + two one-core workers) started once per run, only when a test here is collected.
  ``python3`` on its daemons' PATH is a bare venv without streamwire, as on a host where nobody
  installed it: a driver that does not name its workers' interpreter gets that one.
  A start failure fails the tests with the cluster's logs (never skips).
- ``spark`` (module): a SparkSession on the cluster with both executors registered, the
  ``streamwire`` source registered (the workers' check included), stopped at the module's end.
  One per module: a session takes seconds to start, and the cluster's two cores serve one
  application at a time.

Functions shipped to executors must be built by factories (nested functions): cloudpickle ships
those by value, while a module-level function of a test module would be imported by name on the
executor, which does not have the tests on its path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.peers.fixture import started
from tests.peers.spark_cluster import SparkClusterError, SparkStandaloneCluster

_failure: list[str] = []


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of the same Python as the suite's, without streamwire (nor anything else)."""
    root = tmp_path_factory.mktemp("bare-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    return root / "bin" / "python3"


@pytest.fixture(scope="session")
def spark_cluster(bare_python: Path) -> Iterator[SparkStandaloneCluster]:

    def make() -> SparkStandaloneCluster:
        return SparkStandaloneCluster(
            workers=2, cores=1, memory="1g", python=sys.executable, python3_dir=bare_python.parent
        )

    # _failure: one failed start is enough for the whole run.
    what = "the Spark standalone cluster"
    with started(make, what, SparkClusterError, _failure) as cluster:
        yield cluster


def _stop_other_context(master: str) -> None:
    """A process holds one SparkContext: stop a session of another master (tests/spark's
    session-wide ``local[2]`` one when both directories run; it has served its tests by now)."""
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is not None and active.master != master:
        active.stop()


@contextmanager
def cluster_session(
    cluster: SparkStandaloneCluster, app: str, *, python: str | None = sys.executable
) -> Iterator[Any]:
    """A SparkSession on ``cluster`` whose Python workers run ``python`` (``None``: whatever
    ``python3`` is on the executors' PATH, as for a driver that sets no PYSPARK_PYTHON),
    returned once every worker's executor has registered."""
    from pyspark.sql import SparkSession

    _stop_other_context(cluster.master_url)
    # The SparkContext reads PYSPARK_PYTHON once, when it starts: set it for that moment only.
    saved = os.environ.pop("PYSPARK_PYTHON", None)
    if python is not None:
        os.environ["PYSPARK_PYTHON"] = python
    try:
        session = (
            SparkSession.builder.master(cluster.master_url)
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.executor.memory", "512m")
            .config("spark.executor.cores", "1")
            .config("spark.cores.max", str(cluster.workers * cluster.cores))
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .getOrCreate()
        )
    finally:
        os.environ.pop("PYSPARK_PYTHON", None)
        if saved is not None:
            os.environ["PYSPARK_PYTHON"] = saved
    try:
        session.sparkContext.setLogLevel("ERROR")
        _wait_for_executors(session, cluster)
        yield session
    finally:
        session.stop()


def _wait_for_executors(
    session: Any, cluster: SparkStandaloneCluster, timeout: float = 120.0
) -> None:
    """Block until each worker runs an executor for this application (the block managers
    known to the driver: its own plus one per executor), else fail with the cluster's logs."""
    want = cluster.workers + 1
    deadline = time.monotonic() + timeout
    while True:
        have = session.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
        if have >= want:
            return
        if time.monotonic() > deadline:
            pytest.fail(
                f"{have - 1} of {cluster.workers} executors registered within {timeout:.0f}s\n"
                + cluster.log_tail(),
                pytrace=False,
            )
        time.sleep(0.2)


@pytest.fixture(scope="module")
def spark(spark_cluster: SparkStandaloneCluster, request: pytest.FixtureRequest) -> Iterator[Any]:
    import streamwire.spark

    with cluster_session(spark_cluster, f"streamwire-{request.module.__name__}") as session:
        streamwire.spark.register(session)  # the workers' check runs here: it must pass
        yield session
