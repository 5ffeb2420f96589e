"""The SparkSession every Spark bench starts: no UI, no console progress bar, the driver on
loopback, logging at ERROR; the bench adds its own master, app name and settings.

One definition so that a bench's figures differ from another's only by what the bench says
it changes (``conf``), not by a setting one of them forgot.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["spark_session"]

#: What every bench session has.
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}


def spark_session(
    master: str = "local[2]",
    app: Optional[str] = None,
    *,
    shuffle_partitions: Optional[int] = 2,
    conf: Optional[dict[str, str]] = None,
) -> Any:
    """A started SparkSession (``getOrCreate``) at log level ERROR.

    Args:
        master: the Spark master. Default ``local[2]``.
        app: the application name. Default None: Spark's.
        shuffle_partitions: ``spark.sql.shuffle.partitions``; None: Spark's default (200).
        conf: more settings, applied last (they override the base ones).
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master)
    if app is not None:
        builder = builder.appName(app)
    settings = dict(BASE_CONF)
    if shuffle_partitions is not None:
        settings["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
