"""Runs every row of ``tests/aio/bad_cases_tank.py``: the typed exception, then the same
producer and consumer still work."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from streamwire import tank
from streamwire.aio import tank as atank

from tests.aio.bad_cases_tank import AIO_TANK_CASES, AioTankCase, AioTankCtx
from tests.bad_runner import check_raises_async, ids

pytestmark = pytest.mark.usefixtures("event_loop_kind")


@pytest.fixture(scope="module")
def tank_client(tank_broker: Any) -> Iterator[tank.Client]:
    """A blocking client for the topic set-up."""
    with tank.Client(tank_broker.url, operation_timeout=10.0) as client:
        yield client


async def _run(url: str, topic: str, case: AioTankCase) -> None:
    async with atank.Client(url, operation_timeout=10) as client:
        closed_producer = await client.create_producer(topic)
        await closed_producer.close()
        closed_consumer = await client.create_consumer(topic, start="latest")
        await closed_consumer.close()
        ctx = AioTankCtx(
            url=url,
            topic=topic,
            client=client,
            producer=await client.create_producer(topic),
            consumer=await client.create_consumer(topic, start="earliest"),
            closed_producer=closed_producer,
            closed_consumer=closed_consumer,
        )
        await check_raises_async(case, ctx)
        # Still working: a message sent now is the next one received.
        await ctx.producer.send(b"still works")
        msg = await ctx.consumer.receive(timeout=10)
        assert msg.value == b"still works"


@pytest.mark.parametrize("case", AIO_TANK_CASES, ids=ids(AIO_TANK_CASES))
def test_aio_tank_bad_input(tank_broker: Any, tank_client: tank.Client, case: AioTankCase) -> None:
    topic = "b" + uuid.uuid4().hex[:20]
    tank_client.create_topic(topic)
    asyncio.run(_run(tank_broker.url, topic, case))
