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

from typing import Any

from streamwire.spark.config import ClientConfig
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

__all__ = [
    "COUNTS_SCHEMA",
    "ClientConfig",
    "RangeSpec",
    "StreamwireDataSource",
    "plan_ranges",
    "produce_arrow",
    "produce_partition",
    "range_rows",
    "read_ranges_arrow",
    "register",
    "spark_schema_ddl",
]


def register(spark: Any) -> None:
    """Register the ``streamwire`` Data Source short name on a SparkSession."""
    from streamwire.spark.datasource import register as _register

    _register(spark)


def __getattr__(name: str) -> Any:
    if name in ("StreamwireDataSource", "DefaultSource"):
        from streamwire.spark.datasource import StreamwireDataSource

        return StreamwireDataSource
    raise AttributeError(f"module 'streamwire.spark' has no attribute {name!r}")
