"""Server-sent events from a consumer instance (``?stream=sse`` or ``Accept:
text/event-stream``), read by httpx as a real client would: each event carries the same JSON
message object as the NDJSON stream and the plain fetch (its id as the event id), idle streams
get heartbeat comments, the last event says why the stream ended, what was read and
acknowledged through the cursor stays acknowledged, and a client that leaves mid-stream leaves
the instance usable and loses nothing."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.gateway.test_fetch_stream import instance as _instance
from tests.gateway.test_fetch_stream import produce
from tests.peers.gateway import Gateway


def fresh() -> str:
    return f"/topics/public/default/gwsse-{uuid.uuid4().hex[:12]}"


def instance(gw: Gateway, path: str, sub: str) -> str:
    """A Shared consumer instance (SSE tests share subscriptions between streams)."""
    return _instance(gw, path, sub, sub_type="Shared")


@dataclass
class Event:
    """One server-sent event as the SSE format defines it (a blank line ends it)."""

    event: str = "message"
    data: list[str] = field(default_factory=list)
    id: str | None = None
    retry: int | None = None
    comments: list[str] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads("\n".join(self.data))


def events(lines: Iterator[str]) -> Iterator[Event]:
    """Parse ``text/event-stream`` lines into events (comment-only blocks too)."""
    ev = Event()
    started = False
    for line in lines:
        if line == "":
            if started:
                yield ev
            ev, started = Event(), False
            continue
        started = True
        if line.startswith(":"):
            ev.comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            ev.data.append(value)
        elif name == "event":
            ev.event = value
        elif name == "id":
            ev.id = value
        elif name == "retry":
            ev.retry = int(value)


def value(e: Event) -> bytes:
    return base64.b64decode(e.json()["value"])


def test_events_carry_the_messages_and_acks_made_through_the_cursor_hold(
    gateway: Gateway,
) -> None:
    path = fresh()
    produce(gateway, path, [b"a0", b"a1", b"a2"])
    base_uri = instance(gateway, path, "s")
    got: list[Event] = []
    hello: list[Event] = []
    params = {"timeout": 20000, "max_messages": 5}
    headers = {"Accept": "text/event-stream"}
    with httpx.stream(
        "GET", f"{base_uri}/messages", params=params, headers=headers, timeout=30
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/event-stream"
        assert r.headers["cache-control"] == "no-cache"
        it = events(r.iter_lines())
        for e in it:
            if e.event == "message" and e.data:
                got.append(e)
                if len(got) == 3:
                    break
            else:
                hello.append(e)
        # Produced while the stream is open: they come on the same response.
        produce(gateway, path, [b"b0", b"b1", b"b2"])
        rest = list(it)
    got += [e for e in rest if e.event == "message" and e.data]
    assert hello[0].retry == 1000
    assert [value(e) for e in got] == [b"a0", b"a1", b"a2", b"b0", b"b1"]
    # The event id is the message id, and the object is the plain fetch's.
    for e in got:
        m = e.json()
        assert e.id == m["messageId"]
        assert {"key", "properties", "publishTime", "partition", "redeliveryCount"} <= set(m)
    assert [(e.event, e.json()) for e in rest if e.event != "message"] == [
        ("end", {"reason": "max_messages"})
    ]
    # Acknowledge what was read; the sixth message is still held for the next fetch.
    ids = [e.json()["messageId"] for e in got]
    a = httpx.post(
        f"{gateway.url}{path}/subscription/s/cursor", json={"messageIds": ids}, timeout=30
    )
    assert a.status_code == 200 and a.json()["acknowledged"] == 5, a.text
    f = httpx.get(f"{base_uri}/messages", params={"timeout": 5000}, timeout=30)
    left = f.json()["messages"]
    assert [base64.b64decode(m["value"]) for m in left] == [b"b2"]
    a = httpx.post(
        f"{gateway.url}{path}/subscription/s/cursor",
        json={"messageIds": [left[0]["messageId"]]},
        timeout=30,
    )
    assert a.status_code == 200, a.text
    # Closed and re-created: every message was acknowledged, nothing comes back.
    assert httpx.delete(base_uri, timeout=30).status_code == 204
    base_uri = instance(gateway, path, "s")
    with httpx.stream(
        "GET", f"{base_uri}/messages", params={"stream": "sse", "timeout": 1500}, timeout=30
    ) as r:
        after = list(events(r.iter_lines()))
    assert [e.json() for e in after if e.data] == [{"reason": "timeout"}]
    assert httpx.delete(base_uri, timeout=30).status_code == 204


def test_idle_streams_get_heartbeats_and_the_timeout_ends_them(gateway: Gateway) -> None:
    base_uri = instance(gateway, fresh(), "s")
    t0 = time.monotonic()
    params = {"stream": "sse", "timeout": 1600, "heartbeat": 300}
    with httpx.stream("GET", f"{base_uri}/messages", params=params, timeout=30) as r:
        assert r.status_code == 200
        got = list(events(r.iter_lines()))
    took = time.monotonic() - t0
    beats = [e for e in got if e.comments == ["heartbeat"]]
    assert 3 <= len(beats) <= 6, got
    assert (got[-1].event, got[-1].json()) == ("end", {"reason": "timeout"})
    assert 1.5 < took < 6, took
    # The query wins over Accept, and bad stream parameters are 400 before anything streams.
    r = httpx.get(
        f"{base_uri}/messages",
        params={"stream": "sse", "timeout": 200},
        headers={"Accept": "application/x-ndjson"},
        timeout=30,
    )
    assert r.headers["content-type"] == "text/event-stream"
    for bad in ({"stream": "sse", "heartbeat": "soon"}, {"stream": "sse", "max_bytes": 5}):
        r = httpx.get(f"{base_uri}/messages", params=bad, timeout=30)
        assert (r.status_code, r.json()["code"]) == (400, 40001), bad
    gone = httpx.get(f"{base_uri}x/messages", headers={"Accept": "text/event-stream"})
    assert (gone.status_code, gone.json()["code"]) == (404, 40403)
    assert httpx.delete(base_uri, timeout=30).status_code == 204


def test_a_client_leaving_mid_stream_leaves_the_instance_usable_and_loses_nothing(
    gateway: Gateway,
) -> None:
    path = fresh()
    n = 300
    produce(gateway, path, [b"m%d" % i for i in range(n)])
    base_uri = instance(gateway, path, "s")
    read: list[dict[str, Any]] = []
    params = {"stream": "sse", "timeout": 20000, "heartbeat": 200}
    with httpx.stream("GET", f"{base_uri}/messages", params=params, timeout=30) as r:
        for e in events(r.iter_lines()):
            if e.event == "message" and e.data:
                read.append(e.json())
                if len(read) == 10:
                    break  # leave: the response is closed with messages still coming
    assert [base64.b64decode(m["value"]) for m in read] == [b"m%d" % i for i in range(10)]
    # The stream notices at its next write (a heartbeat at the latest) and frees the instance:
    # a fetch is answered at its own short timeout, not after the stream's 20 s. (What the
    # stream handed to the connection before the client left is not held any more.)
    t0 = time.monotonic()
    f = httpx.get(f"{base_uri}/messages", params={"timeout": 300}, timeout=30)
    assert f.status_code == 200 and time.monotonic() - t0 < 4, f.text
    read += f.json()["messages"]
    ids = [m["messageId"] for m in read]
    a = httpx.post(
        f"{gateway.url}{path}/subscription/s/cursor", json={"messageIds": ids}, timeout=30
    )
    assert a.status_code == 200, a.text
    # Everything not acknowledged comes to the next instance on the subscription.
    assert httpx.delete(base_uri, timeout=30).status_code == 204
    base_uri = instance(gateway, path, "s")
    seen = {base64.b64decode(m["value"]) for m in read}
    unread = {b"m%d" % i for i in range(n)} - seen
    rest: set[bytes] = set()
    end = time.monotonic() + 30
    with httpx.stream(
        "GET", f"{base_uri}/messages", params={"stream": "sse", "timeout": 15000}, timeout=30
    ) as r:
        for e in events(r.iter_lines()):
            if e.event == "message" and e.data:
                rest.add(value(e))
            if unread <= rest or time.monotonic() > end:
                break
    # (A batch comes back whole until every message of it is acknowledged, so some of
    # what was read may come again: only losses matter here.)
    assert unread <= rest <= unread | seen
    assert httpx.delete(base_uri, timeout=30).status_code == 204
