"""Typed columns for PROTOBUF_NATIVE and KEY_VALUE topics (the JSON / Avro ones are in
:mod:`streamwire.spark._typed`). No JVM, no connection: the engine codec is built from the
registry's schema data, and the columns are the Arrow types the engine's typed reads give
(``SchemaCodec.arrow_type``), so the driver's Spark schema and the executors' batches agree
by construction.

* PROTOBUF_NATIVE: the root message's fields are the columns (nested messages structs,
  repeated fields arrays, ``map<string, V>`` maps — other key types arrays of
  ``struct<key, value>`` —, enums their value names, uint64 as bigint holding the same bits,
  a message inside itself its serialized bytes).
* KEY_VALUE: ``key`` and ``value`` columns, each a struct for a record or message half, a
  string for a STRING half, binary for BYTES; a SEPARATED topic's key half is the message
  key. Other half types (INT32, ...) have no typed read: such topics read as bytes.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Sequence
from typing import Any

from streamwire.exceptions import SchemaError

__all__ = [
    "KINDS",
    "check_fits_native",
    "field_names",
    "from_registry",
    "native_codec",
    "spark_columns",
]

# Registry type name -> TypedSchema.kind.
KINDS = {
    "AVRO": "avro",
    "JSON": "json",
    "PROTOBUF_NATIVE": "protobuf_native",
    "KEY_VALUE": "key_value",
}
_HALVES = ("AVRO", "JSON", "PROTOBUF_NATIVE", "STRING", "BYTES")


def from_registry(got: Any) -> Any:
    """The TypedSchema of a ``Lookup.schema`` answer, or None when it has no typed columns."""
    from streamwire.spark._typed import TypedSchema

    if got is None or got[0] not in KINDS:
        return None
    props = tuple((str(k), str(v)) for k, v in got[2])
    if got[0] == "KEY_VALUE":
        p = dict(props)
        if any(p.get(f"{h}.schema.type", "BYTES") not in _HALVES for h in ("key", "value")):
            return None
    return TypedSchema(KINDS[got[0]], bytes(got[1]), props)


def _split(data: bytes) -> tuple[bytes, bytes]:
    """The key and value schema data of KEY_VALUE schema data (``[i32 BE len][bytes]`` x 2)."""
    out = []
    at = 0
    for _ in range(2):
        if at + 4 > len(data):
            raise SchemaError("streamwire: KEY_VALUE schema data is truncated")
        (n,) = struct.unpack_from(">i", data, at)
        at += 4
        n = max(n, 0)
        out.append(data[at : at + n])
        at += n
    return out[0], out[1]


def _half(kind: str, name: str, data: bytes, props_json: str) -> Any:
    from streamwire import _native

    try:
        loaded = json.loads(props_json) if props_json else {}
    except ValueError:
        loaded = {}
    props = [(str(k), str(v)) for k, v in loaded.items()] if isinstance(loaded, dict) else []
    if kind in ("AVRO", "JSON"):
        return _native.SchemaCodec(kind.lower(), name, data, properties=props)
    if kind == "PROTOBUF_NATIVE":
        return _native.SchemaCodec.protobuf_native(data, None, name, props)
    if kind in ("STRING", "BYTES"):
        return _native.SchemaCodec(kind.lower(), name, properties=props)
    raise SchemaError(f"streamwire: a {kind} half of a KEY_VALUE schema has no typed columns")


def native_codec(typed: Any) -> Any:
    """The engine codec of a PROTOBUF_NATIVE or KEY_VALUE TypedSchema."""
    return _codec(typed.kind, typed.definition, typed.properties)


@functools.lru_cache(maxsize=16)
def _codec(kind: str, definition: bytes, properties: tuple[tuple[str, str], ...]) -> Any:
    from streamwire import _native

    p = dict(properties)
    if kind == "protobuf_native":
        return _native.SchemaCodec.protobuf_native(definition, None, "", list(properties))
    if kind != "key_value":
        raise SchemaError(f"streamwire: no typed columns for a {kind} schema")
    kd, vd = _split(definition)
    key = _half(
        p.get("key.schema.type", "BYTES"),
        p.get("key.schema.name", ""),
        kd,
        p.get("key.schema.properties", ""),
    )
    value = _half(
        p.get("value.schema.type", "BYTES"),
        p.get("value.schema.name", ""),
        vd,
        p.get("value.schema.properties", ""),
    )
    separated = p.get("kv.encoding.type") == "SEPARATED"
    return _native.SchemaCodec("key_value", "KeyValue", key=key, value=value, separated=separated)


def _nullable(dt: Any) -> Any:
    """``dt`` with every nested field, item and map value nullable (as Spark columns are)."""
    from pyspark.sql import types as T

    if isinstance(dt, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType), True) for f in dt.fields])
    if isinstance(dt, T.ArrayType):
        return T.ArrayType(_nullable(dt.elementType), True)
    if isinstance(dt, T.MapType):
        return T.MapType(dt.keyType, _nullable(dt.valueType), True)
    return dt


def _spark_type(arrow_type: Any) -> Any:
    from pyspark.sql.pandas.types import from_arrow_type

    return _nullable(from_arrow_type(arrow_type))


def spark_columns(typed: Any) -> Any:
    """The ``StructType`` of the typed columns (message fields, or ``key`` and ``value``)."""
    from pyspark.sql.types import StructField, StructType

    codec = native_codec(typed)
    if typed.kind == "key_value":
        return StructType(
            [
                StructField("key", _spark_type(codec.arrow_type("key")), True),
                StructField("value", _spark_type(codec.arrow_type("value")), True),
            ]
        )
    out = _spark_type(codec.arrow_type())
    assert isinstance(out, StructType)
    return out


@functools.lru_cache(maxsize=16)
def field_names(typed: Any) -> tuple[str, ...]:
    """The typed columns' names (what a write takes as the record's columns)."""
    if typed.kind == "key_value":
        return ("key", "value")
    return tuple(str(f.name) for f in native_codec(typed).arrow_type())


def check_fits_native(typed: Any, fields: Sequence[Any]) -> None:
    """Raise ``SchemaError`` when Spark ``fields`` cannot be written with ``typed``: the
    engine encodes a batch of no rows of the DataFrame's Arrow form, which checks every
    column's name and type as the executors' batches will be (on the driver: a misfit fails
    the job before any task sends a row)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    if typed.kind == "key_value" and not any(f.name == "value" for f in fields):
        raise SchemaError(
            "streamwire: the topic's schema is KEY_VALUE: write a 'value' column (and a 'key' "
            "column), each typed as its half (a struct for a record or protobuf half)"
        )
    if not fields:
        raise SchemaError("streamwire: the DataFrame has no columns to write as the message")
    try:
        schema = to_arrow_schema(StructType(list(fields)), timezone="UTC")
    except Exception as e:  # an unsupported Spark type (Arrow has no form for it)
        raise SchemaError(f"streamwire: the DataFrame's columns have no Arrow form: {e}") from None
    empty = pa.RecordBatch.from_pylist([], schema=schema)
    native_codec(typed).encode_arrow(empty)
