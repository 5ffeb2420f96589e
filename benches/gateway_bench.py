"""The PIP-64 gateway under load, with the native client's own figures beside it, one run.

    .venv/bin/python benches/gateway_bench.py [--seconds 10] [--broker lite|apache]
        [--consumer-only]

Load comes from ``wrk`` (Debian package; 8 connections on 2 threads, keep-alive) and, for the
streaming endpoint, one chunked upload. Rows: single-message binary POSTs (requests/s and
latency percentiles), 1,000-message JSON bodies of 100 B (messages/s), NDJSON streaming
(messages/s), consumer-instance fetches of up to 1,000 messages (messages/s: answers counted
undecoded, decoded, decoded and acknowledged through the cursor; one httpx client,
keep-alive); beside them
streamwire's native ``send`` latency and ``send_many`` rate on the same broker, and the broker's
own rate for 8 raw producers each with one unbatched message in flight (no HTTP, no client
engine: the most 8 waiting HTTP clients could get through any gateway). The broker
runs on the same 2 cores as the gateway and the load generator.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import streamwire  # noqa: E402

from benches.pulsar_ceiling import BIN, build_ceiling  # noqa: E402
from tests.peers.apache import ApachePulsar  # noqa: E402
from tests.peers.gateway import Gateway  # noqa: E402
from tests.peers.lite import PulsarLite  # noqa: E402

LUA = """
wrk.method = "POST"
wrk.body = io.open("{body}", "rb"):read("*a")
wrk.headers["Content-Type"] = "{ctype}"
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %f %f %f %f\\n", summary.requests, summary.duration / 1e6,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status))
end
"""


def wrk(url: str, body: bytes, ctype: str, seconds: int) -> tuple[float, float, float, int]:
    """(requests/s, p50 ms, p99 ms, non-2xx) for POSTs of ``body`` to ``url``."""
    with tempfile.TemporaryDirectory() as d:
        bf = Path(d) / "body"
        bf.write_bytes(body)
        script = Path(d) / "post.lua"
        script.write_text(LUA.replace("{body}", str(bf)).replace("{ctype}", ctype))
        out = subprocess.run(
            ["wrk", "-t2", "-c8", f"-d{seconds}s", "-s", str(script), url],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
        ).stdout
    m = re.search(r"RESULT (\d+) ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)", out)
    if not m:
        raise RuntimeError(f"wrk said: {out}")
    n, secs, p50, p99, errors = m.groups()
    return int(n) / float(secs), float(p50), float(p99), int(float(errors))


def ndjson(url: str, n: int) -> float:
    line = (json.dumps({"value": base64.b64encode(b"x" * 100).decode()}) + "\n").encode()
    t0 = time.perf_counter()
    with httpx.stream(
        "POST",
        url,
        content=(line * 1000 for _ in range(n // 1000)),
        headers={"Content-Type": "application/x-ndjson"},
        timeout=300,
    ) as r:
        got = sum(1 for x in r.iter_lines() if x)
    assert got == n, got
    return n / (time.perf_counter() - t0)


def consumer_fetch(gw_url: str, service_url: str, n: int, mode: str) -> float:
    """msg/s fetched through one consumer instance (``n`` 100 B messages written first).

    ``mode``: ``raw`` counts the messages of each answer without decoding it (what the gateway
    serves), ``decode`` also decodes each answer with ``json.loads`` (what a Python client
    gets), ``ack`` also acknowledges each answer's ids through the cursor.
    """
    name = f"gwc-{uuid.uuid4().hex[:8]}"
    with (
        streamwire.Client(service_url) as c,
        c.create_producer(f"persistent://public/default/{name}") as p,
    ):
        for _ in range(n // 1000):
            p.send_many([b"x" * 100] * 1000)
    base = f"{gw_url}/topics/public/default/{name}/subscription/bench"
    with httpx.Client(timeout=60) as h:
        inst = h.post(
            base, json={"subscriptionInitialPosition": "earliest", "receiverQueueSize": 5000}
        ).json()
        got = 0
        t0 = time.perf_counter()
        while got < n:
            body = h.get(
                f"{inst['base_uri']}/messages", params={"max_messages": 1000, "timeout": 5000}
            ).content
            if mode == "raw":
                k = body.count(b'"messageId"')
            else:
                msgs = json.loads(body)["messages"]
                k = len(msgs)
                if mode == "ack":
                    ids = [m["messageId"] for m in msgs]
                    r = h.post(f"{base}/cursor", json={"messageIds": ids, "consumer": inst["id"]})
                    r.raise_for_status()
            if not k:
                raise RuntimeError(f"fetched {got} of {n}, then nothing")
            got += k
        rate = got / (time.perf_counter() - t0)
        h.delete(inst["base_uri"])
    return rate


def native(service_url: str, topic: str) -> tuple[float, float, float]:
    """streamwire's own send latency p50/p99 (ms) and send_many msg/s."""
    with streamwire.Client(service_url) as c, c.create_producer(topic) as p:
        lat = []
        for _ in range(2000):
            t0 = time.perf_counter()
            p.send(b"x" * 100)
            lat.append((time.perf_counter() - t0) * 1000)
        lat.sort()
        vals = [b"x" * 100] * 1000
        t0 = time.perf_counter()
        for _ in range(200):
            p.send_many(vals)
        rate = 200_000 / (time.perf_counter() - t0)
    return statistics.median(lat), lat[int(len(lat) * 0.99)], rate


