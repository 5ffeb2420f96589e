"""``aio.Producer.send`` returns an ``AioSendFuture`` (not an ``asyncio.Future``): every asyncio
way of waiting on a future works with it, on asyncio's loop and on uvloop."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import os
import tracemalloc
import weakref
from typing import Any

import pytest
import streamwire
from streamwire import aio
from streamwire import exceptions as exc

from tests.peers.lite import PulsarLite

# Each test runs on asyncio's loop and on uvloop (tests/aio/conftest.py).
pytestmark = pytest.mark.usefixtures("event_loop_kind")

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


async def _pair(url: str, topic: str, **options: Any) -> tuple[aio.Client, aio.Producer, Any]:
    client = aio.Client(url)
    consumer = await client.subscribe(topic, "s")
    producer = await client.create_producer(topic, **options)
    return client, producer, consumer


async def _received(consumer: aio.Consumer, n: int) -> list[bytes]:
    """The first ``n`` messages' payloads, acknowledged; then checks that no message was
    stored twice. A broker may redeliver an entry it already dispatched (after a reconnect
    under load, Pulsar's at-least-once): such a redelivery carries an id seen before and is
    not a duplicate send. A send stored twice would carry a new id."""
    got: list[bytes] = []
    seen: set[streamwire.MessageId] = set()
    while len(got) < n:
        batch = await consumer.receive_many(n - len(got), timeout=10)
        assert batch, f"only {len(got)} of {n} messages arrived"
        for m in batch:
            # A redelivery of an entry already dispatched is counted once (pulsar-lite was
            # seen dispatching one twice, which made the count reach n early).
            if m.message_id not in seen:
                seen.add(m.message_id)
                got.append(m.data())
        await consumer.acknowledge(batch)
    extra = await consumer.receive_many(10, timeout=0.2)
    assert [m for m in extra if m.message_id not in seen] == []
    return got


def test_is_an_asyncio_future_but_not_an_asyncio_Future(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    async def main() -> None:
        client, producer, consumer = await _pair(lite_broker.service_url, unique_topic)
        loop = asyncio.get_running_loop()
        fut = producer.send(b"a")
        assert isinstance(fut, aio.AioSendFuture)
        assert not isinstance(fut, asyncio.Future)
        assert asyncio.isfuture(fut)
        assert asyncio.ensure_future(fut) is fut  # no Task wraps it
        assert fut.get_loop() is loop
        assert not fut.done() and not fut.cancelled()
        with pytest.raises(asyncio.InvalidStateError):
            fut.result()
        with pytest.raises(asyncio.InvalidStateError):
            fut.exception()
        assert "pending" in repr(fut)
        mid = await fut
        assert isinstance(mid, streamwire.MessageId)
        assert fut.done() and fut.result() == mid and fut.exception() is None
        assert "finished" in repr(fut)
        # Awaiting a finished send returns at once: the first step already ends the await.
        it = fut.__await__()
        with pytest.raises(StopIteration) as stop:
            next(it)
        assert stop.value.value == mid
        assert (await fut) == mid
        assert await _received(consumer, 1) == [b"a"]
        await client.close()

    asyncio.run(main())


def test_await_in_tasks_gather_wait_as_completed_shield(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    async def main() -> None:
        client, producer, consumer = await _pair(lite_broker.service_url, unique_topic)

        async def one(i: int) -> streamwire.MessageId:
            mid: streamwire.MessageId = await producer.send(b"%d" % i)
            return mid

        ids = [await asyncio.create_task(one(i)) for i in range(3)]  # 0..2
        ids += await asyncio.gather(*(producer.send(b"%d" % i) for i in range(3, 103)))
        ids += await asyncio.gather(*(one(i) for i in range(103, 110)))
        ids.append(await asyncio.wait_for(producer.send(b"110"), 10))
        done, pending = await asyncio.wait({producer.send(b"%d" % i) for i in range(111, 121)})
        assert not pending and len(done) == 10
        ids += sorted(f.result() for f in done)
        futs = [producer.send(b"%d" % i) for i in range(121, 131)]
        ids += sorted([await f for f in asyncio.as_completed(futs)])
        ids.append(await asyncio.shield(producer.send(b"131")))
        # The Python Task (not the C one) takes it too.
        py_task = asyncio.tasks._PyTask(one(132))  # type: ignore[attr-defined]
        ids.append(await py_task)
        assert ids == sorted(ids) and len(set(ids)) == 133
        got = await _received(consumer, 133)
        assert got == [b"%d" % i for i in range(133)]
        await client.close()

    asyncio.run(main())


def test_awaited_one_by_one_in_order(lite_broker: PulsarLite, unique_topic: str) -> None:
    """Sends made first and awaited after in order: most are finished by then."""

    async def main() -> None:
        client, producer, consumer = await _pair(lite_broker.service_url, unique_topic)
        futs = [producer.send(b"%d" % i) for i in range(2000)]
        ids = [await f for f in futs]
        assert ids == sorted(ids) and len(set(ids)) == 2000
        assert await _received(consumer, 2000) == [b"%d" % i for i in range(2000)]
        await client.close()

    asyncio.run(main())


def test_cancel_stops_the_wait_but_the_message_is_sent(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    async def main() -> None:
        client, producer, consumer = await _pair(lite_broker.service_url, unique_topic)
        seen: list[Any] = []
        fut = producer.send(b"cancelled")
        fut.add_done_callback(seen.append)
        assert fut.cancel("stop")
        assert fut.cancelled() and fut.done() and not fut.cancel()
        assert "cancelled" in repr(fut)
        with pytest.raises(asyncio.CancelledError, match="stop"):
            fut.result()
        with pytest.raises(asyncio.CancelledError):
            fut.exception()
        with pytest.raises(asyncio.CancelledError):
            await fut
        await asyncio.sleep(0)
        assert seen == [fut]  # callbacks ran once, with the future
        # wait_for with no time left cancels the wait: TimeoutError, the message is sent.
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(producer.send(b"timed out"), 0)

        # A Task cancelled while awaiting a send: CancelledError; the message is sent.
        async def waits() -> Any:
            return await producer.send(b"task cancelled")

        task = asyncio.ensure_future(waits())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # gather cancelled: its children's waits are cancelled, the messages sent.
        outer = asyncio.gather(producer.send(b"g1"), producer.send(b"g2"))
        outer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await outer
        mid = await producer.send(b"after")
        # The outcome that arrives after a cancel changes nothing.
        await asyncio.sleep(0.05)
        assert fut.cancelled()
        got = await _received(consumer, 6)
        assert got == [b"cancelled", b"timed out", b"task cancelled", b"g1", b"g2", b"after"]
        assert mid is not None
        await client.close()

    asyncio.run(main())


def test_callbacks_context_and_removal(lite_broker: PulsarLite, unique_topic: str) -> None:
    async def main() -> None:
        client, producer, consumer = await _pair(lite_broker.service_url, unique_topic)
        calls: list[tuple[str, Any]] = []

        def cb(f: Any) -> None:
            calls.append(("cb", VAR.get()))

        def removed(f: Any) -> None:
            calls.append(("removed", None))

        fut = producer.send(b"x")
        VAR.set("at add")
        fut.add_done_callback(cb)
        fut.add_done_callback(removed)
        fut.add_done_callback(removed)
        ctx = contextvars.copy_context()
        ctx.run(VAR.set, "given")
        fut.add_done_callback(cb, context=ctx)
        VAR.set("later")
        # The cycle collector sees what a pending future holds (callbacks, loop).
        assert cb in gc.get_referents(fut) and removed in gc.get_referents(fut)
        assert asyncio.get_running_loop() in gc.get_referents(fut)
        assert fut.remove_done_callback(removed) == 2
        assert fut.remove_done_callback(removed) == 0
        mid = await fut
        await asyncio.sleep(0)
        assert calls == [("cb", "at add"), ("cb", "given")]
        # Added after it finished: scheduled at once, not run inline.
        fut.add_done_callback(cb)
        assert len(calls) == 2
        await asyncio.sleep(0)
        assert calls[2] == ("cb", "later")
        assert fut.result() == mid
        await _received(consumer, 1)
        await client.close()

    asyncio.run(main())


def test_a_raising_callback_is_reported_and_the_batch_still_completes(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    """The sends' callbacks run from the loop callback that stores a batch of receipts (not
    one loop handle each): a callback that raises goes to the loop's exception handler with
    the future, as asyncio's handles do, and every other callback of the batch still runs."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reported: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
        client, producer, consumer = await _pair(lite_broker.service_url, unique_topic)
        ran: list[int] = []

        def boom(f: Any) -> None:
            raise ValueError("callback failed")

        futs = [producer.send(b"%d" % i) for i in range(200)]
        futs[0].add_done_callback(boom)
        for i, f in enumerate(futs):
            f.add_done_callback(lambda _f, i=i: ran.append(i))
        ids = await asyncio.gather(*futs)
        await asyncio.sleep(0)
        assert sorted(ran) == list(range(200))
        assert len(reported) == 1
        assert isinstance(reported[0]["exception"], ValueError)
        assert reported[0]["future"] is futs[0]
        assert "Exception in callback" in reported[0]["message"]
        assert len(set(ids)) == 200
        await _received(consumer, 200)
        await client.close()

    asyncio.run(main())


