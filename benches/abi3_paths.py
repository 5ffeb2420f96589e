"""Builds of the extension side by side on the paths the abi3 (limited API) builds change.

The cp39-abi3 build reads buffers through ``memoryview.tobytes()`` and strs through an encoded
copy (rust/streamwire-python/src/common/bytes_like.rs), and PyO3 under the limited API takes
method arguments as a tuple and dict instead of the vectorcall convention. This measures both
on the hot paths, each build in its own process, the build order rotating per round, on one
pulsar-lite (the CPU rows include setting the workload up: the chunk, the backlog):

    .venv/bin/python benches/abi3_paths.py --ab /tmp/before /tmp/after [...] [--rounds 3]

Each directory (the first is the reference) holds a ``streamwire`` package (and its
``_native`` module) to put first on ``PYTHONPATH``. Without ``--ab`` it measures the
importable build once (``--url``: a running broker instead of a fresh pulsar-lite). Rows:
msg/s (higher is better) and the client process's CPU ns per message (all its threads; lower
is better), medians of the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
N = 200_000
CHUNK = 10_000
SIZE = 100


def fresh() -> str:
    return f"persistent://public/default/abi3-{uuid.uuid4().hex[:10]}"


def send_many(url: str, make: Callable[[], Any]) -> float:
    import streamwire

    chunk = make()
    with streamwire.Client(url) as c, c.create_producer(fresh()) as p:
        t0 = time.perf_counter()
        for _ in range(N // CHUNK):
            p.send_many(chunk)
        return N / (time.perf_counter() - t0)


def send_async(url: str) -> float:
    import streamwire

    payload = b"x" * SIZE
    with streamwire.Client(url) as c, c.create_producer(fresh()) as p:
        t0 = time.perf_counter()
        for _ in range(N):
            p.send_async(payload)
        p.flush()
        return N / (time.perf_counter() - t0)


def backlog(url: str) -> str:
    import streamwire

    topic = fresh()
    with streamwire.Client(url) as c:
        c.subscribe(topic, "s", initial_position="earliest").close()
        with c.create_producer(topic) as p:
            for _ in range(N // CHUNK):
                p.send_many([b"x" * SIZE] * CHUNK)
    return topic


def receive(url: str, how: str) -> float:
    import streamwire

    topic = backlog(url)
    got = 0
    with streamwire.Client(url) as c, c.subscribe(topic, "s", receiver_queue_size=CHUNK) as k:
        t0 = time.perf_counter()
        while got < N:
            if how == "one":
                m = k.receive(timeout=10.0)
                k.acknowledge(m)
                got += 1
            elif how == "many":
                ms = k.receive_many(1000, timeout=5.0)
                k.acknowledge(ms)
                got += len(ms)
            else:
                rb = k.receive_arrow(1000, timeout=5.0, columns=["value", "message_id"])
                got += rb.num_rows
                if rb.num_rows:
                    last = rb.column("message_id")[-1].as_py()
                    k.acknowledge_cumulative(streamwire.MessageId.deserialize(last))
        return N / (time.perf_counter() - t0)


def workloads() -> dict[str, Callable[[str], float]]:
    import pyarrow as pa

    v = b"x" * SIZE
    s = "x" * SIZE
    return {
        "send_many bytes list": lambda u: send_many(u, lambda: [v] * CHUNK),
        "send_many pyarrow binary": lambda u: send_many(
            u, lambda: pa.array([v] * CHUNK, type=pa.binary())
        ),
        "send_many pyarrow string": lambda u: send_many(
            u, lambda: pa.array([s] * CHUNK, type=pa.string())
        ),
        "send_many str list": lambda u: send_many(u, lambda: [s] * CHUNK),
        "send_many bytearray list": lambda u: send_many(
            u, lambda: [bytearray(v) for _ in range(CHUNK)]
        ),
        "send_many memoryview list": lambda u: send_many(
            u, lambda: [memoryview(v) for _ in range(CHUNK)]
        ),
        "send_async 100 B": send_async,
        "receive+ack per message": lambda u: receive(u, "one"),
        "receive_many(1000)+ack": lambda u: receive(u, "many"),
        "receive_arrow(1000)": lambda u: receive(u, "arrow"),
    }


def measure(url: str) -> dict[str, float]:
    """msg/s of each workload and, as ``<name> cpu``, the process's CPU ns per message (all
    threads: the engine's too), which a loaded machine disturbs less than the wall clock."""
    out: dict[str, float] = {}
    for name, fn in workloads().items():
        c0 = time.process_time()
        out[name] = fn(url)
        out[f"{name} cpu"] = (time.process_time() - c0) * 1e9 / N
    return out


def child(build: Path, url: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(build))
    code = (
        "import json, sys; sys.path.insert(1, sys.argv[1]);"
        "import benches.abi3_paths as b, streamwire._native as n;"
        "print(n.__file__, file=sys.stderr);"
        "print(json.dumps(b.measure(sys.argv[2])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), url],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
        timeout=900,
    )
    print(f"  {build}: {out.stderr.strip().splitlines()[-1]}", flush=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ab", nargs="+", type=Path, metavar="BUILD", help="first is the reference")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--url")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from tests.peers.lite import PulsarLite

    with PulsarLite() as lite:
        url = args.url or lite.service_url
        if not args.ab:
            for name, value in measure(url).items():
                print(f"{name:<32} {value:>12,.0f}")
            return 0
        builds: list[Path] = args.ab
        runs: dict[Path, list[dict[str, float]]] = {b: [] for b in builds}
        for r in range(args.rounds):
            # Rotate the order each round so no build always runs first (or last).
            k = r % len(builds)
            for build in builds[k:] + builds[:k]:
                runs[build].append(child(build, url))
        print(f"\nmedians of {args.rounds} rounds (build order rotates per round)")
        for i, b in enumerate(builds):
            print(f"  [{i}] {b}")
        head = "".join(f"{'[' + str(i) + ']':>12}" for i in range(len(builds)))
        ratios = "".join(f"{'[' + str(i) + ']/[0]':>10}" for i in range(1, len(builds)))
        print(f"{'workload':<32} {'unit':<10} {head}{ratios}")
        rows = {}
        for name in runs[builds[0]][0]:
            med = [statistics.median(x[name] for x in runs[b]) for b in builds]
            rows[name] = {str(b): m for b, m in zip(builds, med)}
            unit = "CPU ns/msg" if name.endswith(" cpu") else "msg/s"
            cells = "".join(f"{m:>12,.0f}" for m in med)
            rel = "".join(f"{m / med[0]:>10.2f}" for m in med[1:])
            print(f"{name:<32} {unit:<10} {cells}{rel}")
        print("BENCH_JSON " + json.dumps({"rounds": args.rounds, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
