"""Bulk receives hand out messages the cyclic garbage collector does not track: they hold no
Python reference, and tracking 10,000 of them per call cost the receive loop a third of its
time in collections."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import streamwire
from streamwire import aio


def test_receive_many_and_read_many_objects_are_untracked(
    lite_broker: Any, unique_topic: str
) -> None:
    with streamwire.Client(lite_broker.service_url) as c:
        consumer = c.subscribe(unique_topic, "s")
        reader = c.create_reader(unique_topic, start_message_id="earliest")
        with c.create_producer(unique_topic) as p:
            ids = p.send_many([b"m%d" % i for i in range(50)])
            assert not any(gc.is_tracked(i) for i in ids)
        got: list[Any] = []
        while len(got) < 50:
            got += consumer.receive_many(50 - len(got), timeout=10)
        assert [m.data() for m in got] == [b"m%d" % i for i in range(50)]
        assert not any(gc.is_tracked(m) for m in got)
        assert not any(gc.is_tracked(m.message_id) for m in got)
        # The list itself is an ordinary tracked list.
        assert gc.is_tracked(got)
        consumer.acknowledge(got)
        read: list[Any] = []
        while len(read) < 50:
            read += reader.read_many(50 - len(read), timeout=10)
        assert not any(gc.is_tracked(m) for m in read)
        # Still usable after a full collection (nothing was freed under them).
        gc.collect()
        assert [m.data() for m in read] == [b"m%d" % i for i in range(50)]


def test_aio_receive_many_objects_are_untracked(lite_broker: Any, unique_topic: str) -> None:
    async def main() -> None:
        async with aio.Client(lite_broker.service_url) as c:
            consumer = await c.subscribe(unique_topic, "s")
            producer = await c.create_producer(unique_topic)
            ids = await producer.send_many([b"a", b"b", b"c"])
            assert not any(gc.is_tracked(i) for i in ids)
            assert not gc.is_tracked(await producer.send(b"d"))
            got: list[Any] = []
            while len(got) < 4:
                got += await consumer.receive_many(4 - len(got), timeout=10)
            assert [m.data() for m in got] == [b"a", b"b", b"c", b"d"]
            assert not any(gc.is_tracked(m) for m in got)
            await consumer.acknowledge(got)

    asyncio.run(main())
