"""Admission control for streaming reads: where each micro-batch ends under the caps.

``maxRecordsPerTrigger`` and ``maxBytesPerTrigger`` become, per partition, a number of entries
to take after the batch's start; ``minOffsetsPerTrigger`` holds a batch back until enough has
arrived. Counting entries needs the partition's ledgers (entry ids restart in each ledger):

- With ``admin.url``, the admin API's ledger list (:class:`~streamwire.spark.ledgers.LedgerMap`)
  makes the count exact across any number of ledgers, and the budget is shared over the
  partitions in proportion to their backlogs.
- Without it, the protocol alone: exact inside one ledger; when the start and the last message
  lie in different ledgers, the driver peeks at the entry the cap would end on (a reader
  started there reads one message). If that entry exists the batch ends on it; if the broker
  answers from a later ledger, the start's ledger ends before it and the batch takes the rest of
  that ledger (fewer entries than the cap). The budget is split evenly over the partitions.

An entry is one message, or one batch of messages: the planner peeks at the first entry after
each start and takes its message count (``MessageId.batch_size``) and payload size as the
size of the entries that follow. So the row cap is exact for unbatched topics; with batching a
micro-batch exceeds it only when later entries hold more messages than the sampled one. At
least one entry is taken per trigger when there is a backlog, so one entry larger than the
cap is read whole.

The I/O is behind :class:`PartitionIo` so the arithmetic runs without a broker in unit tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from streamwire.spark.ledgers import Ledger, LedgerMap, allocate
from streamwire.spark.offsets import EARLIEST, Position, position_key

__all__ = ["BrokerIo", "Caps", "EntrySample", "PartitionIo", "Planner"]


@dataclass(frozen=True)
class EntrySample:
    """The first entry at or after a position, as a reader sees it."""

    position: Position  # of the message read (its entry's first message delivered)
    messages: int  # messages in the entry: 1 unbatched, the batch size otherwise
    payload_bytes: int  # estimated payload bytes of the whole entry


@dataclass(frozen=True)
class Caps:
    max_rows: Optional[int] = None
    max_bytes: Optional[int] = None

    def any(self) -> bool:
        return bool(self.max_rows) or bool(self.max_bytes)


class PartitionIo(Protocol):
    """What the planner asks the broker, per partition."""

    def ledger_map(self, topic: str, last: Position) -> Optional[LedgerMap]:
        """The partition's ledgers up to ``last`` (None without an admin URL)."""

    def peek(self, topic: str, entry: Optional[tuple[int, int]]) -> Optional[EntrySample]:
        """The first entry at or after ``(ledger, entry)`` (``None``: the earliest)."""


def _first_unread_entry(pos: Position) -> Optional[tuple[int, int]]:
    """The entry a reader should start at to see the first message after ``pos``."""
    if pos[0] < 0:
        return None
    return (pos[0], max(0, pos[1] if pos[2] >= 0 else pos[1] + 1))


