"""1M messages through connection cuts and two broker restarts: produce, then consume twice.

    .venv/bin/python benches/faults_1m.py                        # Apache Pulsar (dedup on)
    .venv/bin/python benches/faults_1m.py --broker lite          # pulsar-lite (no dedup)
    .venv/bin/python benches/faults_1m.py --messages 200000 --cut-every 2

The broker (started here) sits behind the loopback fault proxy (``tests/peers/faultproxy.py``),
whose connections are all cut every ``--cut-every`` seconds; the broker process itself is
restarted (stopped, then started on the same ports and data) when a third and when two thirds
of the work is done. Three phases, each under the same faults:

1. produce ``--messages`` with ``send_async`` (named producer, so Apache's deduplication
   applies); every message whose future succeeded must be stored (lost = 0), and with dedup on
   none may be stored twice;
2. consume everything on a new exclusive subscription with individual acks: at-least-once,
   nothing skipped;
3. the same with cumulative acks: additionally no gap -- no message is ever received before
   every message stored ahead of it was (checked against the stored order by message id).

Afterwards the topic is read back without faults to know what is stored. Prints a report and a
``BENCH {json}`` line; exit status 1 if anything acknowledged was lost, skipped or (dedup on)
duplicated. Not part of the test suite (a full run takes minutes).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import sys
import threading
import time
import uuid
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamwire  # noqa: E402
from streamwire import OperationTimeoutError  # noqa: E402

from tests.peers.apache import ApachePulsar  # noqa: E402
from tests.peers.faultproxy import FaultProxy  # noqa: E402
from tests.peers.lite import PulsarLite  # noqa: E402

DURABLE = {"journalSyncData": "true", "brokerShutdownTimeoutMs": "60000"}


def id_key(mid: streamwire.MessageId) -> int:
    """A message id as one sortable int (ledger, entry, batch index)."""
    return (mid.ledger_id << 44) | (mid.entry_id << 16) | (mid.batch_index + 1)


class Disruptor:
    """Cuts every proxied connection every ``every`` s; restarts the broker at given progress."""

    def __init__(
        self,
        proxy: FaultProxy,
        every: float,
        restart: Callable[[], None],
        progress: Callable[[], float],
        restart_at: tuple[float, ...],
    ) -> None:
        self.proxy, self.every, self.restart = proxy, every, restart
        self.progress, self.restart_at = progress, list(restart_at)
        self.cuts = 0
        self.connections_cut = 0
        self.restarts: list[float] = []  # seconds each restart took
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="disruptor", daemon=True)

    def __enter__(self) -> Disruptor:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)

    def _run(self) -> None:
        next_cut = time.monotonic() + self.every
        while not self._stop.wait(0.05):
            try:
                if self.restart_at and self.progress() >= self.restart_at[0]:
                    self.restart_at.pop(0)
                    t0 = time.monotonic()
                    self.restart()
                    self.restarts.append(round(time.monotonic() - t0, 1))
                    print(f"    broker restarted in {self.restarts[-1]} s", flush=True)
                    next_cut = time.monotonic() + self.every
                if time.monotonic() >= next_cut:
                    self.connections_cut += self.proxy.cut_all()
                    self.cuts += 1
                    next_cut = time.monotonic() + self.every
            except Exception as e:  # reported, never swallowed
                self.errors.append(repr(e))

    def summary(self) -> dict[str, Any]:
        return {
            "cuts": self.cuts,
            "connections_cut": self.connections_cut,
            "restarts_s": self.restarts,
            "errors": self.errors,
        }


def produce(args: argparse.Namespace, url: str, topic: str, d: dict[str, Any]) -> bytearray:
    """Send everything; returns one byte per index: 1 = acknowledged to the caller."""
    n = args.messages
    acked = bytearray(n)
    failed: dict[str, int] = {}
    ledgers: dict[int, int] = {}  # receipts per ledger id (-1: the broker saw a duplicate)
    done = [0]
    lock = threading.Lock()
    pad = b"." * max(0, args.size - 8)

    with streamwire.Client(url, operation_timeout=30, connection_timeout=5) as client:
        producer = client.create_producer(
            topic, producer_name=f"faults-{uuid.uuid4().hex[:8]}", send_timeout=120
        )

        def progress() -> float:
            return done[0] / n

        with Disruptor(
            d["proxy"], args.cut_every, d["restart"], progress, (1 / 3, 2 / 3)
        ) as disruptor:
            t0 = time.monotonic()
            for i in range(n):

                def cb(err: BaseException | None, mid: Any, i: int = i) -> None:
                    with lock:
                        done[0] += 1
                        if err is None:
                            acked[i] = 1
                            ledgers[mid.ledger_id] = ledgers.get(mid.ledger_id, 0) + 1
                        else:
                            failed[type(err).__name__] = failed.get(type(err).__name__, 0) + 1

                producer.send_async(i.to_bytes(8, "big") + pad, cb)
            producer.flush()
            while done[0] < n and time.monotonic() - t0 < 900:
                time.sleep(0.05)
            # Keep the faults going until at least the second restart happened.
            while disruptor.restart_at and time.monotonic() - t0 < 900:
                time.sleep(0.1)
            seconds = time.monotonic() - t0
        producer.close()
    d["produce"] = {
        "sent": n,
        "acknowledged": sum(acked),
        "failed": failed,
        "receipts_per_ledger": ledgers,
        "callbacks": done[0],
        "seconds": round(seconds, 1),
        **disruptor.summary(),
    }
    return acked


def read_back(url: str, topic: str) -> tuple[array[int], array[int]]:
    """(stored keys in order, payload index per stored message), without faults."""
    keys: array[int] = array("q")
    index: array[int] = array("q")
    with streamwire.Client(url, operation_timeout=30) as client:
        with client.create_reader(topic, streamwire.MessageId.earliest) as reader:
            while True:
                try:
                    batch = reader.read_many(5000, timeout=5.0)
                except OperationTimeoutError:
                    break
                if not batch:
                    break
                for m in batch:
                    keys.append(id_key(m.message_id))
                    index.append(int.from_bytes(m.data()[:8], "big"))
    return keys, index


def official_count(url: str, topic: str) -> int:
    """How many messages the official client's reader finds on ``topic`` (a cross-check)."""
    import pulsar

    client = pulsar.Client(url, operation_timeout_seconds=30)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        n = 0
        while True:
            try:
                reader.read_next(5000)
            except pulsar.Timeout:
                return n
            n += 1
    finally:
        client.close()


