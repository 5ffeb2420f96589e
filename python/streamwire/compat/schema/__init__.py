"""``pulsar.schema`` for :mod:`streamwire.compat`: the ``Record`` / ``Field`` DSL and the
schema classes of the official client (``import streamwire.compat as pulsar`` gives them as
``pulsar.schema.*``)."""

from __future__ import annotations

from streamwire.compat.schema.definition import (
    Array,
    Boolean,
    Bytes,
    CustomEnum,
    Double,
    Field,
    Float,
    Integer,
    Long,
    Map,
    Null,
    Record,
    String,
)
from streamwire.compat.schema.schema import (
    AvroSchema,
    BytesSchema,
    JsonSchema,
    Schema,
    StringSchema,
)

__all__ = [
    "Array",
    "AvroSchema",
    "Boolean",
    "Bytes",
    "BytesSchema",
    "CustomEnum",
    "Double",
    "Field",
    "Float",
    "Integer",
    "JsonSchema",
    "Long",
    "Map",
    "Null",
    "Record",
    "Schema",
    "String",
    "StringSchema",
]
