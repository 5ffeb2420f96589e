"""Exactly-once streaming writes to Pravega (``deliveryGuarantee=exactly_once`` with a
``tcp://`` service URL), against the suite's Pravega standalone.

Two levels, as ``test_exactly_once.py`` does for Pulsar:

* a real Spark streaming copy (several micro-batches, a restart from the checkpoint, and a
  restart after the last batch's entry in Spark's commit log is removed, which is what a crash
  after the sink's commit but before Spark's commit log leaves): every row is in the target
  once, read by our reader and the official client's;
* the commit protocol driven step by step with the sink's own task and driver functions, to
  stop "the driver" at each point of a batch where a crash leaves something behind (tasks wrote
  but nothing was committed; some partitions committed, not all; everything committed), then
  run the batch again as Spark does after a restart; a failed batch aborted; a lease that ran
  out failing the commit loudly; an earlier attempt the controller forgot refusing to guess.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamwire import InvalidTransactionStateError, TransactionTimeoutError
from streamwire import pravega as pv

from tests.pravega.test_pravega_interop import official_read_all
from tests.spark.helpers import copy_stream
from tests.spark.test_pravega_spark import fresh, write


def read_all(url: str, scope: str, stream: str) -> list[bytes]:
    """Every visible event of the stream, by our reader (to its tail now)."""
    with pv.Client(url) as c:
        tail = c.tail(scope, stream).positions
        out: list[bytes] = []
        with c.create_reader(scope, stream, "head") as r:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                pos = r.position().positions
                if all(pos.get(s, -1) >= o for s, o in tail.items()):
                    break
                out += [e.value for e in r.read_many(1000, timeout=0.5)]
        # Nothing more shows up (an aborted or open transaction stays invisible).
        with c.create_reader(scope, stream, c.tail(scope, stream)) as r:
            assert r.read_many(10, timeout=0.5) == []
    return out


def test_streaming_copy_is_exactly_once_across_batches_and_restarts(
    spark: Any, pravega: Any, tmp_path: Path
) -> None:
    url = pravega.controller_url
    (scope, source), (sink_scope, sink) = fresh(url, 2), fresh(url, 2)
    first = [b"a%03d" % i for i in range(300)]
    write(url, scope, source, first)
    opts = {
        "service_url": url,
        "scope": scope,
        "stream": source,
        "startingOffsets": "earliest",
        "maxRecordsPerTrigger": "100",
    }
    to = {
        "service_url": url,
        "scope": sink_scope,
        "stream": sink,
        "deliveryGuarantee": "exactly_once",
        "transactionTimeoutMs": "60000",
    }
    cols = ("value", "cast(segment as string) as routing_key")
    ckpt = tmp_path / "ckpt"
    q = copy_stream(spark, opts, to, ckpt, cols)
    assert len([p for p in q.recentProgress if p["numInputRows"]]) >= 3  # several batches
    assert sorted(read_all(url, sink_scope, sink)) == first

    second = [b"b%03d" % i for i in range(200)]
    write(url, scope, source, second)
    copy_stream(spark, opts, to, ckpt, cols)  # resumes from the checkpoint
    want = sorted(first + second)
    assert sorted(read_all(url, sink_scope, sink)) == want

    # A crash after the sink committed the last batch but before Spark's commit log recorded
    # it: Spark runs that batch again on restart, and the sink skips it.
    last = max(
        (p for p in (ckpt / "commits").iterdir() if p.name.isdigit()), key=lambda p: int(p.name)
    )
    last.unlink()
    (ckpt / "commits" / f".{last.name}.crc").unlink(missing_ok=True)
    q = copy_stream(spark, opts, to, ckpt, cols)
    assert [p["batchId"] for p in q.recentProgress if p["numInputRows"]] == [int(last.name)]
    assert sorted(read_all(url, sink_scope, sink)) == want
    assert sorted(official_read_all(url, sink_scope, sink, len(want))) == want
    # The query's intents stream is in the sink's scope.
    with pv.Client(url) as c:
        assert any(s.startswith(f"{sink}-intents-") for s in c.streams(sink_scope))


# -- the commit protocol, a step at a time -----------------------------------------------------


@pytest.fixture()
def sink(pravega: Any) -> Iterator[tuple[Any, Any, str]]:
    from streamwire.spark.pravega_exactly_once import PravegaExactlyOnce
    from streamwire.spark.pravega_source import PravegaSourceConfig

    url = pravega.controller_url
    scope, stream = fresh(url, 2)
    config = PravegaSourceConfig.from_options(
        {"service_url": url, "scope": scope, "stream": stream}
    )
    # A crashed attempt's open transactions are aborted by the next commit, not waited out:
    # the lease is longer than any of these tests.
    yield config, PravegaExactlyOnce(f"{stream}-intents", lease=60.0), url


def _rows(tag: str, partition: int, n: int = 50) -> list[bytes]:
    return [f"{tag}-p{partition}-{i}".encode() for i in range(n)]


def _attempt(sink: Any, query: str, batch: int, tag: str, parts: int = 3) -> list[Any]:
    """One attempt of a batch: every task writes its rows in an open transaction."""
    import pyarrow as pa
    from streamwire.spark.pravega_exactly_once import write_task

    config, eo, _ = sink
    out = []
    for p in range(parts):
        rows = _rows(tag, p)
        keys = [f"k{i % 5}" for i in range(len(rows))]
        b = pa.RecordBatch.from_arrays(
            [pa.array(rows, pa.binary()), pa.array(keys)], ["value", "routing_key"]
        )
        out.append(write_task(config, eo, [b], query, batch, p, attempt=batch * 100 + p))
    return out


def _handle(sink: Any, commit: Any) -> Any:
    from streamwire.spark.pravega_source import client_for

    config = sink[0]
    return client_for(config.client).transaction(config.scope, config.stream, commit.txn)


def _expected(tag: str, parts: int = 3) -> list[bytes]:
    return sorted(v for p in range(parts) for v in _rows(tag, p))


def _visible(sink: Any) -> list[bytes]:
    config, _, url = sink
    return sorted(read_all(url, config.scope, config.stream))


def test_nothing_is_visible_before_the_driver_commits(sink: Any) -> None:
    from streamwire.spark.pravega_exactly_once import commit_batch

    query = str(uuid.uuid4())
    commits = _attempt(sink, query, 0, "x")
    assert all(_handle(sink, c).status() == "OPEN" for c in commits)
    assert _visible(sink) == []
    assert commit_batch(sink[0], sink[1], commits, 0) == (150, 0)
    assert _visible(sink) == _expected("x")


def test_rerun_after_a_crash_half_way_through_committing(sink: Any) -> None:
    """The driver committed partition 0, then died: partition 1's transaction stays open
    (until its lease runs out) and partition 2's was aborted by its lease already. The re-run
    commits partitions 1 and 2 only, and aborts the crashed attempt's open transaction."""
    from streamwire.spark.pravega_exactly_once import commit_batch

    query = str(uuid.uuid4())
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 0, "b0"), 0) == (150, 0)
    crashed = _attempt(sink, query, 1, "b1")
    _handle(sink, crashed[0]).commit()
    _handle(sink, crashed[2]).abort()
    # Spark runs batch 1 again after the restart: the same rows in the same partitions.
    rerun = _attempt(sink, query, 1, "b1")
    assert commit_batch(sink[0], sink[1], rerun, 1) == (100, 50)
    assert _handle(sink, crashed[1]).status() in ("ABORTING", "ABORTED")
    assert _handle(sink, rerun[0]).status() in ("ABORTING", "ABORTED")
    want = sorted(_expected("b0") + _expected("b1"))
    assert _visible(sink) == want
    config, _, url = sink
    assert sorted(official_read_all(url, config.scope, config.stream, len(want))) == want


