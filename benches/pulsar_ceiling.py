"""Bulk paths against the broker's own ceiling, same broker, same run (issue: performance round
two). The ceiling is `benches/src/bin/pulsar_ceiling.rs` (pre-built batches written raw and
pipelined; a raw consumer with permits granted far ahead and one cumulative ack per grant).

    .venv/bin/python benches/pulsar_ceiling.py [--rounds 3] [--messages 1000000]

Rows (100 B and 1 KiB messages, medians of the rounds, each round on a fresh topic):
- ingest: ceiling; ours ``send_many`` of 10,000-element lists and of a pyarrow array; the
  official client's ``send_async`` (batching on, no-op callback) for reference;
- dispatch of a batched backlog: ceiling; ours ``receive_many(10_000)`` + list acknowledge;
  ours ``receive_arrow(10_000)`` + cumulative acknowledge (``receiver_queue_size=10_000``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import streamwire  # noqa: E402

from tests.peers.lite import PulsarLite  # noqa: E402

BIN = ROOT / "target" / "release" / "pulsar_ceiling"
CHUNK = 10_000


def build_ceiling() -> None:
    subprocess.run(
        [
            "cargo",
            "build",
            "--release",
            "-q",
            "-p",
            "streamwire-benches",
            "--bin",
            "pulsar_ceiling",
        ],
        cwd=ROOT,
        check=True,
    )


def ceiling(mode: str, addr: str, topic: str, n: int, size: int = 100) -> float:
    out = subprocess.run(
        [str(BIN), mode, addr, topic, str(n), str(size), "1000"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    return float(json.loads(out)["msg_per_s"])


def fresh() -> str:
    return f"persistent://public/default/ceil-{uuid.uuid4().hex[:10]}"


def ours_send_many(url: str, n: int, size: int, arrow: bool) -> float:
    chunk: object = [b"x" * size] * CHUNK
    if arrow:
        chunk = pa.array(chunk, type=pa.binary())
    with streamwire.Client(url) as c, c.create_producer(fresh()) as p:
        t0 = time.perf_counter()
        for _ in range(n // CHUNK):
            p.send_many(chunk)  # type: ignore[arg-type]
        return n / (time.perf_counter() - t0)


def official_send_async(url: str, n: int, size: int) -> float:
    import pulsar

    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        p = client.create_producer(
            fresh(),
            batching_enabled=True,
            batching_max_publish_delay_ms=1,
            max_pending_messages=10_000,
            block_if_queue_full=True,
        )
        payload = b"x" * size

        def noop(*_: object) -> None:
            return None

        t0 = time.perf_counter()
        for _ in range(n):
            p.send_async(payload, noop)
        p.flush()
        return n / (time.perf_counter() - t0)
    finally:
        client.close()


def backlog(url: str, addr: str, n: int, size: int) -> str:
    topic = fresh()
    ceiling("produce", addr, topic, n, size)
    return topic


def drain(url: str, topic: str, n: int, take: Callable[[Any], int]) -> float:
    """msg/s of a fresh subscription from the earliest message, ``take`` doing one call."""
    with streamwire.Client(url) as c:
        consumer = c.subscribe(
            topic,
            f"s-{uuid.uuid4().hex[:6]}",
            initial_position="earliest",
            receiver_queue_size=CHUNK,
        )
        got = 0
        t0 = time.perf_counter()
        while got < n:
            got += take(consumer)
        dt = time.perf_counter() - t0
        consumer.close()
        return got / dt


def take_many(consumer: Any) -> int:
    msgs = consumer.receive_many(CHUNK, timeout=30)
    consumer.acknowledge(msgs)
    return len(msgs)


def take_arrow(consumer: Any) -> int:
    rb = consumer.receive_arrow(CHUNK, timeout=30, columns=["value", "message_id"])
    if rb.num_rows:
        consumer.acknowledge_cumulative(
            streamwire.MessageId.deserialize(rb.column("message_id")[-1].as_py())
        )
    return int(rb.num_rows)


def median(f: Callable[[], float], rounds: int) -> float:
    return statistics.median(f() for _ in range(rounds))


def ingest_rows(url: str, addr: str, n: int, size: int, r: int) -> list[tuple[str, float, float]]:
    ceil = median(lambda: ceiling("produce", addr, fresh(), n, size), r)
    rows = [(f"ingest {size} B: raw ceiling", ceil, ceil)]
    for name, f in [
        ("ours send_many(list)", lambda: ours_send_many(url, n, size, False)),
        ("ours send_many(pyarrow)", lambda: ours_send_many(url, n, size, True)),
        ("official send_async", lambda: official_send_async(url, n // 4, size)),
    ]:
        rows.append((f"ingest {size} B: {name}", median(f, r), ceil))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=1_000_000)
    args = ap.parse_args()
    build_ceiling()
    r = args.rounds
    rows: list[tuple[str, float, float]] = []
    with PulsarLite() as lite:
        url = lite.service_url
        addr = url.split("//", 1)[1]
        ceiling("produce", addr, fresh(), 100_000)  # warm the broker once
        for size in (100, 1024):
            n = args.messages if size == 100 else args.messages // 5
            rows += ingest_rows(url, addr, n, size, r)
        n = args.messages
        topics = [backlog(url, addr, n, 100) for _ in range(3 * r)]
        it = iter(topics)
        ceil = median(lambda: ceiling("dispatch", addr, next(it), n), r)
        rows.append(("dispatch 100 B: raw ceiling (cumulative ack per 20k)", ceil, ceil))
        rows.append(
            (
                "dispatch 100 B: ours receive_many + list ack",
                median(lambda: drain(url, next(it), n, take_many), r),
                ceil,
            )
        )
        rows.append(
            (
                "dispatch 100 B: ours receive_arrow + cumulative ack",
                median(lambda: drain(url, next(it), n, take_arrow), r),
                ceil,
            )
        )
    print(f"\npulsar-lite, medians of {r} rounds\n")
    print("| workload | msg/s | % of ceiling |\n|---|---:|---:|")
    for name, rate, ceil in rows:
        print(f"| {name} | {rate:,.0f} | {100 * rate / ceil:.0f}% |")


if __name__ == "__main__":
    main()
