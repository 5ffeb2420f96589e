"""Graceful shutdown (SIGTERM to the binary) with requests in flight: a server-sent-events
stream ends with its ``end`` event (reason ``shutdown``), a long poll answers what it has (an
empty 200) at once instead of at its timeout, produce requests in flight finish, and every
message answered with an id is read back by the official client."""

from __future__ import annotations

import base64
import threading
import time
import uuid
from types import ModuleType
from typing import Any

import httpx

from tests.peers.gateway import Gateway
from tests.peers.lite import PulsarLite


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def official_ids(pulsar: ModuleType, url: str, topic: str) -> set[str]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        out: set[str] = set()
        while True:
            try:
                m = reader.read_next(timeout_millis=3000)
            except Exception:  # the official client's Timeout: nothing more
                return out
            out.add(b64(m.message_id().serialize()))
    finally:
        client.close()


def test_shutdown_ends_streams_and_long_polls_and_lets_produces_finish(
    lite_broker: PulsarLite, official_pulsar: ModuleType
) -> None:
    name = "gwsd-" + uuid.uuid4().hex[:12]
    topic, path = f"persistent://public/default/{name}", f"/topics/public/default/{name}"
    g = Gateway(lite_broker.service_url).start()
    results: dict[str, Any] = {"ids": [], "bodies": 0, "sse": []}
    try:
        bases = {}
        for sub in ("a", "b"):
            # On a topic nothing is written to: they wait until the shutdown.
            r = httpx.post(f"{g.url}{path}-idle/subscription/{sub}", json={}, timeout=30)
            assert r.status_code == 200, r.text
            bases[sub] = r.json()["base_uri"]

        def sse() -> None:
            params = {"stream": "sse", "timeout": 25000, "heartbeat": 500}
            with httpx.stream("GET", f"{bases['a']}/messages", params=params, timeout=60) as r:
                for line in r.iter_lines():
                    results["sse"].append(line)
                    opened.set()

        def poll() -> None:
            r = httpx.get(f"{bases['b']}/messages", params={"timeout": 25000}, timeout=60)
            results["poll"] = (r.status_code, r.json())

        def produce() -> None:
            with httpx.Client(timeout=60) as c:
                for i in range(10_000):
                    body = {"messages": [{"value": b64(b"%d-%d" % (i, j))} for j in range(200)]}
                    try:
                        r = c.post(f"{g.url}{path}", json=body)
                    except httpx.HTTPError:
                        return  # the gateway stopped taking requests
                    assert r.status_code == 200, r.text
                    for x in r.json()["messageIds"]:
                        assert x["error_code"] is None, x
                        results["ids"].append(x["messageId"])
                    results["bodies"] += 1

        opened = threading.Event()
        threads = [threading.Thread(target=f) for f in (sse, poll, produce)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while results["bodies"] < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert results["bodies"] >= 5
        # The stream is open (its first line came), and the long poll had time to start.
        assert opened.wait(20)
        time.sleep(0.5)
        t0 = time.monotonic()
        assert g.stop() == 0
        took = time.monotonic() - t0
        for t in threads:
            t.join(timeout=30)
        assert took < 8, took
    finally:
        g.close()
    assert results["poll"] == (200, {"messages": []})
    lines = [x for x in results["sse"] if x]
    assert lines[-2:] == ["event: end", 'data: {"reason":"shutdown"}'], lines[-5:]
    answered = set(results["ids"])
    assert len(answered) == len(results["ids"]) == 200 * results["bodies"]
    stored = official_ids(official_pulsar, lite_broker.service_url, topic)
    assert answered <= stored, len(answered - stored)
