"""The ``streamwire`` Data Source for TANK (``service_url`` = ``tank://host:port``).

TANK numbers the messages of a partition with contiguous sequence numbers (from 1), so an
offset is simply the next seq per partition and every range is exact:

- offsets are ``{"<topic>": {"<partition>": <next seq>}}`` (the end of a range is exclusive);
- batch reads plan one input partition per TANK partition between ``startingOffsets``
  (``earliest`` by default, or offsets JSON) and ``endingOffsets`` (``latest`` = the high
  water at planning, or offsets JSON), each read with a consumer started at its first seq;
- streaming reads (micro-batches) resume from Spark's checkpoint: no gap and no duplicate,
  with ``maxRecordsPerTrigger`` spread evenly over the partitions (exact: seqs are
  contiguous);
- writes are at-least-once: each task's Arrow batches go through ``send_many`` and the task
  fails if anything was not acknowledged.

Columns: ``value`` (binary), ``key`` (binary), ``timestamp`` (timestamp, ms), ``topic``,
``partition`` (int), ``seq`` (bigint). Writes take ``value`` (binary or string) and optional
``key`` and ``timestamp`` columns; ``partition`` as an option sends every row there, else
rows with a key go to ``fnv1a_32(key) % partitions`` and rows without one round-robin.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

from streamwire import tank
from streamwire.spark.config import get_option, parse_bool

try:  # Spark 4.2+: Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - older Spark

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


__all__ = [
    "SCHEMA",
    "TankBatchReader",
    "TankStreamReader",
    "TankWriter",
    "is_tank",
]

SCHEMA = "value binary, key binary, timestamp timestamp, topic string, partition int, seq bigint"
COLUMNS = ["value", "key", "timestamp", "topic", "partition", "seq"]

Offsets = dict[str, dict[str, int]]


def is_tank(options: Mapping[str, str]) -> bool:
    url = get_option(options, "service_url", "serviceUrl", "service.url")
    return bool(url) and str(url).startswith("tank://")


@dataclass(frozen=True)
class TankSourceConfig:
    """What executors need, picklable."""

    client: tank.ClientConfig
    topics: tuple[str, ...]
    max_batch: int
    poll_timeout: float
    fail_on_data_loss: bool
    read_timeout: float

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> TankSourceConfig:
        url = str(get_option(options, "service_url", "serviceUrl", "service.url"))
        op = float(get_option(options, "operationTimeoutMs", default="30000")) / 1000.0
        topic = get_option(options, "topic")
        topics = get_option(options, "topics")
        if bool(topic) == bool(topics):
            raise ValueError("streamwire (TANK): set exactly one of 'topic' or 'topics'")
        names = tuple(t.strip() for t in str(topic or topics).split(",") if t.strip())
        return cls(
            client=tank.ClientConfig(url, operation_timeout=op),
            topics=names,
            max_batch=int(get_option(options, "maxBatchRows", default="10000")),
            poll_timeout=float(get_option(options, "pollTimeoutMs", default="1000")) / 1000.0,
            fail_on_data_loss=parse_bool(get_option(options, "failOnDataLoss"), True),
            read_timeout=float(get_option(options, "readTimeoutMs", default="120000")) / 1000.0,
        )


# -- process-local clients (fork-aware: a child never uses its parent's) -----------------------

_lock = threading.Lock()
_clients: dict[tank.ClientConfig, tuple[int, tank.Client]] = {}


def client_for(config: tank.ClientConfig) -> tank.Client:
    pid = os.getpid()
    with _lock:
        hit = _clients.get(config)
        if hit is not None and hit[0] == pid:
            return hit[1]
        client = config.create()
        _clients[config] = (pid, client)
        return client


# -- offsets -----------------------------------------------------------------------------------


def _bounds(config: TankSourceConfig) -> dict[str, list[tank.PartitionInfo]]:
    client = client_for(config.client)
    return {t: client.partitions(t) for t in config.topics}


def _resolve(
    spec: Optional[str], default: str, bounds: dict[str, list[tank.PartitionInfo]]
) -> Offsets:
    """``earliest`` (first available), ``latest`` (high water + 1) or offsets JSON."""
    text = (spec or default).strip()
    if text in ("earliest", "latest"):
        return {
            t: {
                str(p.partition): p.first_available if text == "earliest" else p.high_water + 1
                for p in parts
            }
            for t, parts in bounds.items()
        }
    try:
        given = json.loads(text)
    except ValueError as exc:
        raise ValueError(
            f"streamwire (TANK): offsets must be 'earliest', 'latest' or JSON like "
            f'{{"topic": {{"0": 42}}}}, not {text!r}'
        ) from exc
    out: Offsets = {}
    for t, parts in bounds.items():
        per = given.get(t, {})
        out[t] = {
            str(p.partition): int(per.get(str(p.partition), p.first_available)) for p in parts
        }
    return out


@dataclass(frozen=True)
class Range:
    topic: str
    partition: int
    start: int  # first seq to read
    end: int  # exclusive

    def to_json(self) -> str:
        return json.dumps([self.topic, self.partition, self.start, self.end])

    @classmethod
    def from_json(cls, text: str) -> Range:
        t, p, s, e = json.loads(text)
        return cls(str(t), int(p), int(s), int(e))


def _ranges(start: Offsets, end: Offsets) -> list[Range]:
    out = []
    for topic, parts in end.items():
        for p, stop in parts.items():
            begin = start.get(topic, {}).get(p, 1)
            if int(stop) > int(begin):
                out.append(Range(topic, int(p), int(begin), int(stop)))
    return out


def read_range(config: TankSourceConfig, r: Range, columns: Sequence[str]) -> Iterator[Any]:
    """Arrow batches of ``r``'s messages (seq in [start, end)), exactly those."""
    import pyarrow.compute as pc

    client = client_for(config.client)
    want = list(columns)
    fetch = want if "seq" in want else [*want, "seq"]
    with client.create_consumer(
        r.topic,
        partitions=[r.partition],
        start={r.partition: r.start},
        max_wait=config.poll_timeout,
        on_out_of_range="error" if config.fail_on_data_loss else "earliest",
        queue_bytes=8 * 1024 * 1024,
    ) as consumer:
        next_seq = r.start
        deadline = time.monotonic() + config.read_timeout
        while next_seq < r.end:
            batch = consumer.receive_arrow(
                min(config.max_batch, r.end - next_seq), timeout=config.poll_timeout, columns=fetch
            )
            if batch.num_rows == 0:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"streamwire (TANK): {r.topic}/{r.partition} stopped at seq {next_seq} "
                        f"before {r.end} (planned from the broker's high water)"
                    )
                continue
            seqs = batch.column("seq")
            last = seqs[-1].as_py()
            if last >= r.end:
                batch = batch.filter(pc.less(seqs, r.end))
            next_seq = last + 1
            deadline = time.monotonic() + config.read_timeout
            if batch.num_rows:
                yield _spark_types(batch.select(want) if fetch != want else batch)


