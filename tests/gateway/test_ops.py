"""The gateway's operations endpoints over HTTP: ``/metrics`` counts what a fresh gateway did
(requests by route and status, latency histogram, messages produced, failed and delivered,
live producers and consumer instances, bytes), and ``/openapi.json`` documents every endpoint
the gateway answers."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.peers.broker import Broker
from tests.peers.gateway import Gateway
from tests.peers.lite import PulsarLite


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def scrape(url: str) -> dict[str, float]:
    r = httpx.get(f"{url}/metrics", timeout=10)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    out: dict[str, float] = {}
    for line in r.text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


@pytest.fixture
def own_gateway(broker: Broker) -> Iterator[Gateway]:
    """A gateway of this test alone, so its counters are exact."""
    g = Gateway(broker.service_url).start()
    try:
        yield g
    finally:
        g.close()


def test_metrics_count_requests_messages_and_bytes(own_gateway: Gateway) -> None:
    url = own_gateway.url
    m0 = scrape(url)
    assert m0["streamwire_gateway_messages_produced_total"] == 0
    assert m0["streamwire_gateway_producers"] == 0
    name = "gwm-" + uuid.uuid4().hex[:12]
    path = f"/topics/public/default/{name}"
    sent_bytes = 0

    body = json.dumps({"messages": [{"value": b64(b"v%d" % i)} for i in range(5)]}).encode()
    sent_bytes += len(body)
    r = httpx.post(
        f"{url}{path}", content=body, headers={"content-type": "application/json"}, timeout=30
    )
    assert r.status_code == 200, r.text
    # One message names a partition the topic does not have: it fails, the other goes.
    body = json.dumps(
        {"messages": [{"value": b64(b"ok")}, {"value": b64(b"bad"), "partition": 7}]}
    ).encode()
    sent_bytes += len(body)
    r = httpx.post(
        f"{url}{path}", content=body, headers={"content-type": "application/json"}, timeout=30
    )
    assert r.status_code == 200, r.text
    results = r.json()["messageIds"]
    failed = sum(1 for x in results if x.get("error_code"))
    assert failed == 1, results
    lines = b"".join(json.dumps({"value": b64(b"s%d" % i)}).encode() + b"\n" for i in range(3))
    sent_bytes += len(lines)
    r = httpx.post(
        f"{url}{path}",
        content=lines,
        headers={"content-type": "application/x-ndjson"},
        timeout=30,
    )
    assert r.status_code == 200 and len(r.text.splitlines()) == 3, r.text
    assert all("messageId" in json.loads(x) for x in r.text.splitlines())

    r = httpx.post(
        f"{url}{path}/subscription/s",
        json={"subscriptionInitialPosition": "Earliest"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    base_uri = r.json()["base_uri"]
    got = 0
    end = time.monotonic() + 15
    while got < 9 and time.monotonic() < end:
        f = httpx.get(f"{base_uri}/messages", params={"timeout": 1000}, timeout=30)
        assert f.status_code == 200, f.text
        got += len(f.json()["messages"])
    assert got == 9
    assert httpx.get(f"{url}/nope").status_code == 404

    m = scrape(url)
    req = 'streamwire_gateway_requests_total{route="%s",status="%s"}'
    assert m[req % ("produce", "200")] == 3
    assert m[req % ("create_consumer", "200")] == 1
    assert m[req % ("not_found", "404")] == 1
    assert m[req % ("metrics", "200")] == 1  # the first scrape; this one is counted after
    hist = 'streamwire_gateway_request_duration_seconds_%s{route="produce"%s}'
    assert m[hist % ("count", "")] == 3
    assert m[hist % ("bucket", ',le="+Inf"')] == 3
    assert m[hist % ("sum", "")] > 0
    assert m["streamwire_gateway_messages_produced_total"] == 5 + 1 + 3
    assert m["streamwire_gateway_messages_failed_total"] == failed
    assert m["streamwire_gateway_messages_delivered_total"] == 9
    assert m["streamwire_gateway_producers"] == 1
    assert m["streamwire_gateway_consumer_instances"] == 1
    assert m["streamwire_gateway_bytes_in_total"] >= sent_bytes
    assert m["streamwire_gateway_bytes_out_total"] > m0["streamwire_gateway_bytes_out_total"]

    assert httpx.delete(base_uri, timeout=30).status_code == 204
    assert scrape(url)["streamwire_gateway_consumer_instances"] == 0


def concrete(template: str, topic: str) -> str:
    values = {
        "{tenant}": "public",
        "{namespace}": "default",
        "{topic}": topic,
        "{domain}": "persistent",
        "{partition}": "0",
    }
    return "/".join(values.get(s, "x" if s.startswith("{") else s) for s in template.split("/"))


def test_openapi_documents_every_endpoint_the_gateway_answers(gateway: Gateway) -> None:
    r = httpx.get(f"{gateway.url}/openapi.json", timeout=10)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    doc = r.json()
    assert doc["openapi"].startswith("3.0.")
    assert {"/metrics", "/openapi.json", "/healthz"} <= set(doc["paths"])
    topic = "gwo-" + uuid.uuid4().hex[:12]
    for template, item in doc["paths"].items():
        for method in item:
            path = concrete(template, topic)
            a = httpx.request(
                method.upper(),
                f"{gateway.url}{path}",
                params={"timeout": 100} if method == "get" else None,
                content=b"{}",
                headers={"content-type": "application/json"},
                timeout=30,
            )
            # Served: whatever the answer, it is not "no endpoint here" nor "wrong method".
            code = a.json().get("code") if "json" in a.headers.get("content-type", "") else None
            assert a.status_code != 405, (method, template, a.text)
            assert code not in (40400, 40501), (method, template, a.text)
    # And a path it does not document is not served.
    a = httpx.get(f"{gateway.url}/openapi.yaml", timeout=10)
    assert (a.status_code, a.json()["code"]) == (404, 40400)


def access_lines(g: Gateway) -> list[dict[str, str]]:
    """The gateway's access records (logfmt lines on stderr), as dicts."""
    log = (g.workdir / "gateway.log").read_text(errors="replace")
    out = []
    for line in log.splitlines():
        if "target=gateway.access" in line:
            out.append(dict(p.split("=", 1) for p in line.split(" ") if "=" in p))
    return out


