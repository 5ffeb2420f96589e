"""Fixtures of the multi-broker tests. The session cluster itself (``apache_cluster``: one
:class:`~tests.peers.apache_cluster.ApacheCluster` per run, started only when a collected test
asks for it, a start failure failing the tests with every process's log tail) is in
tests/conftest.py, so the docs and Spark tests can use it too."""

from __future__ import annotations

import pytest

from tests.cluster.helpers import all_running
from tests.peers.apache_cluster import ApacheCluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: needs the multi-broker Apache Pulsar cluster (five JVMs, ~20 s start)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "apache_cluster" in fixtures or "apache_cluster_secured" in fixtures:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture
def cluster(apache_cluster: ApacheCluster) -> ApacheCluster:
    """The session cluster with every broker and the proxy running."""
    return all_running(apache_cluster)
