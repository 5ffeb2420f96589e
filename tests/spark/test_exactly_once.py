"""Exactly-once streaming writes (``deliveryGuarantee=exactly_once``) on Apache Pulsar 4.0.7
with transactions on.

Two levels:

* a real Spark streaming copy (several micro-batches, then a restart from the checkpoint):
  every row is in the target once, and the marker topic holds one committed marker per task;
* the commit protocol driven step by step with the sink's own task and driver functions, to
  stop "the driver" at each point of a batch where a crash leaves something behind, then run the
  batch again as Spark does after a restart: committed before the crash (some partitions, all,
  none), a task's transaction left open by a dead process (the next commit aborts it), a failed
  batch aborted. The target is read by our reader and the official client's.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import ConfigError

from tests.interop._official_read import official_client
from tests.peers.apache import ApachePulsar

from .helpers import copy_stream, seed


def _read_all(url: str, topic: str) -> list[bytes]:
    """Every visible (committed) message of ``topic``, by our reader."""
    out: list[bytes] = []
    with streamwire.Client(url) as c, c.create_reader(topic, "earliest") as r:
        while r.has_message_available():
            out += [m.data() for m in r.read_many(1000, timeout=5)]
    return out


def _official_all(pulsar: ModuleType, url: str, topic: str) -> list[bytes]:
    client = official_client(pulsar, url)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        out = []
        while reader.has_message_available():
            out.append(reader.read_next(5000).data())
        reader.close()
        return out
    finally:
        client.close()


def test_streaming_copy_is_exactly_once_across_batches_and_a_restart(
    spark: Any,
    apache_broker: ApachePulsar,
    official_pulsar: ModuleType,
    unique_topic: str,
    tmp_path: Path,
) -> None:
    url = apache_broker.service_url
    target = unique_topic + "-eo"
    first = [f"a{i}".encode() for i in range(300)]
    seed(official_pulsar, url, unique_topic, first)
    source = {
        "service_url": url,
        "topic": unique_topic,
        "startingOffsets": "earliest",
        "maxRecordsPerTrigger": "100",
    }
    sink = {
        "service_url": url,
        "topic": target,
        "deliveryGuarantee": "exactly_once",
        "transactionTimeoutMs": "60000",
    }
    ckpt = tmp_path / "ckpt"
    q = copy_stream(spark, source, sink, ckpt, ("value",))
    assert len([p for p in q.recentProgress if p["numInputRows"]]) >= 3  # several batches
    assert sorted(_read_all(url, target)) == sorted(first)

    second = [f"b{i}".encode() for i in range(200)]
    seed(official_pulsar, url, unique_topic, second)
    copy_stream(spark, source, sink, ckpt, ("value",))  # resumes from the checkpoint
    want = sorted(first + second)
    assert sorted(_read_all(url, target)) == want
    assert sorted(_official_all(official_pulsar, url, target)) == want
    markers = _read_all(url, target + "-streamwire-markers")
    assert markers and all(b'"query"' in m for m in markers)


# -- the commit protocol, a step at a time -----------------------------------------------------


@pytest.fixture()
def sink(apache_broker: ApachePulsar, unique_topic: str) -> Iterator[Any]:
    from streamwire.spark import ClientConfig
    from streamwire.spark.exactly_once import ExactlyOnce
    from streamwire.spark.writing import ProduceOptions

    config = ClientConfig(apache_broker.service_url)
    # A crashed attempt's open transactions are aborted by the next commit, not waited out:
    # the timeout is longer than any of these tests.
    eo = ExactlyOnce(unique_topic + "-markers", txn_timeout=60.0)
    yield config, eo, ProduceOptions(topic=unique_topic)


def _rows(tag: str, partition: int, n: int = 50) -> list[bytes]:
    return [f"{tag}-p{partition}-{i}".encode() for i in range(n)]


def _attempt(sink: Any, query: str, batch: int, tag: str, parts: int = 3) -> list[Any]:
    """One attempt of a batch: every task writes its rows in an open transaction."""
    import pyarrow as pa
    from streamwire.spark.exactly_once import write_task

    config, eo, produce = sink
    out = []
    for p in range(parts):
        batch_rows = pa.RecordBatch.from_arrays([pa.array(_rows(tag, p), pa.binary())], ["value"])
        out.append(write_task(config, produce, eo, [batch_rows], query, batch, p))
    return out


def _resume(sink: Any, commit: Any) -> Any:
    from streamwire.spark.cache import get_client

    config, eo, _ = sink
    return get_client(config).resume_transaction(commit.txn, eo.txn_timeout)


def _expected(tag: str, parts: int = 3) -> list[bytes]:
    return sorted(v for p in range(parts) for v in _rows(tag, p))


def test_nothing_is_visible_before_the_driver_commits(
    sink: Any, apache_broker: ApachePulsar, unique_topic: str
) -> None:
    from streamwire.spark.exactly_once import commit_batch

    query = uuid.uuid4().hex
    commits = _attempt(sink, query, 0, "x")
    assert _read_all(apache_broker.service_url, unique_topic) == []
    assert commit_batch(sink[0], sink[1], commits, 0) == (150, 0)
    assert sorted(_read_all(apache_broker.service_url, unique_topic)) == _expected("x")


def test_rerun_after_a_crash_half_way_through_committing(
    sink: Any, apache_broker: ApachePulsar, unique_topic: str, official_pulsar: ModuleType
) -> None:
    """The driver committed partition 0, then died: partition 1's transaction stays open
    (until the broker aborts it at its timeout) and partition 2's was never committed. The
    re-run commits partitions 1 and 2 only."""
    from streamwire.spark.exactly_once import commit_batch

    url = apache_broker.service_url
    query = uuid.uuid4().hex
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 0, "b0"), 0) == (150, 0)
    crashed = _attempt(sink, query, 1, "b1")
    _resume(sink, crashed[0]).commit()
    _resume(sink, crashed[2]).abort()
    # Spark runs batch 1 again after the restart: the same rows in the same partitions.
    rerun = _attempt(sink, query, 1, "b1")
    started = time.monotonic()
    assert commit_batch(sink[0], sink[1], rerun, 1) == (100, 50)
    # Partition 1's open transaction was aborted by the driver, not waited out (60 s timeout).
    assert time.monotonic() - started < 30.0
    want = sorted(_expected("b0") + _expected("b1"))
    assert sorted(_read_all(url, unique_topic)) == want
    assert sorted(_official_all(official_pulsar, url, unique_topic)) == want


def test_rerun_after_a_crash_once_everything_was_committed(
    sink: Any, apache_broker: ApachePulsar, unique_topic: str
) -> None:
    """Every transaction committed, but Spark never recorded the batch: all skipped."""
    from streamwire.spark.exactly_once import commit_batch

    query = uuid.uuid4().hex
    for c in _attempt(sink, query, 7, "c"):
        _resume(sink, c).commit()
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 7, "c"), 7) == (0, 150)
    # The next batch of the query is committed as usual.
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 8, "d"), 8) == (150, 0)
    want = sorted(_expected("c") + _expected("d"))
    assert sorted(_read_all(apache_broker.service_url, unique_topic)) == want


def test_rerun_after_a_crash_before_any_commit(
    sink: Any, apache_broker: ApachePulsar, unique_topic: str
) -> None:
    """The tasks wrote, the driver died before committing anything: the crashed attempt's
    transactions are still open; the re-run aborts them and commits everything."""
    from streamwire.spark.exactly_once import commit_batch

    query = uuid.uuid4().hex
    _attempt(sink, query, 0, "e")  # left open
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 0, "e"), 0) == (150, 0)
    assert sorted(_read_all(apache_broker.service_url, unique_topic)) == _expected("e")


def test_an_aborted_batch_leaves_nothing(
    sink: Any, apache_broker: ApachePulsar, unique_topic: str
) -> None:
    from streamwire.spark.exactly_once import abort_batch, commit_batch

    query = uuid.uuid4().hex
    abort_batch(sink[0], sink[1], _attempt(sink, query, 0, "f"))
    assert _read_all(apache_broker.service_url, unique_topic) == []
    # Spark runs the failed batch again: written once.
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 0, "f"), 0) == (150, 0)
    assert sorted(_read_all(apache_broker.service_url, unique_topic)) == _expected("f")


def test_options_are_checked() -> None:
    from streamwire.spark.exactly_once import ExactlyOnce

    assert ExactlyOnce.from_options({"topic": "t"}) is None
    eo = ExactlyOnce.from_options({"topic": "t", "deliveryGuarantee": "EXACTLY_ONCE"})
    assert eo is not None
    assert eo.marker_topic == "persistent://public/default/t-streamwire-markers"
    assert eo.txn_timeout == 300.0
    with pytest.raises(ConfigError, match="deliveryGuarantee"):
        ExactlyOnce.from_options({"topic": "t", "deliveryGuarantee": "twice"})
    with pytest.raises(ConfigError, match="transactionMarkerTopic"):
        ExactlyOnce.from_options({"deliveryGuarantee": "exactly_once"})
    with pytest.raises(ConfigError, match="transactionTimeoutMs"):
        ExactlyOnce.from_options(
            {"topic": "t", "deliveryGuarantee": "exactly_once", "transactionTimeoutMs": "0"}
        )


def test_exactly_once_is_refused_for_tank() -> None:
    from pyspark.sql.types import BinaryType, StructField, StructType
    from streamwire.spark.datasource import StreamwireDataSource

    source = StreamwireDataSource(
        {
            "service_url": "tank://127.0.0.1:1",
            "topic": "t",
            "deliveryGuarantee": "exactly_once",
        }
    )
    with pytest.raises(ConfigError, match="TANK has none"):
        source.streamWriter(StructType([StructField("value", BinaryType())]), False)
