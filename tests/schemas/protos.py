"""Generated-style protobuf message classes for the PROTOBUF_NATIVE tests, built at test time
from descriptors written here (``descriptor_pb2`` + ``message_factory``: no ``protoc``).

``sw/common.proto`` (package ``sw.common``): enum ``Level``, message ``Point``.
``sw/reading.proto`` (package ``sw.test``, imports common): message ``Reading`` with every
kind of field, in two versions (v2 adds a field); ``sw/other.proto``: message ``Other``
(a different root message: incompatible on a topic of ``Reading``).
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto
OPT, REP = F.LABEL_OPTIONAL, F.LABEL_REPEATED


def _field(msg: Any, name: str, number: int, ty: int, label: int = OPT, type_name: str = "") -> Any:
    f = msg.field.add(name=name, number=number, type=ty, label=label)
    if type_name:
        f.type_name = type_name
    return f


def _common() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="sw/common.proto", package="sw.common", syntax="proto3"
    )
    level = fd.enum_type.add(name="Level")
    for name, number in [("LOW", 0), ("MID", 1), ("HIGH", 7)]:
        level.value.add(name=name, number=number)
    point = fd.message_type.add(name="Point")
    _field(point, "x", 1, F.TYPE_DOUBLE)
    _field(point, "y", 2, F.TYPE_DOUBLE)
    return fd


def _reading(v2: bool) -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="sw/reading.proto", package="sw.test", syntax="proto3"
    )
    fd.dependency.append("sw/common.proto")
    m = fd.message_type.add(name="Reading")
    _field(m, "sensor", 1, F.TYPE_STRING)
    _field(m, "count", 2, F.TYPE_INT32)
    _field(m, "total", 3, F.TYPE_INT64)
    _field(m, "ratio", 4, F.TYPE_FLOAT)
    _field(m, "precise", 5, F.TYPE_DOUBLE)
    _field(m, "ok", 6, F.TYPE_BOOL)
    _field(m, "raw", 7, F.TYPE_BYTES)
    _field(m, "level", 8, F.TYPE_ENUM, type_name=".sw.common.Level")
    _field(m, "where", 9, F.TYPE_MESSAGE, type_name=".sw.common.Point")
    _field(m, "tags", 10, F.TYPE_STRING, REP)
    _field(m, "sizes", 11, F.TYPE_MESSAGE, REP, ".sw.test.Reading.SizesEntry")
    note = _field(m, "note", 12, F.TYPE_STRING)
    note.proto3_optional = True
    note.oneof_index = 0
    m.oneof_decl.add(name="_note")
    _field(m, "path", 13, F.TYPE_MESSAGE, REP, ".sw.common.Point")
    _field(m, "big", 14, F.TYPE_UINT64)
    _field(m, "delta", 15, F.TYPE_SINT32)
    entry = m.nested_type.add(name="SizesEntry")
    entry.options.map_entry = True
    _field(entry, "key", 1, F.TYPE_STRING)
    _field(entry, "value", 2, F.TYPE_INT64)
    if v2:
        _field(m, "added", 16, F.TYPE_STRING)
    return fd


def _other() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(
        name="sw/other.proto", package="sw.test", syntax="proto3"
    )
    m = fd.message_type.add(name="Other")
    _field(m, "sensor", 1, F.TYPE_STRING)
    return fd


def _classes(files: list[descriptor_pb2.FileDescriptorProto], names: list[str]) -> list[Any]:
    pool = descriptor_pool.DescriptorPool()
    for f in files:
        pool.Add(f)
    return [message_factory.GetMessageClass(pool.FindMessageTypeByName(n)) for n in names]


def reading_classes() -> tuple[Any, Any, Any]:
    """(Reading, Point, Other) of one fresh pool."""
    reading, point, other = _classes(
        [_common(), _reading(False), _other()],
        ["sw.test.Reading", "sw.common.Point", "sw.test.Other"],
    )
    return reading, point, other


def reading_v2_class() -> Any:
    """``Reading`` with field 16 ``added`` (compatible: the root message name is the same)."""
    (cls,) = _classes([_common(), _reading(True)], ["sw.test.Reading"])
    return cls


def sample(reading: Any, point: Any, i: int) -> Any:
    """A ``Reading`` with every field set (some left unset on odd rows)."""
    r = reading(
        sensor=f"s{i}",
        count=i - 5,
        total=(1 << 40) + i,
        ratio=i / 4,
        precise=i / 3,
        ok=i % 2 == 0,
        raw=bytes([i % 256, 0]),
        level=[0, 1, 7][i % 3],
        tags=[f"t{j}" for j in range(i % 3)],
        path=[point(x=float(j), y=-float(j)) for j in range(i % 2)],
        big=(1 << 63) + i if i % 4 == 0 else i,
        delta=-i,
    )
    r.sizes.update({f"k{j}": j * 10 for j in range(i % 3)})
    if i % 2 == 0:
        r.where.CopyFrom(point(x=i + 0.5, y=2.0))
        r.note = f"note {i}"
    return r


def tree_class() -> Any:
    """``sw.test.Tree``, a message that contains itself."""
    fd = descriptor_pb2.FileDescriptorProto(
        name="sw/tree.proto", package="sw.test", syntax="proto3"
    )
    m = fd.message_type.add(name="Tree")
    _field(m, "name", 1, F.TYPE_STRING)
    _field(m, "child", 2, F.TYPE_MESSAGE, type_name=".sw.test.Tree")
    (cls,) = _classes([fd], ["sw.test.Tree"])
    return cls


#: The ``Level`` enum's value names, as typed reads give them.
LEVEL_NAMES = {0: "LOW", 1: "MID", 7: "HIGH"}


def reading_row(m: Any) -> dict[str, Any]:
    """The columns a ``Reading`` message reads as in a typed read: the enum by name, the
    uint64 ``big`` as the signed 64 bits an int64 column holds, unset optionals as None, the
    ``sizes`` map as a dict (Arrow's map arrays take ``list(sizes.items())`` instead)."""
    return {
        "sensor": m.sensor,
        "count": m.count,
        "total": m.total,
        "ratio": m.ratio,
        "precise": m.precise,
        "ok": m.ok,
        "raw": m.raw,
        "level": LEVEL_NAMES[m.level],
        "where": {"x": m.where.x, "y": m.where.y} if m.HasField("where") else None,
        "tags": list(m.tags),
        "sizes": dict(m.sizes),
        "note": m.note if m.HasField("note") else None,
        "path": [{"x": p.x, "y": p.y} for p in m.path],
        "big": m.big - (1 << 64) if m.big >= 1 << 63 else m.big,
        "delta": m.delta,
    }


def check_arrow_row(row: dict[str, Any], m: Any) -> None:
    """``row``, a ``Reading`` as ``receive_arrow``'s ``value`` column gives it, holds the
    message ``m``: the ``sizes`` map's entries in any order (upb writes them in hash order),
    the float32 ``ratio`` approximately, every other column as :func:`reading_row`."""
    assert sorted(row.pop("sizes")) == sorted(m.sizes.items())
    want = reading_row(m)
    del want["sizes"]
    want["ratio"] = pytest.approx(m.ratio)
    assert row == want
