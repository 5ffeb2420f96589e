"""Pravega side by side: streamwire.pravega against the official client (PyPI ``pravega``),
on one Pravega 0.13.0 standalone, in one run.

    .venv/bin/python benches/pravega_bench.py [--controller tcp://...] [--rounds 3]
                                              [--events 200000] [--sizes 100,1024]

Each round writes ``--events`` events of each size to a fresh 1-segment stream with each
writer, then reads them back with each reader; the table shows medians over the rounds and
their range. ``--warmup`` rounds (1 by default) run first and are not counted: a fresh
standalone's JIT runs the same appends and reads 2-3x slower at first.

- theirs, write: ``write_event_bytes`` with ``max_inflight_events=1000``, then ``flush``
  (the fast way to use it; the default of 0 is one round trip per event).
- ours, write_async: one ``write_async`` per event, then ``flush``.
- ours, write_many: lists of 10,000 events, each call waiting for its events' acks.
- ours, write_many_async: the same lists handed over without waiting (calls pipeline), then
  ``flush``.
- theirs, read: a reader group's reader, ``get_segment_slice_async`` until all are read.
- ours, read_many / read_arrow: 10,000 events per call (read_many's events iterated, as
  theirs are).
- ceiling rows: the segment store's own ceiling on the same server, in the same round
  (``benches/src/bin/pravega_ceiling.rs``: pre-built APPEND_BLOCK_END blocks on a raw
  socket, no client engine): ``write pipelined`` (4 MiB blocks, up to 4 unacknowledged: the
  fastest of the shapes tried), ``write one block in flight`` (1 MiB blocks, each waited
  for), ``write sync calls of 10k`` (the events cut into calls of 10,000 whose blocks go out
  together, each call waiting for all its acks: the most a synchronous ``write_many`` of the
  bench's lists can reach) and ``read pipelined`` (READ_SEGMENTs of 1 MiB, 4 in flight, of
  the stream the readers read). "of ceiling" is each row against the pipelined ceiling of
  its direction, ``write_many`` against the sync-calls one. Needs the segment store's
  address (``--segment-store host:port`` with ``--controller``, or ``--raw`` when the bench
  starts the server). The ceiling rows' rates are the tool's own clock (first request to
  last answer), ours and theirs include creating the writer or reader.

The standalone keeps every segment in a 128 MiB cache (``InProcPravegaCluster`` hard-codes
``cache.size.max``); past it appends are throttled (up to 25 s each) and then fail the
container. So each run writes to a fresh stream that is deleted right after it, and
``--events`` x (size + 8) should stay well under 128 MiB (the defaults do). Its tier-2
storage is in the heap too, and deleted segments' chunks are reclaimed lazily: after ~5 GB
written in one life it runs out of heap (``OutOfMemoryError`` in ``InMemoryChunkStorage``)
and fails its container, so give each bench run a fresh standalone (the default).

Without ``--controller`` a standalone is started (and stopped) by the bench.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamwire import pravega  # noqa: E402

from benches.bench_bin import release_bin  # noqa: E402

BATCH = 10_000
CEILING = ROOT / "target" / "release" / "pravega_ceiling"
#: (row name, the ceiling tool's flags)
CEILING_WRITES = [
    ("ceiling write pipelined (4 x 4 MiB)", ["--window", "4", "--block", str(4 << 20)]),
    ("ceiling write one block in flight (1 MiB)", ["--window", "1", "--block", str(1 << 20)]),
    (
        "ceiling write sync calls of 10k",
        ["--call", str(BATCH), "--window", "16", "--block", str(1 << 20)],
    ),
]
CEILING_READ = "ceiling read pipelined (4 x 1 MiB)"


def build_ceiling() -> None:
    release_bin("pravega_ceiling")


def ceiling(mode: str, store: tuple[str, int], segment: str, *flags: str) -> float:
    """One run of the ceiling tool: its events/s, timed by the tool from first request to
    last answer (connection set-up and frame building are outside its clock, as the store's
    rate is what it measures)."""
    out = subprocess.run(
        [str(CEILING), mode, f"{store[0]}:{store[1]}", segment, *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"pravega_ceiling {mode} failed: {out.stderr.strip()[:500]}")
    return float(json.loads(out.stdout)["events_per_s"])


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

    def ceiling_write(self, stream: str, size: int, flags: list[str]) -> float:
        assert self.store is not None
        seg = self.segment(stream)
        return ceiling(
            "write", self.store, seg, "--events", str(self.n), "--size", str(size), *flags
        )

    def ours_write_many_async(self, stream: str, size: int) -> int:
        batch = [b"x" * size] * BATCH
        with self.ours.create_writer(self.scope, stream) as w:
            for _ in range(self.n // BATCH):
                w.write_many_async(batch)
            w.flush()
        return self.n

    # -- readers
    def ceiling_read(self, stream: str) -> float:
        assert self.store is not None
        return ceiling("read", self.store, self.segment(stream), "--window", "4")

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


def table(rows: dict[tuple[str, int], list[float]]) -> None:
    print(
        f"| {'path':42} | {'size':>6} | {'events/s':>12} | {'rounds':>21} | {'vs theirs':>9} "
        f"| {'of ceiling':>10} | {'CPU us/event':>12} |"
    )
    print(f"|{'-' * 44}|{'-' * 8}|{'-' * 14}|{'-' * 23}|{'-' * 11}|{'-' * 12}|{'-' * 14}|")
    for (name, size), vals in rows.items():
        med = statistics.median(vals)
        reading = "read" in name
        base_name = (
            "theirs read (reader group)" if reading else "theirs write (inflight 1000) + flush"
        )
        base = statistics.median(rows[(base_name, size)])
        # A synchronous write_many is held to what calls of its size can reach.
        ceil_name = (
            CEILING_READ
            if reading
            else CEILING_WRITES[2][0]
            if name.startswith("ours write_many (")
            else CEILING_WRITES[0][0]
        )
        ceil = rows.get((ceil_name, size))
        of_ceil = f"{med / statistics.median(ceil):>9.0%}" if ceil else "-"
        cpu_vals = CPU.get((name, size))
        cpu = f"{statistics.median(cpu_vals):>12.2f}" if cpu_vals else "-"
        spread = f"{min(vals) / 1e6:.2f}M-{max(vals) / 1e6:.2f}M"
        print(
            f"| {name:42} | {size:>6} | {med:>12,.0f} | {spread:>21} | {med / base:>8.2f}x "
            f"| {of_ceil:>10} | {cpu:>12} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--controller")
    ap.add_argument("--segment-store", help="host:port of the segment store (ceiling rows)")
    ap.add_argument("--raw", action="store_true", help="add the ceiling rows (bench's own server)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="rounds run first and not counted (the store's JIT: a cold standalone runs "
        "the same appends and reads 2-3x slower)",
    )
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
    if store is not None:
        build_ceiling()
    load = os.getloadavg()
    try:
        b = Bench(url, args.events, store)
        rows: dict[tuple[str, int], list[float]] = {}

        warming = False

        def record(name: str, size: int, rate: float) -> None:
            if warming:
                print(f"  (warm-up) {name} {size} B: {rate:,.0f}/s", flush=True)
                return
            rows.setdefault((name, size), []).append(rate)
            print(f"  {name} {size} B: {rate:,.0f}/s", flush=True)

        for size in [int(s) for s in args.sizes.split(",")]:
            for i in range(args.warmup + args.rounds):
                warming = i < args.warmup
                if store is not None:
                    for name, flags in CEILING_WRITES:
                        s = b.stream()
                        record(name, size, b.ceiling_write(s, size, flags))
                        b.drop(s)
                writers = [
                    ("theirs write (inflight 1000) + flush", b.theirs_write),
                    ("ours write_async + flush", b.ours_write_async),
                    ("ours write_many (10k lists)", b.ours_write_many),
                    ("ours write_many_async (10k lists) + flush", b.ours_write_many_async),
                ]
                for name, write in writers:
                    s = b.stream()
                    key = None if warming else (name, size)
                    record(name, size, timed(functools.partial(write, s, size), key))
                    if name.startswith("ours write_many_async"):
                        readers: dict[str, Callable[[str], int]] = {
                            "theirs read (reader group)": b.theirs_read,
                            "ours read_many": b.ours_read_many,
                            "ours read_arrow": b.ours_read_arrow,
                        }
                        order = ([CEILING_READ] if store is not None else []) + list(readers)
                        # The first read of a fresh segment runs slower (by up to 2x), so
                        # each round another reader goes first.
                        turn = i % len(order)
                        for rname in order[turn:] + order[:turn]:
                            if rname == CEILING_READ:
                                record(rname, size, b.ceiling_read(s))
                                continue
                            key = None if warming else (rname, size)
                            read = readers[rname]
                            record(rname, size, timed(functools.partial(read, s), key))
                    b.drop(s)
        end = os.getloadavg()
        head = f"Pravega 0.13.0 standalone, {args.events:,} events per run"
        print(f"\n{head}, median of {args.rounds} (and the rounds' range)")
        print(f"load average (1/5/15 min) at start {load}, at end {end}\n")
        table(rows)
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
