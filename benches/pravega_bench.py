"""Pravega side by side: streamwire.pravega against the official client (PyPI ``pravega``),
on one Pravega 0.13.0 standalone, in one run.

    .venv/bin/python benches/pravega_bench.py [--controller tcp://...] [--rounds 3]
                                              [--events 200000] [--sizes 100,1024]

Each round writes ``--events`` events of each size to a fresh 1-segment stream with each
writer, then reads them back with each reader; the table shows medians over the rounds.

- theirs, write: ``write_event_bytes`` with ``max_inflight_events=1000``, then ``flush``
  (the fast way to use it; the default of 0 is one round trip per event).
- ours, write_async: one ``write_async`` per event, then ``flush``.
- ours, write_many: lists of 10,000 events, each call waiting for its events' acks.
- ours, write_many_async: the same lists handed over without waiting (calls pipeline), then
  ``flush``.
- theirs, read: a reader group's reader, ``get_segment_slice_async`` until all are read.
- ours, read_many / read_arrow: 10,000 events per call (read_many's events iterated, as
  theirs are).
- raw write / raw read: the segment store's own ceiling on the same server (pre-built frames
  on one socket, no client; ``benches/pravega_raw.py``), so every table shows ours, theirs
  and what the server can take and give, in one run. Needs the segment store's address
  (``--segment-store host:port`` with ``--controller``, or ``--raw`` when the bench starts
  the server). Opt-in: on these 2 cores the raw Python writer (window of 16 1-MiB blocks) did
  not reach what our writer does, and once a raw append was never answered (the socket now
  times out after 60 s), so the rows are indicative only; ``--no-raw-write`` keeps the read
  row alone.

Without ``--controller`` a standalone is started (and stopped) by the bench.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamwire import pravega  # noqa: E402

from benches.pravega_raw import raw_read, raw_write  # noqa: E402

BATCH = 10_000


CPU: dict[tuple[str, int], list[float]] = {}


def timed(fn: Callable[[], int], key: tuple[str, int] | None = None) -> float:
    """Events per second of wall time; with ``key``, also this process's CPU time per event
    (every thread: ours and the official client's engines run in this process), which the
    other load on the machine moves far less than the rate."""
    start = time.perf_counter()
    cpu = time.process_time()
    n = fn()
    if key is not None:
        CPU.setdefault(key, []).append((time.process_time() - cpu) / n * 1e6)
    return n / (time.perf_counter() - start)


class Bench:
    def __init__(self, url: str, events: int, store: tuple[str, int] | None) -> None:
        import pravega_client

        self.url = url
        self.store = store
        self.n = events
        self.ours = pravega.Client(url)
        self.theirs = pravega_client.StreamManager(url)
        self.scope = "bench" + uuid.uuid4().hex[:6]
        self.ours.create_scope(self.scope)

    def stream(self) -> str:
        name = "s" + uuid.uuid4().hex[:10]
        self.ours.create_stream(self.scope, name, segments=1)
        return name

    def drop(self, stream: str) -> None:
        """The standalone keeps segments in memory: give it back after each run."""
        self.ours.seal_stream(self.scope, stream)
        self.ours.delete_stream(self.scope, stream)

    # -- writers
    def theirs_write(self, stream: str, size: int) -> int:
        w = self.theirs.create_writer(self.scope, stream, 1000)
        ev = b"x" * size
        for _ in range(self.n):
            w.write_event_bytes(ev)
        w.flush()
        return self.n

    def ours_write_async(self, stream: str, size: int) -> int:
        with self.ours.create_writer(self.scope, stream) as w:
            ev = b"x" * size
            wa = w.write_async
            for _ in range(self.n):
                wa(ev)
            w.flush()
        return self.n

    def ours_write_many(self, stream: str, size: int) -> int:
        batch = [b"x" * size] * BATCH
        with self.ours.create_writer(self.scope, stream) as w:
            for _ in range(self.n // BATCH):
                w.write_many(batch)
        return self.n

    def segment(self, stream: str) -> str:
        return f"{self.scope}/{stream}/0.#epoch.0"

    def raw_write(self, stream: str, size: int) -> int:
        assert self.store is not None
        return raw_write(*self.store, self.segment(stream), size, self.n)

    def ours_write_many_async(self, stream: str, size: int) -> int:
        batch = [b"x" * size] * BATCH
        with self.ours.create_writer(self.scope, stream) as w:
            for _ in range(self.n // BATCH):
                w.write_many_async(batch)
            w.flush()
        return self.n

    # -- readers
    def raw_read(self, stream: str, size: int) -> int:
        assert self.store is not None
        return raw_read(*self.store, self.segment(stream), size, self.n)

    def theirs_read(self, stream: str) -> int:
        group = self.theirs.create_reader_group("rg" + uuid.uuid4().hex[:8], self.scope, stream)
        reader = group.create_reader("r1")

        async def read() -> int:
            got = 0
            while got < self.n:
                sl = await reader.get_segment_slice_async()
                got += sum(1 for _ in sl)
                reader.release_segment(sl)
            return got

        try:
            return asyncio.run(read())
        finally:
            reader.reader_offline()

    def ours_read_many(self, stream: str) -> int:
        with self.ours.create_reader(self.scope, stream, "head") as r:
            got = 0
            while got < self.n:
                # Every event visited, as the official reader's slice is iterated.
                got += sum(1 for _ in r.read_many(BATCH, timeout=10))
        return got

    def ours_read_arrow(self, stream: str) -> int:
        with self.ours.create_reader(self.scope, stream, "head") as r:
            got = 0
            while got < self.n:
                got += r.read_arrow(BATCH, timeout=10).num_rows
        return got


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--controller")
    ap.add_argument("--segment-store", help="host:port of the segment store (raw rows)")
    ap.add_argument("--raw", action="store_true", help="add the raw rows (bench's own server)")
    ap.add_argument(
        "--no-raw-write",
        action="store_true",
        help="raw read row only (the raw writer's pipelined appends sometimes go unanswered)",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--sizes", default="100,1024")
    args = ap.parse_args()
    server = None
    url = args.controller
    if url is None:
        from tests.peers.pravega import PravegaStandalone

        server = PravegaStandalone(heap="6g").start()
        url = server.controller_url
    store: tuple[str, int] | None = None
    if args.segment_store:
        host, port = args.segment_store.rsplit(":", 1)
        store = (host, int(port))
    elif server is not None and args.raw:
        store = ("127.0.0.1", server.segment_port)
    try:
        b = Bench(url, args.events, store)
        rows: dict[tuple[str, int], list[float]] = {}
        for size in [int(s) for s in args.sizes.split(",")]:
            for _ in range(args.rounds):
                writers = [
                    ("theirs write (inflight 1000) + flush", b.theirs_write),
                    ("ours write_async + flush", b.ours_write_async),
                    ("ours write_many (10k lists)", b.ours_write_many),
                    ("ours write_many_async (10k lists) + flush", b.ours_write_many_async),
                ]
                if store is not None and not args.no_raw_write:
                    writers.insert(0, ("raw write (server ceiling)", b.raw_write))
                for name, write in writers:
                    s = b.stream()
                    rows.setdefault((name, size), []).append(
                        timed(functools.partial(write, s, size), (name, size))
                    )
                    print(f"  {name} {size} B: {rows[(name, size)][-1]:,.0f}/s", flush=True)
                    if name.startswith("ours write_many_async"):
                        readers: list[tuple[str, Callable[[str], int]]] = [
                            ("theirs read (reader group)", b.theirs_read),
                            ("ours read_many", b.ours_read_many),
                            ("ours read_arrow", b.ours_read_arrow),
                        ]
                        if store is not None:
                            readers.insert(
                                0,
                                (
                                    "raw read (server ceiling)",
                                    functools.partial(b.raw_read, size=size),
                                ),
                            )
                        for rname, read in readers:
                            rows.setdefault((rname, size), []).append(
                                timed(functools.partial(read, s), (rname, size))
                            )
                            print(
                                f"  {rname} {size} B: {rows[(rname, size)][-1]:,.0f}/s", flush=True
                            )
                    b.drop(s)
        head = f"Pravega 0.13.0 standalone, {args.events:,} events per run"
        print(f"\n{head}, median of {args.rounds}\n")
        print(
            f"| {'path':40} | {'size':>6} | {'events/s':>12} | {'vs theirs':>9} | {'of raw':>6} "
            f"| {'CPU us/event':>12} |"
        )
        print(f"|{'-' * 42}|{'-' * 8}|{'-' * 14}|{'-' * 11}|{'-' * 8}|{'-' * 14}|")
        for (name, size), vals in rows.items():
            med = statistics.median(vals)
            reading = "read" in name
            base_name = (
                "theirs read (reader group)" if reading else "theirs write (inflight 1000) + flush"
            )
            base = statistics.median(rows[(base_name, size)])
            raw_name = "raw read (server ceiling)" if reading else "raw write (server ceiling)"
            raw = rows.get((raw_name, size))
            of_raw = f"{med / statistics.median(raw):>5.0%}" if raw else "-"
            cpu = statistics.median(CPU[(name, size)])
            print(
                f"| {name:40} | {size:>6} | {med:>12,.0f} | {med / base:>8.2f}x | {of_raw:>6} "
                f"| {cpu:>12.2f} |"
            )
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
