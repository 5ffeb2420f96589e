"""Offsets and planned ranges: pure logic, no I/O, JSON-friendly for Spark checkpoints.

A *position* ``(ledger, entry, batch)`` means "everything up to and including this message has
been read"; ``batch == -1`` means the whole entry (all messages of a batch). Ordering uses
``batch -1`` as "after every batch index", which makes a range ``(start, end]`` exact for both
batched and non-batched entries -- the off-by-one around batch message ids that bites the Scala
connector. ``EARLIEST`` is before every message.

User-facing ``startingOffsets`` / ``endingOffsets`` JSON name the first and the last message to
read (both inclusive); they are converted to exclusive start positions here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Union

__all__ = [
    "EARLIEST",
    "Position",
    "RangeSpec",
    "offset_json",
    "parse_offsets_option",
    "position_from_json",
    "position_key",
    "position_to_json",
    "predecessor",
    "split_ranges",
]

Position = tuple[int, int, int]
EARLIEST: Position = (-1, -1, -1)
_AFTER_ALL_BATCH_INDEXES = 1 << 62

OffsetSpec = Union[str, Position]  # "earliest" | "latest" | explicit inclusive message position


def position_key(pos: Position) -> tuple[int, int, int]:
    """Sort key: a whole-entry position sorts after every batch index of that entry."""
    ledger, entry, batch = pos
    return (ledger, entry, batch if batch >= 0 else _AFTER_ALL_BATCH_INDEXES)


def predecessor(pos: Position) -> Position:
    """The exclusive start position for reading *from* ``pos`` inclusive."""
    ledger, entry, batch = pos
    if batch > 0:
        return (ledger, entry, batch - 1)
    return (ledger, entry - 1, -1)


def position_to_json(pos: Position) -> dict[str, int]:
    return {"ledger": pos[0], "entry": pos[1], "batch": pos[2]}


def position_from_json(value: Any) -> Position:
    if isinstance(value, Mapping):
        return (
            int(value.get("ledger", value.get("ledgerId", -1))),
            int(value.get("entry", value.get("entryId", -1))),
            int(value.get("batch", value.get("batchIndex", -1))),
        )
    if isinstance(value, (list, tuple)) and len(value) in (2, 3):
        return (int(value[0]), int(value[1]), int(value[2]) if len(value) == 3 else -1)
    raise ValueError(f"not a message position: {value!r} (expected {{'ledger','entry','batch'}})")


def offset_json(positions: Mapping[str, Position]) -> dict[str, Any]:
    """A Spark offset: ``{partition_topic: {"ledger", "entry", "batch"}}``."""
    return {topic: position_to_json(pos) for topic, pos in sorted(positions.items())}


def parse_offsets_option(
    value: Any, *, default: str, allow_earliest: bool = True
) -> Union[str, dict[str, OffsetSpec]]:
    """``"earliest"`` / ``"latest"`` / JSON per topic-partition -> a spec resolved at planning.

    JSON values may be ``{"ledger","entry","batch"}`` objects or the strings
    ``"earliest"``/``"latest"`` (Kafka's ``-2``/``-1`` are accepted too).
    """
    text = default if value is None else str(value).strip()
    lowered = text.lower()
    if lowered in ("earliest", "latest"):
        if lowered == "earliest" and not allow_earliest:
            raise ValueError("endingOffsets cannot be 'earliest'")
        return lowered
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"offsets must be 'earliest', 'latest' or JSON, got {text!r}") from exc
    if not isinstance(parsed, dict):
        raise ValueError(f"offsets JSON must be an object keyed by topic-partition: {text!r}")
    result: dict[str, OffsetSpec] = {}
    for topic, spec in parsed.items():
        if spec in ("earliest", -2):
            if not allow_earliest:
                raise ValueError("endingOffsets cannot be 'earliest'")
            result[normalize_topic(topic)] = "earliest"
        elif spec in ("latest", -1):
            result[normalize_topic(topic)] = "latest"
        else:
            result[normalize_topic(topic)] = position_from_json(spec)
    return result


def normalize_topic(topic: str) -> str:
    """``x`` -> ``persistent://public/default/x`` (how the broker names topics)."""
    topic = topic.strip()
    if "://" in topic:
        return topic
    parts = topic.split("/")
    if len(parts) == 1:
        return f"persistent://public/default/{topic}"
    if len(parts) == 3:
        return f"persistent://{topic}"
    raise ValueError(f"not a topic name: {topic!r}")


@dataclass(frozen=True)
class RangeSpec:
    """One input partition: read ``(start, end]`` of one topic partition."""

    topic: str
    partition: int
    start: Position
    end: Position

    def is_empty(self) -> bool:
        # An end at entry -1 of a ledger ("before its first entry", the end of the ledger
        # before it) still covers the ledgers before: only the order decides.
        return self.end[0] < 0 or position_key(self.end) <= position_key(self.start)

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "start": position_to_json(self.start),
            "end": position_to_json(self.end),
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> RangeSpec:
        return cls(
            topic=str(value["topic"]),
            partition=int(value["partition"]),
            start=position_from_json(value["start"]),
            end=position_from_json(value["end"]),
        )


def partition_index(topic: str) -> int:
    """``...-partition-3`` -> 3; a non-partitioned topic -> -1."""
    head, sep, tail = topic.rpartition("-partition-")
    if sep and head and tail.isdigit():
        return int(tail)
    return -1


def split_ranges(
    ranges: list[RangeSpec],
    min_partitions: int,
    first_positions: Optional[Mapping[str, Position]] = None,
) -> list[RangeSpec]:
    """Split ranges into at least ``min_partitions`` pieces where that is possible.

    Entry ids are contiguous within a ledger, so a range whose start and end lie in the same ledger
    splits exactly at entry boundaries; ranges across ledgers are left whole (their entry counts
    are not known without the admin API). A range from EARLIEST uses ``first_positions`` (the
    first message still in the partition) to place its bounds; its first piece still starts at
    EARLIEST, so nothing is skipped if the head moves.
    """
    result = [r for r in ranges if not r.is_empty()]
    if min_partitions <= len(result):
        return result
    firsts = first_positions or {}

    def effective_start(r: RangeSpec) -> Position:
        if r.start[0] < 0 and r.topic in firsts:
            first = firsts[r.topic]
            return (first[0], first[1] - 1, -1)
        return r.start

    splittable = [
        r for r in result if effective_start(r)[0] == r.end[0] and effective_start(r)[0] >= 0
    ]
    if not splittable:
        return result
    wanted_extra = min_partitions - len(result)
    total_entries = sum(max(1, r.end[1] - effective_start(r)[1]) for r in splittable)
    out: list[RangeSpec] = [r for r in result if r not in splittable]
    for r in splittable:
        eff = effective_start(r)
        # the last fully read entry before the range (a partly read batch counts as unread)
        first_entry = eff[1] if eff[2] < 0 else eff[1] - 1
        entries = r.end[1] - first_entry
        pieces = 1 + (wanted_extra * max(1, entries)) // max(1, total_entries)
        pieces = max(1, min(pieces, entries))
        if pieces == 1:
            out.append(r)
            continue
        ledger = r.end[0]
        bounds = [first_entry + (entries * i) // pieces for i in range(1, pieces)]
        start = r.start
        for bound in bounds:
            end: Position = (ledger, bound, -1)
            if position_key(end) > position_key(start) and position_key(end) > position_key(eff):
                out.append(RangeSpec(r.topic, r.partition, start, end))
                start = end
        out.append(RangeSpec(r.topic, r.partition, start, r.end))
    return out
