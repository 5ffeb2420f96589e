"""TLS and authentication against Apache Pulsar configured for them (see tests/peers/secure.py).

One secure broker serves the session: ``pulsar+ssl://127.0.0.1:<port>`` with a test CA, token,
TLS-certificate and basic authentication, authorization with ``admin`` as super-user, and a
1-second credential refresh check so short-lived tokens are challenged mid-stream.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
import streamwire
from streamwire import (
    AuthBasic,
    AuthenticationError,
    AuthorizationError,
    AuthTls,
    ConfigError,
    ConnectError,
)

from tests.peers.admin import AdminError, PulsarAdmin
from tests.peers.secure import BASIC_PASSWORD, BASIC_USER, SecurePulsar, hs256_jwt
from tests.spark.helpers import batch_read_values

pytestmark = pytest.mark.apache

# Roles and what the namespace grants them (granted once per session).
GRANTS: dict[str, list[str]] = {
    "writer": ["produce", "consume"],
    "consume-only": ["consume"],
    "refresher": ["produce", "consume"],
    "tls-client-role": ["produce", "consume"],
    BASIC_USER: ["produce", "consume"],
}


@pytest.fixture(scope="module")
def secure(apache_secure_broker: SecurePulsar) -> SecurePulsar:
    return apache_secure_broker.granted(GRANTS)


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/sec-{uuid.uuid4().hex}"


def tls_client(secure: SecurePulsar, url: str | None = None, **kwargs: Any) -> streamwire.Client:
    kwargs.setdefault("tls_trust_certs_file", str(secure.pki.ca))
    kwargs.setdefault("operation_timeout", 15.0)
    kwargs.setdefault("connection_timeout", 5.0)
    return streamwire.Client(url or secure.tls_url, **kwargs)


def roundtrip(client: streamwire.Client, topic: str, payload: bytes = b"secret-payload") -> None:
    """Produce one message and read it back through `client`."""
    consumer = client.subscribe(topic, "rt", initial_position="earliest")
    producer = client.create_producer(topic)
    producer.send(payload)
    assert consumer.receive(timeout=15).data() == payload
    producer.close()
    consumer.close()


def in_count(admin: PulsarAdmin, topic: str) -> int:
    stats = admin.topic_stats(topic)
    return int(stats.get("msgInCounter", 0))


# ---------------------------------------------------------------------------------------------
# TLS
# ---------------------------------------------------------------------------------------------
def test_tls_with_ca_bundle_round_trips_and_lookup_names_tls_broker(
    secure: SecurePulsar, topic: str
) -> None:
    with tls_client(secure, auth_token=secure.token("writer")) as client:
        assert client.lookup().broker_url(topic).startswith("pulsar+ssl://")
        roundtrip(client, topic)


def test_spark_source_options_carry_tls_and_token_file(
    secure: SecurePulsar, topic: str, tmp_path: Any
) -> None:
    """The Data Source's client settings (Scala connector spellings too) reach the engine: the
    source plans and reads over pulsar+ssl with a token file; without the CA it cannot connect."""
    from streamwire.spark.datasource import StreamwireBatchReader

    token_file = tmp_path / "token"
    token_file.write_text(secure.token("writer"))
    with tls_client(secure, auth_token=secure.token("writer")) as client:
        p = client.create_producer(topic)
        p.send_many([b"a", b"b", b"c"])
        p.flush()
        p.close()
    options = {
        "service.url": secure.tls_url,
        "topic": topic,
        "pulsar.client.tlsTrustCertsFilePath": str(secure.pki.ca),
        "authTokenFile": str(token_file),
        "connectionTimeout": "5",
    }
    assert sorted(batch_read_values(options)) == [b"a", b"b", b"c"]
    untrusted = {k: v for k, v in options.items() if "tls" not in k}
    with pytest.raises(ConnectError, match="not signed by a trusted CA"):
        StreamwireBatchReader(untrusted).partitions()


def test_wrong_ca_is_a_connect_error(secure: SecurePulsar, topic: str) -> None:
    with tls_client(
        secure, auth_token=secure.token("writer"), tls_trust_certs_file=str(secure.pki.other_ca)
    ) as client:
        with pytest.raises(ConnectError, match="not signed by a trusted CA") as info:
            client.lookup().partitions(topic)
    assert "Some(" not in str(info.value) and "InvalidCertificate" not in str(info.value)


def test_system_roots_do_not_trust_the_test_ca(secure: SecurePulsar, topic: str) -> None:
    with streamwire.Client(
        secure.tls_url, auth_token=secure.token("writer"), connection_timeout=5.0
    ) as client:
        with pytest.raises(ConnectError, match="not signed by a trusted CA"):
            client.lookup().partitions(topic)


def test_wrong_hostname_fails_unless_verification_is_disabled(
    secure: SecurePulsar, topic: str
) -> None:
    # The broker certificate names broker.streamwire.test and 127.0.0.1, not "localhost".
    url = secure.tls_url.replace("127.0.0.1", "localhost")
    with tls_client(secure, url, auth_token=secure.token("writer")) as client:
        with pytest.raises(ConnectError, match='not valid for host "localhost"'):
            client.lookup().partitions(topic)
    with tls_client(
        secure,
        url,
        auth_token=secure.token("writer"),
        tls_disable_hostname_verification_DANGEROUS=True,
    ) as client:
        roundtrip(client, topic)
        # The lookup redirected from localhost to 127.0.0.1: a second TLS connection.
        assert client._open_connections() == 2


def test_disabling_hostname_verification_still_verifies_the_chain(
    secure: SecurePulsar, topic: str
) -> None:
    with tls_client(
        secure,
        secure.tls_url.replace("127.0.0.1", "localhost"),
        auth_token=secure.token("writer"),
        tls_trust_certs_file=str(secure.pki.other_ca),
        tls_disable_hostname_verification_DANGEROUS=True,
    ) as client:
        with pytest.raises(ConnectError, match="not signed by a trusted CA"):
            client.lookup().partitions(topic)


def test_allow_insecure_connection_accepts_an_untrusted_certificate(
    secure: SecurePulsar, topic: str
) -> None:
    with streamwire.Client(
        secure.tls_url,
        auth_token=secure.token("writer"),
        tls_allow_insecure_connection_DANGEROUS=True,
        operation_timeout=15.0,
    ) as client:
        roundtrip(client, topic)


def test_mutual_tls_authenticates_as_the_certificate_role(secure: SecurePulsar, topic: str) -> None:
    with tls_client(
        secure,
        auth=AuthTls(),
        tls_cert_file=str(secure.pki.client_cert),
        tls_key_file=str(secure.pki.client_key),
    ) as client:
        roundtrip(client, topic)
    stats = secure.admin().topic_stats(topic)
    assert stats["msgInCounter"] == 1
    # Without a client certificate the "tls" method has nothing to authenticate with.
    with tls_client(secure, auth=AuthTls()) as client:
        with pytest.raises(AuthenticationError):
            client.create_producer(topic)


def test_tls_option_errors_are_config_errors(secure: SecurePulsar, tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match="cannot read CA bundle"):
        streamwire.Client(secure.tls_url, tls_trust_certs_file=str(tmp_path / "missing.pem"))
    not_pem = tmp_path / "x.pem"
    not_pem.write_text("hello\n")
    with pytest.raises(ConfigError, match="no PEM certificate"):
        streamwire.Client(secure.tls_url, tls_trust_certs_file=str(not_pem))
    with pytest.raises(ConfigError, match="both tls_cert_file and tls_key_file"):
        streamwire.Client(secure.tls_url, tls_cert_file=str(secure.pki.client_cert))
    with pytest.raises(ConfigError, match="does not match its key"):
        streamwire.Client(
            secure.tls_url,
            tls_cert_file=str(secure.pki.client_cert),
            tls_key_file=str(secure.pki.server_key),
        )


# ---------------------------------------------------------------------------------------------
# Authentication
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["expired", "wrong-signature", "garbage"])
def test_bad_token_is_an_authentication_error(secure: SecurePulsar, topic: str, which: str) -> None:
    token = {
        "expired": secure.token("writer", expires_in=-60),
        "wrong-signature": hs256_jwt(b"k" * 32, "writer"),
        "garbage": "not-a-jwt-SECRETMATERIAL",
    }[which]
    with tls_client(secure, auth_token=token) as client:
        with pytest.raises(AuthenticationError) as info:
            client.create_producer(topic)
        assert token not in str(info.value) and token not in repr(info.value)
        assert token not in repr(client)


def test_no_credentials_is_an_authentication_error(secure: SecurePulsar, topic: str) -> None:
    with tls_client(secure) as client:
        with pytest.raises(AuthenticationError):
            client.create_producer(topic)


def test_token_callable_and_token_file(secure: SecurePulsar, topic: str, tmp_path: Any) -> None:
    calls: list[float] = []

    def mint() -> str:
        calls.append(time.monotonic())
        return secure.token("writer", expires_in=600)

    with tls_client(secure, auth_token=mint) as client:
        roundtrip(client, topic, b"via-callable")
    assert calls, "the token callable was never called"

    path = tmp_path / "token"
    path.write_text(secure.token("writer") + "\n")
    with tls_client(secure, auth_token_file=str(path)) as client:
        roundtrip(client, topic + "-file", b"via-file")
    # Re-read on every new connection: a rotated (here: broken) file is noticed.
    path.write_text("rotated-but-invalid")
    with tls_client(secure, auth_token_file=str(path)) as client:
        with pytest.raises(AuthenticationError):
            client.create_producer(topic + "-file2")


def test_token_callable_failure_is_an_authentication_error(
    secure: SecurePulsar, topic: str
) -> None:
    def broken() -> str:
        raise RuntimeError("vault unreachable")

    with tls_client(secure, auth_token=broken) as client:
        with pytest.raises(AuthenticationError, match="RuntimeError: vault unreachable"):
            client.create_producer(topic)


def test_basic_auth(secure: SecurePulsar, topic: str) -> None:
    with tls_client(secure, auth=AuthBasic(BASIC_USER, BASIC_PASSWORD)) as client:
        roundtrip(client, topic)
    wrong = "wrong-PASSWORD-xyz"
    with tls_client(secure, auth=AuthBasic(BASIC_USER, wrong)) as client:
        with pytest.raises(AuthenticationError) as info:
            client.create_producer(topic)
    assert wrong not in str(info.value)


def test_custom_plugin_object(secure: SecurePulsar, topic: str) -> None:
    class Vault:
        method_name = "token"

        def __init__(self) -> None:
            self.calls = 0

        def get_data(self) -> bytes:
            self.calls += 1
            return secure.token("writer").encode()

    vault = Vault()
    with tls_client(secure, auth=vault) as client:
        roundtrip(client, topic)
    assert vault.calls >= 1


def test_auth_option_errors() -> None:
    url = "pulsar://127.0.0.1:6650"
    with pytest.raises(ConfigError, match="at most one"):
        streamwire.Client(url, auth_token="a", auth=AuthBasic("u", "p"))
    with pytest.raises(ConfigError, match="empty"):
        streamwire.Client(url, auth_token="")
    with pytest.raises(TypeError, match="auth_token must be a str or a callable"):
        streamwire.Client(url, auth_token=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="method_name"):
        streamwire.Client(url, auth=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        AuthBasic("a:b", "p")


def test_secrets_stay_out_of_reprs() -> None:
    token = "eyJhbGciOiJIUzI1NiJ9.SECRET-TOKEN-BODY.sig"
    client = streamwire.Client("pulsar://127.0.0.1:6650", auth_token=token)
    assert token not in repr(client) and "SECRET" not in repr(client)
    assert 'auth="token"' in repr(client)
    client.close()
    basic = AuthBasic("alice", "hunter2-SECRET")
    assert "hunter2" not in repr(basic) and "hunter2" not in str(basic)
    admin = PulsarAdmin("http://127.0.0.1:1", token=token)
    assert token not in repr(admin)


# ---------------------------------------------------------------------------------------------
# Authorization
# ---------------------------------------------------------------------------------------------
def test_role_without_produce_permission_writes_nothing(secure: SecurePulsar, topic: str) -> None:
    admin = secure.admin()
    admin.create_topic(topic)
    with tls_client(secure, auth_token=secure.token("consume-only")) as client:
        with pytest.raises(AuthorizationError):
            producer = client.create_producer(topic)
            producer.send(b"must not arrive")
        # Consuming is granted: the role itself is fine.
        client.subscribe(topic, "allowed", initial_position="earliest").close()
    stats = admin.topic_stats(topic)
    assert stats["msgInCounter"] == 0 and stats["publishers"] == []
    # Control: a role with produce permission writes to the same topic.
    with tls_client(secure, auth_token=secure.token("writer")) as client:
        client.create_producer(topic).send(b"allowed")
    assert in_count(admin, topic) == 1


def test_unknown_role_is_not_authorized(secure: SecurePulsar, topic: str) -> None:
    with tls_client(secure, auth_token=secure.token("nobody")) as client:
        with pytest.raises(AuthorizationError):
            client.create_producer(topic)
    with pytest.raises(AdminError):
        secure.admin().topic_stats(topic)  # nothing was created either


# ---------------------------------------------------------------------------------------------
# Credential refresh
# ---------------------------------------------------------------------------------------------
def _addresses(admin: PulsarAdmin, topic: str, sub: str) -> tuple[str, str]:
    stats = admin.topic_stats(topic)
    (publisher,) = stats["publishers"]
    (consumer,) = stats["subscriptions"][sub]["consumers"]
    return str(publisher["address"]), str(consumer["address"])


def test_token_refresh_mid_stream_keeps_the_connection(secure: SecurePulsar, topic: str) -> None:
    """Tokens live 3 s; the broker checks every second and challenges expired credentials.
    The stream spans several expiries on one TCP connection (same client address throughout)."""
    lifetime = 3.0
    calls: list[float] = []
    lock = threading.Lock()

    def mint() -> str:
        with lock:
            calls.append(time.monotonic())
        return secure.token("refresher", expires_in=lifetime)

    admin = secure.admin()
    with tls_client(secure, auth_token=mint) as client:
        consumer = client.subscribe(topic, "refresh", initial_position="earliest")
        producer = client.create_producer(topic, batching=False)
        before = _addresses(admin, topic, "refresh")
        start = time.monotonic()
        sent: list[bytes] = []
        got: list[bytes] = []
        i = 0
        while time.monotonic() - start < 3.5 * lifetime:
            payload = f"m-{i}".encode()
            producer.send(payload)
            sent.append(payload)
            got.append(consumer.receive(timeout=10).data())
            i += 1
            time.sleep(0.2)
        after = _addresses(admin, topic, "refresh")
        assert got == sent
        assert client._open_connections() == 1
    assert before == after, "the connection was dropped and re-made instead of refreshed"
    # One call for the connection, then one per challenge (at least 3 expiries passed).
    assert len(calls) >= 3, calls


# ---------------------------------------------------------------------------------------------
# HTTP service URLs: REST lookups carry the credentials, https:// is verified like pulsar+ssl://
# ---------------------------------------------------------------------------------------------
def test_http_lookup_sends_the_token_then_round_trips(secure: SecurePulsar, topic: str) -> None:
    with streamwire.Client(
        secure.web_url, auth_token=secure.token("writer"), operation_timeout=15
    ) as client:
        # http:// asks for the plain broker address; the token goes there too.
        assert client.lookup().broker_url(topic).startswith("pulsar://")
        roundtrip(client, topic)


def test_http_lookup_without_credentials_is_an_authentication_error(
    secure: SecurePulsar, topic: str
) -> None:
    with streamwire.Client(secure.web_url, operation_timeout=15) as client:
        with pytest.raises(AuthenticationError):
            client.create_producer(topic)


def test_https_lookup_verifies_the_broker_and_names_the_tls_address(
    secure: SecurePulsar, topic: str
) -> None:
    with tls_client(secure, secure.web_tls_url, auth_token=secure.token("writer")) as client:
        assert client.lookup().broker_url(topic).startswith("pulsar+ssl://")
        roundtrip(client, topic)
    # Without the test CA the REST lookup itself fails to verify the certificate.
    with streamwire.Client(
        secure.web_tls_url, auth_token=secure.token("writer"), operation_timeout=10
    ) as client:
        with pytest.raises(ConnectError, match="certificate"):
            client.create_producer(topic)
