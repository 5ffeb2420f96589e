"""Fixtures for the security tests: one TLS + auth + authorization Apache Pulsar per session, and
RSA and EC key pairs for the end-to-end encryption tests."""

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


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="session")
def ec_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, KeyPair]]:
    """EC key pairs made with openssl: ``p521`` as Pulsar's documentation makes them
    (``openssl ecparam -name secp521r1 -genkey -param_enc explicit``: an ``EC PARAMETERS``
    block, then the key, the curve spelled out), ``p256`` with a named curve (SEC1, ``-noout``)
    and ``p384`` as PKCS#8 (``openssl genpkey``; our reader takes it, the Java one does not)."""
    d = tmp_path_factory.mktemp("e2e-ec-keys")
    pairs = {}
    for name, gen in (
        ("p521", ["ecparam", "-name", "secp521r1", "-genkey", "-param_enc", "explicit"]),
        ("p256", ["ecparam", "-name", "prime256v1", "-genkey", "-noout"]),
        ("p384", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
    ):
        private, public = d / f"{name}.pem", d / f"{name}_pub.pem"
        _openssl(*gen, "-out", str(private))
        _openssl(
            "pkey" if name == "p384" else "ec", "-in", str(private), "-pubout", "-out", str(public)
        )
        pairs[name] = KeyPair(public, private)
    yield pairs
