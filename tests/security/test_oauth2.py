"""OAuth 2.0 client credentials (``streamwire.AuthOauth2``) against Apache Pulsar.

The authorization server is the suite's own (tests/peers/oauth2.py): it issues HS256 JWTs
signed with the secret the secure Apache fixture's ``AuthenticationProviderToken`` trusts, so
the broker validates exactly what the issuer minted. The official ``pulsar-client``'s
``AuthenticationOauth2`` is run against the same issuer and broker as the judge of the issuer
(it must accept what ours accepts).
"""

from __future__ import annotations

import base64
import json
import pickle
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest
import streamwire
from streamwire import AuthenticationError, AuthOauth2, ConfigError

from tests.peers.oauth2 import OAuth2Client, OAuth2Server
from tests.peers.secure import SecurePulsar
from tests.spark.helpers import batch_read_values

pytestmark = pytest.mark.apache

CLIENT_ID = "app-7"
CLIENT_SECRET = "s3cr3t-OAUTH-value"
ROLE = "oauth-app"
AUDIENCE = "urn:streamwire:test"


@pytest.fixture(scope="module")
def secure(apache_secure_broker: SecurePulsar) -> SecurePulsar:
    apache_secure_broker.admin().grant_namespace_permission(ROLE, ["produce", "consume"])
    return apache_secure_broker


@pytest.fixture
def issuer(secure: SecurePulsar) -> Iterator[OAuth2Server]:
    def mint(role: str, lifetime: float) -> str:
        return secure.token(role, expires_in=lifetime)

    with OAuth2Server(
        mint, {CLIENT_ID: OAuth2Client(CLIENT_SECRET, ROLE)}, audience=AUDIENCE
    ) as server:
        yield server


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "credentials.json"
    path.write_text(
        json.dumps(
            {"type": "client_credentials", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}
        )
    )
    return path


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/oauth-{uuid.uuid4().hex}"


def client_for(secure: SecurePulsar, auth: Any) -> streamwire.Client:
    return streamwire.Client(
        secure.tls_url,
        tls_trust_certs_file=str(secure.pki.ca),
        auth=auth,
        operation_timeout=15.0,
        connection_timeout=5.0,
    )


def roundtrip(client: streamwire.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "rt", initial_position="earliest")
    producer = client.create_producer(topic)
    producer.send(b"oauth2-payload")
    assert consumer.receive(timeout=15).data() == b"oauth2-payload"
    producer.close()
    consumer.close()


def test_client_credentials_round_trip(
    secure: SecurePulsar, issuer: OAuth2Server, key_file: Path, topic: str
) -> None:
    auth = AuthOauth2(issuer.issuer_url, private_key=str(key_file), audience=AUDIENCE)
    with client_for(secure, auth) as client:
        roundtrip(client, topic)
    # One metadata look-up, then one token for the whole session (the token lives an hour).
    gets = [r for r in issuer.requests if r["method"] == "GET"]
    assert [r["path"] for r in gets] == ["/.well-known/openid-configuration"]
    (token_req,) = issuer.token_requests()
    assert token_req["content_type"] == "application/x-www-form-urlencoded"
    assert token_req["form"] == {
        "grant_type": "client_credentials",
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "audience": AUDIENCE,
    }
    assert auth.fetches == 1


