"""Typed reads: a topic with a JSON, Avro or PROTOBUF_NATIVE schema read as the record's (the
message's) fields as columns, a KEY_VALUE topic as ``key`` and ``value`` typed per half.

On the driver, :func:`resolve_schema` finds the schema (the registry's latest, through
GET_SCHEMA on the binary protocol, or the ``valueSchema`` option) and :func:`spark_schema` the
Spark schema: the record's top-level fields (or ``key`` and ``value``), then the
message-metadata columns (``value`` left out: its fields are the columns; ``key`` too for a
KEY_VALUE topic: the key half is the key). On executors the reader decodes in Rust (each
message with the version it was written with, reshaped to the reader's schema) and
``read_arrow``'s ``value`` (and a KEY_VALUE ``key``) is a typed column;
:func:`typed_to_schema` only picks columns and children by name (no Python object per row).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from streamwire.exceptions import SchemaError
from streamwire.spark._columns import ARROW_COLUMNS
from streamwire.spark._typed import TypedSchema, parse_definition, record_fields, spark_struct
from streamwire.spark._typed_kv import field_names, from_registry, spark_columns
from streamwire.spark.config import get_option

if TYPE_CHECKING:
    from streamwire.spark.reading import ReadOptions

__all__ = [
    "discover",
    "resolve_schema",
    "schema_partitions",
    "select_output",
    "spark_schema",
    "typed_reader_columns",
    "typed_to_schema",
]


def discover(client: Any, partitions: Sequence[str]) -> Optional[TypedSchema]:
    """The schema of the topics of ``partitions`` (their registry's latest), or None when they
    have none, or one without typed columns (read as bytes then: STRING, INT32, ..., a
    KEY_VALUE of such halves). Topics with different schemas raise ``SchemaError``: one
    DataFrame has one schema."""
    parents: dict[str, str] = {}
    for p in partitions:
        parents.setdefault(p.rpartition("-partition-")[0] if "-partition-" in p else p, p)
    lookup = client.lookup()
    found: dict[str, Optional[TypedSchema]] = {}
    for parent, first in parents.items():
        found[parent] = from_registry(lookup.schema(first))
    distinct = {(s.kind, s.definition, s.properties) if s else None for s in found.values()}
    if len(distinct) > 1:
        raise SchemaError(
            "streamwire: the topics have different schemas ("
            + ", ".join(f"{t}: {s.kind if s else 'none'}" for t, s in found.items())
            + "); read them apart, or give one with the valueSchema option"
        )
    return next(iter(found.values()), None)


def schema_partitions(client: Any, topics: Sequence[str], pattern: Optional[str]) -> list[str]:
    """The partitions whose schema to look up (the first of each topic is enough: a
    partition's schema is its topic's). A pattern is resolved by the read path's resolver."""
    if pattern:
        from streamwire.spark.reading import resolve_topics

        return resolve_topics(client, topics, pattern)
    from streamwire.spark.offsets import normalize_topic

    lookup = client.lookup()
    out: list[str] = []
    for t in dict.fromkeys(normalize_topic(x) for x in topics):
        out.extend(lookup.topic_partitions(t)[:1])
    return out


def resolve_schema(
    options: Mapping[str, str], client_fn: Any, partitions_fn: Any
) -> Optional[TypedSchema]:
    """The record schema a read uses per the ``valueSchema`` option: ``auto`` (default: the
    registry's), ``none`` (bytes: the raw ``value`` column) or an Avro record definition (with
    ``valueSchemaType`` ``avro`` or ``json``, default the registry's type, else avro)."""
    text = get_option(options, "valueSchema", default="auto")
    mode = str(text).strip()
    if mode.lower() in ("none", "bytes"):
        return None
    if mode.lower() == "auto":
        return discover(client_fn(), partitions_fn())
    definition = parse_definition(mode)
    kind = get_option(options, "valueSchemaType")
    if kind is None:
        found = discover(client_fn(), partitions_fn())
        kind = found.kind if found is not None and found.is_record else "avro"
    kind = str(kind).lower()
    if kind not in ("avro", "json"):
        raise SchemaError(f"streamwire: valueSchemaType must be 'avro' or 'json', not {kind!r}")
    return TypedSchema(kind, json.dumps(definition).encode())


def _metadata(scala_names: bool, kv: bool = False) -> list[tuple[str, str, str]]:
    """(output name, reader column, Spark DDL type) of each metadata column (a KEY_VALUE
    read has no message-key column: its ``key`` is the key half)."""
    return [
        (scala if scala_names else ours, ours, t)
        for ours, scala, t in ARROW_COLUMNS
        if ours != "value" and not (kv and ours == "key")
    ]


def spark_schema(typed: TypedSchema, scala_names: bool) -> Any:
    """The ``StructType`` of a typed read: the record's fields (a KEY_VALUE topic's ``key``
    and ``value``), then the metadata columns."""
    from pyspark.sql.types import StructField, StructType

    record = spark_struct(typed.parsed) if typed.is_record else spark_columns(typed)
    meta = _metadata(scala_names, typed.kind == "key_value")
    clash = [n for n, _, _ in meta if n in record.fieldNames()]
    if clash:
        hint = "" if scala_names else " (scalaNames=true names them __key, __topic, ...)"
        raise SchemaError(
            f"streamwire: the record's field(s) {', '.join(clash)} have the name of a metadata "
            f"column{hint}"
        )
    fields = list(record.fields)
    for name, _, ddl in meta:
        fields.append(StructField(name, _ddl_type(ddl), True))
    return StructType(fields)


def _ddl_type(ddl: str) -> Any:
    from pyspark.sql import types as T

    simple = {
        "string": T.StringType(),
        "int": T.IntegerType(),
        "binary": T.BinaryType(),
        "timestamp": T.TimestampType(),
        "bigint": T.LongType(),
        "map<string,string>": T.MapType(T.StringType(), T.StringType(), True),
    }
    return simple[ddl]


def select_output(full: Any, given: Any) -> Any:
    """The columns a user-given schema selects from the full typed schema (by name, with the
    same types), or the full schema when none is given."""
    from pyspark.sql.types import StructType

    fields = getattr(given, "fields", None)
    if not fields:
        return full
    types = {f.name: f for f in full.fields}
    picked = []
    for f in fields:
        have = types.get(f.name)
        if have is None:
            raise ValueError(
                f"streamwire: no column {f.name!r} in this source; it has: "
                + ", ".join(f"{x.name} {x.dataType.simpleString()}" for x in full.fields)
            )
        if have.dataType.simpleString() != f.dataType.simpleString():
            raise ValueError(
                f"streamwire: column {f.name!r} is {have.dataType.simpleString()} in this "
                f"source, not {f.dataType.simpleString()}"
            )
        picked.append(have)
    return StructType(picked)


def typed_reader_columns(options: ReadOptions) -> list[str]:
    """The reader columns behind a typed read's output columns (positions come first)."""
    assert options.typed is not None
    kv = options.typed.kind == "key_value"
    out = ["key", "value"] if kv else ["value"]
    if options.starting_time_ms is not None or options.ending_time_ms is not None:
        out.append("publish_time")
    sources = {name: src for name, src, _ in _metadata(options.scala_names, kv)}
    for name in _output(options.typed_output or "").names:
        src = sources.get(name)
        if src is not None and src != "partition" and src not in out:
            out.append(src)
    return out


@functools.lru_cache(maxsize=16)
def _output(schema_json: str) -> Any:
    """The output schema as Spark and Arrow see it (Spark checks batches against the Arrow
    form exactly: list item names, map entry names, nullability)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    st = StructType.fromJson(json.loads(schema_json))
    return to_arrow_schema(st, timezone="UTC")


def typed_to_schema(rb: Any, partition: int, options: ReadOptions) -> Any:
    """A typed reader batch -> the output columns: record fields are children of ``value``."""
    import pyarrow as pa

    target = _output(options.typed_output or "")
    assert options.typed is not None
    kv = options.typed.kind == "key_value"
    fields = _fields(options.typed)
    sources = {name: src for name, src, _ in _metadata(options.scala_names, kv)}
    logical = _logical(options.typed)
    value = rb.column("value")
    n = rb.num_rows
    arrays = []
    for f in target:
        if kv and f.name in fields:
            col = rb.column(f.name)
        elif f.name in fields:
            col = value.field(f.name)
            if logical.get(f.name) == "timestamp-millis":
                col = col.cast(pa.timestamp("ms", tz="UTC"))
        elif sources.get(f.name) == "partition":
            col = pa.repeat(pa.scalar(partition, pa.int32()), n)
        else:
            col = rb.column(sources[f.name])
        arrays.append(col if col.type.equals(f.type) else col.cast(f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


@functools.lru_cache(maxsize=16)
def _fields(typed: TypedSchema) -> frozenset[str]:
    return frozenset(record_fields(typed.parsed) if typed.is_record else field_names(typed))


@functools.lru_cache(maxsize=16)
def _logical(typed: TypedSchema) -> dict[str, str]:
    from streamwire.spark._typed import top_level_logical

    return top_level_logical(typed.parsed) if typed.is_record else {}
