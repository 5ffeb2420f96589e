"""Runs every row of ``tests/aio/bad_cases_pravega.py``: the typed exception, then the same
writer and reader still work."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from streamwire.aio import pravega as apv

from tests.aio.bad_cases_pravega import AIO_PRAVEGA_CASES, AioPravegaCase, AioPravegaCtx
from tests.bad_runner import check_raises_async, ids
from tests.peers.pravega import PravegaStandalone

pytestmark = pytest.mark.usefixtures("event_loop_kind")


async def _run(url: str, case: AioPravegaCase) -> None:
    scope = "bad" + uuid.uuid4().hex[:10]
    async with apv.Client(url, timeout=30.0) as client:
        await client.create_scope(scope)
        await client.create_stream(scope, "s")
        closed_writer = await client.create_writer(scope, "s")
        await closed_writer.close()
        closed_reader = await client.create_reader(scope, "s")
        await closed_reader.close()
        txn_writer = await client.create_transactional_writer(scope, "s")
        committed_txn = await txn_writer.begin()
        await committed_txn.commit()
        ctx = AioPravegaCtx(
            scope=scope,
            client=client,
            writer=await client.create_writer(scope, "s"),
            reader=await client.create_reader(scope, "s"),
            closed_writer=closed_writer,
            closed_reader=closed_reader,
            txn=await txn_writer.begin(),
            committed_txn=committed_txn,
        )
        await check_raises_async(case, ctx)
        await ctx.txn.abort()
        # Still working: an event written now is the next one read.
        await ctx.writer.write(b"still works")
        event = await ctx.reader.read(timeout=10)
        assert event is not None and event.value == b"still works"


@pytest.mark.parametrize("case", AIO_PRAVEGA_CASES, ids=ids(AIO_PRAVEGA_CASES))
def test_aio_pravega_bad_input(pravega: PravegaStandalone, case: AioPravegaCase) -> None:
    asyncio.run(_run(pravega.controller_url, case))
