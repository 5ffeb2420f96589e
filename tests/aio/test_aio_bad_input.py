"""Runs every row of ``tests/aio/bad_cases.py``: the typed exception, then the same client,
producer and consumer still work."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from streamwire import aio

from tests.aio.bad_cases import AIO_CASES, AioCase, AioCtx
from tests.bad_runner import check_raises_async, ids
from tests.peers.lite import PulsarLite

# Each test runs on asyncio's loop and on uvloop (tests/aio/conftest.py).
pytestmark = pytest.mark.usefixtures("event_loop_kind")


async def _run(url: str, case: AioCase) -> None:
    topic = f"persistent://public/default/aio-bad-{uuid.uuid4().hex}"
    async with aio.Client(url, operation_timeout=10) as client:
        closed_client = aio.Client(url)
        await closed_client.close()
        closed_producer = await client.create_producer(topic)
        await closed_producer.close()
        closed_consumer = await client.subscribe(topic, "closed")
        await closed_consumer.close()
        closed_reader = await client.create_reader(topic)
        await closed_reader.close()
        ctx = AioCtx(
            url=url,
            topic=topic,
            client=client,
            producer=await client.create_producer(topic),
            consumer=await client.subscribe(topic, "s"),
            reader=await client.create_reader(topic, "earliest"),
            closed_client=closed_client,
            closed_producer=closed_producer,
            closed_consumer=closed_consumer,
            closed_reader=closed_reader,
        )
        await check_raises_async(case, ctx)
        # Still working: a message sent now is the next one received.
        mid = await ctx.producer.send(b"still works")
        msg = await ctx.consumer.receive(timeout=10)
        assert msg.message_id == mid and msg.data() == b"still works"
        first = await ctx.reader.read_next(timeout=10)
        assert first.data() == b"still works"


@pytest.mark.parametrize("case", AIO_CASES, ids=ids(AIO_CASES))
def test_aio_bad_input(lite_broker: PulsarLite, case: AioCase) -> None:
    asyncio.run(_run(lite_broker.service_url, case))
