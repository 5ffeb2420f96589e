"""Soak: produce + consume at a fixed rate for a long time, with periodic connection cuts.

    .venv/bin/python benches/soak.py                       # 10 minutes, embedded pulsar-lite
    .venv/bin/python benches/soak.py --minutes 3 --rate 2000 --cut-every 10
    .venv/bin/python benches/soak.py --broker apache          # Apache Pulsar standalone
    .venv/bin/python benches/soak.py --broker pulsar://127.0.0.1:6650

The broker (embedded pulsar-lite by default, or ``--broker URL``) sits behind the loopback fault
proxy (``tests/peers/faultproxy.py``), whose connections are all cut every ``--cut-every``
seconds. One client produces with ``send_async`` at ``--rate`` msgs/s; a consumer (exclusive,
individual acks) on the same topic receives everything. At the end it reports messages sent,
acknowledged, received, lost (acknowledged but never received: must be 0), duplicated, publish
latency percentiles, and RSS over time, then prints a ``BENCH {json}`` line. Exit status 1 if
anything acknowledged was lost, 2 if RSS grew by more than ``--max-rss-growth`` MiB from the
first to the last quarter of the run.

The soak's own bookkeeping is allocated up front (one byte per message it can send, a fixed
latency histogram with 1 % buckets), so the RSS it reports is the client's, not the soak's.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamwire  # noqa: E402
from streamwire import OperationTimeoutError, StreamwireError  # noqa: E402

from tests.peers.apache import ApachePulsar  # noqa: E402
from tests.peers.faultproxy import FaultProxy  # noqa: E402
from tests.peers.lite import PulsarLite  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class LatencyHistogram:
    """Fixed log buckets (2 % wide) from 10 us to ~10 min: constant memory, ~1 % error."""

    RATIO = 1.02
    BASE_MS = 0.01

    def __init__(self) -> None:
        self.counts = [0] * 920
        self.total = 0
        self.max_ms = 0.0

    def add(self, ms: float) -> None:
        i = 0 if ms <= self.BASE_MS else int(math.log(ms / self.BASE_MS, self.RATIO)) + 1
        self.counts[min(i, len(self.counts) - 1)] += 1
        self.total += 1
        self.max_ms = max(self.max_ms, ms)

    def percentile(self, q: float) -> float:
        if not self.total:
            return float("nan")
        rank = q * (self.total - 1)
        seen = 0
        for i, c in enumerate(self.counts):
            seen += c
            if seen > rank:
                # The bucket's geometric midpoint.
                return self.BASE_MS * self.RATIO ** max(0.0, i - 0.5)
        return self.max_ms


@dataclass
class Stats:
    capacity: int
    sent: int = 0
    acked_count: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    consumer_errors: dict[str, int] = field(default_factory=dict)
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    received_total: int = 0
    received_distinct: int = 0
    cuts: int = 0
    connections_cut: int = 0
    rss: list[tuple[float, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: bytearray = field(init=False)
    received: bytearray = field(init=False)

    def __post_init__(self) -> None:
        # One byte per sequence number, allocated (and touched) before the run starts.
        self.acked = bytearray(self.capacity)
        self.received = bytearray(self.capacity)

    def lost(self) -> list[int]:
        """Sequence numbers acknowledged to the producer but never received."""
        return [i for i in range(self.sent) if self.acked[i] and not self.received[i]]


def run(args: argparse.Namespace) -> int:
    duration = args.minutes * 60.0
    lite: PulsarLite | None = None
    apache: ApachePulsar | None = None
    if args.broker == "lite":
        lite = PulsarLite(
            workdir=os.environ.get("SOAK_LITE_DIR"),
            log_level=os.environ.get("SOAK_LITE_LOG", "info"),
        )
        lite.start()
        target = lite.service_url
    elif args.broker == "apache":
        print("starting Apache Pulsar standalone ...", flush=True)
        apache = ApachePulsar()
        apache.start()
        target = apache.service_url
    else:
        target = args.broker
    host_port = target.split("://", 1)[1].rstrip("/")
    host, port = host_port.rsplit(":", 1)
    proxy = FaultProxy(host, int(port))
    if args.record:
        proxy.record(args.record)  # every proxied connection's bytes, for diagnosis
    topic = f"persistent://public/default/soak-{uuid.uuid4().hex}"
    # Room for every sequence number the fixed rate can reach, plus catch-up slack.
    stats = Stats(capacity=int(args.rate * duration * 1.05) + 10_000)
    stop_producing = threading.Event()
    stop_all = threading.Event()
    t_start = time.monotonic()
    print(
        f"soak: {args.minutes} min, {args.rate} msg/s, cut every {args.cut_every} s, "
        f"broker {target} via proxy {proxy.url}, topic {topic}",
        flush=True,
    )
    client = streamwire.Client(proxy.url, operation_timeout=30, connection_timeout=5)
    consumer = client.subscribe(
        topic, "soak", initial_position="earliest", receiver_queue_size=1000
    )
    producer = client.create_producer(topic, send_timeout=60, batching_max_delay=0.005)

    def produce() -> None:
        interval = 1.0 / args.rate
        next_at = time.monotonic()
        seq = 0
        payload_pad = b"." * max(0, args.size - 12)
        while not stop_producing.is_set():
            now = time.monotonic()
            if now < next_at:
                time.sleep(min(next_at - now, 0.05))
                continue
            # Catch up in bursts if we fell behind (fixed average rate).
            while next_at <= now and not stop_producing.is_set() and seq < stats.capacity:
                s = seq
                t0 = time.perf_counter()

                def done(err: BaseException | None, _mid: Any, s: int = s, t0: float = t0) -> None:
                    lat = (time.perf_counter() - t0) * 1000
                    with stats.lock:
                        if err is None:
                            if not stats.acked[s]:
                                stats.acked[s] = 1
                                stats.acked_count += 1
                            stats.latency.add(lat)
                        else:
                            name = type(err).__name__
                            stats.failed[name] = stats.failed.get(name, 0) + 1

                producer.send_async(b"%012d" % s + payload_pad, done)
                seq += 1
                stats.sent = seq
                next_at += interval

    def _brief(s: dict[str, Any]) -> str:
        keys = ("received", "acknowledged", "queued", "reconnects", "skipped")
        return " ".join(f"{k}={s.get(k)}" for k in keys)

    def consume() -> None:
        while not stop_all.is_set():
            try:
                msgs = consumer.receive_many(500, timeout=0.5)
            except OperationTimeoutError:
                continue
            except StreamwireError as e:  # a cut may surface here; count it and go on
                name = f"receive:{type(e).__name__}"
                stats.consumer_errors[name] = stats.consumer_errors.get(name, 0) + 1
                time.sleep(0.1)
                continue
            if not msgs:
                continue
            with stats.lock:
                for m in msgs:
                    i = int(m.data()[:12])
                    if not stats.received[i]:
                        stats.received_distinct += 1
                    stats.received[i] = min(255, stats.received[i] + 1)
                stats.received_total += len(msgs)
            try:
                consumer.acknowledge(msgs)
            except StreamwireError as e:  # redelivered later: at-least-once
                name = f"ack:{type(e).__name__}"
                stats.consumer_errors[name] = stats.consumer_errors.get(name, 0) + 1

    def cut() -> None:
        while not stop_producing.wait(args.cut_every):
            stats.connections_cut += proxy.cut_all()
            stats.cuts += 1

    def sample_rss() -> None:
        while not stop_all.is_set():
            stats.rss.append((time.monotonic() - t_start, rss_mib()))
            last_print = stats.rss[-1]
            with stats.lock:
                acked, received = stats.acked_count, stats.received_distinct
            print(
                f"  t={last_print[0]:6.0f}s rss={last_print[1]:7.1f} MiB sent={stats.sent} "
                f"acked={acked} received={received} cuts={stats.cuts} "
                f"consumer={_brief(consumer.stats())}",
                flush=True,
            )
            stop_all.wait(args.sample_every)

    threads = [
        threading.Thread(target=fn, name=fn.__name__, daemon=True)
        for fn in (produce, consume, cut, sample_rss)
    ]
    for t in threads:
        t.start()
    time.sleep(duration)
    stop_producing.set()
    threads[0].join()
    threads[2].join()
    producer.flush()
    # Drain: wait until everything acknowledged was received, or nothing new for 30 s.
    last_count, last_change = -1, time.monotonic()
    while True:
        with stats.lock:
            count = stats.received_distinct
            acked = stats.acked_count
        if count >= acked and not stats.lost():
            break
        if count != last_count:
            last_count, last_change = count, time.monotonic()
        elif time.monotonic() - last_change > 30:
            break
        time.sleep(0.5)
    stop_all.set()
    for t in threads[1:]:
        t.join(timeout=10)
    stats.rss.append((time.monotonic() - t_start, rss_mib()))
    producer.close()
    consumer.close()
    client.close()
    proxy.close()
    if lite is not None:
        lite.close()
    if apache is not None:
        apache.close()

    with stats.lock:
        lost = stats.lost()
        lat = stats.latency
        rss_values = [r for _, r in stats.rss]
        quarter = max(1, len(rss_values) // 4)
        rss_first = sorted(rss_values[:quarter])[quarter // 2]
        rss_last = sorted(rss_values[-quarter:])[quarter // 2]
        result = {
            "bench": "soak",
            "minutes": args.minutes,
            "rate": args.rate,
            "cut_every_s": args.cut_every,
            "broker": "pulsar-lite"
            if lite is not None
            else f"Apache Pulsar {apache.version} standalone"
            if apache is not None
            else target,
            "sent": stats.sent,
            "acknowledged": stats.acked_count,
            "failed": stats.failed,
            "received": stats.received_total,
            "received_distinct": stats.received_distinct,
            "lost": len(lost),
            "consumer_errors": stats.consumer_errors,
            "duplicated": stats.received_total - stats.received_distinct,
            "publish_latency_ms": {
                "p50": round(lat.percentile(0.50), 2),
                "p99": round(lat.percentile(0.99), 2),
                "p99.9": round(lat.percentile(0.999), 2),
                "max": round(lat.max_ms, 2) if lat.total else None,
            },
            "cuts": stats.cuts,
            "connections_cut": stats.connections_cut,
            "rss_mib": {
                "first_quarter_median": round(rss_first, 1),
                "last_quarter_median": round(rss_last, 1),
                "max": round(max(rss_values), 1),
                "growth": round(rss_last - rss_first, 1),
                "samples": [[round(t), round(r, 1)] for t, r in stats.rss],
            },
        }
    print("\n=== soak report ===")
    print(
        f"duration            {args.minutes} min at {args.rate} msg/s, cut every {args.cut_every} s"
    )
    print(f"connection cuts     {stats.cuts} ({stats.connections_cut} connections)")
    print(f"sent                {result['sent']}")
    print(f"acknowledged        {result['acknowledged']}  failed {stats.failed}")
    print(f"received            {result['received']} ({result['received_distinct']} distinct)")
    print(f"lost                {result['lost']}" + (f"  e.g. {lost[:10]}" if lost else ""))
    print(f"duplicated          {result['duplicated']}")
    print(f"consumer errors     {stats.consumer_errors}")
    pl = result["publish_latency_ms"]
    print(f"publish latency ms  p50 {pl['p50']}  p99 {pl['p99']}  p99.9 {pl['p99.9']}")
    print(
        f"RSS MiB             first quarter {rss_first:.1f}, last quarter {rss_last:.1f}, "
        f"max {max(rss_values):.1f}"
    )
    print("RSS over time       " + ", ".join(f"{t:.0f}s:{r:.0f}" for t, r in stats.rss))
    print("BENCH " + json.dumps(result, separators=(",", ":")), flush=True)
    if lost:
        return 1
    if rss_last - rss_first > args.max_rss_growth:
        print(f"RSS grew by {rss_last - rss_first:.1f} MiB", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="streamwire soak test (produce + consume + cuts)")
    parser.add_argument("--minutes", type=float, default=10.0, help="duration (default 10)")
    parser.add_argument("--rate", type=int, default=2000, help="messages per second (2000)")
    parser.add_argument("--cut-every", type=float, default=10.0, help="cut connections every s")
    parser.add_argument(
        "--broker",
        default="lite",
        help="'lite' (embedded), 'apache' (standalone, started here) or pulsar://host:port",
    )
    parser.add_argument("--record", default=None, help="record proxied bytes into this dir")
    parser.add_argument("--size", type=int, default=100, help="payload bytes (default 100)")
    parser.add_argument("--sample-every", type=float, default=10.0, help="RSS sample period, s")
    parser.add_argument("--max-rss-growth", type=float, default=50.0, help="MiB allowed")
    args = parser.parse_args(argv)
    if args.rate <= 0 or args.minutes <= 0 or args.cut_every <= 0:
        parser.error("--rate, --minutes and --cut-every must be positive")
    return run(args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
