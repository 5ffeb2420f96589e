"""streamwire for PySpark: a Python Data Source (``format("streamwire")``) and executor helpers.

Importing this package starts no thread, runtime or connection (Spark imports packages in
processes that later fork). The Data Source classes import pyspark, so they load lazily.

Usage::

    import streamwire.spark
    streamwire.spark.register(spark)
    df = spark.read.format("streamwire").option("service_url", url).option("topic", t).load()
    df.write.format("streamwire").option("service_url", url).option("topic", t).save()

    cfg = streamwire.spark.ClientConfig(url)
    df.mapInArrow(streamwire.spark.produce_arrow(cfg, t), streamwire.spark.COUNTS_SCHEMA)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from streamwire.spark.config import ClientConfig

if TYPE_CHECKING:
    from streamwire.spark.datasource import StreamwireDataSource
    from streamwire.spark.executor import (
        COUNTS_SCHEMA,
        plan_ranges,
        produce_arrow,
        produce_partition,
        range_rows,
        read_ranges_arrow,
    )
    from streamwire.spark.offsets import RangeSpec
    from streamwire.spark.reading import spark_schema_ddl
    from streamwire.spark.workers import WorkerCheck, check_workers

# Loaded on first access: Spark imports this package in planner workers that need none of it.
_LAZY = {
    "COUNTS_SCHEMA": "streamwire.spark.executor",
    "plan_ranges": "streamwire.spark.executor",
    "produce_arrow": "streamwire.spark.executor",
    "produce_partition": "streamwire.spark.executor",
    "range_rows": "streamwire.spark.executor",
    "read_ranges_arrow": "streamwire.spark.executor",
    "RangeSpec": "streamwire.spark.offsets",
    "spark_schema_ddl": "streamwire.spark._columns",
    "StreamwireDataSource": "streamwire.spark.datasource",
    "WorkerCheck": "streamwire.spark.workers",
    "check_workers": "streamwire.spark.workers",
    "DefaultSource": "streamwire.spark.datasource",
}

__all__ = [
    "COUNTS_SCHEMA",
    "ClientConfig",
    "RangeSpec",
    "StreamwireDataSource",
    "WorkerCheck",
    "check_workers",
    "plan_ranges",
    "produce_arrow",
    "produce_partition",
    "range_rows",
    "read_ranges_arrow",
    "register",
    "spark_schema_ddl",
]


def register(spark: Any, *, check_workers: bool = True) -> None:
    """Register the ``streamwire`` Data Source short name on a SparkSession.

    :param spark: the SparkSession.
    :param check_workers: first run one one-row task that checks the workers' Python can import
        streamwire; raises :class:`~streamwire.exceptions.WorkerPythonError` naming that
        interpreter and the fix if not (Spark's own error would be ``DATA_SOURCE_NOT_FOUND``).
        ``False`` skips it (one short job fewer).
    """
    from streamwire.spark.datasource import register as _register

    _register(spark, check_workers=check_workers)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'streamwire.spark' has no attribute {name!r}")
    attr = "StreamwireDataSource" if name == "DefaultSource" else name
    return getattr(import_module(module), attr)
