"""Two builds of streamwire on one pulsar-lite, alternating per round: ``send_many`` of
10,000-element lists of 100 B (``--size``), 1M messages a round, each build in a subprocess
of its own (so each imports its own extension). Meant for a before/after on a machine shared
with other work, where two runs minutes apart are not comparable but alternating rounds are.

    .venv/bin/python benches/pulsar_bulk_ab.py A_PYTHON_DIR B_PYTHON_DIR [--rounds 5] [--size 100]

Each ``*_PYTHON_DIR`` is a directory holding a ``streamwire`` package with its extension
(e.g. ``python`` of a worktree). Rows: A and B with ``send_many(values)`` (a list of ids
back), B with ``send_many(values, ids=False)`` when B has it, and B with
``send_many(values, ids=False).ids()`` (the bulk path, then the list of ids made from its
ranges: what ``ids=True`` costs when it takes the bulk path). Prints msg/s per round and the
medians, beside the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.peers.lite import PulsarLite  # noqa: E402

CHILD = """
import sys, time, uuid
import streamwire
url, n, mode, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
chunk = [b"x" * size] * 10_000
topic = f"persistent://public/default/ab-{uuid.uuid4().hex[:10]}"
with streamwire.Client(url) as c, c.create_producer(topic) as p:
    p.send_many(chunk[:100])
    t0 = time.perf_counter()
    for _ in range(n // len(chunk)):
        if mode == "ids":
            p.send_many(chunk)
        elif mode == "ranges":
            p.send_many(chunk, ids=False)
        else:
            assert len(p.send_many(chunk, ids=False).ids()) == len(chunk)
    print(n / (time.perf_counter() - t0))
"""


def rate(python_dir: str, url: str, n: int, mode: str, size: int) -> float:
    env = dict(os.environ, PYTHONPATH=python_dir)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, url, str(n), mode, str(size)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100, help="payload bytes per message")
    args = ap.parse_args()
    modes = {
        "A send_many": (args.a, "ids"),
        "B send_many": (args.b, "ids"),
        "B send_many(ids=False)": (args.b, "ranges"),
        "B send_many(ids=False).ids()": (args.b, "ranges_ids"),
    }
    rows: dict[str, list[float]] = {k: [] for k in modes}
    with PulsarLite() as lite:
        url = lite.service_url
        for rnd in range(args.rounds):
            for k, (python_dir, mode) in modes.items():
                rows[k].append(rate(python_dir, url, args.messages, mode, args.size))
            print(
                f"round {rnd}: "
                + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in rows.items())
                + f" (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    print(
        f"\n{args.size} B, medians of {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| build / call | msg/s |\n|---|---:|")
    for k, v in rows.items():
        print(f"| {k} | {statistics.median(v):,.0f} |")


if __name__ == "__main__":
    main()
