"""Reader-group reads, ours against the official client's, in one run: events/s for one reader
of a fresh group reading a 4-segment stream of 100-byte events from its head (the group's
creation and the reader's joining included), alternating ours and theirs, medians.

    .venv/bin/python benches/pravega_reader_group.py [--events 200000] [--rounds 3] [--url tcp://…]

Without ``--url`` it starts a Pravega standalone of its own (tests/peers/pravega.py); with
it, a stream an earlier run wrote is read again (the first run's ``--events`` is the most a
later run can read).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Imported before anything is timed: its first import (~0.3 s here) landed in the first
# read_arrow round, a third of that round's time at 500,000 events.
import pyarrow  # noqa: E402, F401
from streamwire import pravega  # noqa: E402

from tests.peers.pravega import PravegaStandalone  # noqa: E402

SCOPE = "rgbench"


def ours(client: pravega.Client, n: int, arrow: bool) -> float:
    # The group's creation is timed, as the official reader's is.
    t0 = time.perf_counter()
    group = client.create_reader_group(SCOPE, "sw" + uuid.uuid4().hex[:8], "s")
    got = 0
    with group.create_reader("r") as reader:
        while got < n:
            if arrow:
                got += reader.read_arrow(10_000, timeout=5.0).num_rows
            else:
                got += len(reader.read_many(10_000, timeout=5.0))
    return n / (time.perf_counter() - t0)


def official(url: str, n: int) -> float:
    import pravega_client

    manager = pravega_client.StreamManager(url)
    t0 = time.perf_counter()
    group = manager.create_reader_group("off" + uuid.uuid4().hex[:8], SCOPE, "s")
    reader = group.create_reader("r")

    async def read() -> int:
        got = 0
        while got < n:
            s = await reader.get_segment_slice_async()
            got += sum(1 for _ in s)
            reader.release_segment(s)
        return got

    asyncio.run(read())
    rate = n / (time.perf_counter() - t0)
    reader.reader_offline()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--url", default=None)
    args = ap.parse_args()
    server = None
    url = args.url
    if url is None:
        server = PravegaStandalone().start()
        url = server.controller_url
    try:
        with pravega.Client(url) as client:
            client.create_scope(SCOPE)
            # With --url the stream of an earlier run is read again (A/B runs of two builds
            # against one standalone read the same events, written once).
            if client.create_stream(SCOPE, "s", segments=4):
                with client.create_writer(SCOPE, "s") as w:
                    batch = [b"%08d" % i + b"x" * 92 for i in range(10_000)]
                    for _ in range(0, args.events, 10_000):
                        w.write_many(batch, routing_keys=[str(j % 64) for j in range(10_000)])
            runs: dict[str, list[float]] = {
                "ours read_arrow": [],
                "ours read_many": [],
                "official": [],
            }
            jobs: dict[str, Callable[[], float]] = {
                "ours read_arrow": lambda: ours(client, args.events, True),
                "ours read_many": lambda: ours(client, args.events, False),
                "official": lambda: official(url, args.events),
            }
            for _ in range(args.rounds):
                for name, job in jobs.items():
                    runs[name].append(job())
        out: dict[str, Any] = {k: round(statistics.median(v)) for k, v in runs.items()}
        for k, v in out.items():
            print(
                f"{k:>16}: {v:>10,} events/s "
                f"(median of {args.rounds}: {[round(x) for x in runs[k]]})"
            )
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
