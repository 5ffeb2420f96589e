"""Lets PySpark find the streamwire Data Source without registration.

PySpark discovers Python data sources in installed top-level ``pyspark_*`` modules that expose
a ``DefaultSource``; with this, ``spark.read.format("streamwire")`` works out of the box.
Importing it imports nothing heavy: ``streamwire.spark.datasource`` starts no thread or
connection at import.
"""

from streamwire.spark.datasource import StreamwireDataSource as DefaultSource

__all__ = ["DefaultSource"]
