"""PySpark finds the Data Source by its short name with no ``register()`` call.

Runs in a fresh interpreter: the session fixture of the other tests registers the source
explicitly, which would hide a broken discovery.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_format_streamwire_is_discovered(lite_broker: Any, unique_topic: str) -> None:
    code = textwrap.dedent(
        f"""
        import os, sys
        os.environ["PYSPARK_PYTHON"] = sys.executable
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]")
                 .config("spark.ui.enabled", "false")
                 .config("spark.driver.bindAddress", "127.0.0.1")
                 .config("spark.driver.host", "127.0.0.1")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        df = spark.createDataFrame([(b"a",), (b"b",), (b"c",)], "value binary")
        (df.write.format("streamwire").option("service_url", {lite_broker.service_url!r})
           .option("topic", {unique_topic!r}).mode("append").save())
        n = (spark.read.format("streamwire").option("service_url", {lite_broker.service_url!r})
             .option("topic", {unique_topic!r}).load().count())
        print("rows", n)
        spark.stop()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "rows 3" in out.stdout
