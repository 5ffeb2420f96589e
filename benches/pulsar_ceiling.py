"""Bulk paths against the broker's own ceiling, same broker, same run (issue: performance round
two). The ceiling is `benches/src/bin/pulsar_ceiling.rs` (pre-built batches written raw and
pipelined; a raw consumer with permits granted far ahead and one cumulative ack per grant).

    .venv/bin/python benches/pulsar_ceiling.py [--rounds 3] [--messages 1000000] [--ingest-only]

Rows (100 B and 1 KiB messages, medians of the rounds, each round on a fresh topic):
- ingest: ceiling (``produce-window``: pre-built frames pipelined, at most 10,000 messages
  written and not yet acknowledged, our producers' default ``max_pending_messages``); the same
  frames 10,000 messages per call, each call's receipts awaited (``produce-calls``: the most a
  synchronous 10,000-message call can reach); the same frames in one unbounded burst
  (``produce``, the ceiling of earlier runs, which made the broker itself slower); ours
  ``send_many`` of 10,000-element lists and of a pyarrow array, with ``ids=True`` (the default:
  the bulk path, one buffer per call and no per-message item, then the list of ids made from
  the settled ranges) and with ``ids=False`` (the same without any result object per message);
  the official client's
  ``send_async`` (batching on, no-op callback) for reference. One round runs every ingest
  workload once, in that order, so each round's share is taken against the ceiling of its own
  round (the broker's RocksDB store and the machine's other load drift over a run: measured
  back to back, the ceiling's rounds and ours' once saw different brokers); the share shown is
  the median of the per-round shares. Each size starts with one unmeasured round (warm-up).
  The broker's CPU per message (``/proc``, user + system) is printed beside each ingest row.
- dispatch of a batched backlog: ceiling; ours ``receive_many(10_000)`` + list acknowledge;
  ours ``receive_arrow(10_000)`` + cumulative acknowledge (``receiver_queue_size=10_000``).
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
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import streamwire  # noqa: E402

from benches.bench_bin import release_bin  # noqa: E402
from tests.peers.lite import PulsarLite  # noqa: E402

BIN = ROOT / "target" / "release" / "pulsar_ceiling"
CHUNK = 10_000
# The reference: pre-built frames pipelined with at most 10,000 messages in flight (what our
# producers' default `max_pending_messages` allows). Not one unbounded burst: written all at
# once, 100 MB made pulsar-lite spend ~2.5x the CPU per message (240 vs 90 ns) and ingest at
# 3.2-3.9M msg/s, against 8.0-9.1M with the window, and that burst is what swung 4.5M-13.1M.
CEIL = "raw ceiling (<= 10,000 in flight)"


def build_ceiling() -> None:
    release_bin("pulsar_ceiling")


def ceiling(mode: str, addr: str, topic: str, n: int, size: int = 100) -> float:
    out = subprocess.run(
        [str(BIN), mode, addr, topic, str(n), str(size), "1000", str(CHUNK)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    return float(json.loads(out)["msg_per_s"])


def fresh() -> str:
    return f"persistent://public/default/ceil-{uuid.uuid4().hex[:10]}"


def ours_send_many(url: str, n: int, size: int, arrow: bool, ids: bool = True) -> float:
    chunk: object = [b"x" * size] * CHUNK
    if arrow:
        chunk = pa.array(chunk, type=pa.binary())
    with streamwire.Client(url) as c, c.create_producer(fresh()) as p:
        t0 = time.perf_counter()
        for _ in range(n // CHUNK):
            p.send_many(chunk, ids=ids)  # type: ignore[call-overload]
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ingest_rows(
    url: str, addr: str, broker_pid: int, n: int, size: int, r: int
) -> list[tuple[str, float, float]]:
    """Interleaved rounds: every workload once per round; share = median of per-round shares."""
    work: list[tuple[str, int, Callable[[int], float]]] = [
        (CEIL, n, lambda k: ceiling("produce-window", addr, fresh(), k, size)),
        (
            "raw, 10,000 per call (drained)",
            n,
            lambda k: ceiling("produce-calls", addr, fresh(), k, size),
        ),
        (
            "raw, everything in one burst",
            n,
            lambda k: ceiling("produce", addr, fresh(), k, size),
        ),
        ("ours send_many(list, ids=True)", n, lambda k: ours_send_many(url, k, size, False)),
        ("ours send_many(pyarrow, ids=True)", n, lambda k: ours_send_many(url, k, size, True)),
        (
            "ours send_many(list, ids=False)",
            n,
            lambda k: ours_send_many(url, k, size, False, ids=False),
        ),
        (
            "ours send_many(pyarrow, ids=False)",
            n,
            lambda k: ours_send_many(url, k, size, True, ids=False),
        ),
        ("official send_async", n // 4, lambda k: official_send_async(url, k, size)),
    ]
    rates: dict[str, list[float]] = {name: [] for name, _, _ in work}
    cpu: dict[str, float] = {name: 0.0 for name, _, _ in work}
    for rnd in range(r + 1):
        for name, k, f in work:
            c0 = cpu_seconds(broker_pid)
            rate = f(k)
            if rnd:  # round 0 warms the broker up and is not counted
                rates[name].append(rate)
                cpu[name] += cpu_seconds(broker_pid) - c0
        print(
            f"  {size} B round {rnd}: "
            + ", ".join(f"{name} {v[-1]:,.0f}" for name, v in rates.items() if rnd and v)
            + f" (load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    ceil = rates[CEIL]
    rows = []
    for name, k, _ in work:
        share = statistics.median(a / c for a, c in zip(rates[name], ceil))
        per_msg_ns = cpu[name] / (k * r) * 1e9
        rows.append(
            (
                f"ingest {size} B: {name} (broker {per_msg_ns:.0f} ns CPU/msg)",
                statistics.median(rates[name]),
                share,
            )
        )
    print(f"  {size} B raw ceiling, min-max of the rounds: {min(ceil):,.0f}-{max(ceil):,.0f}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--ingest-only", action="store_true", help="skip the dispatch rows")
    args = ap.parse_args()
    build_ceiling()
    r = args.rounds
    # (workload, msg/s, share of the ceiling)
    rows: list[tuple[str, float, float]] = []
    with PulsarLite() as lite:
        url = lite.service_url
        addr = url.split("//", 1)[1]
        for size in (100, 1024):
            n = args.messages if size == 100 else args.messages // 5
            rows += ingest_rows(url, addr, lite.pid, n, size, r)
        if not args.ingest_only:
            n = args.messages
            topics = [backlog(url, addr, n, 100) for _ in range(3 * r)]
            it = iter(topics)
            ceil = median(lambda: ceiling("dispatch", addr, next(it), n), r)
            rows.append(("dispatch 100 B: raw ceiling (cumulative ack per 20k)", ceil, 1.0))
            for name, take in [
                ("dispatch 100 B: ours receive_many + list ack", take_many),
                ("dispatch 100 B: ours receive_arrow + cumulative ack", take_arrow),
            ]:
                rate = median(lambda t=take: drain(url, next(it), n, t), r)
                rows.append((name, rate, rate / ceil))
    print(f"\npulsar-lite, medians of {r} rounds, load average {os.getloadavg()[0]:.1f}\n")
    print("| workload | msg/s | of the ceiling |\n|---|---:|---:|")
    for name, rate, share in rows:
        print(f"| {name} | {rate:,.0f} | {100 * share:.0f}% |")


if __name__ == "__main__":
    main()