class Planner:
    """Plans one trigger's end offsets; caches what it learns about each partition."""

    def __init__(self, io: PartitionIo, starts: Mapping[str, Position]) -> None:
        self.io = io
        self.starts = dict(starts)
        self._maps: dict[str, Optional[LedgerMap]] = {}
        self._samples: dict[str, Optional[EntrySample]] = {}

    # -- per partition -------------------------------------------------------------------
    def _begin(self, topic: str) -> Position:
        return self.starts.get(topic, EARLIEST)

    def _sample(self, topic: str) -> Optional[EntrySample]:
        if topic not in self._samples:
            self._samples[topic] = self.io.peek(topic, _first_unread_entry(self._begin(topic)))
        return self._samples[topic]

    def _map(self, topic: str, last: Position) -> Optional[LedgerMap]:
        """The admin API's ledger map, else one built from what the protocol proves: the
        start and the last message in one ledger (entry ids are contiguous there)."""
        if topic not in self._maps:
            lmap = self.io.ledger_map(topic, last)
            if lmap is None:
                begin = self._resolved_begin(topic)
                if begin is not None and begin[0] == last[0]:
                    lmap = LedgerMap((Ledger(last[0], last[1] + 1),))
            self._maps[topic] = lmap
        return self._maps[topic]

    def _resolved_begin(self, topic: str) -> Optional[Position]:
        """The start, with EARLIEST replaced by "just before the first stored message"."""
        begin = self._begin(topic)
        if begin[0] >= 0:
            return begin
        sample = self._sample(topic)
        if sample is None:
            return None
        first = sample.position
        return (first[0], first[1] - 1, -1)

    def backlog_entries(self, topic: str, last: Position) -> Optional[int]:
        """Entries after the start up to ``last``: exact, or None when not known."""
        lmap = self._map(topic, last)
        begin = self._resolved_begin(topic)
        if lmap is None or begin is None:
            return None
        return lmap.entries_after(begin)

    def _messages_per_entry(self, topic: str) -> int:
        sample = self._sample(topic)
        return max(1, sample.messages) if sample is not None else 1

    def _bytes_per_entry(self, topic: str, last: Position, entries: int) -> int:
        sample = self._sample(topic)
        stored = 0.0
        lmap = self._map(topic, last)
        begin = self._resolved_begin(topic)
        if lmap is not None and begin is not None:
            stored = lmap.bytes_per_entry(begin, entries)
        # The larger of the sampled payload and the stored average: the stored size counts
        # metadata, the payload counts what compression hides; either may be the larger.
        return max(1, int(sample.payload_bytes) if sample else 0, int(stored + 0.5))

    # -- the whole trigger ---------------------------------------------------------------
    def backlog_rows(self, latest: Mapping[str, Position]) -> tuple[int, bool]:
        """Messages waiting after the starts (estimated by the sampled entry sizes), and
        whether the figure is exact rather than a lower bound (a partition spanning ledgers
        without ``admin.url`` counts only its last ledger's entries)."""
        total, exact = 0, True
        for topic, last in self._pending(latest).items():
            entries = self.backlog_entries(topic, last)
            if entries is None:
                exact = False
                entries = last[1] + 1
            total += entries * self._messages_per_entry(topic)
        return total, exact

    def _pending(self, latest: Mapping[str, Position]) -> dict[str, Position]:
        return {
            t: last
            for t, last in latest.items()
            if last[1] >= 0 and position_key(last) > position_key(self._begin(t))
        }

    def ends(self, latest: Mapping[str, Position], caps: Caps) -> dict[str, Position]:
        """End offsets for this trigger: within ``caps``, never before the starts."""
        result = {t: self._begin(t) for t in latest}
        for topic, pos in self.starts.items():
            result.setdefault(topic, pos)  # partitions gone from the listing stay put
        pending = self._pending(latest)
        if not pending:
            return result
        if not caps.any():
            result.update(pending)
            return result
        backlogs = {t: self.backlog_entries(t, last) for t, last in pending.items()}
        known = all(b is not None for b in backlogs.values())
        takes: dict[str, Optional[int]] = dict.fromkeys(pending)

        def share(budget: int, unit: dict[str, int]) -> dict[str, int]:
            """Entries per partition for ``budget`` units, ``unit[t]`` units per entry."""
            if known:
                weights = {t: (backlogs[t] or 0) * unit[t] for t in pending}
                given = allocate(budget, weights)
            else:
                given = {t: budget // len(pending) for t in pending}
            return {t: given[t] // unit[t] for t in pending}

        if caps.max_rows:
            per_entry = {t: self._messages_per_entry(t) for t in pending}
            for t, n in share(int(caps.max_rows), per_entry).items():
                takes[t] = n
        if caps.max_bytes:
            guess = {t: takes[t] or backlogs[t] or 1 for t in pending}
            sizes = {t: self._bytes_per_entry(t, pending[t], guess[t] or 1) for t in pending}
            for t, n in share(int(caps.max_bytes), sizes).items():
                current = takes[t]
                takes[t] = n if current is None else min(current, n)
        if not any(takes.values()):
            # Progress over precision: the caps are smaller than one entry. Take one entry of
            # the partition with the largest known backlog (the first one otherwise).
            first = max(pending, key=lambda t: (backlogs[t] or 0, t))
            takes[first] = 1
        for topic, last in pending.items():
            n = takes[topic] or 0
            if n > 0:
                result[topic] = self._advance(topic, last, n)
        return result

    def _advance(self, topic: str, last: Position, n: int) -> Position:
        """The position ``n`` entries after the start, at most ``last``."""
        begin = self._resolved_begin(topic)
        if begin is None:
            return last
        lmap = self._map(topic, last)
        end: Optional[Position]
        if lmap is not None:
            end = lmap.advance(begin, n)
        else:
            end = self._advance_by_peeking(topic, begin, n)
        if end is None or position_key(end) >= position_key(last):
            return last
        if position_key(end) <= position_key(self._begin(topic)):
            return self._begin(topic)
        return end

    def _advance_by_peeking(self, topic: str, begin: Position, n: int) -> Optional[Position]:
        """Without a ledger map, across ledgers: end on the ``n``-th entry of the start's
        ledger if it exists, else at the end of that ledger (the broker's answer from the
        next ledger proves it ended)."""
        last_read = begin[1] if begin[2] < 0 else begin[1] - 1
        target = (begin[0], last_read + n)
        found = self.io.peek(topic, target)
        if found is None:
            return None
        at = found.position
        if (at[0], at[1]) == target:
            return (target[0], target[1], -1)
        if at[0] == begin[0]:
            return None  # not expected (ids are contiguous in a ledger): take everything
        return (at[0], at[1] - 1, -1)  # just before the next ledger's first stored entry


class BrokerIo:
    """:class:`PartitionIo` on a live client (driver side), plus the admin API if given."""

    def __init__(self, client: Any, admin: Any = None, timeout: float = 10.0) -> None:
        self.client = client
        self.admin = admin
        self.timeout = timeout

    def ledger_map(self, topic: str, last: Position) -> Optional[LedgerMap]:
        if self.admin is None or not topic.startswith("persistent://"):
            return None
        from streamwire.spark.admin import internal_stats

        return LedgerMap.from_internal_stats(internal_stats(self.admin, topic), last)

    def peek(self, topic: str, entry: Optional[tuple[int, int]]) -> Optional[EntrySample]:
        import streamwire
        from streamwire.spark.offsets import partition_index
        from streamwire.spark.reading import reader_start_entry

        at = reader_start_entry((entry[0], entry[1], 0)) if entry is not None else None
        start: Any = "earliest"
        if at is not None:
            start = streamwire.MessageId(at[0], at[1], partition_index(topic))
        # A queue of one: the broker dispatches one entry, not a thousand, for one message.
        reader = self.client.create_reader(
            topic, start, inclusive=at is not None, receiver_queue_size=1
        )
        try:
            got = reader.read_many(1, timeout=self.timeout)
            if not got:
                return None
            msg = got[0]
            mid = msg.message_id
            batch = int(mid.batch_size) if int(mid.batch_index) >= 0 else 1
            batch = max(1, batch)
            return EntrySample(
                (int(mid.ledger_id), int(mid.entry_id), int(mid.batch_index)),
                batch,
                len(msg.data()) * batch,
            )
        finally:
            reader.close()
