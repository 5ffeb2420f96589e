"""The Pulsar Data Source's columns and its Spark schema string, with no engine import.

Why a module of its own: ``DataSource.schema()`` runs in a Spark planner worker that never reads
a message, so it should not pay for importing the read path (``reading`` and the engine).
"""

from __future__ import annotations

__all__ = ["ARROW_COLUMNS", "column_names", "spark_schema_ddl"]

# (column, Scala-connector name, Spark DDL type)
ARROW_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("value", "value", "binary"),
    ("key", "__key", "string"),
    ("topic", "__topic", "string"),
    ("partition", "partition", "int"),
    ("message_id", "__messageId", "binary"),
    ("publish_time", "__publishTime", "timestamp"),
    ("event_time", "__eventTime", "timestamp"),
    ("properties", "__messageProperties", "map<string,string>"),
    ("producer_name", "producer_name", "string"),
    ("sequence_id", "sequence_id", "bigint"),
)


def column_names(scala_names: bool) -> list[str]:
    return [scala if scala_names else ours for ours, scala, _ in ARROW_COLUMNS]


def spark_schema_ddl(scala_names: bool = False) -> str:
    names = column_names(scala_names)
    return ", ".join(f"`{n}` {t}" for n, (_, _, t) in zip(names, ARROW_COLUMNS))
