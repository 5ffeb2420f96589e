"""Cluster failover where the clusters need different credentials (`streamwire.ServiceInfo`).

The primary is a plain pulsar-lite broker (no TLS, no authentication); the standby is the
session's secure Apache Pulsar (TLS with the suite's own CA, token authentication and
authorization on). The client itself is given no credentials: the standby's token and CA come
with its `ServiceInfo`, and are used only once the client has moved there. The official
client's `pulsar.AutoClusterFailover` with `pulsar.ServiceInfo` is the judge of what the
feature should do; `streamwire.compat` takes the same objects.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator

import pulsar
import pytest
import streamwire
import streamwire.compat as compat
from streamwire import AuthenticationError, AutoClusterFailover, ServiceInfo

from tests.cluster.helpers import read_all
from tests.peers.lite import PulsarLite
from tests.peers.secure import CLIENT_CERT_ROLE, SecurePulsar

pytestmark = pytest.mark.apache

ROLE = "failover-writer"


@pytest.fixture(scope="module")
def secure(apache_secure_broker: SecurePulsar) -> SecurePulsar:
    admin = apache_secure_broker.admin()
    for role in (ROLE, CLIENT_CERT_ROLE):
        admin.grant_namespace_permission(role, ["produce", "consume"])
    return apache_secure_broker


@pytest.fixture
def primary() -> Iterator[PulsarLite]:
    with PulsarLite() as lite:
        try:
            yield lite
        finally:
            lite.close()


def _topic() -> str:
    return f"persistent://public/default/failover-cred-{uuid.uuid4().hex[:10]}"


def _wait_for(cond: Callable[[], bool], seconds: float) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < seconds, "condition not reached in time"
        time.sleep(0.05)


def _create_on_secure(secure: SecurePulsar, topic: str) -> None:
    """Create ``topic`` on the secure broker ahead of the move (nothing written): the first
    producer of a topic waits for its ledger, which on a loaded machine took longer than the
    tests' timeouts, and that wait is not what they are about."""
    with streamwire.Client(
        secure.tls_url,
        auth_token=secure.admin_token,
        tls_trust_certs_file=str(secure.pki.ca),
        operation_timeout=120,
    ) as client:
        client.create_producer(topic).close()


def _stored_on_secure(secure: SecurePulsar, topic: str) -> list[bytes]:
    return read_all(
        secure.tls_url,
        topic,
        auth_token=secure.admin_token,
        tls_trust_certs_file=str(secure.pki.ca),
    )


def test_the_standby_is_reached_with_its_own_token_and_ca_and_the_primary_without(
    secure: SecurePulsar, primary: PulsarLite
) -> None:
    topic = _topic()
    _create_on_secure(secure, topic)
    standby = ServiceInfo(
        secure.tls_url, auth_token=secure.token(ROLE), tls_trust_certs_file=str(secure.pki.ca)
    )
    assert standby.auth_method == "token" and standby.service_url == secure.tls_url
    assert secure.token(ROLE) not in repr(standby)
    failover = AutoClusterFailover(
        primary.service_url, [standby], check_interval=0.2, switch_back_threshold=3
    )
    assert failover.secondary == [secure.tls_url]
    with streamwire.Client(failover, operation_timeout=30) as client:
        producer = client.create_producer(topic, send_timeout=120)
        producer.send(b"on-primary")
        primary.kill()
        _wait_for(lambda: client.service_url == secure.tls_url, 10)
        # The producer reconnects to the secure cluster over TLS with the standby's token.
        producer.send(b"on-standby")
        assert _stored_on_secure(secure, topic) == [b"on-standby"]
        primary.restart()
        _wait_for(lambda: client.service_url == primary.service_url, 15)
        producer.send(b"back-on-primary")
        assert read_all(primary.service_url, topic) == [b"on-primary", b"back-on-primary"]
        producer.close()


def test_without_the_standby_credentials_the_move_ends_in_an_authentication_error(
    secure: SecurePulsar, primary: PulsarLite
) -> None:
    """The same move with the standby given as a plain URL (only the CA on the client): the
    secure cluster refuses the client, so the credentials above are what made it work."""
    topic = _topic()
    failover = AutoClusterFailover(primary.service_url, [secure.tls_url], check_interval=0.2)
    with streamwire.Client(
        failover, operation_timeout=10, tls_trust_certs_file=str(secure.pki.ca)
    ) as client:
        primary.kill()
        _wait_for(lambda: client.service_url == secure.tls_url, 10)
        with pytest.raises(AuthenticationError):
            client.create_producer(topic)


def test_official_client_and_compat_with_service_infos_move_alike(
    secure: SecurePulsar, primary: PulsarLite
) -> None:
    """`pulsar.ServiceInfo(url, AuthenticationToken, ca)` in the official client and in
    `streamwire.compat`: after the primary dies both end on the secure cluster and write
    there with the standby's credentials."""
    topic = _topic()
    _create_on_secure(secure, topic)
    token = secure.token(ROLE)
    ca = str(secure.pki.ca)

    theirs = pulsar.Client(
        pulsar.AutoClusterFailover(
            pulsar.ServiceInfo(primary.service_url),
            [pulsar.ServiceInfo(secure.tls_url, pulsar.AuthenticationToken(token), ca)],
            check_interval_ms=200,
        ),
        operation_timeout_seconds=30,
    )
    info = compat.ServiceInfo(secure.tls_url, compat.AuthenticationToken(token), ca)
    assert info.use_tls and info.tls_trust_certs_file_path == ca
    ours = compat.Client(
        compat.AutoClusterFailover(
            compat.ServiceInfo(primary.service_url), [info], check_interval_ms=200
        ),
        operation_timeout_seconds=30,
    )
    try:
        theirs.create_producer(topic).send(b"official-on-primary")
        ours.create_producer(topic).send(b"compat-on-primary")
        primary.kill()
        time.sleep(2.0)  # ten probe rounds: both have moved
        theirs.create_producer(topic).send(b"official")
        ours.create_producer(topic).send(b"compat")
        assert sorted(_stored_on_secure(secure, topic)) == [b"compat", b"official"]
    finally:
        ours.close()
        theirs.close()


