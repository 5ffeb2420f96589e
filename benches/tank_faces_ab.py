"""TANK hot paths, blocking and asyncio faces, of two builds of streamwire A/B in one run.

    .venv/bin/python benches/tank_faces_ab.py A_DIR B_DIR [--rounds 3] [--tank-bin PATH]

``A_DIR`` and ``B_DIR`` each hold a ``streamwire`` package (its Python files and its compiled
``_native`` extension): say, a copy of main's and this worktree's ``python/``. One broker
(``--tank-bin`` / ``STREAMWIRE_TANK_BIN``: a real TANK; else the broker double) serves both.
Each round runs A then B, then B then A the next round, each side in a fresh process with
that directory first on ``sys.path``; the table shows medians of msg/s (wall clock) and of
the client process's CPU time per message (every thread of it; the broker is another
process), which a loaded machine disturbs less.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 5000
SIZE = 100


def _timed(fn: Callable[[], int]) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    n = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return n / wall, cpu / n * 1e6


def _atimed(fn: Callable[[], Awaitable[int]]) -> tuple[float, float]:
    return _timed(lambda: asyncio.run(fn()))


def child(url: str, n: int) -> dict[str, tuple[float, float]]:
    """Every workload once, with the ``streamwire`` first on ``sys.path``."""
    from streamwire import tank
    from streamwire.aio import tank as atank

    value = b"x" * SIZE
    client = tank.Client(url)

    def topic() -> str:
        name = "ab" + uuid.uuid4().hex[:16]
        client.create_topic(name, 1)
        return name

    out: dict[str, tuple[float, float]] = {}
    few, bulk = n // 100, n

    t = topic()
    with client.create_producer(t) as p:

        def send() -> int:
            for _ in range(few):
                p.send(value, partition=0)
            return few

        out["blocking send (one at a time)"] = _timed(send)

        def send_async() -> int:
            for _ in range(bulk // 5):
                p.send_async(value, partition=0)
            p.flush()
            return bulk // 5

        out["blocking send_async + flush"] = _timed(send_async)

        values = [value] * 10_000

        def send_many() -> int:
            for _ in range(bulk // 10_000):
                p.send_many(values, partition=0)
            return bulk

        out["blocking send_many (10k lists)"] = _timed(send_many)

    # The receives read a backlog written in large bundles (as the broker stores a busy
    # topic): the blocking consumer, then the asyncio one, each from the start.
    backlog = topic()
    with client.create_producer(backlog) as p:
        for _ in range(bulk // 10_000 + 1):
            p.send_many([value] * 10_000, partition=0)

    def read_ahead(queued: Callable[[], int]) -> None:
        """Let the consumer read the backlog ahead (up to 3 s): the receive rows then time
        the binding's take path, not the broker's disk."""
        until = time.monotonic() + 3
        while queued() < few + bulk and time.monotonic() < until:
            time.sleep(0.01)

    with client.create_consumer(backlog, max_wait=0.2) as c:
        read_ahead(lambda: c.queued)

        def receive() -> int:
            for _ in range(few):
                c.receive(timeout=5)
            return few

        out["blocking receive (one at a time)"] = _timed(receive)

        def receive_many() -> int:
            got = 0
            while got < bulk:
                got += len(c.receive_many(10_000, timeout=5))
            return got

        out["blocking receive_many(10k)"] = _timed(receive_many)

    t2 = topic()

    async def aio_sends() -> dict[str, tuple[float, float]]:
        res: dict[str, tuple[float, float]] = {}
        async with atank.Client(url) as ac:
            p = await ac.create_producer(t2)

            async def in_order() -> int:
                for _ in range(few):
                    await p.send(value, partition=0)
                return few

            async def gathered() -> int:
                for _ in range(bulk // 5 // WINDOW):
                    await asyncio.gather(*[p.send(value, partition=0) for _ in range(WINDOW)])
                return bulk // 5 // WINDOW * WINDOW

            async def many() -> int:
                values = [value] * 10_000
                for _ in range(bulk // 10_000):
                    await p.send_many(values, partition=0)
                return bulk

            for name, fn in (
                ("asyncio send awaited in order", in_order),
                ("asyncio send gathered (5k windows)", gathered),
                ("asyncio send_many (10k lists)", many),
            ):
                t0, c0 = time.perf_counter(), time.process_time()
                k = await fn()
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                res[name] = (k / wall, cpu / k * 1e6)
            await p.close()
            c = await ac.create_consumer(backlog, max_wait=0.2)
            read_ahead(lambda: c.queued)

            async def receive() -> int:
                for _ in range(few):
                    await c.receive(timeout=5)
                return few

            async def receive_many() -> int:
                got = 0
                while got < bulk:
                    got += len(await c.receive_many(10_000, timeout=5))
                return got

            for name, fn in (
                ("asyncio receive (one at a time)", receive),
                ("asyncio receive_many(10k)", receive_many),
            ):
                t0, c0 = time.perf_counter(), time.process_time()
                k = await fn()
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                res[name] = (k / wall, cpu / k * 1e6)
            await c.close()
        return res

    out.update(asyncio.run(aio_sends()))
    client.close()
    return out


def run_side(path: str, url: str, n: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=path)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", url, "--messages", str(n)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    if proc.returncode != 0:
        raise RuntimeError(f"side {path} failed:\n{proc.stderr[-3000:]}")
    got: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", nargs="?")
    ap.add_argument("b", nargs="?")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--tank-bin", default=os.environ.get("STREAMWIRE_TANK_BIN"))
    ap.add_argument("--child", metavar="URL")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.messages)))
        return 0
    if not (args.a and args.b):
        ap.error("A_DIR and B_DIR are required")
    sys.path.insert(0, str(ROOT))
    from tests.peers.tank import TankBroker

    broker = TankBroker(binary=args.tank_bin or None)
    broker.start()
    sides = {"A": args.a, "B": args.b}
    got: dict[str, dict[str, list[tuple[float, float]]]] = {"A": {}, "B": {}}
    try:
        for r in range(args.rounds):
            for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
                for name, v in run_side(sides[side], broker.url, args.messages).items():
                    got[side].setdefault(name, []).append(tuple(v))  # type: ignore[arg-type]
    finally:
        broker.close()
    kind = "real TANK broker" if broker.kind == "real" else "broker double"
    print(f"\n{kind}; {args.rounds} rounds A/B alternating, medians; A={args.a} B={args.b}")
    print("| workload | A msg/s | B msg/s | B/A | A CPU µs/msg | B CPU µs/msg |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in got["A"]:
        a_rate = statistics.median(v[0] for v in got["A"][name])
        b_rate = statistics.median(v[0] for v in got["B"][name])
        a_cpu = statistics.median(v[1] for v in got["A"][name])
        b_cpu = statistics.median(v[1] for v in got["B"][name])
        print(
            f"| {name} | {a_rate:,.0f} | {b_rate:,.0f} | {b_rate / a_rate:.2f} "
            f"| {a_cpu:.2f} | {b_cpu:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
