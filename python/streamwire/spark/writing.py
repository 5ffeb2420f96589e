"""Producing Arrow batches: the shared core of the Data Source writer and ``produce_arrow``.

One ``send_many`` per Arrow batch (and per topic within it) crosses into the engine once and
waits for every receipt, so a returned batch is durable on the broker; anything undelivered
raises and fails the Spark task (Spark then retries it). Producers come from the process-local
cache unless they carry an explicit name (see :func:`streamwire.spark.cache.get_producer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from streamwire.spark import _timing
from streamwire.spark._typed import TypedSchema
from streamwire.spark.cache import discard_producer, get_producer
from streamwire.spark.config import ClientConfig
from streamwire.spark.offsets import normalize_topic

__all__ = ["ProduceOptions", "WriteStats", "produce_batches"]


@dataclass(frozen=True)
class ProduceOptions:
    """Producer settings that travel to executors (picklable)."""

    topic: Optional[str] = None
    producer_name: Optional[str] = None  # full name (already suffixed with the partition id)
    batching: bool = True
    batching_max_messages: int = 1000
    batching_max_bytes: int = 131072
    batching_max_delay: float = 0.001
    batching_type: str = "default"  # or "key_based": one key per batch (Key_Shared readers)
    compression: Optional[str] = None
    send_timeout: float = 30.0
    max_pending_messages: int = 10_000
    block_if_queue_full: bool = True
    chunking: bool = False
    chunk_rows: int = 10_000
    # With a producer name: the first sequence id of this write job (fixed on the driver, so
    # every attempt of a task numbers its rows the same way). None: the producer numbers them.
    sequence_base: Optional[int] = None
    # Typed rows: the record schema the producer registers; its fields' columns are encoded
    # in Rust from the Arrow batch (see streamwire.spark.typed_write).
    typed: Optional[TypedSchema] = None

    def producer_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "batching": self.batching,
            "batching_max_messages": self.batching_max_messages,
            "batching_max_bytes": self.batching_max_bytes,
            "batching_max_delay": self.batching_max_delay,
            "batching_type": self.batching_type,
            "send_timeout": self.send_timeout,
            "max_pending_messages": self.max_pending_messages,
            "block_if_queue_full": self.block_if_queue_full,
            "chunking": self.chunking,
        }
        if self.compression:
            kwargs["compression"] = self.compression
        if self.producer_name:
            kwargs["producer_name"] = self.producer_name
        if self.typed is not None:
            kwargs["schema"] = self.typed
        return kwargs

    @classmethod
    def from_options(
        cls, options: Mapping[str, str], partition_id: int, sequence_base: Optional[int] = None
    ) -> ProduceOptions:
        from streamwire.spark.config import expand_passthrough, get_option, parse_bool

        options = expand_passthrough(options, "producer")
        prefix = get_option(options, "producerName", "producer_name")
        name = f"{prefix}-{partition_id}" if prefix else None
        topic = get_option(options, "topic")
        return cls(
            topic=normalize_topic(str(topic)) if topic else None,
            producer_name=name,
            batching=parse_bool(get_option(options, "batchingEnabled", "batching"), True),
            batching_max_messages=int(get_option(options, "batchingMaxMessages", default="1000")),
            batching_max_bytes=int(get_option(options, "batchingMaxBytes", default="131072")),
            batching_max_delay=float(get_option(options, "batchingMaxPublishDelayMs", default="1"))
            / 1000.0,
            batching_type=_batching_type(get_option(options, "batchingType", "batching_type")),
            compression=_compression(get_option(options, "compression", "compressionType")),
            send_timeout=float(get_option(options, "sendTimeoutMs", default="30000")) / 1000.0,
            max_pending_messages=int(get_option(options, "maxPendingMessages", default="10000")),
            block_if_queue_full=parse_bool(get_option(options, "blockIfQueueFull"), True),
            chunking=parse_bool(get_option(options, "chunkingEnabled", "chunking"), False),
            sequence_base=sequence_base if prefix else None,
        )


def _compression(value: Optional[str]) -> Optional[str]:
    """The codec name: the Java enum's spellings (``LZ4``, ``NONE``) are accepted too."""
    text = (value or "").strip().lower()
    return None if text in ("", "none") else text


