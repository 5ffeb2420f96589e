"""Per-phase timers for the cold-start breakdown of the Spark Data Source (off by default).

Why: the first Data Source call of a Spark job runs in several short-lived Python processes
(planner workers on the driver, task workers on executors), so a profiler in one process sees
only a slice. With ``STREAMWIRE_SPARK_TIMING=<file>`` in the environment (Spark passes it on to
every Python worker it starts), each timed phase appends one JSON line ``{"pid", "phase",
"start", "seconds", "age"}`` to that file (``age``: seconds since the process started, which
shows how long the worker took to reach our code). ``benches/spark_cold.py`` reads the file.
Unset, :func:`phase` is a no-op context manager and :func:`mark` returns at once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

__all__ = ["enabled", "mark", "mark_import", "phase", "process_age"]

_ENV = "STREAMWIRE_SPARK_TIMING"
# When this module was imported: the Data Source imports it first among our Spark modules.
_LOADED = (time.time(), time.perf_counter())


def enabled() -> bool:
    return bool(os.environ.get(_ENV))


def process_age() -> Optional[float]:
    """Seconds since this process started (Linux /proc; None elsewhere)."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22 of stat(5), counted after "pid (comm)"
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def mark(name: str, start: float, seconds: float) -> None:
    """Record a phase that began at ``start`` (``time.time()``) and lasted ``seconds``."""
    path = os.environ.get(_ENV)
    if not path:
        return
    record = {
        "pid": os.getpid(),
        "phase": name,
        "start": start,
        "seconds": seconds,
        "age": process_age(),
    }
    # One short O_APPEND write per line: lines from concurrent processes do not interleave.
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def mark_import(name: str) -> None:
    """Record the import of our Spark modules, from this module's import until now."""
    mark(name, _LOADED[0], time.perf_counter() - _LOADED[1])


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as ``name`` when timing is enabled."""
    if not os.environ.get(_ENV):
        yield
        return
    start = time.time()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        mark(name, start, time.perf_counter() - t0)
