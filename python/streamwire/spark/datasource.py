"""``streamwire`` as a PySpark Python Data Source (batch + streaming, read + write).

Everything Spark pickles (the source, readers, writers, input partitions) holds only options and
JSON-able offsets; live clients come from the process-local cache wherever the code runs.

Guarantees, plainly:

- Reads are bounded by end offsets resolved on the driver (``latest`` = the last message id at
  planning) and replayable: exactly-once with an idempotent sink. Streaming resumes from the
  checkpointed offsets.
- Writes are at-least-once: every task flushes and raises if anything is undelivered, and a
  retried task sends its rows again. With ``producerName=<prefix>`` (batch writes) they become
  effectively-once on a broker with deduplication on: each task's producer is named
  ``<prefix>-<partitionId>`` and numbers its rows from a sequence base fixed on the driver when
  the job starts, so a retried attempt sends the same ids and the broker drops the ones it
  already has. This needs a deterministic input order within each Spark partition, at most
  4,194,304 rows per task and topic, and one job at a time per prefix; unkeyed rows of a
  partitioned topic then go to partition ``sequence_id % partitions``. Streaming writes stay
  at-least-once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)

# Only light modules at import: Spark imports this module in every planner worker (the lookup of
# Python data sources, the creation of the source, write planning, the commit), and most of them
# never touch the engine. The Pulsar, TANK and Pravega paths import what they need when called.
from streamwire.spark import _timing
from streamwire.spark._columns import spark_schema_ddl
from streamwire.spark.config import (
    ClientConfig,
    expand_passthrough,
    get_option,
    has_scheme,
    parse_bool,
)

if TYPE_CHECKING:
    from streamwire.spark.offsets import Position
    from streamwire.spark.reading import ReadOptions

try:  # Spark 4.1+
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - older Spark
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as _StreamWriterBase,
    )

__all__ = ["StreamwireDataSource", "WriteCommit", "register"]

log = logging.getLogger("streamwire.spark")


def register(spark: Any, *, check_workers: bool = True) -> None:
    """Register the ``streamwire`` short name on ``spark`` (``spark.read.format("streamwire")``);
    with ``check_workers`` first run one one-row task to check that the workers' Python imports
    streamwire (:func:`streamwire.spark.workers.check_workers`), raising
    :class:`~streamwire.exceptions.WorkerPythonError` if not."""
    if check_workers:
        from streamwire.spark.workers import check_workers as _check

        _check(spark)
    spark.dataSource.register(StreamwireDataSource)


def _is_tank(options: Mapping[str, str]) -> bool:
    return has_scheme(options, "tank://")


def _is_pravega(options: Mapping[str, str]) -> bool:
    return has_scheme(options, "tcp://") or has_scheme(options, "tls://")


def _topics(options: Mapping[str, str]) -> tuple[list[str], Optional[str]]:
    topic = get_option(options, "topic")
    topics = get_option(options, "topics")
    pattern = get_option(options, "topicsPattern", "topics.pattern")
    given = [x for x in (topic, topics, pattern) if x]
    if len(given) != 1:
        raise ValueError(
            "streamwire: set exactly one of 'topic', 'topics' (comma separated) or 'topicsPattern'"
        )
    names = [t.strip() for t in str(topic or topics or "").split(",") if t.strip()]
    return names, (str(pattern) if pattern else None)


def _columns(schema: Any, options: Mapping[str, str]) -> Optional[tuple[int, ...]]:
    """A user-given schema (``spark.read.schema("value binary, publish_time timestamp")``) selects
    columns: only those are built and sent to the JVM. Spark passes our own schema otherwise."""
    fields = getattr(schema, "fields", None)
    if fields is None:
        return None
    from streamwire.spark.reading import projection

    scala = parse_bool(get_option(options, "scalaNames"), False)
    return projection([(f.name, f.dataType.simpleString()) for f in fields], scala)


def _typed_schema(options: Mapping[str, str]) -> Any:
    """The record schema of a typed read (``valueSchema`` option; by default the topic's own,
    when it is JSON or Avro), or None: the raw ``value`` column."""
    from streamwire.spark.typed_read import resolve_schema, schema_partitions

    config = ClientConfig.from_options(options)
    topics, pattern = _topics(options)
    # A client of its own, closed again: schema() runs in planner workers, which should not
    # load the cache and read modules (nor keep a connection) for one registry look-up.
    clients: list[Any] = []

    def client() -> Any:
        if not clients:
            clients.append(config.new_client())
        return clients[0]

    try:
        with _timing.phase("schema: registry"):
            return resolve_schema(
                options, client, lambda: schema_partitions(client(), topics, pattern)
            )
    finally:
        for c in clients:
            c.close()


def _pulsar_read_options(options: Mapping[str, str], schema: Any) -> ReadOptions:
    """Read options for ``schema`` (Spark's: ours, or a user-given one selecting columns)."""
    from dataclasses import replace

    typed = _typed_schema(options)
    if typed is None:
        return _read_options(options, _columns(schema, options))
    from streamwire.spark.typed_read import select_output, spark_schema

    scala = parse_bool(get_option(options, "scalaNames"), False)
    out = select_output(spark_schema(typed, scala), schema)
    return replace(_read_options(options), typed=typed, typed_output=out.json())


def _read_options(
    options: Mapping[str, str], columns: Optional[tuple[int, ...]] = None
) -> ReadOptions:
    from streamwire.spark.reading import ReadOptions

    options = expand_passthrough(options, "reader")
    # startingTime / endingTime are resolved to positions on the driver (a seek by publish
    # time, see _time_option), not filtered here: the read covers the positions between.
    _time_option(options, "startingTime")
    _time_option(options, "endingTime")
    return ReadOptions(
        scala_names=parse_bool(get_option(options, "scalaNames"), False),
        fail_on_data_loss=parse_bool(get_option(options, "failOnDataLoss"), True),
        max_batch=int(get_option(options, "maxBatchRows", default="10000")),
        poll_timeout=float(get_option(options, "pollTimeoutMs", default="1000")) / 1000.0,
        receiver_queue_size=int(get_option(options, "receiverQueueSize", default="1000")),
        reader_name=get_option(options, "readerName"),
        columns=columns,
    )


def _time_option(options: Mapping[str, str], name: str) -> Optional[int]:
    """A publish time in ms since the epoch (``startingTime`` / ``endingTime``)."""
    value = get_option(options, name)
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        from streamwire.exceptions import ConfigError

        raise ConfigError(
            f"streamwire: {name} must be a publish time in ms since the epoch, got {value!r}"
        ) from None


def _by_timestamp(options: Mapping[str, str], name: str) -> Optional[dict[str, int]]:
    """``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp``: publish times (ms) per
    partition, as ``{"<partition topic>": ts}`` or Kafka's ``{"<topic>": {"<index>": ts}}``
    (index -1 for a non-partitioned topic)."""
    import json

    from streamwire.exceptions import ConfigError
    from streamwire.spark.offsets import normalize_topic

    value = get_option(options, name)
    if value is None:
        return None
    try:
        parsed = json.loads(str(value))
        if not isinstance(parsed, dict):
            raise ValueError("not an object")
        out: dict[str, int] = {}
        for topic, spec in parsed.items():
            full = normalize_topic(str(topic))
            if isinstance(spec, dict):
                for index, ts in spec.items():
                    i = int(index)
                    out[full if i < 0 else f"{full}-partition-{i}"] = int(ts)
            else:
                out[full] = int(spec)
        return out
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"streamwire: {name} must be JSON {{topic: {{partition: ms}}}} or "
            f"{{partition topic: ms}} ({exc}): {value!r}"
        ) from None


