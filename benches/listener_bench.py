"""Message listeners: ours vs the official client's, and ours vs a plain receive loop, in one
run against one pulsar-lite.

N messages of 100 B are produced once (batched); each measurement is a new subscription
reading them all from the earliest position, every message acknowledged: the rate is N over
the time from subscribe to the N-th distinct message. Rows, alternating within each round:

- ours ``message_listener`` (default one listener thread);
- official ``message_listener`` (``pulsar-client``, default one listener thread);
- ours ``receive()`` + ``acknowledge`` loop on the calling thread (the per-message cost a
  listener should stay close to);
- official ``receive()`` + ``acknowledge`` loop.

Besides the rate, each row reports the client process's CPU time per message (all its threads,
``getrusage``; the broker is another process), which a busy shared machine disturbs less than
wall time. Both listeners do the same work per message (mark the payload's index seen, acknowledge);
pulsar-lite sometimes dispatches an entry twice to a fast consumer, so a run counts distinct
messages and prints the duplicates it saw.

Usage: .venv/bin/python benches/listener_bench.py [N] [--rounds R]   (defaults 200000, 3)
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar
import streamwire

SIZE = 100


class Tally:
    """The per-message work both listeners do: mark the index seen, count distinct ones."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.seen = bytearray(n)
        self.distinct = 0
        self.calls = 0
        self.done = threading.Event()

    def mark(self, payload: bytes) -> None:
        self.calls += 1
        i = int.from_bytes(payload[:4], "big")
        if not self.seen[i]:
            self.seen[i] = 1
            self.distinct += 1
            if self.distinct == self.n:
                self.done.set()


def cpu_seconds() -> float:
    """This process's CPU time so far, every thread."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def produce(url: str, topic: str, n: int) -> None:
    pad = b"x" * (SIZE - 4)
    with streamwire.Client(url) as client, client.create_producer(topic) as producer:
        for start in range(0, n, 10_000):
            producer.send_many(
                [i.to_bytes(4, "big") + pad for i in range(start, min(n, start + 10_000))]
            )
        producer.flush()


def ours_listener(url: str, topic: str, n: int) -> tuple[float, int]:
    tally = Tally(n)

    def listener(consumer: streamwire.Consumer, msg: streamwire.Message) -> None:
        tally.mark(msg.data())
        consumer.acknowledge(msg)

    with streamwire.Client(url) as client:
        t0 = time.perf_counter()
        consumer = client.subscribe(
            topic, uuid.uuid4().hex, initial_position="earliest", message_listener=listener
        )
        if not tally.done.wait(300):
            raise RuntimeError(f"ours: {tally.distinct} of {n} in 300 s")
        took = time.perf_counter() - t0
        consumer.close()
    return n / took, tally.calls - n


def theirs_listener(url: str, topic: str, n: int) -> tuple[float, int]:
    tally = Tally(n)

    def listener(consumer: Any, msg: Any) -> None:
        tally.mark(msg.data())
        consumer.acknowledge(msg)

    client = pulsar.Client(url)
    try:
        t0 = time.perf_counter()
        consumer = client.subscribe(
            topic,
            uuid.uuid4().hex,
            initial_position=pulsar.InitialPosition.Earliest,
            message_listener=listener,
        )
        if not tally.done.wait(300):
            raise RuntimeError(f"official: {tally.distinct} of {n} in 300 s")
        took = time.perf_counter() - t0
        consumer.close()
    finally:
        client.close()
    return n / took, tally.calls - n


def ours_receive(url: str, topic: str, n: int) -> tuple[float, int]:
    tally = Tally(n)
    with streamwire.Client(url) as client:
        t0 = time.perf_counter()
        consumer = client.subscribe(topic, uuid.uuid4().hex, initial_position="earliest")
        while tally.distinct < n:
            msg = consumer.receive(timeout=60)
            tally.mark(msg.data())
            consumer.acknowledge(msg)
        took = time.perf_counter() - t0
        consumer.close()
    return n / took, tally.calls - n


def theirs_receive(url: str, topic: str, n: int) -> tuple[float, int]:
    tally = Tally(n)
    client = pulsar.Client(url)
    try:
        t0 = time.perf_counter()
        consumer = client.subscribe(
            topic, uuid.uuid4().hex, initial_position=pulsar.InitialPosition.Earliest
        )
        while tally.distinct < n:
            msg = consumer.receive(timeout_millis=60_000)
            tally.mark(msg.data())
            consumer.acknowledge(msg)
        took = time.perf_counter() - t0
        consumer.close()
    finally:
        client.close()
    return n / took, tally.calls - n


ROWS: list[tuple[str, Callable[[str, str, int], tuple[float, int]]]] = [
    ("ours message_listener", ours_listener),
    ("official message_listener", theirs_listener),
    ("ours receive loop", ours_receive),
    ("official receive loop", theirs_receive),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("n", nargs="?", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    n, rounds = opts.n, opts.rounds
    from tests.peers.lite import PulsarLite

    broker = PulsarLite().start()
    try:
        url = broker.service_url
        topic = f"persistent://public/default/listen-{uuid.uuid4().hex}"
        produce(url, topic, n)
        rates: dict[str, list[float]] = {name: [] for name, _ in ROWS}
        cpus: dict[str, list[float]] = {name: [] for name, _ in ROWS}
        for r in range(rounds):
            for name, run in ROWS:
                before = cpu_seconds()
                rate, dups = run(url, topic, n)
                us = (cpu_seconds() - before) / n * 1e6
                rates[name].append(rate)
                cpus[name].append(us)
                print(
                    f"round {r + 1}: {name}: {rate:,.0f} msg/s, {us:.2f} us CPU/msg "
                    f"({dups} duplicates)",
                    flush=True,
                )
        med = {name: statistics.median(v) for name, v in rates.items()}
        cpu = {name: statistics.median(v) for name, v in cpus.items()}
        print(f"\nmedians of {rounds} rounds, {n:,} x {SIZE} B, pulsar-lite:")
        print("| workload | unit | streamwire | official | ours / theirs |")
        print("|---|---|---:|---:|---:|")
        for what in ("message_listener", "receive loop"):
            ours, theirs = med[f"ours {what}"], med[f"official {what}"]
            print(
                f"| {what} + acknowledge | msg/s | {ours:,.0f} | {theirs:,.0f} | "
                f"{ours / theirs:.2f}x |"
            )
            ours, theirs = cpu[f"ours {what}"], cpu[f"official {what}"]
            print(
                f"| {what} + acknowledge | client CPU us/msg (lower is better) | {ours:.2f} | "
                f"{theirs:.2f} | {ours / theirs:.2f} |"
            )
        print(
            f"ours, listener vs receive loop: rate "
            f"{med['ours message_listener'] / med['ours receive loop']:.2f}x, CPU/msg "
            f"{cpu['ours message_listener'] / cpu['ours receive loop']:.2f}x"
        )
    finally:
        broker.close()


if __name__ == "__main__":
    main()
