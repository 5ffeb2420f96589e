"""Typed messages with the broker's schema registry (Pulsar).

Give a schema to ``create_producer``, ``subscribe`` or ``create_reader`` (``schema=``): the
producer registers it with the topic (the broker checks compatibility, raising
``IncompatibleSchemaError``), ``send`` / ``send_async`` / ``send_many`` take values of it
(encoded in Rust; a value that does not fit raises ``SchemaError`` before anything is
sent), and ``Message.value`` is the decoded value, decoded with the schema version the
message was written with (``Message.data()`` stays the raw payload)::

    @dataclasses.dataclass
    class Reading:
        sensor: str
        celsius: Optional[float]

    producer = client.create_producer(topic, schema=AvroSchema(Reading))
    producer.send(Reading("s1", 21.5))
    consumer = client.subscribe(topic, "sub", schema=AvroSchema(Reading))
    consumer.receive().value  # Reading(sensor='s1', celsius=21.5)

Record types are dataclasses, ``TypedDict`` classes (decoded as dicts) or pydantic models
(when pydantic is installed). Their definition is the Avro record schema the official
Python client's ``pulsar.schema`` generates for a ``Record`` with the same fields (record
name = class name, ``_avro_namespace`` class attribute as namespace, ``Optional[X]`` as
``["null", X]``), registered as ``json.dumps(definition, indent=True)`` as that client does,
so both clients' producers and consumers share a topic. Python ``int`` is Avro ``long`` and
``float`` is ``double``; ``Int32`` and ``Float32`` give ``int`` and ``float`` (the official
``Integer()`` and ``Float()``). A field with a default in Python carries it in the schema
(schema evolution needs it: a field added later must have one).
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import json
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Optional, Union

from streamwire import _native
from streamwire.exceptions import SchemaError

# Int32 and Float32 are type aliases (typing.Annotated), importable by name; they stay out
# of __all__, which lists the callables whose parameters the docs check.
__all__ = [
    "AvroSchema",
    "BytesSchema",
    "JsonSchema",
    "KeyValueSchema",
    "ProtobufNative",
    "Schema",
    "StringSchema",
]

Int32 = Annotated[int, "avro:int"]
"""An ``int`` field written as Avro ``int`` (32-bit; the official client's ``Integer()``)."""

Float32 = Annotated[float, "avro:float"]
"""A ``float`` field written as Avro ``float`` (32-bit; the official client's ``Float()``)."""

_PRIMITIVES: dict[Any, str] = {bool: "boolean", int: "long", float: "double", str: "string"}
_PRIMITIVES[bytes] = "bytes"
_MARKERS = {"avro:int": "int", "avro:float": "float"}


class Schema:
    """A schema: what ``schema=`` takes. Use one of the subclasses."""

    _codec: _native.SchemaCodec

    def encode(self, value: Any) -> bytes:
        """Encode one value into its payload, as a producer with this schema sends it.

        Args:
            value: a value of the schema.

        Raises:
            SchemaError: the value does not fit the schema.
        """
        return self._codec.encode(value)

    def decode(self, data: bytes, key: Optional[str] = None) -> Any:
        """Decode a payload written with this schema.

        Args:
            data: the payload (``Message.data()``).
            key: the message key, for a ``KeyValueSchema`` with ``encoding="separated"``.

        Raises:
            SchemaError: the payload does not decode with this schema.
        """
        return self._codec.decode(bytes(data), key)

    @property
    def schema_type(self) -> int:
        """The registry's type number (the protocol's ``Schema.Type``)."""
        return self._codec.schema_type

    @property
    def definition(self) -> bytes:
        """The definition registered with the topic (empty for bytes and str)."""
        return self._codec.definition


class BytesSchema(Schema):
    """Raw ``bytes`` values (the same as no schema)."""

    def __init__(self) -> None:
        self._codec = _native.SchemaCodec("bytes", "BYTES")


class StringSchema(Schema):
    """``str`` values, sent as UTF-8."""

    def __init__(self) -> None:
        self._codec = _native.SchemaCodec("string", "STRING")


class _RecordSchema(Schema):
    _kind = ""
    _name = ""

    def __init__(
        self,
        record_type: Optional[type] = None,
        *,
        definition: Optional[Union[str, Mapping[str, Any]]] = None,
        _enum_values: bool = False,
    ) -> None:
        if (record_type is None) == (definition is None):
            raise SchemaError("give a record type or a definition (one of them)")
        records: dict[str, Any] = {}
        enums: dict[str, Any] = {}
        if record_type is not None:
            defn: Any = _record(record_type, set(), records, enums)
        elif isinstance(definition, str):
            try:
                defn = json.loads(definition)
            except ValueError as e:
                raise SchemaError(f"definition is not JSON: {e}") from None
        elif isinstance(definition, Mapping):
            defn = dict(definition)
        else:
            raise SchemaError("definition must be a str or a mapping")
        self.record_type = record_type
        # The official client registers json.dumps(definition, indent=True); the same text
        # keeps both clients on one schema version.
        text = json.dumps(defn, indent=True).encode()
        self._codec = _native.SchemaCodec(
            self._kind, self._name, text, records=records, enums=enums, enum_values=_enum_values
        )


class JsonSchema(_RecordSchema):
    """Records sent as UTF-8 JSON text (the registry's JSON type, with an Avro definition).

    An ``enum.Enum`` field is written as its member's name, the Avro symbol (as the Java
    client writes it); the official Python client's ``JsonSchema`` writes the member's
    ``.value`` instead. Reading takes both forms (the value form through the record type's
    ``Enum`` classes), so records from either client decode to the same member.

    Args:
        record_type: a dataclass, ``TypedDict`` or pydantic model class.
        definition: instead of a type, an Avro record definition (JSON text or a mapping);
            values are then dicts.
        enum_values: write an enum as its member's ``.value`` (the official Python client's
            form, for consumers that only read that form) instead of its name. Default
            False.
    """

    _kind = "json"
    _name = "JSON"

    def __init__(
        self,
        record_type: Optional[type] = None,
        *,
        definition: Optional[Union[str, Mapping[str, Any]]] = None,
        enum_values: bool = False,
    ) -> None:
        if not isinstance(enum_values, bool):
            raise TypeError(f"enum_values must be a bool, not {type(enum_values).__name__}")
        super().__init__(record_type, definition=definition, _enum_values=enum_values)


class AvroSchema(_RecordSchema):
    """Records sent as Avro binary.

    Args:
        record_type: a dataclass, ``TypedDict`` or pydantic model class.
        definition: instead of a type, an Avro record definition (JSON text or a mapping);
            values are then dicts.
    """

    _kind = "avro"
    _name = "AVRO"


class KeyValueSchema(Schema):
    """``(key, value)`` tuples, each half with its own schema.

    A ``None`` half is a null half, written as the Java client writes it (``"inline"``: a
    length of -1; ``"separated"``: a None key is no message key, a None value an empty
    payload flagged ``null_value``) and read back as ``None``.

    Args:
        key: the key's schema (not a ``KeyValueSchema``).
        value: the value's schema (not a ``KeyValueSchema``).
        encoding: ``"inline"`` (both halves in the payload) or ``"separated"`` (the key
            is the message key, base64 of its encoding, so it routes and compacts).
    """

    def __init__(self, key: Schema, value: Schema, encoding: str = "inline") -> None:
        if not isinstance(key, Schema) or not isinstance(value, Schema):
            raise TypeError("KeyValueSchema takes two streamwire.schema objects")
        if encoding not in ("inline", "separated"):
            raise SchemaError(f"encoding must be 'inline' or 'separated', not {encoding!r}")
        self.key = key
        self.value = value
        self.encoding = encoding
        self._codec = _native.SchemaCodec(
            "key_value",
            "KeyValue",
            key=key._codec,
            value=value._codec,
            separated=encoding == "separated",
        )


class ProtobufNative(Schema):
    """Instances of a generated ``google.protobuf`` message class (PROTOBUF_NATIVE).

    The registry definition is the Java client's: JSON with the base64 of a
    ``FileDescriptorSet`` holding the class's ``.proto`` file and every file it imports
    (each once, imports first), the message's full name and its file's name. The broker
    refuses a change of the root message's full name (``IncompatibleSchemaError``). Values
    are sent as ``SerializeToString()`` and received as ``message_class.FromString``
    (``None`` is a null value, ``null_value`` on the wire as the Java client sends a null:
    received as ``None``, a null row in ``receive_arrow``);
    payloads written with an older or newer descriptor of the same message read with the
    reader's class (protobuf fields are numbered). ``receive_arrow`` gives the ``value``
    column as a struct of the message's fields, decoded in Rust: nested messages as
    nullable structs, repeated fields as lists, ``map<string, V>`` as maps (other key types
    as lists of ``{key, value}`` structs), enums as their value names (null for a number
    the descriptor does not name), 64-bit unsigned values as ``int64`` holding the same
    bits; proto3 scalars without presence are never null (their default when unset).
    In a message type that contains itself, the inner occurrence's column is its serialized
    bytes (``binary``; parse it with ``message_class.FromString``).

    Args:
        message_class: a generated message class (``google.protobuf.message.Message``
            subclass, e.g. from a ``_pb2`` module).
    """

    def __init__(self, message_class: type) -> None:
        descriptor = getattr(message_class, "DESCRIPTOR", None)
        file = getattr(descriptor, "file", None)
        if not isinstance(message_class, type) or file is None:
            raise SchemaError(
                f"ProtobufNative takes a generated protobuf message class, not {message_class!r}"
            )
        self.message_class = message_class
        definition = _protobuf_schema_data(descriptor)
        self._codec = _native.SchemaCodec.protobuf_native(
            definition, message_class, "", [("__PARSING_INFO__", _parsing_info(descriptor))]
        )


def _protobuf_schema_data(descriptor: Any) -> bytes:
    """The registry definition (schema data) for a message descriptor."""
    # Imported here: protobuf is needed only by this schema (the "protobuf" extra).
    descriptor_pb2: Any = importlib.import_module("google.protobuf.descriptor_pb2")
    files: list[Any] = []
    seen: set[str] = set()

    def visit(f: Any) -> None:
        # Imports first, each file once (as protoc --include_imports orders them).
        if f.name in seen:
            return
        seen.add(f.name)
        for dep in f.dependencies:
            visit(dep)
        files.append(f)

    visit(descriptor.file)
    fds = descriptor_pb2.FileDescriptorSet()
    for f in files:
        fds.file.add().ParseFromString(f.serialized_pb)
    data = {
        "fileDescriptorSet": base64.b64encode(fds.SerializeToString()).decode("ascii"),
        "rootMessageTypeName": descriptor.full_name,
        "rootFileDescriptorName": descriptor.file.name,
    }
    return json.dumps(data, separators=(",", ":")).encode()


def _parsing_info(descriptor: Any) -> str:
    """The ``__PARSING_INFO__`` property the Java client registers with PROTOBUF_NATIVE: the
    root message's fields in order, as ``{number, name, type, label, definition}``."""
    descriptor_pb2: Any = importlib.import_module("google.protobuf.descriptor_pb2")
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    f = descriptor_pb2.FieldDescriptorProto
    return json.dumps(
        [
            {
                "number": x.number,
                "name": x.name,
                "type": f.Type.Name(x.type)[len("TYPE_") :],
                "label": f.Label.Name(x.label),
                "definition": None,
            }
            for x in proto.field
        ],
        separators=(",", ":"),
    )


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def _is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_fields") and hasattr(tp, "model_validate")


def _is_record_type(tp: Any) -> bool:
    return isinstance(tp, type) and (
        dataclasses.is_dataclass(tp) or _is_typeddict(tp) or _is_pydantic(tp)
    )


_NO_DEFAULT = object()


def _fields(tp: type) -> list[tuple[str, Any, Any]]:
    """(name, annotation, default or _NO_DEFAULT) of each field, in order."""
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except Exception as e:  # a forward reference that does not resolve
        raise SchemaError(f"cannot read the field types of {tp.__name__}: {e}") from None
    if dataclasses.is_dataclass(tp):
        out = []
        for f in dataclasses.fields(tp):
            d: Any = _NO_DEFAULT
            if f.default is not dataclasses.MISSING:
                d = f.default
            out.append((f.name, hints[f.name], d))
        return out
    if _is_typeddict(tp):
        return [(n, h, _NO_DEFAULT) for n, h in hints.items()]
    out = []
    for name, info in typing.cast(Any, tp).model_fields.items():
        required = getattr(info, "is_required", lambda: True)()
        out.append(
            (name, hints.get(name, info.annotation), _NO_DEFAULT if required else info.default)
        )
    return out


def _full_name(tp: type) -> tuple[str, Optional[str]]:
    ns = getattr(tp, "_avro_namespace", None)
    if ns is not None and not isinstance(ns, str):
        raise SchemaError(f"{tp.__name__}._avro_namespace must be a str")
    return (f"{ns}.{tp.__name__}" if ns else tp.__name__), ns


def _record(tp: type, defined: set[str], records: dict[str, Any], enums: dict[str, Any]) -> Any:
    if not _is_record_type(tp):
        raise SchemaError(
            f"{getattr(tp, '__name__', tp)!r} is not a dataclass, TypedDict or pydantic model"
        )
    full, ns = _full_name(tp)
    if full in defined:
        return full
    defined.add(full)
    if not _is_typeddict(tp):
        records[full] = tp
    out: dict[str, Any] = {"type": "record", "name": tp.__name__}
    if ns:
        out["namespace"] = ns
    fields = []
    for name, ann, default in _fields(tp):
        ftype = _type(ann, defined, records, enums, f"{tp.__name__}.{name}")
        field: dict[str, Any] = {"name": name}
        if default is not _NO_DEFAULT:
            if isinstance(ftype, list) and default is not None and ftype[0] == "null":
                # Avro: a union's default is of its first branch.
                ftype = [*ftype[1:], "null"]
            field["default"] = default.name if isinstance(default, enum.Enum) else default
            try:
                json.dumps(field["default"])
            except TypeError:
                raise SchemaError(f"the default of {tp.__name__}.{name} has no JSON form") from None
        field["type"] = ftype
        fields.append(field)
    out["fields"] = fields
    return out


def _type(
    ann: Any, defined: set[str], records: dict[str, Any], enums: dict[str, Any], where: str
) -> Any:
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is Annotated:
        for meta in args[1:]:
            if isinstance(meta, str) and meta in _MARKERS:
                return _MARKERS[meta]
        return _type(args[0], defined, records, enums, where)
    if origin is Union or (sys.version_info >= (3, 10) and origin is types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == len(args):
            raise SchemaError(f"{where}: only Optional[X] unions are supported")
        if len(rest) != 1:
            raise SchemaError(f"{where}: only Optional[X] unions are supported")
        return ["null", _type(rest[0], defined, records, enums, where)]
    if origin in (list, Sequence, typing.List):  # noqa: UP006
        (item,) = args or (Any,)
        return {"type": "array", "items": _type(item, defined, records, enums, where)}
    if origin in (dict, Mapping, typing.Dict):  # noqa: UP006
        k, v = args or (str, Any)
        if k is not str:
            raise SchemaError(f"{where}: map keys must be str")
        return {"type": "map", "values": _type(v, defined, records, enums, where)}
    if ann in _PRIMITIVES:
        return _PRIMITIVES[ann]
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        full, ns = _full_name(ann)
        if full in defined:
            return full
        defined.add(full)
        enums[full] = ann
        e: dict[str, Any] = {"type": "enum", "name": ann.__name__}
        if ns:
            e["namespace"] = ns
        e["symbols"] = [m.name for m in ann]
        return e
    if _is_record_type(ann):
        return _record(ann, defined, records, enums)
    raise SchemaError(f"{where}: no schema type for {ann!r}")
