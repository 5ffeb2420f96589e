"""HTTPS on the gateway (``--tls-cert``/``--tls-key``, rustls): with a certificate made by
``openssl`` for this test (tests/peers/secure.py's ``make_pki``), httpx trusting that CA
produces and creates consumer instances whose ``base_uri`` is https; plain HTTP, the system
roots and an unrelated CA are refused; half a TLS configuration or a bad file does not start."""

from __future__ import annotations

import base64
import ssl
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.peers.broker import Broker
from tests.peers.gateway import Gateway, binary
from tests.peers.secure import Pki, make_pki
from tests.peers.util import LOOPBACK


class TlsGateway(Gateway):
    def __init__(self, service_url: str, pki: Pki) -> None:
        super().__init__(
            service_url, "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)
        )
        self.ctx = ssl.create_default_context(cafile=str(pki.ca))

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.port}"

    def _ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", verify=self.ctx, timeout=1).status_code == 200
        except httpx.HTTPError:
            return False


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("gw-pki"))


@pytest.fixture
def tls_gateway(broker: Broker, pki: Pki) -> Iterator[TlsGateway]:
    g = TlsGateway(broker.service_url, pki).start()
    try:
        yield g
    finally:
        g.close()


def test_https_serves_with_the_test_ca_and_refuses_the_rest(
    tls_gateway: TlsGateway, pki: Pki
) -> None:
    url = tls_gateway.url
    with httpx.Client(verify=tls_gateway.ctx, timeout=30) as c:
        assert c.get(f"{url}/healthz").json() == {"status": "ok"}
        path = f"/topics/public/default/gwtls-{uuid.uuid4().hex[:12]}"
        body = {"messages": [{"value": base64.b64encode(b"over tls").decode()}]}
        r = c.post(f"{url}{path}", json=body)
        assert r.status_code == 200 and "messageId" in r.json()["messageIds"][0], r.text
        r = c.post(f"{url}{path}/subscription/s", json={"subscriptionInitialPosition": "earliest"})
        assert r.status_code == 200, r.text
        base_uri = r.json()["base_uri"]
        assert base_uri.startswith(f"{url}/")
        got = c.get(f"{base_uri}/messages", params={"timeout": 5000}).json()["messages"]
        assert [base64.b64decode(m["value"]) for m in got] == [b"over tls"]
        assert c.delete(base_uri).status_code == 204
    # Plain HTTP on the TLS port gets no HTTP answer.
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://{LOOPBACK}:{tls_gateway.port}/healthz", timeout=5)
    # The system roots and an unrelated CA do not trust the test certificate.
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/healthz", timeout=5)
    other = ssl.create_default_context(cafile=str(pki.other_ca))
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/healthz", verify=other, timeout=5)
    # The gateway still serves after those failed handshakes.
    assert httpx.get(f"{url}/healthz", verify=tls_gateway.ctx, timeout=5).status_code == 200


def run_binary(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary(), "--listen", f"{LOOPBACK}:0", *args],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def test_bad_tls_configuration_does_not_start(pki: Pki, tmp_path: Path) -> None:
    p = run_binary("--tls-cert", str(pki.server_cert))
    assert p.returncode == 2 and "--tls-cert and --tls-key go together" in p.stderr, p.stderr
    junk = tmp_path / "junk.pem"
    junk.write_text("not a key\n")
    p = run_binary("--tls-cert", str(pki.server_cert), "--tls-key", str(junk))
    assert p.returncode == 1 and "holds no usable PEM private key" in p.stderr, p.stderr
    assert "not a key" not in p.stderr
    # A key that does not belong to the certificate.
    p = run_binary("--tls-cert", str(pki.server_cert), "--tls-key", str(pki.client_key))
    assert p.returncode == 1 and "does not fit the certificate" in p.stderr, p.stderr
