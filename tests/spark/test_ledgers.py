"""Admission arithmetic across ledgers (pure: a fake broker answers the planner's questions).

The end-to-end proofs on Apache Pulsar with small ledgers are in test_scale.py."""

from __future__ import annotations

from typing import Optional

from streamwire.spark.admission import Caps, EntrySample, Planner
from streamwire.spark.ledgers import Ledger, LedgerMap, allocate, split_by_ledgers
from streamwire.spark.offsets import EARLIEST, Position, RangeSpec, position_key

# Three ledgers of 5 entries (ids 10, 12, 17: ledger ids are not contiguous), the last one open.
STATS = {
    "ledgers": [
        {"ledgerId": 10, "entries": 5, "size": 500},
        {"ledgerId": 12, "entries": 5, "size": 500},
        {"ledgerId": 17, "entries": 0, "size": 0},
    ],
    "currentLedgerSize": 400,
}
LAST: Position = (17, 3, -1)  # 4 entries in the open ledger


def entries_of(lmap: LedgerMap) -> list[tuple[int, int]]:
    return [(x.ledger_id, e) for x in lmap.ledgers for e in range(x.entries)]


def test_ledger_map_counts_and_walks_across_ledgers() -> None:
    lmap = LedgerMap.from_internal_stats(STATS, LAST)
    assert lmap.ledgers == (Ledger(10, 5, 500), Ledger(12, 5, 500), Ledger(17, 4, 400))
    assert lmap.entries_after(EARLIEST) == 14
    assert lmap.entries_after((10, 4, -1)) == 9  # the first ledger read through
    assert lmap.entries_after((12, 2, 3)) == 3 + 4  # entry 2 partly read: still to read
    assert lmap.advance(EARLIEST, 7) == (12, 1, -1)
    assert lmap.advance((10, 3, -1), 1) == (10, 4, -1)
    assert lmap.advance((10, 3, -1), 2) == (12, 0, -1)
    assert lmap.advance((10, 3, -1), 10) == (17, 3, -1)
    assert lmap.advance((10, 3, -1), 11) is None
    # every cut of a walk lands on a real entry, in order
    every = entries_of(lmap)
    for n in range(1, 15):
        end = lmap.advance(EARLIEST, n)
        assert end is not None and (end[0], end[1]) == every[n - 1]
    # a position at "entry -1" of a ledger is the end of the ledger before
    assert lmap.entries_after((12, -1, -1)) == 9
    assert lmap.bytes_per_entry(EARLIEST, 5) == 100.0


def test_split_by_ledgers_cuts_equal_counts() -> None:
    lmap = LedgerMap.from_internal_stats(STATS, LAST)
    r = RangeSpec("persistent://public/default/t", -1, EARLIEST, LAST)
    pieces = split_by_ledgers([r], 4, {r.topic: lmap})
    assert len(pieces) == 4
    assert pieces[0].start == EARLIEST and pieces[-1].end == LAST
    sizes = [lmap.entries_after(p.start) - lmap.entries_after(p.end) for p in pieces]
    assert sum(sizes) == 14 and max(sizes) - min(sizes) <= 1, sizes
    for a, b in zip(pieces, pieces[1:]):
        assert a.end == b.start


def test_allocate_never_exceeds_budget_or_weights() -> None:
    assert allocate(10, {"a": 3, "b": 4}) == {"a": 3, "b": 4}
    got = allocate(10, {"a": 100, "b": 100, "c": 1})
    assert sum(got.values()) == 10 and got["c"] <= 1
    got = allocate(7, {"a": 5000, "b": 5000, "c": 5000})
    assert sum(got.values()) == 7 and max(got.values()) - min(got.values()) <= 1
    assert allocate(0, {"a": 5}) == {"a": 0}


class FakeIo:
    """A partition of ledgers of known entries; each entry holds ``batch`` messages."""

    def __init__(self, ledgers: list[tuple[int, int]], admin: bool, batch: int = 1) -> None:
        self.ledgers = ledgers
        self.admin = admin
        self.batch = batch
        self.peeks: list[Optional[tuple[int, int]]] = []

    def ledger_map(self, topic: str, last: Position) -> Optional[LedgerMap]:
        if not self.admin:
            return None
        return LedgerMap(tuple(Ledger(lid, n, n * 100) for lid, n in self.ledgers))

    def peek(self, topic: str, entry: Optional[tuple[int, int]]) -> Optional[EntrySample]:
        self.peeks.append(entry)
        for lid, n in self.ledgers:
            for e in range(n):
                if entry is None or (lid, e) >= entry:
                    b = 0 if self.batch > 1 else -1
                    return EntrySample((lid, e, b), self.batch, 100 * self.batch)
        return None

    def last(self) -> Position:
        lid, n = self.ledgers[-1]
        return (lid, n - 1, -1)


def drain(io: FakeIo, caps: Caps, topic: str = "persistent://public/default/t") -> list[int]:
    """Plan triggers until the end; the entries each one takes."""
    every = [(lid, e) for lid, n in io.ledgers for e in range(n)]
    start: Position = EARLIEST
    sizes = []
    for _ in range(100):
        end = Planner(io, {topic: start}).ends({topic: io.last()}, caps)[topic]
        if end == start:
            break
        taken = [x for x in every if position_key(start) < position_key((*x, -1))]
        taken = [x for x in taken if position_key((*x, -1)) <= position_key(end)]
        sizes.append(len(taken))
        start = end
    assert start == io.last()
    return sizes


def test_row_cap_is_exact_across_ledgers_with_the_ledger_map() -> None:
    io = FakeIo([(3, 50), (9, 50), (11, 50), (20, 7)], admin=True)
    assert drain(io, Caps(max_rows=40)) == [40, 40, 40, 37]


