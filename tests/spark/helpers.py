"""Spark test helpers: seeding and verification through the official client (a test-only
stand-in), a streaming read run to its end, and collected values as plain Python."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any


def seed(pulsar: ModuleType, url: str, topic: str, values: list[bytes], **send: Any) -> list[Any]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(topic, batching_enabled=True)
        ids = [producer.send(v, **send) for v in values]
        producer.flush()
        producer.close()
        return ids
    finally:
        client.close()


def drain(pulsar: ModuleType, url: str, topic: str, timeout_ms: int = 3000) -> list[Any]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        out = []
        while True:
            try:
                out.append(reader.read_next(timeout_ms))
            except Exception:
                break
        reader.close()
        return out
    finally:
        client.close()


def as_plain(v: Any) -> Any:
    """A value collected from a DataFrame as plain Python: Rows as dicts, bytearrays as bytes,
    recursively through lists and maps."""
    if hasattr(v, "asDict"):
        return {k: as_plain(x) for k, x in v.asDict().items()}
    if isinstance(v, bytearray):
        return bytes(v)
    if isinstance(v, list):
        return [as_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: as_plain(x) for k, x in v.items()}
    return v


def available_now(
    spark: Any,
    options: Mapping[str, str],
    out: Path,
    ckpt: Path,
    columns: tuple[str, ...] = ("cast(value as string) as v",),
    *,
    timeout: float = 120,
    check: bool = True,
) -> Any:
    """Run a ``Trigger.AvailableNow`` streaming read of ``format("streamwire")`` with
    ``options`` into Parquet files at ``out`` (checkpoint ``ckpt``, so a second run resumes)
    to its end; ``columns`` are the select expressions. With ``check`` the query must end
    without an exception; without, its ``exception()`` is the caller's to check."""
    sink = {"path": str(out)}
    return _run(spark, options, columns, "parquet", sink, ckpt, timeout, check)


def copy_stream(
    spark: Any,
    options: Mapping[str, str],
    sink: Mapping[str, str],
    ckpt: Path,
    columns: tuple[str, ...],
    *,
    timeout: float = 120,
) -> Any:
    """As :func:`available_now`, but a streaming write to ``format("streamwire")`` with the
    ``sink`` options; the query must end without an exception."""
    return _run(spark, options, columns, "streamwire", sink, ckpt, timeout, True)


def _run(
    spark: Any,
    options: Mapping[str, str],
    columns: tuple[str, ...],
    sink_format: str,
    sink: Mapping[str, str],
    ckpt: Path,
    timeout: float,
    check: bool,
) -> Any:
    reader = spark.readStream.format("streamwire")
    for k, v in options.items():
        reader = reader.option(k, v)
    writer = reader.load().selectExpr(*columns).writeStream.format(sink_format)
    for k, v in sink.items():
        writer = writer.option(k, v)
    query = writer.option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start()
    try:
        query.awaitTermination(timeout)
    except Exception:  # a failed query: its exception() says why
        if check:
            raise
    if check:
        assert query.exception() is None, query.exception()
    return query


def batch_read_values(options: dict[str, str]) -> list[Any]:
    """The first column of every row the Data Source's batch reader gives with ``options``
    (its partitions read one after another, in this process: no Spark session)."""
    from streamwire.spark.datasource import StreamwireBatchReader

    reader = StreamwireBatchReader(options)
    batches = [rb for part in reader.partitions() for rb in reader.read(part)]
    return [v for rb in batches for v in rb.column(0).to_pylist()]
