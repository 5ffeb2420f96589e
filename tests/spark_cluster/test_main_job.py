"""``scripts/main_job.py --master spark://...``: the ``make demo`` job on the standalone cluster
(its own driver process, as a user runs it), and its error when the workers' Python lacks
streamwire. No SparkSession of this module: the cluster's two cores serve one application at a
time, and the job's driver needs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.peers.spark_cluster import SparkStandaloneCluster

ROOT = Path(__file__).resolve().parents[2]


def _main_job(
    cluster: SparkStandaloneCluster, *args: str, python: str | None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    if python is not None:
        env["PYSPARK_PYTHON"] = python
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "main_job.py"),
            "--master",
            cluster.master_url,
            "--conf",
            "spark.executor.memory=512m",
            "--conf",
            f"spark.cores.max={cluster.workers * cluster.cores}",
            "--quiet",
            *args,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )


def test_main_job_round_trip_on_the_cluster(spark_cluster: SparkStandaloneCluster) -> None:
    # No PYSPARK_PYTHON: the job names its own interpreter (which has streamwire).
    out = _main_job(spark_cluster, "--rows", "5000", python=None)
    assert out.returncode == 0, out.stdout + out.stderr[-4000:]
    assert f"({spark_cluster.master_url}) up in" in out.stdout
    assert f"workers' Python {sys.executable} " in out.stdout
    assert "OK: 5,000 rows" in out.stdout, out.stdout


def test_main_job_explains_a_workers_python_without_streamwire(
    spark_cluster: SparkStandaloneCluster, bare_python: Path
) -> None:
    # `python3`, looked up on the executors' PATH, is the bare venv there.
    out = _main_job(spark_cluster, "--rows", "1000", python="python3")
    assert out.returncode == 3, out.stdout + out.stderr[-4000:]
    assert "WorkerPythonError" not in out.stderr  # a message, not a traceback
    assert "error: streamwire: the Python that Spark runs on the workers cannot import " in (
        out.stderr
    )
    assert str(bare_python) in out.stderr
    assert "spark.archives" in out.stderr
