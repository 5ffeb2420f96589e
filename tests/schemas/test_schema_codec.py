"""streamwire.schema without a broker: the definitions are the official client's, the Avro
bytes are fastavro's (through the official client), JSON both ways, the record kinds, and a
value that does not fit raising SchemaError."""

from __future__ import annotations

import dataclasses
import json
from types import ModuleType
from typing import Any, Optional

import pytest
from streamwire.exceptions import InvalidArgumentError, SchemaError
from streamwire.schema import (
    AvroSchema,
    BytesSchema,
    JsonSchema,
    KeyValueSchema,
    StringSchema,
)

from tests.schemas.records import (
    Color,
    Inner,
    InnerModel,
    Reading,
    ReadingDict,
    ReadingModel,
    official_classes,
    official_sample,
    sample,
)


def test_definitions_are_the_official_clients(official_pulsar: ModuleType) -> None:
    official_reading, _ = official_classes(official_pulsar)
    s = official_pulsar.schema
    for ours, theirs in [
        (AvroSchema(Reading), s.AvroSchema(official_reading)),
        (JsonSchema(Reading), s.JsonSchema(official_reading)),
        (AvroSchema(ReadingDict), s.AvroSchema(official_reading)),
        (AvroSchema(ReadingModel), s.AvroSchema(official_reading)),
    ]:
        info = theirs.schema_info()
        # Record names are the class names: the TypedDict and model classes differ only so.
        text = ours.definition.replace(b'"ReadingDict"', b'"Reading"')
        text = text.replace(b'"ReadingModel"', b'"Reading"').replace(b'"InnerModel"', b'"Inner"')
        assert text == info.schema().encode()
        assert ours.schema_type == int(info.schema_type())


def test_avro_bytes_are_the_official_clients(official_pulsar: ModuleType) -> None:
    official_reading, _ = official_classes(official_pulsar)
    theirs = official_pulsar.schema.AvroSchema(official_reading)
    ours = AvroSchema(Reading)
    for i in range(6):
        data = theirs.encode(official_sample(official_pulsar, i))
        assert ours.encode(sample(i)) == data, i
        assert ours.decode(data) == sample(i), i
        back = theirs.decode(ours.encode(sample(i)))
        assert back.total == sample(i).total and back.inner.a == i * 2
        assert back.color == sample(i).color


def test_json_both_ways(official_pulsar: ModuleType) -> None:
    official_reading, _ = official_classes(official_pulsar)
    theirs = official_pulsar.schema.JsonSchema(official_reading)
    ours = JsonSchema(Reading)
    for i in range(4):
        r = dataclasses.replace(sample(i), color=None)
        # The official client writes enums by value, Java by name: we write the symbol, so
        # the JSON interop records leave the enum out.
        theirs_record = official_sample(official_pulsar, i)
        theirs_record.color = None
        got = ours.decode(theirs.encode(theirs_record))
        # Its JSON carries bytes as text: they come back as the same bytes.
        assert got == r
        text = ours.encode(r)
        assert json.loads(text)["inner"] == {"a": i * 2, "tag": r.inner.tag if r.inner else None}
        back = theirs.decode(text)
        assert (back.name, back.total, back.raw, back.sizes) == (
            r.name,
            r.total,
            r.raw,
            r.sizes,
        )


def test_typeddict_and_pydantic_records() -> None:
    r = sample(2)
    as_dict: dict[str, Any] = dataclasses.asdict(r)
    as_dict["color"] = r.color
    for schema in (AvroSchema(ReadingDict), JsonSchema(ReadingDict)):
        # TypedDict values are dicts both ways; the nested dataclass field is built as one.
        decoded = schema.decode(schema.encode(as_dict))
        assert decoded["inner"] == Inner(a=4, tag="x")
        assert decoded["color"] == Color.blue and decoded["total"] == r.total
    model = ReadingModel(**{**as_dict, "inner": InnerModel(a=4, tag="x")})
    for schema in (AvroSchema(ReadingModel), JsonSchema(ReadingModel)):
        assert schema.decode(schema.encode(model)) == model
    # A dict is accepted for any record type, and an object for any record type.
    assert AvroSchema(Reading).decode(AvroSchema(Reading).encode(as_dict)) == r


def test_bytes_string_and_key_value() -> None:
    assert BytesSchema().decode(BytesSchema().encode(b"\x00\x01")) == b"\x00\x01"
    assert StringSchema().decode(StringSchema().encode("héllo")) == "héllo"
    kv = KeyValueSchema(StringSchema(), AvroSchema(Inner))
    data = kv.encode(("k1", Inner(a=1, tag="t")))
    assert data[:4] == b"\x00\x00\x00\x02" and data[4:6] == b"k1"
    assert kv.decode(data) == ("k1", Inner(a=1, tag="t"))
    sep = KeyValueSchema(StringSchema(), JsonSchema(Inner), encoding="separated")
    payload = sep.encode(("k1", Inner(a=1, tag=None)))
    assert json.loads(payload) == {"a": 1, "tag": None}
    assert sep.decode(payload, key="azE=") == ("k1", Inner(a=1, tag=None))


@dataclasses.dataclass
class Small:
    n: int
    s: Optional[str] = None


@pytest.mark.parametrize("make", [AvroSchema, JsonSchema])
@pytest.mark.parametrize(
    "value",
    [
        Small(n="x"),  # type: ignore[arg-type]
        Small(n=2**70),
        Small(n=True),
        Small(n=1, s=5),  # type: ignore[arg-type]
        {"s": "no n"},
        42,
        None,
    ],
    ids=["str-for-long", "too-big", "bool-for-long", "int-for-str", "missing", "scalar", "none"],
)
def test_values_that_do_not_fit_raise_schema_error(make: Any, value: Any) -> None:
    with pytest.raises(SchemaError) as info:
        make(Small).encode(value)
    assert isinstance(info.value, InvalidArgumentError)
    assert isinstance(info.value, ValueError)


def test_bad_definitions_and_types() -> None:
    with pytest.raises(SchemaError):
        AvroSchema(definition='{"type": "record", "name": "R"}')
    with pytest.raises(SchemaError):
        AvroSchema(int)
    with pytest.raises(SchemaError):
        AvroSchema()

    @dataclasses.dataclass
    class Odd:
        x: complex

    with pytest.raises(SchemaError, match=r"Odd\.x"):
        JsonSchema(Odd)
    with pytest.raises(SchemaError):
        KeyValueSchema(StringSchema(), StringSchema(), encoding="sideways")
    with pytest.raises(TypeError):
        KeyValueSchema("k", StringSchema())  # type: ignore[arg-type]
    with pytest.raises(SchemaError):
        StringSchema().encode(b"bytes")
    with pytest.raises(SchemaError):
        AvroSchema(Small).decode(b"\xff\xff")


def test_defaults_go_into_the_definition() -> None:
    d = json.loads(AvroSchema(Small).definition)
    assert d["fields"] == [
        {"name": "n", "type": "long"},
        {"name": "s", "default": None, "type": ["null", "string"]},
    ]
    assert AvroSchema(definition=d).decode(AvroSchema(Small).encode(Small(3))) == {
        "n": 3,
        "s": None,
    }
