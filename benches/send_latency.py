"""Blocking ``send`` latency on pulsar-lite, batching on (the default) and off.

Usage: ``.venv/bin/python benches/send_latency.py [--sends 2000]``. 200 warm-up sends, then
``--sends`` sequential 100 B sends per producer; prints p50/p99 in ms for each setting.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import streamwire

from tests.peers.lite import PulsarLite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sends", type=int, default=2000)
    args = ap.parse_args()
    settings: list[tuple[str, dict[str, object]]] = [
        ("batching on (default)", {}),
        ("batching off", {"batching": False}),
    ]
    with PulsarLite() as lite, streamwire.Client(lite.service_url) as client:
        print("| producer | p50 ms | p99 ms |\n|---|---:|---:|")
        for name, kw in settings:
            p = client.create_producer(f"lat-{uuid.uuid4().hex[:8]}", **kw)  # type: ignore[arg-type]
            for _ in range(200):
                p.send(b"x" * 100)
            lat = []
            for _ in range(args.sends):
                t = time.perf_counter()
                p.send(b"x" * 100)
                lat.append(time.perf_counter() - t)
            lat.sort()
            p50, p99 = lat[len(lat) // 2], lat[int(len(lat) * 0.99)]
            print(f"| {name} | {p50 * 1e3:.3f} | {p99 * 1e3:.3f} |")
            p.close()


if __name__ == "__main__":
    main()
