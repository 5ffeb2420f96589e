"""The official client's authentication classes through ``streamwire.compat``, against the secure
Apache Pulsar of tests/peers/secure.py: one program written for ``pulsar-client`` runs with
``import pulsar`` and with ``import streamwire.compat as pulsar``, over ``pulsar+ssl://`` with the
test CA, as a token role, the basic user and the client certificate's role; a role without the
produce grant fails both ways with the same official exception; a bad token is an
AuthenticationError; OAuth 2.0 client credentials from the suite's issuer work both ways."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import streamwire.compat

from tests.peers.oauth2 import OAuth2Client, OAuth2Server
from tests.peers.secure import BASIC_PASSWORD, BASIC_USER, SecurePulsar, hs256_jwt

pytestmark = pytest.mark.apache

GRANTS: dict[str, list[str]] = {
    "compat-writer": ["produce", "consume"],
    "compat-reader": ["consume"],
    "tls-client-role": ["produce", "consume"],
    "compat-oauth-app": ["produce", "consume"],
    BASIC_USER: ["produce", "consume"],
}


@pytest.fixture(scope="module")
def secure(apache_secure_broker: SecurePulsar) -> SecurePulsar:
    return apache_secure_broker.granted(GRANTS)


def roundtrip(pulsar: ModuleType, url: str, ca: str, authentication: Any) -> Any:
    """Produce one message and read it back; what happened, as plain data."""
    topic = f"persistent://public/default/compat-auth-{uuid.uuid4().hex}"
    client = pulsar.Client(
        url,
        authentication=authentication,
        tls_trust_certs_file_path=ca,
        operation_timeout_seconds=15,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )
    try:
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic)
        producer.send(b"secret-payload")
        return consumer.receive(timeout_millis=15000).data()
    except pulsar.PulsarException as e:
        return type(e).__name__
    finally:
        client.close()


AUTHS: dict[str, Callable[[ModuleType, SecurePulsar], Any]] = {
    "token": lambda p, s: p.AuthenticationToken(s.token("compat-writer")),
    "token-callable": lambda p, s: p.AuthenticationToken(lambda: s.token("compat-writer")),
    "basic": lambda p, s: p.AuthenticationBasic(BASIC_USER, BASIC_PASSWORD),
    "basic-json": lambda p, s: p.AuthenticationBasic(
        auth_params_string=f'{{"username": "{BASIC_USER}", "password": "{BASIC_PASSWORD}"}}'
    ),
    "tls": lambda p, s: p.AuthenticationTLS(str(s.pki.client_cert), str(s.pki.client_key)),
}


@pytest.mark.parametrize("kind", sorted(AUTHS))
def test_authentication_both_ways(
    kind: str, secure: SecurePulsar, official_pulsar: ModuleType
) -> None:
    ca = str(secure.pki.ca)
    theirs = roundtrip(official_pulsar, secure.tls_url, ca, AUTHS[kind](official_pulsar, secure))
    ours = roundtrip(streamwire.compat, secure.tls_url, ca, AUTHS[kind](streamwire.compat, secure))
    assert ours == theirs == b"secret-payload"


def test_authorization_refused_both_ways(secure: SecurePulsar, official_pulsar: ModuleType) -> None:
    ca = str(secure.pki.ca)
    token = secure.token("compat-reader")  # may consume, may not produce
    theirs = roundtrip(
        official_pulsar, secure.tls_url, ca, official_pulsar.AuthenticationToken(token)
    )
    ours = roundtrip(
        streamwire.compat, secure.tls_url, ca, streamwire.compat.AuthenticationToken(token)
    )
    assert ours == theirs == "AuthorizationError"


def test_bad_token_is_an_authentication_error(secure: SecurePulsar) -> None:
    # The official client retries a refused token until operation_timeout_seconds and raises
    # Timeout (15 s here, seen against Apache 4.0); streamwire raises AuthenticationError at
    # once (docs/from-pulsar-client.md), so only the compat side runs.
    auth = streamwire.compat.AuthenticationToken(hs256_jwt(b"k" * 32, "compat-writer"))
    ours = roundtrip(streamwire.compat, secure.tls_url, str(secure.pki.ca), auth)
    assert ours == "AuthenticationError"


def test_oauth2_client_credentials_both_ways(
    secure: SecurePulsar, official_pulsar: ModuleType, tmp_path: Path
) -> None:
    """AuthenticationOauth2 with the official JSON parameters: the suite's issuer mints tokens
    the broker trusts; both clients fetch one and use it."""

    def mint(role: str, lifetime: float) -> str:
        return secure.token(role, expires_in=lifetime)

    key_file = tmp_path / "credentials.json"
    key_file.write_text(json.dumps({"client_id": "compat-app", "client_secret": "s3cr3t-compat"}))
    clients = {"compat-app": OAuth2Client("s3cr3t-compat", "compat-oauth-app")}
    with OAuth2Server(mint, clients, audience="urn:compat") as issuer:
        params = json.dumps(
            {
                "issuer_url": issuer.issuer_url,
                "private_key": str(key_file),
                "audience": "urn:compat",
            }
        )
        ca = str(secure.pki.ca)
        results = [
            roundtrip(p, secure.tls_url, ca, p.AuthenticationOauth2(params))
            for p in (official_pulsar, streamwire.compat)
        ]
        assert results == [b"secret-payload", b"secret-payload"]
        assert len(issuer.token_requests()) >= 2  # the official client's fetch, then ours
