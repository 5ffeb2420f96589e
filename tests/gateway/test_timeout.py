"""A broker that stops answering: the gateway answers 504 (code 50401) within its
``--request-timeout`` — whether the request could not even start (a lookup, a new producer) or its
send was queued but never acknowledged — and keeps serving once the broker answers again.

The broker is reached through the fault proxy (``tests/peers/faultproxy.py``), which is stalled:
it accepts connections and forwards nothing, as a hung broker or a black-holed network would.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable

import httpx

from tests.peers.faultproxy import FaultProxy
from tests.peers.gateway import Gateway
from tests.peers.lite import PulsarLite

TIMEOUT_S = 1.0
SLACK_S = 4.0  # 2 cores shared with brokers and a JVM


def _post(g: Gateway, name: str, value: bytes) -> httpx.Response:
    body = {"messages": [{"value": base64.b64encode(value).decode()}]}
    return httpx.post(f"{g.url}/topics/public/default/{name}", json=body, timeout=30)


def test_a_stalled_broker_answers_504_in_time_and_the_gateway_recovers(
    lite_broker: PulsarLite, fault_proxy: Callable[..., FaultProxy]
) -> None:
    proxy = fault_proxy(lite_broker)
    g = Gateway(proxy.url, "--request-timeout", str(TIMEOUT_S)).start()
    try:
        warm = "gwto-" + uuid.uuid4().hex[:12]
        r = _post(g, warm, b"before")
        assert r.status_code == 200, r.text
        assert r.json()["messageIds"][0]["error_code"] is None

        proxy.stall(True)
        # A topic the gateway has never seen needs a lookup and a producer: nothing can start,
        # so the whole request times out.
        t0 = time.monotonic()
        r = _post(g, "gwto-new-" + uuid.uuid4().hex[:12], b"x")
        took = time.monotonic() - t0
        assert r.status_code == 504, r.text
        assert r.json() == {"code": 50401, "message": "the request timed out"}
        assert TIMEOUT_S * 0.8 <= took <= TIMEOUT_S + SLACK_S, took

        # A topic with a live producer: the message is queued but never acknowledged. The
        # answer is the same 504 within the timeout, and it never claims an id: the outcome is
        # unknown to the caller (the proxy still holds the bytes), as with any timeout.
        t0 = time.monotonic()
        r = _post(g, warm, b"during")
        took = time.monotonic() - t0
        assert r.status_code == 504, r.text
        assert r.json()["code"] == 50401
        assert TIMEOUT_S * 0.8 <= took <= TIMEOUT_S + SLACK_S, took

        # The gateway itself never stalled.
        h = httpx.get(f"{g.url}/healthz", timeout=5)
        assert h.status_code == 200

        proxy.stall(False)
        deadline = time.monotonic() + 30
        while True:
            r = _post(g, warm, b"after")
            ok = r.status_code == 200 and r.json()["messageIds"][0]["error_code"] is None
            if ok or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert ok, r.text
    finally:
        proxy.stall(False)
        g.close()
