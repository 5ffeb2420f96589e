"""Failover time between two clusters: ours (`streamwire.AutoClusterFailover`) against the
official client (`pulsar.AutoClusterFailover`) with the same settings, in turn, in one run.

Each round, for each side: two fresh pulsar-lite brokers (the primary and the standby); a
client configured for failover, a producer on a fresh topic, a few sends on the primary; then
the primary is SIGKILLed and one more message is sent. Failover time = from the kill to that
send's acknowledgement (by the standby). The standby's copy of the topic is then checked to
hold that message.

    python benches/cluster_failover.py [--rounds 3] [--check-interval 0.5] [--threshold 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar
import streamwire

from tests.cluster.helpers import read_all
from tests.peers.lite import PulsarLite


def ours(primary: str, standby: str, topic: str, interval: float, threshold: int) -> Any:
    client = streamwire.Client(
        streamwire.AutoClusterFailover(
            primary, [standby], check_interval=interval, failover_threshold=threshold
        ),
        operation_timeout=30,
    )
    producer = client.create_producer(topic, send_timeout=60)
    return client, producer.send


def theirs(primary: str, standby: str, topic: str, interval: float, threshold: int) -> Any:
    client = pulsar.Client(
        pulsar.AutoClusterFailover(
            pulsar.ServiceInfo(primary),
            [pulsar.ServiceInfo(standby)],
            check_interval_ms=int(interval * 1000),
            failover_threshold=threshold,
        ),
        operation_timeout_seconds=30,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    producer = client.create_producer(topic, send_timeout_millis=60_000)
    return client, producer.send


def one_round(side: Any, interval: float, threshold: int) -> float:
    topic = f"persistent://public/default/failover-bench-{uuid.uuid4().hex[:8]}"
    with PulsarLite() as a, PulsarLite() as b:
        try:
            client, send = side(a.service_url, b.service_url, topic, interval, threshold)
            try:
                for i in range(10):
                    send(b"before-%d" % i)
                a.kill()
                t0 = time.monotonic()
                send(b"after")
                took = time.monotonic() - t0
            finally:
                client.close()
            assert read_all(b.service_url, topic) == [b"after"], "the standby lacks the message"
            return took
        finally:
            a.close()
            b.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--check-interval", type=float, default=0.5)
    ap.add_argument("--threshold", type=int, default=1)
    args = ap.parse_args()
    results: dict[str, list[float]] = {"ours": [], "official": []}
    for r in range(args.rounds):
        order = [("ours", ours), ("official", theirs)]
        if r % 2:
            order.reverse()
        for name, side in order:
            results[name].append(one_round(side, args.check_interval, args.threshold))
    print(
        f"failover time, s (check_interval {args.check_interval} s, failover_threshold "
        f"{args.threshold}, {args.rounds} rounds, A/B order alternating)"
    )
    for name, xs in results.items():
        print(
            f"  {name:<9} median {statistics.median(xs):.3f}  "
            f"min {min(xs):.3f}  max {max(xs):.3f}  ({', '.join(f'{x:.3f}' for x in xs)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
