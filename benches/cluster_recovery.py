"""Recovery of a producer after a topic unload and after a SIGKILL of the owning broker, on the
two-broker cluster (tests/peers/apache_cluster.py), ours and the official client side by side,
through the Pulsar proxy and directly.

Each run: a fresh topic owned by broker 1, ``send_async`` paced at ~10k msg/s; the disruption
(unload, or SIGKILL of broker 1) happens inline after a quarter of the messages; sending goes
on until a message sent after it has been acknowledged. Recovery = time from the end of the
disruption (the unload call returned / the broker was reaped) to the first acknowledgement of
a message sent after it. Then every acknowledged message is checked to be stored exactly once.
After a kill the broker is restarted and the namespace rebalanced before the next run.

    python benches/cluster_recovery.py [--rounds 1] [--via proxy,direct]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar

from tests.cluster.helpers import (
    Disruption,
    Outcomes,
    produce_with_disruption,
    read_all,
    recovery_seconds,
    topic_owned_by,
)
from tests.peers.apache_cluster import SESSION_TIMEOUT_MS, ApacheCluster

N = 20_000
PACE = (200, 0.02)


def official_produce(url: str, topic: str, disrupt: Any, *, n: int) -> tuple[Outcomes, Disruption]:
    """:func:`tests.cluster.helpers.produce_with_disruption` with the official client."""
    out = Outcomes()
    dis = Disruption()
    client = pulsar.Client(url, operation_timeout_seconds=30, connection_timeout_ms=5000)
    lock = threading.Lock()
    try:
        producer = client.create_producer(
            topic,
            block_if_queue_full=True,
            send_timeout_millis=120_000,
            batching_max_publish_delay_ms=5,
            max_pending_messages=10_000,
        )

        def callback(i: int) -> Any:
            def done(res: Any, _mid: Any) -> None:
                with lock:
                    if res == pulsar.Result.Ok:
                        out.acked_at[i] = time.monotonic()
                    else:
                        out.failed[i] = str(res)

            return done

        i = 0
        recovered_at: float | None = None
        start = time.monotonic()
        while True:
            if i == n // 4:
                dis.sent_before = i
                dis.started_at = time.monotonic()
                disrupt()
                dis.done_at = time.monotonic()
            if i >= n:
                if recovered_at is None and recovery_seconds(out, dis) is not None:
                    recovered_at = time.monotonic()
                if recovered_at is not None and time.monotonic() - recovered_at > 1.0:
                    break
                if time.monotonic() - start > 150:
                    break
            payload = f"m-{i:07d}".encode()
            out.payloads.append(payload)
            producer.send_async(payload, callback(i))
            i += 1
            if i % PACE[0] == 0:
                time.sleep(PACE[1])
        producer.flush()
        producer.close()
    finally:
        client.close()
    return out, dis


def one_run(cluster: ApacheCluster, client: str, via: str, fault: str) -> dict[str, Any]:
    topic = topic_owned_by(cluster, 1, f"bench-{client}-{fault}")
    url = cluster.proxy_url
    if via == "direct":
        url = "pulsar://" + ",".join(f"127.0.0.1:{b.internal_port}" for b in cluster.brokers)

    def disrupt() -> None:
        if fault == "unload":
            cluster.unload(topic)
        else:
            cluster.kill_broker(1)

    if client == "ours":
        out, dis = produce_with_disruption(
            url, topic, disrupt, n=N, disrupt_at=N // 4, pace=PACE, until_recovered=True
        )
    else:
        out, dis = official_produce(url, topic, disrupt, n=N)
    recovery = recovery_seconds(out, dis)
    if fault == "kill":
        cluster.restart_broker(1)
        cluster.rebalance()
    stored = read_all(cluster.service_url, topic)
    acked = set(out.acked())
    return {
        "client": client,
        "via": via,
        "fault": fault,
        "recovery_s": None if recovery is None else round(recovery, 3),
        "sent": len(out.payloads),
        "acked": len(acked),
        "failed": len(out.failed),
        "lost": len(acked - set(stored)),
        "duplicates": len(stored) - len(set(stored)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--via", default="proxy,direct")
    parser.add_argument("--faults", default="unload,kill")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    with ApacheCluster() as cluster:
        print(
            f"cluster up in {cluster.last_start_seconds:.1f}s; session timeout "
            f"{SESSION_TIMEOUT_MS / 1000:.0f}s",
            flush=True,
        )
        for round_no in range(args.rounds):
            # Who goes first alternates by round: a broker that has just moved a bundle may
            # answer the second client of a pair faster or slower.
            order = ("ours", "official") if round_no % 2 == 0 else ("official", "ours")
            for via in args.via.split(","):
                for fault in args.faults.split(","):
                    for client in order:
                        row = one_run(cluster, client, via, fault)
                        print(row, flush=True)
                        rows.append(row)
    print("\n| client | via | fault | recovery (s) | sent | acked | lost | duplicates |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['client']} | {r['via']} | {r['fault']} | {r['recovery_s']} | {r['sent']} "
            f"| {r['acked']} | {r['lost']} | {r['duplicates']} |"
        )
    print("\n| via | fault | ours median (s) | official median (s) | rounds |")
    print("|---|---|---|---|---|")
    for via in args.via.split(","):
        for fault in args.faults.split(","):
            med = {}
            for client in ("ours", "official"):
                got = [
                    r["recovery_s"]
                    for r in rows
                    if (r["client"], r["via"], r["fault"]) == (client, via, fault)
                    and r["recovery_s"] is not None
                ]
                med[client] = statistics.median(got) if got else None
            ours, theirs = (
                "-" if med[c] is None else f"{med[c]:.3f}" for c in ("ours", "official")
            )
            print(f"| {via} | {fault} | {ours} | {theirs} | {args.rounds} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
