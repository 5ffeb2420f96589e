"""Streaming fetch from a consumer instance (``?stream=ndjson`` or ``Accept:
application/x-ndjson``): messages arrive one per line as they are produced, the stream ends
at ``max_messages`` or ``timeout``, and a client that leaves mid-stream loses nothing — what
it did not acknowledge goes to the next instance on the subscription."""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

import httpx

from tests.peers.gateway import Gateway


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def produce(gw: Gateway, path: str, values: list[bytes]) -> None:
    body = {"messages": [{"value": b64(v)} for v in values]}
    r = httpx.post(f"{gw.url}{path}", json=body, timeout=30)
    assert r.status_code == 200, r.text
    assert not any(x.get("error_code") for x in r.json()["messageIds"]), r.text


def instance(gw: Gateway, path: str, sub: str, sub_type: str = "Exclusive") -> str:
    r = httpx.post(
        f"{gw.url}{path}/subscription/{sub}",
        json={"subscriptionInitialPosition": "earliest", "subscriptionType": sub_type},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    base_uri: str = r.json()["base_uri"]
    return base_uri


def value(line: bytes | str) -> bytes:
    m: dict[str, Any] = json.loads(line)
    return base64.b64decode(m["value"])


def test_messages_stream_as_they_arrive_until_max_messages(gateway: Gateway) -> None:
    path = f"/topics/public/default/gwfs-{uuid.uuid4().hex[:12]}"
    produce(gateway, path, [b"a0", b"a1", b"a2"])
    base_uri = instance(gateway, path, "s")
    got: list[bytes] = []
    params = {"stream": "ndjson", "timeout": 20000, "max_messages": 5}
    with httpx.stream("GET", f"{base_uri}/messages", params=params, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/x-ndjson"
        lines = r.iter_lines()
        for _ in range(3):
            got.append(value(next(lines)))
        # Produced while the stream is open: they come on the same response.
        produce(gateway, path, [b"b0", b"b1", b"b2"])
        got.extend(value(x) for x in lines if x)
    assert got == [b"a0", b"a1", b"a2", b"b0", b"b1"]
    # The sixth is still there for the next (plain) fetch.
    f = httpx.get(f"{base_uri}/messages", params={"timeout": 5000}, timeout=30)
    assert [base64.b64decode(m["value"]) for m in f.json()["messages"]] == [b"b2"]


def test_accept_header_streams_and_the_timeout_ends_it(gateway: Gateway) -> None:
    path = f"/topics/public/default/gwfs-{uuid.uuid4().hex[:12]}"
    base_uri = instance(gateway, path, "s")
    t0 = time.monotonic()
    r = httpx.get(
        f"{base_uri}/messages",
        params={"timeout": 500},
        headers={"Accept": "application/x-ndjson"},
        timeout=30,
    )
    took = time.monotonic() - t0
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson"
    assert r.text == "" and 0.4 < took < 5, (r.text, took)
    bad = httpx.get(f"{base_uri}/messages", params={"stream": "csv"}, timeout=30)
    assert (bad.status_code, bad.json()["code"]) == (400, 40001)
    gone = httpx.get(f"{base_uri}x/messages", params={"stream": "ndjson"}, timeout=30)
    assert (gone.status_code, gone.json()["code"]) == (404, 40403)


def test_a_client_leaving_mid_stream_loses_nothing(gateway: Gateway) -> None:
    path = f"/topics/public/default/gwfs-{uuid.uuid4().hex[:12]}"
    n = 300
    produce(gateway, path, [b"m%d" % i for i in range(n)])
    base_uri = instance(gateway, path, "s", "Shared")
    read: list[dict[str, Any]] = []
    params = {"stream": "ndjson", "timeout": 20000}
    with httpx.stream("GET", f"{base_uri}/messages", params=params, timeout=30) as r:
        for x in r.iter_lines():
            read.append(json.loads(x))
            if len(read) == 10:
                break  # leave: the response is closed with messages still coming
    assert [base64.b64decode(m["value"]) for m in read] == [b"m%d" % i for i in range(10)]
    # The instance is free again, and what it took but did not hand over is kept for it.
    f = httpx.get(f"{base_uri}/messages", params={"timeout": 5000}, timeout=30)
    assert f.status_code == 200, f.text
    # Acknowledge what this client really read, close the instance: everything else comes
    # to the next instance on the subscription.
    ids = [m["messageId"] for m in read]
    a = httpx.post(
        f"{gateway.url}{path}/subscription/s/cursor", json={"messageIds": ids}, timeout=30
    )
    assert a.status_code == 200, a.text
    assert httpx.delete(base_uri, timeout=30).status_code == 204
    base_uri = instance(gateway, path, "s", "Shared")
    # (The gateway's producer batches, and a batch comes back whole until every message of it
    # is acknowledged, so some of the first ten may come again: only losses matter here.)
    unread = {b"m%d" % i for i in range(10, n)}
    rest: set[bytes] = set()
    end = time.monotonic() + 30
    while not unread <= rest and time.monotonic() < end:
        f = httpx.get(
            f"{base_uri}/messages", params={"timeout": 1000, "max_messages": 500}, timeout=30
        )
        rest.update(base64.b64decode(m["value"]) for m in f.json()["messages"])
    assert unread <= rest <= unread | {b"m%d" % i for i in range(10)}
    assert httpx.delete(base_uri, timeout=30).status_code == 204
