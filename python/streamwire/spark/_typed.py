"""Typed columns for a Pulsar topic with a JSON or Avro schema: the Spark type of an Avro record
definition (reads) and the Avro record definition of a Spark schema (writes). Pure: no engine,
no JVM, no connection (:mod:`streamwire.spark.reading` / ``writing`` do the I/O).

Type mapping (both ways)::

    Avro                      Spark
    boolean                   boolean
    int                       int        (byte and short columns are written as int)
    long                      bigint
    float / double            float / double
    string, enum              string     (an enum reads as its symbol)
    bytes, fixed              binary
    record                    struct<...>
    array                     array<...>
    map                       map<string, ...>
    ["null", X]               X (nullable)
    long timestamp-millis     timestamp  (top-level fields; nested ones read as bigint)
    long timestamp-micros     timestamp  (a Spark timestamp column is written as this)
    int date                  date       (a Spark date column is written as this)

Other logical types, and those of nested fields, read as their underlying type (the engine
decodes them so). Other unions, and records that contain themselves, have no Spark type and
raise :class:`SchemaError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from streamwire.exceptions import SchemaError

__all__ = [
    "METADATA_COLUMNS",
    "TypedSchema",
    "avro_from_spark",
    "record_fields",
    "spark_struct",
]

# The message-metadata columns a typed read adds after the record's fields (value excluded:
# its fields are the record columns), and the columns a typed write takes as metadata.
METADATA_COLUMNS: tuple[str, ...] = (
    "key",
    "topic",
    "partition",
    "message_id",
    "publish_time",
    "event_time",
    "properties",
    "producer_name",
    "sequence_id",
)
WRITE_METADATA: tuple[str, ...] = (
    "key",
    "__key",
    "topic",
    "__topic",
    "properties",
    "__messageProperties",
    "event_time",
    "__eventTime",
)


@dataclass(frozen=True)
class TypedSchema:
    """A schema a typed read or write uses (picklable): ``kind`` is ``"avro"``, ``"json"``,
    ``"protobuf_native"`` or ``"key_value"``, ``definition`` the registry's schema data, kept
    as it is (the reader subscribes with it: the same bytes are the same registry version),
    ``properties`` the registry's properties (a key/value schema's halves are named there)."""

    kind: str
    definition: bytes
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def is_record(self) -> bool:
        """An Avro record definition (JSON or Avro): the columns come from ``parsed``."""
        return self.kind in ("avro", "json")

    @property
    def parsed(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.definition)
        return value

    def codec(self) -> Any:
        """The engine codec (``schema=`` of a producer or reader)."""
        from streamwire import _native

        if not self.is_record:
            from streamwire.spark._typed_kv import native_codec

            return native_codec(self)
        return _native.SchemaCodec(self.kind, self.kind.upper(), self.definition)

    @property
    def _codec(self) -> Any:
        # What ``schema=`` reads from a schema object: producers cached by their options keep
        # this (hashable) object in their key and get the codec when they are created.
        return self.codec()


def parse_definition(text: Any) -> dict[str, Any]:
    """An Avro record definition from option text; ``SchemaError`` if it is none."""
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) else text
    except ValueError as e:
        raise SchemaError(f"streamwire: valueSchema is not JSON: {e}") from None
    if not isinstance(value, Mapping) or value.get("type") != "record":
        raise SchemaError(
            "streamwire: valueSchema must be 'auto', 'none' or an Avro record definition "
            '(JSON with "type": "record")'
        )
    return dict(value)


def record_fields(definition: Mapping[str, Any]) -> list[str]:
    """The top-level field names of a record definition."""
    return [str(f["name"]) for f in definition.get("fields", [])]


# -- Avro -> Spark -------------------------------------------------------------------------------


def spark_struct(definition: Mapping[str, Any]) -> Any:
    """The ``StructType`` of a record definition's top-level fields (all nullable)."""
    from pyspark.sql.types import StructField, StructType

    if definition.get("type") != "record":
        raise SchemaError("streamwire: the topic's schema is not a record")
    named: dict[str, Any] = {}
    out = _record_type(definition, _namespace(definition, ""), named, set())
    logical = top_level_logical(definition)
    return StructType(
        [
            StructField(f.name, _logical_spark(logical.get(f.name), f.dataType), True)
            for f in out.fields
        ]
    )


def top_level_logical(definition: Mapping[str, Any]) -> dict[str, str]:
    """Top-level field name -> its logical type, for the ones Spark has a type for
    (``timestamp-millis``, ``timestamp-micros`` on ``long``; ``date`` on ``int``)."""
    out: dict[str, str] = {}
    for f in definition.get("fields", []):
        _, t = _nullable(f["type"])
        if isinstance(t, Mapping):
            lt = t.get("logicalType")
            if (t.get("type"), lt) in (
                ("long", "timestamp-millis"),
                ("long", "timestamp-micros"),
                ("int", "date"),
            ):
                out[str(f["name"])] = str(lt)
    return out


def _logical_spark(logical: Optional[str], dt: Any) -> Any:
    from pyspark.sql import types as T

    if logical in ("timestamp-millis", "timestamp-micros"):
        return T.TimestampType()
    if logical == "date":
        return T.DateType()
    return dt


