"""Pravega with TLS and authentication (issue 29) against the secured standalone
(``secure_pravega``: TLS with the fixture's CA, password auth, delegation tokens checked by the
segment store): our blocking and asyncio clients write and read over it, the official client
(``pravega_client``) reads what we wrote and we read what it wrote, and bad credentials, an
untrusted CA or a host name the certificate does not list are refused with typed errors."""

from __future__ import annotations

import asyncio
import base64
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pravega_client
import pytest
from streamwire import AuthenticationError, ConnectError, pravega
from streamwire.aio import pravega as aio_pravega

from tests.peers.pravega import ACCOUNTS, PravegaStandalone
from tests.peers.secure import _ca

N = 200


def ca_of(server: PravegaStandalone) -> str:
    assert server.pki is not None
    return str(server.pki.ca)


def secured(server: PravegaStandalone, **kwargs: object) -> pravega.Client:
    """Our client on the secured standalone, as user ``writer`` unless told otherwise."""
    args: dict[str, object] = {
        "tls_trust_certs_file": ca_of(server),
        "username": "writer",
        "password": ACCOUNTS["writer"],
        "timeout": 30.0,
    }
    args.update(kwargs)
    return pravega.Client(server.controller_url, **args)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def sclient(secure_pravega: PravegaStandalone) -> Iterator[pravega.Client]:
    with secured(secure_pravega) as client:
        yield client


@pytest.fixture
def sscope(sclient: pravega.Client) -> str:
    name = "sec" + uuid.uuid4().hex[:10]
    assert sclient.create_scope(name)
    return name


def payloads(tag: str) -> list[bytes]:
    return [f"{tag}-{i:05d}".encode() + b"x" * 50 for i in range(N)]


def read_all(client: pravega.Client, scope: str, stream: str, n: int) -> list[bytes]:
    got: list[bytes] = []
    with client.create_reader(scope, stream, start="head") as reader:
        while len(got) < n:
            batch = reader.read_arrow(n - len(got), timeout=10.0)
            assert batch.num_rows > 0, f"nothing more after {len(got)} events"
            got += batch.column("value").to_pylist()
    return got


def test_write_and_read_over_tls_with_basic_auth(sclient: pravega.Client, sscope: str) -> None:
    assert sclient.controller_uri.startswith("tls://")
    assert sclient.create_stream(sscope, "s", segments=2)
    data = payloads("tls")
    with sclient.create_writer(sscope, "s") as writer:
        writer.write_many(data, routing_keys=[f"k{i % 7}" for i in range(N)])
        writer.flush()
    assert sorted(read_all(sclient, sscope, "s", N)) == sorted(data)
    # Info calls carry the delegation token too (GET_STREAM_SEGMENT_INFO).
    assert sum(sclient.tail(sscope, "s").positions.values()) > 0


def test_asyncio_client_over_tls_with_auth(secure_pravega: PravegaStandalone) -> None:
    async def main() -> list[bytes]:
        async with aio_pravega.Client(
            secure_pravega.controller_url,
            tls_trust_certs_file=ca_of(secure_pravega),
            username="admin",
            password=ACCOUNTS["admin"],
        ) as client:
            scope = "aio" + uuid.uuid4().hex[:8]
            assert await client.create_scope(scope)
            assert await client.create_stream(scope, "s")
            async with await client.create_writer(scope, "s") as writer:
                assert await writer.write_many(payloads("aio")) == N
            reader = await client.create_reader(scope, "s", start="head")
            got: list[bytes] = []
            while len(got) < N:
                batch = await reader.read_arrow(N, timeout=10.0)
                assert batch.num_rows > 0
                got += batch.column("value").to_pylist()
            await reader.close()
            return got

    assert asyncio.run(main()) == payloads("aio")


def test_a_method_and_token_plug_in_sends_them_as_given(
    secure_pravega: PravegaStandalone,
) -> None:
    # `authorization: <method> <token>` verbatim: Basic built by hand is accepted...
    token = base64.b64encode(f"admin:{ACCOUNTS['admin']}".encode()).decode()
    with secured(
        secure_pravega, username=None, password=None, auth_method="Basic", auth_token=token
    ) as client:
        assert client.scope_exists("no-such-scope-here") is False
    # ...and a method the password handler does not know is refused.
    with secured(
        secure_pravega, username=None, password=None, auth_method="Bearer", auth_token="abc"
    ) as client:
        with pytest.raises(AuthenticationError):
            client.scope_exists("x")


def test_wrong_password_and_no_credentials_are_authentication_errors(
    secure_pravega: PravegaStandalone,
) -> None:
    with secured(secure_pravega, password="not-the-password") as client:
        with pytest.raises(AuthenticationError, match="Unauthenticated"):
            client.create_scope("nope")
    with secured(secure_pravega, username=None, password=None) as client:
        with pytest.raises(AuthenticationError):
            client.scope_exists("nope")


