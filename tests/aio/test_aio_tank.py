"""streamwire.aio.tank against the session's TANK broker (real or double), on both loops."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from streamwire import exceptions as exc
from streamwire import tank
from streamwire.aio import tank as atank

T = TypeVar("T")

pytestmark = pytest.mark.usefixtures("event_loop_kind")


@pytest.fixture(scope="module")
def tank_client(tank_broker: Any) -> Iterator[tank.Client]:
    """A blocking client for the topic set-up."""
    with tank.Client(tank_broker.url, operation_timeout=10.0) as client:
        yield client


def run(make: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await make()

    return asyncio.run(main())


def fresh(client: tank.Client, partitions: int = 1) -> str:
    name = "a" + uuid.uuid4().hex[:20]
    client.create_topic(name, partitions=partitions)
    return name


def url(broker: Any) -> str:
    return str(broker.url)


def test_round_trip_send_many_arrow_and_positions(
    tank_broker: Any, tank_client: tank.Client
) -> None:
    topic = fresh(tank_client, partitions=2)

    async def main() -> None:
        async with atank.Client(url(tank_broker)) as client:
            async with await client.create_producer(topic) as producer:
                assert await producer.send(b"one", key=b"k", timestamp=1234) is None
                assert await producer.send_many([b"a", b"b", b"c"], partition=1) == 3
                assert await producer.send_many([]) == 0
            consumer = await client.create_consumer(topic, start="earliest")
            first = await consumer.receive(timeout=10)
            rest = await consumer.receive_many(10, timeout=10)
            while len(rest) < 3:
                rest += await consumer.receive_many(10, timeout=10)
            got = [first, *rest]
            assert sorted(m.value for m in got) == [b"a", b"b", b"c", b"one"]
            one = next(m for m in got if m.value == b"one")
            assert (one.key, one.timestamp, one.topic) == (b"k", 1234, topic)
            last: dict[int, int] = {}
            for m in got:
                last[m.partition] = max(last.get(m.partition, 0), m.seq)
            assert consumer.positions() == {p: s + 1 for p, s in last.items()} | {
                p: consumer.positions()[p] for p in consumer.positions() if p not in last
            }
            # Arrow: a second consumer from the same positions reads the same rows.
            c2 = await client.create_consumer(topic, start={0: 0, 1: 0})
            rows = 0
            while rows < 4:
                batch = await c2.receive_arrow(100, timeout=10, columns=["value", "seq"])
                assert batch.schema.names == ["value", "seq"]
                rows += batch.num_rows
            assert rows == 4
            empty = await c2.receive_arrow(100, timeout=0.2)
            assert empty.num_rows == 0
            assert await c2.receive_many(10, timeout=0.2) == []
            with pytest.raises(exc.OperationTimeoutError):
                await c2.receive(timeout=0.2)
            await consumer.close()
            await c2.close()

    run(main)


def test_gathered_sends_keep_call_order(tank_broker: Any, tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    n = 2000

    async def main() -> None:
        async with atank.Client(url(tank_broker)) as client:
            producer = await client.create_producer(topic, max_in_flight=1)
            futs = [producer.send(f"m{i}") for i in range(n)]
            assert await asyncio.gather(*futs) == [None] * n
            await producer.flush()
            consumer = await client.create_consumer(topic)
            got: list[bytes] = []
            while len(got) < n:
                got += [m.value for m in await consumer.receive_many(1000, timeout=10)]
            assert got == [f"m{i}".encode() for i in range(n)]
            await producer.close()
            await producer.close()  # idempotent
            with pytest.raises(exc.AlreadyClosedError):
                producer.send(b"x")

    run(main)


def test_full_budget_waits_without_blocking_the_loop(
    tank_broker: Any, tank_client: tank.Client
) -> None:
    topic = fresh(tank_client)

    async def main() -> None:
        async with atank.Client(url(tank_broker), memory_limit=64 * 1024) as client:
            producer = await client.create_producer(topic)
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0)

            t = asyncio.create_task(ticker())
            futs = [producer.send(bytes([i % 256]) * 4096) for i in range(200)]
            await asyncio.gather(*futs)
            t.cancel()
            assert ticks > 0
            consumer = await client.create_consumer(topic)
            got: list[bytes] = []
            while len(got) < 200:
                got += [m.value for m in await consumer.receive_many(1000, timeout=10)]
            assert got == [bytes([i % 256]) * 4096 for i in range(200)]

        async with atank.Client(url(tank_broker), memory_limit=8 * 1024) as client:
            producer = await client.create_producer(topic, block_if_queue_full=False)
            with pytest.raises(exc.MessageTooBigError):
                producer.send(b"x" * 9000)

    run(main)


def test_cancelled_receive_loses_nothing(tank_broker: Any, tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    n = 300

    async def main() -> None:
        async with atank.Client(url(tank_broker)) as client:
            consumer = await client.create_consumer(topic, max_wait=0.05)
            producer = await client.create_producer(topic)
            got: list[bytes] = []

            async def send() -> None:
                for i in range(n):
                    await producer.send(f"c{i}")

            sender = asyncio.create_task(send())
            # Receives cancelled at every stage: waiting, resolved-but-not-resumed.
            while len(got) < n:
                task = asyncio.create_task(consumer.receive_many(7, timeout=5))
                await asyncio.sleep(0.0005 * (len(got) % 4))
                if task.cancel():
                    try:
                        got += [m.value for m in await task]
                    except asyncio.CancelledError:
                        pass
                else:
                    got += [m.value for m in task.result()]
            await sender
            assert got == [f"c{i}".encode() for i in range(n)]
            # Nothing more, and nothing repeated.
            assert await consumer.receive_many(10, timeout=0.3) == []

    run(main)


def test_async_for_and_concurrent_receivers(tank_broker: Any, tank_client: tank.Client) -> None:
    topic = fresh(tank_client, partitions=3)
    n = 90

    async def main() -> None:
        async with atank.Client(url(tank_broker)) as client:
            producer = await client.create_producer(topic)
            await producer.send_many([f"e{i}" for i in range(n)])
            consumer = await client.create_consumer(topic)
            seen: list[Any] = []

            async def worker() -> None:
                async for m in consumer:
                    seen.append(m)
                    if len(seen) >= n:
                        await consumer.close()

            await asyncio.wait_for(asyncio.gather(worker(), worker(), worker()), 20)
            assert sorted(m.value for m in seen) == sorted(f"e{i}".encode() for i in range(n))
            per_partition: dict[int, list[int]] = {}
            for m in seen:
                per_partition.setdefault(m.partition, []).append(m.seq)
            for seqs in per_partition.values():
                assert seqs == sorted(seqs)
            with pytest.raises(exc.AlreadyClosedError):
                await consumer.receive(timeout=1)

    run(main)


def test_bad_arguments_raise_at_the_call(tank_broker: Any, tank_client: tank.Client) -> None:
    topic = fresh(tank_client)

    async def main() -> None:
        async with atank.Client(url(tank_broker)) as client:
            with pytest.raises(exc.ConfigError):
                await client.create_producer(topic, max_in_flight=0)
            with pytest.raises(exc.InvalidArgumentError):
                await client.create_consumer("x" * 65)
            with pytest.raises(TypeError):
                await client.create_consumer(topic, start=3.5)  # type: ignore[arg-type]
            with pytest.raises(exc.TopicNotFoundError):
                await client.create_producer("nope" + uuid.uuid4().hex[:8])
            producer = await client.create_producer(topic)
            with pytest.raises(TypeError):
                producer.send(b"v", key=3)  # type: ignore[arg-type]
            with pytest.raises(exc.PartitionNotFoundError):
                await producer.send(b"v", partition=7)
            consumer = await client.create_consumer(topic)
            with pytest.raises(exc.InvalidArgumentError):
                await consumer.receive_many(0)
            with pytest.raises(ValueError, match="unknown column"):
                await consumer.receive_arrow(10, columns=["nope"])

    run(main)


async def outcome(call: Awaitable[Any]) -> Any:
    try:
        return ("value", await call)
    except exc.StreamwireError as e:
        return ("raised", type(e))


def outcome_of(call: Callable[[], Any]) -> Any:
    try:
        return ("value", call())
    except exc.StreamwireError as e:
        return ("raised", type(e))


def test_admin_calls_are_awaited_on_the_loop_without_threads(
    tank_broker: Any, tank_client: tank.Client
) -> None:
    name = "a" + uuid.uuid4().hex[:20]

    async def main() -> None:
        before = {t.ident for t in threading.enumerate()}
        async with atank.Client(url(tank_broker)) as client:
            await client.create_topic(name, partitions=2, config={"retention.segments.count": 4})
            assert [p.partition for p in await client.partitions(name)] == [0, 1]
            assert name in {t.name for t in await client.topics()}
            status = await client.status()
            assert status.keys() == tank_client.status().keys()
            assert status["version"] == tank_client.status()["version"]
            # Both faces end the same way (the double has no config file to re-read).
            assert await outcome(client.reload_config(name, 0)) == outcome_of(
                lambda: tank_client.reload_config(name, 0)
            )
            with pytest.raises(exc.TopicNotFoundError):
                await client.partitions("nope" + uuid.uuid4().hex[:8])
            with pytest.raises(exc.InvalidArgumentError):
                await client.create_topic(name, partitions=0)
            assert repr(client).startswith("<streamwire.aio.tank.Client ")
        # No worker thread was started for the calls (asyncio.to_thread would have).
        new = [t.name for t in threading.enumerate() if t.ident not in before]
        assert not [n for n in new if n.startswith("asyncio")], new
        with pytest.raises(exc.AlreadyClosedError):
            await client.topics()

    run(main)


def test_one_native_object_serves_both_faces(tank_broker: Any, tank_client: tank.Client) -> None:
    topic = fresh(tank_client)
    n = 50

    async def main() -> None:
        async with atank.Client(url(tank_broker)) as client:
            producer = await client.create_producer(topic)
            assert isinstance(producer._native, tank.Producer)
            assert await producer.send_many([f"b{i}" for i in range(n)]) == n
            consumer = await client.create_consumer(topic, max_wait=0.05)
            assert isinstance(consumer._native, tank.Consumer)
            # What a receive cancelled after the engine handed messages out leaves: messages
            # held (its wake-up, without the take) ...
            await consumer._native._await_messages(5)
            held_positions = consumer.positions()
            # ... which the blocking face of the same object takes first, in order.
            first = consumer._native.receive_many(n, timeout=5)
            assert 1 <= len(first) <= 5
            assert held_positions == {0: first[0].seq}  # held counted as not taken
            got = [m.value for m in first]
            while len(got) < n:
                got += [m.value for m in await consumer.receive_many(n, timeout=5)]
            assert got == [f"b{i}".encode() for i in range(n)]
            # A blocking flush on the object covers the awaited sends.
            fut = producer.send(b"last")
            producer._native.flush(timeout=10)
            assert producer.pending == 0
            assert await fut is None

    run(main)
