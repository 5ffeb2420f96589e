"""The PIP-64 gateway driven by real HTTP clients (httpx, curl), judged by the official
client, on pulsar-lite and Apache Pulsar: PIP-64 produce, the broker's dialect, binary
produce, reads with the official ids, and bad requests answered with their status and code
while the gateway keeps serving."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.peers.broker import Broker
from tests.peers.gateway import Gateway


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def fresh() -> tuple[str, str]:
    name = "gw-" + uuid.uuid4().hex[:12]
    return f"persistent://public/default/{name}", f"/topics/public/default/{name}"


def official_read(pulsar: ModuleType, url: str, topic: str, n: int) -> list[Any]:
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        out = [reader.read_next(10_000) for _ in range(n)]
        reader.close()
        return out
    finally:
        client.close()


def test_health(gateway: Gateway) -> None:
    assert httpx.get(f"{gateway.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{gateway.url}/readyz").status_code == 200


def test_pip64_produce_is_read_by_the_official_client(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    body = {
        "messages": [
            {
                "key": f"k{i}",
                "value": b64(b"v%d" % i),
                "properties": {"i": str(i), "src": "http"},
                "eventTime": 1_700_000_000_000 + i,
            }
            for i in range(20)
        ]
    }
    r = httpx.post(gateway.url + path, json=body, timeout=30)
    assert r.status_code == 200, r.text
    ids = r.json()["messageIds"]
    assert len(ids) == 20 and all(x["error_code"] is None for x in ids)
    msgs = official_read(official_pulsar, broker.service_url, topic, 20)
    for i, m in enumerate(msgs):
        assert m.data() == b"v%d" % i
        assert m.partition_key() == f"k{i}"
        assert m.properties() == {"i": str(i), "src": "http"}
        assert m.event_timestamp() == 1_700_000_000_000 + i
        assert b64(m.message_id().serialize()) == ids[i]["messageId"]


def test_string_and_json_values(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    r = httpx.post(
        gateway.url + path,
        json={"value_schema": {"type": "STRING"}, "messages": [{"value": "héllo"}]},
    )
    assert r.status_code == 200, r.text
    r = httpx.post(
        gateway.url + path, json={"schema_type": "JSON", "messages": [{"value": {"a": [1, 2]}}]}
    )
    assert r.status_code == 200, r.text
    got = [m.data() for m in official_read(official_pulsar, broker.service_url, topic, 2)]
    assert got[0] == "héllo".encode()
    assert json.loads(got[1]) == {"a": [1, 2]}


def test_the_broker_dialect_works_on_plain_input(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, _ = fresh()
    path = "/topics/" + topic.replace("persistent://", "persistent/")
    body = {"messages": [{"payload": "plain text", "key": "k1"}, {"payload": "second"}]}
    r = httpx.post(gateway.url + path, json=body)
    assert r.status_code == 200, r.text
    results = r.json()["messagePublishResults"]
    assert [x["errorCode"] for x in results] == [0, 0]
    ledger, entry, _ = results[0]["messageId"].split(":")
    msgs = official_read(official_pulsar, broker.service_url, topic, 2)
    assert [m.data() for m in msgs] == [b"plain text", b"second"]
    assert msgs[0].partition_key() == "k1"
    assert (msgs[0].message_id().ledger_id(), msgs[0].message_id().entry_id()) == (
        int(ledger),
        int(entry),
    )


def test_binary_produce_with_curl(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    out = subprocess.run(
        [
            "curl",
            "-sS",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/octet-stream",
            "-H",
            "X-Pulsar-Key: bin-key",
            "-H",
            "X-Pulsar-Property-color: blue",
            "-H",
            "X-Pulsar-Event-Time: 1234",
            "--data-binary",
            "@-",
            gateway.url + path,
        ],
        input=b"\x00\x01raw\xff",
        capture_output=True,
        check=True,
        timeout=30,
    )
    answer = json.loads(out.stdout)
    assert answer["messageIds"][0]["error_code"] is None, answer
    (m,) = official_read(official_pulsar, broker.service_url, topic, 1)
    assert m.data() == b"\x00\x01raw\xff"
    assert m.partition_key() == "bin-key"
    assert m.properties() == {"color": "blue"}
    assert m.event_timestamp() == 1234


def test_reads_return_the_official_ids_and_page(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    client = official_pulsar.Client(
        broker.service_url, logger=official_pulsar.ConsoleLogger(official_pulsar.LoggerLevel.Error)
    )
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(b"m%d" % i, properties={"n": str(i)}) for i in range(10)]
    client.close()
    r = httpx.get(
        f"{gateway.url}{path}/messages", params={"max_messages": 6, "timeout": 5000}, timeout=30
    )
    assert r.status_code == 200, r.text
    first = r.json()
    assert [m["messageId"] for m in first["messages"]] == [b64(i.serialize()) for i in ids[:6]]
    assert [base64.b64decode(m["value"]) for m in first["messages"]] == [
        b"m%d" % i for i in range(6)
    ]
    assert first["messages"][3]["properties"] == {"n": "3"}
    r = httpx.get(
        f"{gateway.url}{path}/messages",
        params={"position": first["nextPosition"], "timeout": 5000, "max_messages": 100},
        timeout=30,
    )
    rest = r.json()["messages"]
    assert [m["messageId"] for m in rest] == [b64(i.serialize()) for i in ids[6:]]
    r = httpx.get(f"{gateway.url}{path}/messages", params={"position": "latest", "timeout": 300})
    assert r.json()["messages"] == []


@pytest.mark.parametrize(
    ("content", "body", "status", "code"),
    [
        ("application/json", b"{not json", 400, 40001),
        ("application/json", b'{"nope": []}', 400, 40001),
        ("application/json", b'{"messages": [{"value": "%%%"}]}', 422, 42205),
        ("application/json", b'{"messages": [{"value": 5}]}', 422, 42205),
        ("application/json", b'{"messages": [{"value": "", "partition": 3}]}', 200, None),
        ("text/plain", b"hello", 415, 41501),
        ("application/json", b'{"messages": [{"value": "' + b"A" * 1_100_000 + b'"}]}', 413, 41301),
    ],
)
def test_bad_requests_are_answered_and_the_gateway_keeps_serving(
    gateway: Gateway, content: str, body: bytes, status: int, code: int | None
) -> None:
    _, path = fresh()
    r = httpx.post(gateway.url + path, content=body, headers={"Content-Type": content})
    assert r.status_code == status, r.text
    if code is not None:
        assert r.json()["code"] == code
    else:
        # A partition that does not exist fails that message only, non-retriable.
        (result,) = r.json()["messageIds"]
        assert result["error_code"] == 1 and "partition 3" in result["error"]
    ok = httpx.post(gateway.url + path, json={"messages": [{"value": b64(b"after")}]})
    assert ok.status_code == 200


def test_unknown_paths_methods_and_partitions(gateway: Gateway) -> None:
    _, path = fresh()
    assert httpx.get(gateway.url + "/nope").status_code == 404
    assert httpx.get(gateway.url + path).status_code == 405
    r = httpx.post(gateway.url + path + "/partitions/2", json={"messages": [{"value": ""}]})
    assert (r.status_code, r.json()["code"]) == (404, 40402)
    r = httpx.get(gateway.url + path + "/messages", params={"position": "AAAA"})
    assert (r.status_code, r.json()["code"]) == (400, 40001)


def test_streaming_ndjson_produce(
    gateway: Gateway, broker: Broker, official_pulsar: ModuleType
) -> None:
    topic, path = fresh()
    n = 2000

    def lines() -> Any:
        for i in range(n):
            if i == 7:
                yield b"{not json}\n"
            m: dict[str, Any] = {"key": f"k{i % 5}", "value": b64(b"s%d" % i)}
            if i in (11, 12, 1500):
                # Options of its own: sent alone, between the runs sent together; order holds.
                m["deliverAfterMs"] = 1
            yield (json.dumps(m) + "\n").encode()

    with httpx.stream(
        "POST",
        gateway.url + path,
        content=lines(),
        headers={"Content-Type": "application/x-ndjson"},
        timeout=60,
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/x-ndjson"
        reports = [json.loads(line) for line in r.iter_lines() if line]
    assert len(reports) == n + 1
    assert reports[7]["error_code"] == 1 and "line 8" in reports[7]["error"]
    ok = [x for i, x in enumerate(reports) if i != 7]
    assert all("messageId" in x for x in ok)
    msgs = official_read(official_pulsar, broker.service_url, topic, n)
    assert [m.data() for m in msgs] == [b"s%d" % i for i in range(n)]
    assert [b64(m.message_id().serialize()) for m in msgs] == [x["messageId"] for x in ok]
