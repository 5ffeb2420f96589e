"""The two-broker cluster with TLS and token authentication, through the Pulsar proxy.

The cluster (``apache_cluster_secured``, tests/peers/cluster_security.py): brokers and proxy
demand a JWT on every port, the brokers authorize (roles get namespace grants here), the
proxy forwards the client's role (``forwardAuthorizationCredentials``) and talks TLS to the
brokers; ``pulsar+ssl://`` and ``https://`` ports on brokers and proxy with the test CA.

Through ``pulsar+ssl://proxy`` every connection of ours goes to the proxy's TLS port (read
from /proc), while the lookups name the owners' ``pulsar+ssl://`` addresses; the official
client reads directly from the brokers what ours wrote through the proxy, and the other way
round. Refused credentials and roles fail at once with our typed errors.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
import streamwire
from streamwire import (
    AuthenticationError,
    AuthorizationError,
    ConnectError,
    OperationTimeoutError,
)

from tests.cluster.helpers import all_running, dialled, new_topic, spread_topic, topic_owned_by
from tests.peers.apache_cluster import ApacheCluster
from tests.peers.cluster_security import ClusterSecurity
from tests.peers.secure import hs256_jwt

N = 1_000

#: Namespace grants of the test roles. Transactions look up the coordinators' topic in
#: ``pulsar/system``: a role that uses them needs a grant there too.
GRANTS: dict[str, dict[str, list[str]]] = {
    "writer": {"public/default": ["produce", "consume"], "pulsar/system": ["consume"]},
    "consume-only": {"public/default": ["consume"]},
    "no-txn": {"public/default": ["produce", "consume"]},
}
_granted: set[int] = set()


@pytest.fixture
def secured(apache_cluster_secured: ApacheCluster) -> ApacheCluster:
    """The secured cluster, every process running, the roles' grants made (once)."""
    cluster = all_running(apache_cluster_secured)
    if id(cluster) not in _granted:
        admin = cluster.admin()
        for role, namespaces in GRANTS.items():
            for namespace, actions in namespaces.items():
                admin.grant_namespace_permission(role, actions, namespace=namespace)
        _granted.add(id(cluster))
    return cluster


def _sec(cluster: ApacheCluster) -> ClusterSecurity:
    assert cluster.security is not None
    return cluster.security


def client(
    cluster: ApacheCluster, url: str, role: str | None = "writer", **kwargs: Any
) -> streamwire.Client:
    """Our client on ``url`` with a token for ``role`` (None: no credentials), trusting the
    test CA."""
    sec = _sec(cluster)
    if role is not None:
        kwargs.setdefault("auth_token", sec.token(role))
    kwargs.setdefault("tls_trust_certs_file", str(sec.pki.ca))
    kwargs.setdefault("operation_timeout", 30.0)
    kwargs.setdefault("connection_timeout", 5.0)
    return streamwire.Client(url, **kwargs)


@pytest.fixture
def official(secured: ApacheCluster, official_pulsar: ModuleType) -> Iterator[Any]:
    """A factory of official clients with the writer's token and the test CA."""
    made: list[Any] = []

    def make(url: str) -> Any:
        sec = _sec(secured)
        c = official_pulsar.Client(
            url,
            authentication=official_pulsar.AuthenticationToken(sec.token("writer")),
            tls_trust_certs_file_path=str(sec.pki.ca),
            operation_timeout_seconds=30,
            logger=official_pulsar.ConsoleLogger(official_pulsar.LoggerLevel.Error),
        )
        made.append(c)
        return c

    yield make
    for c in made:
        with contextlib.suppress(Exception):  # a test may have closed it already
            c.close()


def official_read(official_pulsar: ModuleType, c: Any, topic: str) -> list[bytes]:
    """Every message of ``topic`` from the start, with the official client ``c``."""
    out: list[bytes] = []
    reader = c.create_reader(topic, official_pulsar.MessageId.earliest)
    try:
        while True:
            try:
                out.append(bytes(reader.read_next(timeout_millis=3000).data()))
            except official_pulsar.Timeout:
                return out
    finally:
        reader.close()


