"""Runs every row of ``tests/pravega/bad_cases.py``: the typed exception, a message, and the
same client, writer and reader still working afterwards (including after a forked child)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from streamwire import pravega as pv

from tests.bad_runner import check_forked, check_raises, ids, local
from tests.peers.pravega import PravegaStandalone
from tests.pravega.bad_cases import PRAVEGA_CASES, PravegaCase, PravegaCtx


@pytest.fixture(scope="module")
def pctx(pravega: PravegaStandalone) -> Iterator[PravegaCtx]:
    url = pravega.controller_url
    scope = "bad" + uuid.uuid4().hex[:10]
    with pv.Client(url, timeout=10) as client:
        client.create_scope(scope)
        client.create_stream(scope, "s", segments=2)
        client.create_stream(scope, "sealed")
        client.seal_stream(scope, "sealed")
        client.create_stream(scope, "bytes", segments=1)
        byte_stream = client.create_byte_stream(scope, "bytes")
        closed_byte_stream = client.create_byte_stream(scope, "bytes")
        closed_byte_stream.close()
        closed_client = pv.Client(url)
        closed_client.close()
        closed_writer = client.create_writer(scope, "s")
        closed_writer.close()
        closed_reader = client.create_reader(scope, "s")
        closed_reader.close()
        tiny = pv.Client(url, memory_limit=4096)
        # 3000-byte events handed over back to back: the second one finds the 4096-byte
        # budget still held by the first, which waits for its acknowledgement.
        tiny_writer = tiny.create_writer(scope, "s", block_if_queue_full=False)
        writer = client.create_writer(scope, "s")
        reader = client.create_reader(scope, "s", "tail")
        txn_writer = client.create_transactional_writer(scope, "s")
        closed_txn_writer = client.create_transactional_writer(scope, "s")
        closed_txn_writer.close()
        committed_txn = txn_writer.begin()
        committed_txn.commit()
        aborted_txn = txn_writer.begin()
        aborted_txn.abort()
        open_txn = txn_writer.begin()
        yield PravegaCtx(
            url=url,
            scope=scope,
            stream="s",
            sealed="sealed",
            client=client,
            writer=writer,
            reader=reader,
            closed_client=closed_client,
            closed_writer=closed_writer,
            closed_reader=closed_reader,
            tiny_writer=tiny_writer,
            byte_stream=byte_stream,
            closed_byte_stream=closed_byte_stream,
            txn_writer=txn_writer,
            closed_txn_writer=closed_txn_writer,
            open_txn=open_txn,
            committed_txn=committed_txn,
            aborted_txn=aborted_txn,
        )
        byte_stream.close()
        open_txn.abort()
        txn_writer.close()
        writer.close()
        reader.close()
        tiny_writer.close()
        tiny.close()


def still_works(c: PravegaCtx) -> None:
    payload = uuid.uuid4().bytes
    c.writer.write(payload)
    for _ in range(10_000):
        e = c.reader.read(timeout=10)
        assert e is not None, "the event written after the bad call never arrived"
        if e.value == payload:
            return
    raise AssertionError("the event written after the bad call never arrived")


LOCAL = local(PRAVEGA_CASES)


@pytest.mark.parametrize("case", LOCAL, ids=ids(LOCAL))
def test_pravega_bad_input(pctx: PravegaCtx, case: PravegaCase) -> None:
    check_raises(case, pctx, still_works)


def test_pravega_use_after_fork(pctx: PravegaCtx) -> None:
    def child_works() -> None:
        with pv.Client(pctx.url, timeout=10) as child:
            child.create_writer(pctx.scope, pctx.stream).write(b"from the child")

    check_forked(PRAVEGA_CASES, pctx, child_works, still_works)
