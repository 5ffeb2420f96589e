"""Fixtures for the security tests: one TLS + auth + authorization Apache Pulsar per session."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.peers.apache import ApachePulsarError
from tests.peers.fixture import started
from tests.peers.secure import SecurePulsar

_failure: list[str] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "apache_secure_broker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.apache)


@pytest.fixture(scope="session")
def apache_secure_broker() -> Iterator[SecurePulsar]:
    """Apache Pulsar with ``pulsar+ssl://`` (test CA), token/TLS/basic authentication and
    authorization on; a start failure fails the tests with the broker's log tail."""

    def make() -> SecurePulsar:
        return SecurePulsar(Path(tempfile.mkdtemp(prefix="streamwire-secure-")))

    with started(make, "secure Apache Pulsar", ApachePulsarError, _failure) as secure:
        yield secure
