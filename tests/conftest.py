"""Shared pytest fixtures: real brokers, the official client, unique topics and a fault proxy.

Fixtures (all brokers bind 127.0.0.1 only and are stopped by PID at teardown):

- ``lite_broker`` (session): a :class:`~tests.peers.lite.PulsarLite`.
- ``apache_broker`` (session): an :class:`~tests.peers.apache.ApachePulsar` (Apache Pulsar 4.0.x
  standalone). Started only when a collected test needs it; a start failure FAILS the test with
  the broker's log tail (never skips).
- ``broker``: parametrized over ``"lite"`` and ``"apache"`` -- an "any broker" test runs on both.
  Select with ``-k lite`` / ``-k apache`` or the markers below.
- ``apache_admin``: a :class:`~tests.peers.admin.PulsarAdmin` for ``apache_broker``.
- ``official_pulsar``: the imported official ``pulsar`` module (PyPI ``pulsar-client``).
- ``unique_topic``: ``persistent://public/default/t-<uuid>``.
- ``pravega`` (session): a :class:`~tests.peers.pravega.PravegaStandalone` (Pravega 0.13.0
  standalone, the official ``pravega`` client checks it answers).
- ``tank_broker`` (session): a :class:`~tests.peers.tank.TankBroker` -- the real TANK broker
  when ``STREAMWIRE_TANK_BIN`` names a built ``tank`` binary, else the broker double.
- ``fault_proxy``: factory ``fault_proxy(target) -> FaultProxy`` where ``target`` is a broker
  object (anything with ``service_url``), a ``pulsar://host:port`` URL or a ``(host, port)`` pair.

Markers: ``apache`` (needs Apache Pulsar; tests using ``apache_broker`` or ``broker[apache]`` get it
automatically), ``lite`` (runs against pulsar-lite), ``slow``.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Union
from urllib.parse import urlparse

import pytest

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tests.peers.admin import PulsarAdmin  # noqa: E402
from tests.peers.apache import ApachePulsar, ApachePulsarError  # noqa: E402
from tests.peers.apache_cluster import ApacheCluster, ApacheClusterError  # noqa: E402
from tests.peers.broker import Broker  # noqa: E402
from tests.peers.faultproxy import FaultProxy  # noqa: E402
from tests.peers.fixture import started  # noqa: E402
from tests.peers.lite import PulsarLite  # noqa: E402
from tests.peers.pravega import PravegaError, PravegaStandalone  # noqa: E402
from tests.peers.tank import TankBroker  # noqa: E402

BROKER_KINDS = ("lite", "apache")


ProxyTarget = Union[Broker, str, tuple[str, int]]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "apache: needs Apache Pulsar standalone (JVM, ~10 s start)")
    config.addinivalue_line("markers", "lite: runs against pulsar-lite")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by the broker they will start, so ``-m apache`` / ``-m 'not apache'`` work."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        kind = callspec.params.get("broker") if callspec is not None else None
        if "apache_broker" in fixtures or "apache_admin" in fixtures or kind == "apache":
            item.add_marker(pytest.mark.apache)
        if "lite_broker" in fixtures or kind == "lite":
            item.add_marker(pytest.mark.lite)


@pytest.fixture(scope="session")
def tank_broker() -> Iterator[TankBroker]:
    """The TANK broker: the real one when ``STREAMWIRE_TANK_BIN`` is set, else the double."""
    with started(TankBroker) as broker:
        yield broker


@pytest.fixture
def fresh_tank() -> Iterator[TankBroker]:
    """A TANK broker of the same kind as ``tank_broker``, of this test's own (fresh data, free
    to kill and restart)."""
    with started(TankBroker) as broker:
        yield broker


@pytest.fixture(scope="session")
def pravega() -> Iterator[PravegaStandalone]:
    """Pravega 0.13.0 standalone from Maven Central (first use downloads ~200 MB into ~/.m2),
    its segment store published behind a fault proxy (``pravega.proxy``). A start failure
    fails the test with the server's log tail (never skips)."""
    with started(
        lambda: PravegaStandalone(proxy=True), "Pravega standalone", PravegaError
    ) as server:
        yield server