def _namespace(d: Mapping[str, Any], enclosing: str) -> str:
    name = str(d.get("name", ""))
    if "." in name:
        return name.rsplit(".", 1)[0]
    return str(d.get("namespace", enclosing) or "")


def _full(d: Mapping[str, Any], ns: str) -> str:
    name = str(d.get("name", ""))
    return name if "." in name or not ns else f"{ns}.{name}"


def _record_type(d: Mapping[str, Any], ns: str, named: dict[str, Any], active: set[str]) -> Any:
    from pyspark.sql.types import StructField, StructType

    full = _full(d, ns)
    if full in active:
        raise SchemaError(f"streamwire: record {full} contains itself; it has no Spark type")
    active.add(full)
    named[full] = ("record", d, ns)  # before the fields: a self-reference finds it active
    fields = []
    for f in d.get("fields", []):
        fields.append(StructField(str(f["name"]), _spark(f["type"], ns, named, active), True))
    active.discard(full)
    return StructType(fields)


_PRIMITIVE_SPARK = {
    "boolean": "BooleanType",
    "int": "IntegerType",
    "long": "LongType",
    "float": "FloatType",
    "double": "DoubleType",
    "string": "StringType",
    "bytes": "BinaryType",
}


def _spark(t: Any, ns: str, named: dict[str, Any], active: set[str]) -> Any:
    from pyspark.sql import types as T

    if isinstance(t, str):
        if t in _PRIMITIVE_SPARK:
            return getattr(T, _PRIMITIVE_SPARK[t])()
        if t == "null":
            return T.NullType()
        full = t if "." in t or not ns else f"{ns}.{t}"
        ref = named.get(full) or named.get(t)
        if ref is None:
            raise SchemaError(f"streamwire: unknown type name {t!r} in the schema")
        kind, d, rns = ref
        if kind == "record":
            return _record_type(d, rns, named, active)
        return T.StringType() if kind == "enum" else T.BinaryType()
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) == 1 and len(t) == 2:
            return _spark(rest[0], ns, named, active)
        raise SchemaError(
            f"streamwire: the union {json.dumps(t)} has no Spark type (only [null, X] does)"
        )
    if isinstance(t, Mapping):
        kind = t.get("type")
        if kind == "record":
            return _record_type(t, _namespace(t, ns), named, active)
        if kind == "enum":
            named[_full(t, _namespace(t, ns))] = ("enum", t, ns)
            return T.StringType()
        if kind == "fixed":
            named[_full(t, _namespace(t, ns))] = ("fixed", t, ns)
            return T.BinaryType()
        if kind == "array":
            return T.ArrayType(_spark(t["items"], ns, named, active), True)
        if kind == "map":
            return T.MapType(T.StringType(), _spark(t["values"], ns, named, active), True)
        return _spark(kind, ns, named, active)  # {"type": "long", "logicalType": ...}
    raise SchemaError(f"streamwire: no Spark type for {t!r}")


# -- Spark -> Avro -------------------------------------------------------------------------------


def avro_from_spark(
    fields: Sequence[Any], name: str = "Record", namespace: Optional[str] = None
) -> dict[str, Any]:
    """The Avro record definition of Spark ``StructField``s: nullable fields are
    ``["null", X]`` with default null (so a later version may drop them), nested structs are
    records named ``<Parent>_<field>``."""
    out: dict[str, Any] = {"type": "record", "name": name}
    if namespace:
        out["namespace"] = namespace
    out["fields"] = [_avro_field(f, name) for f in fields]
    return out


def _avro_field(f: Any, parent: str) -> dict[str, Any]:
    t = _avro(f.dataType, f"{parent}_{f.name}", f"{parent}.{f.name}")
    if f.nullable:
        return {"name": f.name, "type": ["null", t], "default": None}
    return {"name": f.name, "type": t}


def _avro(dt: Any, record_name: str, where: str) -> Any:
    from pyspark.sql import types as T

    simple = {
        T.BooleanType: "boolean",
        T.ByteType: "int",
        T.ShortType: "int",
        T.IntegerType: "int",
        T.LongType: "long",
        T.FloatType: "float",
        T.DoubleType: "double",
        T.StringType: "string",
        T.BinaryType: "bytes",
    }
    for cls, name in simple.items():
        if isinstance(dt, cls):
            return name
    if isinstance(dt, T.TimestampType) or isinstance(dt, T.TimestampNTZType):
        return {"type": "long", "logicalType": "timestamp-micros"}
    if isinstance(dt, T.DateType):
        return {"type": "int", "logicalType": "date"}
    if isinstance(dt, T.StructType):
        return {
            "type": "record",
            "name": record_name,
            "fields": [_avro_field(f, record_name) for f in dt.fields],
        }
    if isinstance(dt, T.ArrayType):
        item = _avro(dt.elementType, record_name, f"{where}[]")
        return {"type": "array", "items": ["null", item] if dt.containsNull else item}
    if isinstance(dt, T.MapType):
        if not isinstance(dt.keyType, T.StringType):
            raise SchemaError(f"streamwire: {where}: Avro map keys are strings, not {dt.keyType}")
        v = _avro(dt.valueType, record_name, f"{where}{{}}")
        return {"type": "map", "values": ["null", v] if dt.valueContainsNull else v}
    raise SchemaError(
        f"streamwire: {where}: no Avro type for Spark {dt.simpleString()} "
        "(cast it to a supported type: boolean, int, bigint, float, double, string, binary, "
        "timestamp, date, struct, array, map<string, ...>)"
    )


