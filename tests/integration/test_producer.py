"""The producer against real brokers; the official client checks what arrived.

Tests on ``broker`` run against pulsar-lite and Apache Pulsar; ``apache_broker`` tests need broker
features pulsar-lite lacks (partitioned topics via admin, unload, deduplication, access modes,
delayed delivery).
"""

from __future__ import annotations

import datetime
import pickle
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from types import ModuleType
from typing import Any, Callable, Optional

import pytest
import streamwire
from streamwire import (
    AlreadyClosedError,
    ConfigError,
    MessageTooBigError,
    OperationTimeoutError,
    ProducerBusyError,
    ProducerFencedError,
    ProducerQueueFullError,
)

from tests.interop._official_read import (
    Got,
    drain,
    java_partition,
    java_string_hash,
    official_client,
    official_subscribe,
    read_all,
    sequence_ids,
)
from tests.peers.admin import PulsarAdmin

CODECS = [None, "lz4", "zlib", "zstd", "snappy"]


@pytest.fixture
def client(broker: Any) -> Iterator[streamwire.Client]:
    with streamwire.Client(broker.service_url) as c:
        yield c


def entries(got: list[Got]) -> dict[tuple[int, int], list[Got]]:
    """Messages grouped by the entry (ledger, entry) they were stored in, in order."""
    out: dict[tuple[int, int], list[Got]] = {}
    for g in got:
        out.setdefault((g.ledger_id, g.entry_id), []).append(g)
    return out


# -- receipts ------------------------------------------------------------------------------------


def test_java_string_hash_helper() -> None:
    # Known values of Java's String.hashCode (checked against a JVM).
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648
    assert java_string_hash("\U0001f600") == 1772899  # a surrogate pair: two UTF-16 units
    assert java_partition("polygenelubricants", 7) == 0


def test_message_id_compares_hashes_and_pickles_by_position() -> None:
    """Equality, order and hash are by position (ledger, entry, partition, batch index);
    another type compares unequal and cannot be ordered against it."""
    mid = streamwire.MessageId
    a, b, c = mid(1, 2), mid(1, 3), mid(1, 2, -1, 0, 2)
    assert a == mid(1, 2) and a != b and a != c
    assert a != "x" and not (a == 5)
    assert a < c < b and b > a and a <= mid(1, 2) and b >= c
    assert sorted([b, c, a]) == [a, c, b]
    assert hash(a) == hash(mid(1, 2)) and len({a, b, c, mid(1, 2)}) == 3
    with pytest.raises(TypeError):
        assert a < "x"  # type: ignore[operator]
    assert pickle.loads(pickle.dumps(c)) == c
    assert mid.earliest < a < mid.latest


def test_send_receipt_and_message_id(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic, producer_name="receipts", batching=False)
    assert p.topic == unique_topic
    assert p.name == "receipts"
    assert p.num_partitions == 1
    assert p.last_sequence_id == -1
    ids = [p.send(f"m{i}".encode()) for i in range(5)]
    assert p.last_sequence_id == 4
    assert len(p) == 0
    assert len({i.ledger_id for i in ids}) == 1
    assert [i.entry_id for i in ids] == list(range(ids[0].entry_id, ids[0].entry_id + 5))
    assert all(i.partition == -1 for i in ids)
    assert all(i.batch_index == -1 for i in ids), ids  # not batched
    assert ids == sorted(ids)
    for i in ids:
        assert streamwire.MessageId.deserialize(i.serialize()) == i
    st = p.stats()
    assert st["sent"] == 5 and st["failed"] == 0 and st["entries"] == 5 and st["pending"] == 0
    assert st["bytes"] >= 10
    assert 0 < st["latency_ms_p50"] <= st["latency_ms_max"]
    got = read_all(official_pulsar, broker.service_url, unique_topic, 5)
    assert [g.data for g in got] == [f"m{i}".encode() for i in range(5)]
    assert [(g.ledger_id, g.entry_id) for g in got] == [(i.ledger_id, i.entry_id) for i in ids]
    # The official client parses our serialized id and vice versa.
    off = official_pulsar.MessageId.deserialize(ids[2].serialize())
    assert (off.ledger_id(), off.entry_id()) == (ids[2].ledger_id, ids[2].entry_id)
    p.close()


