"""Schema-typed produce through the PIP-64 gateway on Apache Pulsar 4.0.7 (its registry):
JSON and AVRO records POSTed as JSON values are checked against ``value_schema``, encoded,
registered by the gateway's producer (``schema_version`` answered), and read back as the
same values by the official client's ``pulsar.schema`` classes and by ``streamwire.schema``;
a value that does not fit is 422 42205 with nothing sent; an incompatible schema is 409.
Records the official client writes with ``AvroSchema`` come back as JSON values from reads
with ``include_schema`` and from consumer instances (plain and streamed fetches) created
with the record's ``value_schema``."""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import uuid
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NamedTuple, Optional

import httpx
import pytest
import streamwire
from streamwire.schema import AvroSchema, JsonSchema

from tests.gateway.test_gateway import official_read
from tests.peers.gateway import Gateway
from tests.schemas.records import Reading, official_classes, official_sample, sample

N = 10
KINDS = ["avro", "json"]


@pytest.fixture
def apache_gateway(apache_broker: Any, gateways: dict[str, Gateway]) -> Iterator[Gateway]:
    """The session's gateway in front of Apache Pulsar (shared with ``gateway``)."""
    url = apache_broker.service_url
    if url not in gateways:
        gateways[url] = Gateway(
            url, "--max-body-bytes", "1048576", "--max-messages", "5000"
        ).start()
    yield gateways[url]


def fresh() -> tuple[str, str]:
    name = "gws-" + uuid.uuid4().hex[:12]
    return f"persistent://public/default/{name}", f"/topics/public/default/{name}"


class Read(NamedTuple):
    """A message as :func:`ours_read` gives it: its value decoded while the client was open
    (a schema's value decodes through the client)."""

    value: Any
    key: Optional[str]
    schema_version: Optional[bytes]


def ours_read(url: str, topic: str, n: int, schema: Any = None) -> list[Read]:
    """The first ``n`` messages of ``topic``, read by a streamwire reader with ``schema``."""
    with streamwire.Client(url) as client:
        rd = client.create_reader(topic, "earliest", schema=schema)
        got = [rd.read_next(timeout=15) for _ in range(n)]
        read = [Read(m.value, m.key, m.schema_version) for m in got]
        rd.close()
    return read


def nothing_sent(url: str, topic: str) -> None:
    """``topic`` holds no message (a refused request sent none)."""
    with streamwire.Client(url) as client:
        rd = client.create_reader(topic, "earliest")
        assert not rd.has_message_available()
        rd.close()


