"""Runs every row of ``tests/tank/bad_cases.py``: the typed exception, a message, and the same
client, producer and consumer still working afterwards (including after a forked child)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from streamwire import tank

from tests.bad_runner import check_forked, check_raises, ids, local
from tests.tank.bad_cases import TANK_CASES, TankCase, TankCtx


@pytest.fixture(scope="module")
def tctx(tank_broker: object) -> Iterator[TankCtx]:
    url = tank_broker.url  # type: ignore[attr-defined]
    topic = "bad" + uuid.uuid4().hex[:16]
    with tank.Client(url, operation_timeout=10) as client:
        client.create_topic(topic, 1)
        closed_client = tank.Client(url)
        closed_client.close()
        closed_producer = client.create_producer(topic)
        closed_producer.close()
        closed_consumer = client.create_consumer(topic)
        closed_consumer.close()
        tiny = tank.Client(url, memory_limit=4096)
        # A message that waits in its batch for an hour holds 3000 of the 4096 bytes.
        holder = tiny.create_producer(topic, batch_delay=3600, batch_max_messages=10)
        holder.send_async(b"y" * 3000)
        tail = client.partitions(topic)[0].high_water + 1
        yield TankCtx(
            url=url,
            topic=topic,
            client=client,
            producer=client.create_producer(topic),
            consumer=client.create_consumer(topic, start={0: tail}, max_wait=0.2),
            closed_client=closed_client,
            closed_producer=closed_producer,
            closed_consumer=closed_consumer,
            tiny_client=tiny,
        )
        tiny.close()


def still_works(c: TankCtx) -> None:
    payload = uuid.uuid4().bytes
    c.producer.send(payload)
    for _ in range(1000):
        if c.consumer.receive(timeout=10).value == payload:
            return
    raise AssertionError("the message sent after the bad call never arrived")


LOCAL = local(TANK_CASES)


@pytest.mark.parametrize("case", LOCAL, ids=ids(LOCAL))
def test_tank_bad_input(tctx: TankCtx, case: TankCase) -> None:
    check_raises(case, tctx, still_works)


def test_tank_use_after_fork(tctx: TankCtx) -> None:
    def child_works() -> None:
        with tank.Client(tctx.url, operation_timeout=10) as child:
            child.create_producer(tctx.topic).send(b"from the child")

    check_forked(TANK_CASES, tctx, child_works, still_works)