def test_metadata_seen_by_official(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic, producer_name="meta-prod", batching=True)
    futs = []
    for i in range(6):
        futs.append(
            p.send_async(
                bytearray(b"v%d" % i) if i % 2 else memoryview(b"v%d" % i),
                key=f"k-{i}" if i != 3 else None,
                properties={"i": str(i), "ü": "ω"} if i % 3 else None,
                event_time=1_700_000_000_000 + i if i != 4 else None,
            )
        )
    p.send("text-ü")  # str is sent as UTF-8
    for f in futs:
        f.result(10)
    got = read_all(official_pulsar, broker.service_url, unique_topic, 7)
    assert len(got) == 7
    for i, g in enumerate(got[:6]):
        assert g.data == b"v%d" % i
        assert g.key == (f"k-{i}" if i != 3 else None)
        assert g.properties == ({"i": str(i), "ü": "ω"} if i % 3 else {})
        assert g.event_time == (1_700_000_000_000 + i if i != 4 else 0)
        assert g.producer_name == "meta-prod"
    assert got[6].data == "text-ü".encode()
    seqs = sequence_ids(broker.service_url, unique_topic, 7)
    assert [s for _, s in seqs] == list(range(7))
    p.close()


def test_explicit_and_initial_sequence_ids(
    broker: Any, client: streamwire.Client, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic, initial_sequence_id=99, batching=False)
    assert p.last_sequence_id == 99
    p.send(b"a")  # 100
    p.send(b"b", sequence_id=500)
    p.send(b"c")  # continues after the explicit one
    assert p.last_sequence_id >= 500
    p.close()
    seqs = sequence_ids(broker.service_url, unique_topic, 3)
    assert seqs[0] == (b"a", 100)
    assert seqs[1] == (b"b", 500)
    assert seqs[2][0] == b"c" and seqs[2][1] == 501


def test_generated_producer_name(broker: Any, client: streamwire.Client, unique_topic: str) -> None:
    p = client.create_producer(unique_topic)
    assert isinstance(p.name, str) and p.name  # the broker assigned one
    p.close()


# -- batching ------------------------------------------------------------------------------------