def test_rerun_after_a_crash_once_everything_was_committed(sink: Any) -> None:
    """Every transaction committed, but Spark never recorded the batch: all skipped."""
    from streamwire.spark.pravega_exactly_once import commit_batch

    query = str(uuid.uuid4())
    for c in _attempt(sink, query, 7, "c"):
        _handle(sink, c).commit()
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 7, "c"), 7) == (0, 150)
    # The next batch of the query is committed as usual.
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 8, "d"), 8) == (150, 0)
    assert _visible(sink) == sorted(_expected("c") + _expected("d"))


def test_rerun_after_a_crash_before_any_commit(sink: Any) -> None:
    """The tasks wrote, the driver died before committing anything: the crashed attempt's
    transactions are still open; the re-run aborts them and commits its own."""
    from streamwire.spark.pravega_exactly_once import commit_batch

    query = str(uuid.uuid4())
    crashed = _attempt(sink, query, 0, "e")  # left open
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 0, "e"), 0) == (150, 0)
    assert all(_handle(sink, c).status() in ("ABORTING", "ABORTED") for c in crashed)
    assert _visible(sink) == _expected("e")


def test_an_aborted_batch_leaves_nothing(sink: Any) -> None:
    from streamwire.spark.pravega_exactly_once import abort_batch, commit_batch

    query = str(uuid.uuid4())
    abort_batch(sink[0], _attempt(sink, query, 0, "f"))
    assert _visible(sink) == []
    # Spark runs the failed batch again: written once.
    assert commit_batch(sink[0], sink[1], _attempt(sink, query, 0, "f"), 0) == (150, 0)
    assert _visible(sink) == _expected("f")


def test_a_partition_without_rows_begins_no_transaction(sink: Any) -> None:
    from streamwire.spark.pravega_exactly_once import commit_batch, write_task

    query = str(uuid.uuid4())
    empty = write_task(sink[0], sink[1], [], query, 0, 0, attempt=1)
    assert (empty.txn, empty.rows) == (None, 0)
    assert commit_batch(sink[0], sink[1], [empty], 0) == (0, 0)


