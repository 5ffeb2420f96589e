"""``streamwire perf produce|consume``: load with a live progress line and, at the end, the
rate and a latency histogram (the role ``pulsar-perf`` plays for Java users).

Produce latency is the time from handing a message over to its acknowledgement: a waiter
thread takes sampled acknowledgements in order (they complete in order per producer, so
it is at most one completion late) while the caller keeps sending. Every payload starts
with its send time (8 bytes, nanoseconds since the epoch), so ``perf consume`` measures
end-to-end latency on every protocol, Pravega included, which stores no timestamps.
"""

from __future__ import annotations

import json
import queue
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Optional, TextIO

from streamwire.cli.backends import Backend
from streamwire.cli.histogram import Histogram

_STAMP = struct.Struct(">q")


class Progress:
    """One status line a second on stderr (rewritten in place on a terminal)."""

    def __init__(self, out: TextIO, every: float = 1.0) -> None:
        self.out = out
        self.every = every
        self.start = time.monotonic()
        self.last = self.start
        self.last_count = 0
        self.tty = out.isatty()

    def tick(self, count: int, nbytes: int, extra: str = "") -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        rate = (count - self.last_count) / (now - self.last)
        mb = nbytes / (1 << 20)
        line = (
            f"{now - self.start:7.1f} s  {count:>12,} msgs  {rate:>12,.0f} msg/s  "
            f"{mb:>10,.1f} MiB{extra}"
        )
        self.out.write(("\r" + line) if self.tty else (line + "\n"))
        self.out.flush()
        self.last, self.last_count = now, count

    def done(self) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()


def _payload(size: int) -> Callable[[], bytes]:
    pad = b"x" * max(0, size - 8)

    def make() -> bytes:
        return _STAMP.pack(time.time_ns()) + pad

    return make


def _report(
    what: str,
    count: int,
    nbytes: int,
    seconds: float,
    hist: Histogram,
    as_json: bool,
    out: TextIO,
) -> None:
    rate = count / seconds if seconds > 0 else 0.0
    summary: dict[str, Any] = {
        "what": what,
        "messages": count,
        "seconds": round(seconds, 3),
        "msg_per_s": round(rate, 1),
        "mib_per_s": round(nbytes / (1 << 20) / seconds, 2) if seconds > 0 else 0.0,
        "latency": {k: round(v, 3) for k, v in hist.summary().items()},
    }
    if as_json:
        out.write(json.dumps(summary) + "\n")
        return
    lat = summary["latency"]
    out.write(
        f"{what}: {count:,} messages in {seconds:.2f} s = {rate:,.0f} msg/s, "
        f"{summary['mib_per_s']:,} MiB/s\n"
        f"latency ms: mean {lat['mean_ms']}  p50 {lat['p50_ms']}  p90 {lat['p90_ms']}  "
        f"p99 {lat['p99_ms']}  p99.9 {lat['p99.9_ms']}  max {lat['max_ms']}\n"
    )
    for line in hist.render():
        out.write(line + "\n")


def perf_produce(
    backend: Backend,
    topic: str,
    *,
    size: int,
    count: Optional[int],
    seconds: Optional[float],
    rate: float,
    samples_per_s: int = 20_000,
    as_json: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> Histogram:
    if size < 8:
        raise ValueError("perf payloads carry an 8-byte send time: --size is at least 8")
    sender = backend.sender(topic)
    make = _payload(size)
    hist = Histogram()
    pending: queue.Queue[Optional[tuple[int, Callable[[], object]]]] = queue.Queue(100_000)
    failures: list[BaseException] = []

    def waiter() -> None:
        while (item := pending.get()) is not None:
            t0, wait = item
            try:
                wait()
            except BaseException as e:
                failures.append(e)
                continue
            hist.record((time.perf_counter_ns() - t0) / 1000.0)

    t = threading.Thread(target=waiter, name="streamwire-perf-waiter", daemon=True)
    t.start()
    progress = Progress(err)
    start = time.perf_counter()
    deadline = start + seconds if seconds else None
    sample_every = 1
    sent = 0
    try:
        while (count is None or sent < count) and (
            deadline is None or time.perf_counter() < deadline
        ):
            if rate > 0:
                due = start + sent / rate
                delay = due - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
            t0 = time.perf_counter_ns()
            wait = sender.send(make())
            sent += 1
            if sent % sample_every == 0:
                pending.put((t0, wait))
            if sent % 1024 == 0:
                elapsed = time.perf_counter() - start
                # Sample at most `samples_per_s` acknowledgements a second.
                sample_every = max(1, int(sent / max(elapsed, 1e-6) / samples_per_s))
                progress.tick(sent, sent * size, f"  acked-sampled {hist.count:,}")
        sender.flush()
    finally:
        pending.put(None)
        t.join()
        progress.done()
        sender.close()
    elapsed = time.perf_counter() - start
    if failures:
        raise failures[0]
    _report("produce", sent, sent * size, elapsed, hist, as_json, out)
    return hist


def perf_consume(
    backend: Backend,
    topic: str,
    *,
    start: str,
    subscription: Optional[str],
    subscription_type: str,
    count: Optional[int],
    seconds: Optional[float],
    idle: Optional[float],
    as_json: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> Histogram:
    hist = Histogram()
    progress = Progress(err)
    t_start = time.perf_counter()
    deadline = t_start + seconds if seconds else None
    got = 0
    nbytes = 0
    records = backend.records(topic, start, subscription, subscription_type, idle)
    try:
        for r in records:
            got += 1
            nbytes += len(r.value)
            if len(r.value) >= 8:
                sent_ns = _STAMP.unpack_from(r.value)[0]
                lag = (time.time_ns() - sent_ns) / 1000.0
                if 0 <= lag < 3.6e9:  # a stamp of ours (not some other payload)
                    hist.record(lag)
            r.handled()
            progress.tick(got, nbytes)
            if (count is not None and got >= count) or (
                deadline is not None and time.perf_counter() >= deadline
            ):
                break
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()
        progress.done()
    _report("consume", got, nbytes, time.perf_counter() - t_start, hist, as_json, out)
    return hist