def consumer_rows(gw_url: str, service_url: str) -> list[str]:
    raw, decode, ack = (consumer_fetch(gw_url, service_url, 200_000, m) for m in MODES)
    return [
        f"| consumer-instance fetch, 1,000 per answer (answers not decoded), msg/s | {raw:,.0f} "
        "| — |",
        f"| the same, each answer decoded by `json.loads`, msg/s | {decode:,.0f} | — |",
        f"| the same, decoded + cursor ack of each answer, msg/s | {ack:,.0f} | — |",
    ]


MODES = ("raw", "decode", "ack")


def raw_inflight1(url: str, topic: str, connections: int) -> tuple[float, float, float]:
    """The broker's own rate for request/response producing: ``connections`` raw producers
    (``benches/src/bin/pulsar_ceiling.rs inflight1``), each waiting for every receipt before
    the next message — what 8 waiting HTTP clients could reach through a gateway that cost
    nothing. (msg/s, receipt p50 ms, p99 ms)."""
    build_ceiling()
    out = subprocess.run(
        [str(BIN), "inflight1", url.split("//", 1)[1], topic, "40000", "100", str(connections)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    r = json.loads(out)
    return float(r["msg_per_s"]), float(r["p50_ms"]), float(r["p99_ms"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--broker", choices=["lite", "apache"], default="lite")
    ap.add_argument(
        "--consumer-only", action="store_true", help="only the consumer-instance rows (no wrk)"
    )
    args = ap.parse_args()
    if not args.consumer_only and shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2
    broker = PulsarLite(log_level="warn") if args.broker == "lite" else ApachePulsar()
    broker.start()
    gw = Gateway(broker.service_url, "--max-messages", "10000").start()
    try:
        if args.consumer_only:
            rows = consumer_rows(gw.url, broker.service_url)
            print(f"\nbroker: {args.broker}; 100 B messages\n")
            print("| workload | gateway | native streamwire |\n|---|---:|---:|")
            print("\n".join(rows))
            return 0
        t = f"gwb-{uuid.uuid4().hex[:8]}"
        path = f"{gw.url}/topics/public/default/{t}"
        httpx.post(path, json={"messages": [{"value": ""}]}, timeout=30)  # warm up
        single = wrk(path, b"x" * 100, "application/octet-stream", args.seconds)
        body = json.dumps(
            {"messages": [{"value": base64.b64encode(b"x" * 100).decode()}] * 1000}
        ).encode()
        bulk = wrk(path, body, "application/json", args.seconds)
        stream = ndjson(path, 500_000)
        rows = consumer_rows(gw.url, broker.service_url)
        n50, n99, many = native(broker.service_url, f"persistent://public/default/{t}-n")
        raw = raw_inflight1(broker.service_url, f"persistent://public/default/{t}-raw", 8)
    finally:
        gw.close()
        broker.close()
    print(f"\nbroker: {args.broker}; wrk -t2 -c8 -d{args.seconds}s; 100 B messages\n")
    print("| workload | gateway | native streamwire |\n|---|---:|---:|")
    print(f"| single-message POST, req/s | {single[0]:,.0f} | — |")
    print(
        f"| single-message POST latency p50 / p99, ms | {single[1]:.2f} / {single[2]:.2f} | "
        f"`send` {n50:.2f} / {n99:.2f} |"
    )
    print(
        f"| broker's own ceiling for it: 8 raw producers, one unbatched message in flight each "
        f"(no HTTP, no client engine), msg/s and receipt p50 / p99 ms | — | {raw[0]:,.0f}; "
        f"{raw[1]:.2f} / {raw[2]:.2f} |"
    )
    print(f"| 1,000-message JSON bodies, msg/s | {bulk[0] * 1000:,.0f} | `send_many` {many:,.0f} |")
    print(f"| NDJSON streaming (one upload), msg/s | {stream:,.0f} | — |")
    print("\n".join(rows))
    print(f"\nnon-2xx answers: single {single[3]}, bulk {bulk[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
