"""Reading planned ranges on executors, and resolving topics / last message ids on the driver.

A range is read with a *reader* (no subscription left behind) started inclusively at the entry of
the exclusive start position; everything at or before the start is filtered out here, whatever
the client does with batch indexes. The read stops at the end position, so a batch query is
bounded and deterministic even while producers keep writing.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import streamwire
from streamwire.spark.config import ClientConfig
from streamwire.spark.offsets import Position, RangeSpec, position_key

__all__ = [
    "ARROW_COLUMNS",
    "ReadOptions",
    "arrow_schema",
    "last_message_id",
    "read_range",
    "resolve_topics",
    "spark_schema_ddl",
]

# (column, Scala-connector name, Spark DDL type)
ARROW_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("value", "value", "binary"),
    ("key", "__key", "string"),
    ("topic", "__topic", "string"),
    ("partition", "partition", "int"),
    ("message_id", "__messageId", "binary"),
    ("publish_time", "__publishTime", "timestamp"),
    ("event_time", "__eventTime", "timestamp"),
    ("properties", "__messageProperties", "map<string,string>"),
    ("producer_name", "producer_name", "string"),
    ("sequence_id", "sequence_id", "bigint"),
)


def column_names(scala_names: bool) -> list[str]:
    return [scala if scala_names else ours for ours, scala, _ in ARROW_COLUMNS]


def spark_schema_ddl(scala_names: bool = False) -> str:
    names = column_names(scala_names)
    return ", ".join(f"`{n}` {t}" for n, (_, _, t) in zip(names, ARROW_COLUMNS))


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
    starting_time_ms: Optional[int] = None
    ending_time_ms: Optional[int] = None


# -- driver side -------------------------------------------------------------------------------


def resolve_topics(client: Any, topics: Sequence[str], pattern: Optional[str]) -> list[str]:
    """Topic (or topics, or a pattern) -> the full names of every partition to read."""
    from streamwire.spark.offsets import normalize_topic

    names = [normalize_topic(t) for t in topics]
    lookup = client.lookup()
    if pattern:
        import re

        lister = next(
            (
                getattr(lookup, n)
                for n in ("topics_of_namespace", "get_topics_of_namespace", "namespace_topics")
                if hasattr(lookup, n)
            ),
            None,
        )
        if lister is None:
            raise NotImplementedError(
                "streamwire: topicsPattern needs Lookup.topics_of_namespace(namespace), which "
                "this streamwire build does not provide; list the topics with 'topics' instead"
            )
        full = normalize_topic(pattern)
        _domain, rest = full.split("://", 1)
        tenant, ns, _ = rest.split("/", 2)
        regex = re.compile(full)
        found = [t for t in lister(f"{tenant}/{ns}") if regex.fullmatch(t)]
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

    Prefers ``Reader.get_last_message_id`` (no subscription is created); otherwise probes with a
    uniquely named consumer and unsubscribes it when the API allows.
    """
    reader = client.create_reader(topic, "latest")
    try:
        if hasattr(reader, "get_last_message_id"):
            return _as_position(reader.get_last_message_id())
    finally:
        reader.close()
    consumer = client.subscribe(
        topic,
        f"streamwire-spark-probe-{uuid.uuid4().hex}",
        subscription_type="exclusive",
        initial_position="latest",
    )
    try:
        return _as_position(consumer.get_last_message_id())
    finally:
        unsubscribe = getattr(consumer, "unsubscribe", None)
        try:
            if unsubscribe is not None:
                unsubscribe()
        finally:
            consumer.close()


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
    if spec.start[0] < 0 or spec.start[1] < 0:
        start_id = "earliest"  # filter below; (L,-1) is not a message a reader can start at
        expect_first: Optional[tuple[int, int]] = None
    else:
        start_id = streamwire.MessageId(spec.start[0], spec.start[1], max(spec.partition, -1))
        expect_first = (spec.start[0], spec.start[1])
    reader = client.create_reader(
        spec.topic,
        start_id,
        inclusive=True,
        receiver_queue_size=options.receiver_queue_size,
    )
    try:
        yield from _read_loop(reader, spec, options, expect_first)
    finally:
        reader.close()


