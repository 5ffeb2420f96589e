"""Bad input to ``streamwire.aio.pravega``: each case raises its documented typed exception,
and the same client keeps working. Rendered into ``docs/bad-input.md`` with the other rows
(see ``tests/test_bad_input.py``); run by ``tests/aio/test_aio_pravega_bad_input.py``."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from streamwire import AlreadyClosedError, InvalidTransactionStateError
from streamwire.aio import pravega as apv

from tests.bad_runner import CFG, INV, TYP, BadCase, now


@dataclass
class AioPravegaCtx:
    scope: str
    client: apv.Client
    writer: apv.Writer
    reader: apv.Reader
    closed_writer: apv.Writer
    closed_reader: apv.Reader
    txn: apv.Transaction
    committed_txn: apv.Transaction


AioPravegaCase = BadCase[AioPravegaCtx, Awaitable[Any]]


async def _client(uri: str, **kwargs: Any) -> apv.Client:
    """A client made inside the coroutine (its arguments are checked before it connects)."""
    return apv.Client(uri, **kwargs)


async def _byte_stream_call(c: AioPravegaCtx, call: str, *args: Any) -> Any:
    """``call(*args)`` on a fresh byte stream of the one-segment stream ``s``."""
    bs = await c.client.create_byte_stream(c.scope, "s")
    try:
        return await getattr(bs, call)(*args)
    finally:
        await bs.close()


AIO_PRAVEGA_CASES: list[AioPravegaCase] = [
    AioPravegaCase(
        "aio.pravega.Client()",
        "TLS settings with a tcp:// URI",
        CFG,
        lambda c: _client("tcp://127.0.0.1:1", tls_trust_certs_file="/nonexistent/ca.pem"),
    ),
    AioPravegaCase(
        "aio.pravega.Client()",
        "password without username",
        INV,
        lambda c: _client("tcp://127.0.0.1:1", password="p"),
    ),
    AioPravegaCase(
        "aio.pravega.Client.create_writer",
        "scope name with a space",
        INV,
        lambda c: c.client.create_writer("bad scope", "s"),
    ),
    AioPravegaCase(
        "aio.pravega.Client.create_writer",
        "send_timeout=0",
        CFG,
        lambda c: c.client.create_writer(c.scope, "s", send_timeout=0),
    ),
    AioPravegaCase(
        "aio.pravega.Client.create_reader",
        "read_ahead=0",
        INV,
        lambda c: c.client.create_reader(c.scope, "s", read_ahead=0),
    ),
    AioPravegaCase(
        "aio.pravega.Client.create_reader",
        "start not a str or StreamCut (5)",
        TYP,
        lambda c: c.client.create_reader(c.scope, "s", start=5),  # type: ignore[arg-type]
    ),
    AioPravegaCase(
        "aio.pravega.Client.create_reader_group",
        "no stream (streams=[])",
        INV,
        lambda c: c.client.create_reader_group(c.scope, "rg-bad", []),
    ),
    AioPravegaCase(
        "aio.pravega.Reader.offline",
        "a reader outside a group",
        INV,
        lambda c: c.reader.offline(),
    ),
    AioPravegaCase(
        "aio.pravega.Writer.write",
        "event not bytes-like (5)",
        TYP,
        lambda c: now(lambda: c.writer.write(5)),
    ),
    AioPravegaCase(
        "aio.pravega.Writer.write",
        "routing_key not a str (b'k')",
        TYP,
        lambda c: now(lambda: c.writer.write(b"v", routing_key=b"k")),  # type: ignore[arg-type]
    ),
    AioPravegaCase(
        "aio.pravega.Writer.write_many",
        "a single bytes instead of a sequence",
        TYP,
        lambda c: now(lambda: c.writer.write_many(b"abc")),
    ),
    AioPravegaCase(
        "aio.pravega.Writer.write_many",
        "routing_keys of the wrong length",
        INV,
        lambda c: now(lambda: c.writer.write_many([b"a", b"b"], routing_keys=["k"])),
    ),
    AioPravegaCase(
        "aio.pravega.Client.create_transactional_writer",
        "lease=0",
        CFG,
        lambda c: c.client.create_transactional_writer(c.scope, "s", lease=0),
    ),
    AioPravegaCase(
        "aio.pravega.Transaction.write",
        "event not bytes-like (5)",
        TYP,
        lambda c: now(lambda: c.txn.write(5)),
    ),
    AioPravegaCase(
        "aio.pravega.Transaction.write_many",
        "routing_keys of the wrong length",
        INV,
        lambda c: now(lambda: c.txn.write_many([b"a", b"b"], routing_keys=["k"])),
    ),
    AioPravegaCase(
        "aio.pravega.Transaction.commit",
        "committed twice",
        InvalidTransactionStateError,
        lambda c: c.committed_txn.commit(),
    ),
    AioPravegaCase(
        "aio.pravega.Reader.read_many",
        "max_events=0",
        INV,
        lambda c: c.reader.read_many(0),
    ),
    AioPravegaCase(
        "aio.pravega.Reader.read",
        "timeout=-1",
        INV,
        lambda c: c.reader.read(timeout=-1),
    ),
    AioPravegaCase(
        "aio.pravega.Writer.write",
        "closed writer",
        AlreadyClosedError,
        lambda c: now(lambda: c.closed_writer.write(b"v")),
        group="closed",
    ),
    AioPravegaCase(
        "aio.pravega.Reader.read",
        "closed reader",
        AlreadyClosedError,
        lambda c: c.closed_reader.read(timeout=1),
        group="closed",
    ),
    AioPravegaCase(
        "aio.pravega.Client.create_byte_stream",
        "stream name with a space",
        INV,
        lambda c: c.client.create_byte_stream(c.scope, "a b"),
    ),
    AioPravegaCase(
        "aio.pravega.ByteStream.write",
        "a str",
        TYP,
        lambda c: _byte_stream_call(c, "write", "text"),
    ),
    AioPravegaCase(
        "aio.pravega.ByteStream.seek",
        "whence=3",
        INV,
        lambda c: _byte_stream_call(c, "seek", 0, 3),
    ),
]
