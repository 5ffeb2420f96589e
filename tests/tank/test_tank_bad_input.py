"""Runs every row of ``tests/tank/bad_cases.py``: the typed exception, a message, and the same
client, producer and consumer still working afterwards (including after a forked child)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from streamwire import tank

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


LOCAL = [case for case in TANK_CASES if case.group != "fork"]


@pytest.mark.parametrize("case", LOCAL, ids=[c.id for c in LOCAL])
def test_tank_bad_input(tctx: TankCtx, case: TankCase) -> None:
    with pytest.raises(case.expected) as info:
        case.fn(tctx)
    assert type(info.value) is case.expected, (type(info.value), info.value)
    assert str(info.value), "the error message is empty"
    still_works(tctx)


def test_tank_use_after_fork(tctx: TankCtx) -> None:
    fork_cases = [case for case in TANK_CASES if case.group == "fork"]
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        lines: list[str] = []
        try:
            for case in fork_cases:
                try:
                    case.fn(tctx)
                    lines.append(f"{case.id}: no exception")
                except BaseException as e:
                    if type(e) is not case.expected:
                        lines.append(f"{case.id}: {type(e).__name__}: {e}")
            with tank.Client(tctx.url, operation_timeout=10) as child:
                child.create_producer(tctx.topic).send(b"from the child")
        except BaseException as e:
            lines.append(f"child failed: {type(e).__name__}: {e}")
        finally:
            os.write(write_fd, "\n".join(lines).encode())
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        problems = pipe.read().decode()
    os.waitpid(pid, 0)
    assert problems == "", problems
    still_works(tctx)
