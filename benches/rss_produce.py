"""Memory-flat producing: N x 1 KiB through send_async and send_many with memory_limit=64 MiB.

Runs against an embedded pulsar-lite (tests/peers/lite.py). Samples this process's RSS
(/proc/self/status VmRSS) while producing and prints the growth over the warm-up baseline;
the bar is < 100 MB. Usage (from the repository root):

    .venv/bin/python benches/rss_produce.py [--count 5000000] [--mode async|many|both]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import streamwire

from tests.peers.lite import PulsarLite

MB = 1024 * 1024


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class Sampler:
    """RSS every `period` seconds on a background thread."""

    def __init__(self, period: float = 0.5) -> None:
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, args=(period,), daemon=True)
        self._thread.start()

    def _run(self, period: float) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic() - self._t0, rss_bytes()))
            self._stop.wait(period)

    def stop(self) -> list[tuple[float, int]]:
        self._stop.set()
        self._thread.join()
        return self.samples


def report(name: str, n: int, secs: float, base: int, samples: list[tuple[float, int]]) -> int:
    peak = max(r for _, r in samples)
    end = samples[-1][1]
    # Growth after warm-up: the peak over the baseline taken after the first 10% of messages.
    growth = peak - base
    print(
        f"{name}: {n:,} msgs in {secs:.1f}s ({n / secs:,.0f} msg/s); RSS baseline "
        f"{base / MB:.1f} MB, peak {peak / MB:.1f} MB, end {end / MB:.1f} MB, "
        f"growth {growth / MB:.1f} MB"
    )
    step = max(1, len(samples) // 10)
    print("  timeline (s, MB): " + ", ".join(f"{t:.0f}:{r / MB:.0f}" for t, r in samples[::step]))
    return growth


def send_async_growth(p: Any, n: int, size: int) -> tuple[Any, int]:
    """``send_async`` of ``n`` ``size``-byte messages: a tenth to warm up, then the rest
    timed with RSS sampled, and the report. (a late future to wait on, the RSS growth)"""
    payload = b"x" * size
    warm = max(1, n // 10)
    for _ in range(warm):
        p.send_async(payload)
    p.flush()
    base = rss_bytes()
    sampler = Sampler()
    t0 = time.monotonic()
    last = None
    for i in range(n - warm):
        f = p.send_async(payload)
        if i % 100_000 == 0:
            last = f
    p.flush()
    secs = time.monotonic() - t0
    return last, report("send_async", n, secs, base, sampler.stop())


def send_many_growth(
    p: Any, n: int, size: int, finish: Callable[[], object] = lambda: None
) -> tuple[int, int]:
    """``send_many`` of 10,000-message chunks of ``size`` bytes: a tenth of ``n`` to warm up,
    then the rest timed (``finish()`` before the clock stops) with RSS sampled, and the
    report. (messages sent, the RSS growth)"""
    chunk = [b"x" * size] * 10_000
    warm = max(1, n // 10 // len(chunk))
    for _ in range(warm):
        p.send_many(chunk)
    base = rss_bytes()
    sampler = Sampler()
    t0 = time.monotonic()
    sent = warm * len(chunk)
    while sent < n:
        p.send_many(chunk)
        sent += len(chunk)
    finish()
    secs = time.monotonic() - t0
    return sent, report("send_many", sent, secs, base, sampler.stop())


def run_async(client: streamwire.Client, n: int) -> int:
    topic = f"persistent://public/default/rss-async-{uuid.uuid4().hex[:8]}"
    p = client.create_producer(topic, batching_max_delay=0.005, max_pending_messages=50_000)
    last, growth = send_async_growth(p, n, 1024)
    if last is not None:
        last.result(60)
    assert p.stats()["sent"] == n, p.stats()
    p.close()
    return growth


def run_many(client: streamwire.Client, n: int) -> int:
    topic = f"persistent://public/default/rss-many-{uuid.uuid4().hex[:8]}"
    p = client.create_producer(topic, batching_max_delay=0.005, max_pending_messages=50_000)
    sent, growth = send_many_growth(p, n, 1024, p.flush)
    assert p.stats()["sent"] == sent, p.stats()
    p.close()
    return growth


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=5_000_000)
    ap.add_argument("--mode", choices=["async", "many", "both"], default="both")
    ap.add_argument("--limit-mb", type=int, default=100)
    args = ap.parse_args()
    broker = PulsarLite(log_level="warn")
    broker.start()
    worst = 0
    try:
        with streamwire.Client(broker.service_url, memory_limit=64 * MB) as client:
            start = rss_bytes()
            if args.mode in ("async", "both"):
                worst = max(worst, run_async(client, args.count))
            if args.mode in ("many", "both"):
                worst = max(worst, run_many(client, args.count))
            total = rss_bytes() - start
            print(f"whole run: RSS {start / MB:.1f} MB -> {(start + total) / MB:.1f} MB")
            worst = max(worst, total)
    finally:
        broker.close()
    ok = worst < args.limit_mb * MB
    print(f"{'PASS' if ok else 'FAIL'}: worst growth {worst / MB:.1f} MB (bar {args.limit_mb} MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