def _per_partition_times(
    client: Any, times: Mapping[str, int], partitions: Sequence[str]
) -> dict[str, Optional[Position]]:
    """The first message at or after each named partition's time (None: none yet)."""
    from streamwire.exceptions import ConfigError
    from streamwire.spark.reading import position_at_time

    unknown = sorted(set(times) - set(partitions))
    if unknown:
        raise ConfigError(f"streamwire: offsets by timestamp name unknown partitions: {unknown}")
    return {t: position_at_time(client, t, ts) for t, ts in times.items()}


def _time_offsets(client: Any, partitions: Sequence[str], timestamp_ms: int) -> dict[str, Any]:
    """Per partition: the first message published at or after ``timestamp_ms`` (an inclusive
    offsets spec), or "latest" when there is none yet."""
    from streamwire.spark.reading import position_at_time

    out: dict[str, Any] = {}
    for topic in partitions:
        pos = position_at_time(client, topic, timestamp_ms)
        out[topic] = pos if pos is not None else "latest"
    return out


def _time_ends(
    client: Any, partitions: Sequence[str], timestamp_ms: int
) -> dict[str, Optional[Position]]:
    """Per partition: the last position before the first message published at or after
    ``timestamp_ms`` (None: no such message yet, so no end known)."""
    from streamwire.spark.offsets import predecessor
    from streamwire.spark.reading import position_at_time

    out: dict[str, Optional[Position]] = {}
    for topic in partitions:
        pos = position_at_time(client, topic, timestamp_ms)
        # a batch message's predecessor keeps the batch indexes before it
        out[topic] = predecessor(pos) if pos is not None else None
    return out


