"""``streamwire.spark.register(spark)`` on a cluster whose workers' Python lacks streamwire.

The session's driver sets no PYSPARK_PYTHON, so its executors run ``python3`` from their own
PATH -- on this cluster a bare venv, as on a host where nobody installed streamwire. The check
must name that interpreter and the fix; without it Spark's own error says neither.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamwire
import streamwire.spark as sws

from tests.peers.spark_cluster import SparkStandaloneCluster

from .conftest import cluster_session


@pytest.fixture(scope="module")
def bare_spark(spark_cluster: SparkStandaloneCluster) -> Iterator[Any]:
    with cluster_session(spark_cluster, "streamwire-bare-workers", python=None) as session:
        yield session


def test_register_names_the_workers_interpreter_and_the_fix(
    bare_spark: Any, bare_python: Path
) -> None:
    assert bare_spark.sparkContext.pythonExec == "python3"  # the default: nothing was set
    with pytest.raises(streamwire.WorkerPythonError) as info:
        sws.register(bare_spark)
    err = info.value
    assert isinstance(err, streamwire.ConfigError)
    assert err.python == str(bare_python)  # the executor's `python3`, not the driver's
    message = str(err)
    assert str(bare_python) in message
    assert "No module named 'streamwire'" in message
    for fix in ("PYSPARK_PYTHON", "spark.pyspark.python", "spark.archives", "pip install"):
        assert fix in message, fix
    assert "DATA_SOURCE_NOT_FOUND" in message  # the symptom the user will search for


def test_without_the_check_spark_says_only_that_the_module_is_missing(
    bare_spark: Any, lite_broker: Any
) -> None:
    """What the check saves users from: Spark's error names no interpreter and no fix."""
    sws.register(bare_spark, check_workers=False)
    with pytest.raises(Exception) as info:
        bare_spark.read.format("streamwire").option("service_url", lite_broker.service_url).option(
            "topic", "persistent://public/default/never-read"
        ).load().count()
    message = str(info.value)
    assert not isinstance(info.value, streamwire.StreamwireError)
    assert "No module named 'streamwire'" in message
    assert "PYSPARK_PYTHON" not in message


def test_an_interpreter_that_does_not_exist_is_named(bare_spark: Any, tmp_path: Path) -> None:
    """A PYSPARK_PYTHON that is not there: the task cannot start; the error names the path.
    (``pythonExec`` is what PYSPARK_PYTHON sets when the SparkContext starts.)"""
    sc = bare_spark.sparkContext
    missing = str(tmp_path / "no-such-env" / "bin" / "python3")
    saved = sc.pythonExec
    sc.pythonExec = missing
    try:
        with pytest.raises(streamwire.WorkerPythonError) as info:
            sws.check_workers(bare_spark)
    finally:
        sc.pythonExec = saved
    assert info.value.python == missing
    assert missing in str(info.value)
    assert "PYSPARK_PYTHON" in str(info.value)