def test_one_structured_access_record_per_request(own_gateway: Gateway) -> None:
    url = own_gateway.url
    path = "/topics/public/default/gwa-" + uuid.uuid4().hex[:12]
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
    r = httpx.post(f"{url}{path}", json={"messages": [{"value": b64(b"x")}]}, timeout=30)
    assert r.status_code == 200
    assert httpx.post(f"{url}{path}", content=b"{", timeout=30).status_code == 400
    assert httpx.get(f"{url}/nope", timeout=10).status_code == 404
    want = [
        ("GET", "/healthz", "healthz", "200"),
        ("POST", path, "produce", "200"),
        ("POST", path, "produce", "400"),
        ("GET", "/nope", "not_found", "404"),
    ]
    got: list[dict[str, str]] = []
    end = time.monotonic() + 5  # written by the log's own thread: wait for it
    while not (got and got[-1]["path"] == "/nope") and time.monotonic() < end:
        wanted = {(m, p) for m, p, _, _ in want}
        got = [x for x in access_lines(own_gateway) if (x["method"], x["path"]) in wanted]
        time.sleep(0.05)
    # The start-up probe polled /healthz too: compare the last records of each kind.
    assert [(x["method"], x["path"], x["route"], x["status"]) for x in got][-4:] == want
    for x in got:
        assert x["level"] == "info" and x["peer"].startswith("127.0.0.1:")
        assert float(x["ms"]) >= 0 and x["ts"].endswith("Z")


def test_log_level_off_writes_no_access_records(lite_broker: PulsarLite) -> None:
    g = Gateway(lite_broker.service_url, "--log-level", "off").start()
    try:
        for _ in range(3):
            assert httpx.get(f"{g.url}/healthz", timeout=10).status_code == 200
        time.sleep(0.3)
        assert access_lines(g) == []
    finally:
        g.close()
