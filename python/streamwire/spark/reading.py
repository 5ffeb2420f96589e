"""Reading planned ranges on executors, and resolving topics / last message ids on the driver.

A range is read with a *reader* (no subscription left behind) started inclusively at the entry of
the exclusive start position; everything at or before the start is filtered out here, whatever
the client does with batch indexes. The read stops at the end position, so a batch query is
bounded and deterministic even while producers keep writing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import streamwire
from streamwire.spark import _timing
from streamwire.spark._columns import ARROW_COLUMNS, column_names, spark_schema_ddl
from streamwire.spark._typed import TypedSchema
from streamwire.spark.config import ClientConfig
from streamwire.spark.offsets import Position, RangeSpec, partition_index, position_key

__all__ = [
    "ARROW_COLUMNS",
    "ReadOptions",
    "arrow_schema",
    "entry_bytes_after",
    "last_message_id",
    "position_at_time",
    "projection",
    "read_range",
    "resolve_topics",
    "spark_schema_ddl",
]


def arrow_schema(scala_names: bool = False) -> Any:
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    types = [
        pa.binary(),
        pa.string(),
        pa.string(),
        pa.int32(),
        pa.binary(),
        ts,
        ts,
        pa.map_(pa.string(), pa.string()),
        pa.string(),
        pa.int64(),
    ]
    return pa.schema([pa.field(n, t) for n, t in zip(column_names(scala_names), types)])


@dataclass(frozen=True)
class ReadOptions:
    """Executor-side read settings (picklable)."""

    scala_names: bool = False
    fail_on_data_loss: bool = True
    max_batch: int = 10_000
    poll_timeout: float = 1.0
    receiver_queue_size: int = 1000
    reader_name: Optional[str] = None
    starting_time_ms: Optional[int] = None
    ending_time_ms: Optional[int] = None
    # indexes into ARROW_COLUMNS to emit, in order (None: all); from a user-given schema
    columns: Optional[tuple[int, ...]] = None
    # A topic with a JSON or Avro schema read as typed columns: the record's schema, and the
    # Spark schema (JSON) of the columns to emit, record fields and metadata by name.
    typed: Optional[TypedSchema] = None
    typed_output: Optional[str] = None


def projection(fields: Sequence[tuple[str, str]], scala_names: bool) -> Optional[tuple[int, ...]]:
    """A user-given schema (``(name, simpleString type)`` pairs) -> the column indexes to emit.

    ``None`` when it is the whole schema in order. Unknown names, duplicates and types other than
    the source's raise ``ValueError`` naming what the source offers."""
    names = column_names(scala_names)
    types = {n: t for n, (_, _, t) in zip(names, ARROW_COLUMNS)}
    picked: list[int] = []
    for name, typ in fields:
        if name not in types:
            raise ValueError(
                f"streamwire: no column {name!r} in this source; it has: "
                + ", ".join(f"{n} {t}" for n, t in types.items())
            )
        if typ.replace(" ", "").lower() != types[name].replace(" ", ""):
            raise ValueError(
                f"streamwire: column {name!r} is {types[name]} in this source, not {typ}"
            )
        idx = names.index(name)
        if idx in picked:
            raise ValueError(f"streamwire: column {name!r} named twice in the schema")
        picked.append(idx)
    if picked == list(range(len(names))):
        return None
    if not picked:
        raise ValueError("streamwire: the schema names no column")
    return tuple(picked)


# -- driver side -------------------------------------------------------------------------------


def resolve_topics(client: Any, topics: Sequence[str], pattern: Optional[str]) -> list[str]:
    """Topic (or topics, or a pattern) -> the full names of every partition to read."""
    from streamwire.spark.offsets import normalize_topic

    names = [normalize_topic(t) for t in topics]
    lookup = client.lookup()
    if pattern:
        import re

        full = normalize_topic(pattern)
        _domain, rest = full.split("://", 1)
        tenant, ns, _ = rest.split("/", 2)
        regex = re.compile(full)
        found = [t for t in lookup.topics_of_namespace(f"{tenant}/{ns}") if regex.fullmatch(t)]
        # a namespace listing returns partitions; keep their parent names once
        parents = sorted(
            {t.rpartition("-partition-")[0] if "-partition-" in t else t for t in found}
        )
        names.extend(parents)
    result: list[str] = []
    for name in dict.fromkeys(names):
        result.extend(lookup.topic_partitions(name))
    return result


