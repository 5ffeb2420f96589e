"""The Data Source on long backlogs: topics spanning many ledgers, on a broker of their own.

Apache Pulsar standalone with ``managedLedgerMaxEntriesPerLedger=5000`` and no minimum rollover
time makes a 100k-message topic span 20 ledgers in seconds; retention is on (infinite) so the
ledgers stay, except in the namespace the retention test makes without it. The broker starts
once for this module. Every micro-batch's size is checked, and every message must arrive once.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.peers.admin import PulsarAdmin
from tests.peers.apache import ApachePulsar, ApachePulsarError
from tests.spark.helpers import available_now

ENTRIES_PER_LEDGER = 5000
BIG = 100_000
CAP = 10_000


@dataclass
class SmallLedgers:
    broker: ApachePulsar
    admin: PulsarAdmin
    #: a 100k-message unbatched topic; its last 1% published after ``tail_time``
    big: str
    tail_time: int

    @property
    def url(self) -> str:
        return self.broker.service_url

    @property
    def admin_url(self) -> str:
        return self.broker.admin_url


def _values(prefix: str, n: int, width: int = 0) -> list[bytes]:
    return [f"{prefix}{i:0{width}d}".encode() for i in range(n)]


def produce(url: str, topic: str, values: list[bytes], **producer: Any) -> None:
    import streamwire

    with streamwire.Client(url) as client:
        p = client.create_producer(topic, **producer)
        for i in range(0, len(values), 20_000):
            p.send_many(values[i : i + 20_000])
        p.flush()
        p.close()


def ledger_count(admin: PulsarAdmin, topic: str) -> int:
    """Ledgers the broker keeps for ``topic`` (the open one included)."""
    from tests.peers.admin import topic_path

    stats = admin.request("GET", f"{topic_path(topic)}/internalStats")
    return len(stats["ledgers"])


@pytest.fixture(scope="module")
def small_ledgers() -> Iterator[SmallLedgers]:
    broker = ApachePulsar(
        extra_conf={
            "managedLedgerMaxEntriesPerLedger": str(ENTRIES_PER_LEDGER),
            "managedLedgerMinLedgerRolloverTimeMinutes": "0",
            "defaultRetentionTimeInMinutes": "-1",
            "defaultRetentionSizeInMB": "-1",
        }
    )
    try:
        try:
            broker.start()
        except ApachePulsarError as exc:
            pytest.fail(f"Apache Pulsar (small ledgers) did not start: {exc}", pytrace=False)
        big = f"persistent://public/default/big-{uuid.uuid4().hex[:8]}"
        values = _values("m", BIG, 6)
        head = BIG - BIG // 100
        produce(broker.service_url, big, values[:head], batching=False)
        time.sleep(0.05)
        tail_time = int(time.time() * 1000)
        time.sleep(0.05)
        produce(broker.service_url, big, values[head:], batching=False)
        yield SmallLedgers(broker, broker.admin(), big, tail_time)
    finally:
        broker.close()


def run_stream(spark: Any, tmp: Path, topic: str, **options: str) -> tuple[Any, list[str]]:
    """A ``Trigger.AvailableNow`` query into parquet; (the query, every value read)."""
    query = start_stream(spark, tmp, topic, **options)
    assert query.exception() is None, query.exception()
    got = [r.v for r in spark.read.schema("v string").parquet(str(tmp / "out")).collect()]
    return query, got


def start_stream(spark: Any, tmp: Path, topic: str, **options: str) -> Any:
    """Run a ``Trigger.AvailableNow`` query into ``tmp / "out"`` to its end (its failure is
    the query's exception(), checked by the caller)."""
    opts = {"topic": topic, "startingOffsets": "earliest", **options}
    return available_now(spark, opts, tmp / "out", tmp / "ckpt", timeout=300, check=False)


def _offsets(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def batch_sizes(query: Any) -> list[int]:
    return [int(p["numInputRows"]) for p in query.recentProgress if p["numInputRows"]]


def test_topic_spans_many_ledgers(small_ledgers: SmallLedgers) -> None:
    assert ledger_count(small_ledgers.admin, small_ledgers.big) >= BIG // ENTRIES_PER_LEDGER


def test_row_cap_is_exact_across_ledgers(
    spark: Any, small_ledgers: SmallLedgers, tmp_path: Path
) -> None:
    s = small_ledgers
    query, got = run_stream(
        spark,
        tmp_path,
        s.big,
        service_url=s.url,
        **{"admin.url": s.admin_url, "maxRecordsPerTrigger": str(CAP)},
    )
    sizes = batch_sizes(query)
    assert sizes == [CAP] * (BIG // CAP), sizes  # exact: every batch is the cap
    assert len(got) == BIG and len(set(got)) == BIG  # every message once
    # reportLatestOffset: the progress shows the newest position beside the batch's end
    with_rows = [p["sources"][0] for p in query.recentProgress if p["numInputRows"]]
    latest = _offsets(with_rows[0]["latestOffset"])[s.big]
    assert _offsets(with_rows[0]["endOffset"])[s.big] != latest
    assert latest == _offsets(with_rows[-1]["endOffset"])[s.big]


def test_row_cap_holds_without_the_admin_api(
    spark: Any, small_ledgers: SmallLedgers, tmp_path: Path
) -> None:
    """By peeking at ledger ends: batches stop at a ledger's end, never above the cap."""
    s = small_ledgers
    topic = f"persistent://public/default/peek-{uuid.uuid4().hex[:8]}"
    n = 23_000
    values = _values("p", n, 5)
    produce(s.url, topic, values, batching=False)
    query, got = run_stream(spark, tmp_path, topic, service_url=s.url, maxRecordsPerTrigger="7000")
    sizes = batch_sizes(query)
    assert max(sizes) <= 7000 and len(sizes) > 1, sizes
    assert sorted(got) == sorted(v.decode() for v in values)


def test_batched_topic_cap_counts_messages(
    spark: Any, small_ledgers: SmallLedgers, tmp_path: Path
) -> None:
    s = small_ledgers
    topic = f"persistent://public/default/batched-{uuid.uuid4().hex[:8]}"
    n = 60_000
    values = _values("b", n, 5)
    # 10 messages an entry: 6,000 entries, two ledgers
    produce(s.url, topic, values, batching=True, batching_max_messages=10)
    assert ledger_count(s.admin, topic) >= 2
    query, got = run_stream(
        spark,
        tmp_path,
        topic,
        service_url=s.url,
        **{"admin.url": s.admin_url, "maxRecordsPerTrigger": str(CAP)},
    )
    sizes = batch_sizes(query)
    assert len(sizes) >= n // CAP and max(sizes) <= CAP, sizes
    assert len(got) == n and len(set(got)) == n


def test_partitioned_topic_shares_the_cap(
    spark: Any, small_ledgers: SmallLedgers, tmp_path: Path
) -> None:
    s = small_ledgers
    topic = f"persistent://public/default/parts-{uuid.uuid4().hex[:8]}"
    s.admin.create_partitioned_topic(topic, 3)
    n = 45_000
    values = _values("q", n, 5)
    produce(s.url, topic, values, batching=False)  # round robin: 15k a partition, 3 ledgers
    query, got = run_stream(
        spark,
        tmp_path,
        topic,
        service_url=s.url,
        **{"admin.url": s.admin_url, "maxRecordsPerTrigger": "8000"},
    )
    sizes = batch_sizes(query)
    assert sizes[:-1] == [8000] * (len(sizes) - 1) and sum(sizes) == n, sizes
    assert sorted(got) == sorted(v.decode() for v in values)


def test_multi_topic_byte_cap(spark: Any, small_ledgers: SmallLedgers, tmp_path: Path) -> None:
    s = small_ledgers
    a = f"persistent://public/default/bytes-a-{uuid.uuid4().hex[:8]}"
    b = f"persistent://public/default/bytes-b-{uuid.uuid4().hex[:8]}"
    va = [f"a{i:05d}".encode() + b"x" * 94 for i in range(12_000)]  # 100 B each
    vb = [f"b{i:05d}".encode() + b"x" * 94 for i in range(6_000)]
    produce(s.url, a, va, batching=False)
    produce(s.url, b, vb, batching=False)
    budget = 400_000  # 4,000 messages of 100 B
    reader_opts = {
        "admin.url": s.admin_url,
        "maxBytesPerTrigger": str(budget),
        "topics": f"{a},{b}",
    }
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    opts = {"service_url": s.url, "startingOffsets": "earliest", **reader_opts}
    query = available_now(spark, opts, out, ckpt, timeout=300)
    sizes = batch_sizes(query)
    assert len(sizes) >= 18_000 * 100 // budget and max(sizes) * 100 <= budget, sizes
    got = [r.v for r in spark.read.schema("v string").parquet(str(out)).collect()]
    assert sorted(got) == sorted(v.decode() for v in va + vb)


def test_min_partitions_cuts_across_ledgers(spark: Any, small_ledgers: SmallLedgers) -> None:
    s = small_ledgers
    df = (
        spark.read.format("streamwire")
        .option("service_url", s.url)
        .option("admin.url", s.admin_url)
        .option("topic", s.big)
        .option("minPartitions", "8")
        .schema("value binary")
        .load()
    )
    assert df.rdd.getNumPartitions() == 8
    from pyspark.sql.functions import spark_partition_id

    counts = df.groupBy(spark_partition_id().alias("p")).count().collect()
    sizes = sorted(r["count"] for r in counts)
    assert sum(sizes) == BIG and sizes[-1] - sizes[0] <= 1, sizes
    assert df.distinct().count() == BIG


def test_subscription_holds_retention_from_the_start(
    spark: Any, small_ledgers: SmallLedgers, tmp_path: Path
) -> None:
    """On a namespace without retention, the broker deletes a rolled-over ledger at once when
    no subscription needs it (the control topic shows it). The query's subscription, made at
    its start before the first batch, keeps every ledger it has yet to read."""
    s = small_ledgers
    ns = f"public/noretention-{uuid.uuid4().hex[:8]}"
    s.admin.request("PUT", f"namespaces/{ns}")
    s.admin.request(
        "POST", f"namespaces/{ns}/retention", {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0}
    )
    held, bare = f"persistent://{ns}/held", f"persistent://{ns}/bare"
    first = _values("h", 10, 5)
    produce(s.url, held, first, batching=False)
    options = {"service_url": s.url, "predefinedSubscription": "spark-held"}
    _, got = run_stream(spark, tmp_path, held, **options)
    assert sorted(got) == sorted(v.decode() for v in first)
    # a backlog rolling six ledgers, on the query's topic and on a control topic
    backlog = _values("r", 6 * ENTRIES_PER_LEDGER, 5)
    produce(s.url, held, backlog, batching=False)
    produce(s.url, bare, backlog, batching=False)
    deadline = time.monotonic() + 60
    while ledger_count(s.admin, bare) > 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ledger_count(s.admin, bare) <= 2  # the control lost its rolled ledgers
    assert ledger_count(s.admin, held) >= 6  # the query's topic kept them
    _, got = run_stream(spark, tmp_path, held, **options)  # resumes from the checkpoint
    assert sorted(got) == sorted(v.decode() for v in first + backlog)
    subs = s.admin.topic_stats(held)["subscriptions"]
    assert set(subs) == {"spark-held"}, subs  # it stays for the next run: deleting it is ours


def _out_counter(admin: PulsarAdmin, topic: str) -> int:
    """Messages the broker has dispatched from ``topic`` to every consumer and reader, gone
    ones included."""
    return int(admin.topic_stats(topic)["msgOutCounter"])


def test_starting_time_seeks_instead_of_scanning(spark: Any, small_ledgers: SmallLedgers) -> None:
    s = small_ledgers

    def read(**options: str) -> tuple[list[bytes], int]:
        before = _out_counter(s.admin, s.big)
        reader = spark.read.format("streamwire").option("service_url", s.url)
        for k, v in options.items():
            reader = reader.option(k, v)
        rows = reader.option("topic", s.big).schema("value binary").load().collect()
        return [bytes(r.value) for r in rows], _out_counter(s.admin, s.big) - before

    tail, tail_cost = read(startingTime=str(s.tail_time))
    assert sorted(tail) == _values("m", BIG, 6)[BIG - BIG // 100 :]
    everything, full_cost = read()
    assert len(everything) == BIG and full_cost >= BIG
    assert tail_cost <= 0.03 * full_cost, (tail_cost, full_cost)


def test_streaming_time_bounds(spark: Any, small_ledgers: SmallLedgers, tmp_path: Path) -> None:
    """``endingTime`` ends each partition before its first message published at or after it:
    a batch read, and a streaming query, which reads up to there and no further, also on a
    later run; ``startingTime`` starts a streaming query there."""
    s = small_ledgers
    topic = f"persistent://public/default/times-{uuid.uuid4().hex[:8]}"
    before, after = _values("e", 500, 4), _values("f", 500, 4)
    produce(s.url, topic, before, batching=False)
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    produce(s.url, topic, after, batching=False)
    head = (
        spark.read.format("streamwire")
        .option("service_url", s.url)
        .option("topic", topic)
        .option("endingTime", str(cut))
        .load()
        .selectExpr("cast(value as string) v")
        .collect()
    )
    assert sorted(r.v for r in head) == [v.decode() for v in before]  # batch
    _, got = run_stream(spark, tmp_path / "a", topic, service_url=s.url, endingTime=str(cut))
    assert sorted(got) == [v.decode() for v in before]
    produce(s.url, topic, _values("g", 100, 4), batching=False)
    query, got = run_stream(spark, tmp_path / "a", topic, service_url=s.url, endingTime=str(cut))
    assert sorted(got) == [v.decode() for v in before] and not batch_sizes(query)
    _, got = run_stream(spark, tmp_path / "b", topic, service_url=s.url, startingTime=str(cut))
    assert sorted(got) == sorted(v.decode() for v in after + _values("g", 100, 4))


@pytest.mark.parametrize("fail", [True, False], ids=["failOnDataLoss", "skip"])
def test_topic_deleted_mid_stream(
    spark: Any, small_ledgers: SmallLedgers, tmp_path: Path, fail: bool
) -> None:
    """A topic deleted between two runs of a query (the next lookup makes it again, empty):
    the next trigger fails under failOnDataLoss=true; under false the query goes on and reads
    the new topic's messages from its beginning."""
    s = small_ledgers
    topic = f"persistent://public/default/gone-{uuid.uuid4().hex[:8]}"
    old, new = _values("o", 100, 3), _values("n", 50, 3)
    produce(s.url, topic, old, batching=False)
    options = {"service_url": s.url, "failOnDataLoss": str(fail).lower()}
    _, got = run_stream(spark, tmp_path, topic, **options)
    assert sorted(got) == [v.decode() for v in old]
    s.admin.delete_topic(topic, force=True)
    if fail:
        query = start_stream(spark, tmp_path, topic, **options)
        assert query.exception() is not None
        assert "deleted or truncated mid-stream" in str(query.exception())
    else:
        run_stream(spark, tmp_path, topic, **options)
        produce(s.url, topic, new, batching=False)
        _, got = run_stream(spark, tmp_path, topic, **options)
        assert sorted(got) == sorted(v.decode() for v in old + new)


def test_offsets_by_timestamp_per_partition(
    spark: Any, small_ledgers: SmallLedgers, tmp_path: Path
) -> None:
    s = small_ledgers
    topic = f"persistent://public/default/bytime-{uuid.uuid4().hex[:8]}"
    s.admin.create_partitioned_topic(topic, 2)
    cuts = {}
    for i, (early, late) in enumerate([("a", "b"), ("c", "d")]):
        part = f"{topic}-partition-{i}"
        produce(s.url, part, _values(early, 200, 3), batching=False)
        time.sleep(0.05)
        cuts[str(i)] = int(time.time() * 1000)
        time.sleep(0.05)
        produce(s.url, part, _values(late, 200, 3), batching=False)

    def batch(**options: str) -> list[str]:
        reader = spark.read.format("streamwire").option("service_url", s.url)
        for k, v in options.items():
            reader = reader.option(k, v)
        rows = reader.option("topic", topic).load().selectExpr("cast(value as string) v")
        return sorted(r.v for r in rows.collect())

    def vals(*prefixes: str) -> list[str]:
        return sorted(v.decode() for p in prefixes for v in _values(p, 200, 3))

    by_time = json.dumps({topic: cuts})
    assert batch(startingOffsetsByTimestamp=by_time) == vals("b", "d")
    only_first = json.dumps({topic: {"0": cuts["0"]}})
    assert batch(endingOffsetsByTimestamp=only_first) == vals("a", "c", "d")
    _, got = run_stream(
        spark, tmp_path, topic, service_url=s.url, startingOffsetsByTimestamp=by_time
    )
    assert sorted(got) == vals("b", "d")


def test_subscription_prefix_names_one_subscription(
    spark: Any, small_ledgers: SmallLedgers, tmp_path: Path
) -> None:
    """``subscriptionPrefix``: the name is made when the query starts and kept in the
    checkpoint's offsets, so a restart holds and acknowledges the same subscription."""
    s = small_ledgers
    topic = f"persistent://public/default/prefix-{uuid.uuid4().hex[:8]}"
    first, second = _values("x", 100, 3), _values("y", 50, 3)
    produce(s.url, topic, first, batching=False)
    options = {"service_url": s.url, "subscriptionPrefix": "lake"}
    run_stream(spark, tmp_path, topic, **options)
    subs = s.admin.topic_stats(topic)["subscriptions"]
    assert len(subs) == 1 and next(iter(subs)).startswith("lake-"), subs
    produce(s.url, topic, second, batching=False)
    _, got = run_stream(spark, tmp_path, topic, **options)
    assert sorted(got) == sorted(v.decode() for v in first + second)
    subs = s.admin.topic_stats(topic)["subscriptions"]
    assert len(subs) == 1, subs  # the restart used the same name
    assert next(iter(subs.values()))["msgBacklog"] <= len(second), subs  # moved on commit


def test_plan_ranges_helper_cuts_across_ledgers(small_ledgers: SmallLedgers) -> None:
    from streamwire.spark import ClientConfig, plan_ranges

    s = small_ledgers
    cfg = ClientConfig(s.url, io_threads=None)  # the test process runs the engine already
    whole = plan_ranges(cfg, s.big, min_partitions=5)
    assert len(whole) == 1  # without the ledger list the range spans ledgers: left whole
    pieces = plan_ranges(cfg, s.big, min_partitions=5, admin_url=s.admin_url)
    assert len(pieces) == 5
    assert pieces[0].start == whole[0].start and pieces[-1].end == whole[0].end
    assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
