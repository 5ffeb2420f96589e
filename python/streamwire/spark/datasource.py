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
from streamwire.spark.config import ClientConfig, get_option, parse_bool

if TYPE_CHECKING:
    from streamwire.spark.offsets import Position
    from streamwire.spark.reading import ReadOptions

try:  # Spark 4.1+
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # pragma: no cover - older Spark
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as _StreamWriterBase,
    )

try:  # Spark 4.2+: admission control (ReadMaxRows) and Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxBytes,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - older Spark: the cap falls back to the option alone
    ReadAllAvailable = ReadMaxBytes = ReadMaxRows = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        pass


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
    url = get_option(options, "service_url", "serviceUrl", "service.url")
    return bool(url) and str(url).startswith("tank://")


def _is_pravega(options: Mapping[str, str]) -> bool:
    url = get_option(options, "service_url", "serviceUrl", "service.url")
    return bool(url) and str(url).startswith("tcp://")


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

    st = get_option(options, "startingTime")
    et = get_option(options, "endingTime")
    return ReadOptions(
        scala_names=parse_bool(get_option(options, "scalaNames"), False),
        fail_on_data_loss=parse_bool(get_option(options, "failOnDataLoss"), True),
        max_batch=int(get_option(options, "maxBatchRows", default="10000")),
        poll_timeout=float(get_option(options, "pollTimeoutMs", default="1000")) / 1000.0,
        receiver_queue_size=int(get_option(options, "receiverQueueSize", default="1000")),
        starting_time_ms=int(st) if st is not None else None,
        ending_time_ms=int(et) if et is not None else None,
        columns=columns,
    )


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
        options = dict(self.options)
        return StreamwireStreamReader(options, read_options=_pulsar_read_options(options, schema))

    def streamWriter(self, schema: Any, overwrite: bool) -> StreamwireStreamWriter:
        if _is_tank(self.options) or _is_pravega(self.options):
            raise ValueError(
                "streamwire: streaming writes to TANK and Pravega are not offered; write each "
                "micro-batch with foreachBatch("
                "lambda df, _: df.write.format('streamwire')...save())"
            )
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

    def partitions(self) -> Sequence[InputPartition]:
        from streamwire.spark.cache import get_client
        from streamwire.spark.executor import _plan
        from streamwire.spark.reading import resolve_topics

        with _timing.phase("read.plan: client start"):
            client = get_client(self.config)
        with _timing.phase("read.plan: topic partitions"):
            names = resolve_topics(client, self.topics, self.pattern)
        with _timing.phase("read.plan: last message ids"):
            ranges = _plan(client, names, self.starting, self.ending, self.min_partitions)
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
    """Micro-batch sink: each micro-batch is produced and flushed before the batch commits."""

    def __init__(self, options: dict[str, str], schema: Any = None) -> None:
        self.options = options
        self.config = ClientConfig.from_options(options)
        from streamwire.spark.writing import ProduceOptions

        ProduceOptions.from_options(options, 0)
        self.typed = _typed_write(options, self.config, schema)

    def write(self, iterator: Iterator[Any]) -> WriteCommit:
        from streamwire.spark.executor import _partition_id
        from streamwire.spark.writing import ProduceOptions, produce_batches

        pid = _partition_id()
        options = replace(ProduceOptions.from_options(self.options, pid), typed=self.typed)
        stats = produce_batches(self.config, _as_arrow(iterator), options)
        return WriteCommit(pid, stats.rows, stats.bytes, stats.per_topic)

    def commit(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
        rows = sum(m.rows for m in messages if isinstance(m, WriteCommit))
        log.info("streamwire: micro-batch %d wrote %d messages", batchId, rows)

    def abort(self, messages: list[Optional[WriterCommitMessage]], batchId: int) -> None:
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


# -- streaming read ----------------------------------------------------------------------------

_commit_consumers: dict[tuple[ClientConfig, str, str], Any] = {}


class StreamwireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch source. Offsets: ``{partition_topic: {"ledger","entry","batch"}}`` (exclusive).

    ``maxRecordsPerTrigger`` caps each micro-batch through Spark's admission control
    (``ReadMaxRows``): per partition, by entries within the current ledger (an entry holds one
    message, or one batch of messages, so a batched topic may exceed the cap by the batch size).
    ``maxBytesPerTrigger`` caps by payload bytes the same way (``ReadMaxBytes``): the number of
    entries is the per-partition budget over the size of the first entry after the start, read
    on the driver as a sample; at least one entry per micro-batch.
    ``commitToSubscription=<name>`` acknowledges committed offsets on a durable subscription so
    backlog monitoring sees progress; the checkpoint, not the subscription, is the source of truth.
    """

    def __init__(
        self,
        options: dict[str, str],
        columns: Optional[tuple[int, ...]] = None,
        read_options: Optional[ReadOptions] = None,
    ) -> None:
        from streamwire.spark.offsets import parse_offsets_option

        self.options = options
        self.config = ClientConfig.from_options(options)
        self.read_options = read_options or _read_options(options, columns)
        self.topics, self.pattern = _topics(options)
        self.starting = parse_offsets_option(
            get_option(options, "startingOffsets"), default="latest"
        )
        mr = get_option(options, "maxRecordsPerTrigger", "maxOffsetsPerTrigger")
        self.max_records = int(mr) if mr is not None else None
        mb = get_option(options, "maxBytesPerTrigger")
        self.max_bytes = int(mb) if mb is not None else None
        self.subscription = get_option(options, "commitToSubscription")
        self.min_partitions = int(get_option(options, "minPartitions", default="0"))
        self._target: Optional[dict[str, Any]] = None

    # driver-side helpers (no live handle is stored on self: Spark pickles this object)
    def _partitions(self) -> list[str]:
        from streamwire.spark.cache import get_client
        from streamwire.spark.reading import resolve_topics

        return resolve_topics(get_client(self.config), self.topics, self.pattern)

    def initialOffset(self) -> dict[str, Any]:
        from streamwire.spark.cache import get_client
        from streamwire.spark.offsets import EARLIEST, offset_json, predecessor
        from streamwire.spark.reading import last_message_id

        client = get_client(self.config)
        positions: dict[str, Position] = {}
        for topic in self._partitions():
            spec = (
                self.starting.get(topic, "latest")
                if isinstance(self.starting, dict)
                else self.starting
            )
            if spec == "earliest":
                positions[topic] = EARLIEST
            elif spec == "latest":
                positions[topic] = last_message_id(client, topic)
            else:
                positions[topic] = predecessor(spec)  # type: ignore[arg-type]
        return offset_json(positions)

    def _latest(self) -> dict[str, Position]:
        from streamwire.spark.cache import get_client
        from streamwire.spark.reading import last_message_id

        client = get_client(self.config)
        return {t: last_message_id(client, t) for t in self._partitions()}

    def getDefaultReadLimit(self) -> Any:
        # One limit goes through Spark; with both options set the byte cap is applied from the
        # option on top of Spark's row limit.
        if self.max_records and ReadMaxRows is not None:
            return ReadMaxRows(self.max_records)
        if self.max_bytes and ReadMaxBytes is not None:
            return ReadMaxBytes(self.max_bytes)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        from streamwire.spark.offsets import offset_json

        self._target = offset_json(self._latest())

    def latestOffset(
        self, start: Optional[dict[str, Any]] = None, limit: Any = None
    ) -> dict[str, Any]:
        from streamwire.spark.cache import get_client
        from streamwire.spark.offsets import EARLIEST, offset_json, position_from_json, position_key
        from streamwire.spark.reading import entry_bytes_after

        if self._target is not None:
            latest = {t: position_from_json(v) for t, v in self._target.items()}
        else:
            latest = self._latest()
        starts = {t: position_from_json(v) for t, v in (start or {}).items()}
        max_rows = getattr(limit, "max_rows", None) if limit is not None else None
        if max_rows is None and limit is None and self.max_records:
            max_rows = self.max_records
        max_bytes = getattr(limit, "max_bytes", None)
        all_available = ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable)
        if max_bytes is None and not all_available and self.max_bytes:
            max_bytes = self.max_bytes
        result: dict[str, Position] = {}
        for topic, last in latest.items():
            begin = starts.get(topic, EARLIEST)
            if position_key(last) < position_key(begin) or last[1] < 0:
                result[topic] = begin  # nothing new (or an empty topic): never move backwards
                continue
            result[topic] = last
            entries: Optional[int] = None
            if max_rows:
                entries = max(1, int(max_rows) // max(1, len(latest)))
            if max_bytes:
                # Sized by the first entry after the start (entries of a topic are usually
                # alike): approximate, like the row cap, and never less than one entry.
                sample = entry_bytes_after(get_client(self.config), topic, begin)
                if sample != 0:
                    # No sample within reach (or in time): one entry, so the cap still holds.
                    budget = int(max_bytes) // max(1, len(latest))
                    by_bytes = max(1, budget // sample) if sample else 1
                    entries = by_bytes if entries is None else min(entries, by_bytes)
            if entries is not None:
                result[topic] = self._capped(topic, begin, last, entries)
        # keep partitions that disappeared from the listing where they were
        for topic, pos in starts.items():
            result.setdefault(topic, pos)
        return offset_json(result)

    def _capped(self, topic: str, begin: Position, last: Position, entries: int) -> Position:
        """At most ``entries`` entries after ``begin`` when both lie in one ledger.

        Entry ids are contiguous within a ledger; across ledgers the count is unknown without
        the admin API, so the rest of ``begin``'s ledger is taken (or everything, from EARLIEST
        when the first message is in another ledger than the last).
        """
        from streamwire.spark.cache import get_client
        from streamwire.spark.reading import first_message_position

        if begin[0] < 0:
            first = first_message_position(get_client(self.config), topic)
            if first is None:
                return last
            begin = (first[0], first[1] - 1, -1)  # just before the first entry
        if begin[0] != last[0]:
            return last
        lo = begin[1] if begin[2] < 0 else begin[1] - 1
        capped = lo + entries
        return (last[0], capped, -1) if capped < last[1] else last

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        from streamwire.spark.offsets import (
            RangeSpec,
            partition_index,
            position_from_json,
            split_ranges,
        )

        ranges = [
            RangeSpec(
                t,
                partition_index(t),
                position_from_json(start.get(t, None) or _EARLIEST_JSON),
                position_from_json(v),
            )
            for t, v in end.items()
        ]
        ranges = split_ranges(ranges, self.min_partitions)
        return [InputPartition(r.to_json()) for r in ranges if not r.is_empty()]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from streamwire.spark.offsets import RangeSpec
        from streamwire.spark.reading import read_range

        yield from read_range(self.config, RangeSpec.from_json(partition.value), self.read_options)

    def commit(self, end: dict[str, Any]) -> None:
        from streamwire.spark.cache import get_client
        from streamwire.spark.offsets import partition_index, position_from_json

        if not self.subscription:
            return
        import streamwire

        client = get_client(self.config)
        for topic, value in end.items():
            pos = position_from_json(value)
            if pos[1] < 0:
                continue
            key = (self.config, str(self.subscription), topic)
            consumer = _commit_consumers.get(key)
            if consumer is None:
                consumer = client.subscribe(
                    topic,
                    str(self.subscription),
                    subscription_type="failover",
                    initial_position="earliest",
                )
                _commit_consumers[key] = consumer
            consumer.acknowledge_cumulative(
                streamwire.MessageId(pos[0], pos[1], partition_index(topic), pos[2])
            )

    def stop(self) -> None:
        for key in [k for k in _commit_consumers if k[0] == self.config]:
            consumer = _commit_consumers.pop(key)
            try:
                consumer.close()
            except Exception:
                pass


# offsets.EARLIEST as offset JSON
_EARLIEST_JSON = {"ledger": -1, "entry": -1, "batch": -1}


_timing.mark_import("import streamwire.spark.datasource")
