"""streamwire.pravega under change and faults on the real standalone: a stream split and
merged while our writer writes and our reader reads, and every data connection cut again and
again during writes and reads. Nothing is lost, nothing is duplicated (the segment store
de-duplicates re-sent appends by writer id and event number), per-key order holds."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from streamwire import pravega

from tests.peers.pravega import PravegaStandalone

KEYS = [f"k{i}" for i in range(24)]


def write_numbered(
    w: pravega.Writer, n: int, during: list[tuple[int, object]], pause: float = 0.0
) -> list[pravega.WriteFuture]:
    """Write events ``key:i`` with write_async; call each ``(at, fn)`` when ``i == at``."""
    futures = []
    actions = dict(during)
    for i in range(n):
        if i in actions:
            actions[i]()  # type: ignore[operator]
        k = KEYS[i % len(KEYS)]
        futures.append(w.write_async(f"{k}:{i}".encode(), routing_key=k))
        if pause and i % 200 == 0:
            time.sleep(pause)
    return futures


def check(values: list[bytes], n: int) -> None:
    assert len(values) == n, f"{len(values)} events read for {n} written"
    assert sorted(int(v.split(b":")[1]) for v in values) == list(range(n)), "each exactly once"
    last: dict[bytes, int] = {}
    for v in values:
        k, i = v.split(b":")
        assert last.get(k, -1) < int(i), f"key {k!r} out of order"
        last[k] = int(i)


class Collector(threading.Thread):
    def __init__(self, client: pravega.Client, scope: str, stream: str, n: int) -> None:
        super().__init__(daemon=True)
        self.reader = client.create_reader(scope, stream, "head")
        self.n = n
        self.values: list[bytes] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        deadline = time.monotonic() + 120
        try:
            while len(self.values) < self.n and time.monotonic() < deadline:
                self.values += [e.value for e in self.reader.read_many(1000, timeout=0.5)]
        except BaseException as exc:
            self.error = exc
        finally:
            self.reader.close()


def test_split_and_merge_while_writing_and_reading(
    pv_client: pravega.Client, scope: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="streamwire")
    pv_client.create_stream(scope, "s", segments=2)
    n = 20_000
    reader = Collector(pv_client, scope, "s", n)
    reader.start()

    def split() -> None:
        first = pv_client.segments(scope, "s")[0]
        pv_client.scale_stream(
            scope, "s", [first.segment_id], [(first.low, 0.25), (0.25, first.high)]
        )

    def merge() -> None:
        segs = pv_client.segments(scope, "s")
        pair = [s for s in segs if s.low >= 0.25]
        assert len(pair) == 2
        pv_client.scale_stream(scope, "s", [s.segment_id for s in pair], [(0.25, 1.0)])

    with pv_client.create_writer(scope, "s") as w:
        futures = write_numbered(w, n, [(n // 3, split), (2 * n // 3, merge)], pause=0.002)
        w.flush(timeout=60)
        assert all(f.done() for f in futures)
        for f in futures:
            f.result()
    assert len(pv_client.segments(scope, "s")) == 2
    reader.join(130)
    assert reader.error is None, reader.error
    check(reader.values, n)
    # The writer said what it did, under streamwire.pravega.writer, with the stream named.
    sealed = [r for r in caplog.records if "sealed; looking up its successors" in r.getMessage()]
    assert sealed and sealed[0].name == "streamwire.pravega.writer"
    assert sealed[0].stream == f"{scope}/s"  # type: ignore[attr-defined]


def test_connections_cut_during_writes_and_reads(
    pravega: PravegaStandalone,
    pv_client: pravega.Client,
    scope: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="streamwire")
    assert pravega.proxy is not None
    pv_client.create_stream(scope, "s", segments=3)
    n = 20_000
    stop = threading.Event()
    cuts = []

    def cutter() -> None:
        while not stop.is_set():
            time.sleep(0.3)
            cuts.append(pravega.proxy.cut_all())  # type: ignore[union-attr]

    reader = Collector(pv_client, scope, "s", n)
    reader.start()
    t = threading.Thread(target=cutter, daemon=True)
    t.start()
    try:
        with pv_client.create_writer(scope, "s") as w:
            # ~3 s of writing, so ~10 cuts land in it.
            futures = write_numbered(w, n, [], pause=0.03)
            w.flush(timeout=90)
            cuts_during_writes = sum(cuts)
            failed = [f for f in futures if f.exception(timeout=1) is not None]
            assert not failed, failed[0].exception()
        reader.join(130)
    finally:
        stop.set()
        t.join()
    assert cuts_during_writes >= 5, f"the proxy cut connections {cuts}"
    assert reader.error is None, reader.error
    check(reader.values, n)
    lost = [
        r for r in caplog.records if "lost" in r.getMessage() and "reconnecting" in r.getMessage()
    ]
    assert lost and lost[0].levelno == logging.WARNING
    assert lost[0].name == "streamwire.pravega.writer" and lost[0].segment  # type: ignore[attr-defined]