def last_message_id(client: Any, topic: str) -> Position:
    """The position of the last message now in ``topic`` (one partition); entry -1 if empty.

    Uses ``Reader.get_last_message_id`` (no subscription is left behind); falls back to a
    uniquely named consumer that is unsubscribed again.
    """
    reader = client.create_reader(topic, "latest")
    try:
        if hasattr(reader, "get_last_message_id"):
            return _last_or_empty(reader.get_last_message_id)
    finally:
        reader.close()
    consumer = client.subscribe(
        topic,
        f"streamwire-spark-probe-{uuid.uuid4().hex}",
        subscription_type="exclusive",
        initial_position="latest",
    )
    try:
        return _last_or_empty(consumer.get_last_message_id)
    finally:
        unsubscribe = getattr(consumer, "unsubscribe", None)
        try:
            if unsubscribe is not None:
                unsubscribe()
        finally:
            consumer.close()


def _last_or_empty(call: Any) -> Position:
    try:
        return _as_position(call())
    except streamwire.ServerError as exc:
        # pulsar-lite answers an error for an empty topic where Apache Pulsar returns (L, -1)
        if "no messages" in str(exc).lower():
            return (-1, -1, -1)
        raise


def first_message_position(client: Any, topic: str) -> Optional[Position]:
    """The position of the first message still in ``topic``, or None if it is empty."""
    reader = client.create_reader(topic, "earliest")
    try:
        rb = reader.read_arrow(1, timeout=1.0)
        if rb.num_rows == 0:
            return None
        return (
            int(rb.column("ledger_id")[0].as_py()),
            int(rb.column("entry_id")[0].as_py()),
            int(rb.column("batch_index")[0].as_py()),
        )
    finally:
        reader.close()


def position_at_time(client: Any, topic: str, timestamp_ms: int) -> Optional[Position]:
    """The position of the first message of ``topic`` (one partition) published at or after
    ``timestamp_ms``, found by the broker (a seek by publish time), or None when there is none
    yet. The broker's search reads a few entries per ledger, not the topic: it assumes publish
    times grow along the partition, as they do with one producer or synchronized clocks."""
    # Created at "latest", so nothing is dispatched before the seek; a queue of one, so the
    # broker dispatches one entry after it.
    reader = client.create_reader(topic, "latest", receiver_queue_size=1)
    try:
        reader.seek(int(timestamp_ms))
        got = reader.read_many(1, timeout=_PEEK_TIMEOUT)
        if not got:
            return None
        return _as_position(got[0].message_id)
    finally:
        reader.close()


# How long a driver-side look at one message waits: only asked where a message is known to
# exist, or at a time after which there may be none (then this is the cost of the answer).
_PEEK_TIMEOUT = 2.0


def entry_bytes_after(
    client: Any, topic: str, after: Position, max_rows: int = 20_000
) -> Optional[int]:
    """Payload bytes of the first entry after ``after`` (a sample that sizes byte caps), or None
    when no such entry is found within ``max_rows`` messages."""
    if after[0] < 0 or after[1] <= 0:
        start: Any = "earliest"
    else:
        start = streamwire.MessageId(after[0], after[1], max(partition_index(topic), -1))
    reader = client.create_reader(topic, start, inclusive=True)
    try:
        seen = 0
        target: Optional[tuple[int, int]] = None
        size = 0
        after_key = position_key(after)
        while seen < max_rows:
            rb = reader.read_arrow(
                1000, timeout=1.0, columns=["ledger_id", "entry_id", "batch_index", "value"]
            )
            if rb.num_rows == 0:
                break
            seen += rb.num_rows
            rows = zip(
                rb.column("ledger_id").to_pylist(),
                rb.column("entry_id").to_pylist(),
                rb.column("batch_index").to_pylist(),
                rb.column("value").to_pylist(),
            )
            for ledger, entry, batch, value in rows:
                if position_key((ledger, entry, batch)) <= after_key:
                    continue
                if target is None:
                    target = (ledger, entry)
                elif (ledger, entry) != target:
                    return size
                size += len(value)
        return size if target is not None else None
    finally:
        reader.close()