# -- checking a DataFrame against a record definition (on the driver) ---------------------------


def check_fits(fields: Sequence[Any], definition: Mapping[str, Any]) -> None:
    """Raise ``SchemaError`` when Spark ``fields`` cannot be written as ``definition``: a column
    that is no field, a non-nullable field without a column, or a type that does not convert.
    Checked on the driver, so a misfit fails the job before any task sends a row."""
    ns = _namespace(definition, "")
    named: dict[str, Any] = {}
    _collect_named(definition, ns, named)
    _check_record(fields, definition, ns, named, str(definition.get("name", "record")))


def _collect_named(t: Any, ns: str, named: dict[str, Any]) -> None:
    if isinstance(t, list):
        for x in t:
            _collect_named(x, ns, named)
    elif isinstance(t, Mapping):
        kind = t.get("type")
        if kind in ("record", "enum", "fixed"):
            tns = _namespace(t, ns)
            named[_full(t, tns)] = t
            named.setdefault(str(t.get("name")), t)
            for f in t.get("fields", []) if kind == "record" else []:
                _collect_named(f["type"], tns, named)
        elif kind == "array":
            _collect_named(t["items"], ns, named)
        elif kind == "map":
            _collect_named(t["values"], ns, named)


def _resolve(t: Any, ns: str, named: Mapping[str, Any]) -> Any:
    if isinstance(t, str) and t not in _PRIMITIVE_SPARK and t != "null":
        return named.get(t if "." in t or not ns else f"{ns}.{t}") or named.get(t) or t
    return t


def _nullable(t: Any) -> tuple[bool, Any]:
    if isinstance(t, list):
        rest = [x for x in t if x != "null"]
        if len(rest) == 1:
            return len(rest) != len(t), rest[0]
    return False, t


def _check_record(
    fields: Sequence[Any], d: Mapping[str, Any], ns: str, named: Mapping[str, Any], where: str
) -> None:
    by_name = {str(f["name"]): f for f in d.get("fields", [])}
    given = {f.name: f for f in fields}
    for name in given:
        if name not in by_name:
            raise SchemaError(
                f"streamwire: column {where}.{name} is not a field of the topic's record "
                f"{d.get('name')} (its fields: {', '.join(by_name)})"
            )
    for name, f in by_name.items():
        nullable, t = _nullable(f["type"])
        if name not in given:
            if not nullable and "default" not in f:
                raise SchemaError(
                    f"streamwire: the DataFrame has no column {where}.{name}, and the topic's "
                    "schema does not let it be null"
                )
            continue
        _check_type(given[name].dataType, t, ns, named, f"{where}.{name}")


def _check_type(dt: Any, t: Any, ns: str, named: Mapping[str, Any], where: str) -> None:
    from pyspark.sql import types as T

    t = _resolve(t, ns, named)
    _, t = _nullable(t)
    t = _resolve(t, ns, named)
    kind = t.get("type") if isinstance(t, Mapping) else t
    if isinstance(t, list):
        raise SchemaError(f"streamwire: {where}: the schema's union has no column type")
    ints = (T.ByteType, T.ShortType, T.IntegerType, T.DateType)
    longs = (*ints, T.LongType, T.TimestampType, T.TimestampNTZType)
    ok: bool
    if kind == "boolean":
        ok = isinstance(dt, T.BooleanType)
    elif kind == "int":
        ok = isinstance(dt, (*ints, T.LongType))  # a long must fit (checked per row)
    elif kind == "long":
        ok = isinstance(dt, longs)
    elif kind in ("float", "double"):
        ok = isinstance(dt, (*longs, T.FloatType, T.DoubleType))
    elif kind in ("string", "enum"):
        ok = isinstance(dt, T.StringType)
    elif kind in ("bytes", "fixed"):
        ok = isinstance(dt, (T.BinaryType, T.StringType))
    elif kind == "record":
        if not isinstance(dt, T.StructType):
            ok = False
        else:
            _check_record(dt.fields, t, _namespace(t, ns), named, where)
            ok = True
    elif kind == "array":
        ok = isinstance(dt, T.ArrayType)
        if ok:
            _check_type(dt.elementType, t["items"], ns, named, f"{where}[]")
    elif kind == "map":
        ok = isinstance(dt, T.MapType) and isinstance(dt.keyType, T.StringType)
        if ok:
            _check_type(dt.valueType, t["values"], ns, named, f"{where}{{}}")
    else:
        ok = False
    if not ok:
        raise SchemaError(
            f"streamwire: column {where} is {dt.simpleString()}, which does not fit the topic's "
            f"schema type {json.dumps(t) if not isinstance(t, str) else t}"
        )
