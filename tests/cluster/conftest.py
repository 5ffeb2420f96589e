"""Fixtures of the multi-broker tests: one :class:`~tests.peers.apache_cluster.ApacheCluster`
(ZooKeeper, a bookie, two brokers, the Pulsar proxy) per test run, started only when a collected
test asks for it. A start failure fails the tests with every process's log tail (never skips)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.peers.apache_cluster import ApacheCluster, ApacheClusterError

_failure: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: needs the multi-broker Apache Pulsar cluster (five JVMs, ~20 s start)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "apache_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def apache_cluster() -> Iterator[ApacheCluster]:
    if _failure:  # one start attempt per run, not one per test
        pytest.fail(_failure[0], pytrace=False)
    cluster = ApacheCluster()
    try:
        try:
            cluster.start()
        except ApacheClusterError as exc:
            _failure.append(f"the Apache Pulsar cluster did not start: {exc}")
            pytest.fail(_failure[0], pytrace=False)
        timings = ", ".join(f"{k} {v:.1f}s" for k, v in cluster.timings.items())
        print(f"\ncluster started in {cluster.last_start_seconds:.1f}s ({timings})")
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster(apache_cluster: ApacheCluster) -> ApacheCluster:
    """The session cluster with every broker and the proxy running (a test that killed one
    and failed before bringing it back does not spoil the next test)."""
    for b in apache_cluster.brokers:
        if not b.running:
            apache_cluster.restart_broker(b.index)
    if not apache_cluster.proxy.running:
        apache_cluster.restart_proxy()
    return apache_cluster