def _as_position(mid: Any) -> Position:
    return (int(mid.ledger_id), int(mid.entry_id), int(mid.batch_index))


# -- executor side -----------------------------------------------------------------------------


class DataLossError(RuntimeError):
    """Messages in the planned range are gone (retention/truncation) and failOnDataLoss is set."""


def read_range(config: ClientConfig, spec: RangeSpec, options: ReadOptions) -> Iterator[Any]:
    """Yield ``pyarrow.RecordBatch``es for ``(spec.start, spec.end]`` of one topic partition."""
    if spec.is_empty():
        return
    client = config.client()
    start_id: Any
    expect_entry: Optional[tuple[int, int]] = None
    start_entry = reader_start_entry(spec.start)
    if start_entry is None:
        start_id = "earliest"
    else:
        # Inclusive at the start's entry: the rest of a partly read batch is re-delivered and
        # filtered here, and the entry's presence proves nothing was deleted before it. A start
        # at entry -1 (the end of the ledger before) starts at entry 0 and proves nothing.
        start_id = streamwire.MessageId(start_entry[0], start_entry[1], max(spec.partition, -1))
        if spec.start[1] >= 0:
            expect_entry = (spec.start[0], spec.start[1])
    extra: dict[str, Any] = {}
    if options.typed is not None:
        # The reader decodes in Rust (each message with its writer's version, reshaped to
        # this schema): read_arrow's value column is then a struct of the record's fields.
        extra["schema"] = options.typed.codec()
    with _timing.phase("reader create"):
        reader = client.create_reader(
            spec.topic,
            start_id,
            inclusive=True,
            receiver_queue_size=options.receiver_queue_size,
            reader_name=options.reader_name,
            **extra,
        )
    try:
        yield from _read_arrow_loop(reader, spec, options, expect_entry)
    finally:
        reader.close()


def reader_start_entry(start: Position) -> Optional[tuple[int, int]]:
    """The entry an inclusive reader starts at to read everything after ``start``, or None
    for "earliest": before every message, and ledger 0's first entry (a reader at (0, 0)
    inclusive is refused by pulsar-lite, whose only ledger is 0, where "earliest" is the same).
    Any other ledger's entry 0 is a real start: "earliest" would re-read the whole topic."""
    if start[0] < 0 or (start[0] == 0 and start[1] <= 0):
        return None
    return (start[0], max(0, start[1]))


def _data_loss(spec: RangeSpec, expect: tuple[int, int], got: tuple[int, int]) -> DataLossError:
    return DataLossError(
        f"{spec.topic}: expected to resume at entry {expect}, but the first available entry is "
        f"{got}: messages in between were deleted (set failOnDataLoss=false to skip them)"
    )


def _range_end_missing(spec: RangeSpec) -> DataLossError:
    return DataLossError(
        f"{spec.topic}: no more messages before the planned end {spec.end} "
        "(deleted or truncated; set failOnDataLoss=false to skip)"
    )


def _read_arrow_loop(
    reader: Any, spec: RangeSpec, options: ReadOptions, expect_entry: Optional[tuple[int, int]]
) -> Iterator[Any]:
    """The Arrow path: filtering and conversion are vectorized (the serialized message ids come
    from Rust too), so no Python object is made per message in the normal case."""
    import pyarrow.compute as pc

    columns = reader_columns(options)
    end_entry = (spec.end[0], spec.end[1])
    whole_end_entry = spec.end[2] < 0
    end_key = position_key(spec.end)
    last_key = position_key(spec.start)
    checked = expect_entry is None
    while True:
        with _timing.phase("read.task: read_arrow"):
            rb = reader.read_arrow(options.max_batch, timeout=options.poll_timeout, columns=columns)
        if rb.num_rows == 0:
            if reader.has_message_available():
                continue
            if not whole_end_entry and options.fail_on_data_loss:
                raise _range_end_missing(spec)
            return
        ledger = rb.column("ledger_id")
        entry = rb.column("entry_id")
        batch = rb.column("batch_index")
        if not checked and expect_entry is not None:
            ok, first = _first_entry_at_or_after(ledger, entry, expect_entry)
            if ok is not None:
                checked = True
                if not ok and options.fail_on_data_loss:
                    raise _data_loss(spec, expect_entry, first)
        # Positions within a partition strictly increase; anything not after the last position
        # taken is a re-delivery (pulsar-lite re-dispatches entries) and is dropped here.
        mask, last_key, beyond = _keep_mask(ledger, entry, batch, last_key, end_key)
        if options.starting_time_ms is not None or options.ending_time_ms is not None:
            mask = pc.and_(mask, _time_mask(pc, rb.column("publish_time"), options))
        # The normal case keeps every row: no filtering copy then.
        kept = rb if mask.true_count == rb.num_rows else rb.filter(mask)
        if kept.num_rows:
            yield arrow_to_schema(kept, spec.partition, options)
        if beyond or last_key >= end_key:
            return
        if (
            whole_end_entry
            and (last_key[0], last_key[1]) == end_entry
            and not reader.has_message_available()
        ):
            return


