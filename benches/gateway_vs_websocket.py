"""The PIP-64 gateway beside Pulsar's own HTTP-side path, the WebSocket API, in one run.

    .venv/bin/python benches/gateway_vs_websocket.py [--messages 200000] [--rounds 3]

Starts Apache Pulsar 4.0 standalone with ``webSocketServiceEnabled=true`` (the WebSocket API on
the broker's web port) and the gateway binary in front of the same broker; 100 B messages.

- produce, bulk: the gateway's PIP-64 JSON bodies of 1,000 messages, one keep-alive client,
  one request at a time; against one WebSocket producer with up to 1,000 messages unanswered
  (each ``{"payload", "context"}`` answered by ``{"result": "ok", "messageId", "context"}``).
- produce, one message at a time: the gateway's binary POST against a WebSocket send that waits
  for its answer; p50/p99 latency and the rate.
- consume: a gateway consumer instance (fetches of 1,000, each acknowledged through the
  cursor) against a WebSocket consumer acknowledging every message (receiver queue 1,000).

Medians over ``--rounds``; prints a table and a ``BENCH {json}`` line. Not part of the test
suite.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.peers.apache import ApachePulsar  # noqa: E402
from tests.peers.gateway import Gateway  # noqa: E402

PAYLOAD = b"x" * 100
B64 = base64.b64encode(PAYLOAD).decode()


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * p / 100))] if s else 0.0


# -- the gateway -------------------------------------------------------------------------


def gw_bulk(url: str, name: str, n: int) -> float:
    import httpx

    body = json.dumps({"messages": [{"value": B64}] * 1000})
    t0 = time.perf_counter()
    with httpx.Client(base_url=url, timeout=60) as http:
        for _ in range(n // 1000):
            r = http.post(
                f"/topics/public/default/{name}",
                content=body,
                headers={"content-type": "application/json"},
            )
            r.raise_for_status()
    return n / (time.perf_counter() - t0)


def gw_single(url: str, name: str, n: int) -> tuple[float, list[float]]:
    import httpx

    lat = []
    t0 = time.perf_counter()
    with httpx.Client(base_url=url, timeout=60) as http:
        for _ in range(n):
            s = time.perf_counter()
            r = http.post(
                f"/topics/public/default/{name}",
                content=PAYLOAD,
                headers={"content-type": "application/octet-stream"},
            )
            r.raise_for_status()
            lat.append((time.perf_counter() - s) * 1000)
    return n / (time.perf_counter() - t0), lat


def gw_consume(url: str, name: str, n: int) -> float:
    import httpx

    base = f"/topics/public/default/{name}/subscription/gw"
    with httpx.Client(base_url=url, timeout=60) as http:
        r = http.post(base, json={"subscriptionInitialPosition": "earliest", "name": "b1"})
        r.raise_for_status()
        inst = r.json()["id"]
        got = 0
        t0 = time.perf_counter()
        while got < n:
            r = http.get(f"{base}/consumer/{inst}/messages?max_messages=1000&timeout=2000")
            r.raise_for_status()
            msgs = r.json()["messages"]
            got += len(msgs)
            ids = [m["messageId"] for m in msgs]
            if ids:
                http.post(
                    f"{base}/cursor",
                    json={"type": "individual", "messageIds": ids, "consumer": inst},
                ).raise_for_status()
        rate = got / (time.perf_counter() - t0)
        http.delete(f"{base}/consumers/{inst}")
    return rate


# -- the WebSocket API ----------------------------------------------------------------------


async def ws_bulk(ws_url: str, name: str, n: int, window: int = 1000) -> float:
    import websockets

    uri = f"{ws_url}/ws/v2/producer/persistent/public/default/{name}"
    async with websockets.connect(uri, max_size=None) as ws:
        sem = asyncio.Semaphore(window)
        done = asyncio.Event()
        acked = 0

        async def reader() -> None:
            nonlocal acked
            async for raw in ws:
                msg = json.loads(raw)
                if msg.get("result") != "ok":
                    raise RuntimeError(f"WebSocket produce failed: {msg}")
                acked += 1
                sem.release()
                if acked == n:
                    done.set()
                    return

        t0 = time.perf_counter()
        task = asyncio.create_task(reader())
        for i in range(n):
            await sem.acquire()
            await ws.send(json.dumps({"payload": B64, "context": str(i)}))
        await done.wait()
        await task
        return n / (time.perf_counter() - t0)


async def ws_single(ws_url: str, name: str, n: int) -> tuple[float, list[float]]:
    import websockets

    uri = f"{ws_url}/ws/v2/producer/persistent/public/default/{name}"
    lat = []
    async with websockets.connect(uri) as ws:
        t0 = time.perf_counter()
        for i in range(n):
            s = time.perf_counter()
            await ws.send(json.dumps({"payload": B64, "context": str(i)}))
            msg = json.loads(await ws.recv())
            if msg.get("result") != "ok":
                raise RuntimeError(f"WebSocket produce failed: {msg}")
            lat.append((time.perf_counter() - s) * 1000)
        return n / (time.perf_counter() - t0), lat


async def ws_consume(ws_url: str, name: str, n: int) -> float:
    import websockets

    uri = (
        f"{ws_url}/ws/v2/consumer/persistent/public/default/{name}/ws"
        "?subscriptionType=Exclusive&receiverQueueSize=1000"
    )
    async with websockets.connect(uri, max_size=None) as ws:
        got = 0
        t0 = time.perf_counter()
        async for raw in ws:
            msg = json.loads(raw)
            await ws.send(json.dumps({"messageId": msg["messageId"]}))
            got += 1
            if got == n:
                break
        return got / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--singles", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    print("starting Apache Pulsar standalone (WebSocket on) ...", flush=True)
    broker = ApachePulsar(extra_conf={"webSocketServiceEnabled": "true"})
    broker.start()
    gateway = Gateway(broker.service_url).start()
    ws_url = broker.admin_url.replace("http://", "ws://")
    rows: dict[str, list[float]] = {}
    lat: dict[str, list[float]] = {"gateway": [], "websocket": []}

    def add(key: str, v: float) -> None:
        rows.setdefault(key, []).append(v)
        print(f"  {key}: {v:,.0f}", flush=True)

    try:
        for _ in range(args.rounds):
            gw_topic, ws_topic = f"gw-{uuid.uuid4().hex[:8]}", f"ws-{uuid.uuid4().hex[:8]}"
            add("produce bulk, gateway", gw_bulk(gateway.url, gw_topic, args.messages))
            add("produce bulk, websocket", asyncio.run(ws_bulk(ws_url, ws_topic, args.messages)))
            add("consume + ack, gateway", gw_consume(gateway.url, gw_topic, args.messages))
            r, ls = gw_single(gateway.url, gw_topic, args.singles)
            add("produce one at a time, gateway", r)
            lat["gateway"] += ls
            r, ls = asyncio.run(ws_single(ws_url, ws_topic, args.singles))
            add("produce one at a time, websocket", r)
            lat["websocket"] += ls
            # A WebSocket consumer starts at the end of the topic: subscribe first (and leave),
            # write, then read that subscription.
            sub_topic = f"wsc-{uuid.uuid4().hex[:8]}"

            async def consume_ws(topic: str = sub_topic) -> float:
                import websockets

                uri = (
                    f"{ws_url}/ws/v2/consumer/persistent/public/default/{topic}/ws"
                    "?subscriptionType=Exclusive&receiverQueueSize=1000"
                )
                async with websockets.connect(uri) as ws:  # subscribe (then leave)
                    await ws.close()
                await ws_bulk(ws_url, topic, args.messages)
                return await ws_consume(ws_url, topic, args.messages)

            add("consume + ack, websocket", asyncio.run(consume_ws()))
    finally:
        gateway.close()
        broker.close()
    result: dict[str, Any] = {k: round(statistics.median(v)) for k, v in rows.items()}
    for side, ls in lat.items():
        result[f"latency {side} p50/p99 ms"] = [round(pct(ls, 50), 2), round(pct(ls, 99), 2)]
    print(f"\nApache Pulsar {broker.version}, {args.messages:,} x 100 B, median of {args.rounds}\n")
    print("| workload | gateway | WebSocket API |\n|---|---:|---:|")
    for what in ("produce bulk", "produce one at a time", "consume + ack"):
        g, w = result[f"{what}, gateway"], result[f"{what}, websocket"]
        print(f"| {what} (msg/s) | {g:,} | {w:,} |")
    g, w = result["latency gateway p50/p99 ms"], result["latency websocket p50/p99 ms"]
    print(f"| one message: latency p50 / p99 (ms) | {g[0]} / {g[1]} | {w[0]} / {w[1]} |")
    print("BENCH " + json.dumps(result, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
