"""Bad HTTP input to the gateway: each case's status and PIP-64 code, the single source of
``docs/gateway-bad-input.md`` (``scripts/bad_input_table.py`` writes it;
``tests/gateway/test_bad_http.py`` runs every case against a live gateway and fails when the
file is out of date). ``{t}`` is a fresh topic's path (``/topics/public/default/<new>``), and
``{id}`` a consumer instance made for the case on its subscription ``s``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "gateway-bad-input.md"

JSON = "application/json"
B64_X = "eA=="


@dataclass(frozen=True)
class HttpCase:
    input: str  # what is wrong
    method: str
    path: str  # with {t} / {c}
    status: int
    code: int
    body: bytes = b""
    content_type: str = JSON
    headers: dict[str, str] = field(default_factory=dict)
    # pulsar-lite creates tenants, namespaces and topics on first use: there the request
    # succeeds (200) instead.
    lite_ok: bool = False

    @property
    def id(self) -> str:
        return self.input


def _proto_definition() -> bytes:
    """The registry document of ``sw.test.Reading`` (tests/schemas/protos.py), as a JSON
    string literal."""
    from streamwire.schema import ProtobufNative

    from tests.schemas.protos import reading_classes

    d = ProtobufNative(reading_classes()[0]).definition
    return json.dumps(d.decode() if isinstance(d, bytes) else str(d)).encode()


_PROTO_DEFINITION = _proto_definition()


def _msgs(n: int) -> bytes:
    return b'{"messages": [' + b",".join([b'{"value": "eA=="}'] * n) + b"]}"


# The session gateway of tests/gateway/conftest.py: 1 MiB bodies, 5,000 messages per request.
HTTP_CASES: list[HttpCase] = [
    HttpCase("malformed JSON", "POST", "{t}", 400, 40001, b'{"messages": [{"value": '),
    HttpCase("missing `messages`", "POST", "{t}", 400, 40001, b"{}"),
    HttpCase("wrong type: `messages` a string", "POST", "{t}", 400, 40001, b'{"messages": "x"}'),
    HttpCase(
        "wrong type: `value` a number", "POST", "{t}", 422, 42205, b'{"messages": [{"value": 5}]}'
    ),
    HttpCase(
        "wrong type: `eventTime` a string",
        "POST",
        "{t}",
        400,
        40001,
        b'{"messages": [{"value": "eA==", "eventTime": "soon"}]}',
    ),
    HttpCase(
        "unknown message field", "POST", "{t}", 400, 40001, b'{"messages": [{"valu": "eA=="}]}'
    ),
    HttpCase("bad base64 `value`", "POST", "{t}", 422, 42205, b'{"messages": [{"value": "%%%"}]}'),
    HttpCase(
        "KEY_VALUE schema without key_schema",
        "POST",
        "{t}",
        422,
        42201,
        b'{"schema_type": "KEY_VALUE", "value_schema": {"type": "STRING"}, "messages": []}',
    ),
    HttpCase(
        "AVRO schema_type without value_schema",
        "POST",
        "{t}",
        422,
        42202,
        b'{"schema_type": "AVRO", "messages": [{"value": "eA=="}]}',
    ),
    HttpCase(
        "key_schema not a schema info",
        "POST",
        "{t}",
        422,
        42203,
        b'{"key_schema": "nope", "messages": [{"value": "eA=="}]}',
    ),
    HttpCase(
        "value_schema not a schema info",
        "POST",
        "{t}",
        422,
        42204,
        b'{"value_schema": {"schema": "x"}, "messages": [{"value": "eA=="}]}',
    ),
    HttpCase(
        "AVRO value_schema whose definition is not a record schema",
        "POST",
        "{t}",
        422,
        42204,
        b'{"value_schema": {"type": "AVRO", "schema": "{}"}, "messages": [{"value": "eA=="}]}',
    ),
    HttpCase(
        "unsupported value schema (PROTOBUF)",
        "POST",
        "{t}",
        422,
        42204,
        b'{"value_schema": {"type": "PROTOBUF", "schema": "x"}, "messages": [{"value": "eA=="}]}',
    ),
    HttpCase(
        "non-string `key` without schema_type KEY_VALUE",
        "POST",
        "{t}",
        400,
        40001,
        b'{"messages": [{"key": 5, "value": "eA=="}]}',
    ),
    HttpCase(
        "KEY_VALUE key that does not fit its key_schema (INT32)",
        "POST",
        "{t}",
        422,
        42205,
        b'{"schema_type": "KEY_VALUE", "key_schema": {"type": "INT32"}, '
        b'"value_schema": {"type": "STRING"}, "messages": [{"key": "one", "value": "v"}]}',
    ),
    HttpCase(
        "KEY_VALUE with an AVRO key_schema without its definition",
        "POST",
        "{t}",
        422,
        42203,
        b'{"schema_type": "KEY_VALUE", "key_schema": {"type": "AVRO"}, '
        b'"value_schema": {"type": "STRING"}, "messages": [{"key": "k", "value": "v"}]}',
    ),
    HttpCase(
        "KEY_VALUE with kv_encoding neither INLINE nor SEPARATED",
        "POST",
        "{t}",
        422,
        42201,
        b'{"schema_type": "KEY_VALUE", "key_schema": {"type": "STRING"}, '
        b'"value_schema": {"type": "STRING"}, "kv_encoding": "SIDEWAYS", '
        b'"messages": [{"key": "k", "value": "v"}]}',
    ),
    HttpCase(
        "PROTOBUF_NATIVE value_schema whose descriptor set does not parse",
        "POST",
        "{t}",
        422,
        42204,
        b'{"value_schema": {"type": "PROTOBUF_NATIVE", "schema": '
        b'"{\\"fileDescriptorSet\\": \\"AAAA\\"}"}, "messages": [{"value": {}}]}',
    ),
    HttpCase(
        "PROTOBUF_NATIVE value that does not fit its descriptor",
        "POST",
        "{t}",
        422,
        42205,
        b'{"value_schema": {"type": "PROTOBUF_NATIVE", "schema": '
        + _PROTO_DEFINITION
        + b'}, "messages": [{"value": {"sensor": 5}}]}',
    ),
    HttpCase(
        "value that does not fit its AVRO record schema",
        "POST",
        "{t}",
        422,
        42205,
        b'{"schema_type": "AVRO", "value_schema": {"type": "AVRO", "schema": '
        b'"{\\"type\\": \\"record\\", \\"name\\": \\"R\\", \\"fields\\": '
        b'[{\\"name\\": \\"n\\", \\"type\\": \\"int\\"}]}"}, '
        b'"messages": [{"value": {"n": "five"}}]}',
    ),
    HttpCase(
        "broker dialect without `messages`",
        "POST",
        "/topics/persistent/public/default/bad-d",
        400,
        40001,
        b"{}",
    ),
    HttpCase(
        "unknown topic (no such namespace)",
        "POST",
        "/topics/public/no-such-ns-gw/t",
        404,
        40401,
        b'{"messages": [{"value": "eA=="}]}',
        lite_ok=True,
    ),
    HttpCase(
        "unknown partition",
        "POST",
        "{t}/partitions/3",
        404,
        40402,
        b'{"messages": [{"value": "eA=="}]}',
    ),
    HttpCase(
        "body over --max-body-bytes",
        "POST",
        "{t}",
        413,
        41301,
        b'{"messages": [{"value": "' + b"A" * 1_100_000 + b'"}]}',
    ),
    HttpCase("more messages than --max-messages", "POST", "{t}", 413, 41301, _msgs(5001)),
    HttpCase("unsupported Content-Type", "POST", "{t}", 415, 41501, b"x", "text/plain"),
    HttpCase(
        "binary produce: bad X-Pulsar-Event-Time",
        "POST",
        "{t}",
        400,
        40001,
        b"x",
        "application/octet-stream",
        {"X-Pulsar-Event-Time": "soon"},
    ),
    HttpCase(
        "Authorization not `Bearer <token>`",
        "POST",
        "{t}",
        401,
        40102,
        b'{"messages": [{"value": "eA=="}]}',
        JSON,
        {"Authorization": "Basic eDp5"},
    ),
    HttpCase("read: position not a message id", "GET", "{t}/messages?position=AAAA", 400, 40001),
    HttpCase("read: negative timeout", "GET", "{t}/messages?timeout=-1", 400, 40001),
    HttpCase(
        "unknown consumer instance: fetch",
        "GET",
        "{t}/subscription/s/consumer/nope/messages",
        404,
        40403,
    ),
    HttpCase(
        "unknown consumer instance: delete",
        "DELETE",
        "{t}/subscription/s/consumers/nope",
        404,
        40403,
    ),
    HttpCase(
        "consumer creation: bad subscription type",
        "POST",
        "{t}/subscription/s",
        400,
        40001,
        b'{"subscriptionType": "Sometimes"}',
    ),
    HttpCase(
        "cursor: bad base64 id",
        "POST",
        "{t}/subscription/s/cursor",
        400,
        40001,
        b'{"messageIds": ["%%%"]}',
    ),
    HttpCase(
        "stream: unknown framing",
        "GET",
        "{t}/subscription/s/consumer/{id}/messages?stream=csv",
        400,
        40001,
    ),
    HttpCase("wrong method", "PUT", "{t}", 405, 40501),
    HttpCase("unknown path", "GET", "/nope", 404, 40400),
]


def render_table() -> str:
    lines = [
        "# Bad HTTP input to the PIP-64 gateway",
        "",
        "Generated from `tests/gateway/bad_cases.py` by `scripts/bad_input_table.py`;",
        "`tests/gateway/test_bad_http.py` sends each request to a gateway in front of",
        "pulsar-lite and Apache Pulsar, checks the status and code, and checks that the gateway",
        'still produces afterwards. Errors are `{"code", "message"}` with code =',
        "status * 100 + n. A token the broker refuses (401 40101) and a role without",
        "permission (403 40301) need the secure broker: `tests/security/test_gateway_auth.py`.",
        "",
        "| input | request | status | code |",
        "|---|---|---:|---:|",
    ]
    for c in HTTP_CASES:
        status = f"{c.status} (pulsar-lite: 200, made on first use)" if c.lite_ok else c.status
        lines.append(f"| {c.input} | `{c.method} {c.path}` | {status} | {c.code} |")
    return "\n".join(lines) + "\n"
