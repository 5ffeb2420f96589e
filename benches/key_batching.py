"""Key-based vs default batching, ours vs the official client, on pulsar-lite.

Usage: ``.venv/bin/python benches/key_batching.py [--messages 100000] [--rounds 3]``.

For 16 and 1000 distinct keys (cycled, so keys interleave), each producer sends
``--messages`` 100 B messages with ``send_async`` and flushes; the official client gets a no-op
callback per message (its API needs one). Rounds alternate the four producers; the table
gives the median msg/s per producer and the ratio ours / official for the same batching type.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import streamwire

from tests.peers.lite import PulsarLite

PAYLOAD = b"x" * 100


def ours(url: str, batching_type: str) -> Callable[[list[str]], float]:
    def run(keys: list[str]) -> float:
        with streamwire.Client(url) as client:
            topic = f"kbb-{uuid.uuid4().hex[:8]}"
            with client.create_producer(topic, batching_type=batching_type) as p:
                p.send(b"warm-up")
                t = time.perf_counter()
                for k in keys:
                    p.send_async(PAYLOAD, key=k)
                p.flush()
                return len(keys) / (time.perf_counter() - t)

    return run


def official(url: str, key_based: bool) -> Callable[[list[str]], float]:
    import pulsar

    def run(keys: list[str]) -> float:
        client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            kwargs: dict[str, Any] = {}
            if key_based:
                kwargs["batching_type"] = pulsar.BatchingType.KeyBased
            p = client.create_producer(
                f"kbb-{uuid.uuid4().hex[:8]}",
                batching_enabled=True,
                batching_max_publish_delay_ms=1,
                max_pending_messages=10_000,
                block_if_queue_full=True,
                **kwargs,
            )
            p.send(b"warm-up")

            def noop(res: Any, mid: Any) -> None:
                pass

            t = time.perf_counter()
            for k in keys:
                p.send_async(PAYLOAD, noop, partition_key=k)
            p.flush()
            rate = len(keys) / (time.perf_counter() - t)
            p.close()
            return rate
        finally:
            client.close()

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with PulsarLite() as lite:
        url = lite.service_url
        producers = {
            "ours default": ours(url, "default"),
            "ours key_based": ours(url, "key_based"),
            "official default": official(url, False),
            "official KeyBased": official(url, True),
        }
        print(
            f"{args.messages:,} x 100 B send_async + flush, median of {args.rounds} rounds\n\n"
            "| keys | producer | msg/s | ours / official |\n|---:|---|---:|---:|"
        )
        for n_keys in (16, 1000):
            keys = [f"key-{i % n_keys}" for i in range(args.messages)]
            rates: dict[str, list[float]] = {name: [] for name in producers}
            for _ in range(args.rounds):
                for name, run in producers.items():
                    rates[name].append(run(keys))
            med = {name: statistics.median(r) for name, r in rates.items()}
            for name in producers:
                kind = name.split(" ", 1)[1]
                ratio = ""
                if name.startswith("ours"):
                    theirs = "official " + ("KeyBased" if kind == "key_based" else "default")
                    ratio = f"{med[name] / med[theirs]:.2f}x"
                print(f"| {n_keys} | {name} | {med[name]:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
