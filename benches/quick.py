#!/usr/bin/env python
"""``make bench-quick``: the bulk paths of every protocol beside their servers' own ceilings,
in a few minutes, so a change can be checked in one command.

Runs, one round each at reduced sizes, the same scripts whose full runs are published in
docs/benchmarks.md (quote those, not these):

- Pulsar (pulsar-lite): ``send_many`` (lists, Arrow; each also with ``ids=False``, the bulk
  path) and ``receive_many`` / ``receive_arrow``
  against the broker's raw ingest and dispatch ceilings (``benches/pulsar_ceiling.py``);
- Pravega (0.13 standalone): ``write_many`` / ``write_many_async`` / ``read_arrow`` against the
  store's synchronous-call and pipelined-read ceilings (``benches/pravega_bench.py --raw``);
- TANK: ``send_many`` and the bulk receives against raw bundles and fetches
  (``benches/tank_bench.py``), on the real broker when ``STREAMWIRE_TANK_BIN`` is set, else on
  the suite's broker double (labelled as such in its output).

Each script prints its table with the ceiling row(s) beside ours; this prints them one after
the other and the time each took. ``--only pulsar,pravega`` runs a subset.

    .venv/bin/python benches/quick.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (name, script and reduced arguments): sized so each runs in about a minute on a quiet
# two-core machine, server start included.
RUNS: dict[str, list[str]] = {
    "pulsar": ["benches/pulsar_ceiling.py", "--rounds", "1", "--messages", "200000"],
    "pravega": [
        "benches/pravega_bench.py",
        "--raw",
        "--rounds",
        "1",
        "--warmup",
        "1",
        "--events",
        "50000",
        "--sizes",
        "100",
    ],
    "tank": ["benches/tank_bench.py", "--rounds", "1", "--messages", "200000"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--only", default=",".join(RUNS), help="comma-separated subset of " + ", ".join(RUNS)
    )
    args = ap.parse_args()
    chosen = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in RUNS]
    if unknown:
        ap.error(f"unknown run(s): {', '.join(unknown)} (choose from {', '.join(RUNS)})")
    print(f"bench-quick: load average at start {os.getloadavg()[0]:.1f}", flush=True)
    failed: list[str] = []
    took: dict[str, float] = {}
    for name in chosen:
        print(f"\n=== {name}: {' '.join(RUNS[name])}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, *RUNS[name]], cwd=ROOT)
        took[name] = time.perf_counter() - t0
        if rc != 0:
            failed.append(f"{name} (exit {rc})")
    print("\n| run | seconds |\n|---|---:|")
    for name, seconds in took.items():
        print(f"| {name} | {seconds:.0f} |")
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    if failed:
        print("FAILED: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
