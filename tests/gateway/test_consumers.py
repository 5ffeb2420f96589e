"""PIP-64 consumer instances and the cursor through the gateway, with httpx, on pulsar-lite and
Apache Pulsar: what the official client writes is fetched with its own ids, acknowledgements
made through the cursor survive the instance (a new one on the same Shared subscription gets
only what was not acknowledged), negative acknowledgements redeliver, idle instances expire,
an id held by another gateway node is redirected there, and bad requests get their status and
code while the gateway keeps serving."""

from __future__ import annotations

import base64
import threading
import time
import uuid
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.peers.broker import Broker
from tests.peers.gateway import Gateway
from tests.peers.lite import PulsarLite


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def fresh() -> tuple[str, str]:
    name = "gwc-" + uuid.uuid4().hex[:12]
    return f"persistent://public/default/{name}", f"/topics/public/default/{name}"


def produce(pulsar: ModuleType, url: str, topic: str, n: int, tag: str = "m") -> list[str]:
    """``n`` messages by the official client (no batching); their base64 ids."""
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        p = client.create_producer(topic, batching_enabled=False)
        ids = [
            b64(
                p.send(
                    f"{tag}{i}".encode(), partition_key=f"k{i}", properties={"i": str(i)}
                ).serialize()
            )
            for i in range(n)
        ]
        p.close()
        return ids
    finally:
        client.close()


