"""Instructions per send, counted by callgrind (load-independent, unlike wall-clock time on a
shared machine): blocking ``send_async`` + ``flush`` vs ``streamwire.aio`` sends awaited in
order and gathered, in one process each, against one pulsar-lite started outside valgrind.
Per-send cost = (instructions of a run with N sends - a run with 0 sends) / N; every thread of
the process is counted (the loop's, the engine's I/O threads, the dispatcher).

A last row is asyncio's own floor for the gathered pattern, with no engine at all: N plain
``asyncio.Future``s created, resolved from one loop callback per window and gathered, in the
same windows. ``gather`` is Python code in asyncio (a callback per child, a result loop), so
this is what any future costs in it before a message is sent.

Usage: .venv/bin/python benches/aio_cost.py [N]      (needs valgrind; N defaults to 20,000)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches import callgrind  # noqa: E402

WINDOW = 5000


def run_one(url: str, mode: str, n: int) -> None:
    """One measured process: ``n`` sends in ``mode`` (called under valgrind)."""
    import streamwire
    from streamwire import aio

    topic = f"persistent://public/default/cost-{uuid.uuid4().hex}"
    payload = b"x" * 100
    if mode == "blocking":
        with streamwire.Client(url) as c, c.create_producer(topic) as p:
            for _ in range(n):
                p.send_async(payload)
            p.flush()
        return

    if mode == "floor":
        # Imported in both the N-send and the 0-send process: its cost cancels out.
        from benches.aio_bench import asyncio_floor

        asyncio.run(asyncio_floor(n))
        return

    async def main() -> None:
        async with aio.Client(url) as c, await c.create_producer(topic) as p:
            for start in range(0, n, WINDOW):
                k = min(WINDOW, n - start)
                if mode == "gather":
                    await asyncio.gather(*(p.send(payload) for _ in range(k)))
                else:
                    for f in [p.send(payload) for _ in range(k)]:
                        await f
            await p.flush()

    asyncio.run(main())


def instructions(url: str, mode: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as d:
        return callgrind.instructions(__file__, [url, mode, str(n)], Path(d) / "cg.out")


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        run_one(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    from tests.peers.lite import PulsarLite

    broker = PulsarLite().start()
    try:
        per: dict[str, float] = {}
        for mode in ("blocking", "in_order", "gather", "floor"):
            base = instructions(broker.service_url, mode, 0)
            full = instructions(broker.service_url, mode, n)
            per[mode] = (full - base) / n
            print(f"{mode:>9}: {per[mode]:>8,.0f} instructions per send", flush=True)
        for mode in ("in_order", "gather"):
            print(f"aio {mode} / blocking send_async: {per[mode] / per['blocking']:.2f}x")
        print(
            "asyncio floor (plain asyncio.Futures gathered, no engine) / blocking send_async: "
            f"{per['floor'] / per['blocking']:.2f}x"
        )
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