def test_row_cap_holds_without_the_ledger_map() -> None:
    """By peeking: batches end at ledger ends (fewer than the cap), never more than the cap."""
    io = FakeIo([(3, 50), (9, 50), (11, 50), (20, 7)], admin=False)
    sizes = drain(io, Caps(max_rows=40))
    assert max(sizes) <= 40 and sum(sizes) == 157, sizes
    assert sizes == [40, 10, 40, 10, 40, 10, 7]


def test_batched_entries_count_their_messages() -> None:
    io = FakeIo([(3, 50), (9, 50)], admin=True, batch=10)
    sizes = drain(io, Caps(max_rows=95))  # 9 entries of 10 messages a trigger
    assert sizes == [9] * 11 + [1], sizes


def test_byte_cap_uses_entry_sizes() -> None:
    io = FakeIo([(3, 50), (9, 50)], admin=True)
    assert drain(io, Caps(max_bytes=2500)) == [25, 25, 25, 25]


def test_budget_is_shared_by_backlog_over_partitions() -> None:
    a, b = "persistent://public/default/t-partition-0", "persistent://public/default/t-partition-1"

    class Two(FakeIo):
        def ledger_map(self, topic: str, last: Position) -> Optional[LedgerMap]:
            n = 90 if topic == a else 10
            return LedgerMap((Ledger(5, n, 0),))

    io = Two([(5, 90)], admin=True)
    ends = Planner(io, {a: EARLIEST, b: EARLIEST}).ends({a: (5, 89, -1), b: (5, 9, -1)}, Caps(50))
    assert ends == {a: (5, 44, -1), b: (5, 4, -1)}  # 45 + 5 entries: in proportion, 50 in all


def test_bad_options_are_config_errors() -> None:
    import pytest
    from streamwire.exceptions import ConfigError
    from streamwire.spark.admin import AdminConfig
    from streamwire.spark.config import ClientConfig
    from streamwire.spark.datasource import _by_timestamp, _duration_seconds, _time_option
    from streamwire.spark.stream_read import StreamwireStreamReader

    base = {"service_url": "pulsar://127.0.0.1:1", "topic": "t"}
    client = ClientConfig.from_options(base)
    assert AdminConfig.from_options(base, client) is None
    got = AdminConfig.from_options({**base, "admin.url": "http://127.0.0.1:8080/"}, client)
    assert got is not None and got.url == "http://127.0.0.1:8080"
    with pytest.raises(ConfigError, match=r"admin\.url"):
        AdminConfig.from_options({**base, "adminUrl": "127.0.0.1:8080"}, client)
    assert _duration_seconds("15m") == 900 and _duration_seconds("500ms") == 0.5
    assert _duration_seconds("2") == 2
    with pytest.raises(ConfigError, match="duration"):
        _duration_seconds("soon")
    with pytest.raises(ConfigError, match="startingTime"):
        _time_option({"startingTime": "yesterday"}, "startingTime")
    assert _by_timestamp({"x": '{"t": {"0": 5, "-1": 6}}'}, "x") == {
        "persistent://public/default/t-partition-0": 5,
        "persistent://public/default/t": 6,
    }
    with pytest.raises(ConfigError, match="startingOffsetsByTimestamp"):
        _by_timestamp({"startingOffsetsByTimestamp": "[1]"}, "startingOffsetsByTimestamp")
    with pytest.raises(ConfigError, match="maxRecordsPerTrigger"):
        StreamwireStreamReader({**base, "maxRecordsPerTrigger": "0"})
    with pytest.raises(ConfigError, match="minOffsetsPerTrigger"):
        StreamwireStreamReader({**base, "minOffsetsPerTrigger": "many"})


def test_min_offsets_waits_for_the_backlog_or_the_delay() -> None:
    """minOffsetsPerTrigger: no batch while fewer are waiting, until maxTriggerDelay passes."""
    from streamwire.spark.stream_read import StreamwireStreamReader

    topic = "persistent://public/default/t"

    class OpenLedger(FakeIo):
        def ledger_map(self, topic: str, last: Position) -> Optional[LedgerMap]:
            return LedgerMap.from_internal_stats({"ledgers": [{"ledgerId": 3}]}, last)

    io = OpenLedger([(3, 50)], admin=True)

    class Reader(StreamwireStreamReader):
        last: Position = (3, 9, -1)

        def _latest(self) -> dict[str, Position]:
            return {topic: self.last}

        def _client(self) -> FakeIo:
            return io

    opts = {"service_url": "pulsar://127.0.0.1:1", "topic": "t"}
    r = Reader({**opts, "minOffsetsPerTrigger": "20", "maxTriggerDelay": "1h"})
    import streamwire.spark.admission as admission

    real = admission.BrokerIo
    admission.BrokerIo = lambda client, admin, timeout=10.0: io  # type: ignore[misc,assignment]
    try:
        start = {topic: {"ledger": 3, "entry": 4, "batch": -1}}
        # the first trigger fires (no batch yet to wait from)
        assert r.latestOffset(start, None)[topic] == {"ledger": 3, "entry": 9, "batch": -1}
        Reader.last = (3, 14, -1)  # 10 waiting after (3, 4): fewer than 20
        assert r.latestOffset(start, None) == start
        Reader.last = (3, 30, -1)  # 26 waiting
        assert r.latestOffset(start, None)[topic]["entry"] == 30
        r.max_trigger_delay = 0.0  # the delay has passed: a short batch goes
        Reader.last = (3, 31, -1)
        assert (
            r.latestOffset({topic: {"ledger": 3, "entry": 30, "batch": -1}}, None)[topic]["entry"]
            == 31
        )
    finally:
        admission.BrokerIo = real  # type: ignore[misc]
