"""Helpers for ``mapInArrow`` / ``mapPartitions`` / ``foreachPartition``.

Each helper takes a picklable :class:`ClientConfig` and returns a plain function; the function runs
on an executor and gets its client/producer from the process-local cache there. Passing a live
``streamwire.Client`` or producer instead fails immediately with the pattern to use.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from streamwire.spark.config import ClientConfig
from streamwire.spark.offsets import (
    EARLIEST,
    Position,
    RangeSpec,
    normalize_topic,
    partition_index,
    predecessor,
    split_ranges,
)
from streamwire.spark.reading import (
    ReadOptions,
    first_message_position,
    last_message_id,
    read_range,
    resolve_topics,
)
from streamwire.spark.writing import ProduceOptions, produce_batches

if TYPE_CHECKING:  # the admin module (urllib, ssl) loads only when an admin URL is used
    from streamwire.spark.admin import AdminConfig

__all__ = [
    "COUNTS_SCHEMA",
    "plan_ranges",
    "produce_arrow",
    "produce_partition",
    "range_rows",
    "read_ranges_arrow",
]

COUNTS_SCHEMA = "rows bigint, bytes bigint"

_HINT = (
    "pass a streamwire.spark.ClientConfig(service_url, ...) instead: it pickles, and the worker "
    "gets a process-local cached client from it (config.client())"
)


def _check_config(config: Any) -> ClientConfig:
    if isinstance(config, ClientConfig):
        return config
    if isinstance(config, str):
        return ClientConfig(config)
    kind = type(config).__name__
    raise TypeError(f"streamwire.spark: got a {kind} where a ClientConfig is needed; {_HINT}")


def _counts_batch(rows: int, nbytes: int) -> Any:
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [pa.array([rows], pa.int64()), pa.array([nbytes], pa.int64())], names=["rows", "bytes"]
    )


def produce_arrow(
    config: Union[ClientConfig, str],
    topic: Optional[str] = None,
    *,
    producer_name_prefix: Optional[str] = None,
    **producer_options: Any,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A function for ``df.mapInArrow(fn, COUNTS_SCHEMA)`` that produces every row.

    Columns as for the Data Source writer: ``value`` (binary/string), optional ``key``,
    ``properties``, ``event_time``, ``topic``. Yields one ``(rows, bytes)`` batch per task after
    flushing, so ``.agg(sum("rows"))`` on the result is the number of delivered messages.
    """
    cfg = _check_config(config)
    base = ProduceOptions(topic=normalize_topic(topic) if topic else None, **producer_options)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        options = base
        if producer_name_prefix:
            from dataclasses import replace

            options = replace(base, producer_name=f"{producer_name_prefix}-{_partition_id()}")
        stats = produce_batches(cfg, batches, options)
        yield _counts_batch(stats.rows, stats.bytes)

    return run


def produce_partition(
    config: Union[ClientConfig, str],
    topic: str,
    *,
    value: Union[str, int, None] = None,
    key: Union[str, int, None] = None,
    chunk_rows: int = 10_000,
    **producer_options: Any,
) -> Callable[[Iterable[Any]], list[int]]:
    """A function for ``rdd.mapPartitions`` / ``rdd.foreachPartition`` (eager, returns ``[n]``).

    Elements may be ``bytes``/``str`` (the value) or rows/tuples/dicts, with ``value``/``key``
    naming the field (default: the ``value`` field, or the element itself).
    """
    cfg = _check_config(config)
    options = ProduceOptions(
        topic=normalize_topic(topic), chunk_rows=chunk_rows, **producer_options
    )

    def field(row: Any, name: Union[str, int, None]) -> Any:
        if name is None:
            return row
        if isinstance(row, dict):
            return row[name]
        if isinstance(name, int):
            return row[name]
        return (
            row[name]
            if hasattr(row, "__fields__") or hasattr(row, "asDict")
            else getattr(row, str(name))
        )

    def run(rows: Iterable[Any]) -> list[int]:
        import pyarrow as pa

        def batches() -> Iterator[Any]:
            values: list[bytes] = []
            keys: list[Optional[str]] = []
            for row in rows:
                v = field(row, value if value is not None else _default_value_field(row))
                values.append(v.encode() if isinstance(v, str) else bytes(v))
                if key is not None:
                    keys.append(field(row, key))
                if len(values) >= chunk_rows:
                    yield _batch(pa, values, keys if key is not None else None)
                    values, keys = [], []
            if values:
                yield _batch(pa, values, keys if key is not None else None)

        return [produce_batches(cfg, batches(), options).rows]

    return run


