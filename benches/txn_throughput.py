#!/usr/bin/env python
"""Bulk sends in a transaction vs the same sends outside one, on Apache Pulsar 4.0.7.

Usage: ``.venv/bin/python benches/txn_throughput.py [--messages 100000] [--size 100]
[--rounds 3]``. Starts its own broker (the test fixture's, transactions on). Each round, in
turn on fresh topics: ``send_many`` of ``--messages`` values of ``--size`` bytes (lists of
10,000) without a transaction, then the same in one transaction followed by its commit.
Prints messages/s per round and the medians: what a transaction costs a bulk write (its sends
batch together, one batch per transaction, as the Java client's).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.peers.apache import ApachePulsar


def run(client: object, n: int, size: int, in_txn: bool) -> float:
    import streamwire

    assert isinstance(client, streamwire.Client)
    topic = f"persistent://public/default/txn-bench-{uuid.uuid4().hex[:8]}"
    values = [b"x" * size] * 10_000
    with client.create_producer(topic) as p:
        p.send(b"warm")
        t0 = time.perf_counter()
        txn = client.transaction(120.0) if in_txn else None
        for _ in range(n // len(values)):
            p.send_many(values, txn=txn)
        if txn is not None:
            txn.commit()
        return n / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import streamwire

    broker = ApachePulsar().start()
    try:
        rates: dict[str, list[float]] = {"plain": [], "in one transaction": []}
        with streamwire.Client(broker.service_url) as client:
            for r in range(args.rounds):
                for mode in rates:
                    rate = run(client, args.messages, args.size, mode != "plain")
                    rates[mode].append(rate)
                    print(f"round {r + 1} {mode:20s} {rate:12,.0f} msg/s", flush=True)
        plain, txn = (statistics.median(v) for v in rates.values())
        print(f"median plain {plain:,.0f} msg/s, in one transaction {txn:,.0f} msg/s")
    finally:
        broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
