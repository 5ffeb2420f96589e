"""Arrow columns into PROTOBUF_NATIVE and KEY_VALUE payloads (``SchemaCodec.encode_arrow``, the
path of a typed ``send_many`` of a ``pyarrow.RecordBatch`` and of Spark writes), without a
broker: seeded random messages, put into columns of the type a typed read gives
(``SchemaCodec.arrow_type``), encode in Rust to payloads that protobuf's own ``FromString``
parses as the same messages; a null is the field left out; misfits are ``SchemaError``."""

from __future__ import annotations

import random
import struct
from typing import Any

import pyarrow as pa
import pytest
from streamwire import SchemaError
from streamwire.schema import AvroSchema, KeyValueSchema, ProtobufNative, StringSchema

from tests.schemas.protos import reading_classes, reading_row


def _random_message(rng: random.Random, reading: Any, point: Any) -> Any:
    def text() -> str:
        return "".join(rng.choice("aé z€") for _ in range(rng.randrange(5)))

    m = reading(
        sensor=text(),
        count=rng.randrange(-(1 << 31), 1 << 31),
        total=rng.randrange(-(1 << 63), 1 << 63),
        ratio=rng.choice([0.0, 1.5, -2.25]),
        precise=rng.uniform(-1e9, 1e9),
        ok=rng.random() < 0.5,
        raw=bytes(rng.randrange(256) for _ in range(rng.randrange(4))),
        level=rng.choice([0, 1, 7]),
        tags=[text() for _ in range(rng.randrange(3))],
        path=[point(x=rng.uniform(-1, 1), y=0.0) for _ in range(rng.randrange(3))],
        big=rng.randrange(1 << 64),
        delta=rng.randrange(-(1 << 31), 1 << 31),
    )
    m.sizes.update({text(): rng.randrange(-5, 5) for _ in range(rng.randrange(3))})
    if rng.random() < 0.5:
        m.where.CopyFrom(point(x=rng.uniform(-1, 1), y=1.0))
    if rng.random() < 0.5:
        m.note = text()
    return m


def _row(m: Any) -> dict[str, Any]:
    """The columns of a message as a typed read gives them (a map as its items)."""
    return {**reading_row(m), "sizes": list(m.sizes.items())}


@pytest.mark.parametrize("seed", range(20))
def test_random_messages_round_trip_through_columns(seed: int) -> None:
    reading, point, _ = reading_classes()
    codec = ProtobufNative(reading)._codec
    rng = random.Random(seed)
    msgs = [_random_message(rng, reading, point) for _ in range(rng.randrange(1, 12))]
    batch = pa.RecordBatch.from_struct_array(
        pa.array([_row(m) for m in msgs], type=codec.arrow_type())
    )
    out = codec.encode_arrow(batch)
    assert [reading.FromString(b) for b in out] == msgs
    # A slice (non-zero offsets into every buffer) reads the same rows.
    if len(msgs) > 2:
        assert [reading.FromString(b) for b in codec.encode_arrow(batch.slice(1, 2))] == msgs[1:3]


def test_nulls_and_missing_columns_are_fields_left_out() -> None:
    reading, _, _ = reading_classes()
    codec = ProtobufNative(reading)._codec
    batch = pa.RecordBatch.from_pydict(
        {"sensor": ["a", None], "count": pa.array([None, 3], pa.int32())}
    )
    got = [reading.FromString(b) for b in codec.encode_arrow(batch)]
    assert got == [reading(sensor="a"), reading(count=3)]
    assert not got[0].HasField("note") and not got[0].HasField("where")


@pytest.mark.parametrize(
    ("columns", "says"),
    [
        ({"count": pa.array(["x"])}, "does not fit"),
        ({"nope": pa.array([1])}, "is not a field"),
        ({"count": pa.array([1 << 40])}, "does not fit"),
        ({"tags": pa.array([["a", None]])}, "item 1 is null"),
    ],
    ids=["string-for-int32", "no-such-field", "beyond-int32", "null-list-item"],
)
def test_misfits_are_schema_errors(columns: dict[str, Any], says: str) -> None:
    reading, _, _ = reading_classes()
    with pytest.raises(SchemaError, match=says):
        ProtobufNative(reading)._codec.encode_arrow(pa.RecordBatch.from_pydict(columns))


def _halves(payload: bytes) -> tuple[bytes | None, bytes | None]:
    out: list[bytes | None] = []
    at = 0
    for _ in range(2):
        (n,) = struct.unpack_from(">i", payload, at)
        at += 4
        out.append(None if n < 0 else payload[at : at + n])
        at += max(n, 0)
    return out[0], out[1]


def test_key_value_inline_columns_encode_each_half() -> None:
    reading, point, _ = reading_classes()
    schema = KeyValueSchema(StringSchema(), ProtobufNative(reading))
    codec = schema._codec
    rng = random.Random(7)
    msgs = [_random_message(rng, reading, point) for _ in range(4)]
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array(["k0", None, "k2", "k3"]),
            pa.array([_row(m) for m in msgs], type=codec.arrow_type("value")),
        ],
        names=["key", "value"],
    )
    out = codec.encode_arrow(batch)
    for i, (payload, m) in enumerate(zip(out, msgs)):
        k, v = _halves(payload)
        assert k == (None if i == 1 else f"k{i}".encode())
        assert v is not None and reading.FromString(v) == m
        assert schema.decode(payload) == (None if i == 1 else f"k{i}", m)


def test_key_value_misfits_are_schema_errors() -> None:
    point_def = {
        "type": "record",
        "name": "P",
        "fields": [{"name": "x", "type": "int"}],
    }
    codec = KeyValueSchema(AvroSchema(definition=point_def), StringSchema())._codec
    good = pa.array([{"x": 1}])
    with pytest.raises(SchemaError, match="half is a record"):
        codec.encode_arrow(pa.RecordBatch.from_pydict({"key": ["a"], "value": ["b"]}))
    with pytest.raises(SchemaError, match="neither 'key' nor 'value'"):
        codec.encode_arrow(pa.RecordBatch.from_pydict({"key": good, "extra": ["b"]}))
    with pytest.raises(SchemaError, match="takes a string column"):
        codec.encode_arrow(pa.RecordBatch.from_pydict({"key": good, "value": [1]}))
    assert codec.arrow_type("key") == pa.struct([pa.field("x", pa.int32())])