@pytest.fixture(scope="session")
def secure_pravega() -> Iterator[PravegaStandalone]:
    """A second Pravega standalone with TLS (the fixture's own CA, ``secure_pravega.pki``) and
    password auth (``tests.peers.pravega.ACCOUNTS``) on: started once, only when a test that
    needs it is collected."""
    with started(
        lambda: PravegaStandalone(tls=True, auth=True, cache=64 * 1024 * 1024),
        "secured Pravega standalone",
        PravegaError,
    ) as server:
        yield server


@pytest.fixture(scope="session")
def lite_broker() -> Iterator[PulsarLite]:
    with started(PulsarLite) as broker:
        yield broker


_apache_failure: list[str] = []


@pytest.fixture(scope="session")
def apache_broker() -> Iterator[ApachePulsar]:
    # _apache_failure: do not retry a 3-minute start for every test after a failure.
    with started(ApachePulsar, "Apache Pulsar", ApachePulsarError, _apache_failure) as broker:
        yield broker


@pytest.fixture(params=BROKER_KINDS)
def broker(request: pytest.FixtureRequest) -> Broker:
    """Any broker: the test runs once against pulsar-lite and once against Apache Pulsar."""
    kind: str = request.param
    result: Broker = request.getfixturevalue(f"{kind}_broker")
    return result


@pytest.fixture
def broker_kind(broker: Broker) -> str:
    return "apache" if isinstance(broker, ApachePulsar) else "lite"


@pytest.fixture(scope="session")
def apache_admin(apache_broker: ApachePulsar) -> PulsarAdmin:
    return PulsarAdmin(apache_broker.admin_url)


@pytest.fixture(scope="session")
def official_pulsar() -> ModuleType:
    import pulsar

    module: ModuleType = pulsar
    return module


@pytest.fixture
def unique_topic() -> str:
    return f"persistent://public/default/t-{uuid.uuid4().hex}"


def _target_address(target: ProxyTarget) -> tuple[str, int]:
    if isinstance(target, tuple):
        return target
    url = target if isinstance(target, str) else target.service_url
    parsed = urlparse(url)
    if parsed.hostname is None or parsed.port is None:
        raise ValueError(f"cannot proxy to {url!r}")
    return parsed.hostname, parsed.port


@pytest.fixture
def fault_proxy() -> Iterator[Callable[[ProxyTarget], FaultProxy]]:
    """Factory: ``proxy = fault_proxy(lite_broker)``; every proxy is closed at teardown."""
    proxies: list[FaultProxy] = []

    def make(target: ProxyTarget, **kwargs: Any) -> FaultProxy:
        host, port = _target_address(target)
        proxy = FaultProxy(host, port, **kwargs)
        proxies.append(proxy)
        return proxy

    try:
        yield make
    finally:
        for proxy in proxies:
            proxy.close()


# The multi-broker Apache Pulsar cluster with the proxy (tests/cluster, docs/cluster.md).
_cluster_failure: list[str] = []


@pytest.fixture(scope="session")
def apache_cluster() -> Iterator[ApacheCluster]:
    # _cluster_failure: one start attempt per run, not one per test.
    what = "the Apache Pulsar cluster"
    with started(ApacheCluster, what, ApacheClusterError, _cluster_failure) as cluster:
        timings = ", ".join(f"{k} {v:.1f}s" for k, v in cluster.timings.items())
        print(f"\ncluster started in {cluster.last_start_seconds:.1f}s ({timings})")
        yield cluster


# The same cluster with TLS ports and token authentication + authorization on brokers and
# proxy (tests/cluster/test_secured.py); started only when such a test is collected.
_secured_cluster_failure: list[str] = []


@pytest.fixture(scope="session")
def apache_cluster_secured() -> Iterator[ApacheCluster]:
    what = "the secured Apache Pulsar cluster"

    def make() -> ApacheCluster:
        return ApacheCluster(secured=True)

    with started(make, what, ApacheClusterError, _secured_cluster_failure) as cluster:
        timings = ", ".join(f"{k} {v:.1f}s" for k, v in cluster.timings.items())
        print(f"\nsecured cluster started in {cluster.last_start_seconds:.1f}s ({timings})")
        yield cluster
