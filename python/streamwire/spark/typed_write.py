"""Typed writes: DataFrame columns encoded as the records of a JSON or Avro schema, the
messages of a PROTOBUF_NATIVE schema, or the ``key`` and ``value`` halves of a KEY_VALUE one.

On the driver, :func:`resolve_write_schema` picks the record schema (``valueSchema``: by
default the topic's own in the registry, else one derived from the DataFrame's Spark schema)
and checks that the DataFrame's columns fit it, so a misfit fails the job before any task
sends a row. On executors each Arrow batch's record columns go to ``send_many`` as one
``pyarrow.RecordBatch``: the engine reads the columns and encodes every row in Rust, and the
producer registers the schema with the topic (the broker may refuse it:
``IncompatibleSchemaError``, before anything is sent).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from streamwire.exceptions import SchemaError
from streamwire.spark._typed import (
    WRITE_METADATA,
    TypedSchema,
    avro_from_spark,
    check_fits,
    parse_definition,
    record_fields,
)
from streamwire.spark._typed_kv import check_fits_native, field_names, from_registry
from streamwire.spark.config import get_option

__all__ = ["record_batch", "resolve_write_schema"]

_KINDS = {"AVRO": "avro", "JSON": "json"}


def _is_raw(fields: Sequence[Any]) -> bool:
    """A DataFrame with a binary or string ``value`` column writes raw payloads (as always)."""
    from pyspark.sql.types import BinaryType, StringType

    for f in fields:
        if f.name == "value" and isinstance(f.dataType, (BinaryType, StringType)):
            return True
    return False


def resolve_write_schema(
    options: Mapping[str, str], spark_fields: Sequence[Any], registry: Callable[[], Any]
) -> Optional[TypedSchema]:
    """The record schema of a write, or None for a raw (``value`` column) write.

    ``registry()`` gives the topic's ``Lookup.schema`` answer (called only when needed)."""
    text = str(get_option(options, "valueSchema", default="auto")).strip()
    if text.lower() in ("none", "bytes"):
        return None
    explicit = text.lower() != "auto"
    if not explicit and _is_raw(spark_fields):
        # A raw value column stays raw, except on a KEY_VALUE topic whose value half is
        # STRING or BYTES: there it is that half (raw bytes would not be key/value data).
        if not any(f.name == "key" for f in spark_fields):
            return None
        kv = from_registry(registry())
        if kv is None or kv.kind != "key_value":
            return None
        return _native_fit(kv, spark_fields)
    record = [f for f in spark_fields if f.name not in WRITE_METADATA]
    kind_opt = get_option(options, "valueSchemaType")
    found = None
    if explicit:
        definition = parse_definition(text)
        if kind_opt is None:
            found = registry()
    else:
        found = registry()
        native = from_registry(found)
        if native is not None and not native.is_record:
            return _native_fit(native, spark_fields)
        if found is not None and _KINDS.get(found[0]):
            definition = json.loads(bytes(found[1]))
            # Columns named like metadata that are fields of the topic's record are fields.
            names = set(record_fields(definition))
            record = [f for f in spark_fields if f.name in names or f.name not in WRITE_METADATA]
            check_fits(record, definition)
            return TypedSchema(_KINDS[found[0]], bytes(found[1]))
        if found is not None and kind_opt is None:
            raise SchemaError(
                f"streamwire: the topic's schema is {found[0]}, not a record: write a 'value' "
                "column, or set valueSchema to a record definition"
            )
        if not record:
            raise SchemaError("streamwire: the DataFrame has no record columns to write")
        name = str(get_option(options, "valueSchemaName", default="Record"))
        ns, _, local = name.rpartition(".")
        definition = avro_from_spark(record, local, ns or None)
    names = set(record_fields(definition))
    record = [f for f in spark_fields if f.name in names or f.name not in WRITE_METADATA]
    check_fits(record, definition)
    kind = kind_opt or (_KINDS.get(found[0]) if found is not None else None) or "avro"
    kind = str(kind).lower()
    if kind not in ("avro", "json"):
        raise SchemaError(f"streamwire: valueSchemaType must be 'avro' or 'json', not {kind!r}")
    return TypedSchema(kind, json.dumps(definition).encode())


def _native_fit(typed: TypedSchema, spark_fields: Sequence[Any]) -> TypedSchema:
    """``typed`` (PROTOBUF_NATIVE or KEY_VALUE) once the DataFrame's columns fit it: the
    message's fields (columns named like metadata that are fields count as fields), or
    ``key`` and ``value``."""
    names = set(field_names(typed))
    cols = [f for f in spark_fields if f.name in names or f.name not in WRITE_METADATA]
    check_fits_native(typed, cols)
    return typed


def record_batch(batch: Any, typed: TypedSchema) -> tuple[Any, Any]:
    """(the record columns, the metadata columns) of an Arrow batch.

    Top-level timestamp columns become the integer unit of their field's logical type
    (``timestamp-millis`` or ``-micros``; micros otherwise), dates their day number."""
    import pyarrow as pa

    if not typed.is_record:
        names = set(field_names(typed))
        rec_names = [n for n in batch.schema.names if n in names or n not in WRITE_METADATA]
        rest = [n for n in batch.schema.names if n not in rec_names]
        return batch.select(rec_names), batch.select(rest)
    fields = _fields(typed)
    rec_names = [n for n in batch.schema.names if n in fields]
    meta_names = [n for n in batch.schema.names if n not in fields]
    arrays = []
    for n in rec_names:
        col = batch.column(n)
        if pa.types.is_timestamp(col.type):
            unit = "ms" if fields[n] == "timestamp-millis" else "us"
            col = col.cast(pa.timestamp(unit, col.type.tz)).cast(pa.int64())
        arrays.append(col)
    rec = pa.RecordBatch.from_arrays(arrays, names=rec_names)
    return rec, batch.select(meta_names)


_FIELDS: dict[TypedSchema, dict[str, Optional[str]]] = {}


def _fields(typed: TypedSchema) -> dict[str, Optional[str]]:
    """Field name -> its logical type (or None), per schema (cached: once per task)."""
    got = _FIELDS.get(typed)
    if got is None:
        got = {}
        for f in typed.parsed.get("fields", []):
            t = f["type"]
            if isinstance(t, list):
                t = next((x for x in t if x != "null"), t)
            got[str(f["name"])] = t.get("logicalType") if isinstance(t, dict) else None
        _FIELDS[typed] = got
    return got
