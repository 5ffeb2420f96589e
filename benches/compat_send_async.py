"""``send_async`` with a callback: streamwire.compat vs streamwire's own ``send_async`` vs the
official client, in one run against one pulsar-lite.

Each row sends N messages of 100 B to a new topic with ``send_async`` and a callback that
counts the results, and is timed from the first send to the N-th callback. The three
producers are configured alike: batching on, 1 ms publish delay, at most 1000 messages per
batch, a queue of 10,000 that blocks when full. Rows alternate within each round:

- ``native``: ``streamwire.Producer.send_async(value, callback)``, ``callback(exc, id)``;
- ``compat``: ``streamwire.compat`` (``import streamwire.compat as pulsar``), the official
  signature ``send_async(content, callback)``, ``callback(result, msg_id)``;
- ``official``: ``pulsar-client``'s ``send_async`` with the same callback.

Each row reports messages per second and the client process's CPU time per message (all its
threads, ``getrusage``; the broker is another process).

Usage: .venv/bin/python benches/compat_send_async.py [N] [--rounds R]   (defaults 200000, 3)
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar
import streamwire
import streamwire.compat

PAYLOAD = b"x" * 100


class Count:
    """The callbacks' work: count, and signal the N-th."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls = 0
        self.failed = 0
        self.done = threading.Event()

    def hit(self, ok: bool) -> None:
        self.calls += 1
        if not ok:
            self.failed += 1
        if self.calls == self.n:
            self.done.set()


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(n: int, send_all: Callable[[Count], None]) -> tuple[float, float]:
    """(messages per second, CPU microseconds per message) of one row."""
    count = Count(n)
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    send_all(count)
    if not count.done.wait(120):
        raise RuntimeError(f"only {count.calls} of {n} callbacks came")
    elapsed, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    if count.failed:
        raise RuntimeError(f"{count.failed} sends failed")
    return n / elapsed, cpu / n * 1e6


def native(url: str, n: int) -> tuple[float, float]:
    with streamwire.Client(url) as client:
        producer = client.create_producer(
            f"bench-native-{uuid.uuid4().hex}",
            batching=True,
            batching_max_messages=1000,
            batching_max_delay=0.001,
            max_pending_messages=10_000,
            block_if_queue_full=True,
        )

        def send_all(count: Count) -> None:
            def callback(exc: Any, _msg_id: Any) -> None:
                count.hit(exc is None)

            for _ in range(n):
                producer.send_async(PAYLOAD, callback)

        return timed(n, send_all)


def official_style(module: ModuleType, url: str, n: int) -> tuple[float, float]:
    """The same program for the official client and for streamwire.compat."""
    kwargs: dict[str, Any] = {}
    if module is pulsar:
        kwargs["logger"] = pulsar.ConsoleLogger(pulsar.LoggerLevel.Error)
    client = module.Client(url, **kwargs)
    producer = client.create_producer(
        f"bench-{module.__name__}-{uuid.uuid4().hex}",
        batching_enabled=True,
        batching_max_messages=1000,
        batching_max_publish_delay_ms=1,
        max_pending_messages=10_000,
        block_if_queue_full=True,
    )
    ok = module.Result.Ok

    def send_all(count: Count) -> None:
        def callback(res: Any, _msg_id: Any) -> None:
            count.hit(res == ok)

        for _ in range(n):
            producer.send_async(PAYLOAD, callback)

    try:
        return timed(n, send_all)
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("n", type=int, nargs="?", default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tests.peers.lite import PulsarLite

    rows: dict[str, Callable[[str, int], tuple[float, float]]] = {
        "native": native,
        "compat": lambda url, n: official_style(streamwire.compat, url, n),
        "official": lambda url, n: official_style(pulsar, url, n),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    broker = PulsarLite().start()
    try:
        for r in range(args.rounds):
            for name, row in rows.items():
                rate, cpu = row(broker.service_url, args.n)
                results[name].append((rate, cpu))
                print(f"round {r + 1} {name:8s} {rate:12,.0f} msg/s {cpu:8.2f} us CPU/msg")
    finally:
        broker.close()
    med = {
        name: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
        for name, v in results.items()
    }
    print(f"\nmedians of {args.rounds} rounds, {args.n:,} x {len(PAYLOAD)} B, pulsar-lite:")
    print("| row | msg/s | CPU µs/msg | time per message vs native | CPU per message vs native |")
    print("|---|---:|---:|---:|---:|")
    base_rate, base_cpu = med["native"]
    for name, (rate, cpu) in med.items():
        ratios = f"{base_rate / rate:.2f}x | {cpu / base_cpu:.2f}x"
        print(f"| {name} | {rate:,.0f} | {cpu:.2f} | {ratios} |")


if __name__ == "__main__":
    main()
