"""What the TANK and Pravega Data Sources (``tank_source``, ``pravega_source``) share.

Both read a log whose positions are exact (TANK's contiguous seqs, Pravega's stream cuts), so
both plan the same way: the driver resolves a start and an end position, turns the span
between them into ranges (one JSON text per Spark input partition) and an executor reads
exactly one range. Only the positions and the reading of one range are per protocol; the
options every source takes, the process-local clients, the column check, the reader classes
around the planning, the read loop that waits out a quiet log, and the write loop are here,
so that an option or a fix lands in one place for both.
"""

from __future__ import annotations

import abc
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Optional, TypeVar

from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)

from streamwire.spark.config import get_option

try:  # Spark 4.2+: Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - older Spark

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


try:  # Spark 4.1+: micro-batches reach the writer as Arrow batches
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - older Spark
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as _StreamWriterBase,
    )


__all__ = [
    "ClientCache",
    "LogBatchReader",
    "LogStreamReader",
    "LogStreamWriter",
    "LogWriteCommit",
    "Patience",
    "ReadKnobs",
    "columns_of",
    "service_of",
    "write_batches",
]

log = logging.getLogger("streamwire.spark")

K = TypeVar("K", bound=Hashable)
C = TypeVar("C")
P = TypeVar("P")


def service_of(options: Mapping[str, str]) -> tuple[str, float]:
    """The service URL and the client's operation timeout (s) from ``operationTimeoutMs``."""
    url = str(get_option(options, "service_url", "serviceUrl", "service.url"))
    op = float(get_option(options, "operationTimeoutMs", default="30000")) / 1000.0
    return url, op


@dataclass(frozen=True)
class ReadKnobs:
    """How an executor reads a range: rows per Arrow batch, the wait per read, and how long a
    range may stop advancing before its task fails (seconds). Picklable."""

    max_batch: int
    poll_timeout: float
    read_timeout: float

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ReadKnobs:
        return cls(
            max_batch=int(get_option(options, "maxBatchRows", default="10000")),
            poll_timeout=float(get_option(options, "pollTimeoutMs", default="1000")) / 1000.0,
            read_timeout=float(get_option(options, "readTimeoutMs", default="120000")) / 1000.0,
        )


