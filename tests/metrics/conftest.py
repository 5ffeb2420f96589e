"""Fixtures of the metrics tests: a TANK client on the session's TANK broker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamwire import tank


@pytest.fixture(scope="session")
def tank_client(tank_broker: object) -> Iterator[tank.Client]:
    with tank.Client(tank_broker.url, operation_timeout=10.0) as client:  # type: ignore[attr-defined]
        yield client