def consume(
    args: argparse.Namespace,
    url: str,
    topic: str,
    d: dict[str, Any],
    keys: array[int],
    ack: str,
) -> dict[str, Any]:
    """Receive everything stored on a new subscription under faults; check nothing skipped."""
    total = len(keys)
    seen = bytearray(total)  # per stored position: times received (saturating)
    distinct = 0
    received = 0
    skipped_ahead = 0
    highest = -1
    unknown = 0
    with streamwire.Client(url, operation_timeout=30, connection_timeout=5) as client:
        consumer = client.subscribe(
            topic, f"faults-{ack}", initial_position="earliest", receiver_queue_size=1000
        )
        state = {"distinct": 0}
        with Disruptor(
            d["proxy"],
            args.cut_every,
            d["restart"],
            lambda: state["distinct"] / max(1, total),
            (1 / 3, 2 / 3),
        ) as disruptor:
            t0 = time.monotonic()
            last_progress = time.monotonic()
            while distinct < total and time.monotonic() - last_progress < 120:
                try:
                    msgs = consumer.receive_many(1000, timeout=1.0)
                except OperationTimeoutError:
                    continue
                if not msgs:
                    continue
                last_progress = time.monotonic()
                for m in msgs:
                    k = id_key(m.message_id)
                    pos = bisect.bisect_left(keys, k)
                    if pos >= total or keys[pos] != k:
                        unknown += 1
                        continue
                    if ack == "cumulative" and pos > highest + 1:
                        skipped_ahead += 1
                    highest = max(highest, pos)
                    if not seen[pos]:
                        distinct += 1
                    seen[pos] = min(255, seen[pos] + 1)
                received += len(msgs)
                state["distinct"] = distinct
                if ack == "individual":
                    consumer.acknowledge(msgs)
                else:
                    consumer.acknowledge_cumulative(msgs[-1])
            while disruptor.restart_at and time.monotonic() - t0 < 900:
                time.sleep(0.1)
            seconds = time.monotonic() - t0
        consumer.close()
    return {
        "stored": total,
        "received": received,
        "distinct": distinct,
        "missing": total - distinct,
        "redelivered": received - distinct,
        "skipped_ahead": skipped_ahead,
        "unknown_ids": unknown,
        "seconds": round(seconds, 1),
        **disruptor.summary(),
    }


