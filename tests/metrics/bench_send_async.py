"""Hot-path cost of the metrics: N ``send_async`` + ``flush`` on pulsar-lite, best of R runs.

Not a test (pytest does not collect it). Run it with this tree's venv and with a build
without metrics (e.g. main's venv) back to back, on the same machine, and compare:

    .venv/bin/python tests/metrics/bench_send_async.py [N] [R]
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import streamwire

from tests.peers.lite import PulsarLite


def once(url: str, n: int, payload: bytes) -> float:
    topic = f"persistent://public/default/bench-{uuid.uuid4().hex}"
    with streamwire.Client(url) as c, c.create_producer(topic) as p:
        t0 = time.perf_counter()
        for _ in range(n):
            p.send_async(payload)
        p.flush()
        return time.perf_counter() - t0


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    payload = b"x" * 100
    broker = PulsarLite()
    broker.start()
    try:
        once(broker.service_url, 10_000, payload)  # warm-up
        times = sorted(once(broker.service_url, n, payload) for _ in range(runs))
    finally:
        broker.close()
    has = hasattr(streamwire.Producer, "metrics")
    print(
        f"metrics={'yes' if has else 'no'} n={n} best={n / times[0]:,.0f} msg/s "
        f"median={n / times[len(times) // 2]:,.0f} msg/s"
    )


if __name__ == "__main__":
    main()
