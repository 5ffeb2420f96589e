"""The official client's schema classes (``pulsar.schema.AvroSchema`` and friends) on
streamwire's codecs.

Each wraps a :class:`streamwire.schema.Schema` built from the record class's definition (the
same JSON text the official client registers, ``json.dumps(definition, indent=True)``), with
the record, nested record and enum classes to decode into, so ``Message.value()`` is an
instance of the ``Record`` subclass, as with the official client.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from streamwire import _native
from streamwire import schema as sw_schema
from streamwire.compat.schema.definition import Record, record_types

__all__ = ["AvroSchema", "BytesSchema", "JsonSchema", "Schema", "StringSchema"]


class _Codec(sw_schema.Schema):
    # A streamwire schema made from a ready definition and the classes to decode into.
    def __init__(
        self,
        kind: str,
        name: str,
        definition: Any,
        records: dict[str, Any],
        enums: dict[str, Any],
        enum_values: bool,
    ) -> None:
        text = json.dumps(definition, indent=True).encode()
        self._codec = _native.SchemaCodec(
            kind, name, text, records=records, enums=enums, enum_values=enum_values
        )


class Schema:
    """Base class of the schemas ``create_producer`` / ``subscribe`` / ``create_reader`` take.

    Args:
        record_cls: the type values must have (None: any).
        native: the :class:`streamwire.schema.Schema` that encodes them (None: raw bytes).
    """

    def __init__(self, record_cls: Any, native: Optional[sw_schema.Schema]) -> None:
        self._record_cls = record_cls
        # None: raw bytes, streamwire's default (no schema registered, as BytesSchema).
        self._native = native

    def _validate_object_type(self, obj: Any) -> None:
        if self._record_cls is not None and not isinstance(obj, self._record_cls):
            raise TypeError(
                f"Invalid record obj of type {type(obj)} - expected type is {self._record_cls}"
            )

    def encode(self, obj: Any) -> bytes:
        """The payload for ``obj`` (``TypeError`` if it is not of the schema's type)."""
        self._validate_object_type(obj)
        if self._native is None:
            return bytes(obj)
        return self._native.encode(obj)

    def decode(self, data: bytes) -> Any:
        """The value the payload ``data`` holds."""
        if self._native is None:
            return data
        return self._native.decode(data)


class BytesSchema(Schema):
    """Raw ``bytes`` (the default)."""

    def __init__(self) -> None:
        super().__init__(bytes, None)

    def __str__(self) -> str:
        return "BytesSchema"


class StringSchema(Schema):
    """``str`` values, as UTF-8."""

    def __init__(self) -> None:
        super().__init__(str, sw_schema.StringSchema())

    def __str__(self) -> str:
        return "StringSchema"


def _definition(
    record_cls: Any, schema_definition: Any
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    if record_cls is None and schema_definition is None:
        raise AssertionError("The param record_cls and schema_definition shouldn't be both None.")
    if record_cls is not None:
        if not (isinstance(record_cls, type) and issubclass(record_cls, Record)):
            raise TypeError(f"{record_cls!r} is not a pulsar.schema.Record subclass")
        records, enums = record_types(record_cls)
        return record_cls.schema(), records, enums
    return schema_definition, {}, {}


class AvroSchema(Schema):
    """Records as Avro binary.

    Args:
        record_cls: a ``Record`` subclass, or None with ``schema_definition``.
        schema_definition: an Avro record definition (a dict); values are then dicts.
    """

    def __init__(self, record_cls: Any, schema_definition: Any = None) -> None:
        definition, records, enums = _definition(record_cls, schema_definition)
        self._schema = definition
        super().__init__(record_cls, _Codec("avro", "AVRO", definition, records, enums, False))

    def encode(self, obj: Any) -> bytes:
        if self._record_cls is None and not isinstance(obj, dict):
            raise ValueError("If using the custom schema, the record data should be dict type.")
        return super().encode(obj)

    def __str__(self) -> str:
        return "AvroSchema"


class JsonSchema(Schema):
    """Records of ``record_cls`` (a ``Record`` subclass) as JSON text (an enum written as its
    ``.value``, as the official client does)."""

    def __init__(self, record_cls: Any) -> None:
        definition, records, enums = _definition(record_cls, None)
        # enum_values: the official Python client writes an enum member's value, not its name.
        super().__init__(record_cls, _Codec("json", "JSON", definition, records, enums, True))

    def __str__(self) -> str:
        return "JsonSchema"
