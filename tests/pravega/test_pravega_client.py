"""streamwire.pravega against a real Pravega 0.13.0 standalone: scopes and streams, every way
to write and read, positions resumed with no gap and no duplicate, and events routed by key
to the segment whose key range holds the key's hash."""

from __future__ import annotations

import pickle
import threading
import time

import pyarrow as pa
import pytest
from streamwire import (
    InvalidArgumentError,
    ReadOnlyError,
    StreamwireError,
    TopicNotFoundError,
    pravega,
)

from tests.gather import gather


def read_n(reader: pravega.Reader, n: int, timeout: float = 20.0) -> list[pravega.Event]:
    return gather(lambda left: reader.read_many(left, timeout=1.0), n, timeout)


def test_scopes_and_streams(pv_client: pravega.Client, scope: str) -> None:
    assert pv_client.scope_exists(scope)
    assert not pv_client.create_scope(scope), "a second create says it existed"
    assert pv_client.create_stream(scope, "a", segments=3)
    assert not pv_client.create_stream(scope, "a", segments=3)
    assert pv_client.create_stream(scope, "b", scaling=pravega.Scaling(target_rate=1000))
    assert pv_client.stream_exists(scope, "a")
    assert not pv_client.stream_exists(scope, "nope")
    assert sorted(pv_client.streams(scope)) == ["a", "b"]
    segs = pv_client.segments(scope, "a")
    assert [s.number for s in segs] == [0, 1, 2]
    assert segs[0].low == 0.0 and segs[-1].high == 1.0
    assert all(a.high == pytest.approx(b.low) for a, b in zip(segs, segs[1:]))
    pv_client.seal_stream(scope, "a")
    with pytest.raises(ReadOnlyError):
        pv_client.create_writer(scope, "a")
    assert pv_client.delete_stream(scope, "a")
    assert not pv_client.stream_exists(scope, "a")
    with pytest.raises(TopicNotFoundError):
        pv_client.create_writer(scope, "a")
    with pytest.raises(TopicNotFoundError):
        pv_client.streams("sw-no-such-scope")


def test_every_write_and_read_form(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "s", segments=1)
    with pv_client.create_writer(scope, "s") as w:
        w.write(b"one")
        w.write("two")  # str is UTF-8
        futs = [w.write_async(b"f%d" % i) for i in range(100)]
        assert w.write_many([b"m%d" % i for i in range(1000)]) == 1000
        assert w.write_many(pa.array([b"a1", b"a2"], pa.binary())) == 2
        w.flush()
        assert all(f.done() and f.result() is None for f in futs)
        assert w.pending == 0
    expected = (
        [b"one", b"two"]
        + [b"f%d" % i for i in range(100)]
        + [b"m%d" % i for i in range(1000)]
        + [b"a1", b"a2"]
    )
    with pv_client.create_reader(scope, "s", "head") as r:
        first = r.read(timeout=10)
        assert first is not None and first.value == b"one"
        assert first.stream == f"{scope}/s" and first.segment == 0 and first.offset == 0
        rest = read_n(r, len(expected) - 1)
        assert [e.value for e in rest] == expected[1:]
        offsets = [first.offset] + [e.offset for e in rest]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
        assert r.read(timeout=0.2) is None, "nothing more"
    with pv_client.create_reader(scope, "s", "head") as r:
        batch = r.read_arrow(10_000, timeout=10)
        while batch.num_rows < len(expected):
            more = r.read_arrow(10_000, timeout=5)
            assert more.num_rows > 0
            batch = pa.Table.from_batches([batch, more]).combine_chunks().to_batches()[0]
        assert batch.schema.names == ["value", "stream", "segment", "offset"]
        assert batch.column("value").to_pylist() == expected
        only = r.read_arrow(10, timeout=0.2, columns=["offset"])
        assert only.schema.names == ["offset"] and only.num_rows == 0


def test_write_many_async_pipelines_calls_in_order(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "wma", segments=3)
    keys = [f"k{i % 7}" for i in range(500)]
    with pv_client.create_writer(scope, "wma") as w:
        futs = [
            w.write_many_async([b"%d:%d" % (c, i) for i in range(500)], routing_keys=keys)
            for c in range(20)
        ]
        empty = w.write_many_async([])
        assert empty.done() and empty.result() is None
        w.flush()
        assert all(f.done() and f.result(timeout=1) is None for f in futs)
        assert w.pending == 0
    with pv_client.create_reader(scope, "wma", "head") as r:
        got = read_n(r, 20 * 500)
        assert r.read(timeout=0.2) is None, "nothing more, nothing twice"
    # Per key, the calls' events arrive in the order they were handed over.
    per_key: dict[int, list[tuple[int, int]]] = {}
    for e in got:
        c, i = (int(x) for x in e.value.split(b":"))
        per_key.setdefault(i % 7, []).append((c, i))
    assert sum(len(v) for v in per_key.values()) == 10_000
    assert all(v == sorted(v) for v in per_key.values())