def _after(pc: Any, ledger: Any, entry: Any, batch: Any, key: tuple[int, int, int]) -> Any:
    """Element-wise ``(ledger, entry, batch) > key`` over Arrow arrays."""
    l0, e0, b0 = key
    return pc.or_(
        pc.greater(ledger, l0),
        pc.and_(
            pc.equal(ledger, l0),
            pc.or_(pc.greater(entry, e0), pc.and_(pc.equal(entry, e0), pc.greater(batch, b0))),
        ),
    )


def _keep_mask(
    ledger: Any,
    entry: Any,
    batch: Any,
    last_key: tuple[int, int, int],
    end_key: tuple[int, int, int],
) -> tuple[Any, tuple[int, int, int], bool]:
    """Which rows to keep: after ``last_key``, at or before ``end_key``, and not a re-delivery
    of a position already taken. Returns (mask, new last key, whether rows went past the end).

    Vectorized when the batch's positions strictly increase (the normal case); otherwise a
    per-row pass drops the re-delivered ones."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(ledger)
    increasing = n < 2 or pc.all(_pairwise_after(pc, ledger, entry, batch)).as_py()
    if increasing:
        past_end = _after(pc, ledger, entry, batch, end_key)
        mask = pc.and_(_after(pc, ledger, entry, batch, last_key), pc.invert(past_end))
        kept = pc.indices_nonzero(mask)
        if len(kept):
            i = kept[len(kept) - 1].as_py()
            # As position_key, like the other paths (a whole entry sorts after its indexes).
            last_key = position_key((ledger[i].as_py(), entry[i].as_py(), batch[i].as_py()))
        return mask, last_key, bool(pc.any(past_end).as_py())
    one_ledger = _repeats_in_one_ledger(ledger, entry, batch, last_key, end_key)
    if one_ledger is not None:
        return one_ledger
    keep: list[bool] = []
    beyond = False
    for pos in zip(ledger.to_pylist(), entry.to_pylist(), batch.to_pylist()):
        key = position_key(pos)
        if key > end_key:
            beyond = True
            keep.append(False)
        elif key > last_key:
            last_key = key
            keep.append(True)
        else:
            keep.append(False)
    return pa.array(keep, pa.bool_()), last_key, beyond


_BATCH_BITS = 21  # batch indexes below 2**21 - 1; entry ids below 2**42


def _repeats_in_one_ledger(
    ledger: Any,
    entry: Any,
    batch: Any,
    last_key: tuple[int, int, int],
    end_key: tuple[int, int, int],
) -> Optional[tuple[Any, tuple[int, int, int], bool]]:
    """The re-delivery case vectorized: when every row is in one ledger, positions map to one
    int64 (entry, batch index; a whole entry after its batch indexes, as ``position_key``) and a
    row is kept when it is after the running maximum of the rows before it. None when the batch
    spans ledgers or ids are out of range (the per-row pass handles it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lo_hi = pc.min_max(ledger).as_py()
    top = (1 << _BATCH_BITS) - 1
    bmax = pc.max(batch).as_py()
    emax = pc.max(entry).as_py()
    if lo_hi["min"] != lo_hi["max"] or bmax is None or bmax >= top or emax >= 1 << 42:
        return None
    led = lo_hi["min"]

    def scalar(key: tuple[int, int, int], below: int, above: int) -> int:
        if key[0] < led:
            return below
        if key[0] > led:
            return above
        b = key[2] if key[2] < top else top
        return (key[1] << _BATCH_BITS) + b

    b64 = pc.cast(batch, pa.int64())
    b64 = pc.if_else(pc.less(b64, 0), top, b64)
    keys = pc.add(pc.shift_left(pc.cast(entry, pa.int64()), _BATCH_BITS), b64)
    last = scalar(last_key, -1, (1 << 63) - 1)
    end = scalar(end_key, -1, (1 << 63) - 1)
    running = pc.cumulative_max(keys)
    before = pa.concat_arrays([pa.array([last], pa.int64()), running.slice(0, len(keys) - 1)])
    before = pc.max_element_wise(before, pa.scalar(last, pa.int64()))
    past_end = pc.greater(keys, end)
    mask = pc.and_(pc.greater(keys, before), pc.invert(past_end))
    kept = pc.indices_nonzero(mask)
    if len(kept):
        i = kept[len(kept) - 1].as_py()
        last_key = position_key((led, entry[i].as_py(), batch[i].as_py()))
    return mask, last_key, bool(pc.any(past_end).as_py())


def _pairwise_after(pc: Any, ledger: Any, entry: Any, batch: Any) -> Any:
    """Element-wise: row i+1's position is after row i's."""
    l1, l0 = ledger.slice(1), ledger.slice(0, len(ledger) - 1)
    e1, e0 = entry.slice(1), entry.slice(0, len(entry) - 1)
    b1, b0 = batch.slice(1), batch.slice(0, len(batch) - 1)
    return pc.or_(
        pc.greater(l1, l0),
        pc.and_(
            pc.equal(l1, l0),
            pc.or_(pc.greater(e1, e0), pc.and_(pc.equal(e1, e0), pc.greater(b1, b0))),
        ),
    )


def _first_entry_at_or_after(
    ledger: Any, entry: Any, expect: tuple[int, int]
) -> tuple[Optional[bool], tuple[int, int]]:
    for i in range(len(ledger)):
        got = (ledger[i].as_py(), entry[i].as_py())
        if got >= expect:
            return got == expect, got
    return None, (-1, -1)


def _time_mask(pc: Any, publish: Any, options: ReadOptions) -> Any:
    import pyarrow as pa

    ms = pc.cast(publish, pa.int64())
    mask = pc.is_valid(ms)
    if options.starting_time_ms is not None:
        mask = pc.and_(mask, pc.greater_equal(ms, options.starting_time_ms))
    if options.ending_time_ms is not None:
        mask = pc.and_(mask, pc.less(ms, options.ending_time_ms))
    return mask


# The reader column behind each Data Source column (None: the partition, computed here).
_SOURCE: tuple[Optional[str], ...] = tuple(
    None if ours == "partition" else ours for ours, _, _ in ARROW_COLUMNS
)


def reader_columns(options: ReadOptions) -> list[str]:
    """The columns to ask the reader for: positions (for the filter), publish time when a time
    range applies, and what the selected Data Source columns are made of."""
    out = ["ledger_id", "entry_id", "batch_index"]
    if options.typed is not None:
        from streamwire.spark.typed_read import typed_reader_columns

        return out + typed_reader_columns(options)
    if options.starting_time_ms is not None or options.ending_time_ms is not None:
        out.append("publish_time")
    picked = options.columns if options.columns is not None else range(len(_SOURCE))
    for i in picked:
        src = _SOURCE[i]
        if src is not None and src not in out:
            out.append(src)
    return out


def arrow_to_schema(rb: Any, partition: int, options: ReadOptions) -> Any:
    """A reader's Arrow batch -> the Data Source schema (only the selected columns)."""
    import pyarrow as pa

    if options.typed is not None:
        from streamwire.spark.typed_read import typed_to_schema

        return typed_to_schema(rb, partition, options)

    schema = arrow_schema(options.scala_names)
    n = rb.num_rows
    picked = options.columns if options.columns is not None else range(len(schema))
    arrays = []
    for i in picked:
        typ = schema.field(i).type
        src = _SOURCE[i]
        if src is None:
            arrays.append(pa.repeat(pa.scalar(partition, pa.int32()), n))
        else:
            c = rb.column(src)  # message ids come serialized from Rust: no per-row objects
            arrays.append(c if c.type.equals(typ) else c.cast(typ))
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema([schema.field(i) for i in picked]))
