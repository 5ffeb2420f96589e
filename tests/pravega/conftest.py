"""Fixtures of the Pravega tests: one client per session on the session's Pravega standalone,
and a fresh scope per test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from streamwire import pravega as pv

from tests.peers.pravega import PravegaStandalone


@pytest.fixture(scope="session")
def pv_client(pravega: PravegaStandalone) -> Iterator[pv.Client]:
    with pv.Client(pravega.controller_url, timeout=30.0) as client:
        yield client


@pytest.fixture
def scope(pv_client: pv.Client) -> str:
    name = "sw" + uuid.uuid4().hex[:10]
    assert pv_client.create_scope(name)
    return name