def test_https_issuer_with_trust_file_and_data_url(secure: SecurePulsar, topic: str) -> None:
    def mint(role: str, lifetime: float) -> str:
        return secure.token(role, expires_in=lifetime)

    pki = secure.pki
    creds = json.dumps({"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}).encode()
    data_url = "data:application/json;base64," + base64.b64encode(creds).decode()
    with OAuth2Server(
        mint, {CLIENT_ID: OAuth2Client(CLIENT_SECRET, ROLE)}, tls=(pki.server_cert, pki.server_key)
    ) as server:
        assert server.issuer_url.startswith("https://")
        trusted = AuthOauth2(
            server.issuer_url, private_key=data_url, tls_trust_certs_file=str(pki.ca)
        )
        with client_for(secure, trusted) as client:
            roundtrip(client, topic)
        assert "data:<redacted>" in repr(trusted) and CLIENT_SECRET not in repr(trusted)
        # The system roots do not trust the test CA: the fetch fails, naming the certificate.
        untrusted = AuthOauth2(server.issuer_url, private_key=data_url)
        with pytest.raises(AuthenticationError, match="CERTIFICATE_VERIFY_FAILED"):
            untrusted.get_data()
        with client_for(secure, untrusted) as client:
            with pytest.raises(AuthenticationError, match="CERTIFICATE_VERIFY_FAILED"):
                client.create_producer(topic)


def test_wrong_secret_or_audience_is_an_authentication_error(
    secure: SecurePulsar, issuer: OAuth2Server, topic: str
) -> None:
    wrong = "WRONG-secret-xyz"
    bad = AuthOauth2(issuer.issuer_url, client_id=CLIENT_ID, client_secret=wrong, audience=AUDIENCE)
    with client_for(secure, bad) as client:
        with pytest.raises(AuthenticationError, match="HTTP 401: invalid_client") as info:
            client.create_producer(topic)
    assert wrong not in str(info.value) and wrong not in repr(bad)
    other = AuthOauth2(
        issuer.issuer_url, client_id=CLIENT_ID, client_secret=CLIENT_SECRET, audience="urn:other"
    )
    with pytest.raises(AuthenticationError, match="wrong audience"):
        other.get_data()
    # The refused request carried the secret to the issuer only (never to an error message).
    assert issuer.token_requests()[0]["form"]["client_secret"] == wrong


def test_unreachable_issuer_and_unreadable_key_file(tmp_path: Path) -> None:
    with pytest.raises(AuthenticationError, match="metadata request"):
        AuthOauth2("http://127.0.0.1:1", client_id="a", client_secret="b").get_data()
    garbage = tmp_path / "k.json"
    garbage.write_text("not json")
    with pytest.raises(AuthenticationError, match="not JSON"):
        AuthOauth2("http://127.0.0.1:1", private_key=str(garbage)).get_data()
    garbage.write_text('{"client_id": "only-id"}')
    with pytest.raises(AuthenticationError, match="lacks client_id or client_secret"):
        AuthOauth2("http://127.0.0.1:1", private_key=f"file://{garbage}").get_data()


def test_token_refreshed_on_challenge_keeps_the_connection(
    secure: SecurePulsar, issuer: OAuth2Server, key_file: Path, topic: str
) -> None:
    """Tokens live 3 s and the broker checks every second: each expiry is challenged on the
    live connection and answered with a freshly fetched token."""
    issuer.set_lifetime(3.0)
    auth = AuthOauth2(issuer.issuer_url, private_key=str(key_file), audience=AUDIENCE)
    admin = secure.admin()
    with client_for(secure, auth) as client:
        consumer = client.subscribe(topic, "refresh", initial_position="earliest")
        producer = client.create_producer(topic, batching=False)
        sent: list[bytes] = []
        got: list[bytes] = []
        start = time.monotonic()
        i = 0
        while time.monotonic() - start < 10.5:
            payload = f"m-{i}".encode()
            producer.send(payload)
            sent.append(payload)
            got.append(consumer.receive(timeout=10).data())
            i += 1
            time.sleep(0.2)
        assert got == sent
        assert client._open_connections() == 1
        stats = admin.topic_stats(topic)
        assert len(stats["publishers"]) == 1
    assert auth.fetches >= 3, auth.fetches
    assert len(issuer.token_requests()) == auth.fetches


def test_official_client_accepts_the_same_issuer(
    secure: SecurePulsar, issuer: OAuth2Server, key_file: Path, topic: str
) -> None:
    """The judge of the issuer: the official client's AuthenticationOauth2 authenticates with
    it, and reads what ours wrote with OAuth2."""
    ours = AuthOauth2(issuer.issuer_url, private_key=str(key_file), audience=AUDIENCE)
    with client_for(secure, ours) as client:
        producer = client.create_producer(topic)
        producer.send(b"from-streamwire")
        producer.close()
    params = json.dumps(
        {"issuer_url": issuer.issuer_url, "private_key": str(key_file), "audience": AUDIENCE}
    )
    official = pulsar.Client(secure.plain_url, authentication=pulsar.AuthenticationOauth2(params))
    try:
        reader = official.create_reader(topic, pulsar.MessageId.earliest)
        assert reader.read_next(15_000).data() == b"from-streamwire"
    finally:
        official.close()
    official_fetches = [
        r for r in issuer.token_requests() if r["form"].get("client_id") == CLIENT_ID
    ]
    assert len(official_fetches) >= 2  # ours, then the official client's


def test_from_params_takes_both_spellings_and_pickles(key_file: Path) -> None:
    cpp = AuthOauth2.from_params(
        json.dumps({"issuer_url": "http://127.0.0.1:1", "private_key": str(key_file)})
    )
    java = AuthOauth2.from_params(
        {"issuerUrl": "http://127.0.0.1:1", "privateKey": f"file://{key_file}", "scope": "s"}
    )
    direct = AuthOauth2.from_params(
        {"issuer_url": "http://127.0.0.1:1/", "client_id": "a", "client_secret": "b"}
    )
    assert cpp.issuer_url == java.issuer_url == direct.issuer_url == "http://127.0.0.1:1"
    assert cpp.method_name == "token"
    clone = pickle.loads(pickle.dumps(java))
    assert repr(clone) == repr(java)
    with pytest.raises(ConfigError, match="not both"):
        AuthOauth2.from_params(
            {"issuer_url": "http://x", "private_key": "/k", "client_id": "a", "client_secret": "b"}
        )


def test_spark_source_takes_oauth2_in_both_spellings(
    secure: SecurePulsar, issuer: OAuth2Server, key_file: Path, topic: str
) -> None:
    """Our option (``auth_oauth2``) and the Scala connector's plug-in class + JSON parameters
    both reach the engine as AuthOauth2; the source plans and reads over TLS with them."""
    from streamwire.spark.config import ClientConfig

    with client_for(
        secure, AuthOauth2(issuer.issuer_url, private_key=str(key_file), audience=AUDIENCE)
    ) as client:
        p = client.create_producer(topic)
        p.send_many([b"a", b"b", b"c"])
        p.flush()
        p.close()
    params = json.dumps(
        {"issuerUrl": issuer.issuer_url, "privateKey": f"file://{key_file}", "audience": AUDIENCE}
    )
    base = {
        "service.url": secure.tls_url,
        "topic": topic,
        "pulsar.client.tlsTrustCertsFilePath": str(secure.pki.ca),
        "connectionTimeout": "5",
    }
    scala = {
        **base,
        "pulsar.client.authPluginClassName": (
            "org.apache.pulsar.client.impl.auth.oauth2.AuthenticationOAuth2"
        ),
        "pulsar.client.authParams": params,
    }
    ours = {**base, "auth_oauth2": params}
    for options in (scala, ours):
        config = ClientConfig.from_options(options)
        assert config.auth_oauth2 == params and config.auth_token is None
        assert CLIENT_SECRET not in repr(config)
        assert sorted(batch_read_values(options)) == [b"a", b"b", b"c"]
    # A token plug-in's "token:<jwt>" parameter is the token, without the prefix.
    token = ClientConfig.from_options(
        {**base, "pulsar.client.authParams": "token:abc.def.ghi"}
    ).auth_token
    assert token == "abc.def.ghi"
