"""Bad input to ``streamwire.schema`` and to the ``schema=`` calls: each case raises its
documented typed exception and the same client keeps working. Rendered into
``docs/bad-input.md`` with the other rows (see ``tests/test_bad_input.py``); run against Apache
Pulsar (its schema registry) by ``tests/schemas/test_schema_bad_input.py``."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Optional

import streamwire
from streamwire import IncompatibleSchemaError, InvalidArgumentError, SchemaError
from streamwire.schema import (
    AvroSchema,
    JsonSchema,
    KeyValueSchema,
    ProtobufNative,
    StringSchema,
)

from tests.bad_runner import BadCase
from tests.schemas.protos import reading_classes


@dataclasses.dataclass
class Point:
    x: int
    label: Optional[str]


@dataclasses.dataclass
class Odd:
    z: complex


@dataclass
class SchemaCtx:
    url: str
    topic: str  # holds AvroSchema(Point)
    client: streamwire.Client
    producer: streamwire.Producer  # AvroSchema(Point)
    kv_producer: streamwire.Producer  # KeyValueSchema(str, str, "separated")


SchemaCase = BadCase[SchemaCtx, object]


def _fresh() -> str:
    return f"persistent://public/default/bad-schema-{uuid.uuid4().hex}"


TYP = TypeError
POINT_STR = dataclasses.replace(Point(1, None), x="one")  # type: ignore[arg-type]
PB_READING, PB_POINT, _ = reading_classes()
# Point with x a string: the topic's compatibility policy refuses it.
LONG_X = AvroSchema(
    definition={
        "type": "record",
        "name": "Point",
        "fields": [
            {"name": "x", "type": "string"},
            {"name": "label", "type": ["null", "string"]},
        ],
    }
)

# Point plus an optional field with a default: the topic's policy accepts it.
POINT_NOTE = AvroSchema(
    definition={
        "type": "record",
        "name": "Point",
        "fields": [
            {"name": "x", "type": "long"},
            {"name": "label", "type": ["null", "string"]},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    }
)

SCHEMA_CASES: list[SchemaCase] = [
    SchemaCase("AvroSchema()", "not a record type (int)", SchemaError, lambda c: AvroSchema(int)),
    SchemaCase("AvroSchema()", "no type and no definition", SchemaError, lambda c: AvroSchema()),
    SchemaCase(
        "AvroSchema()",
        "definition not JSON",
        SchemaError,
        lambda c: AvroSchema(definition="{not json"),
    ),
    SchemaCase(
        "AvroSchema()",
        "definition without fields",
        SchemaError,
        lambda c: AvroSchema(definition={"type": "record", "name": "R"}),
    ),
    SchemaCase(
        "JsonSchema()",
        "field type with no schema (complex)",
        SchemaError,
        lambda c: JsonSchema(Odd),
    ),
    SchemaCase(
        "KeyValueSchema()",
        "halves not schemas ('k')",
        TYP,
        lambda c: KeyValueSchema("k", StringSchema()),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "KeyValueSchema()",
        "encoding='sideways'",
        SchemaError,
        lambda c: KeyValueSchema(StringSchema(), StringSchema(), encoding="sideways"),
    ),
    SchemaCase(
        "ProtobufNative()",
        "not a protobuf message class (Point dataclass)",
        SchemaError,
        lambda c: ProtobufNative(Point),
    ),
    SchemaCase(
        "ProtobufNative()",
        "a message instance, not its class",
        SchemaError,
        lambda c: ProtobufNative(PB_READING()),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "Schema.encode()",
        "ProtobufNative: a message of another class",
        SchemaError,
        lambda c: ProtobufNative(PB_READING).encode(PB_POINT(x=1.0)),
    ),
    SchemaCase(
        "Schema.decode()",
        "ProtobufNative: payload not of the message (truncated field)",
        SchemaError,
        lambda c: ProtobufNative(PB_READING).decode(b"\x0a\xff"),
    ),
    SchemaCase(
        "Schema.encode()",
        "value does not match the schema (str for a long)",
        SchemaError,
        lambda c: AvroSchema(Point).encode(POINT_STR),
    ),
    SchemaCase(
        "Schema.encode()",
        "required field missing",
        SchemaError,
        lambda c: AvroSchema(Point).encode({"label": "no x"}),
    ),
    SchemaCase(
        "Schema.decode()",
        "payload not of the schema",
        SchemaError,
        lambda c: AvroSchema(Point).decode(b"\xff\xff\xff"),
    ),
    SchemaCase(
        "Client.create_producer()",
        "schema not a schema (5)",
        TYP,
        lambda c: c.client.create_producer(_fresh(), schema=5),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "Client.create_producer()",
        "schema incompatible with the topic's",
        IncompatibleSchemaError,
        lambda c: c.client.create_producer(c.topic, schema=StringSchema()),
    ),
    SchemaCase(
        "Client.subscribe()",
        "schema not a schema ('avro')",
        TYP,
        lambda c: c.client.subscribe(_fresh(), "s", schema="avro"),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "Client.subscribe()",
        "schema incompatible with the topic's",
        IncompatibleSchemaError,
        lambda c: c.client.subscribe(c.topic, "bad", schema=StringSchema()),
    ),
    SchemaCase(
        "Client.create_reader()",
        "schema not a schema (b'x')",
        TYP,
        lambda c: c.client.create_reader(_fresh(), "earliest", schema=b"x"),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "Producer.send()",
        "value does not match the schema (str for a long)",
        SchemaError,
        lambda c: c.producer.send(POINT_STR),
        note="nothing is sent",
    ),
    SchemaCase(
        "Producer.send()",
        "bytes to a record schema",
        SchemaError,
        lambda c: c.producer.send(b"raw"),
        note="nothing is sent",
    ),
    SchemaCase(
        "Producer.send()",
        "key= with a SEPARATED key/value schema",
        InvalidArgumentError,
        lambda c: c.kv_producer.send(("k", "v"), key="other"),
    ),
    SchemaCase(
        "Producer.send()",
        "not a (key, value) tuple to a key/value schema",
        SchemaError,
        lambda c: c.kv_producer.send("v"),
    ),
    SchemaCase(
        "Producer.send_async()",
        "value does not match the schema",
        SchemaError,
        lambda c: c.producer.send_async({"x": 1.5, "label": None}),
        note="nothing is sent",
    ),
    SchemaCase(
        "Producer.send_many()",
        "one value does not match the schema",
        SchemaError,
        lambda c: c.producer.send_many([Point(1, None), POINT_STR]),
        note="none of the values is sent",
    ),
    SchemaCase(
        "JsonSchema()",
        "enum_values not a bool ('yes')",
        TYP,
        lambda c: JsonSchema(Point, enum_values="yes"),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "Client.get_or_create_schema()",
        "schema incompatible with the topic's",
        IncompatibleSchemaError,
        lambda c: c.client.get_or_create_schema(c.topic, StringSchema()),
    ),
    SchemaCase(
        "Client.get_or_create_schema()",
        "schema not a schema (None)",
        TYP,
        lambda c: c.client.get_or_create_schema(c.topic, None),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "Client.get_or_create_schema()",
        "malformed topic name ('a/b')",
        InvalidArgumentError,
        lambda c: c.client.get_or_create_schema("persistent://a/b", StringSchema()),
    ),
    SchemaCase(
        "Producer.register_schema()",
        "schema incompatible with the topic's",
        IncompatibleSchemaError,
        lambda c: c.producer.register_schema(LONG_X),
    ),
    SchemaCase(
        "Producer.register_schema()",
        "schema not a schema ('json')",
        TYP,
        lambda c: c.producer.register_schema("json"),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "Producer.send()",
        "schema= incompatible with the topic's",
        IncompatibleSchemaError,
        lambda c: c.producer.send({"x": "one", "label": None}, schema=LONG_X),
        note="nothing is sent",
    ),
    SchemaCase(
        "Producer.send()",
        "value does not match the schema= given",
        SchemaError,
        lambda c: c.producer.send({"x": 1, "label": None}, schema=StringSchema()),
        note="checked before the schema is registered; nothing is sent",
    ),
    SchemaCase(
        "Producer.send_many()",
        "one value does not match the schema= given",
        SchemaError,
        lambda c: c.producer.send_many(
            [{"x": 1, "label": None, "note": "n"}, {"x": "one", "label": None, "note": None}],
            schema=POINT_NOTE,
        ),
        note="every value is encoded before the schema is registered; none is sent",
    ),
    SchemaCase(
        "Producer.send_many()",
        "schema= incompatible with the topic's",
        IncompatibleSchemaError,
        lambda c: c.producer.send_many([{"x": "one", "label": None}], schema=LONG_X),
        note="nothing is sent",
    ),
    SchemaCase(
        "Producer.send_many()",
        "schema= not a schema ('avro')",
        TYP,
        lambda c: c.producer.send_many([Point(1, None)], schema="avro"),  # type: ignore[arg-type]
    ),
    SchemaCase(
        "Producer.send_async()",
        "schema= not a schema (3)",
        TYP,
        lambda c: c.producer.send_async(Point(1, None), schema=3),  # type: ignore[arg-type]
    ),
]
