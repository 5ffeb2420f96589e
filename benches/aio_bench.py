"""Awaited sends (streamwire.aio, gathered in windows; on asyncio's loop and on uvloop; and
sent in windows then awaited one by one in order, no gather) vs blocking send_async + flush,
and asyncio's own floor (the same number of asyncio.Futures created, resolved and gathered).

Usage: .venv/bin/python benches/aio_bench.py [N]   (starts its own pulsar-lite)

Each row is timed twice: wall clock, and this process's CPU time (every thread: the loop's,
the engine's I/O threads, the dispatcher). CPU time is what the calling process spends per
send whatever else the machine runs; the broker runs in another process and is not in it.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import streamwire
import uvloop
from streamwire import aio

from tests.peers.lite import PulsarLite

WINDOW = 5000


def topic() -> str:
    return f"persistent://public/default/bench-{uuid.uuid4().hex}"


def blocking(url: str, n: int, payload: bytes) -> tuple[float, float]:
    with streamwire.Client(url) as c, c.create_producer(topic()) as p:
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            p.send_async(payload)
        p.flush()
        return time.perf_counter() - t0, time.process_time() - c0


async def awaited(url: str, n: int, payload: bytes) -> tuple[float, float]:
    async with aio.Client(url) as c, await c.create_producer(topic()) as p:
        t0, c0 = time.perf_counter(), time.process_time()
        for start in range(0, n, WINDOW):
            await asyncio.gather(*(p.send(payload) for _ in range(min(WINDOW, n - start))))
        return time.perf_counter() - t0, time.process_time() - c0


async def in_order(url: str, n: int, payload: bytes) -> tuple[float, float]:
    """A window of sends, then each awaited in call order (no gather)."""
    async with aio.Client(url) as c, await c.create_producer(topic()) as p:
        t0, c0 = time.perf_counter(), time.process_time()
        for start in range(0, n, WINDOW):
            for f in [p.send(payload) for _ in range(min(WINDOW, n - start))]:
                await f
        return time.perf_counter() - t0, time.process_time() - c0


async def asyncio_floor(n: int) -> tuple[float, float]:
    """asyncio's own cost: create, resolve and gather n futures (no engine at all)."""
    loop = asyncio.get_running_loop()
    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(0, n, WINDOW):
        futs = [loop.create_future() for _ in range(min(WINDOW, n - start))]

        def resolve(futs: list[asyncio.Future[None]] = futs) -> None:
            for f in futs:
                f.set_result(None)

        loop.call_soon(resolve)
        await asyncio.gather(*futs)
    return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    payload = b"x" * 100
    broker = PulsarLite().start()
    try:
        url = broker.service_url
        rows: list[tuple[tuple[float, float], ...]] = []
        for _ in range(3):
            b = blocking(url, n, payload)
            a = asyncio.run(awaited(url, n, payload))
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                u = runner.run(awaited(url, n, payload))
            o = asyncio.run(in_order(url, n, payload))
            f = asyncio.run(asyncio_floor(n))
            rows.append((b, a, u, o, f))
            names = ("aio gather", "uvloop gather", "aio in order", "asyncio floor")
            cols = "   ".join(
                f"{name} {n / r[0]:>9,.0f}/s ({r[0] / b[0]:.2f}x wall, {r[1] / b[1]:.2f}x cpu)"
                for name, r in zip(names, (a, u, o, f))
            )
            print(
                f"blocking send_async+flush {n / b[0]:>9,.0f} msg/s "
                f"({b[1] / n * 1e6:.2f} us cpu/msg)   {cols}",
                flush=True,
            )

        def median(i: int, k: int) -> float:
            return sorted(r[i][k] / r[0][k] for r in rows)[1]

        for k, what in ((0, "wall-clock time"), (1, "process CPU time")):
            print(
                f"median ratio ({what} / blocking): asyncio gather {median(1, k):.2f}x, "
                f"uvloop gather {median(2, k):.2f}x, awaited in order (asyncio) "
                f"{median(3, k):.2f}x, asyncio floor (asyncio.Futures gathered, no engine) "
                f"{median(4, k):.2f}x"
            )
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
