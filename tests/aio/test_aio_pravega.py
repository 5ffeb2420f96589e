"""streamwire.aio.pravega against Pravega standalone (session-scoped, slow first start), on
both loops. Kept to a few tests."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from streamwire import exceptions as exc
from streamwire.aio import pravega as apv

from tests.peers.pravega import PravegaStandalone

T = TypeVar("T")

pytestmark = pytest.mark.usefixtures("event_loop_kind")


def run(make: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await make()

    return asyncio.run(main())


def test_admin_write_read_arrow_and_position(pravega: PravegaStandalone) -> None:
    scope = "aio" + uuid.uuid4().hex[:10]

    async def main() -> None:
        async with apv.Client(pravega.controller_url, timeout=30.0) as client:
            assert await client.create_scope(scope)
            assert await client.scope_exists(scope)
            assert await client.create_stream(scope, "s", segments=2)
            assert await client.streams(scope) == ["s"]
            async with await client.create_writer(scope, "s") as writer:
                assert await writer.write(b"one", routing_key="k") is None
                futs = [writer.write(f"e{i}", routing_key="k") for i in range(200)]
                assert await asyncio.gather(*futs) == [None] * 200
                assert await writer.write_many([b"a", b"b"], routing_keys="k") == 2
                assert await writer.write_many([]) == 0
                await writer.flush()
            with pytest.raises(exc.AlreadyClosedError):
                writer.write(b"late")
            reader = await client.create_reader(scope, "s", start="head")
            first = await reader.read(timeout=10)
            assert first is not None and first.value == b"one"
            got = [e.value for e in await reader.read_many(50, timeout=10)]
            cut = await reader.position()
            # Same routing key: one segment, call order kept.
            resumed = await client.create_reader(scope, "s", start=cut)
            rest: list[bytes] = []
            while len(got) + len(rest) < 202:
                batch = await resumed.read_arrow(1000, timeout=10, columns=["value"])
                assert batch.schema.names == ["value"]
                rest += batch.column(0).to_pylist()
            assert got + rest == [f"e{i}".encode() for i in range(200)] + [b"a", b"b"]
            assert await resumed.read(timeout=0.2) is None
            assert await resumed.read_many(10, timeout=0.2) == []
            await reader.close()
            await resumed.close()

    run(main)


def test_cancelled_read_loses_nothing_and_async_for_ends(pravega: PravegaStandalone) -> None:
    scope = "aio" + uuid.uuid4().hex[:10]
    n = 120

    async def main() -> None:
        async with apv.Client(pravega.controller_url, timeout=30.0) as client:
            await client.create_scope(scope)
            await client.create_stream(scope, "s")
            writer = await client.create_writer(scope, "s")
            reader = await client.create_reader(scope, "s")

            async def write() -> None:
                for i in range(n):
                    await writer.write(f"c{i}")

            sender = asyncio.create_task(write())
            got: list[bytes] = []
            while len(got) < n:
                task = asyncio.create_task(reader.read_many(5, timeout=5))
                await asyncio.sleep(0.001 * (len(got) % 3))
                if task.cancel():
                    try:
                        got += [e.value for e in await task]
                    except asyncio.CancelledError:
                        pass
                else:
                    got += [e.value for e in task.result()]
            await sender
            assert got == [f"c{i}".encode() for i in range(n)]
            # A persisted position counts nothing twice; after sealing, async for ends.
            await writer.write(b"last")
            await writer.close()
            await client.seal_stream(scope, "s")
            tail = [e.value async for e in reader]
            assert tail == [b"last"]
            assert reader.at_end

    run(main)


def test_position_counts_events_of_a_cancelled_read(pravega: PravegaStandalone) -> None:
    scope = "aio" + uuid.uuid4().hex[:10]

    async def main() -> None:
        async with apv.Client(pravega.controller_url, timeout=30.0) as client:
            await client.create_scope(scope)
            await client.create_stream(scope, "s")
            writer = await client.create_writer(scope, "s")
            reader = await client.create_reader(scope, "s")
            before = await reader.position()
            task = asyncio.create_task(reader.read_many(10, timeout=10))
            await asyncio.sleep(0.2)  # the engine read is waiting
            assert task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await writer.write(b"kept")
            # The cancelled read ran on and took the event: it is held, not handed out.
            after = await reader.position()
            assert after == before
            again = await client.create_reader(scope, "s", start=after)
            first = await again.read(timeout=10)
            assert first is not None and first.value == b"kept"
            got = await reader.read(timeout=10)
            assert got is not None and got.value == b"kept"
            assert (await reader.position()) != before

    run(main)


def test_bad_arguments(pravega: PravegaStandalone) -> None:
    async def main() -> None:
        async with apv.Client(pravega.controller_url, timeout=30.0) as client:
            with pytest.raises(exc.InvalidArgumentError):
                await client.create_writer("bad scope", "s")
            with pytest.raises(exc.InvalidArgumentError):
                await client.create_reader("sc", "s", read_ahead=0)
            with pytest.raises(TypeError):
                await client.create_reader("sc", "s", start=5)  # type: ignore[arg-type]

    run(main)


def writer_batches(topic: str) -> int:
    """The append blocks acknowledged to the live writer of ``topic``."""
    from streamwire import metrics

    rows = [m for m in metrics.snapshot() if m["kind"] == "writer" and m["topic"] == topic]
    assert len(rows) == 1, rows
    return int(rows[0]["batches"])


def test_awaited_write_many_sends_its_last_block_at_once(pravega: PravegaStandalone) -> None:
    """An awaited ``write_many`` of 5.5 blocks: 4 blocks in flight, a 5th full one, and the
    last half block, which must go out with them (the writer is told to hurry) rather than
    wait for an acknowledgement to free a block slot. With 0.5 s of latency each way on
    the segment store's connection, that is one round trip (~1 s) against two (~2 s).
    Single awaited writes, gathered, still share blocks."""
    assert pravega.proxy is not None
    scope = "aio" + uuid.uuid4().hex[:10]
    block = 64 * 1024
    events = [b"x" * 1000] * 352  # 65 events of 1008 framed bytes fill a block: 5 + 27/65

    async def main() -> tuple[float, int, int]:
        async with apv.Client(pravega.controller_url, timeout=30.0) as client:
            await client.create_scope(scope)
            await client.create_stream(scope, "s", segments=1)
            async with await client.create_writer(scope, "s", max_block=block) as writer:
                await writer.write(b"warm-up")  # the connection is set up before the latency
                assert pravega.proxy is not None
                pravega.proxy.set_latency(0.5)
                try:
                    t0 = time.monotonic()
                    assert await writer.write_many(events) == len(events)
                    elapsed = time.monotonic() - t0
                    before = writer_batches(f"{scope}/s")
                    singles = [writer.write(b"s%d" % i) for i in range(400)]
                    assert await asyncio.gather(*singles) == [None] * 400
                    single_blocks = writer_batches(f"{scope}/s") - before
                finally:
                    pravega.proxy.set_latency(0.0)
            reader = await client.create_reader(scope, "s", start="head")
            n = 0
            while n < 1 + len(events) + 400:
                got = await reader.read_many(1000, timeout=10)
                assert got, f"only {n} events read back"
                n += len(got)
            await reader.close()
            return elapsed, single_blocks, n

    elapsed, single_blocks, n = run(main)
    assert n == 1 + len(events) + 400
    assert elapsed < 1.5, f"awaited write_many took {elapsed:.2f} s: its last block waited"
    # 400 single writes over 1 s round trips: gathered into a handful of blocks, not 400.
    assert single_blocks <= 40, single_blocks
