"""``Authorization: Bearer`` through the PIP-64 gateway, in front of the secure Apache Pulsar
(token authentication and authorization on; see tests/peers/secure.py): a request with a good
token produces and reads as that role, a bad token is 401 and a role without permission 403,
with typed JSON bodies, and nothing was written for the failures; consumer instances run as
their creator's role and answer only requests with the same credential."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.peers.gateway import Gateway
from tests.peers.secure import SecurePulsar, hs256_jwt

pytestmark = pytest.mark.apache


@pytest.fixture(scope="module")
def secure(apache_secure_broker: SecurePulsar) -> SecurePulsar:
    admin = apache_secure_broker.admin()
    admin.grant_namespace_permission("gw-writer", ["produce", "consume"])
    admin.grant_namespace_permission("gw-reader", ["consume"])
    return apache_secure_broker


@pytest.fixture(scope="module")
def gw(secure: SecurePulsar) -> Iterator[Gateway]:
    g = Gateway(secure.plain_url, "--request-timeout", "15").start()
    try:
        yield g
    finally:
        g.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def produce(gw: Gateway, path: str, headers: dict[str, str], n: int = 1) -> httpx.Response:
    body = {"messages": [{"value": base64.b64encode(b"m%d" % i).decode()} for i in range(n)]}
    return httpx.post(f"{gw.url}{path}", json=body, headers=headers, timeout=30)


def read_all(gw: Gateway, path: str, token: str) -> httpx.Response:
    return httpx.get(
        f"{gw.url}{path}/messages",
        params={"position": "earliest", "timeout": 2000},
        headers=bearer(token),
        timeout=30,
    )


def test_bearer_tokens_act_as_their_role(gw: Gateway, secure: SecurePulsar) -> None:
    path = f"/topics/public/default/gwauth-{uuid.uuid4().hex[:12]}"
    writer, reader = secure.token("gw-writer"), secure.token("gw-reader")

    r = produce(gw, path, bearer(writer), 3)
    assert r.status_code == 200, r.text
    assert all("messageId" in x and not x.get("error_code") for x in r.json()["messageIds"])

    forged = hs256_jwt(b"not-the-broker-secret" * 2, "gw-writer")
    r = produce(gw, path, bearer(forged))
    assert r.status_code == 401, r.text
    assert r.json()["code"] == 40101 and forged not in r.text

    r = produce(gw, path, bearer(reader))
    assert r.status_code == 403, r.text
    assert r.json()["code"] == 40301

    r = produce(gw, path, {"Authorization": "Basic Z3c6cHc="})
    assert (r.status_code, r.json()["code"]) == (401, 40102)

    # Without a token the gateway's own client is used: it has no credentials here.
    r = produce(gw, path, {})
    assert r.status_code == 401, r.text

    # Consume permission is enough to read; what was written is exactly the good request's.
    r = read_all(gw, path, reader)
    assert r.status_code == 200, r.text
    assert [base64.b64decode(m["value"]) for m in r.json()["messages"]] == [b"m0", b"m1", b"m2"]
    r = read_all(gw, path, forged)
    assert (r.status_code, r.json()["code"]) == (401, 40101)

    # Consumer instances run as their creator, and only their creator may use them.
    sub = f"{gw.url}{path}/subscription/s"
    r = httpx.post(
        sub, json={"subscriptionInitialPosition": "earliest"}, headers=bearer(forged), timeout=30
    )
    assert (r.status_code, r.json()["code"]) == (401, 40101), r.text
    nobody = secure.token("gw-no-grants")
    r = httpx.post(sub, json={}, headers=bearer(nobody), timeout=30)
    assert (r.status_code, r.json()["code"]) == (403, 40301), r.text
    r = httpx.post(
        sub,
        json={"subscriptionInitialPosition": "earliest"},
        headers=bearer(reader),
        timeout=30,
    )
    assert r.status_code == 200, r.text
    base_uri = r.json()["base_uri"]
    for other in (bearer(writer), {}):
        f = httpx.get(f"{base_uri}/messages", headers=other, timeout=30)
        assert (f.status_code, f.json()["code"]) == (403, 40302), f.text
        assert httpx.delete(base_uri, headers=other, timeout=30).status_code == 403
    f = httpx.get(
        f"{base_uri}/messages", params={"timeout": 5000}, headers=bearer(reader), timeout=30
    )
    assert f.status_code == 200, f.text
    msgs = f.json()["messages"]
    assert [base64.b64decode(m["value"]) for m in msgs] == [b"m0", b"m1", b"m2"]
    ids = [m["messageId"] for m in msgs]
    cursor = f"{sub}/cursor"
    # Without naming the instance, another credential finds none of its own.
    r = httpx.post(cursor, json={"messageIds": ids}, headers=bearer(writer), timeout=30)
    assert (r.status_code, r.json()["code"]) == (404, 40403), r.text
    r = httpx.post(cursor, json={"messageIds": ids}, headers=bearer(reader), timeout=30)
    assert r.status_code == 200 and r.json()["acknowledged"] == 3, r.text
    assert httpx.delete(base_uri, headers=bearer(reader), timeout=30).status_code == 204
