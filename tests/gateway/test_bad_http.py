"""Every row of ``docs/gateway-bad-input.md`` against a live gateway (pulsar-lite and Apache
Pulsar): the documented status and code, and the gateway keeps producing afterwards."""

from __future__ import annotations

import base64
import uuid

import httpx
import pytest

from tests.gateway.bad_cases import DOC, HTTP_CASES, HttpCase, render_table
from tests.peers.gateway import Gateway


@pytest.mark.parametrize("case", HTTP_CASES, ids=lambda c: c.id)
def test_bad_http_input_gets_its_status_and_code(
    gateway: Gateway, broker_kind: str, case: HttpCase
) -> None:
    t = f"/topics/public/default/gwbad-{uuid.uuid4().hex[:12]}"
    path = case.path.replace("{t}", t)
    if "{id}" in path or "/cursor" in path:
        r = httpx.post(f"{gateway.url}{t}/subscription/s", json={}, timeout=30)
        assert r.status_code == 200, r.text
        path = path.replace("{id}", r.json()["id"])
    headers = {"Content-Type": case.content_type, **case.headers}
    r = httpx.request(
        case.method, gateway.url + path, content=case.body or None, headers=headers, timeout=30
    )
    if case.lite_ok and broker_kind == "lite":
        assert r.status_code == 200, r.text
    else:
        assert (r.status_code, r.json()["code"]) == (case.status, case.code), r.text
        assert r.json()["message"]
    ok = httpx.post(
        f"{gateway.url}{t}",
        json={"messages": [{"value": base64.b64encode(b"after").decode()}]},
        timeout=30,
    )
    assert ok.status_code == 200 and ok.json()["messageIds"][0]["error_code"] is None


def test_docs_table_is_current() -> None:
    assert DOC.exists(), "run: .venv/bin/python scripts/bad_input_table.py"
    assert DOC.read_text() == render_table(), (
        f"{DOC} is out of date; run: .venv/bin/python scripts/bad_input_table.py"
    )
