"""Memory-flat consuming: N messages through a 1000-message receiver queue.

Against an embedded pulsar-lite (tests/peers/lite.py): a child process writes the backlog
first, so producer memory is not counted here (unbatched by default: pulsar-lite counts flow
permits per entry, so with batches it pushes far more than the queue holds); then this
process receives it all (receive_many of 1000, acknowledging every batch), samples its RSS
(/proc/self/status VmRSS) and prints the growth over the baseline taken after the first 10%;
the bar is < 50 MB. Usage (from the repository root):

    .venv/bin/python benches/rss_consume.py [--count 10000000] [--size 100] [--batched]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import streamwire
from rss_produce import MB, Sampler, report, rss_bytes

from tests.peers.lite import PulsarLite


def fill(url: str, topic: str, n: int, size: int, batched: bool) -> None:
    """Write the backlog (run in a child process, so its memory is not counted here)."""
    with streamwire.Client(url, memory_limit=64 * MB) as client:
        p = client.create_producer(topic, batching=batched, batching_max_delay=0.005)
        chunk = [b"x" * size] * 10_000
        for _ in range(0, n, len(chunk)):
            p.send_many(chunk)
        p.flush()
        p.close()
    print(f"filler: {n:,} x {size} B written; filler peak RSS {peak_rss() / MB:.1f} MB")


def peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=10_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--limit-mb", type=int, default=50)
    ap.add_argument(
        "--batched",
        action="store_true",
        help="write batches (pulsar-lite then ignores the 1000-message queue: it counts flow "
        "permits per entry, so each permit brings a whole batch)",
    )
    ap.add_argument("--fill", nargs=2, metavar=("URL", "TOPIC"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    n = (args.count + 9_999) // 10_000 * 10_000
    if args.fill:
        fill(args.fill[0], args.fill[1], n, args.size, args.batched)
        return 0
    broker = PulsarLite(log_level="warn")
    broker.start()
    try:
        topic = f"persistent://public/default/rss-consume-{uuid.uuid4().hex[:8]}"
        with streamwire.Client(broker.service_url) as client:
            # Subscribe first so the backlog is kept for this subscription.
            client.subscribe(topic, "rss", initial_position="earliest").close()
        t = time.monotonic()
        cmd = [sys.executable, __file__, "--count", str(n), "--size", str(args.size)]
        if args.batched:
            cmd.append("--batched")
        subprocess.run([*cmd, "--fill", broker.service_url, topic], check=True)
        print(f"backlog written in {time.monotonic() - t:.1f}s")
        with streamwire.Client(broker.service_url) as client:
            c = client.subscribe(topic, "rss", receiver_queue_size=1000)
            got = 0
            warm = max(1, n // 10)
            base = 0
            sampler = None
            t0 = time.monotonic()
            while got < n:
                msgs = c.receive_many(1000, timeout=60)
                assert msgs, f"received {got} of {n}"
                got += len(msgs)
                c.acknowledge(msgs)
                if sampler is None and got >= warm:
                    base = rss_bytes()
                    sampler = Sampler()
                    t0 = time.monotonic()
            secs = time.monotonic() - t0
            samples = sampler.stop() if sampler else [(0.0, rss_bytes())]
            growth = report("receive_many+ack", got - warm, secs, base, samples)
            c.close()
    finally:
        broker.close()
    ok = growth < args.limit_mb * MB
    print(f"{'PASS' if ok else 'FAIL'}: growth {growth / MB:.1f} MB (bar {args.limit_mb} MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
