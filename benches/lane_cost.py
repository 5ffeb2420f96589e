"""Instructions per write of the TANK producer's and the Pravega writer's hot paths, two
builds A/B, counted by callgrind (load-independent, unlike wall-clock rates on a shared
machine): the blocking face's ``send_async``/``write_async`` + ``flush``, and the asyncio
face's sends/writes awaited in order, gathered, and in lists (``send_many``/``write_many``,
1,000 per list). These are the paths of the shared in-order lane (``common/lane.rs``) and
the shared write future (``common/write_future.rs``).

    .venv/bin/python benches/lane_cost.py A_DIR B_DIR [--proto tank|pravega|both] [-n 20000]

``A_DIR`` and ``B_DIR`` each hold a ``streamwire`` package (Python files and compiled
``_native``): say, main's ``python/`` and this worktree's. One broker serves both (TANK: the
real one with ``STREAMWIRE_TANK_BIN``, else the double; Pravega: the standalone of the test
fixtures), started outside valgrind. Per-write cost = (instructions of a run with N writes -
a run with 0) / N; every thread of the client process is counted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches import callgrind  # noqa: E402

WINDOW = 5000
LIST = 1000
MODES = ("blocking", "in_order", "gather", "many")


def run_tank(url: str, mode: str, n: int) -> None:
    from streamwire import tank
    from streamwire.aio import tank as atank

    value = b"x" * 100
    topic = "lc" + uuid.uuid4().hex[:16]
    with tank.Client(url) as c:
        c.create_topic(topic, 1)
        if mode == "blocking":
            with c.create_producer(topic) as p:
                for _ in range(n):
                    p.send_async(value, partition=0)
                p.flush()
            return

    async def main() -> None:
        async with atank.Client(url) as ac:
            p = await ac.create_producer(topic)
            for start in range(0, n, WINDOW):
                k = min(WINDOW, n - start)
                if mode == "gather":
                    await asyncio.gather(*(p.send(value, partition=0) for _ in range(k)))
                elif mode == "many":
                    lists = [[value] * LIST for _ in range(k // LIST)]
                    await asyncio.gather(*(p.send_many(v, partition=0) for v in lists))
                else:
                    for f in [p.send(value, partition=0) for _ in range(k)]:
                        await f
            await p.flush()
            await p.close()

    asyncio.run(main())


def run_pravega(url: str, mode: str, n: int) -> None:
    from streamwire import pravega
    from streamwire.aio import pravega as apravega

    value = b"x" * 100
    stream = "lc" + uuid.uuid4().hex[:16]
    with pravega.Client(url) as c:
        c.create_scope("lanecost")
        c.create_stream("lanecost", stream)
        if mode == "blocking":
            with c.create_writer("lanecost", stream) as w:
                for _ in range(n):
                    w.write_async(value)
                w.flush()
            return

    async def main() -> None:
        async with apravega.Client(url) as ac:
            w = await ac.create_writer("lanecost", stream)
            for start in range(0, n, WINDOW):
                k = min(WINDOW, n - start)
                if mode == "gather":
                    await asyncio.gather(*(w.write(value) for _ in range(k)))
                elif mode == "many":
                    lists = [[value] * LIST for _ in range(k // LIST)]
                    await asyncio.gather(*(w.write_many(v) for v in lists))
                else:
                    for f in [w.write(value) for _ in range(k)]:
                        await f
            await w.flush()
            await w.close()

    asyncio.run(main())


def instructions(side: str, proto: str, url: str, mode: str, n: int) -> int:
    os.environ["PYTHONPATH"] = side
    with tempfile.TemporaryDirectory() as d:
        return callgrind.instructions(__file__, [proto, url, mode, str(n)], Path(d) / "cg.out")


def measure(proto: str, url: str, a: str, b: str, n: int) -> None:
    print(f"{proto}: instructions per write, {n:,} writes (A={a}, B={b})", flush=True)
    for mode in MODES:
        per = {}
        for name, side in (("A", a), ("B", b)):
            base = instructions(side, proto, url, mode, 0)
            full = instructions(side, proto, url, mode, n)
            per[name] = (full - base) / n
        print(
            f"  {mode:>9}: A {per['A']:>8,.0f}  B {per['B']:>8,.0f}  B/A {per['B'] / per['A']:.3f}",
            flush=True,
        )


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        proto, url, mode, n = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
        (run_tank if proto == "tank" else run_pravega)(url, mode, n)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--proto", choices=("tank", "pravega", "both"), default="both")
    ap.add_argument("-n", type=int, default=20_000)
    args = ap.parse_args()
    a, b = str(Path(args.a).resolve()), str(Path(args.b).resolve())
    if args.proto in ("tank", "both"):
        from tests.peers.tank import TankBroker

        broker = TankBroker(binary=os.environ.get("STREAMWIRE_TANK_BIN")).start()
        try:
            measure("tank", broker.url, a, b, args.n)
        finally:
            broker.stop()
    if args.proto in ("pravega", "both"):
        from tests.peers.pravega import PravegaStandalone

        server = PravegaStandalone().start()
        try:
            measure("pravega", server.controller_url, a, b, args.n)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
