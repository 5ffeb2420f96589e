"""Ledger maps of a topic partition: counting and walking entries across ledgers (pure logic).

Pulsar stores a partition as a chain of ledgers. Entry ids are contiguous from 0 within a ledger,
but ledger ids are not contiguous, so a message position ``(ledger, entry, batch)`` says nothing
about how many entries lie between two positions in different ledgers. The broker's admin API
does: ``GET .../internalStats`` lists every ledger still stored with its entry count and size.
With that list a cap of N entries after a position is exact whatever the number of ledgers in
between, and a range splits into pieces of equal entry counts.

Positions are the Data Source's: ``(ledger, entry, batch)`` means "read up to and including this
message"; ``batch == -1`` is the whole entry; ``EARLIEST`` is before everything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from streamwire.spark.offsets import Position, RangeSpec, position_key

__all__ = ["Ledger", "LedgerMap", "allocate", "split_by_ledgers"]


@dataclass(frozen=True)
class Ledger:
    ledger_id: int
    entries: int
    #: bytes the broker stored for the ledger's entries (payloads and metadata); 0 if unknown
    size: int = 0


@dataclass(frozen=True)
class LedgerMap:
    """The ledgers of one partition that hold entries, in order, up to the last message."""

    ledgers: tuple[Ledger, ...]

    @classmethod
    def from_internal_stats(cls, stats: Mapping[str, Any], last: Position) -> LedgerMap:
        """From the admin API's ``internalStats`` of a partition and its last message position.

        The list's newest ledger is still open: its ``entries`` is 0 there, so the last message
        id (read at the same time) gives its count, and ``currentLedgerSize`` its size. Ledgers
        after the last message's ledger (an empty new one) hold nothing to read.
        """
        out: list[Ledger] = []
        seen_last = False
        for info in stats.get("ledgers") or []:
            lid = int(info.get("ledgerId", -1))
            if lid < 0 or (last[0] >= 0 and lid > last[0]):
                continue
            entries = int(info.get("entries") or 0)
            size = int(info.get("size") or 0)
            if lid == last[0]:
                seen_last = True
                entries = last[1] + 1
                if size == 0:
                    size = int(stats.get("currentLedgerSize") or 0)
            if entries > 0:
                out.append(Ledger(lid, entries, size))
        if not seen_last and last[0] >= 0 and last[1] >= 0:
            # The stats lag behind the last message id (a rollover in between): the ledger
            # exists and holds at least the entries up to the last message.
            out.append(Ledger(last[0], last[1] + 1, 0))
            out.sort(key=lambda x: x.ledger_id)
        return cls(tuple(out))

    # -- walking ---------------------------------------------------------------------------
    def cursor(self, pos: Position) -> tuple[int, int]:
        """``(ledger index, entry)`` of the first entry not fully read after ``pos``; the index
        is ``len(ledgers)`` when nothing is left. A partly read batch entry is not fully read."""
        if pos[0] < 0:
            return (0, 0)
        entry = pos[1] if pos[2] >= 0 else pos[1] + 1
        for i, led in enumerate(self.ledgers):
            if led.ledger_id < pos[0]:
                continue
            if led.ledger_id > pos[0]:
                return (i, 0)
            if entry < led.entries:
                return (i, max(0, entry))
            return (i + 1, 0)
        return (len(self.ledgers), 0)

    def entries_after(self, pos: Position) -> int:
        """How many entries are not (fully) read after ``pos``."""
        i, entry = self.cursor(pos)
        if i >= len(self.ledgers):
            return 0
        return self.ledgers[i].entries - entry + sum(x.entries for x in self.ledgers[i + 1 :])

    def advance(self, pos: Position, n: int) -> Optional[Position]:
        """The whole-entry position of the ``n``-th entry (n >= 1) after ``pos``, or None when
        fewer than ``n`` entries are left (the caller then takes the last message)."""
        i, entry = self.cursor(pos)
        left = n
        while i < len(self.ledgers):
            led = self.ledgers[i]
            here = led.entries - entry
            if left <= here:
                return (led.ledger_id, entry + left - 1, -1)
            left -= here
            i, entry = i + 1, 0
        return None

    def bytes_per_entry(self, pos: Position, entries: int) -> float:
        """Average stored bytes per entry over the ledgers holding the next ``entries`` entries
        after ``pos`` (0.0 when the sizes are unknown)."""
        i, entry = self.cursor(pos)
        size = count = 0
        left = max(1, entries)
        while i < len(self.ledgers) and left > 0:
            led = self.ledgers[i]
            if led.size > 0:
                size += led.size
                count += led.entries
            left -= led.entries - entry
            i, entry = i + 1, 0
        return size / count if count else 0.0

    def split(self, start: Position, end: Position, pieces: int) -> list[Position]:
        """Inner bounds cutting ``(start, end]`` into ``pieces`` runs of equal entry counts
        (fewer when the range has fewer entries); every bound is a whole entry."""
        total = self.entries_after(start) - self.entries_after(end)
        pieces = max(1, min(pieces, total))
        bounds: list[Position] = []
        for k in range(1, pieces):
            pos = self.advance(start, (total * k) // pieces)
            if pos is not None and position_key(start) < position_key(pos) < position_key(end):
                if not bounds or position_key(bounds[-1]) < position_key(pos):
                    bounds.append(pos)
        return bounds


def allocate(budget: int, weights: Mapping[str, int]) -> dict[str, int]:
    """Split ``budget`` over keys in proportion to their ``weights`` (backlogs) without
    exceeding it or any weight: floors first, then the units left over to the largest
    remainders (ties by key). Everything when the weights sum to no more than the budget."""
    live = {k: w for k, w in weights.items() if w > 0}
    result = {k: 0 for k in weights}
    total = sum(live.values())
    if total <= budget:
        result.update(live)
        return result
    if budget <= 0:
        return result
    # budget < total, so every share is below its weight, and so is its ceiling
    shares = {k: budget * w / total for k, w in live.items()}
    floors = {k: int(s) for k, s in shares.items()}
    spare = budget - sum(floors.values())
    order: Sequence[str] = sorted(live, key=lambda k: (-(shares[k] - floors[k]), k))
    for k in order[:spare]:
        floors[k] += 1
    result.update(floors)
    return result


def split_by_ledgers(
    ranges: Sequence[RangeSpec], min_partitions: int, maps: Mapping[str, LedgerMap]
) -> list[RangeSpec]:
    """Cut ranges into at least ``min_partitions`` pieces of equal entry counts, across
    ledgers, where the partition's ledger map is known (others stay whole). The extra pieces go
    to the ranges in proportion to their entries; a range from EARLIEST keeps EARLIEST as its
    first piece's start, so nothing is skipped if the head moves."""
    result = [r for r in ranges if not r.is_empty()]
    if min_partitions <= len(result):
        return result
    counts = {
        str(i): maps[r.topic].entries_after(r.start) - maps[r.topic].entries_after(r.end)
        for i, r in enumerate(result)
        if r.topic in maps
    }
    # a range of n entries takes at most n - 1 extra cuts
    extra = allocate(min_partitions - len(result), {k: max(0, n - 1) for k, n in counts.items()})
    out: list[RangeSpec] = []
    for i, r in enumerate(result):
        pieces = 1 + extra.get(str(i), 0)
        if pieces <= 1:
            out.append(r)
            continue
        start = r.start
        for bound in maps[r.topic].split(r.start, r.end, pieces):
            out.append(RangeSpec(r.topic, r.partition, start, bound))
            start = bound
        out.append(RangeSpec(r.topic, r.partition, start, r.end))
    return out