def _batching_type(value: Optional[str]) -> str:
    """The ``batchingType`` option: ``default`` or ``key_based`` (the Java names ``DEFAULT`` /
    ``KEY_BASED`` and the Python client's ``KeyBased`` are accepted too)."""
    from streamwire.exceptions import ConfigError

    text = (value or "default").strip().lower().replace("_", "")
    if text == "default":
        return "default"
    if text == "keybased":
        return "key_based"
    raise ConfigError(f"unknown batchingType {value!r}; use 'default' or 'key_based'")


@dataclass
class WriteStats:
    """What one task wrote (returned to the driver in the commit message)."""

    rows: int = 0
    bytes: int = 0
    per_topic: dict[str, int] = field(default_factory=dict)

    def add(self, topic: str, rows: int, nbytes: int) -> None:
        self.rows += rows
        self.bytes += nbytes
        self.per_topic[topic] = self.per_topic.get(topic, 0) + rows


def _values(batch: Any) -> Any:
    import pyarrow as pa

    names = batch.schema.names
    if "value" not in names:
        raise ValueError(
            f"streamwire: the DataFrame needs a 'value' column (binary or string); got {names}"
        )
    col = batch.column(names.index("value"))
    t = col.type
    if not (
        pa.types.is_binary(t)
        or pa.types.is_string(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_large_string(t)
    ):
        raise ValueError(f"streamwire: 'value' must be binary or string, not {t}")
    return col


def _optional(batch: Any, *names: str) -> Any:
    for name in names:
        if name in batch.schema.names:
            return batch.column(batch.schema.names.index(name))
    return None


#: Rows one task may write to one topic in one job when sequence ids are derived (see
#: ``job_sequence_base``): the ids of a job occupy ``[base, base + ROWS_PER_TASK_LIMIT)``.
ROWS_PER_TASK_LIMIT = 1 << 22


def job_sequence_base(now_ms: Optional[int] = None) -> int:
    """The first sequence id of a write job: its start time in ms, shifted left 22 bits.

    Later jobs start later, so their ids are larger than any an earlier job used (as long as a
    task stays under ``ROWS_PER_TASK_LIMIT`` rows per topic, which is enforced), and broker
    deduplication only drops true resends. Fits a signed 64-bit id until 2039."""
    import time

    ms = int(time.time() * 1000) if now_ms is None else now_ms
    return ms << 22


def _send_batch(
    producer: Any,
    batch: Any,
    first_sequence_id: Optional[int] = None,
    typed: Optional[TypedSchema] = None,
    txn: Any = None,
) -> int:
    """Send one batch (all rows to one producer) with one ``send_many``; returns payload bytes.

    Columns go to the engine as Arrow arrays (values through their buffers, no per-row objects);
    ``send_many`` waits for every receipt and raises if any message was not delivered.
    """
    import pyarrow as pa

    kwargs: dict[str, Any] = {}
    if typed is not None:
        from streamwire.spark.typed_write import record_batch

        values, batch = record_batch(batch, typed)  # batch: the metadata columns left
    else:
        values = _values(batch)
    keys = _optional(batch, "key", "__key")
    if keys is not None and keys.null_count < len(keys):
        if not pa.types.is_string(keys.type):
            keys = keys.cast(pa.string())
        kwargs["keys"] = keys
    props = _optional(batch, "properties", "__messageProperties")
    if props is not None and props.null_count < len(props):
        kwargs["properties"] = props
    events = _optional(batch, "event_time", "__eventTime")
    if events is not None and events.null_count < len(events):
        if not (pa.types.is_timestamp(events.type) or pa.types.is_integer(events.type)):
            raise ValueError(
                f"streamwire: 'event_time' must be a timestamp or long (ms), not {events.type}"
            )
        kwargs["event_times"] = events
    n = values.num_rows if typed is not None else len(values)
    if first_sequence_id is not None:
        kwargs["sequence_ids"] = pa.array(
            range(first_sequence_id, first_sequence_id + n), pa.int64()
        )
    if txn is not None:
        kwargs["txn"] = txn
    ids = producer.send_many(values, **kwargs)
    if len(ids) != n:
        raise RuntimeError(f"streamwire: {n - len(ids)} of {n} messages were not delivered")
    # Typed rows: the Arrow size of the record columns (the payloads are made in Rust).
    return int(values.nbytes) if typed is not None else _payload_bytes(values)


def _payload_bytes(values: Any) -> int:
    """Bytes of the values: from the offsets buffer when nothing is null (no ``pyarrow.compute``
    import, ~0.1 s in a fresh worker), else summed per value."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        return sum(_payload_bytes(chunk) for chunk in values.chunks)
    if len(values) == 0:
        return 0
    if values.null_count:
        import pyarrow.compute as pc

        return int(pc.sum(pc.binary_length(values)).as_py() or 0)
    large = pa.types.is_large_binary(values.type) or pa.types.is_large_string(values.type)
    offsets = pa.Array.from_buffers(
        pa.int64() if large else pa.int32(),
        len(values) + 1,
        [None, values.buffers()[1]],
        offset=values.offset,
    )
    return int(offsets[len(values)].as_py()) - int(offsets[0].as_py())


def produce_batches(
    config: ClientConfig, batches: Iterable[Any], options: ProduceOptions, txn: Any = None
) -> WriteStats:
    """Send every row of ``batches``; flush; raise if anything was not delivered.

    A per-row ``topic`` column routes rows; otherwise ``options.topic`` is used. With ``txn``
    (a ``streamwire.Transaction``) every row is sent in it.
    """
    stats = WriteStats()
    producers: dict[str, Any] = {}
    named = bool(options.producer_name)
    # Rows sent per topic by this task: the row's sequence id is base + this offset.
    offsets: dict[str, int] = {}

    def send(topic: str, piece: Any) -> int:
        first = None
        if options.sequence_base is not None:
            done = offsets.get(topic, 0)
            if done + piece.num_rows > ROWS_PER_TASK_LIMIT:
                raise ValueError(
                    f"streamwire: with producerName set, one task writes at most "
                    f"{ROWS_PER_TASK_LIMIT} rows per topic; repartition the DataFrame"
                )
            first = options.sequence_base + done
            offsets[topic] = done + piece.num_rows
        producer = producer_for(topic)
        with _timing.phase("write.task: send_many"):
            return _send_batch(producer, piece, first, options.typed, txn)

    def producer_for(topic: str) -> Any:
        p = producers.get(topic)
        if p is None:
            p = get_producer(config, topic, **options.producer_kwargs())
            producers[topic] = p
        return p

    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            topic_col = _optional(batch, "topic", "__topic")
            if topic_col is None or topic_col.null_count == len(topic_col):
                if not options.topic:
                    raise ValueError("streamwire: set option 'topic' or provide a 'topic' column")
                for piece in _chunks(batch, options.chunk_rows):
                    nbytes = send(options.topic, piece)
                    stats.add(options.topic, piece.num_rows, nbytes)
                continue
            import pyarrow as pa
            import pyarrow.compute as pc

            if topic_col.null_count and not options.topic:
                raise ValueError("streamwire: null 'topic' in a row and no 'topic' option")
            if options.topic:
                topic_col = pc.fill_null(topic_col, options.topic)
            for topic in pc.unique(topic_col).to_pylist():
                piece = batch.filter(pc.equal(topic_col, pa.scalar(topic)))
                full = normalize_topic(str(topic))
                for chunk in _chunks(piece, options.chunk_rows):
                    nbytes = send(full, chunk)
                    stats.add(full, chunk.num_rows, nbytes)
        with _timing.phase("write.task: flush"):
            for p in producers.values():
                p.flush()
    except BaseException:
        for topic, p in producers.items():
            discard_producer(config, topic, p)
        producers.clear()
        raise
    finally:
        if named:
            # named producers are per task (not cached): release the name for a retry
            for p in producers.values():
                p.close()
    return stats


def _chunks(batch: Any, rows: int) -> Iterable[Any]:
    if batch.num_rows <= rows:
        yield batch
        return
    for offset in range(0, batch.num_rows, rows):
        yield batch.slice(offset, rows)
