"""Transaction latency on Apache Pulsar 4.0.7 standalone: streamwire vs the Java client.

Usage: ``.venv/bin/python benches/txn_latency.py [--txns 300] [--warmup 30]``. Starts its own
broker (the test fixture's, transactions on). Each side runs, one after the other against the
same broker: open a transaction, send one 100 B message in it, commit; ``--warmup`` rounds
first, then ``--txns`` measured ones. Prints p50/p99 in ms of the whole round and of the
commit alone. The official Python client has no transactions, so the reference is the Java
client (``benches/txn/TxnBench.java``, run with the broker's classpath, which holds
``pulsar-client-original``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import streamwire

from tests.peers.apache import JAVA, ApachePulsar, resolve_classpath

HERE = Path(__file__).resolve().parent


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * q))]


def ours(url: str, n: int, warmup: int) -> tuple[list[float], list[float]]:
    total: list[float] = []
    commit: list[float] = []
    with streamwire.Client(url) as client:
        p = client.create_producer(f"persistent://public/default/txn-bench-{uuid.uuid4().hex}")
        for i in range(warmup + n):
            t0 = time.perf_counter()
            txn = client.transaction(timeout=60)
            p.send(b"x" * 100, txn=txn)
            t1 = time.perf_counter()
            txn.commit()
            t2 = time.perf_counter()
            if i >= warmup:
                total.append(t2 - t0)
                commit.append(t2 - t1)
        p.close()
    return total, commit


def java(url: str, n: int, warmup: int) -> tuple[list[float], list[float]]:
    _, cp = resolve_classpath()
    topic = f"persistent://public/default/txn-bench-java-{uuid.uuid4().hex}"
    out = subprocess.run(
        [JAVA, "-cp", cp, str(HERE / "txn" / "TxnBench.java"), url, str(n), str(warmup), topic],
        check=True,
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("PULSAR_")},
    ).stdout
    # The Java client logs to stdout too: keep the "<ns> <ns>" lines.
    rows = [
        f
        for f in (line.split() for line in out.splitlines())
        if len(f) == 2 and all(x.isdigit() for x in f)
    ]
    return [int(a) / 1e9 for a, _ in rows], [int(b) / 1e9 for _, b in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--txns", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    args = ap.parse_args()
    with ApachePulsar() as broker:
        url = broker.service_url
        print("| client | round p50 ms | round p99 ms | commit p50 ms | commit p99 ms |")
        print("|---|---:|---:|---:|---:|")
        for name, run in (("streamwire", ours), ("Java client 4.0.7", java)):
            total, commit = run(url, args.txns, args.warmup)
            print(
                f"| {name} | {_pct(total, 0.5) * 1e3:.2f} | {_pct(total, 0.99) * 1e3:.2f} "
                f"| {_pct(commit, 0.5) * 1e3:.2f} | {_pct(commit, 0.99) * 1e3:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
