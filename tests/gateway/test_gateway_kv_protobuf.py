"""KEY_VALUE and PROTOBUF_NATIVE schemas through the PIP-64 gateway on Apache Pulsar 4.0.7
(its registry):

- PROTOBUF_NATIVE values POSTed as proto3 JSON (written by the ``protobuf`` library's own
  ``json_format``, an independent encoder) or as base64 of encoded bytes are registered with
  the descriptor and read back as the same messages by the official client's raw bytes
  (``FromString``) and by streamwire's ``ProtobufNative``; what streamwire's typed producer
  writes, reads with ``include_schema`` and consumer instances answer as proto3 JSON that
  ``json_format.ParseDict`` turns back into the same messages.
- KEY_VALUE (INLINE and SEPARATED) of string, AVRO and INT32 halves: the gateway's key and
  value encodings are read back by streamwire's ``KeyValueSchema`` and checked on the
  official client's raw bytes (the framing and the base64 key decoded here); what
  streamwire's ``KeyValueSchema`` producer writes, reads decode into ``key`` and ``value``.
- Values that do not fit are 422 42205 (naming key or value), bad halves 42203 / 42204, and
  nothing is sent.

The official Python client has no KeyValue schema: its side is raw bytes."""

from __future__ import annotations

import base64
import json
import struct
from types import ModuleType
from typing import Any

import httpx
import pytest
import streamwire
from google.protobuf import json_format
from streamwire.schema import AvroSchema, KeyValueSchema, ProtobufNative, StringSchema

from tests.gateway.test_gateway import official_read
from tests.gateway.test_gateway_schemas import (
    apache_gateway,  # noqa: F401  (the fixture, used by name)
    as_json,
    definition_of,
    fetch_all,
    fresh,
    nothing_sent,
    ours_read,
    read_back,
)
from tests.peers.gateway import Gateway
from tests.schemas import protos
from tests.schemas.records import Reading, official_classes
from tests.schemas.records import sample as record_sample

N = 6


@pytest.fixture(scope="module")
def classes() -> tuple[Any, Any, Any]:
    return protos.reading_classes()


def proto_definition(reading: Any) -> str:
    d = ProtobufNative(reading).definition
    return d.decode() if isinstance(d, bytes) else str(d)


def proto_body(reading: Any, values: list[Any]) -> dict[str, Any]:
    return {
        "schema_type": "PROTOBUF_NATIVE",
        "value_schema": {"type": "PROTOBUF_NATIVE", "schema": proto_definition(reading)},
        "messages": [{"key": f"k{i}", "value": v} for i, v in enumerate(values)],
    }


def test_protobuf_values_posted_as_json_or_bytes_are_the_same_messages(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
    official_pulsar: ModuleType,
    classes: tuple[Any, Any, Any],
) -> None:
    reading, point, _ = classes
    want = [protos.sample(reading, point, i) for i in range(N)]
    # proto3 JSON by the protobuf library (json names, int64 as strings, bytes base64, enums
    # by name) for all but the last, which goes as base64 of its encoded bytes.
    values: list[Any] = [json_format.MessageToDict(m) for m in want[:-1]]
    values.append(base64.b64encode(want[-1].SerializeToString()).decode())
    topic, path = fresh()
    r = httpx.post(apache_gateway.url + path, json=proto_body(reading, values), timeout=30)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert all(x["error_code"] is None for x in answer["messageIds"])
    assert isinstance(answer["schema_version"], int)

    got = official_read(official_pulsar, apache_broker.service_url, topic, N)
    assert [reading.FromString(m.data()) for m in got] == want
    assert [m.partition_key() for m in got] == [f"k{i}" for i in range(N)]

    mine = ours_read(apache_broker.service_url, topic, N, ProtobufNative(reading))
    assert [m.value for m in mine] == want
    assert int.from_bytes(mine[0].schema_version, "big") == answer["schema_version"]

    # Read back through the gateway: the proto3 JSON of the same messages.
    read = read_back(apache_gateway, path)
    assert [json_format.ParseDict(m["value"], reading()) for m in read["messages"]] == want
    (schema,) = read["schemas"]
    assert schema["type"] == "PROTOBUF_NATIVE"
    assert read["messages"][0]["value"]["big"] == str(want[0].big)  # 64-bit as text


