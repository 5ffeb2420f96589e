"""The TLS Pravega standalone (``PravegaStandalone(tls=True)``): keystores made by the
fixture with ``openssl`` and the JDK's ``keytool``, the controller and the segment store
speaking TLS only. The official client writes and reads over it; ours refuses ``tls://``
with a typed error until it speaks TLS (issue 29)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pravega_client
import pytest
from streamwire import ConfigError, pravega

from tests.peers.pravega import PravegaError, PravegaStandalone


@pytest.fixture(scope="module")
def tls_pravega() -> Iterator[PravegaStandalone]:
    server = PravegaStandalone(tls=True)
    try:
        try:
            server.start()
        except PravegaError as exc:
            pytest.fail(f"TLS Pravega standalone did not start: {exc}", pytrace=False)
        yield server
    finally:
        server.close()


def test_official_client_writes_and_reads_over_tls(
    tls_pravega: PravegaStandalone, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tls_pravega.pki is not None
    # The official client trusts the certificates in the directory this variable names, and
    # checks a DNS name (not an IP address): the fixture's certificate is for localhost.
    trusted = tls_pravega.workdir / "tls" / "trusted"
    trusted.mkdir(exist_ok=True)
    (trusted / "ca.pem").write_text(tls_pravega.pki.ca.read_text())
    monkeypatch.setitem(os.environ, "pravega_client_tls_cert_path", str(trusted))
    url = tls_pravega.controller_url.replace("127.0.0.1", "localhost")
    manager = pravega_client.StreamManager(url, False, True)
    assert manager.create_scope("tls")
    assert manager.create_stream("tls", "s", 1)
    writer = manager.create_writer("tls", "s")
    for i in range(10):
        writer.write_event(f"secret-{i}")
    writer.flush()
    group = manager.create_reader_group("rg", "tls", "s")
    reader = group.create_reader("r1")

    async def read(n: int) -> list[bytes]:
        got: list[bytes] = []
        while len(got) < n:
            sl = await asyncio.wait_for(reader.get_segment_slice_async(), 30)
            got += [bytes(e.data()) for e in sl]
            reader.release_segment(sl)
        return got

    try:
        assert asyncio.run(read(10)) == [f"secret-{i}".encode() for i in range(10)]
    finally:
        reader.reader_offline()


def test_streamwire_refuses_tls_urls_with_a_typed_error(tls_pravega: PravegaStandalone) -> None:
    with pytest.raises(ConfigError, match="tcp://"):
        pravega.Client(tls_pravega.controller_url)