def run(args: argparse.Namespace) -> int:
    broker: Any
    if args.broker == "lite":
        broker = PulsarLite()
        dedup = False
    else:
        print("starting Apache Pulsar standalone ...", flush=True)
        # A durability check needs a durable broker: the test fixture trades the journal's
        # fsync and a full shutdown for speed (see tests/peers/apache.py).
        broker = ApachePulsar(extra_conf=DURABLE if args.durable else None)
        dedup = True
    broker.start()
    host, port = broker.service_url.split("://", 1)[1].rsplit(":", 1)
    proxy = FaultProxy(host, int(port))
    topic = f"persistent://public/default/faults-{uuid.uuid4().hex}"
    d: dict[str, Any] = {"proxy": proxy, "restart": broker.restart}
    name = "pulsar-lite" if args.broker == "lite" else f"Apache Pulsar {broker.version}"
    print(
        f"faults: {args.messages} x {args.size} B, cut every {args.cut_every} s, two broker "
        f"restarts per phase, {name} via proxy {proxy.url}",
        flush=True,
    )
    try:
        # The consuming subscriptions exist before anything is produced: with no subscription
        # (and no retention) Pulsar deletes closed ledgers, and every restart closes one.
        with streamwire.Client(broker.service_url) as client:
            for ack in ("individual", "cumulative"):
                client.subscribe(topic, f"faults-{ack}", initial_position="earliest").close()
        print("  produce ...", flush=True)
        acked = produce(args, proxy.url, topic, d)
        keys, index = read_back(broker.service_url, topic)
        counts = bytearray(args.messages)
        for i in index:
            counts[i] = min(255, counts[i] + 1)
        lost = sum(1 for i in range(args.messages) if acked[i] and not counts[i])
        duplicates = len(index) - sum(1 for c in counts if c)
        d["produce"].update(
            {
                "stored": len(index),
                "stored_per_official_reader": official_count(broker.service_url, topic),
                "lost": lost,
                "duplicates": duplicates,
                "dedup": dedup,
            }
        )
        print(f"  produce: {d['produce']}", flush=True)
        keys = array("q", sorted(keys))  # id order (bisect below, and the gap check)
        for ack in ("individual", "cumulative"):
            print(f"  consume ({ack} acks) ...", flush=True)
            d[f"consume_{ack}"] = consume(args, proxy.url, topic, d, keys, ack)
            print(f"  consume ({ack}): {d[f'consume_{ack}']}", flush=True)
    finally:
        proxy.close()
        broker.close()
    result = {
        "bench": "faults_1m",
        "broker": name,
        "messages": args.messages,
        "size": args.size,
        "cut_every_s": args.cut_every,
        **{k: v for k, v in d.items() if k not in ("proxy", "restart")},
    }
    print("BENCH " + json.dumps(result, separators=(",", ":")), flush=True)
    p = d["produce"]
    bad = p["lost"] > 0 or (dedup and p["duplicates"] > 0)
    for ack in ("individual", "cumulative"):
        c = d[f"consume_{ack}"]
        bad = bad or c["missing"] > 0 or c["skipped_ahead"] > 0 or c["unknown_ids"] > 0
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="1M messages through cuts and broker restarts")
    parser.add_argument("--broker", choices=["apache", "lite"], default="apache")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=100, help="payload bytes (>= 8)")
    parser.add_argument("--cut-every", type=float, default=3.0, help="cut connections every s")
    parser.add_argument(
        "--fixture-durability",
        dest="durable",
        action="store_false",
        help="Apache: keep the test fixture's journalSyncData=false and 3 s shutdown",
    )
    args = parser.parse_args(argv)
    if args.messages <= 0 or args.size < 8 or args.cut_every <= 0:
        parser.error("--messages > 0, --size >= 8, --cut-every > 0")
    return run(args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
