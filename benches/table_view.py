"""Time to build a TableView: ours vs the official Python client, in one run on one topic.

Usage: ``.venv/bin/python benches/table_view.py [--broker lite|apache] [--messages 100000]
[--keys 10000] [--rounds 5] [--size 100] [--no-batching] [--ours-only]``. One topic gets
``--messages`` keyed messages of ``--size`` bytes spread over ``--keys`` keys (batched unless
``--no-batching``); then, alternately, our ``create_table_view`` and the official client's
``create_table_view`` build a view of it, ``--rounds`` times each (a fresh client per build,
connection set-up included). The time is from the call to the view being caught up (both
return once they have read the topic) and its size checked; prints the median and the best
per client, and the median client CPU per build (``getrusage`` of this process, all threads:
the broker is another process). The official client (3.x) crashed (SIGSEGV) building a view
of >= 5000 batched messages in our runs, on pulsar-lite and on Apache: compare it with
``--no-batching``; ``--ours-only`` measures ours alone. Both clients run in this one process:
ours measured slower beside the official client than alone (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar
import streamwire

from tests.peers.apache import ApachePulsar
from tests.peers.lite import PulsarLite


def fill(url: str, topic: str, messages: int, keys: int, size: int, batching: bool = True) -> None:
    pad = b"v" * max(0, size - 12)
    with streamwire.Client(url) as client, client.create_producer(topic, batching=batching) as p:
        step = 10_000
        for start in range(0, messages, step):
            n = min(step, messages - start)
            p.send_many(
                [b"%010d|" % (start + i) + pad for i in range(n)],
                keys=[f"key-{(start + i) % keys}" for i in range(n)],
            )
        p.flush()


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def ours(url: str, topic: str) -> tuple[float, float, int]:
    with streamwire.Client(url) as client:
        c, t = cpu(), time.perf_counter()
        view = client.create_table_view(topic)
        took, used = time.perf_counter() - t, cpu() - c
        n = len(view)
        view.close()
    return took, used, n


def official(url: str, topic: str) -> tuple[float, float, int]:
    client = pulsar.Client(url)
    try:
        c, t = cpu(), time.perf_counter()
        view = client.create_table_view(topic)
        took, used = time.perf_counter() - t, cpu() - c
        n = len(view)
        view.close()
    finally:
        client.close()
    return took, used, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--broker", choices=["lite", "apache"], default="lite")
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size", type=int, default=100)
    # The official client (3.x) crashed (SIGSEGV) building a view of >= 5000 batched messages
    # on pulsar-lite in our runs; --no-batching writes one message per entry.
    ap.add_argument("--no-batching", action="store_true")
    ap.add_argument("--ours-only", action="store_true", help="skip the official client")
    args = ap.parse_args()
    broker: AbstractContextManager[Any] = PulsarLite() if args.broker == "lite" else ApachePulsar()
    with broker as b:
        url = b.service_url
        topic = f"persistent://public/default/tv-bench-{uuid.uuid4().hex[:8]}"
        fill(url, topic, args.messages, args.keys, args.size, not args.no_batching)
        times: dict[str, list[float]] = {"streamwire": [], "pulsar-client": []}
        cpus: dict[str, list[float]] = {"streamwire": [], "pulsar-client": []}
        for _ in range(args.rounds):
            builds = [("streamwire", ours)] + (
                [] if args.ours_only else [("pulsar-client", official)]
            )
            for name, build in builds:
                took, used, n = build(url, topic)
                assert n == args.keys, f"{name}: {n} keys, expected {args.keys}"
                times[name].append(took)
                cpus[name].append(used)
        print(
            f"{args.messages} messages of {args.size} B over {args.keys} keys on {args.broker} "
            f"(batching {'off' if args.no_batching else 'on'}), {args.rounds} builds each"
        )
        print("| client | median s | best s | client CPU s (median) |\n|---|---:|---:|---:|")
        for name, ts in times.items():
            if not ts:
                continue
            med, best, c = statistics.median(ts), min(ts), statistics.median(cpus[name])
            print(f"| {name} | {med:.3f} | {best:.3f} | {c:.3f} |")


if __name__ == "__main__":
    main()