def test_an_untrusted_ca_is_a_connect_error(
    secure_pravega: PravegaStandalone, tmp_path: Path
) -> None:
    other, _ = _ca(tmp_path, "other", "some other CA")
    with pytest.raises(ConnectError, match="not signed by a trusted CA"):
        secured(secure_pravega, tls_trust_certs_file=str(other))
    # The system's roots do not hold the fixture's CA either.
    with pytest.raises(ConnectError, match="not signed by a trusted CA"):
        pravega.Client(secure_pravega.controller_url, username="admin", password="x")


def test_a_host_name_the_certificate_lacks_is_refused_unless_the_switch_is_off(
    secure_pravega: PravegaStandalone,
) -> None:
    # The certificate lists localhost and 127.0.0.1; 127.0.0.2 reaches the same server.
    url = secure_pravega.controller_url.replace("127.0.0.1", "127.0.0.2")
    with pytest.raises(ConnectError, match=r'not valid for host "127\.0\.0\.2"'):
        pravega.Client(url, tls_trust_certs_file=ca_of(secure_pravega))
    with pravega.Client(
        url,
        tls_trust_certs_file=ca_of(secure_pravega),
        tls_disable_hostname_verification_DANGEROUS=True,
        username="admin",
        password=ACCOUNTS["admin"],
    ) as client:
        assert client.scope_exists("no-such-scope-here") is False


def test_plain_tcp_to_a_tls_controller_fails_clearly(secure_pravega: PravegaStandalone) -> None:
    url = secure_pravega.controller_url.replace("tls://", "tcp://")
    with pytest.raises((ConnectError, AuthenticationError)):
        with pravega.Client(url, timeout=5.0) as client:
            client.scope_exists("x")


def test_client_config_pickles_and_keeps_secrets_out_of_repr(
    secure_pravega: PravegaStandalone,
) -> None:
    import pickle

    cfg = pravega.ClientConfig(
        secure_pravega.controller_url,
        tls_trust_certs_file=ca_of(secure_pravega),
        username="writer",
        password=ACCOUNTS["writer"],
    )
    assert ACCOUNTS["writer"] not in repr(cfg)
    again = pickle.loads(pickle.dumps(cfg))
    assert again == cfg
    with again.create() as client:
        assert client.scope_exists("no-such-scope-here") is False


# -- the official client on the same secured standalone ----------------------------------------


@pytest.fixture
def official(
    secure_pravega: PravegaStandalone, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> pravega_client.StreamManager:
    """The official client with TLS and Basic auth: it trusts the certificates in the directory
    ``pravega_client_tls_cert_path`` names and takes credentials from ``pravega_client_auth_*``
    (pravega-client-rust's ClientConfig); it checks a DNS name, so it dials ``localhost``."""
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    (trusted / "ca.pem").write_text(Path(ca_of(secure_pravega)).read_text())
    for name, value in {
        "pravega_client_tls_cert_path": str(trusted),
        "pravega_client_auth_method": "Basic",
        "pravega_client_auth_username": "writer",
        "pravega_client_auth_password": ACCOUNTS["writer"],
    }.items():
        monkeypatch.setitem(os.environ, name, value)
    url = secure_pravega.controller_url.replace("127.0.0.1", "localhost")
    return pravega_client.StreamManager(url, True, True)


def official_read(manager: pravega_client.StreamManager, scope: str, stream: str) -> list[bytes]:
    group = manager.create_reader_group("rg" + uuid.uuid4().hex[:8], scope, stream)
    reader = group.create_reader("r1")

    async def read(n: int) -> list[bytes]:
        got: list[bytes] = []
        while len(got) < n:
            sl = await asyncio.wait_for(reader.get_segment_slice_async(), 30)
            got += [bytes(e.data()) for e in sl]
            reader.release_segment(sl)
        return got

    try:
        return asyncio.run(read(N))
    finally:
        reader.reader_offline()


def test_official_client_reads_what_we_wrote_and_we_read_what_it_wrote(
    sclient: pravega.Client, sscope: str, official: pravega_client.StreamManager
) -> None:
    assert sclient.create_stream(sscope, "ours")
    with sclient.create_writer(sscope, "ours") as writer:
        writer.write_many(payloads("ours"))
    assert official_read(official, sscope, "ours") == payloads("ours")

    assert official.create_stream(sscope, "theirs", 1)
    w = official.create_writer(sscope, "theirs", 100)
    for p in payloads("theirs"):
        w.write_event_bytes(p)
    w.flush()
    assert read_all(sclient, sscope, "theirs", N) == payloads("theirs")