def _duration_seconds(text: str) -> float:
    """Kafka's ``maxTriggerDelay`` spellings: ``15m``, ``30s``, ``500ms``, ``1h``, seconds."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*", str(text).lower())
    if m is None:
        from streamwire.exceptions import ConfigError

        raise ConfigError(f"streamwire: not a duration: {text!r} (e.g. '15m', '30s', '500ms')")
    unit = {"ms": 0.001, "s": 1, None: 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
    return float(m.group(1)) * unit[m.group(2)]


class StreamwireDataSource(DataSource):
    """``spark.read.format("streamwire").option("service_url", ...).option("topic", ...)``."""

    @classmethod
    def name(cls) -> str:
        return "streamwire"

    # The service URL's scheme picks the protocol: pulsar:// and pulsar+ssl:// (this module),
    # tank:// (streamwire.spark.tank_source), tcp:// = a Pravega controller
    # (streamwire.spark.pravega_source).

    def schema(self) -> Any:
        if _is_tank(self.options):
            from streamwire.spark.tank_source import SCHEMA as TANK_SCHEMA

            return TANK_SCHEMA
        if _is_pravega(self.options):
            from streamwire.spark.pravega_source import SCHEMA as PRAVEGA_SCHEMA

            return PRAVEGA_SCHEMA
        # A pass-through reader option this source refuses fails at planning, not in a task.
        expand_passthrough(self.options, "reader")
        scala = parse_bool(get_option(self.options, "scalaNames"), False)
        typed = _typed_schema(self.options)
        if typed is not None:
            from streamwire.spark.typed_read import spark_schema

            return spark_schema(typed, scala)
        return spark_schema_ddl(scala)

    def reader(self, schema: Any) -> DataSourceReader:
        if _is_tank(self.options):
            from streamwire.spark.tank_source import TankBatchReader

            return TankBatchReader(dict(self.options), schema)
        if _is_pravega(self.options):
            from streamwire.spark.pravega_source import PravegaBatchReader

            return PravegaBatchReader(dict(self.options), schema)
        options = dict(self.options)
        return StreamwireBatchReader(options, read_options=_pulsar_read_options(options, schema))

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        if _is_tank(self.options):
            from streamwire.spark.tank_source import TankWriter

            return TankWriter(dict(self.options))
        if _is_pravega(self.options):
            from streamwire.spark.pravega_source import PravegaWriter

            return PravegaWriter(dict(self.options))
        return StreamwireWriter(dict(self.options), schema)

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        if _is_tank(self.options):
            from streamwire.spark.tank_source import TankStreamReader

            return TankStreamReader(dict(self.options), schema)
        if _is_pravega(self.options):
            from streamwire.spark.pravega_source import PravegaStreamReader

            return PravegaStreamReader(dict(self.options), schema)
        from streamwire.spark.stream_read import StreamwireStreamReader

        options = dict(self.options)
        return StreamwireStreamReader(options, read_options=_pulsar_read_options(options, schema))

    def streamWriter(self, schema: Any, overwrite: bool) -> _StreamWriterBase:
        if _is_tank(self.options):
            from streamwire.exceptions import ConfigError
            from streamwire.spark._log_source import LogStreamWriter
            from streamwire.spark.exactly_once import wants_exactly_once
            from streamwire.spark.tank_source import TankWriter

            if wants_exactly_once(self.options):
                raise ConfigError(
                    "deliveryGuarantee=exactly_once needs transactions (Pulsar's or "
                    "Pravega's): TANK has none, nor producer sequence numbers to deduplicate "
                    "by, so its streaming writes are at-least-once"
                )
            return LogStreamWriter(TankWriter(dict(self.options)), "TANK")
        if _is_pravega(self.options):
            from streamwire.spark.pravega_exactly_once import stream_writer

            writer: _StreamWriterBase = stream_writer(dict(self.options))
            return writer
        return StreamwireStreamWriter(dict(self.options), schema)


# -- batch read --------------------------------------------------------------------------------


class StreamwireBatchReader(DataSourceReader):
    """Plans one input partition per topic partition (more with ``minPartitions``)."""

    def __init__(
        self,
        options: dict[str, str],
        columns: Optional[tuple[int, ...]] = None,
        read_options: Optional[ReadOptions] = None,
    ) -> None:
        self.options = options
        self.config = ClientConfig.from_options(options)
        self.read_options = read_options or _read_options(options, columns)
        self.topics, self.pattern = _topics(options)
        from streamwire.spark.offsets import parse_offsets_option

        self.starting = parse_offsets_option(
            get_option(options, "startingOffsets"), default="earliest"
        )
        self.ending = parse_offsets_option(
            get_option(options, "endingOffsets"), default="latest", allow_earliest=False
        )
        self.min_partitions = int(get_option(options, "minPartitions", default="0"))
        from streamwire.spark.admin import AdminConfig

        self.admin = AdminConfig.from_options(options, self.config)
        self.starting_time = _time_option(options, "startingTime")
        self.ending_time = _time_option(options, "endingTime")
        self.starting_by_time = _by_timestamp(options, "startingOffsetsByTimestamp")
        self.ending_by_time = _by_timestamp(options, "endingOffsetsByTimestamp")

    def partitions(self) -> Sequence[InputPartition]:
        from streamwire.spark.cache import get_client
        from streamwire.spark.executor import _plan
        from streamwire.spark.reading import resolve_topics

        with _timing.phase("read.plan: client start"):
            client = get_client(self.config)
        with _timing.phase("read.plan: topic partitions"):
            names = resolve_topics(client, self.topics, self.pattern)
        starting: Any = self.starting
        ending: Any = self.ending
        with _timing.phase("read.plan: time positions"):
            # Times win over offsets: each is resolved per partition by a seek on the broker.
            if self.starting_time is not None:
                starting = _time_offsets(client, names, self.starting_time)
            if self.ending_time is not None:
                ends = _time_ends(client, names, self.ending_time)
                ending = {t: (e if e is not None else "latest") for t, e in ends.items()}
            if self.starting_by_time is not None:
                # Named partitions by time; the others as startingOffsets says.
                found = _per_partition_times(client, self.starting_by_time, names)
                base = starting if isinstance(starting, dict) else dict.fromkeys(names, starting)
                starting = {**base, **{t: p or "latest" for t, p in found.items()}}
            if self.ending_by_time is not None:
                from streamwire.spark.offsets import predecessor

                found = _per_partition_times(client, self.ending_by_time, names)
                base = ending if isinstance(ending, dict) else dict.fromkeys(names, ending)
                ends_by = {t: predecessor(p) if p else "latest" for t, p in found.items()}
                ending = {**base, **ends_by}
        with _timing.phase("read.plan: last message ids"):
            ranges = _plan(client, names, starting, ending, self.min_partitions, self.admin)
        parts = [InputPartition(r.to_json()) for r in ranges if not r.is_empty()]
        # Spark needs at least one partition to build the (empty) result.
        return parts or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if partition.value is None:
            return
        from streamwire.spark.offsets import RangeSpec
        from streamwire.spark.reading import read_range

        with _timing.phase("read.task"):
            yield from read_range(
                self.config, RangeSpec.from_json(partition.value), self.read_options
            )


# -- batch write -------------------------------------------------------------------------------


@dataclass
class WriteCommit(WriterCommitMessage):
    """Per-task result returned to the driver."""

    partition_id: int
    rows: int
    bytes: int
    per_topic: dict[str, int] = field(default_factory=dict)


def _typed_write(options: Mapping[str, str], config: ClientConfig, schema: Any) -> Any:
    """The record schema of a typed write (checked against the DataFrame here, on the driver),
    or None for a raw ``value`` write."""
    fields = getattr(schema, "fields", None)
    if fields is None:
        return None
    from streamwire.spark.typed_write import resolve_write_schema

    def registry() -> Any:
        from streamwire.spark.cache import get_client

        topic = get_option(options, "topic")
        if not topic:
            return None
        return get_client(config).lookup().schema(str(topic))

    return resolve_write_schema(options, fields, registry)


class StreamwireWriter(DataSourceArrowWriter):
    """Arrow batches -> ``send_many``; flushes before the task returns; raises if undelivered."""

    def __init__(self, options: dict[str, str], schema: Any = None) -> None:
        self.options = options
        self.config = ClientConfig.from_options(options)
        from streamwire.spark.writing import ProduceOptions, job_sequence_base

        ProduceOptions.from_options(options, 0)  # validate on the driver
        self.typed = _typed_write(options, self.config, schema)
        # Fixed here, on the driver, so every attempt of every task numbers rows alike.
        self.sequence_base = job_sequence_base()

    def write(self, iterator: Iterator[Any]) -> WriteCommit:
        from streamwire.spark.executor import _partition_id
        from streamwire.spark.writing import ProduceOptions, produce_batches

        pid = _partition_id()
        options = ProduceOptions.from_options(self.options, pid, self.sequence_base)
        options = replace(options, typed=self.typed)
        with _timing.phase("write.task"):
            stats = produce_batches(self.config, iterator, options)
        return WriteCommit(pid, stats.rows, stats.bytes, stats.per_topic)

    def commit(self, messages: list[Optional[WriterCommitMessage]]) -> None:
        total = WriteCommit(-1, 0, 0)
        for m in messages:
            if isinstance(m, WriteCommit):
                total.rows += m.rows
                total.bytes += m.bytes
                for t, n in m.per_topic.items():
                    total.per_topic[t] = total.per_topic.get(t, 0) + n
        log.info(
            "streamwire: wrote %d messages (%d bytes) to %s",
            total.rows,
            total.bytes,
            sorted(total.per_topic),
        )

    def abort(self, messages: list[Optional[WriterCommitMessage]]) -> None:
        delivered = sum(m.rows for m in messages if isinstance(m, WriteCommit))
        log.warning(
            "streamwire: write aborted; %d messages from successful tasks stay published "
            "(Pulsar has no transactional rollback here: at-least-once)",
            delivered,
        )


class StreamwireStreamWriter(_StreamWriterBase):
    """Micro-batch sink: each micro-batch is produced and flushed before the batch commits.

    At-least-once by default; ``deliveryGuarantee=exactly_once`` writes each task's rows in a
    transaction the driver commits with the batch (see ``streamwire.spark.exactly_once``)."""

    def __init__(self, options: dict[str, str], schema: Any = None) -> None:
        self.options = options
        self.config = ClientConfig.from_options(options)
        from streamwire.spark.exactly_once import ExactlyOnce
        from streamwire.spark.writing import ProduceOptions

        ProduceOptions.from_options(options, 0)
        self.typed = _typed_write(options, self.config, schema)
        self.exactly_once = ExactlyOnce.from_options(options)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        from streamwire.spark.executor import _partition_id
        from streamwire.spark.writing import ProduceOptions, produce_batches

        pid = _partition_id()
        options = replace(ProduceOptions.from_options(self.options, pid), typed=self.typed)
        if self.exactly_once is not None:
            from streamwire.spark.exactly_once import batch_context, write_task

            query, batch = batch_context()
            return write_task(
                self.config, options, self.exactly_once, _as_arrow(iterator), query, batch, pid
            )
        stats = produce_batches(self.config, _as_arrow(iterator), options)
        return WriteCommit(pid, stats.rows, stats.bytes, stats.per_topic)

    def commit(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        if self.exactly_once is not None:
            from streamwire.spark.exactly_once import TxnWriteCommit, commit_batch

            txns = [m for m in messages if isinstance(m, TxnWriteCommit)]
            done, skipped = commit_batch(self.config, self.exactly_once, txns, batchId)
            log.info(
                "streamwire: micro-batch %d committed %d messages (%d skipped: written before)",
                batchId,
                done,
                skipped,
            )
            return
        rows = sum(m.rows for m in messages if isinstance(m, WriteCommit))
        log.info("streamwire: micro-batch %d wrote %d messages", batchId, rows)

    def abort(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        if self.exactly_once is not None:
            from streamwire.spark.exactly_once import TxnWriteCommit, abort_batch

            txns = [m for m in messages if isinstance(m, TxnWriteCommit)]
            abort_batch(self.config, self.exactly_once, txns)
            log.warning("streamwire: micro-batch %d aborted (%d transactions)", batchId, len(txns))
            return
        log.warning("streamwire: micro-batch %d aborted (at-least-once)", batchId)


def _as_arrow(iterator: Iterator[Any]) -> Iterator[Any]:
    """Rows (older Spark stream writers) -> Arrow batches; Arrow batches pass through."""
    import pyarrow as pa

    rows: list[dict[str, Any]] = []
    for item in iterator:
        if isinstance(item, pa.RecordBatch):
            yield item
            continue
        rows.append(item.asDict() if hasattr(item, "asDict") else dict(item))
        if len(rows) >= 10_000:
            yield pa.RecordBatch.from_pylist(rows)
            rows = []
    if rows:
        yield pa.RecordBatch.from_pylist(rows)


_timing.mark_import("import streamwire.spark.datasource")