class ClientCache(Generic[K, C]):
    """One client per process and configuration: Spark reuses its Python workers across
    tasks, so a task connects once per worker; a forked child never uses its parent's client
    (it belongs to the parent's runtime) and makes its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: dict[K, tuple[int, C]] = {}

    def get(self, config: K, create: Callable[[], C]) -> C:
        pid = os.getpid()
        with self._lock:
            hit = self._clients.get(config)
            if hit is not None and hit[0] == pid:
                return hit[1]
            client = create()
            self._clients[config] = (pid, client)
            return client


def columns_of(schema: Any, columns: list[str], who: str) -> list[str]:
    """The columns a read builds: those of the schema the user gave (checked against the
    source's ``columns``), or all of them."""
    fields = getattr(schema, "fields", None)
    if not fields:
        return columns
    names = [f.name for f in fields]
    unknown = [n for n in names if n not in columns]
    if unknown:
        raise ValueError(
            f"streamwire ({who}): unknown column(s) {unknown}; the columns are {', '.join(columns)}"
        )
    return names


class Patience:
    """How long a range may stop advancing: an empty read is the tail not there yet (the range
    was planned from positions the broker gave, so its end exists), but a range that stays
    empty for ``read_timeout`` s fails its task with a ``TimeoutError`` rather than hanging."""

    def __init__(self, read_timeout: float) -> None:
        self.read_timeout = read_timeout
        self.deadline = time.monotonic() + read_timeout

    def waiting(self, batch: Any, stalled: str) -> bool:
        """Whether ``batch`` is empty (read again); raises with ``stalled`` once out of time."""
        if batch.num_rows == 0:
            if time.monotonic() > self.deadline:
                raise TimeoutError(stalled)
            return True
        self.deadline = time.monotonic() + self.read_timeout
        return False


@dataclass
class LogWriteCommit(WriterCommitMessage):
    """What a write task tells the driver: the rows it wrote."""

    rows: int


def write_batches(batches: Iterable[Any], who: str, send: Callable[[Any], None]) -> int:
    """``send`` each non-empty Arrow batch of a write task (which must have a ``value``
    column); the rows sent."""
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if "value" not in batch.schema.names:
            raise ValueError(f"streamwire ({who}): the written rows need a 'value' column")
        send(batch)
        rows += batch.num_rows
    return rows


class LogStreamWriter(_StreamWriterBase):
    """A streaming sink (``writeStream.format("streamwire")``) for TANK and Pravega: each task
    of a micro-batch writes its rows with the protocol's batch writer, which returns only once
    the broker acknowledged (TANK) or the segment store holds (Pravega) every one of them, so
    the micro-batch commits only when all of it is stored. At least once: a task retried by
    Spark, or a micro-batch run again after a failure, writes its rows again."""

    def __init__(self, batch_writer: DataSourceWriter, who: str) -> None:
        self.batch_writer = batch_writer
        self.who = who

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return self.batch_writer.write(iterator)

    def commit(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        rows = sum(m.rows for m in messages if isinstance(m, LogWriteCommit))
        log.info("streamwire (%s): micro-batch %d wrote %d events", self.who, batchId, rows)

    def abort(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        log.warning("streamwire (%s): micro-batch %d aborted (at least once)", self.who, batchId)


class LogBatchReader(DataSourceReader):
    """A batch read between ``startingOffsets`` and ``endingOffsets``: one input partition
    per planned range, or a single empty one when there is nothing to read (Spark wants at
    least one). A source plans (:meth:`plan`) and reads one range (:meth:`read_planned`)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.starting = get_option(options, "startingOffsets")
        self.ending = get_option(options, "endingOffsets")

    @abc.abstractmethod
    def plan(self) -> list[str]:
        """The ranges from the start to the end, each as the JSON text of an input partition."""

    @abc.abstractmethod
    def read_planned(self, text: str) -> Iterator[Any]:
        """The Arrow batches of the range ``text`` (from :meth:`plan`), exactly its records."""

    def partitions(self) -> Sequence[InputPartition]:
        parts = [InputPartition(text) for text in self.plan()]
        return parts or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if partition.value is None:
            return
        yield from self.read_planned(partition.value)


class LogStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow, Generic[P]):
    """Micro-batches between positions Spark checkpoints (``P``, the source's form of them),
    so a restarted query resumes with no gap and no duplicate. ``Trigger.AvailableNow`` reads
    up to the tail when the query started. A source gives the tail (:meth:`tail`), the ranges
    between two checkpointed offsets (:meth:`plan`) and reads one range (:meth:`read_planned`).
    """

    def __init__(self, options: Mapping[str, str]) -> None:
        self.starting = get_option(options, "startingOffsets")
        self._target: Optional[P] = None

    @abc.abstractmethod
    def tail(self) -> P:
        """The positions after the last record now."""

    @abc.abstractmethod
    def plan(self, start: Any, end: Any) -> list[str]:
        """The ranges between two of Spark's offsets, each as the JSON of an input partition."""

    @abc.abstractmethod
    def read_planned(self, text: str) -> Iterator[Any]:
        """The Arrow batches of the range ``text`` (from :meth:`plan`), exactly its records."""

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.tail()

    def partitions(self, start: Any, end: Any) -> Sequence[InputPartition]:
        return [InputPartition(text) for text in self.plan(start, end)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from self.read_planned(partition.value)

    def commit(self, end: Any) -> None:
        """Nothing to do: the checkpoint holds the positions (neither TANK consumer groups
        nor Pravega reader groups are used)."""
