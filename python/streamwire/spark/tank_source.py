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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pyspark.sql.datasource import DataSourceArrowWriter

from streamwire import tank
from streamwire.spark import _log_source as log
from streamwire.spark.config import get_option, has_scheme, parse_bool

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
    return has_scheme(options, "tank://")


@dataclass(frozen=True)
class TankSourceConfig:
    """What executors need, picklable."""

    client: tank.ClientConfig
    topics: tuple[str, ...]
    read: log.ReadKnobs
    fail_on_data_loss: bool

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> TankSourceConfig:
        url, op = log.service_of(options)
        topic = get_option(options, "topic")
        topics = get_option(options, "topics")
        if bool(topic) == bool(topics):
            raise ValueError("streamwire (TANK): set exactly one of 'topic' or 'topics'")
        names = tuple(t.strip() for t in str(topic or topics).split(",") if t.strip())
        return cls(
            client=tank.ClientConfig(url, operation_timeout=op),
            topics=names,
            read=log.ReadKnobs.from_options(options),
            fail_on_data_loss=parse_bool(get_option(options, "failOnDataLoss"), True),
        )


_clients: log.ClientCache[tank.ClientConfig, tank.Client] = log.ClientCache()


def client_for(config: tank.ClientConfig) -> tank.Client:
    return _clients.get(config, config.create)


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
    knobs = config.read
    with client.create_consumer(
        r.topic,
        partitions=[r.partition],
        start={r.partition: r.start},
        max_wait=knobs.poll_timeout,
        on_out_of_range="error" if config.fail_on_data_loss else "earliest",
        queue_bytes=8 * 1024 * 1024,
    ) as consumer:
        next_seq = r.start
        patience = log.Patience(knobs.read_timeout)
        while next_seq < r.end:
            batch = consumer.receive_arrow(
                min(knobs.max_batch, r.end - next_seq), timeout=knobs.poll_timeout, columns=fetch
            )
            stalled = (
                f"streamwire (TANK): {r.topic}/{r.partition} stopped at seq {next_seq} "
                f"before {r.end} (planned from the broker's high water)"
            )
            if patience.waiting(batch, stalled):
                continue
            seqs = batch.column("seq")
            last = seqs[-1].as_py()
            if last >= r.end:
                batch = batch.filter(pc.less(seqs, r.end))
            next_seq = last + 1
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


# -- batch read --------------------------------------------------------------------------------


class TankBatchReader(log.LogBatchReader):
    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.config = TankSourceConfig.from_options(options)
        self.columns = log.columns_of(schema, COLUMNS, "TANK")
        super().__init__(options)

    def plan(self) -> list[str]:
        bounds = _bounds(self.config)
        start = _resolve(self.starting, "earliest", bounds)
        end = _resolve(self.ending, "latest", bounds)
        return [r.to_json() for r in _ranges(start, end)]

    def read_planned(self, text: str) -> Iterator[Any]:
        return read_range(self.config, Range.from_json(text), self.columns)


# -- streaming read ----------------------------------------------------------------------------


class TankStreamReader(log.LogStreamReader[Offsets]):
    """Micro-batches over seq ranges; offsets as in the module doc."""

    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.config = TankSourceConfig.from_options(options)
        self.columns = log.columns_of(schema, COLUMNS, "TANK")
        super().__init__(options)
        mr = get_option(options, "maxRecordsPerTrigger", "maxOffsetsPerTrigger")
        self.max_records = int(mr) if mr is not None else None

    def tail(self) -> Offsets:
        return _resolve("latest", "latest", _bounds(self.config))

    def initialOffset(self) -> Offsets:
        return _resolve(self.starting, "latest", _bounds(self.config))

    def latestOffset(self, start: Optional[Offsets] = None, limit: Any = None) -> Offsets:
        latest = self._target or self.tail()
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

    def plan(self, start: Offsets, end: Offsets) -> list[str]:
        return [r.to_json() for r in _ranges(start, end)]

    def read_planned(self, text: str) -> Iterator[Any]:
        return read_range(self.config, Range.from_json(text), self.columns)


# -- write -------------------------------------------------------------------------------------


class TankWriter(DataSourceArrowWriter):
    """Arrow batches -> ``send_many``; the task fails if anything was not acknowledged."""

    def __init__(self, options: dict[str, str]) -> None:
        self.config = TankSourceConfig.from_options(options)
        if len(self.config.topics) != 1:
            raise ValueError("streamwire (TANK): writes take exactly one 'topic'")
        part = get_option(options, "partition")
        self.partition = int(part) if part is not None else None
        self.compression = get_option(options, "compression")

    def write(self, iterator: Iterator[Any]) -> log.LogWriteCommit:
        import pyarrow as pa

        client = client_for(self.config.client)
        producer = client.create_producer(
            self.config.topics[0],
            compression=self.compression,
        )

        def send(batch: Any) -> None:
            names = batch.schema.names
            keys = batch.column("key") if "key" in names else None
            ts = batch.column("timestamp") if "timestamp" in names else None
            producer.send_many(
                batch.column("value"), keys=keys, timestamps=ts, partition=self.partition
            )

        try:
            batches = (
                b if isinstance(b, pa.RecordBatch) else pa.RecordBatch.from_pylist([b.asDict()])
                for b in iterator
            )
            rows = log.write_batches(batches, "TANK", send)
            producer.flush()
        finally:
            producer.close()
        return log.LogWriteCommit(rows)