def receive_all(consumer: streamwire.Consumer, n: int) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        batch = consumer.receive_many(500, timeout=10)
        got.extend(m.data() for m in batch)
        consumer.acknowledge(batch)
    return got


def read_ours(c: streamwire.Client, topic: str, n: int) -> list[bytes]:
    """The first ``n`` messages of ``topic`` with a reader of ours."""
    got: list[bytes] = []
    with c.create_reader(topic, streamwire.MessageId.earliest) as reader:
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            got.extend(m.data() for m in reader.read_many(n - len(got), timeout=10))
    return got


def only_the_proxy(cluster: ApacheCluster) -> None:
    conns = dialled(cluster)
    assert conns.get("proxy-tls", 0) >= 1, conns
    assert set(conns) == {"proxy-tls"}, f"a broker was dialled directly: {conns}"


# ---------------------------------------------------------------------------------------------
# Through pulsar+ssl://proxy with a valid token; interop with the official client
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("owner", [0, 1])
def test_ours_through_the_tls_proxy_official_reads_directly(
    secured: ApacheCluster, official: Any, official_pulsar: ModuleType, owner: int
) -> None:
    topic = topic_owned_by(secured, owner, "sec-w")
    payloads = [f"s{owner}-{i:05d}".encode() for i in range(N)]
    with client(secured, secured.proxy_tls_url) as c:
        # The lookup through the proxy names the owner's TLS address ...
        assert c.lookup().broker_url(topic) == secured.brokers[owner].tls_url
        with c.create_producer(topic, batching_max_delay=0.002) as producer:
            futures = [producer.send_async(p) for p in payloads]
            producer.flush()
            for f in futures:
                f.result(timeout=60)
        with c.subscribe(topic, "ours", initial_position="earliest") as consumer:
            assert receive_all(consumer, N) == payloads
        assert read_ours(c, topic, N) == payloads
        # ... yet every connection of ours is to the proxy's TLS port.
        only_the_proxy(secured)
    # The official client, directly from broker 0's TLS port (redirected to the owner).
    assert official_read(official_pulsar, official(secured.brokers[0].tls_url), topic) == payloads


@pytest.mark.parametrize("owner", [0, 1])
def test_official_through_the_tls_proxy_ours_reads_directly(
    secured: ApacheCluster, official: Any, official_pulsar: ModuleType, owner: int
) -> None:
    topic = topic_owned_by(secured, owner, "sec-r")
    payloads = [f"o{owner}-{i:05d}".encode() for i in range(N)]
    theirs = official(secured.proxy_tls_url)
    producer = theirs.create_producer(
        topic, batching_max_publish_delay_ms=2, block_if_queue_full=True
    )
    results: list[object] = []
    for p in payloads:
        producer.send_async(p, lambda res, _mid: results.append(res))
    producer.flush()
    producer.close()
    theirs.close()  # its connections would count below
    assert results == [official_pulsar.Result.Ok] * N
    # Ours directly, given broker 0's TLS port: the lookup redirects to broker 1's when it owns.
    with client(secured, secured.brokers[0].tls_url) as c:
        assert c.lookup().broker_url(topic) == secured.brokers[owner].tls_url
        got = read_ours(c, topic, N)
        conns = dialled(secured)
    assert got == payloads
    assert "proxy-tls" not in conns and conns.get(f"b{owner}-tls", 0) >= 1, conns