def create(gw: str, path: str, sub: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{gw}{path}/subscription/{sub}", json=body, timeout=30)


def fetch_n(base_uri: str, n: int, deadline_s: float = 15) -> list[dict[str, Any]]:
    """Fetch until ``n`` messages came (or the deadline)."""
    got: list[dict[str, Any]] = []
    end = time.monotonic() + deadline_s
    while len(got) < n and time.monotonic() < end:
        r = httpx.get(f"{base_uri}/messages", params={"timeout": 1000}, timeout=30)
        assert r.status_code == 200, r.text
        got.extend(r.json()["messages"])
    return got


def ack(gw: str, path: str, sub: str, ids: list[str], **extra: Any) -> httpx.Response:
    return httpx.post(
        f"{gw}{path}/subscription/{sub}/cursor", json={"messageIds": ids, **extra}, timeout=30
    )


def test_acks_through_the_cursor_survive_the_instance(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    ids = produce(official_pulsar, broker.service_url, topic, 10)
    r = create(
        gateway.url,
        path,
        "s1",
        name="first",
        subscriptionType="Shared",
        subscriptionInitialPosition="earliest",
    )
    assert r.status_code == 200, r.text
    inst = r.json()
    assert inst["id"].startswith("first~")
    assert inst["base_uri"] == f"{gateway.url}{path}/subscription/s1/consumer/{inst['id']}"
    got = fetch_n(inst["base_uri"], 10)
    assert sorted(m["messageId"] for m in got) == sorted(ids)
    by_id = {m["messageId"]: m for m in got}
    for i, mid in enumerate(ids):
        m = by_id[mid]
        assert (m["key"], m["value"], m["properties"]) == (f"k{i}", b64(b"m%d" % i), {"i": str(i)})
        assert m["publishTime"] > 0 and m["partition"] == 0
    acked, kept = ids[::2], ids[1::2]
    r = ack(gateway.url, path, "s1", acked, type="individual")
    assert r.status_code == 200, r.text
    assert r.json() == {"acknowledged": 5, "consumer": inst["id"]}
    cur = httpx.get(f"{gateway.url}{path}/subscription/s1/cursor", timeout=30)
    assert cur.status_code == 200, cur.text
    (c,) = cur.json()["cursor"]["consumers"]
    assert (c["id"], c["subscriptionType"], c["delivered"], c["acknowledged"]) == (
        inst["id"],
        "Shared",
        10,
        5,
    )
    assert c["recentlyAcknowledged"] == acked
    # The instance is gone; what it was given and did not acknowledge goes back.
    assert (
        httpx.delete(f"{gateway.url}{path}/subscription/s1/consumers/{inst['id']}").status_code
        == 204
    )
    r = httpx.delete(inst["base_uri"])
    assert (r.status_code, r.json()["code"]) == (404, 40403)
    r = create(gateway.url, path, "s1", id=inst["id"], subscriptionType="Shared")
    assert r.status_code == 200, r.text
    again = r.json()
    assert again == inst, "re-created by its id: the same id and base_uri"
    got = fetch_n(again["base_uri"], 5)
    assert sorted(m["messageId"] for m in got) == sorted(kept)
    r = httpx.get(f"{again['base_uri']}/messages", params={"timeout": 300}, timeout=30)
    assert r.json() == {"messages": []}, "acknowledged messages came back"
    assert ack(gateway.url, path, "s1", kept, consumer=again["id"]).status_code == 200
    assert httpx.delete(again["base_uri"]).status_code == 204


def test_acks_without_a_named_instance_go_through_any_on_the_subscription(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    body = {
        "subscriptionType": "Shared",
        "subscriptionInitialPosition": "earliest",
        "receiverQueueSize": 2,
    }
    a = create(gateway.url, path, "two", name="a", **body).json()
    b = create(gateway.url, path, "two", name="b", **body).json()
    ids = produce(official_pulsar, broker.service_url, topic, 8)
    got_a: list[str] = []
    got_b: list[str] = []
    end = time.monotonic() + 15
    while len(got_a) + len(got_b) < 8 and time.monotonic() < end:
        for inst, got in ((a, got_a), (b, got_b)):
            r = httpx.get(f"{inst['base_uri']}/messages", params={"timeout": 200}, timeout=30)
            got.extend(m["messageId"] for m in r.json()["messages"])
    assert sorted(got_a + got_b) == sorted(ids)
    assert got_a and got_b, "the broker gave one instance everything"
    # Every id through the cursor with no instance named: b's too go through a.
    r = ack(gateway.url, path, "two", ids)
    assert r.status_code == 200 and r.json()["consumer"] == a["id"], r.text
    for inst in (a, b):
        assert httpx.delete(inst["base_uri"]).status_code == 204
    c = create(gateway.url, path, "two", **body).json()
    r = httpx.get(f"{c['base_uri']}/messages", params={"timeout": 500}, timeout=30)
    assert r.json() == {"messages": []}, f"a got {len(got_a)}, b got {len(got_b)}"
    assert httpx.delete(c["base_uri"]).status_code == 204


def test_cumulative_acks_on_a_failover_subscription(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    ids = produce(official_pulsar, broker.service_url, topic, 4)
    body = {"subscriptionType": "Failover", "subscriptionInitialPosition": "earliest"}
    inst = create(gateway.url, path, "f", **body).json()
    assert len(fetch_n(inst["base_uri"], 4)) == 4
    r = ack(gateway.url, path, "f", [ids[2]], type="cumulative")
    assert r.status_code == 200, r.text
    cur = httpx.get(f"{gateway.url}{path}/subscription/f/cursor", timeout=30).json()
    assert cur["cursor"]["consumers"][0]["cumulativelyAcknowledged"] == [ids[2]]
    assert httpx.delete(inst["base_uri"]).status_code == 204
    inst = create(gateway.url, path, "f", **body).json()
    assert [m["messageId"] for m in fetch_n(inst["base_uri"], 1)] == [ids[3]]
    assert httpx.delete(inst["base_uri"]).status_code == 204


def test_duplicate_names_and_unknown_instances(gateway: Gateway) -> None:
    _, path = fresh()
    r = create(gateway.url, path, "d", name="dup", subscriptionType="Shared")
    assert r.status_code == 200, r.text
    inst = r.json()
    r = create(gateway.url, path, "d", name="dup", subscriptionType="Shared")
    assert (r.status_code, r.json()["code"]) == (409, 40901)
    r = create(gateway.url, path, "d", id=inst["id"])
    assert (r.status_code, r.json()["code"]) == (409, 40901)
    # The same name on another subscription is another instance.
    other = create(gateway.url, path, "d2", name="dup")
    assert other.status_code == 200, other.text
    unknown = inst["id"].replace("dup~", "nope~")
    for method, suffix in [
        ("GET", f"/consumer/{unknown}/messages"),
        ("DELETE", f"/consumers/{unknown}"),
        ("POST", f"/consumer/{unknown}/nack"),
        ("GET", "/consumer/not-an-id/messages"),
    ]:
        r = httpx.request(
            method,
            f"{gateway.url}{path}/subscription/d{suffix}",
            json={"messageIds": ["CAEQAQ=="]},
        )
        assert (r.status_code, r.json()["code"]) == (404, 40403), (method, suffix, r.text)
    r = httpx.get(f"{gateway.url}{path}/subscription/none/cursor")
    assert (r.status_code, r.json()["code"]) == (404, 40403)
    for i in (inst, other.json()):
        assert httpx.delete(i["base_uri"]).status_code == 204


def test_a_missing_namespace_is_40401(gateway: Gateway, broker_kind: str) -> None:
    r = create(gateway.url, f"/topics/nosuchtenant/nons/{uuid.uuid4().hex[:8]}", "s")
    if broker_kind == "apache":
        assert (r.status_code, r.json()["code"]) == (404, 40401), r.text
    else:  # pulsar-lite creates tenants, namespaces and topics on first use
        assert r.status_code == 200, r.text
        assert httpx.delete(r.json()["base_uri"]).status_code == 204


def test_long_poll_waits_for_a_message_then_answers_empty_after_its_timeout(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    inst = create(gateway.url, path, "lp", subscriptionType="Shared").json()
    t0 = time.monotonic()
    r = httpx.get(f"{inst['base_uri']}/messages", params={"timeout": 400}, timeout=30)
    took = time.monotonic() - t0
    assert r.json() == {"messages": []}
    assert 0.35 < took < 3, took
    later = threading.Timer(0.5, produce, (official_pulsar, broker.service_url, topic, 1, "late"))
    later.start()
    t0 = time.monotonic()
    r = httpx.get(f"{inst['base_uri']}/messages", params={"timeout": 10_000}, timeout=30)
    took = time.monotonic() - t0
    later.join()
    assert [m["value"] for m in r.json()["messages"]] == [b64(b"late0")]
    assert took < 8, f"the long poll did not answer when the message came ({took:.1f} s)"
    assert httpx.delete(inst["base_uri"]).status_code == 204


def test_deleting_an_instance_ends_its_long_poll(lite_gateway: Gateway) -> None:
    _, path = fresh()
    inst = create(lite_gateway.url, path, "del", subscriptionType="Shared").json()
    answer: list[httpx.Response] = []

    def poll() -> None:
        url = f"{inst['base_uri']}/messages"
        answer.append(httpx.get(url, params={"timeout": 10_000}, timeout=30))

    t = threading.Thread(target=poll)
    t0 = time.monotonic()
    t.start()
    time.sleep(0.5)
    assert httpx.delete(inst["base_uri"], timeout=30).status_code == 204
    t.join(30)
    assert time.monotonic() - t0 < 5
    assert (answer[0].status_code, answer[0].json()["code"]) == (404, 40403)


def test_max_messages_and_max_bytes_keep_the_rest_for_the_next_fetch(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    ids = produce(official_pulsar, broker.service_url, topic, 6)
    inst = create(gateway.url, path, "mb", subscriptionInitialPosition="earliest").json()
    seen: list[str] = []
    end = time.monotonic() + 15
    while len(seen) < 6 and time.monotonic() < end:
        # Each value is 2 bytes and each key 2: max_bytes=5 answers one message at a time.
        r = httpx.get(
            f"{inst['base_uri']}/messages",
            params={"timeout": 1000, "max_messages": 3, "max_bytes": 5},
            timeout=30,
        )
        msgs = r.json()["messages"]
        assert len(msgs) <= 1
        seen.extend(m["messageId"] for m in msgs)
    assert seen == ids
    assert httpx.delete(inst["base_uri"]).status_code == 204


def test_negative_acknowledgement_redelivers(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    ids = produce(official_pulsar, broker.service_url, topic, 3)
    inst = create(
        gateway.url,
        path,
        "n",
        subscriptionType="Shared",
        subscriptionInitialPosition="earliest",
        negativeAckRedeliveryDelayMs=200,
    ).json()
    got = fetch_n(inst["base_uri"], 3)
    assert sorted(m["messageId"] for m in got) == sorted(ids)
    assert ack(gateway.url, path, "n", [ids[0], ids[2]]).status_code == 200
    r = httpx.post(f"{inst['base_uri']}/nack", json={"messageIds": [ids[1]]}, timeout=30)
    assert r.status_code == 200, r.text
    again = fetch_n(inst["base_uri"], 1)
    assert [m["messageId"] for m in again] == [ids[1]]
    assert ack(gateway.url, path, "n", [ids[1]]).status_code == 200
    r = httpx.get(f"{inst['base_uri']}/messages", params={"timeout": 500}, timeout=30)
    assert r.json() == {"messages": []}
    cur = httpx.get(f"{gateway.url}{path}/subscription/n/cursor", timeout=30).json()
    c = cur["cursor"]["consumers"][0]
    assert (c["acknowledged"], c["negativelyAcknowledged"], c["delivered"]) == (3, 1, 4)
    assert httpx.delete(inst["base_uri"]).status_code == 204


@pytest.fixture(scope="module")
def node_b(lite_broker: PulsarLite) -> Any:
    """A second gateway node on pulsar-lite, with a short idle time and its own node id."""
    g = Gateway(lite_broker.service_url, "--consumer-idle", "1", "--node-id", "nodeb").start()
    try:
        yield g
    finally:
        g.close()


@pytest.fixture
def lite_gateway(lite_broker: PulsarLite, gateways: dict[str, Gateway]) -> Gateway:
    url = lite_broker.service_url
    if url not in gateways:
        gateways[url] = Gateway(
            url, "--max-body-bytes", "1048576", "--max-messages", "5000"
        ).start()
    return gateways[url]


def test_idle_instances_expire_and_use_keeps_them(node_b: Gateway) -> None:
    _, path = fresh()
    inst = create(node_b.url, path, "idle", name="idler", subscriptionType="Shared").json()
    assert inst["id"].startswith("idler~nodeb~")
    for _ in range(4):  # 2 s of use, twice the idle time
        r = httpx.get(f"{inst['base_uri']}/messages", params={"timeout": 500}, timeout=30)
        assert r.status_code == 200, r.text
    time.sleep(2)
    r = httpx.get(f"{inst['base_uri']}/messages", params={"timeout": 100}, timeout=30)
    assert (r.status_code, r.json()["code"]) == (404, 40403)
    # The name is free again.
    r = create(node_b.url, path, "idle", name="idler", subscriptionType="Shared")
    assert r.status_code == 200, r.text


def test_an_instance_of_another_node_is_redirected_there(
    lite_gateway: Gateway, node_b: Gateway, lite_broker: PulsarLite, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    ids = produce(official_pulsar, lite_broker.service_url, topic, 2)
    inst = create(
        node_b.url, path, "r", subscriptionType="Shared", subscriptionInitialPosition="earliest"
    ).json()
    # The request reaches the other node (as behind a load balancer).
    wrong = f"{lite_gateway.url}{path}/subscription/r/consumer/{inst['id']}/messages?timeout=2000"
    r = httpx.get(wrong)
    assert r.status_code == 307
    assert r.headers["location"] == wrong.replace(lite_gateway.url, node_b.url)
    r = httpx.get(wrong, follow_redirects=True, timeout=30)
    assert sorted(m["messageId"] for m in r.json()["messages"]) == sorted(ids)
    r = httpx.post(
        f"{lite_gateway.url}{path}/subscription/r/cursor",
        json={"messageIds": ids, "consumer": inst["id"]},
        follow_redirects=True,
    )
    assert r.status_code == 200 and r.json()["acknowledged"] == 2, r.text
    # Creating again with that id: redirected to its node, where the name is taken.
    r = httpx.post(f"{lite_gateway.url}{path}/subscription/r", json={"id": inst["id"]})
    assert (r.status_code, r.headers["location"]) == (307, f"{node_b.url}{path}/subscription/r")
    r = httpx.post(
        f"{lite_gateway.url}{path}/subscription/r", json={"id": inst["id"]}, follow_redirects=True
    )
    assert (r.status_code, r.json()["code"]) == (409, 40901)
    r = httpx.delete(f"{lite_gateway.url}{path}/subscription/r/consumers/{inst['id']}")
    assert r.status_code == 307
    r = httpx.delete(r.headers["location"])
    assert r.status_code == 204


def test_string_and_json_schemas_write_values_as_such(
    lite_gateway: Gateway, lite_broker: PulsarLite, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    client = official_pulsar.Client(lite_broker.service_url)
    try:
        p = client.create_producer(topic, batching_enabled=False)
        for v in ["héllo".encode(), b'{"a": [1, 2]}', b"\xff\xfe"]:
            p.send(v)
    finally:
        client.close()
    got = {}
    for schema in ["STRING", "JSON"]:
        inst = create(
            lite_gateway.url,
            path,
            schema,
            subscriptionInitialPosition="earliest",
            value_schema={"type": schema},
        ).json()
        got[schema] = [(m["value"], m.get("valueEncoding")) for m in fetch_n(inst["base_uri"], 3)]
        assert httpx.delete(inst["base_uri"]).status_code == 204
    # A value the schema cannot write is given as base64, marked, never altered.
    assert got["STRING"] == [("héllo", None), ('{"a": [1, 2]}', None), (b64(b"\xff\xfe"), "base64")]
    assert got["JSON"] == [
        (b64("héllo".encode()), "base64"),
        ({"a": [1, 2]}, None),
        (b64(b"\xff\xfe"), "base64"),
    ]


def test_shutdown_is_prompt_and_acks_made_before_it_hold(
    lite_broker: PulsarLite, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    ids = produce(official_pulsar, lite_broker.service_url, topic, 4)
    g = Gateway(lite_broker.service_url).start()
    try:
        body = {"subscriptionType": "Shared", "subscriptionInitialPosition": "earliest"}
        inst = create(g.url, path, "sd", **body).json()
        assert len(fetch_n(inst["base_uri"], 4)) == 4
        assert ack(g.url, path, "sd", ids[:3]).status_code == 200
        t0 = time.monotonic()
        assert g.stop() == 0
        assert time.monotonic() - t0 < 5
    finally:
        g.close()
    g = Gateway(lite_broker.service_url).start()
    try:
        inst = create(g.url, path, "sd", **body).json()
        assert [m["messageId"] for m in fetch_n(inst["base_uri"], 1)] == [ids[3]]
        r = httpx.get(f"{inst['base_uri']}/messages", params={"timeout": 300}, timeout=30)
        assert r.json() == {"messages": []}
    finally:
        g.close()


BAD: list[tuple[str, str, Any, int, int]] = [
    ("POST", "", b"{not json", 400, 40001),
    ("POST", "", {"subscriptionType": "Sometimes"}, 400, 40001),
    ("POST", "", {"subscriptionInitialPosition": "middle"}, 400, 40001),
    ("POST", "", {"name": "has space"}, 400, 40001),
    ("POST", "", {"id": "not-an-id"}, 400, 40001),
    ("POST", "", {"unknown": 1}, 400, 40001),
    ("POST", "", {"value_schema": {"type": "AVRO"}}, 422, 42204),
    ("GET", "/consumer/{id}/messages?timeout=-1", None, 400, 40001),
    ("GET", "/consumer/{id}/messages?position=earliest", None, 400, 40001),
    ("POST", "/cursor", b"{not json", 400, 40001),
    ("POST", "/cursor", {"messageIds": []}, 400, 40001),
    ("POST", "/cursor", {"messageIds": ["%%%"]}, 400, 40001),
    ("POST", "/cursor", {"messageIds": ["AAAA"]}, 400, 40001),
    ("POST", "/cursor", {"messageIds": ["CAEQAQ=="], "type": "sometimes"}, 400, 40001),
    # Cumulative acknowledgement is not allowed on a Shared subscription.
    ("POST", "/cursor", {"messageIds": ["CAEQAQ=="], "type": "cumulative"}, 400, 40001),
    ("POST", "/consumer/{id}/nack", {"messageIds": ["AAAA"]}, 400, 40001),
    ("POST", "/consumer/{id}/nack", {"messageIds": ["CAE="], "type": "cumulative"}, 400, 40001),
    ("PUT", "/cursor", None, 405, 40501),
    ("GET", "/consumer/{id}", None, 405, 40501),
]


@pytest.mark.parametrize(("method", "suffix", "body", "status", "code"), BAD)
def test_bad_requests_are_answered_and_the_instance_keeps_serving(
    lite_gateway: Gateway, method: str, suffix: str, body: Any, status: int, code: int
) -> None:
    _, path = fresh()
    base = f"{lite_gateway.url}{path}/subscription/b"
    inst = httpx.post(base, json={"subscriptionType": "Shared"}, timeout=30).json()
    url = base + suffix.replace("{id}", inst["id"])
    kw: dict[str, Any] = {}
    if isinstance(body, bytes):
        kw = {"content": body, "headers": {"Content-Type": "application/json"}}
    elif body is not None:
        kw = {"json": body}
    r = httpx.request(method, url, timeout=30, **kw)
    assert (r.status_code, r.json()["code"]) == (status, code), r.text
    r = httpx.get(f"{inst['base_uri']}/messages", params={"timeout": 50}, timeout=30)
    assert r.json() == {"messages": []}
    assert httpx.delete(inst["base_uri"]).status_code == 204