def test_batching_by_count(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(
        unique_topic, batching_max_messages=10, batching_max_bytes=1 << 20, batching_max_delay=30
    )
    t0 = time.monotonic()
    futs = [p.send_async(b"c%d" % i) for i in range(30)]
    ids = [f.result(10) for f in futs]
    assert time.monotonic() - t0 < 5, "full batches must go out without waiting for the delay"
    for n, mid in enumerate(ids):
        assert mid.batch_index == n % 10 and mid.batch_size == 10, mid
    got = read_all(official_pulsar, broker.service_url, unique_topic, 30)
    groups = list(entries(got).values())
    assert [len(g) for g in groups] == [10, 10, 10]
    for g in groups:
        assert [m.batch_index for m in g] == list(range(10))
    assert [g.data for g in got] == [b"c%d" % i for i in range(30)]
    assert p.stats()["entries"] == 3
    p.close()


def test_blocking_send_does_not_wait_for_the_batching_delay(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    # As the Java client's blocking send: the caller waits on this receipt, so the open batch
    # (with what send_async queued before it) goes out at once, not after the 30 s delay.
    p = client.create_producer(unique_topic, batching_max_delay=30)
    earlier = p.send_async(b"rides along")
    t0 = time.monotonic()
    mid = p.send(b"waited for")
    assert time.monotonic() - t0 < 5
    first = earlier.result(1)
    assert (first.batch_index, mid.batch_index) == (0, 1) and mid.batch_size == 2
    got = read_all(official_pulsar, broker.service_url, unique_topic, 2)
    assert [g.data for g in got] == [b"rides along", b"waited for"]
    p.close()


def test_send_many_does_not_wait_for_the_batching_delay(
    broker: Any, client: streamwire.Client, unique_topic: str
) -> None:
    # send_many waits for every receipt, so its last, partial batch goes out at once rather
    # than after the 30 s delay; the full batches before it keep their shape.
    p = client.create_producer(unique_topic, batching_max_messages=10, batching_max_delay=30)
    t0 = time.monotonic()
    ids = p.send_many([b"m%d" % i for i in range(25)])
    assert time.monotonic() - t0 < 5
    assert [i.batch_size for i in ids] == [10] * 20 + [5] * 5
    assert [i.batch_index for i in ids] == list(range(10)) * 2 + list(range(5))
    p.close()


def test_batching_by_bytes(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(
        unique_topic, batching_max_messages=1000, batching_max_bytes=1000, batching_max_delay=30
    )
    payloads = [bytes([65 + i]) * 300 for i in range(10)]
    futs = [p.send_async(v) for v in payloads]
    time.sleep(0.3)
    # Three 300-byte messages (plus per-message metadata) fit in 1000 bytes, a fourth does not:
    # batches of three have gone out; the last one waits for the delay or a flush.
    assert sum(f.done() for f in futs) == 9
    p.flush()
    assert all(f.done() for f in futs)
    got = read_all(official_pulsar, broker.service_url, unique_topic, 10)
    assert [len(g) for g in entries(got).values()] == [3, 3, 3, 1]
    assert [g.data for g in got] == payloads
    # A message larger than the batch limit still goes, alone.
    p.send(b"x" * 5000)
    got2 = read_all(official_pulsar, broker.service_url, unique_topic, 11, sub="again")
    assert got2[-1].data == b"x" * 5000
    p.close()


def test_batching_by_delay(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(
        unique_topic, batching_max_messages=1000, batching_max_bytes=1 << 20, batching_max_delay=0.5
    )
    t0 = time.monotonic()
    futs = [p.send_async(b"d%d" % i) for i in range(7)]
    assert not futs[0].done()
    assert len(p) == 7
    ids = [f.result(10) for f in futs]
    elapsed = time.monotonic() - t0
    assert 0.4 <= elapsed < 3.0, elapsed
    assert len({(i.ledger_id, i.entry_id) for i in ids}) == 1
    assert [i.batch_index for i in ids] == list(range(7))
    got = read_all(official_pulsar, broker.service_url, unique_topic, 7)
    assert len(entries(got)) == 1
    assert [g.batch_index for g in got] == list(range(7))
    p.close()


@pytest.mark.parametrize("compression", CODECS, ids=[str(c) for c in CODECS])
def test_compression_codecs(
    broker: Any,
    client: streamwire.Client,
    official_pulsar: ModuleType,
    unique_topic: str,
    compression: Optional[str],
) -> None:
    p = client.create_producer(unique_topic, compression=compression, batching_max_delay=0.05)
    # Compressible and incompressible payloads, empty and largish.
    import random

    rnd = random.Random(7)
    payloads = [b"", b"a" * 50_000, bytes(rnd.getrandbits(8) for _ in range(3000))]
    payloads += [(b"row %d " % i) * (i + 1) for i in range(40)]
    ids = p.send_many(payloads)
    p.send(b"z" * 200_000)  # non-batched sized large message through the codec
    single = client.create_producer(unique_topic, compression=compression, batching=False)
    single.send(b"")  # an empty unbatched payload (the official consumer drops empty zlib)
    single.send(b"q" * 1000)
    single.close()
    got = read_all(official_pulsar, broker.service_url, unique_topic, len(payloads) + 3)
    assert [g.data for g in got] == [*payloads, b"z" * 200_000, b"", b"q" * 1000]
    assert len(ids) == len(payloads)
    if compression is not None:
        assert p.stats()["bytes"] > 0
    p.close()


# -- async ---------------------------------------------------------------------------------------


def test_send_async_futures_and_callbacks(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic)
    seen: list[tuple[Any, Any, str]] = []
    done = threading.Event()
    lock = threading.Lock()

    def cb(err: Any, mid: Any) -> None:
        with lock:
            seen.append((err, mid, threading.current_thread().name))
            if len(seen) == 50:
                done.set()

    futs = [p.send_async(b"a%d" % i, cb) for i in range(50)]
    futs.append(p.send_async(b"no-callback"))
    ids = [f.result(10) for f in futs]
    assert all(f.done() for f in futs)
    assert all(f.exception() is None for f in futs)
    assert done.wait(10)
    assert all(err is None for err, _, _ in seen)
    assert sorted(mid for _, mid, _ in seen) == sorted(ids[:50])
    main = threading.current_thread().name
    assert all(name != main for _, _, name in seen)
    assert "SendFuture" in repr(futs[0]) and "done=True" in repr(futs[0])
    p.flush()
    got = read_all(official_pulsar, broker.service_url, unique_topic, 51)
    assert [g.data for g in got] == [b"a%d" % i for i in range(50)] + [b"no-callback"]
    with pytest.raises(TypeError):
        p.send_async(b"x", "not callable")  # type: ignore[arg-type]
    p.close()


def test_callback_exception_reraised_at_flush(
    client: streamwire.Client, unique_topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_value))

    class Boom(Exception):
        pass

    def bad(err: Any, mid: Any) -> None:
        raise Boom("from callback")

    p = client.create_producer(unique_topic)
    f = p.send_async(b"x", bad)
    f.result(10)
    with pytest.raises(Boom, match="from callback"):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the callback runs on the dispatcher thread
            p.flush()
            time.sleep(0.05)
    assert any(isinstance(e, Boom) for e in unraisable)
    p.flush()  # reported once
    f2 = p.send_async(b"y", bad)
    f2.result(10)
    time.sleep(0.5)
    with pytest.raises(Boom):
        p.close()
    with pytest.raises(AlreadyClosedError):
        p.send(b"z")


# -- send_many -----------------------------------------------------------------------------------


def test_send_many_lists(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic, batching_max_messages=16)
    n = 100
    values: list[Any] = [b"v%d" % i for i in range(n)]
    values[5] = None  # a null value
    values[6] = bytearray(b"ba")
    values[7] = memoryview(b"mv")
    keys = [f"k{i % 3}" if i % 4 else None for i in range(n)]
    props = [{"n": str(i)} for i in range(n)]
    events = [1_600_000_000_000 + i if i % 2 else None for i in range(n)]
    ids = p.send_many(values, keys=keys, properties=props, event_times=events)
    assert len(ids) == n and ids == sorted(ids)
    assert len(set(ids)) == n
    ids2 = p.send_many([b"same-props"] * 3, properties={"all": "1"})
    assert len(ids2) == 3
    assert p.send_many([]) == []
    got = read_all(official_pulsar, broker.service_url, unique_topic, n + 3)
    assert len(got) == n + 3
    for i, g in enumerate(got[:n]):
        exp = {5: b"", 6: b"ba", 7: b"mv"}.get(i, b"v%d" % i)
        assert g.data == exp, i
        assert g.null_value == (i == 5), i
        assert g.key == keys[i], i
        assert g.properties == props[i]
        assert g.event_time == (events[i] or 0)
    assert all(g.properties == {"all": "1"} for g in got[n:])
    with pytest.raises(ValueError):
        p.send_many([b"a", b"b"], keys=["only-one"])
    with pytest.raises(TypeError):
        p.send_many([b"a", 5])
    p.close()


def test_send_many_arrow(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    p = client.create_producer(unique_topic)
    binary = pa.array([b"b0", None, b"", b"b3"], type=pa.binary())
    large = pa.array([b"L0", b"L1"], type=pa.large_binary())
    strings = pa.array(["s0", "ü1", None], type=pa.string())
    keys = pa.array(["k0", None, "k2", "k3"], type=pa.string())
    ts = pa.array([1_600_000_000_000_000, None, 1_600_000_000_001_000, 0], type=pa.timestamp("us"))
    ts_s = pa.array([1_600_000_000, 1_600_000_001], type=pa.timestamp("s"))
    ids = p.send_many(binary, keys=keys, event_times=ts)
    ids += p.send_many(large, event_times=ts_s)
    ids += p.send_many(strings, properties=[{"a": "1"}, {}, {"c": "3"}])
    ids += p.send_many(binary.slice(1, 2))  # an offset slice
    assert len(ids) == 11
    got = read_all(official_pulsar, broker.service_url, unique_topic, 11)
    assert [g.data for g in got] == [
        b"b0",
        b"",
        b"",
        b"b3",
        b"L0",
        b"L1",
        b"s0",
        "ü1".encode(),
        b"",
        b"",
        b"",
    ]
    assert [g.null_value for g in got] == [
        False,
        True,
        False,
        False,
        False,
        False,
        False,
        False,
        True,
        True,
        False,
    ]
    assert [g.key for g in got[:4]] == ["k0", None, "k2", "k3"]
    assert [g.event_time for g in got[:6]] == [
        1_600_000_000_000,
        0,
        1_600_000_000_001,
        0,
        1_600_000_000_000,
        1_600_000_001_000,
    ]
    assert [g.properties for g in got[6:9]] == [{"a": "1"}, {}, {"c": "3"}]
    with pytest.raises(TypeError):
        p.send_many(pa.array([1, 2], type=pa.int64()))
    p.close()


# -- flow control and timeouts -------------------------------------------------------------------


def test_queue_full_raises_when_not_blocking(
    broker: Any, fault_proxy: Callable[..., Any], unique_topic: str
) -> None:
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url, operation_timeout=5) as c:
        p = c.create_producer(
            unique_topic,
            batching=False,
            max_pending_messages=5,
            block_if_queue_full=False,
            send_timeout=3.0,
        )
        p.send(b"warm")
        proxy.stall(True)
        futs = [p.send_async(b"q%d" % i) for i in range(5)]
        assert len(p) == 5
        t0 = time.monotonic()
        calls: list[object] = []
        with pytest.raises(ProducerQueueFullError) as ei:
            p.send_async(b"one too many", lambda e, i: calls.append(e))
        with pytest.raises(BufferError):
            p.send(b"also too many")
        with pytest.raises(ProducerQueueFullError):
            p.send_many([b"a"])
        assert time.monotonic() - t0 < 0.5
        assert isinstance(ei.value, BufferError)
        proxy.stall(False)
        for f in futs:
            f.result(15)
        assert len(p) == 0
        p.send(b"room again")
        p.close()
        # The refused send was reported once: raised, its callback never called.
        assert calls == []


def test_queue_full_blocks_when_blocking(
    broker: Any, fault_proxy: Callable[..., Any], official_pulsar: ModuleType, unique_topic: str
) -> None:
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url, operation_timeout=5) as c:
        p = c.create_producer(
            unique_topic, batching=False, max_pending_messages=3, block_if_queue_full=True
        )
        p.send(b"warm")
        proxy.stall(True)
        futs = [p.send_async(b"q%d" % i) for i in range(3)]
        result: dict[str, Any] = {}

        def blocked_send() -> None:
            t0 = time.monotonic()
            result["fut"] = p.send_async(b"q3")
            result["waited"] = time.monotonic() - t0

        t = threading.Thread(target=blocked_send)
        t.start()
        t.join(0.8)
        assert t.is_alive(), "send_async must wait for room"
        proxy.stall(False)
        t.join(15)
        assert not t.is_alive()
        assert result["waited"] >= 0.7
        result["fut"].result(15)
        for f in futs:
            f.result(15)
        p.close()
    got = read_all(official_pulsar, broker.service_url, unique_topic, 5)
    assert [g.data for g in got] == [b"warm", b"q0", b"q1", b"q2", b"q3"]


def test_send_timeout(broker: Any, fault_proxy: Callable[..., Any], unique_topic: str) -> None:
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url, operation_timeout=5) as c:
        p = c.create_producer(unique_topic, send_timeout=1.0, batching_max_delay=0.01)
        p.send(b"warm")
        proxy.stall(True)
        errors: list[Any] = []
        cb_done = threading.Event()

        def cb(err: Any, mid: Any) -> None:
            errors.append((err, mid))
            cb_done.set()

        fut = p.send_async(b"late-async", cb)
        t0 = time.monotonic()
        with pytest.raises(OperationTimeoutError) as ei:
            p.send(b"late")
        elapsed = time.monotonic() - t0
        assert 0.8 <= elapsed <= 4.0, elapsed
        assert isinstance(ei.value, TimeoutError)
        assert isinstance(fut.exception(5), OperationTimeoutError)
        with pytest.raises(OperationTimeoutError):
            fut.result(1)
        assert cb_done.wait(5)
        assert isinstance(errors[0][0], OperationTimeoutError) and errors[0][1] is None
        assert p.stats()["failed"] >= 2
        proxy.stall(False)
        # The producer recovers: later sends work.
        p.send(b"after")
        p.close()


def test_future_result_timeout_while_pending(
    broker: Any, client: streamwire.Client, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic, batching_max_delay=2.0)
    f = p.send_async(b"slow")
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        f.result(timeout=0.2)
    with pytest.raises(TimeoutError):
        f.exception(timeout=0.2)
    assert time.monotonic() - t0 < 1.5
    assert not f.done()
    p.flush()
    assert f.done() and f.exception() is None
    p.close()


# -- close / flush / errors ----------------------------------------------------------------------


def test_close_flushes_and_later_use_fails(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic, batching_max_delay=60, batching_max_messages=10_000)
    futs = [p.send_async(b"c%d" % i) for i in range(25)]
    assert len(p) == 25
    p.close()
    assert all(f.done() and f.exception() is None for f in futs)
    p.close()  # idempotent
    for call in (
        lambda: p.send(b"x"),
        lambda: p.send_async(b"x"),
        lambda: p.send_many([b"x"]),
        p.flush,
    ):
        with pytest.raises(AlreadyClosedError):
            call()
    got = read_all(official_pulsar, broker.service_url, unique_topic, 25)
    assert [g.data for g in got] == [b"c%d" % i for i in range(25)]
    # Context manager closes (and flushes).
    with client.create_producer(unique_topic, batching_max_delay=60) as p2:
        f = p2.send_async(b"ctx")
    assert f.done() and f.exception() is None
    with pytest.raises(AlreadyClosedError):
        p2.send(b"x")


def test_flush_waits_for_everything(
    broker: Any, client: streamwire.Client, unique_topic: str
) -> None:
    p = client.create_producer(unique_topic, batching_max_delay=60)
    futs = [p.send_async(b"%d" % i) for i in range(500)]
    p.flush()
    assert all(f.done() for f in futs)
    assert len(p) == 0 and p.stats()["pending"] == 0 and p.stats()["sent"] == 500
    p.flush()  # nothing pending: returns at once
    p.close()


def test_wrong_types(client: streamwire.Client, unique_topic: str) -> None:
    p = client.create_producer(unique_topic)
    for bad in (123, None, 1.5, [b"a"], {"a": 1}, object()):
        with pytest.raises(TypeError):
            p.send(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        p.send(b"x", key=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        p.send(b"x", properties={"a": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        p.send(b"x", event_time="now")  # type: ignore[arg-type]
    with pytest.raises((TypeError, OverflowError, ValueError)):
        p.send(b"x", event_time=-1)
    with pytest.raises(ValueError):
        p.send(b"x", sequence_id=-5)
    with pytest.raises(ValueError):
        p.send(b"x", deliver_after=1.0, deliver_at=123)
    with pytest.raises(TypeError):
        p.send_many(b"not a list of values")
    with pytest.raises(TypeError):
        pickle.dumps(p)
    assert p.stats()["sent"] == 0, "nothing was sent by a rejected call"
    p.close()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"compression": "gzip"},
        {"access_mode": "exclusive-ish"},
        {"routing": "random"},
        {"batching_max_messages": 0},
        {"batching_max_bytes": 0},
        {"batching_max_delay": -1.0},
        {"max_pending_messages": 0},
        {"send_timeout": -1.0},
        {"send_timeout": float("nan")},
        {"producer_name": ""},
    ],
    ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items()),
)
def test_bad_options(client: streamwire.Client, unique_topic: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        client.create_producer(unique_topic, **kwargs)


def test_bad_topic(client: streamwire.Client) -> None:
    with pytest.raises(ValueError):
        client.create_producer("not a topic://x/y/z/w")


def test_message_too_big_apache(apache_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(apache_broker.service_url) as c:
        for batching in (False, True):
            p = c.create_producer(unique_topic, batching=batching)
            with pytest.raises(MessageTooBigError) as ei:
                p.send(b"x" * (5 * 1024 * 1024 + 1))
            assert isinstance(ei.value, ValueError)
            with pytest.raises(MessageTooBigError):
                p.send_async(b"x" * (6 * 1024 * 1024))
            with pytest.raises(MessageTooBigError):
                p.send_many([b"ok", b"x" * (6 * 1024 * 1024)])
            # Just under the limit (leaving room for metadata) works, and the producer lives on.
            p.send(b"y" * (5 * 1024 * 1024 - 64 * 1024))
            p.send(b"small")
            p.close()


def test_message_too_big_lite(lite_broker: Any, unique_topic: str) -> None:
    # pulsar-lite does not advertise a max message size: the client falls back to Pulsar's
    # default of 5 MiB and refuses larger messages before sending them.
    with streamwire.Client(lite_broker.service_url) as c:
        p = c.create_producer(unique_topic)
        with pytest.raises(MessageTooBigError):
            p.send(b"x" * (5 * 1024 * 1024 + 1))
        p.send(b"y" * (4 * 1024 * 1024))
        p.close()


# -- Apache-only ---------------------------------------------------------------------------------


def test_partitioned_key_routing_matches_java(
    apache_broker: Any, apache_admin: PulsarAdmin, official_pulsar: ModuleType, unique_topic: str
) -> None:
    n_parts = 5
    apache_admin.create_partitioned_topic(unique_topic, n_parts)
    keys = [f"user-{i}" for i in range(60)] + ["", "ü-ß", "\U0001f600key", "polygenelubricants"]
    with streamwire.Client(apache_broker.service_url) as c:
        for routing in ("round_robin", "key_hash"):
            p = c.create_producer(unique_topic, routing=routing, producer_name=f"part-{routing}")
            assert p.num_partitions == n_parts
            ids = [p.send_async(f"{routing}|{k}".encode(), key=k) for k in keys]
            mids = [f.result(20) for f in ids]
            for k, mid in zip(keys, mids):
                assert mid.partition == java_partition(k, n_parts), (k, mid)
            # send_many routes the same way.
            many = p.send_many([f"many|{k}".encode() for k in keys], keys=keys)
            assert [m.partition for m in many] == [java_partition(k, n_parts) for k in keys]
            p.close()
        # Without keys, round-robin spreads over partitions.
        p = c.create_producer(unique_topic, batching=False)
        spread = {p.send(b"nokey").partition for _ in range(20)}
        assert len(spread) > 1
        p.close()
    total = 4 * len(keys) + 20
    got = read_all(official_pulsar, apache_broker.service_url, unique_topic, total)
    assert len(got) == total
    for g in got:
        if g.data == b"nokey":
            continue
        k = g.data.decode().split("|", 1)[1]
        assert (g.key or "") == k  # the official client reports an empty key as ""
        want = java_partition(k, n_parts)
        assert g.topic.endswith(f"-partition-{want}"), (k, g.topic)


def test_partitions_share_one_producer_name(
    apache_broker: Any, apache_admin: PulsarAdmin, official_pulsar: ModuleType, unique_topic: str
) -> None:
    # Java's PartitionedProducerImpl: partition 0's name (given or broker-assigned) for all.
    apache_admin.create_partitioned_topic(unique_topic, 3)
    with streamwire.Client(apache_broker.service_url) as c:
        named = c.create_producer(unique_topic, producer_name="one-name", batching=False)
        unnamed = c.create_producer(unique_topic, batching=False)
        for p in (named, unnamed):
            assert {p.send(b"x", key=f"k{i}").partition for i in range(30)} == {0, 1, 2}
        names = {named.name, unnamed.name}
        named.close()
        unnamed.close()
    got = read_all(official_pulsar, apache_broker.service_url, unique_topic, 60)
    assert names == {"one-name", next(n for n in names if n != "one-name")}
    for name in names:
        parts = {g.partition for g in got if g.producer_name == name}
        assert parts == {0, 1, 2}, (name, parts)
    assert {g.producer_name for g in got} == names


def test_lone_message_in_a_batch_goes_unbatched(
    broker: Any, client: streamwire.Client, official_pulsar: ModuleType, unique_topic: str
) -> None:
    # Java's BatchMessageContainerImpl sends a batch of one as a plain message.
    p = client.create_producer(unique_topic, batching=True, batching_max_delay=0.01)
    lone = p.send(b"alone", key="k", properties={"a": "b"}, event_time=1234)
    assert (lone.batch_index, lone.batch_size) == (-1, 0)
    pair = p.send_many([b"one", b"two"])
    assert [(m.batch_index, m.batch_size) for m in pair] == [(0, 2), (1, 2)]
    p.close()
    got = read_all(official_pulsar, broker.service_url, unique_topic, 3)
    assert [(g.data, g.batch_index) for g in got] == [(b"alone", -1), (b"one", 0), (b"two", 1)]
    assert (got[0].key, got[0].properties, got[0].event_time) == ("k", {"a": "b"}, 1234)
    assert sequence_ids(broker.service_url, unique_topic, 3) == [
        (b"alone", 0),
        (b"one", 1),
        (b"two", 2),
    ]


def test_unload_mid_stream_no_loss(
    apache_broker: Any, apache_admin: PulsarAdmin, official_pulsar: ModuleType, unique_topic: str
) -> None:
    n = 20_000
    with streamwire.Client(apache_broker.service_url) as c:
        p = c.create_producer(unique_topic, producer_name="unloaded")
        futs = []
        for i in range(n):
            futs.append(p.send_async(b"%d" % i))
            if i in (5_000, 12_000):
                apache_admin.unload(unique_topic)
        p.flush()
        failed = [f.exception(30) for f in futs]
        assert [e for e in failed if e is not None] == []
        assert p.stats()["reconnects"] >= 1
        p.close()
    got = read_all(official_pulsar, apache_broker.service_url, unique_topic, n, timeout=60)
    data = [g.data for g in got]
    assert len(data) == n, f"{len(data)} messages, {len(set(data))} distinct"
    assert data == [b"%d" % i for i in range(n)], "in order, no loss, no duplicates"


def test_dedup_across_producer_restart(
    apache_broker: Any, apache_admin: PulsarAdmin, unique_topic: str
) -> None:
    conf = apache_admin.request("GET", "brokers/configuration/runtime")
    assert str(conf.get("brokerDeduplicationEnabled")).lower() == "true"
    with streamwire.Client(apache_broker.service_url) as c:
        p = c.create_producer(unique_topic, producer_name="dedup-me", batching=False)
        for i in range(10):
            p.send(b"m%d" % i)
        assert p.last_sequence_id == 9
        p.close()
        # A restarted producer with the same name learns the last sequence id from the broker.
        p2 = c.create_producer(unique_topic, producer_name="dedup-me", batching=False)
        assert p2.last_sequence_id == 9
        # The application replays 5..9 with their original ids: the broker drops them.
        replayed = [p2.send(b"m%d" % i, sequence_id=i) for i in range(5, 10)]
        # The broker answers a duplicate with id -1:-1 (as the Java client reports it).
        assert [(m.ledger_id, m.entry_id) for m in replayed] == [(-1, -1)] * 5
        for i in range(10, 15):
            p2.send(b"m%d" % i)
        assert p2.last_sequence_id == 14
        p2.close()
        # Batched resends are dropped too.
        p3 = c.create_producer(unique_topic, producer_name="dedup-me")
        assert p3.last_sequence_id == 14
        # Batched: replayed ids must not share a batch with new ones (the broker judges a
        # batch by its first sequence id and would drop 15..17 with it).
        futs = [p3.send_async(b"m%d" % i, sequence_id=i) for i in range(12, 18)]
        ids = [f.result(20) for f in futs]
        assert [m.ledger_id for m in ids[:3]] == [-1, -1, -1]
        assert all(m.ledger_id >= 0 for m in ids[3:]), ids
        p3.close()
    seqs = sequence_ids(apache_broker.service_url, unique_topic, 18)
    time.sleep(0.2)
    assert [d for d, _ in seqs] == [b"m%d" % i for i in range(18)]
    assert [s for _, s in seqs] == list(range(18))


def test_access_modes(apache_broker: Any, unique_topic: str) -> None:
    with streamwire.Client(apache_broker.service_url, operation_timeout=10) as c:
        p1 = c.create_producer(unique_topic, access_mode="exclusive")
        with pytest.raises((ProducerBusyError, ProducerFencedError)) as ei:
            c.create_producer(unique_topic, access_mode="exclusive")
        assert isinstance(ei.value, streamwire.ServerError)
        with pytest.raises((ProducerBusyError, ProducerFencedError)):
            c.create_producer(unique_topic, access_mode="shared")
        p1.send(b"still mine")
        # Same producer name twice on a topic is refused as well.
        p1.close()
        s1 = c.create_producer(unique_topic, producer_name="twin")
        with pytest.raises(ProducerBusyError):
            c.create_producer(unique_topic, producer_name="twin")
        s1.close()
        # Fencing: a new exclusive_with_fencing producer takes over; the old one is fenced.
        f1 = c.create_producer(unique_topic, access_mode="exclusive", batching=False)
        f2 = c.create_producer(unique_topic, access_mode="exclusive_with_fencing", batching=False)
        f2.send(b"fencer")
        with pytest.raises((ProducerFencedError, AlreadyClosedError, ProducerBusyError)):
            f1.send(b"fenced")
        f2.close()
        f1.close()


@pytest.mark.parametrize("given_as", ["numbers", "datetime"])
def test_delayed_delivery(
    apache_broker: Any, official_pulsar: ModuleType, unique_topic: str, given_as: str
) -> None:
    """deliver_after / deliver_at as seconds and epoch milliseconds, or as a
    `datetime.timedelta` and an aware `datetime.datetime`; the official client's consumer
    sees the delay."""
    oc = official_client(official_pulsar, apache_broker.service_url)
    try:
        consumer = official_subscribe(official_pulsar, oc, unique_topic, "delayed", shared=True)
        with streamwire.Client(apache_broker.service_url) as c:
            p = c.create_producer(unique_topic, batching=False)
            t0 = time.monotonic()
            if given_as == "numbers":
                p.send(b"later", deliver_after=2.0)
                p.send(b"at", deliver_at=int(time.time() * 1000) + 1500)
            else:
                p.send(b"later", deliver_after=datetime.timedelta(seconds=2))
                at = datetime.datetime.now(datetime.timezone.utc)
                p.send(b"at", deliver_at=at + datetime.timedelta(milliseconds=1500))
            p.send(b"now")
            first = drain(consumer, 1, timeout=10, extra_wait=0)
            assert [g.data for g in first] == [b"now"]
            assert time.monotonic() - t0 < 1.4
            rest = drain(consumer, 2, timeout=15, extra_wait=0)
            # The broker releases delayed messages on a 1 s tick, in entry order: both may come
            # on the same tick, so their order is not checked.
            assert sorted(g.data for g in rest) == [b"at", b"later"]
            assert time.monotonic() - t0 >= 1.4
            p.close()
        consumer.close()
    finally:
        oc.close()


# -- connection faults ---------------------------------------------------------------------------


def test_connection_cut_during_large_send(
    broker: Any,
    broker_kind: str,
    fault_proxy: Callable[..., Any],
    official_pulsar: ModuleType,
    unique_topic: str,
) -> None:
    n = 100_000
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url) as c:
        p = c.create_producer(unique_topic, producer_name="cut-me", max_pending_messages=5000)
        chunk = 2_000
        cuts = 0
        futs: list[Any] = []
        for start in range(0, n, chunk):
            for i in range(start, start + chunk):
                futs.append(p.send_async(b"%d" % i))
            if start in (20_000, 60_000):
                cuts += proxy.cut_all()
        p.flush()
        errs = [f.exception(60) for f in futs]
        assert [e for e in errs if e is not None][:3] == []
        assert cuts >= 2
        assert p.stats()["reconnects"] >= 2
        assert p.stats()["sent"] == n
        p.close()
    got = read_all(official_pulsar, broker.service_url, unique_topic, n, timeout=90)
    data = [g.data for g in got]
    counts = Counter(data)
    missing = [i for i in range(n) if b"%d" % i not in counts]
    assert missing == [], f"{len(missing)} lost, e.g. {missing[:5]}"
    if broker_kind == "apache":  # deduplication is on: resent messages are dropped
        dups = [d for d, k in counts.items() if k > 1]
        assert dups == [], f"{len(dups)} duplicated"
        assert data == [b"%d" % i for i in range(n)]


def test_client_close_stops_its_producers(broker: Any, unique_topic: str) -> None:
    """``Client.close()`` promises "further use raises AlreadyClosedError": a producer of a
    closed client must not quietly reconnect through the closed client's pool and go on."""
    c = streamwire.Client(broker.service_url)
    p = c.create_producer(unique_topic, batching=False)
    p.send(b"before")
    c.close()
    with pytest.raises(AlreadyClosedError):
        p.send(b"after client close")