def test_a_lease_that_ran_out_fails_the_commit_loudly_and_the_rerun_writes_once(
    sink: Any,
) -> None:
    """The task's process died (nothing pings its transaction any more) and the driver came
    after the lease: the commit raises, nothing of that partition is visible, and the batch
    Spark runs again after the failure is written once."""
    from streamwire.spark import pravega_exactly_once as eo_mod

    config, _, url = sink
    short = eo_mod.PravegaExactlyOnce(f"{config.stream}-intents", lease=10.0)
    short_sink = (config, short, url)
    query = str(uuid.uuid4())
    commits = _attempt(short_sink, query, 0, "g", parts=2)
    _handle(sink, commits[0]).commit()  # the driver got as far as partition 0
    eo_mod._handed.clear()  # the tasks' process is gone: its pings stop
    h = _handle(sink, commits[1])
    deadline = time.monotonic() + 60
    while h.status() == "OPEN" and time.monotonic() < deadline:
        time.sleep(0.5)
    with pytest.raises(TransactionTimeoutError):
        eo_mod.commit_batch(config, short, commits, 0)
    assert _visible(sink) == sorted(_rows("g", 0))
    rerun = _attempt(sink, query, 0, "g", parts=2)
    assert eo_mod.commit_batch(config, sink[1], rerun, 0) == (50, 50)
    assert _visible(sink) == _expected("g", parts=2)


def test_an_earlier_attempt_the_controller_forgot_is_not_guessed(sink: Any) -> None:
    """An intent whose transaction the controller no longer knows (it forgets completed ones
    after a day): the commit refuses rather than risk a duplicate or a loss."""
    from streamwire.spark.pravega_exactly_once import commit_batch

    config, eo, url = sink
    query = str(uuid.uuid4())
    commits = _attempt(sink, query, 3, "h")
    with pv.Client(url) as c, c.create_writer(config.scope, eo.intents_stream(query)) as w:
        forgotten = {"query": query, "batch": 3, "partition": 1, "attempt": 0, "txn": "5eed"}
        w.write(json.dumps(forgotten).encode())
    with pytest.raises(InvalidTransactionStateError, match="no longer knows"):
        commit_batch(config, eo, commits, 3)
    assert _visible(sink) == []


def test_the_intents_stream_is_truncated_behind_committed_batches(
    sink: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamwire.spark import pravega_exactly_once as eo_mod

    monkeypatch.setattr(eo_mod, "TRUNCATE_AFTER", 1)
    config, eo, url = sink
    query = str(uuid.uuid4())
    intents = eo.intents_stream(query)
    for b in range(3):
        assert eo_mod.commit_batch(config, eo, _attempt(sink, query, b, f"t{b}"), b) == (150, 0)
    with pv.Client(url) as c:
        head = c.head(config.scope, intents).positions
        assert sum(head.values()) > 0, "the records of batches 0 and 1 were dropped"
        found, _, _ = eo_mod.batch_intents(c, config.scope, intents, 2)
        assert sorted(p for p, _ in found) == [0, 1, 2], "the last batch's records are kept"
    # So a re-run of the last batch is still recognised.
    assert eo_mod.commit_batch(config, eo, _attempt(sink, query, 2, "t2"), 2) == (0, 150)
    assert _visible(sink) == sorted(v for b in range(3) for v in _expected(f"t{b}"))


def test_options_are_checked() -> None:
    from streamwire import ConfigError
    from streamwire.spark.pravega_exactly_once import PravegaExactlyOnce

    assert PravegaExactlyOnce.from_options({}, "s") is None
    eo = PravegaExactlyOnce.from_options({"deliveryGuarantee": "EXACTLY_ONCE"}, "s")
    assert eo == PravegaExactlyOnce("s-intents", 120.0)
    assert eo.intents_stream("q") == "s-intents-q"
    eo = PravegaExactlyOnce.from_options(
        {
            "deliveryGuarantee": "exactly_once",
            "transactionTimeoutMs": "30000",
            "transactionIntentsPrefix": "x.y",
        },
        "s",
    )
    assert eo == PravegaExactlyOnce("x.y", 30.0)
    with pytest.raises(ConfigError, match="deliveryGuarantee"):
        PravegaExactlyOnce.from_options({"deliveryGuarantee": "twice"}, "s")
    for bad in ("0", "abc", "999"):
        with pytest.raises(ConfigError, match="transactionTimeoutMs"):
            PravegaExactlyOnce.from_options(
                {"deliveryGuarantee": "exactly_once", "transactionTimeoutMs": bad}, "s"
            )
    for prefix in ("a/b", "x" * 219, "a b"):
        with pytest.raises(ConfigError, match="transactionIntentsPrefix"):
            PravegaExactlyOnce.from_options(
                {"deliveryGuarantee": "exactly_once", "transactionIntentsPrefix": prefix}, "s"
            )
