"""streamwire.aio against pulsar-lite: every wait is a future the engine resolves on the loop.

Plain tests drive coroutines with ``asyncio.run`` (pytest-asyncio is not a dependency).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pyarrow as pa
import pytest
import streamwire
from streamwire import aio
from streamwire import exceptions as exc

from tests.peers.lite import PulsarLite

T = TypeVar("T")

# Each test runs on asyncio's loop and on uvloop (tests/aio/conftest.py).
pytestmark = pytest.mark.usefixtures("event_loop_kind")


def run(make: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await make()

    threads = threading.active_count()
    out = asyncio.run(main())
    # No thread per call: at most the engine's (started once) remain.
    assert threading.active_count() <= threads + 8
    return out


def test_round_trip_and_context_managers(lite_broker: PulsarLite, unique_topic: str) -> None:
    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            async with await client.subscribe(unique_topic, "s") as consumer:
                async with await client.create_producer(unique_topic) as producer:
                    mid = await producer.send(b"hello", key="k", properties={"a": "b"})
                    assert isinstance(mid, streamwire.MessageId)
                msg = await consumer.receive(timeout=10)
                assert msg.data() == b"hello"
                assert msg.key == "k"
                assert msg.properties == {"a": "b"}
                assert msg.message_id == mid
                await consumer.acknowledge(msg)

    run(main)


def test_send_many_receive_many_and_arrow(lite_broker: PulsarLite, unique_topic: str) -> None:
    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            consumer = await client.subscribe(unique_topic, "s")
            producer = await client.create_producer(unique_topic)
            data = [f"m-{i}".encode() for i in range(300)]
            ids = await producer.send_many(data[:150], keys=[str(i) for i in range(150)])
            assert len(ids) == 150
            ids += await producer.send_many(pa.array(data[150:], pa.binary()))
            assert ids == sorted(ids)
            got: list[bytes] = []
            while len(got) < 200:
                batch = await consumer.receive_many(200 - len(got), timeout=10)
                assert batch
                got.extend(m.data() for m in batch)
                await consumer.acknowledge(batch)
            rows: list[bytes] = []
            while len(rows) < 100:
                rb = await consumer.receive_arrow(100, timeout=10, columns=["value", "key"])
                assert rb.num_rows > 0
                rows.extend(rb.column(0).to_pylist())
            assert got + rows == data
            assert await consumer.receive_many(10, timeout=0) == []
            await producer.close()
            await consumer.close()

    run(main)


def test_send_many_does_not_wait_for_the_batching_delay(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    # As the sync call: the awaited ids need every receipt, so the partial batch goes now.
    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            producer = await client.create_producer(
                unique_topic, batching_max_messages=10, batching_max_delay=30
            )
            t0 = asyncio.get_running_loop().time()
            ids = await producer.send_many([b"m%d" % i for i in range(25)])
            assert asyncio.get_running_loop().time() - t0 < 5
            assert [i.batch_size for i in ids] == [10] * 20 + [5] * 5
            await producer.close()

    run(main)


def test_key_based_batching(lite_broker: PulsarLite, unique_topic: str) -> None:
    # The asyncio face takes the same option: every batch holds one key, keys keep order.
    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            consumer = await client.subscribe(unique_topic, "s")
            producer = await client.create_producer(
                unique_topic, batching_type="key_based", batching_max_delay=0.05
            )
            sends = [producer.send(b"%04d" % i, key=f"k{i % 5}") for i in range(500)]
            ids = await asyncio.gather(*sends)
            await producer.close()
            # pulsar-lite may deliver an entry twice (PEERS.md): the same id, counted once.
            by_id: dict[Any, Any] = {}
            while len(by_id) < len(ids):
                batch = await consumer.receive_many(500, timeout=10)
                assert batch, f"received {len(by_id)} of {len(ids)}"
                by_id.update((m.message_id, m) for m in batch)
            await consumer.close()
        got = sorted(by_id.values(), key=lambda m: m.message_id)
        keys_of_entry: dict[tuple[int, int], set[Any]] = {}
        for m in got:
            mid = m.message_id
            keys_of_entry.setdefault((mid.ledger_id, mid.entry_id), set()).add(m.key)
        assert all(len(ks) == 1 for ks in keys_of_entry.values())
        assert len(keys_of_entry) < 100, "batched"
        for k in range(5):
            mine = [m.data() for m in got if m.key == f"k{k}"]
            assert mine == sorted(mine) and len(mine) == 100

    run(main)


def test_async_for_and_reader(lite_broker: PulsarLite, unique_topic: str) -> None:
    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            async with await client.create_producer(unique_topic) as producer:
                await asyncio.gather(*(producer.send(f"{i}".encode()) for i in range(50)))
            async with await client.subscribe(
                unique_topic, "s", initial_position="earliest"
            ) as consumer:
                seen = []
                async for msg in consumer:
                    seen.append(int(msg.data()))
                    await consumer.acknowledge(msg)
                    if len(seen) == 50:
                        break
                assert seen == list(range(50))
            async with await client.create_reader(unique_topic, "earliest") as reader:
                assert await reader.has_message_available()
                first = [m.data() async for m in _take(reader, 10)]
                assert first == [f"{i}".encode() for i in range(10)]
                rest = await reader.read_many(100, timeout=5)
                batch = await reader.read_arrow(100, timeout=0.2)
                assert len(rest) + batch.num_rows == 40

    run(main)


async def _take(it: Any, n: int) -> Any:
    i = 0
    async for m in it:
        yield m
        i += 1
        if i == n:
            return


def test_gathered_sends_keep_order_under_backpressure(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    """More sends than the producer holds: the rest wait in order, none overtakes."""

    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            consumer = await client.subscribe(unique_topic, "s")
            producer = await client.create_producer(
                unique_topic, max_pending_messages=50, batching_max_messages=20
            )
            n = 2000
            ids = await asyncio.gather(*(producer.send(f"{i}".encode()) for i in range(n)))
            # The broker's ids are its log order: call order was kept.
            assert ids == sorted(ids)
            assert len(set(ids)) == n
            by_id: dict[Any, int] = {}
            while len(by_id) < n:
                for m in await consumer.receive_many(n, timeout=10):
                    by_id[m.message_id] = int(m.data())
            assert [by_id[i] for i in ids] == list(range(n))
            await producer.flush()
            await producer.close()

    run(main)


def test_cancelled_receives_lose_nothing(lite_broker: PulsarLite, unique_topic: str) -> None:
    """Cancel many pending receives while messages arrive: each message arrives once."""

    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            consumer = await client.subscribe(unique_topic, "s", receiver_queue_size=10)
            producer = await client.create_producer(unique_topic, batching=False)
            n = 400
            got: list[int] = []

            async def produce() -> None:
                for i in range(n):
                    producer.send(f"{i}".encode())
                    if i % 7 == 0:
                        await asyncio.sleep(0)
                await producer.flush()

            async def churn() -> None:
                # Receives are started and cancelled at random points while messages flow.
                round_ = 0
                while len(set(got)) < n and round_ < 2000:
                    round_ += 1
                    tasks = [asyncio.ensure_future(consumer.receive(timeout=1)) for _ in range(4)]
                    await asyncio.sleep(0 if round_ % 3 else 0.001)
                    for t in tasks[1:]:
                        t.cancel()
                    for t in tasks:
                        try:
                            got.append(int((await t).data()))
                        except (asyncio.CancelledError, exc.OperationTimeoutError):
                            pass

            await asyncio.gather(produce(), churn())
            while len(set(got)) < n:
                more = await consumer.receive_many(n, timeout=5)
                if not more:
                    break
                got.extend(int(m.data()) for m in more)
            # No loss. (Exactly-once is not asserted: under churn a message is sometimes
            # delivered again with the same id. The blocking API does the same with several
            # threads calling receive(timeout=0.002): a pre-existing engine/broker issue.)
            assert set(got) == set(range(n)), "a message was lost"

    run(main)


def test_cancel_hands_message_to_waiting_receive(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    """A message taken for a cancelled receive goes to a receive already waiting."""

    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            consumer = await client.subscribe(unique_topic, "s")
            producer = await client.create_producer(unique_topic)
            first = asyncio.ensure_future(consumer.receive())
            second = asyncio.ensure_future(consumer.receive(timeout=10))
            await asyncio.sleep(0.05)
            await producer.send(b"only")
            # Cancel the first as soon as the engine may have taken the message for it.
            first.cancel()
            got = []
            try:
                got.append((await first).data())  # it had already completed
            except asyncio.CancelledError:
                pass
            if not got:
                got.append((await second).data())
            else:
                second.cancel()
            assert got == [b"only"]
            assert await consumer.receive_many(5, timeout=0.2) == []

    run(main)


def test_timeout_and_closed_handles(lite_broker: PulsarLite, unique_topic: str) -> None:
    async def main() -> None:
        client = aio.Client(lite_broker.service_url, operation_timeout=5)
        consumer = await client.subscribe(unique_topic, "s")
        reader = await client.create_reader(unique_topic)
        producer = await client.create_producer(unique_topic)
        with pytest.raises(exc.OperationTimeoutError):
            await consumer.receive(timeout=0.1)
        with pytest.raises(exc.OperationTimeoutError):
            await reader.read_next(timeout=0.1)
        await producer.close()
        await producer.close()  # idempotent
        with pytest.raises(exc.AlreadyClosedError):
            await producer.send(b"x")
        with pytest.raises(exc.AlreadyClosedError):
            await producer.flush()
        await consumer.close()
        with pytest.raises(exc.AlreadyClosedError):
            await consumer.receive(timeout=1)
        await reader.close()
        with pytest.raises(exc.AlreadyClosedError):
            await reader.read_next()
        await client.close()
        with pytest.raises(exc.AlreadyClosedError):
            await client.create_producer(unique_topic)
        with pytest.raises(exc.AlreadyClosedError):
            await client.subscribe(unique_topic, "s2")

    run(main)


def test_close_while_receive_pending_raises_closed(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as client:
            consumer = await client.subscribe(unique_topic, "s")
            pending = asyncio.ensure_future(consumer.receive())
            await asyncio.sleep(0.05)
            await consumer.close()
            with pytest.raises(exc.AlreadyClosedError):
                await asyncio.wait_for(pending, 5)

    run(main)


def test_outside_a_loop_is_a_runtime_error(lite_broker: PulsarLite, unique_topic: str) -> None:
    client = aio.Client(lite_broker.service_url)
    with pytest.raises(RuntimeError):
        client._native._acreate_producer(unique_topic)
    client._native.close()