def test_flush_returns_only_once_every_write_many_async_future_is_done(
    pv_client: pravega.Client, scope: str
) -> None:
    """A flush that returns has settled every future made before it, at once: the last
    acknowledgement settles the call's future on the engine thread, not a task that may run
    after the flush returned (found by CI: a future seen not done right after flush)."""
    pv_client.create_stream(scope, "wmaf", segments=2)
    with pv_client.create_writer(scope, "wmaf") as w:
        for round_ in range(60):
            futs = [w.write_many_async([b"%d-%d" % (round_, i) for i in range(50)])]
            futs += [w.write_async(b"single-%d" % round_)]
            w.flush()
            assert all(f.done() for f in futs), f"round {round_}: a future not done after flush"


def test_futures_wake_their_waiters_and_read_many_restores_the_collector(
    pv_client: pravega.Client, scope: str
) -> None:
    import gc

    pv_client.create_stream(scope, "fut", segments=1)
    with pv_client.create_writer(scope, "fut") as w:
        # Waiters blocked in result() before the acknowledgement arrives are woken (the
        # future only signals when someone waits), others see done() once settled.
        futs = [w.write_async(b"w%d" % i) for i in range(2000)]
        results: list[object] = []
        threads = [
            threading.Thread(target=lambda f=f: results.append(f.result(timeout=30)))
            for f in futs[-3:]
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert results == [None, None, None]
        w.flush()
        assert all(f.done() for f in futs)
    with pv_client.create_reader(scope, "fut", "head") as r:
        assert gc.isenabled()
        first = r.read_many(1000, timeout=10)
        assert gc.isenabled(), "the collector is running again after read_many"
        gc.disable()
        try:
            second = r.read_many(1000, timeout=10)
            assert not gc.isenabled(), "a collector the caller disabled stays disabled"
        finally:
            gc.enable()
        got = first + second
        # Events hold only Rust data: the cyclic collector does not track them.
        assert not any(gc.is_tracked(e) for e in got)
        while len(got) < 2000:
            got += r.read_many(2000 - len(got), timeout=10)
    assert [e.value for e in got] == [b"w%d" % i for i in range(2000)]


def test_large_write_many_goes_out_in_pieces_in_order_and_all_or_nothing(
    pv_client: pravega.Client, scope: str
) -> None:
    pv_client.create_stream(scope, "pieces", segments=3)
    n = 30_000  # ~3.5 MB framed: handed to the writer in many pieces while it is framed
    keys = [f"k{i % 11}" for i in range(n)]
    events = [b"%06d" % i + b"p" * 110 for i in range(n)]
    more = [b"A%06d" % i + b"q" * 200 for i in range(7000)]
    with pv_client.create_writer(scope, "pieces") as w:
        assert w.write_many(events, routing_keys=keys) == n
        fut = w.write_many_async(more, routing_keys="one-key")
        # Checked before any piece leaves: a bad argument fails the whole call.
        with pytest.raises(InvalidArgumentError):
            w.write_many([b"ok"] * 5010, routing_keys=["k"] * 5000)
        assert fut.result(timeout=30) is None
        w.flush()
    with pv_client.create_reader(scope, "pieces", "head") as r:
        got = read_n(r, n + len(more), timeout=60)
        assert r.read(timeout=0.5) is None, "nothing more: the refused call wrote nothing"
    values = [e.value for e in got]
    assert sorted(values) == sorted(events + more), "every event once"
    per_key: dict[int, list[int]] = {}
    for v in values:
        if not v.startswith(b"A"):
            i = int(v[:6])
            per_key.setdefault(i % 11, []).append(i)
    assert len(per_key) == 11
    assert all(seq == sorted(seq) for seq in per_key.values()), "per-key order"
    assert [v for v in values if v.startswith(b"A")] == more, "one key: in order"


def test_write_many_with_some_events_unkeyed_routes_them_to_any_segment(
    pv_client: pravega.Client, scope: str
) -> None:
    """`routing_keys` with None beside keys: the keyless events go to a segment of the
    writer's choosing (they failed as "inconsistent key ranges" before), keyed ones by key."""
    pv_client.create_stream(scope, "mixed", segments=3)
    n = 600
    keys = [None if i % 3 == 0 else f"k{i % 7}" for i in range(n)]
    events = [b"%04d" % i for i in range(n)]
    more = [b"x%d" % i for i in range(10)]
    with pv_client.create_writer(scope, "mixed") as w:
        assert w.write_many(events, routing_keys=keys) == n
        w.write_many_async(more, routing_keys=[None, "k1"] * 5).result(timeout=30)
    with pv_client.create_reader(scope, "mixed", "head") as r:
        got = [e.value for e in read_n(r, n + len(more), timeout=30)]
    assert sorted(got) == sorted(events + more), "every event once"
    per_key: dict[int, list[int]] = {}
    for v in got:
        if not v.startswith(b"x") and keys[int(v)] is not None:
            per_key.setdefault(int(v) % 7, []).append(int(v))
    assert all(seq == sorted(seq) for seq in per_key.values()), "per-key order"


def test_position_resumes_without_gap_or_duplicate(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "s", segments=3)
    with pv_client.create_writer(scope, "s") as w:
        w.write_many(
            [b"%05d" % i for i in range(3000)], routing_keys=[f"k{i % 50}" for i in range(3000)]
        )
    seen: list[bytes] = []
    cut: pravega.StreamCut | None = None
    start: str | pravega.StreamCut = "head"
    while len(seen) < 3000:
        with pv_client.create_reader(scope, "s", start) as r:
            got = read_n(r, 700, timeout=10)
            seen += [e.value for e in got]
            cut = r.position()
        cut = pickle.loads(pickle.dumps(cut))
        assert pravega.StreamCut.parse(str(cut)) == cut
        start = cut
    assert sorted(seen) == [b"%05d" % i for i in range(3000)]
    assert cut is not None and set(cut.positions) == {0, 1, 2}
    with pv_client.create_reader(scope, "s", cut) as r:
        assert r.read(timeout=0.5) is None


def test_tail_reads_only_new_events_and_long_polls(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "s", segments=2)
    with pv_client.create_writer(scope, "s") as w:
        w.write_many([b"old"] * 10)
        with pv_client.create_reader(scope, "s", "tail") as r:
            assert r.read(timeout=0.3) is None

            def later() -> None:
                time.sleep(0.5)
                w.write(b"new", routing_key="x")

            t = threading.Thread(target=later)
            t.start()
            started = time.monotonic()
            e = r.read(timeout=10)
            t.join()
            assert e is not None and e.value == b"new"
            assert time.monotonic() - started < 5


def test_keys_land_in_the_segment_owning_their_hash(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "s", segments=4)
    keys = [f"user-{i}" for i in range(200)]
    with pv_client.create_writer(scope, "s") as w:
        w.write_many(
            [k.encode() + b":%d" % n for n in range(5) for k in keys],
            routing_keys=[k for _ in range(5) for k in keys],
        )
        # One event per call (the writer's single-segment path): the same segment per key.
        for k in keys:
            w.write_async(k.encode() + b":5", routing_key=k)
        w.flush()
    with pv_client.create_reader(scope, "s", "head") as r:
        got = read_n(r, 1200)
    assert len(got) == 1200
    by_key: dict[str, set[int]] = {}
    order: dict[str, list[int]] = {}
    for e in got:
        k, n = e.value.decode().split(":")
        by_key.setdefault(k, set()).add(e.segment)
        order.setdefault(k, []).append(int(n))
    assert all(len(s) == 1 for s in by_key.values()), "one segment per key"
    assert len({next(iter(s)) for s in by_key.values()}) == 4, "keys spread over all segments"
    assert all(v == [0, 1, 2, 3, 4, 5] for v in order.values()), "per-key order"


def test_bad_calls_raise_typed_errors(pv_client: pravega.Client, scope: str) -> None:
    pv_client.create_stream(scope, "s")
    w = pv_client.create_writer(scope, "s")
    with pytest.raises(TypeError):
        w.write(b"x", routing_key=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        w.write_many(b"not a list")
    with pytest.raises(StreamwireError):
        w.write_many([b"a", b"b"], routing_keys=["k"])
    w.close()
    with pytest.raises(StreamwireError):
        w.write(b"after close")
    with pytest.raises(StreamwireError):
        pv_client.create_reader(scope, "s", "not-a-cut")
    with pytest.raises(StreamwireError):
        pv_client.create_stream(scope, "bad name!")
    with pytest.raises(TypeError):
        pickle.dumps(pv_client)
