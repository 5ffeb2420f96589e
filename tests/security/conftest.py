"""Fixtures for the security tests: one TLS + auth + authorization Apache Pulsar per session, and
RSA key pairs for the end-to-end encryption tests."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
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


@dataclass(frozen=True)
class KeyPair:
    public: Path
    private: Path


@pytest.fixture(scope="session")
def rsa_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, KeyPair]]:
    """Two RSA-2048 key pairs, ``a`` and ``b``, made with openssl."""
    d = tmp_path_factory.mktemp("e2e-keys")
    pairs = {}
    for name in ("a", "b"):
        private, public = d / f"{name}.pem", d / f"{name}_pub.pem"
        subprocess.run(
            ["openssl", "genrsa", "-out", str(private), "2048"], check=True, capture_output=True
        )
        subprocess.run(
            ["openssl", "rsa", "-in", str(private), "-pubout", "-out", str(public)],
            check=True,
            capture_output=True,
        )
        pairs[name] = KeyPair(public, private)
    yield pairs