def read_back(gateway: Gateway, path: str) -> dict[str, Any]:
    """The gateway's read of the topic at ``path`` with its schemas (``include_schema``)."""
    r = httpx.get(
        f"{gateway.url}{path}/messages",
        params={"include_schema": "true", "timeout": 5000},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def fetch_all(base: str, n: int) -> list[Any]:
    """At least ``n`` messages fetched from the consumer instance at ``base`` (20 tries)."""
    got: list[Any] = []
    for _ in range(20):
        if len(got) >= n:
            break
        f = httpx.get(f"{base}/messages", params={"timeout": 2000}, timeout=30)
        assert f.status_code == 200, f.text
        got += f.json()["messages"]
    return got


def ours_for(kind: str) -> Any:
    return AvroSchema(Reading) if kind == "avro" else JsonSchema(Reading)


def expected(kind: str, i: int) -> Reading:
    r = sample(i)
    # The official client's JSON writes an enum by its Python value, not its symbol: the
    # JSON interop records leave the enum out (as tests/schemas do).
    return dataclasses.replace(r, color=None) if kind == "json" else r


def as_json(v: Any) -> Any:
    """A record as the JSON value a PIP-64 body carries: bytes as text, enums by symbol."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: as_json(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, list):
        return [as_json(x) for x in v]
    if isinstance(v, dict):
        return {k: as_json(x) for k, x in v.items()}
    return v


def definition_of(kind: str) -> str:
    d = ours_for(kind).definition
    return d.decode() if isinstance(d, bytes) else str(d)


def body(kind: str, definition: str, values: list[Any]) -> dict[str, Any]:
    return {
        "schema_type": kind.upper(),
        "value_schema": {"type": kind.upper(), "schema": definition, "properties": {}},
        "messages": [{"key": f"k{i}", "value": v} for i, v in enumerate(values)],
    }


@pytest.mark.parametrize("kind", KINDS)
def test_records_posted_are_read_by_both_clients(
    apache_gateway: Gateway, apache_broker: Any, official_pulsar: ModuleType, kind: str
) -> None:
    topic, path = fresh()
    values = [as_json(expected(kind, i)) for i in range(N)]
    r = httpx.post(
        apache_gateway.url + path, json=body(kind, definition_of(kind), values), timeout=30
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert all(x["error_code"] is None for x in answer["messageIds"])
    assert isinstance(answer["schema_version"], int)

    # The official client, with its own Record class of the same fields.
    official_reading, _ = official_classes(official_pulsar)
    s = official_pulsar.schema
    theirs = s.AvroSchema(official_reading) if kind == "avro" else s.JsonSchema(official_reading)
    got = official_read(official_pulsar, apache_broker.service_url, topic, N)
    for i, m in enumerate(got):
        v, want = theirs.decode(m.data()), expected(kind, i)
        assert (v.name, v.count, v.total, v.label, v.ok) == (
            want.name,
            want.count,
            want.total,
            want.label,
            want.ok,
        )
        assert v.tags == want.tags and v.sizes == want.sizes and v.raw == want.raw
        assert v.precise == pytest.approx(want.precise) and v.ratio == pytest.approx(want.ratio)
        assert want.inner is not None
        assert (v.inner.a, v.inner.tag) == (want.inner.a, want.inner.tag)
        assert v.color == want.color
        assert m.partition_key() == f"k{i}"

    # streamwire, with its schema: same values, and the version the gateway answered.
    mine = ours_read(apache_broker.service_url, topic, N, ours_for(kind))
    assert [m.value for m in mine] == [expected(kind, i) for i in range(N)]
    version = int.from_bytes(mine[0].schema_version, "big")
    assert version == answer["schema_version"]


def test_a_value_that_does_not_fit_is_422_and_nothing_is_sent(
    apache_gateway: Gateway, apache_broker: Any
) -> None:
    topic, path = fresh()
    good = as_json(sample(0))
    bad = dict(good, count="not a number")
    r = httpx.post(apache_gateway.url + path, json=body("avro", definition_of("avro"), [good, bad]))
    assert r.status_code == 422, r.text
    assert r.json()["code"] == 42205
    assert "messages[1]" in r.json()["message"] and "count" in r.json()["message"]
    # All or nothing: the good message was not sent either.
    nothing_sent(apache_broker.service_url, topic)


def test_a_different_schema_gets_its_own_producer_and_an_incompatible_one_is_409(
    apache_gateway: Gateway, apache_broker: Any
) -> None:
    topic, path = fresh()
    url = apache_gateway.url + path
    definition = definition_of("avro")
    r = httpx.post(url, json=body("avro", definition, [as_json(sample(0))]))
    assert r.status_code == 200, r.text
    v1 = r.json()["schema_version"]
    # A compatible evolution (a new field with a default): a second producer, version.
    evolved = json.loads(definition)
    evolved["fields"].append({"name": "extra", "type": ["null", "string"], "default": None})
    r = httpx.post(url, json=body("avro", json.dumps(evolved), [as_json(sample(1))]))
    assert r.status_code == 200, r.text
    assert r.json()["schema_version"] != v1
    # The same record with a field changed from a string to a long: refused by the broker.
    changed = json.loads(definition)
    changed["fields"][0]["type"] = ["null", "long"]
    r = httpx.post(url, json=body("avro", json.dumps(changed), [{"label": "x", "name": 5}]))
    assert r.status_code == 409, r.text
    assert r.json()["code"] == 40902 and "incompatible" in r.json()["message"]
    # Bytes on the same topic stay as before (a producer without a schema is refused by the
    # registry too, but the gateway keeps serving).
    assert httpx.get(apache_gateway.url + "/healthz").status_code == 200
    got = ours_read(apache_broker.service_url, topic, 2, AvroSchema(Reading))
    assert [m.value for m in got] == [sample(0), sample(1)]


def official_avro_topic(pulsar: ModuleType, url: str, n: int) -> tuple[str, str]:
    """A fresh topic the official client wrote ``n`` AvroSchema records to."""
    topic, path = fresh()
    official_reading, _ = official_classes(pulsar)
    oc = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        p = oc.create_producer(topic, schema=pulsar.schema.AvroSchema(official_reading))
        for i in range(n):
            p.send(official_sample(pulsar, i))
        p.close()
    finally:
        oc.close()
    return topic, path


def test_reads_decode_what_the_official_client_writes_with_include_schema(
    apache_gateway: Gateway, apache_broker: Any, official_pulsar: ModuleType
) -> None:
    _, path = official_avro_topic(official_pulsar, apache_broker.service_url, N)
    url = f"{apache_gateway.url}{path}/messages"
    r = httpx.get(url, params={"include_schema": "true", "timeout": 5000}, timeout=30)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert [m["value"] for m in answer["messages"]] == [as_json(sample(i)) for i in range(N)]
    (schema,) = answer["schemas"]
    assert schema["type"] == "AVRO" and isinstance(schema["version"], int)
    assert json.loads(base64.b64decode(schema["data"]))["name"] == "Reading"
    assert {m["schemaVersion"] for m in answer["messages"]} == {schema["version"]}
    # Without include_schema: the payload bytes, base64, as before.
    plain = httpx.get(url, params={"timeout": 5000}, timeout=30).json()
    assert "schemas" not in plain
    ours = AvroSchema(Reading)
    got = [ours.decode(base64.b64decode(m["value"])) for m in plain["messages"]]
    assert got == [sample(i) for i in range(N)]


def test_a_consumer_instance_with_a_value_schema_gets_json_values(
    apache_gateway: Gateway, apache_broker: Any, official_pulsar: ModuleType
) -> None:
    _, path = official_avro_topic(official_pulsar, apache_broker.service_url, N)
    r = httpx.post(
        f"{apache_gateway.url}{path}/subscription/typed",
        json={
            "subscriptionInitialPosition": "earliest",
            "schema_type": "AVRO",
            "value_schema": {"type": "AVRO", "schema": definition_of("avro")},
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    got = fetch_all(base, N)
    assert [m["value"] for m in got] == [as_json(sample(i)) for i in range(N)]
    assert all("valueEncoding" not in m for m in got)
    assert httpx.delete(base.replace("/consumer/", "/consumers/")).status_code in (200, 204)


def test_a_streamed_fetch_decodes_records_too(
    apache_gateway: Gateway, apache_broker: Any, official_pulsar: ModuleType
) -> None:
    _, path = official_avro_topic(official_pulsar, apache_broker.service_url, N)
    r = httpx.post(
        f"{apache_gateway.url}{path}/subscription/streamed",
        json={
            "subscriptionInitialPosition": "earliest",
            "value_schema": {"type": "AVRO", "schema": definition_of("avro")},
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    params = {"stream": "ndjson", "timeout": 20000, "max_messages": N}
    with httpx.stream("GET", f"{base}/messages", params=params, timeout=30) as s:
        assert s.status_code == 200
        got = [json.loads(line) for line in s.iter_lines() if line.strip()]
    assert [m["value"] for m in got] == [as_json(sample(i)) for i in range(N)]
    assert httpx.delete(base.replace("/consumer/", "/consumers/")).status_code in (200, 204)


def test_a_schema_named_by_its_version_alone(apache_gateway: Gateway, apache_broker: Any) -> None:
    topic, path = fresh()
    url = apache_gateway.url + path
    r = httpx.post(url, json=body("avro", definition_of("avro"), [as_json(sample(0))]))
    assert r.status_code == 200, r.text
    version = r.json()["schema_version"]
    by_version = {
        "schema_type": "AVRO",
        "schema_version": version,
        "messages": [{"value": as_json(sample(1))}],
    }
    r = httpx.post(url, json=by_version)
    assert r.status_code == 200, r.text
    assert r.json()["schema_version"] == version
    r = httpx.post(url, json=dict(by_version, schema_type="JSON"))
    assert (r.status_code, r.json()["code"]) == (422, 42204)
    r = httpx.post(url, json=dict(by_version, schema_version=version + 100))
    assert (r.status_code, r.json()["code"]) == (422, 42204), r.text
    with streamwire.Client(apache_broker.service_url) as client:
        rd = client.create_reader(topic, "earliest", schema=AvroSchema(Reading))
        got = [rd.read_next(timeout=15) for _ in range(2)]
        assert [m.value for m in got] == [sample(0), sample(1)]
        assert not rd.has_message_available()
        rd.close()