def test_partitioned_topic_on_both_brokers_through_the_tls_proxy(
    secured: ApacheCluster, official: Any, official_pulsar: ModuleType
) -> None:
    topic, owners = spread_topic(secured, 4)
    assert set(owners) == {0, 1}
    payloads = [f"p-{i:04d}".encode() for i in range(400)]
    with client(secured, secured.proxy_tls_url) as c:
        with c.create_producer(topic, routing="round_robin", batching=False) as producer:
            for p in payloads:
                producer.send(p)
        with c.subscribe(topic, "ours", initial_position="earliest") as consumer:
            got = receive_all(consumer, len(payloads))
        only_the_proxy(secured)
    assert sorted(got) == payloads
    # Round-robin put a quarter on each partition; each is read directly from its owner.
    direct = official(secured.brokers[0].tls_url)
    for i in range(4):
        part = official_read(official_pulsar, direct, f"{topic}-partition-{i}")
        assert len(part) == len(payloads) // 4, (i, owners[i], len(part))
        assert part == sorted(part)


def test_transaction_through_the_tls_proxy(
    secured: ApacheCluster, official: Any, official_pulsar: ModuleType
) -> None:
    topic = topic_owned_by(secured, 1, "sec-txn")
    with client(secured, secured.proxy_tls_url) as c:
        with c.create_producer(topic, batching=False) as producer:
            with c.subscribe(topic, "txn", initial_position="earliest") as consumer:
                committed = c.transaction(timeout=60)
                producer.send_many([b"c0", b"c1"], txn=committed)
                aborted = c.transaction(timeout=60)
                producer.send(b"aborted", txn=aborted)
                # Nothing is visible before the commit.
                with pytest.raises(OperationTimeoutError):
                    consumer.receive(timeout=1.5)
                aborted.abort()
                committed.commit()
                assert [consumer.receive(timeout=15).data() for _ in range(2)] == [b"c0", b"c1"]
        only_the_proxy(secured)
    assert official_read(official_pulsar, official(secured.service_url), topic) == [b"c0", b"c1"]


# ---------------------------------------------------------------------------------------------
# Refused credentials and roles: typed errors at once, through the proxy
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["expired", "wrong-signature", "missing"])
def test_bad_token_at_the_proxy_is_an_authentication_error(
    secured: ApacheCluster, which: str
) -> None:
    sec = _sec(secured)
    token = {
        "expired": sec.token("writer", expires_in=-60),
        "wrong-signature": hs256_jwt(b"k" * 32, "writer"),
        "missing": None,
    }[which]
    kwargs = {"auth_token": token} if token else {}
    for url in (secured.proxy_tls_url, secured.proxy_web_tls_url):
        with client(secured, url, role=None, **kwargs) as c:
            t0 = time.monotonic()
            with pytest.raises(AuthenticationError) as info:
                c.create_producer(new_topic("sec-bad"))
            # Refused by the proxy's handshake (or its REST filter), not retried to a timeout.
            assert time.monotonic() - t0 < 5, (url, time.monotonic() - t0)
        text = str(info.value)
        assert token is None or token not in text
        if url.startswith("https"):
            # The REST filter's (Jetty's) answer is named, not its first line ("{").
            assert text.endswith("HTTP 401 Unauthorized: Authentication required"), text


def test_role_without_permission_through_the_proxy_is_an_authorization_error(
    secured: ApacheCluster,
) -> None:
    topic = new_topic("sec-authz")
    admin = secured.admin()
    admin.create_partitioned_topic(topic, 2)
    with client(secured, secured.proxy_tls_url, role="consume-only") as c:
        t0 = time.monotonic()
        with pytest.raises(AuthorizationError, match="not authorized to Produce"):
            c.create_producer(topic)
        assert time.monotonic() - t0 < 5
        c.subscribe(topic, "allowed", initial_position="earliest").close()
    assert all(admin.topic_stats(f"{topic}-partition-{i}")["msgInCounter"] == 0 for i in range(2))
    with client(secured, secured.proxy_tls_url, role="nobody") as c:
        with pytest.raises(AuthorizationError, match="not authorized to Lookup"):
            c.lookup().broker_url(new_topic("sec-authz"))
        # Pulsar's proxy answers a refused partition-metadata request with a failed lookup
        # answer: that is the broker's refusal, not "0 partitions" (non-partitioned).
        with pytest.raises(AuthorizationError, match="not authorized to Get Partition Metadata"):
            c.lookup().partitions(topic)