def _default_value_field(row: Any) -> Optional[str]:
    if isinstance(row, (bytes, bytearray, memoryview, str)):
        return None
    return "value"


def _batch(pa: Any, values: list[bytes], keys: Optional[list[Optional[str]]]) -> Any:
    arrays = [pa.array(values, pa.binary())]
    names = ["value"]
    if keys is not None:
        arrays.append(pa.array(keys, pa.string()))
        names.append("key")
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _partition_id() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return int(ctx.partitionId()) if ctx is not None else 0


# -- reading planned ranges with mapInArrow ----------------------------------------------------


def plan_ranges(
    config: Union[ClientConfig, str],
    topics: Union[str, Sequence[str]],
    *,
    starting: Union[str, dict[str, Position]] = "earliest",
    ending: Union[str, dict[str, Position]] = "latest",
    min_partitions: int = 0,
    admin_url: Optional[str] = None,
) -> list[RangeSpec]:
    """Driver side: the ``(start, end]`` range of every partition of ``topics``.

    ``min_partitions`` cuts ranges by entry counts: across ledgers with ``admin_url`` (the
    cluster's admin REST API, as the Data Source's ``admin.url``), else inside one ledger.

    ``starting`` / ``ending`` are ``"earliest"``/``"latest"`` or per-partition *inclusive*
    message positions; ``latest`` is resolved now, so the plan is bounded.
    """
    cfg = _check_config(config)
    names = [topics] if isinstance(topics, str) else list(topics)
    admin = None
    if admin_url:
        from streamwire.spark.admin import AdminConfig

        admin = AdminConfig.from_options({"admin.url": admin_url}, cfg)
    with cfg.new_client() as client:  # type: ignore[attr-defined]
        partitions = resolve_topics(client, names, None)
        return _plan(client, partitions, starting, ending, min_partitions, admin)


def _plan(
    client: Any,
    partitions: Sequence[str],
    starting: Union[str, dict[str, Any]],
    ending: Union[str, dict[str, Any]],
    min_partitions: int,
    admin: Optional[AdminConfig] = None,
) -> list[RangeSpec]:
    ranges: list[RangeSpec] = []
    for topic in partitions:
        end_spec = ending.get(topic, "latest") if isinstance(ending, dict) else ending
        start_spec = starting.get(topic, "earliest") if isinstance(starting, dict) else starting
        last: Optional[Position] = None
        if end_spec == "latest" or start_spec == "latest":
            last = last_message_id(client, topic)
        end: Position = last if end_spec == "latest" else end_spec  # type: ignore[assignment]
        if start_spec == "earliest":
            start = EARLIEST
        elif start_spec == "latest":
            start = last if last is not None else EARLIEST
        else:
            start = predecessor(start_spec)  # type: ignore[arg-type]
        if end_spec == "latest" and end[1] < 0:
            end = start  # an empty partition: nothing to plan
        ranges.append(RangeSpec(topic, partition_index(topic), start, end))
    if admin is not None and min_partitions > len(ranges):
        # The admin API's ledger lists cut ranges across ledgers by exact entry counts.
        from streamwire.spark.admin import internal_stats
        from streamwire.spark.ledgers import LedgerMap, split_by_ledgers

        maps = {
            r.topic: LedgerMap.from_internal_stats(internal_stats(admin, r.topic), r.end)
            for r in ranges
            if not r.is_empty() and r.topic.startswith("persistent://")
        }
        return split_by_ledgers(ranges, min_partitions, maps)
    firsts: dict[str, Position] = {}
    if min_partitions > len(ranges):
        for r in ranges:
            if r.start[0] < 0 and not r.is_empty():
                first = first_message_position(client, r.topic)
                if first is not None:
                    firsts[r.topic] = first
    return split_ranges(ranges, min_partitions, firsts)


def range_rows(ranges: Sequence[RangeSpec]) -> list[tuple[str]]:
    """Rows for ``spark.createDataFrame(range_rows(r), "range string")``."""
    return [(json.dumps(r.to_json()),) for r in ranges]


def read_ranges_arrow(
    config: Union[ClientConfig, str], *, scala_names: bool = False, fail_on_data_loss: bool = True
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A function for ``ranges_df.mapInArrow(fn, spark_schema_ddl())``.

    ``ranges_df`` has one string column ``range`` (see :func:`range_rows`); each task reads its
    ranges and yields the messages as Arrow batches in the Data Source schema.
    """
    cfg = _check_config(config)
    opts = ReadOptions(scala_names=scala_names, fail_on_data_loss=fail_on_data_loss)

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            for text in batch.column(0).to_pylist():
                yield from read_range(cfg, RangeSpec.from_json(json.loads(text)), opts)

    return run