def test_protobuf_values_streamwire_writes_are_json_in_reads_and_fetches(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
    classes: tuple[Any, Any, Any],
) -> None:
    reading, point, _ = classes
    want = [protos.sample(reading, point, i) for i in range(N)]
    topic, path = fresh()
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(topic, schema=ProtobufNative(reading))
        p.send_many(want)
        p.close()
    msgs = read_back(apache_gateway, path)["messages"]
    assert [json_format.ParseDict(m["value"], reading()) for m in msgs] == want
    # Every field present, under its JSON name; absent messages and optionals as null.
    assert set(msgs[1]["value"]) == {f.json_name for f in reading.DESCRIPTOR.fields}
    assert msgs[1]["value"]["where"] is None and msgs[1]["value"]["note"] is None

    r = httpx.post(
        f"{apache_gateway.url}{path}/subscription/pb",
        json={
            "subscriptionInitialPosition": "earliest",
            "schema_type": "PROTOBUF_NATIVE",
            "value_schema": {"type": "PROTOBUF_NATIVE", "schema": proto_definition(reading)},
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    got = fetch_all(base, N)
    assert [json_format.ParseDict(m["value"], reading()) for m in got] == want
    assert all("valueEncoding" not in m for m in got)
    assert httpx.delete(base.replace("/consumer/", "/consumers/")).status_code in (200, 204)


def test_protobuf_values_that_do_not_fit_are_422_and_nothing_is_sent(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
    classes: tuple[Any, Any, Any],
) -> None:
    reading, point, _ = classes
    good = json_format.MessageToDict(protos.sample(reading, point, 0))
    topic, path = fresh()
    url = apache_gateway.url + path
    for bad, words in [
        ({"sensor": "x", "nope": 1}, '"nope" is not a field'),
        ({"count": "many"}, "count"),
        ({"level": "HUGE"}, "level"),
        ({"raw": "%%%"}, "base64"),
        ("bm90IHByb3RvYnVm", "not a message"),
    ]:
        r = httpx.post(url, json=proto_body(reading, [good, bad]), timeout=30)
        assert (r.status_code, r.json()["code"]) == (422, 42205), r.text
        assert "messages[1].value" in r.json()["message"] and words in r.json()["message"]
    broken = {"type": "PROTOBUF_NATIVE", "schema": '{"fileDescriptorSet": "AAAA"}'}
    r = httpx.post(url, json={"value_schema": broken, "messages": [{"value": good}]})
    assert (r.status_code, r.json()["code"]) == (422, 42204), r.text
    nothing_sent(apache_broker.service_url, topic)
    assert httpx.get(apache_gateway.url + "/healthz").status_code == 200


def kv_body(key_schema: Any, value_schema: Any, encoding: str, pairs: list[Any]) -> dict[str, Any]:
    return {
        "schema_type": "KEY_VALUE",
        "key_schema": key_schema,
        "value_schema": value_schema,
        "kv_encoding": encoding.upper(),
        "messages": [{"key": k, "value": v} for k, v in pairs],
    }


def inline_halves(payload: bytes) -> tuple[bytes, bytes]:
    """The halves of an INLINE key/value payload, by the framing: i32 BE lengths."""
    (kn,) = struct.unpack(">i", payload[:4])
    key = payload[4 : 4 + kn]
    (vn,) = struct.unpack(">i", payload[4 + kn : 8 + kn])
    value = payload[8 + kn : 8 + kn + vn]
    assert len(payload) == 8 + kn + vn
    return key, value


@pytest.mark.parametrize("encoding", ["inline", "separated"])
def test_key_values_posted_are_read_by_both_clients(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
    official_pulsar: ModuleType,
    encoding: str,
) -> None:
    avro = {"type": "AVRO", "schema": definition_of("avro")}
    pairs = [(f"key-{i}", as_json(record_sample(i))) for i in range(N)]
    topic, path = fresh()
    r = httpx.post(
        apache_gateway.url + path,
        json=kv_body({"type": "STRING"}, avro, encoding, pairs),
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert isinstance(r.json()["schema_version"], int)

    ours = KeyValueSchema(StringSchema(), AvroSchema(Reading), encoding=encoding)
    got = [m.value for m in ours_read(apache_broker.service_url, topic, N, ours)]
    assert got == [(f"key-{i}", record_sample(i)) for i in range(N)]

    # The official client's raw bytes, decoded here and by its own AvroSchema.
    official_reading, _ = official_classes(official_pulsar)
    theirs = official_pulsar.schema.AvroSchema(official_reading)
    for i, m in enumerate(official_read(official_pulsar, apache_broker.service_url, topic, N)):
        if encoding == "inline":
            key, value = inline_halves(m.data())
        else:
            # SEPARATED: the key bytes travel base64 as the message key.
            key, value = base64.b64decode(m.partition_key()), m.data()
        assert key == f"key-{i}".encode()
        assert theirs.decode(value).name == record_sample(i).name
        assert theirs.decode(value).count == record_sample(i).count


def test_key_values_of_primitive_and_record_halves_and_their_reads(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
    official_pulsar: ModuleType,
) -> None:
    avro = {"type": "AVRO", "schema": definition_of("avro")}
    topic, path = fresh()
    pairs = [(as_json(record_sample(i)), -i * 1000) for i in range(3)]
    r = httpx.post(
        apache_gateway.url + path,
        json=kv_body(avro, {"type": "INT32"}, "inline", pairs),
        timeout=30,
    )
    assert r.status_code == 200, r.text
    for i, m in enumerate(official_read(official_pulsar, apache_broker.service_url, topic, 3)):
        _, value = inline_halves(m.data())
        assert value == struct.pack(">i", -i * 1000)  # the Java client's INT32: 4 bytes BE
    read = read_back(apache_gateway, path)
    assert [(m["key"], m["value"]) for m in read["messages"]] == pairs
    assert [s["type"] for s in read["schemas"]] == ["KEY_VALUE"]
    # The same schema named by its version alone.
    version = read["messages"][0]["schemaVersion"]
    r = httpx.post(
        apache_gateway.url + path,
        json={
            "schema_type": "KEY_VALUE",
            "schema_version": version,
            "messages": [{"key": as_json(record_sample(9)), "value": 9}],
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    assert r.json()["schema_version"] == version


@pytest.mark.parametrize("encoding", ["inline", "separated"])
def test_key_values_streamwire_writes_come_back_decoded(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
    classes: tuple[Any, Any, Any],
    encoding: str,
) -> None:
    reading, point, _ = classes
    schema = KeyValueSchema(StringSchema(), ProtobufNative(reading), encoding=encoding)
    pairs = [(f"k{i}", protos.sample(reading, point, i)) for i in range(N)]
    topic, path = fresh()
    with streamwire.Client(apache_broker.service_url) as client:
        p = client.create_producer(topic, schema=schema)
        p.send_many(pairs)
        p.close()
    msgs = read_back(apache_gateway, path)["messages"]
    got = [(m["key"], json_format.ParseDict(m["value"], reading())) for m in msgs]
    assert got == pairs
    # A consumer instance created with the key/value schema decodes the same way.
    r = httpx.post(
        f"{apache_gateway.url}{path}/subscription/kv",
        json={
            "subscriptionInitialPosition": "earliest",
            "schema_type": "KEY_VALUE",
            "key_schema": {"type": "STRING"},
            "value_schema": {"type": "PROTOBUF_NATIVE", "schema": proto_definition(reading)},
        },
        timeout=30,
    )
    assert r.status_code == 200, r.text
    base = r.json()["base_uri"]
    fetched = fetch_all(base, N)
    assert [(m["key"], json_format.ParseDict(m["value"], reading())) for m in fetched] == pairs
    assert httpx.delete(base.replace("/consumer/", "/consumers/")).status_code in (200, 204)


def test_key_values_that_do_not_fit_are_422_with_the_part_named(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
) -> None:
    avro = {"type": "AVRO", "schema": definition_of("avro")}
    good = as_json(record_sample(0))
    topic, path = fresh()
    url = apache_gateway.url + path
    cases: list[tuple[dict[str, Any], int, str]] = [
        (
            kv_body({"type": "INT32"}, avro, "inline", [(1, good), ("x", good)]),
            42205,
            "messages[1].key",
        ),
        (
            kv_body({"type": "STRING"}, avro, "inline", [("a", {"count": "x"})]),
            42205,
            "messages[0].value",
        ),
        (kv_body({"type": "AVRO"}, avro, "inline", [("a", good)]), 42203, "key_schema"),
        (
            kv_body({"type": "STRING"}, {"type": "AVRO", "schema": "{"}, "inline", [("a", good)]),
            42204,
            "value_schema",
        ),
        (kv_body({"type": "STRING"}, avro, "sideways", [("a", good)]), 42201, "kv_encoding"),
    ]
    for b, code, words in cases:
        r = httpx.post(url, json=b, timeout=30)
        assert (r.status_code, r.json()["code"]) == (422, code), r.text
        assert words in r.json()["message"], r.text
    nothing_sent(apache_broker.service_url, topic)


def test_the_broker_dialect_takes_key_and_value_schemas(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
) -> None:
    name = fresh()[1].rsplit("/", 1)[1]
    topic = f"persistent://public/default/{name}"
    avro = json.dumps({"type": "AVRO", "schema": definition_of("avro"), "properties": {}})
    body = {
        "keySchema": json.dumps({"type": "STRING", "schema": "", "properties": {}}),
        "valueSchema": avro,
        "kvEncoding": "SEPARATED",
        "messages": [
            {"key": f"k{i}", "payload": json.dumps(as_json(record_sample(i)))} for i in range(3)
        ],
    }
    r = httpx.post(f"{apache_gateway.url}/topics/persistent/public/default/{name}", json=body)
    assert r.status_code == 200, r.text
    assert all(x["errorCode"] == 0 for x in r.json()["messagePublishResults"])
    ours = KeyValueSchema(StringSchema(), AvroSchema(Reading), encoding="separated")
    got = ours_read(apache_broker.service_url, topic, 3, ours)
    assert [m.value for m in got] == [(f"k{i}", record_sample(i)) for i in range(3)]


def test_a_streamed_produce_encodes_by_a_schema_version(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
    classes: tuple[Any, Any, Any],
) -> None:
    reading, point, _ = classes
    topic, path = fresh()
    url = apache_gateway.url + path
    key_schema = {"type": "STRING"}
    value_schema = {"type": "PROTOBUF_NATIVE", "schema": proto_definition(reading)}
    first = protos.sample(reading, point, 0)
    r = httpx.post(
        url,
        json=kv_body(
            key_schema, value_schema, "separated", [("k0", json_format.MessageToDict(first))]
        ),
        timeout=30,
    )
    assert r.status_code == 200, r.text
    version = r.json()["schema_version"]
    want = [(f"k{i}", protos.sample(reading, point, i)) for i in range(1, N)]
    lines = [json.dumps({"key": k, "value": json_format.MessageToDict(v)}) for k, v in want]
    lines.insert(2, json.dumps({"key": "bad", "value": {"count": "many"}}))
    with httpx.stream(
        "POST",
        url,
        params={"schema_version": version},
        content="\n".join(lines).encode() + b"\n",
        headers={"Content-Type": "application/x-ndjson"},
        timeout=60,
    ) as s:
        assert s.status_code == 200
        reports = [json.loads(line) for line in s.iter_lines() if line]
    assert len(reports) == len(lines)
    assert "count" in reports[2]["error"] and reports[2].get("messageId") is None
    assert all(x.get("messageId") for i, x in enumerate(reports) if i != 2), reports
    schema = KeyValueSchema(StringSchema(), ProtobufNative(reading), encoding="separated")
    got = ours_read(apache_broker.service_url, topic, N, schema)
    assert [m.value for m in got] == [("k0", first), *want]
    assert {int.from_bytes(m.schema_version, "big") for m in got} == {version}
    r = httpx.post(
        url,
        params={"schema_version": version + 50},
        content=b"",
        headers={"Content-Type": "application/x-ndjson"},
    )
    assert (r.status_code, r.json()["code"]) == (422, 42204), r.text


def test_key_values_of_boolean_keys_and_null_halves(
    apache_gateway: Gateway,  # noqa: F811
) -> None:
    _, path = fresh()
    url = apache_gateway.url + path
    pairs = [(True, "a"), (False, None), (None, "c")]
    r = httpx.post(
        url, json=kv_body({"type": "BOOLEAN"}, {"type": "STRING"}, "inline", pairs), timeout=30
    )
    assert r.status_code == 200, r.text
    r = httpx.get(f"{url}/messages", params={"include_schema": "true", "timeout": 5000}, timeout=30)
    assert r.status_code == 200, r.text
    # null is a null half (length -1) and reads back as null.
    assert [(m["key"], m["value"]) for m in r.json()["messages"]] == pairs
    # A JSON half needs its definition (the broker would refuse it): 42204 up front.
    r = httpx.post(
        url, json=kv_body({"type": "STRING"}, {"type": "JSON"}, "inline", [("k", 1)]), timeout=30
    )
    assert (r.status_code, r.json()["code"]) == (422, 42204), r.text


def test_separated_null_halves_are_no_key_and_null_value(
    apache_gateway: Gateway,  # noqa: F811
    apache_broker: Any,
) -> None:
    # SEPARATED null halves travel as the Java client's: a null key is no message key (not
    # base64 of nothing) and a null value sets `null_value` — so our typed reader and the
    # gateway's own read both give None back, not "" or a SchemaError.
    avro = {"type": "AVRO", "schema": definition_of("avro")}
    sample = as_json(record_sample(1))
    pairs: list[Any] = [("k0", None), (None, sample), (None, None), ("k3", sample)]
    topic, path = fresh()
    url = apache_gateway.url + path
    r = httpx.post(url, json=kv_body({"type": "STRING"}, avro, "separated", pairs), timeout=30)
    assert r.status_code == 200, r.text
    ours = KeyValueSchema(StringSchema(), AvroSchema(Reading), encoding="separated")
    msgs = ours_read(apache_broker.service_url, topic, len(pairs), ours)
    assert [m.value for m in msgs] == [
        ("k0", None),
        (None, record_sample(1)),
        (None, None),
        ("k3", record_sample(1)),
    ]
    assert [m.key for m in msgs] == [
        base64.b64encode(b"k0").decode(),
        None,
        None,
        base64.b64encode(b"k3").decode(),
    ]
    read = read_back(apache_gateway, path)
    assert [(m["key"], m["value"]) for m in read["messages"]] == pairs
