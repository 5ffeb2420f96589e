"""Record types shared by the schema tests: the same fields as streamwire dataclasses /
TypedDicts / pydantic models and as the official client's ``pulsar.schema.Record`` classes."""

from __future__ import annotations

import dataclasses
import enum
from types import ModuleType
from typing import Any, Optional, TypedDict

import pydantic
from streamwire.schema import Float32, Int32


class Color(enum.Enum):
    red = 1
    green = 2
    blue = 3


@dataclasses.dataclass
class Inner:
    a: Optional[Int32]
    tag: Optional[str]


@dataclasses.dataclass
class Reading:
    """Every field type the official client's Record has, nullable as its fields are."""

    name: Optional[str]
    count: Optional[Int32]
    total: Optional[int]
    ratio: Optional[Float32]
    precise: Optional[float]
    ok: Optional[bool]
    raw: Optional[bytes]
    tags: Optional[list[str]]
    sizes: Optional[dict[str, int]]
    inner: Optional[Inner]
    label: str
    color: Optional[Color]


class ReadingDict(TypedDict):
    name: Optional[str]
    count: Optional[Int32]
    total: Optional[int]
    ratio: Optional[Float32]
    precise: Optional[float]
    ok: Optional[bool]
    raw: Optional[bytes]
    tags: Optional[list[str]]
    sizes: Optional[dict[str, int]]
    inner: Optional[Inner]
    label: str
    color: Optional[Color]


class InnerModel(pydantic.BaseModel):
    a: Optional[Int32]
    tag: Optional[str]


class ReadingModel(pydantic.BaseModel):
    name: Optional[str]
    count: Optional[Int32]
    total: Optional[int]
    ratio: Optional[Float32]
    precise: Optional[float]
    ok: Optional[bool]
    raw: Optional[bytes]
    tags: Optional[list[str]]
    sizes: Optional[dict[str, int]]
    inner: Optional[InnerModel]
    label: str
    color: Optional[Color]


_OFFICIAL: dict[str, tuple[Any, Any]] = {}


def official_classes(pulsar: ModuleType) -> tuple[Any, Any]:
    """The official client's Record classes with the same fields (and names) as ours (made
    once: its schemas check values with isinstance)."""
    if "classes" not in _OFFICIAL:
        _OFFICIAL["classes"] = _make_official(pulsar)
    return _OFFICIAL["classes"]


def official_multi_classes(pulsar: ModuleType) -> tuple[Any, Any]:
    """The official client's Record classes for the multi-schema tests' two versions: V1
    (``id``, ``name``) and V2 (also ``note``, default null), both named ``V1`` in namespace
    ``multi`` as the topic's schemas are (made once, like ``official_classes``)."""
    if "multi" not in _OFFICIAL:
        s = pulsar.schema

        class OfficialV1(s.Record):
            _avro_namespace = "multi"
            id = s.Long(required=True)
            name = s.String()

        class OfficialV2(s.Record):
            _avro_namespace = "multi"
            id = s.Long(required=True)
            name = s.String()
            note = s.String(required_default=True)  # "default": null, as V2 has

        OfficialV1.__name__ = "V1"
        OfficialV2.__name__ = "V1"
        _OFFICIAL["multi"] = (OfficialV1, OfficialV2)
    return _OFFICIAL["multi"]


def _make_official(pulsar: ModuleType) -> tuple[Any, Any]:
    s = pulsar.schema

    class Inner(s.Record):
        a = s.Integer()
        tag = s.String()

    class Reading(s.Record):
        name = s.String()
        count = s.Integer()
        total = s.Long()
        ratio = s.Float()
        precise = s.Double()
        ok = s.Boolean()
        raw = s.Bytes()
        tags = s.Array(s.String())
        sizes = s.Map(s.Long())
        inner = Inner()
        label = s.String(required=True)
        color = s.CustomEnum(Color)

    return Reading, Inner


def sample(i: int) -> Reading:
    return Reading(
        name=f"sensor-{i}",
        count=i,
        total=10_000_000_000 + i,
        ratio=0.5 + i,
        precise=1.0 / (i + 3),
        ok=i % 2 == 0,
        raw=b"r%d" % i,
        tags=[f"t{j}" for j in range(i % 3)],
        sizes={"a": i, "b": -i},
        inner=Inner(a=i * 2, tag=None if i % 2 else "x"),
        label=f"L{i}",
        color=list(Color)[i % 3],
    )


def official_sample(pulsar: ModuleType, i: int) -> Any:
    official_reading, official_inner = official_classes(pulsar)
    r = sample(i)
    assert r.inner is not None
    return official_reading(
        name=r.name,
        count=r.count,
        total=r.total,
        ratio=r.ratio,
        precise=r.precise,
        ok=r.ok,
        raw=r.raw,
        tags=r.tags,
        sizes=r.sizes,
        inner=official_inner(a=r.inner.a, tag=r.inner.tag),
        label=r.label,
        color=r.color,
    )


# Two versions of one record (same name, a field added): schema evolution tests.
@dataclasses.dataclass
class EvolvingV1:
    name: str
    count: int


@dataclasses.dataclass
class EvolvingV2:
    name: str
    count: int
    note: Optional[str] = None


EvolvingV1.__name__ = EvolvingV2.__name__ = "Evolving"
