"""One gateway per broker kind for the session, in front of pulsar-lite or Apache Pulsar."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.peers.broker import Broker
from tests.peers.gateway import Gateway

_gateways: dict[str, Gateway] = {}


@pytest.fixture(scope="session")
def gateways() -> Iterator[dict[str, Gateway]]:
    try:
        yield _gateways
    finally:
        for g in _gateways.values():
            g.close()


@pytest.fixture
def gateway(broker: Broker, gateways: dict[str, Gateway]) -> Gateway:
    """The gateway in front of ``broker`` (started once per broker, with small limits so
    the limit tests are cheap)."""
    url = broker.service_url
    if url not in gateways:
        gateways[url] = Gateway(
            url, "--max-body-bytes", "1048576", "--max-messages", "5000"
        ).start()
    return gateways[url]