def test_transactions_need_a_grant_on_the_coordinators_namespace(secured: ApacheCluster) -> None:
    """A role that may not look up ``pulsar/system``'s coordinator topic is told so, not
    that the cluster has no transactions; once granted (role ``writer``) it works."""
    with client(secured, secured.proxy_tls_url, role="no-txn") as c:
        with pytest.raises(AuthorizationError, match="not authorized"):
            c.transaction()
    with client(secured, secured.proxy_tls_url) as c:
        c.transaction().abort()


def test_wrong_ca_at_the_proxy_is_a_connect_error(secured: ApacheCluster) -> None:
    other_ca = str(_sec(secured).pki.other_ca)
    for url in (secured.proxy_tls_url, secured.proxy_web_tls_url):
        with client(secured, url, tls_trust_certs_file=other_ca) as c:
            t0 = time.monotonic()
            with pytest.raises(ConnectError, match="not signed by a trusted CA"):
                c.create_producer(new_topic("sec-ca"))
            assert time.monotonic() - t0 < 10


def test_hostname_verification_at_the_proxy(secured: ApacheCluster) -> None:
    # The certificate names broker.streamwire.test and 127.0.0.1, not "localhost".
    url = secured.proxy_tls_url.replace("127.0.0.1", "localhost")
    with client(secured, url) as c:
        with pytest.raises(ConnectError, match='not valid for host "localhost"'):
            c.create_producer(new_topic("sec-host"))
    topic = topic_owned_by(secured, 1, "sec-host")
    with client(secured, url, tls_disable_hostname_verification_DANGEROUS=True) as c:
        with c.create_producer(topic) as producer:
            producer.send(b"unverified name, verified chain")
        only_the_proxy(secured)


# ---------------------------------------------------------------------------------------------
# HTTP lookups: https:// (TLS + token) and http:// (token) on a broker and on the proxy
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["broker0", "proxy"])
@pytest.mark.parametrize("scheme", ["https", "http"])
def test_http_service_url_with_token(
    secured: ApacheCluster, official: Any, official_pulsar: ModuleType, entry: str, scheme: str
) -> None:
    web = {
        ("broker0", "https"): secured.brokers[0].web_tls_url,
        ("broker0", "http"): secured.web_url,
        ("proxy", "https"): secured.proxy_web_tls_url,
        ("proxy", "http"): secured.proxy_web_url,
    }[entry, scheme]
    topic = topic_owned_by(secured, 1, "sec-http")
    owner = secured.brokers[1]
    payloads = [f"h-{i:03d}".encode() for i in range(200)]
    with client(secured, web) as c:
        # https:// asks for the owner's pulsar+ssl:// address, http:// for its pulsar:// one.
        expected = owner.tls_url if scheme == "https" else owner.service_url
        assert c.lookup().broker_url(topic) == expected
        with c.create_producer(topic) as producer:
            futures = [producer.send_async(p) for p in payloads]
            producer.flush()
            for f in futures:
                f.result(timeout=30)
        with c.subscribe(topic, "http", initial_position="earliest") as consumer:
            assert receive_all(consumer, len(payloads)) == payloads
    assert official_read(official_pulsar, official(secured.proxy_tls_url), topic) == payloads
    with client(secured, web, role="nobody") as c:
        # The REST layer answers 401 for a role without permission, after authenticating
        # it: the same AuthorizationError as on the binary protocol.
        with pytest.raises(AuthorizationError, match="Unauthorized to validateTopicOperation"):
            c.lookup().broker_url(f"persistent://public/default/{uuid.uuid4().hex}")
