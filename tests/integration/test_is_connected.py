"""``is_connected()`` on every producer, consumer and reader, blocking and asyncio.

True while open and registered on a live connection; False while the broker is away (the
fault proxy cuts every connection and refuses new ones for a while) and once closed; True
again after the engine reconnected by itself.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

import streamwire
from streamwire import aio


def _until(cond: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _outage(proxy: Any, handles: list[Any]) -> None:
    """Every handle connected, then not while the broker is unreachable, then again."""
    assert all(h.is_connected() for h in handles)
    proxy.refuse(4.0)
    assert proxy.cut_all() >= 1
    assert _until(lambda: not any(h.is_connected() for h in handles), 3.0), [
        h.is_connected() for h in handles
    ]
    assert _until(lambda: all(h.is_connected() for h in handles), 30.0), [
        h.is_connected() for h in handles
    ]


def test_is_connected_follows_the_broker(broker: Any, fault_proxy: Any, unique_topic: str) -> None:
    proxy = fault_proxy(broker)
    with streamwire.Client(proxy.url, operation_timeout=5, connection_timeout=1) as client:
        producer = client.create_producer(unique_topic)
        consumer = client.subscribe(unique_topic, "is-connected")
        reader = client.create_reader(unique_topic)
        _outage(proxy, [producer, consumer, reader])
        # Reconnected for real: a message sent now arrives.
        producer.send(b"after the outage")
        assert consumer.receive(timeout=10).data() == b"after the outage"
        for h in (producer, consumer, reader):
            h.close()
            assert not h.is_connected()


def test_aio_is_connected_follows_the_broker(
    broker: Any, fault_proxy: Any, unique_topic: str
) -> None:
    proxy = fault_proxy(broker)

    async def main() -> None:
        async with aio.Client(proxy.url, operation_timeout=5, connection_timeout=1) as client:
            producer = await client.create_producer(unique_topic)
            consumer = await client.subscribe(unique_topic, "is-connected")
            reader = await client.create_reader(unique_topic)
            # The outage is watched from a worker thread: the engine reconnects by itself.
            await asyncio.to_thread(_outage, proxy, [producer, consumer, reader])
            await producer.send(b"after the outage")
            assert (await consumer.receive(timeout=10)).data() == b"after the outage"
            for h in (producer, consumer, reader):
                await h.close()
                assert not h.is_connected()

    asyncio.run(main())
