"""Check that the Python Spark runs on the workers can import streamwire.

Why: Spark looks up, plans and runs a Python Data Source in Python worker processes started with
the interpreter the driver names (``PYSPARK_PYTHON``; ``spark.pyspark.python`` with
spark-submit; default ``python3`` on each host's ``PATH``). When that interpreter lacks
streamwire, every call fails with Spark's ``DATA_SOURCE_NOT_FOUND ... streamwire.DefaultSource``
or ``PYTHON_DATA_SOURCE_ERROR ... No module named 'streamwire'``, which says nothing about the
interpreter. One tiny job (one task, one row) asks a worker what it runs and whether the import
works, and turns a failure into :class:`~streamwire.exceptions.WorkerPythonError` naming the
interpreter and the fix.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from streamwire.exceptions import WorkerPythonError

__all__ = ["WorkerCheck", "check_workers"]

log = logging.getLogger("streamwire.spark")

_FIX = (
    "Fix one of: (1) point PYSPARK_PYTHON in the driver's environment (spark.pyspark.python "
    "with spark-submit) at an interpreter that has streamwire on every executor host; "
    "(2) install streamwire (pip install streamwire, or the wheel file) into the workers' "
    "interpreter on every executor host; (3) ship a packed environment with spark.archives "
    "(venv-pack/conda-pack: --archives env.tar.gz#env and PYSPARK_PYTHON=./env/bin/python). "
    "See docs/deploy.md, 'Running on a cluster'. "
    "(streamwire.spark.register(spark, check_workers=False) skips this check.)"
)


@dataclass(frozen=True)
class WorkerCheck:
    """What a worker reported: its interpreter (``sys.executable``), that interpreter's
    version, and the streamwire version it imported."""

    python: str
    python_version: str
    streamwire_version: str


def _probe() -> Callable[[Any], dict[str, str]]:
    """The function the worker runs. Built here so that it is a nested function, which Spark's
    cloudpickle ships by value: a reference to this module would need streamwire to unpickle,
    and the worker could not report anything."""

    def probe(_: Any) -> dict[str, str]:
        import sys

        out = {"python": sys.executable, "python_version": sys.version.split()[0]}
        try:
            # The engine (a wheel for another platform fails here), and the module Spark
            # unpickles the Data Source from.
            import streamwire
            import streamwire._native
            import streamwire.spark.datasource

            out["streamwire"] = str(streamwire.__version__)
        except BaseException as exc:  # reported to the driver, whatever it is
            out["error"] = f"{type(exc).__name__}: {exc}"
        return out

    return probe


def _cause_line(exc: BaseException) -> str:
    """What went wrong in a (Py4J) job failure, e.g. ``java.io.IOException: Cannot run program
    "...": error=2, No such file or directory``: the innermost ``...Exception:`` /
    ``...Error:`` of the first line that has one (py4j's own first line, "An error occurred
    while calling ...", and Spark's "Job aborted ..." wrapper say nothing)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        if "An error occurred while calling" in line:
            continue
        found = list(re.finditer(r"[\w.$]+(?:Exception|Error): ", line))
        if found:
            return line[found[-1].start() :][:500]
    return lines[0][:500] if lines else type(exc).__name__


def _configured_python(spark: Any) -> Optional[str]:
    return getattr(getattr(spark, "sparkContext", None), "pythonExec", None)


def check_workers(spark: Any) -> Optional[WorkerCheck]:
    """Run one one-row task and check its Python imports streamwire.

    :param spark: a classic SparkSession (Spark Connect sessions are not checked: they have no
        ``sparkContext`` to run the probe with; ``None`` is returned).
    :returns: what the worker reported.
    :raises WorkerPythonError: the workers' interpreter lacks streamwire or could not run the
        task; the message names the interpreter and the fix.
    """
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext on the client
        log.info("streamwire: Spark Connect session, the workers' Python is not checked")
        return None
    configured = _configured_python(spark) or "python3"
    try:
        reports: list[dict[str, str]] = sc.parallelize([0], 1).map(_probe()).collect()
    except Exception as exc:
        first = _cause_line(exc)
        raise WorkerPythonError(
            f"streamwire: Spark could not run a Python task on the workers with the interpreter "
            f"{configured!r} (PYSPARK_PYTHON): {first}. {_FIX}",
            python=configured,
        ) from exc
    report = reports[0]
    python = report.get("python") or configured
    error = report.get("error")
    if error is not None:
        raise WorkerPythonError(
            f"streamwire: the Python that Spark runs on the workers cannot import streamwire: "
            f"{python} (Python {report.get('python_version')}; PYSPARK_PYTHON={configured!r}) "
            f"says {error}. Every streamwire read or write would fail with Spark's "
            f"DATA_SOURCE_NOT_FOUND or PYTHON_DATA_SOURCE_ERROR. {_FIX}",
            python=python,
        )
    import streamwire

    if report["streamwire"] != streamwire.__version__:
        log.warning(
            "streamwire: the workers run streamwire %s (%s), the driver %s: install the same "
            "version everywhere",
            report["streamwire"],
            python,
            streamwire.__version__,
        )
    return WorkerCheck(python, report.get("python_version", ""), report["streamwire"])