def _spark_types(batch: Any) -> Any:
    """Spark wants timestamps as microseconds in UTC; the client hands milliseconds."""
    import pyarrow as pa

    if "timestamp" not in batch.schema.names:
        return batch
    i = batch.schema.get_field_index("timestamp")
    ts = batch.column(i).cast(pa.timestamp("us", tz="UTC"))
    return batch.set_column(i, pa.field("timestamp", ts.type), ts)


def _columns(schema: Any) -> list[str]:
    fields = getattr(schema, "fields", None)
    if not fields:
        return COLUMNS
    names = [f.name for f in fields]
    unknown = [n for n in names if n not in COLUMNS]
    if unknown:
        raise ValueError(
            f"streamwire (TANK): unknown column(s) {unknown}; the columns are {', '.join(COLUMNS)}"
        )
    return names


# -- batch read --------------------------------------------------------------------------------


class TankBatchReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.config = TankSourceConfig.from_options(options)
        self.columns = _columns(schema)
        self.starting = get_option(options, "startingOffsets")
        self.ending = get_option(options, "endingOffsets")

    def partitions(self) -> Sequence[InputPartition]:
        bounds = _bounds(self.config)
        start = _resolve(self.starting, "earliest", bounds)
        end = _resolve(self.ending, "latest", bounds)
        parts = [InputPartition(r.to_json()) for r in _ranges(start, end)]
        return parts or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if partition.value is None:
            return
        yield from read_range(self.config, Range.from_json(partition.value), self.columns)


