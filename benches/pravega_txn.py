"""Pravega transactional writes, ours beside the official client (PyPI ``pravega``), in one run
against one standalone: events/s of whole transactions (begin, write every event, commit and
wait until COMMITTED), rounds alternating between the two clients so that drift in the
machine's load falls on both alike. Issue 29's goal: at least 3x the official client.

    .venv/bin/python benches/pravega_txn.py [--txns 20] [--events 1000] [--size 100] [--rounds 3]

Each round writes ``--txns`` transactions of ``--events`` events of ``--size`` bytes to a
fresh 1-segment stream, one after the other (a transaction is committed before the next
begins, as a job committing batch after batch does): ours with ``txn.write_many`` (one call
per transaction) and with ``txn.write`` per event, the official client with
``write_event_bytes`` per event (it has no bulk write). The official ``commit()`` returns once
the controller has accepted the commit (state COMMITTING; the events become visible moments
later), which is ours with ``commit(wait=False)``; ours is also run with the default
``commit()``, which waits until the state is COMMITTED. Figures: the median of the rounds'
events/s (wall clock, first begin to last commit) and ours over theirs. Every round's events
are counted back from the stream (all committed, none lost) before the next run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamwire import pravega

from tests.peers.pravega import PravegaStandalone


def ours_many(
    client: pravega.Client, scope: str, txns: int, payload: list[bytes], wait: bool
) -> None:
    with client.create_transactional_writer(scope, "s") as writer:
        for _ in range(txns):
            txn = writer.begin()
            txn.write_many(payload)
            txn.commit(wait=wait)


def ours_each(client: pravega.Client, scope: str, txns: int, payload: list[bytes]) -> None:
    with client.create_transactional_writer(scope, "s") as writer:
        for _ in range(txns):
            txn = writer.begin()
            for e in payload:
                txn.write(e)
            txn.commit(wait=False)


def theirs(url: str, scope: str, txns: int, payload: list[bytes]) -> None:
    import pravega_client

    manager = pravega_client.StreamManager(url)
    writer = manager.create_transaction_writer(scope, "s", 1)
    for _ in range(txns):
        txn = writer.begin_txn()
        for e in payload:
            txn.write_event_bytes(e)
        txn.commit()


def count(client: pravega.Client, scope: str, want: int) -> int:
    got = 0
    deadline = time.monotonic() + 60
    with client.create_reader(scope, "s", start="head") as reader:
        # Commits not waited for become visible moments later.
        while got < want and time.monotonic() < deadline:
            batch = reader.read_arrow(100_000, timeout=10.0, columns=["value"])
            got += batch.num_rows
    return got


def one(client: pravega.Client, run: Callable[[str], None], want: int) -> float:
    """Events/s of ``run(scope)`` on a fresh stream, its events counted back."""
    scope = "txb" + uuid.uuid4().hex[:8]
    client.create_scope(scope)
    client.create_stream(scope, "s")
    started = time.perf_counter()
    run(scope)
    rate = want / (time.perf_counter() - started)
    got = count(client, scope, want)
    if got != want:
        raise RuntimeError(f"{got} events read back of {want} committed")
    return rate


RUNS = (
    "ours write_many, commit(wait=False)",
    "ours write, commit(wait=False)",
    "ours write_many, commit() until COMMITTED",
    "official write_event_bytes, commit()",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--txns", type=int, default=20)
    ap.add_argument("--events", type=int, default=1000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    payload = [b"%08d:" % i + b"x" * (a.size - 9) for i in range(a.events)]
    want = a.txns * a.events
    rates: dict[str, list[float]] = {n: [] for n in RUNS}
    server = PravegaStandalone(heap="2g").start()
    try:
        rounds(server.controller_url, a, payload, want, rates)
    finally:
        server.close()
    med = {n: statistics.median(v) for n, v in rates.items()}
    print(f"\n{a.txns} transactions x {a.events} events x {a.size} B, medians of {a.rounds} rounds")
    print("| client | events/s | vs official |")
    print("|---|---|---|")
    for n, v in med.items():
        print(f"| {n} | {v:,.0f} | {v / med[RUNS[3]]:.2f}x |")


def rounds(
    url: str,
    a: argparse.Namespace,
    payload: list[bytes],
    want: int,
    rates: dict[str, list[float]],
) -> None:
    with pravega.Client(url) as client:
        runs: dict[str, Callable[[str], None]] = {
            RUNS[0]: lambda s: ours_many(client, s, a.txns, payload, False),
            RUNS[1]: lambda s: ours_each(client, s, a.txns, payload),
            RUNS[2]: lambda s: ours_many(client, s, a.txns, payload, True),
            RUNS[3]: lambda s: theirs(url, s, a.txns, payload),
        }
        for r in range(a.rounds):
            for name, run in runs.items():
                rates[name].append(one(client, run, want))
            print(
                f"round {r + 1}: " + ", ".join(f"{n} {v[-1]:,.0f}/s" for n, v in rates.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