def test_a_client_certificate_per_cluster_ours_compat_and_official_alike(
    secure: SecurePulsar, primary: PulsarLite
) -> None:
    """The standby authenticates clients by certificate: its `ServiceInfo` carries the client
    certificate and key (ours: `tls_cert_file`/`tls_key_file` with `AuthTls()`; the official
    client and `streamwire.compat`: `AuthenticationTLS(cert, key)`). The client itself has
    none, so the primary is reached without. After the primary dies all three write on the
    standby as the certificate's role; without the certificate the standby refuses."""
    topic = _topic()
    _create_on_secure(secure, topic)
    ca, cert, key = str(secure.pki.ca), str(secure.pki.client_cert), str(secure.pki.client_key)
    standby = ServiceInfo(
        secure.tls_url,
        auth=streamwire.AuthTls(),
        tls_trust_certs_file=ca,
        tls_cert_file=cert,
        tls_key_file=key,
    )
    assert standby.auth_method == "tls" and standby.tls_cert_file == cert
    assert key not in repr(standby)
    mine = streamwire.Client(
        AutoClusterFailover(primary.service_url, [standby], check_interval=0.2),
        operation_timeout=30,
    )
    theirs = pulsar.Client(
        pulsar.AutoClusterFailover(
            pulsar.ServiceInfo(primary.service_url),
            [pulsar.ServiceInfo(secure.tls_url, pulsar.AuthenticationTLS(cert, key), ca)],
            check_interval_ms=200,
        ),
        operation_timeout_seconds=30,
    )
    ours_compat = compat.Client(
        compat.AutoClusterFailover(
            compat.ServiceInfo(primary.service_url),
            [compat.ServiceInfo(secure.tls_url, compat.AuthenticationTLS(cert, key), ca)],
            check_interval_ms=200,
        ),
        operation_timeout_seconds=30,
    )
    try:
        mine.create_producer(topic).send(b"ours-on-primary")
        theirs.create_producer(topic).send(b"official-on-primary")
        ours_compat.create_producer(topic).send(b"compat-on-primary")
        primary.kill()
        _wait_for(lambda: mine.service_url == secure.tls_url, 10)
        time.sleep(2.0)  # ten probe rounds: the other two have moved as well
        mine.create_producer(topic, send_timeout=120).send(b"ours")
        theirs.create_producer(topic).send(b"official")
        ours_compat.create_producer(topic).send(b"compat")
        assert sorted(_stored_on_secure(secure, topic)) == [b"compat", b"official", b"ours"]
    finally:
        ours_compat.close()
        theirs.close()
        mine.close()
    # The same standby without the certificate: refused, so the certificate is what let it in.
    bare = ServiceInfo(secure.tls_url, auth=streamwire.AuthTls(), tls_trust_certs_file=ca)
    with streamwire.Client(
        AutoClusterFailover("pulsar://127.0.0.1:1", [bare], check_interval=0.2),
        operation_timeout=10,
    ) as client:
        _wait_for(lambda: client.service_url == secure.tls_url, 10)
        with pytest.raises(AuthenticationError):
            client.create_producer(topic)


def test_service_info_options_are_checked() -> None:
    with pytest.raises(streamwire.ConfigError):
        ServiceInfo("pulsar://127.0.0.1:1", auth_token="a", auth_token_file="b")
    with pytest.raises(TypeError):
        AutoClusterFailover("pulsar://127.0.0.1:1", [42])  # type: ignore[list-item]
    with pytest.raises(streamwire.ConfigError):
        # A CA bundle that does not exist fails at the Client call, not at the failover.
        streamwire.Client(
            AutoClusterFailover(
                "pulsar://127.0.0.1:1",
                [ServiceInfo("pulsar+ssl://127.0.0.1:2", tls_trust_certs_file="/nonexistent.pem")],
            )
        )
    with pytest.raises(streamwire.ConfigError):
        ServiceInfo("pulsar+ssl://127.0.0.1:2", tls_key_file="/k.pem")
    with pytest.raises(compat.exceptions.InvalidConfiguration):
        # A client certificate that does not exist fails at the Client call, as a CA does
        # (the official exception for a ConfigError).
        compat.Client(
            compat.AutoClusterFailover(
                compat.ServiceInfo("pulsar://127.0.0.1:1"),
                [
                    compat.ServiceInfo(
                        "pulsar+ssl://127.0.0.1:2", compat.AuthenticationTLS("/c.pem", "/k.pem")
                    )
                ],
            )
        )
    with pytest.raises(ValueError):
        compat.AutoClusterFailover(compat.ServiceInfo("pulsar://127.0.0.1:1"), ["pulsar://x:2"])  # type: ignore[list-item]