def test_failed_sends_raise_and_unawaited_failures_are_reported(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    """Sends still waiting for room when the client closes fail with a typed error; a failed
    send nobody looks at is reported to the loop's exception handler, not dropped silently."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reported: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
        client, producer, _consumer = await _pair(
            lite_broker.service_url, unique_topic, max_pending_messages=5, batching=False
        )
        futs = [producer.send(b"%d" % i) for i in range(500)]
        ignored = [producer.send(b"ignored %d" % i) for i in range(500)]
        await client.close()
        outcomes = await asyncio.gather(*futs, return_exceptions=True)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert failed, "closing the client failed no waiting send"
        assert all(isinstance(o, exc.StreamwireError) for o in failed)
        for f in futs:
            if f.exception() is not None:
                with pytest.raises(exc.StreamwireError):
                    await f
        with pytest.raises(exc.StreamwireError):
            await asyncio.gather(*futs)
        # Let the ignored ones finish, then drop them unseen.
        while not all(f.done() for f in ignored):
            await asyncio.sleep(0.01)
        unseen = sum(1 for f in ignored if _failed_unseen(f))
        del ignored
        gc.collect()
        assert unseen > 0
        assert len(reported) == unseen
        assert all(isinstance(r["exception"], exc.StreamwireError) for r in reported)
        assert "never awaited" in reported[0]["message"]

    asyncio.run(main())


def _failed_unseen(f: Any) -> bool:
    # done() and cancelled() do not mark the exception as seen; repr tells the state.
    return "exception" in repr(f)


def test_send_after_fork_raises_forked_process_error(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    """In a forked child the parent's producer refuses to send; the parent's still works."""

    async def make() -> tuple[aio.Client, aio.Producer]:
        client = aio.Client(lite_broker.service_url)
        return client, await client.create_producer(unique_topic)

    client, producer = asyncio.run(make())
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        out = "no exception"

        async def child() -> None:
            producer.send(b"from the child")

        try:
            asyncio.run(child())
        except BaseException as e:
            out = type(e).__name__
        finally:
            os.write(write_fd, out.encode())
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        got = pipe.read().decode()
    os.waitpid(pid, 0)
    assert got == "ForkedProcessError"

    async def parent() -> None:
        assert isinstance(await producer.send(b"parent"), streamwire.MessageId)
        await client.close()

    asyncio.run(parent())


def test_wait_for_times_out_on_a_send_held_in_the_batch(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    """A send held by a long batching delay: ``wait_for`` times out (the wait is cancelled, the
    future is cancelled), and the message is still sent at the next flush."""

    async def main() -> None:
        client, producer, consumer = await _pair(
            lite_broker.service_url, unique_topic, batching_max_delay=30.0
        )
        fut = producer.send(b"held")
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(fut, 0.05)
        assert fut.cancelled()
        done, pending = await asyncio.wait([producer.send(b"held too")], timeout=0.05)
        assert not done and len(pending) == 1
        await producer.flush()
        (second,) = pending
        assert isinstance(await second, streamwire.MessageId)
        assert await _received(consumer, 2) == [b"held", b"held too"]
        await client.close()

    asyncio.run(main())


class _Holder:
    """A plain object in a reference cycle with a send's future (weakref-able)."""

    fut: Any
    err: BaseException | None = None

    def done(self, f: Any) -> None:
        pass


def test_the_collector_tracks_a_future_only_while_it_can_be_in_a_cycle(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    """A send's future is tracked by the cycle collector only while it holds a callback, a
    failed send's exception or a cancel message; cycles through it are still collected."""

    async def main() -> None:
        client, producer, consumer = await _pair(lite_broker.service_url, unique_topic)
        fut = producer.send(b"0")
        assert not gc.is_tracked(fut)  # only its loop in it
        fut.add_done_callback(lambda f: None)
        assert gc.is_tracked(fut)
        await fut
        assert not gc.is_tracked(fut)  # the callback is gone, the MessageId holds nothing
        cancelled = producer.send(b"1")
        cancelled.cancel("bye")
        assert gc.is_tracked(cancelled)  # the message could lead back
        plain = producer.send(b"2")
        plain.cancel()
        assert not gc.is_tracked(plain)

        # A callback cycle (future -> bound method -> holder -> future) is broken when the
        # receipt comes in: refcounting alone frees the holder, no collection needed.
        h = _Holder()
        h.fut = producer.send(b"3")
        h.fut.add_done_callback(h.done)
        ref = weakref.ref(h)
        del h
        await producer.flush()
        await asyncio.sleep(0)
        assert ref() is None

        await _received(consumer, 4)
        await client.close()

    asyncio.run(main())


def test_a_failed_send_in_a_cycle_with_its_traceback_is_collected(
    lite_broker: PulsarLite, unique_topic: str
) -> None:
    """A failed send's exception keeps the awaiting frame (its traceback), which keeps the
    future: the collector must see the future's reference to the exception to free it."""

    async def fail_into(h: _Holder) -> None:
        fut = h.fut
        try:
            await fut
        except exc.StreamwireError as e:
            h.err = e  # h -> e -> traceback -> this frame -> fut -> e, and the frame -> h

    async def main() -> None:
        client, producer, _consumer = await _pair(
            lite_broker.service_url, unique_topic, max_pending_messages=5, batching=False
        )
        holders = [_Holder() for _ in range(200)]
        for h in holders:
            h.fut = producer.send(b"x")
        await client.close()
        for h in holders:
            if not h.fut.done():
                await asyncio.wait([h.fut])
        failed = [h for h in holders if h.fut.exception() is not None]
        assert failed, "closing the client failed no waiting send"
        refs = []
        for h in failed:
            await fail_into(h)
            assert h.err is not None and gc.is_tracked(h.fut)
            refs.append(weakref.ref(h))
        del holders, failed, h
        gc.collect()
        assert [r for r in refs if r() is not None] == []

    asyncio.run(main())


def test_100k_sends_leave_nothing_behind(lite_broker: PulsarLite, unique_topic: str) -> None:
    """Untracked futures and ids are freed: memory traced after 100k sends, awaited in order
    and gathered, is where it was after the first window (a leaked future and its
    ``MessageId`` would be over 200 bytes each: 20 MB)."""

    async def main() -> None:
        client = aio.Client(lite_broker.service_url)
        producer = await client.create_producer(unique_topic)

        async def window(k: int, gathered: bool) -> None:
            futs = [producer.send(b"x") for _ in range(k)]
            if gathered:
                await asyncio.gather(*futs)
            else:
                for f in futs:
                    await f

        await window(5000, False)
        await window(5000, True)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(20):
                await window(5000, gathered=i % 2 == 1)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert grown < 2_000_000, f"{grown} bytes more after 100k sends"
        await client.close()

    asyncio.run(main())
