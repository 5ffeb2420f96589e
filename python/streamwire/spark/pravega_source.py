"""The ``streamwire`` Data Source for Pravega (``service_url`` = ``tcp://controller:port``,
options ``scope`` and ``stream``).

Pravega positions are stream cuts: each segment's byte offset, between events. So:

- offsets are ``{"<segment id>": <offset>}`` (a stream cut; JSON in Spark's checkpoint);
- batch reads plan one input partition per segment between ``startingOffsets`` (``earliest``
  = the stream's head, by default, or offsets JSON) and ``endingOffsets`` (``latest`` = the
  tail at planning, or offsets JSON), following the successors of segments sealed in between
  (a scale); each partition reads exactly the events whose frames start in its byte range;
- streaming reads (micro-batches) go from the checkpointed cut to the tail at each trigger:
  no gap and no duplicate across restarts;
- writes: each task's Arrow batches go through ``write_many`` (with the ``routing_key``
  column when present) and the task fails if anything was not written.

Columns: ``value`` (binary), ``stream`` (``scope/stream``), ``segment`` (bigint id),
``offset`` (bigint). Routing keys are not stored with Pravega events, so reads have no key.
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

from streamwire import pravega
from streamwire.spark.config import get_option

try:  # Spark 4.2+: Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - older Spark

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


__all__ = [
    "SCHEMA",
    "PravegaBatchReader",
    "PravegaStreamReader",
    "PravegaWriter",
    "is_pravega",
]

SCHEMA = "value binary, stream string, segment bigint, offset bigint"
COLUMNS = ["value", "stream", "segment", "offset"]

Offsets = dict[str, int]


def is_pravega(options: Mapping[str, str]) -> bool:
    url = get_option(options, "service_url", "serviceUrl", "service.url")
    return bool(url) and str(url).startswith("tcp://")


@dataclass(frozen=True)
class PravegaSourceConfig:
    """What executors need, picklable."""

    client: pravega.ClientConfig
    scope: str
    stream: str
    max_batch: int
    poll_timeout: float
    read_timeout: float

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> PravegaSourceConfig:
        url = str(get_option(options, "service_url", "serviceUrl", "service.url"))
        op = float(get_option(options, "operationTimeoutMs", default="30000")) / 1000.0
        scope = get_option(options, "scope")
        stream = get_option(options, "stream")
        if not scope or not stream:
            raise ValueError("streamwire (Pravega): set the 'scope' and 'stream' options")
        return cls(
            client=pravega.ClientConfig(url, timeout=op),
            scope=str(scope),
            stream=str(stream),
            max_batch=int(get_option(options, "maxBatchRows", default="10000")),
            poll_timeout=float(get_option(options, "pollTimeoutMs", default="1000")) / 1000.0,
            read_timeout=float(get_option(options, "readTimeoutMs", default="120000")) / 1000.0,
        )


_lock = threading.Lock()
_clients: dict[pravega.ClientConfig, tuple[int, pravega.Client]] = {}


def client_for(config: pravega.ClientConfig) -> pravega.Client:
    """One client per process and configuration (a forked child makes its own)."""
    pid = os.getpid()
    with _lock:
        hit = _clients.get(config)
        if hit is not None and hit[0] == pid:
            return hit[1]
        client = config.create()
        _clients[config] = (pid, client)
        return client


# -- offsets (stream cuts) ---------------------------------------------------------------------


def _cut(config: PravegaSourceConfig, offsets: Offsets) -> pravega.StreamCut:
    body = ",".join(
        f"{int(s)}={int(o)}" for s, o in sorted(offsets.items(), key=lambda x: int(x[0]))
    )
    return pravega.StreamCut(f"{config.scope}/{config.stream}:{body}")


def _offsets(cut: pravega.StreamCut) -> Offsets:
    return {str(s): o for s, o in cut.positions.items()}


def _resolve(config: PravegaSourceConfig, spec: Optional[str], default: str) -> Offsets:
    """``earliest`` (the head), ``latest`` (the tail now) or offsets JSON."""
    client = client_for(config.client)
    text = (spec or default).strip()
    if text == "earliest":
        return _offsets(client.head(config.scope, config.stream))
    if text == "latest":
        return _offsets(client.tail(config.scope, config.stream))
    try:
        given = json.loads(text)
        return {str(int(s)): int(o) for s, o in given.items()}
    except (ValueError, AttributeError) as exc:
        raise ValueError(
            f"streamwire (Pravega): offsets must be 'earliest', 'latest' or a stream cut as "
            f'JSON like {{"0": 1024, "1": 0}} (segment id: byte offset), not {text!r}'
        ) from exc


@dataclass(frozen=True)
class Range:
    segment: int
    start: int  # first byte
    end: int  # exclusive

    def to_json(self) -> str:
        return json.dumps([self.segment, self.start, self.end])

    @classmethod
    def from_json(cls, text: str) -> Range:
        s, a, b = json.loads(text)
        return cls(int(s), int(a), int(b))


def _ranges(config: PravegaSourceConfig, start: Offsets, end: Offsets) -> list[Range]:
    client = client_for(config.client)
    spans = client.segment_ranges(
        config.scope, config.stream, _cut(config, start), _cut(config, end)
    )
    return [Range(s, a, b) for s, a, b in spans]


def read_range(config: PravegaSourceConfig, r: Range, columns: Sequence[str]) -> Iterator[Any]:
    """Arrow batches of the events of segment ``r.segment`` whose frames start in
    ``[r.start, r.end)`` — exactly those."""
    import pyarrow.compute as pc

    client = client_for(config.client)
    fetch = ["value", "segment", "offset"]
    cut = pravega.StreamCut(f"{config.scope}/{config.stream}:{r.segment}={r.start}")
    with client.create_reader(config.scope, config.stream, cut) as reader:
        done_to = r.start
        deadline = time.monotonic() + config.read_timeout
        while done_to < r.end:
            batch = reader.read_arrow(config.max_batch, timeout=config.poll_timeout, columns=fetch)
            if batch.num_rows == 0:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"streamwire (Pravega): segment {r.segment} stopped at byte {done_to} "
                        f"before {r.end} (planned from the stream's cuts)"
                    )
                continue
            deadline = time.monotonic() + config.read_timeout
            # Successors may follow once the segment ends: keep this segment's events in range.
            mask = pc.and_(
                pc.equal(batch.column("segment"), r.segment),
                pc.less(batch.column("offset"), r.end),
            )
            kept = batch.filter(mask)
            if kept.num_rows < batch.num_rows:
                done_to = r.end
            if kept.num_rows:
                last_off = kept.column("offset")[-1].as_py()
                last_len = len(kept.column("value")[-1].as_py())
                done_to = max(done_to, last_off + 8 + last_len)
                yield _select(kept, config, columns)


def _select(batch: Any, config: PravegaSourceConfig, columns: Sequence[str]) -> Any:
    import pyarrow as pa

    arrays = []
    for name in columns:
        if name == "stream":
            arrays.append(pa.array([f"{config.scope}/{config.stream}"] * batch.num_rows))
        else:
            arrays.append(batch.column(name))
    return pa.RecordBatch.from_arrays(arrays, names=list(columns))


def _columns(schema: Any) -> list[str]:
    fields = getattr(schema, "fields", None)
    if not fields:
        return COLUMNS
    names = [f.name for f in fields]
    unknown = [n for n in names if n not in COLUMNS]
    if unknown:
        raise ValueError(
            f"streamwire (Pravega): unknown column(s) {unknown}; the columns are "
            f"{', '.join(COLUMNS)}"
        )
    return names


# -- batch read --------------------------------------------------------------------------------


class PravegaBatchReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.config = PravegaSourceConfig.from_options(options)
        self.columns = _columns(schema)
        self.starting = get_option(options, "startingOffsets")
        self.ending = get_option(options, "endingOffsets")

    def partitions(self) -> Sequence[InputPartition]:
        start = _resolve(self.config, self.starting, "earliest")
        end = _resolve(self.config, self.ending, "latest")
        parts = [InputPartition(r.to_json()) for r in _ranges(self.config, start, end)]
        return parts or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if partition.value is None:
            return
        yield from read_range(self.config, Range.from_json(partition.value), self.columns)


# -- streaming read ----------------------------------------------------------------------------


class PravegaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches from the checkpointed stream cut to the tail at each trigger."""

    def __init__(self, options: dict[str, str], schema: Any) -> None:
        self.config = PravegaSourceConfig.from_options(options)
        self.columns = _columns(schema)
        self.starting = get_option(options, "startingOffsets")
        self._target: Optional[Offsets] = None

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = _resolve(self.config, "latest", "latest")

    def initialOffset(self) -> Offsets:
        return _resolve(self.config, self.starting, "latest")

    def latestOffset(self, start: Optional[Offsets] = None, limit: Any = None) -> Offsets:
        return self._target or _resolve(self.config, "latest", "latest")

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        return [InputPartition(r.to_json()) for r in _ranges(self.config, start, end)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        yield from read_range(self.config, Range.from_json(partition.value), self.columns)

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the checkpoint holds the cut (no reader group is used)."""


# -- write -------------------------------------------------------------------------------------


@dataclass
class PravegaWriteCommit(WriterCommitMessage):
    rows: int


class PravegaWriter(DataSourceArrowWriter):
    """Arrow batches -> ``write_many``; the task fails if anything was not written."""

    def __init__(self, options: dict[str, str]) -> None:
        self.config = PravegaSourceConfig.from_options(options)

    def write(self, iterator: Iterator[Any]) -> PravegaWriteCommit:
        client = client_for(self.config.client)
        rows = 0
        with client.create_writer(self.config.scope, self.config.stream) as writer:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                names = batch.schema.names
                if "value" not in names:
                    raise ValueError("streamwire (Pravega): the written rows need a 'value' column")
                keys = batch.column("routing_key") if "routing_key" in names else None
                writer.write_many(batch.column("value"), keys)
                rows += batch.num_rows
            writer.flush()
        return PravegaWriteCommit(rows)
