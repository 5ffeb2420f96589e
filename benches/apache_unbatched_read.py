#!/usr/bin/env python
"""The broker's own ceiling for draining an unbatched backlog: how fast Apache Pulsar dispatches
a topic of ~100 B messages, one BookKeeper entry each, over ledgers of 50,000 entries, to our
reader (``read_many``) and to the official client's reader (``read_next``), in turn, in one run.
It is the reference for ``benches/spark_scale.py``'s drains (every message its own entry).

    .venv/bin/python benches/apache_unbatched_read.py [--messages 300000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar
import streamwire

from tests.peers.apache import ApachePulsar


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    n_msgs = args.messages
    broker = ApachePulsar(
        extra_conf={
            "managedLedgerMaxEntriesPerLedger": "50000",
            "managedLedgerMinLedgerRolloverTimeMinutes": "0",
            "defaultRetentionTimeInMinutes": "-1",
            "defaultRetentionSizeInMB": "-1",
        }
    )
    with broker:
        topic = f"persistent://public/default/raw-{uuid.uuid4().hex[:8]}"
        with streamwire.Client(broker.service_url) as client:
            producer = client.create_producer(topic, batching=False, send_timeout=600)
            for i in range(0, n_msgs, 20_000):
                producer.send_many([b"x" * 100] * min(20_000, n_msgs - i))
            producer.flush()
            producer.close()
        for _ in range(args.rounds):
            t0, got = time.perf_counter(), 0
            with (
                streamwire.Client(broker.service_url) as client,
                client.create_reader(topic, "earliest") as reader,
            ):
                while got < n_msgs:
                    got += len(reader.read_many(10_000, timeout=10))
            print(f"ours reader read_many: {n_msgs / (time.perf_counter() - t0):,.0f} msg/s")
            t0, got = time.perf_counter(), 0
            official = pulsar.Client(broker.service_url)
            theirs = official.create_reader(topic, pulsar.MessageId.earliest)
            while got < n_msgs:
                theirs.read_next(10_000)
                got += 1
            official.close()
            print(f"official reader read_next: {n_msgs / (time.perf_counter() - t0):,.0f} msg/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