def _read_loop(
    reader: Any, spec: RangeSpec, options: ReadOptions, expect_first: Optional[tuple[int, int]]
) -> Iterator[Any]:
    start_key = position_key(spec.start)
    end_key = position_key(spec.end)
    end_entry = (spec.end[0], spec.end[1])
    whole_end_entry = spec.end[2] < 0
    first = True
    while True:
        messages = reader.read_many(options.max_batch, timeout=options.poll_timeout)
        if not messages:
            if not reader.has_message_available():
                # Everything that exists was read, and the end was not reached: the tail of the
                # range is gone, or (end batch -1) the last entry is complete.
                if not whole_end_entry and options.fail_on_data_loss:
                    raise DataLossError(
                        f"{spec.topic}: range ended before {spec.end} (failOnDataLoss=true)"
                    )
                return
            continue
        keep: list[Any] = []
        done = False
        for msg in messages:
            mid = msg.message_id
            pos = (int(mid.ledger_id), int(mid.entry_id), int(mid.batch_index))
            if first:
                first = False
                if (
                    expect_first is not None
                    and (pos[0], pos[1]) != expect_first
                    and options.fail_on_data_loss
                ):
                    raise DataLossError(
                        f"{spec.topic}: expected to resume at entry {expect_first}, first "
                        f"available message is {pos[:2]}: messages were deleted "
                        "(set failOnDataLoss=false to skip them)"
                    )
            key = position_key(pos)
            if key <= start_key:
                continue
            if key > end_key:
                done = True
                break
            keep.append(msg)
            if key == end_key:
                done = True
                break
            if whole_end_entry and (pos[0], pos[1]) == end_entry:
                size = int(getattr(mid, "batch_size", 0) or 0)
                if pos[2] < 0 or (size > 0 and pos[2] >= size - 1):
                    done = True
                    break
        if keep:
            batch = messages_to_arrow(keep, spec.partition, options)
            if batch.num_rows:
                yield batch
        if done:
            return


def _ms(value: Any, zero_is_null: bool) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return int(value.timestamp() * 1000)
    number = int(value)
    if number == 0 and zero_is_null:
        return None
    return number


def messages_to_arrow(messages: Sequence[Any], partition: int, options: ReadOptions) -> Any:
    """Messages -> a RecordBatch in the Data Source schema (time filters applied)."""
    import pyarrow as pa

    values: list[bytes] = []
    keys: list[Optional[str]] = []
    topics: list[str] = []
    ids: list[bytes] = []
    publish: list[Optional[int]] = []
    events: list[Optional[int]] = []
    props: list[Optional[list[tuple[str, str]]]] = []
    producers: list[Optional[str]] = []
    seqs: list[Optional[int]] = []
    lo, hi = options.starting_time_ms, options.ending_time_ms
    for msg in messages:
        pt = _ms(msg.publish_time, zero_is_null=False)
        if pt is not None and ((lo is not None and pt < lo) or (hi is not None and pt >= hi)):
            continue
        values.append(bytes(msg.data))
        keys.append(msg.key)
        topics.append(msg.topic)
        ids.append(msg.message_id.serialize())
        publish.append(pt * 1000 if pt is not None else None)
        et = _ms(msg.event_time, zero_is_null=True)
        events.append(et * 1000 if et is not None else None)
        p = msg.properties
        props.append(list(p.items()) if p else [])
        producers.append(msg.producer_name)
        seqs.append(msg.sequence_id)
    schema = arrow_schema(options.scala_names)
    n = len(values)
    arrays = [
        pa.array(values, pa.binary()),
        pa.array(keys, pa.string()),
        pa.array(topics, pa.string()),
        pa.array([partition] * n, pa.int32()),
        pa.array(ids, pa.binary()),
        pa.array(publish, pa.int64()).cast(schema.field(5).type),
        pa.array(events, pa.int64()).cast(schema.field(6).type),
        pa.array(props, pa.map_(pa.string(), pa.string())),
        pa.array(producers, pa.string()),
        pa.array(seqs, pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
