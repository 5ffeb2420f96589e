"""TANK producer memory stays bounded by the client's budget: N messages through send_async
and send_many with memory_limit=64 MiB, RSS sampled as in benches/rss_produce.py.

    .venv/bin/python benches/tank_rss_produce.py [--count 5000000] [--size 100] [--tank-bin PATH]

Uses the real broker with ``--tank-bin`` (or ``STREAMWIRE_TANK_BIN``), else the double (slow:
use a smaller ``--count``). The bar is an RSS growth under 100 MB after warm-up.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamwire import tank  # noqa: E402

from benches.rss_produce import MB, rss_bytes, send_async_growth, send_many_growth  # noqa: E402
from tests.peers.tank import TankBroker  # noqa: E402


def run_async(client: tank.Client, topic: str, n: int, size: int) -> int:
    p = client.create_producer(topic)
    _, growth = send_async_growth(p, n, size)
    p.close()
    return growth


def run_many(client: tank.Client, topic: str, n: int, size: int) -> int:
    p = client.create_producer(topic)
    _, growth = send_many_growth(p, n, size)
    p.close()
    return growth


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=5_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--limit-mb", type=int, default=100)
    ap.add_argument("--tank-bin", default=os.environ.get("STREAMWIRE_TANK_BIN"))
    args = ap.parse_args()
    broker = TankBroker(binary=args.tank_bin or None)
    broker.start()
    print(f"broker: {broker.kind}")
    try:
        with tank.Client(broker.url, memory_limit=64 * MB) as client:
            client.create_topic("rss-async", 4)
            client.create_topic("rss-many", 4)
            start = rss_bytes()
            worst = run_async(client, "rss-async", args.count, args.size)
            worst = max(worst, run_many(client, "rss-many", args.count, args.size))
            print(f"whole run: RSS {start / MB:.1f} MB -> {rss_bytes() / MB:.1f} MB")
    finally:
        broker.close()
    ok = worst < args.limit_mb * MB
    print(f"{'OK' if ok else 'FAIL'}: worst growth {worst / MB:.1f} MB (bar {args.limit_mb} MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