# -- streaming read ----------------------------------------------------------------------------


class TankStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over seq ranges; offsets as in the module doc."""

    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.config = TankSourceConfig.from_options(options)
        self.columns = _columns(schema)
        self.starting = get_option(options, "startingOffsets")
        mr = get_option(options, "maxRecordsPerTrigger", "maxOffsetsPerTrigger")
        self.max_records = int(mr) if mr is not None else None
        self._target: Optional[Offsets] = None

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = _resolve("latest", "latest", _bounds(self.config))

    def initialOffset(self) -> Offsets:
        return _resolve(self.starting, "latest", _bounds(self.config))

    def latestOffset(self, start: Optional[Offsets] = None, limit: Any = None) -> Offsets:
        latest = self._target or _resolve("latest", "latest", _bounds(self.config))
        begin = start or {}
        max_rows = getattr(limit, "max_rows", None) or self.max_records
        count = sum(len(p) for p in latest.values())
        out: Offsets = {}
        for topic, parts in latest.items():
            out[topic] = {}
            for p, hw_next in parts.items():
                first = int(begin.get(topic, {}).get(p, hw_next))
                end = max(first, hw_next)  # never move backwards
                if max_rows:
                    end = min(end, first + max(1, int(max_rows) // max(1, count)))
                out[topic][p] = end
        return out

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        return [InputPartition(r.to_json()) for r in _ranges(start, end)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from read_range(self.config, Range.from_json(partition.value), self.columns)

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the checkpoint holds the offsets (TANK has no consumer groups)."""


# -- write -------------------------------------------------------------------------------------


@dataclass
class TankWriteCommit(WriterCommitMessage):
    rows: int


class TankWriter(DataSourceArrowWriter):
    """Arrow batches -> ``send_many``; the task fails if anything was not acknowledged."""

    def __init__(self, options: dict[str, str]) -> None:
        self.config = TankSourceConfig.from_options(options)
        if len(self.config.topics) != 1:
            raise ValueError("streamwire (TANK): writes take exactly one 'topic'")
        part = get_option(options, "partition")
        self.partition = int(part) if part is not None else None
        self.compression = get_option(options, "compression")

    def write(self, iterator: Iterator[Any]) -> TankWriteCommit:
        import pyarrow as pa

        client = client_for(self.config.client)
        producer = client.create_producer(
            self.config.topics[0],
            compression=self.compression,
        )
        rows = 0
        try:
            for batch in iterator:
                if not isinstance(batch, pa.RecordBatch):
                    batch = pa.RecordBatch.from_pylist([r.asDict() for r in [batch]])
                if batch.num_rows == 0:
                    continue
                names = batch.schema.names
                if "value" not in names:
                    raise ValueError("streamwire (TANK): the written rows need a 'value' column")
                keys = batch.column("key") if "key" in names else None
                ts = batch.column("timestamp") if "timestamp" in names else None
                producer.send_many(
                    batch.column("value"), keys=keys, timestamps=ts, partition=self.partition
                )
                rows += batch.num_rows
            producer.flush()
        finally:
            producer.close()
        return TankWriteCommit(rows)
