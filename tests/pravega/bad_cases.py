"""Bad input to ``streamwire.pravega``: each case raises its documented typed exception and the
same client keeps working. Rendered into ``docs/bad-input.md`` with the other protocols' rows
(see ``tests/test_bad_input.py``); run by ``tests/pravega/test_pravega_bad_input.py``."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

from streamwire import (
    AlreadyClosedError,
    ConnectError,
    ForkedProcessError,
    InvalidTransactionStateError,
    MessageTooBigError,
    ProducerQueueFullError,
    ReadOnlyError,
    TopicNotFoundError,
    TransactionTimeoutError,
    pravega,
)

from tests.bad_runner import CFG, INV, TYP, BadCase


@dataclass
class PravegaCtx:
    url: str
    scope: str
    stream: str
    sealed: str
    client: pravega.Client
    writer: pravega.Writer
    reader: pravega.Reader
    closed_client: pravega.Client
    closed_writer: pravega.Writer
    closed_reader: pravega.Reader
    tiny_writer: pravega.Writer  # memory_limit=4 KiB, does not block
    byte_stream: pravega.ByteStream  # on a one-segment stream
    closed_byte_stream: pravega.ByteStream
    txn_writer: pravega.TransactionalWriter
    closed_txn_writer: pravega.TransactionalWriter
    open_txn: pravega.Transaction
    committed_txn: pravega.Transaction
    aborted_txn: pravega.Transaction


PravegaCase = BadCase[PravegaCtx, object]


C = PravegaCase

PRAVEGA_CASES: list[PravegaCase] = [
    C(
        "pravega.Client()",
        "wrong scheme (pulsar://)",
        CFG,
        lambda c: pravega.Client("pulsar://h:1"),
    ),
    C("pravega.Client()", "no port (tcp://h)", CFG, lambda c: pravega.Client("tcp://h")),
    C("pravega.Client()", "not a str (5)", TYP, lambda c: pravega.Client(5)),  # type: ignore[arg-type]
    C("pravega.Client()", "timeout=0", CFG, lambda c: pravega.Client(c.url, timeout=0)),
    C("pravega.Client()", "memory_limit=-1", CFG, lambda c: pravega.Client(c.url, memory_limit=-1)),
    C(
        "pravega.Client()",
        "unreachable controller (port 1)",
        ConnectError,
        lambda c: pravega.Client("tcp://127.0.0.1:1", timeout=2),
    ),
    C(
        "pravega.Client()",
        "TLS settings with a tcp:// URI",
        CFG,
        lambda c: pravega.Client(c.url, tls_trust_certs_file="/nonexistent/ca.pem"),
    ),
    C(
        "pravega.Client()",
        "tls_trust_certs_file missing",
        CFG,
        lambda c: pravega.Client("tls://127.0.0.1:1", tls_trust_certs_file="/nonexistent/ca.pem"),
    ),
    C(
        "pravega.Client()",
        "username without password",
        INV,
        lambda c: pravega.Client(c.url, username="admin"),
    ),
    C(
        "pravega.Client()",
        "username with ':'",
        INV,
        lambda c: pravega.Client(c.url, username="a:b", password="p"),
    ),
    C(
        "pravega.Client()",
        "auth_method without auth_token",
        INV,
        lambda c: pravega.Client(c.url, auth_method="Bearer"),
    ),
    C(
        "pravega.Client()",
        "auth_method with a space",
        INV,
        lambda c: pravega.Client(c.url, auth_method="My Method", auth_token="t"),
    ),
    C(
        "pravega.Client()",
        "auth_token with a newline",
        INV,
        lambda c: pravega.Client(c.url, auth_method="Bearer", auth_token="a\nb"),
    ),
    C(
        "pravega.Client()",
        "both username and auth_token",
        INV,
        lambda c: pravega.Client(
            c.url, username="u", password="p", auth_method="Bearer", auth_token="t"
        ),
    ),
    C("pravega.Client", "pickled", TYP, lambda c: pickle.dumps(c.client)),
    C("pravega.Client.create_scope()", "empty name", INV, lambda c: c.client.create_scope("")),
    C(
        "pravega.Client.create_scope()",
        "name with a space",
        INV,
        lambda c: c.client.create_scope("a b"),
    ),
    C(
        "pravega.Client.create_stream()",
        "segments=0",
        INV,
        lambda c: c.client.create_stream(c.scope, "z", segments=0),
    ),
    C(
        "pravega.Client.create_stream()",
        "scaling not a Scaling",
        TYP,
        lambda c: c.client.create_stream(c.scope, "z", scaling=5),  # type: ignore[arg-type]
    ),
    C(
        "pravega.Client.create_stream()",
        "scaling target_rate=0",
        INV,
        lambda c: c.client.create_stream(c.scope, "z", scaling=pravega.Scaling(target_rate=0)),
    ),
    C(
        "pravega.Client.create_stream()",
        "unknown scope",
        TopicNotFoundError,
        lambda c: c.client.create_stream("sw-no-such-scope", "z"),
    ),
    C(
        "pravega.Client.streams()",
        "unknown scope",
        TopicNotFoundError,
        lambda c: c.client.streams("sw-no-such-scope"),
    ),
    C(
        "pravega.Client.segments()",
        "unknown stream",
        TopicNotFoundError,
        lambda c: c.client.segments(c.scope, "no-such-stream"),
    ),
    C(
        "pravega.Client.scale_stream()",
        "new ranges outside [0, 1]",
        INV,
        lambda c: c.client.scale_stream(c.scope, c.stream, [0], [(0.5, 1.5)]),
    ),
    C(
        "pravega.Client.create_writer()",
        "unknown stream",
        TopicNotFoundError,
        lambda c: c.client.create_writer(c.scope, "no-such-stream"),
    ),
    C(
        "pravega.Client.create_writer()",
        "sealed stream",
        ReadOnlyError,
        lambda c: c.client.create_writer(c.scope, c.sealed),
    ),
    C(
        "pravega.Client.create_writer()",
        "window=0",
        INV,
        lambda c: c.client.create_writer(c.scope, c.stream, window=0),
    ),
    C(
        "pravega.Client.create_reader()",
        "start='yesterday'",
        INV,
        lambda c: c.client.create_reader(c.scope, c.stream, "yesterday"),
    ),
    C(
        "pravega.Client.create_reader()",
        "a cut of another stream",
        INV,
        lambda c: c.client.create_reader(c.scope, c.stream, pravega.StreamCut("a/b:0=0")),
    ),
    C(
        "pravega.Client.create_reader()",
        "start not str/StreamCut (5)",
        TYP,
        lambda c: c.client.create_reader(c.scope, c.stream, 5),  # type: ignore[arg-type]
    ),
    C(
        "pravega.Client.create_reader()",
        "read_ahead=0",
        INV,
        lambda c: c.client.create_reader(c.scope, c.stream, read_ahead=0),
    ),
    C(
        "pravega.Client.create_reader_group()",
        "unknown stream",
        TopicNotFoundError,
        lambda c: c.client.create_reader_group(c.scope, "rg-bad", "no-such-stream"),
    ),
    C(
        "pravega.Client.create_reader_group()",
        "no stream (streams=[])",
        INV,
        lambda c: c.client.create_reader_group(c.scope, "rg-bad", []),
    ),
    C(
        "pravega.Client.create_reader_group()",
        "group name with a space",
        INV,
        lambda c: c.client.create_reader_group(c.scope, "rg bad", c.stream),
    ),
    C(
        "pravega.Client.create_reader_group()",
        "a cut of a stream it does not read",
        INV,
        lambda c: c.client.create_reader_group(
            c.scope, "rg-bad", c.stream, pravega.StreamCut("a/b:0=0")
        ),
    ),
    C(
        "pravega.Client.open_reader_group()",
        "unknown group",
        TopicNotFoundError,
        lambda c: c.client.open_reader_group(c.scope, "no-such-group"),
    ),
    C(
        "pravega.Reader.offline()",
        "a reader outside a group",
        INV,
        lambda c: c.reader.offline(),
    ),
    C(
        "pravega.Writer.write()",
        "event over the client's memory_limit (8 KiB, limit 4 KiB)",
        MessageTooBigError,
        lambda c: c.tiny_writer.write(b"x" * 8192),
    ),
    C("pravega.Writer.write()", "event not bytes (5)", TYP, lambda c: c.writer.write(5)),  # type: ignore[arg-type]
    C(
        "pravega.Writer.write()",
        "routing_key not a str (5)",
        TYP,
        lambda c: c.writer.write(b"x", routing_key=5),  # type: ignore[arg-type]
    ),
    C("pravega.Writer.write()", "timeout=-1", INV, lambda c: c.writer.write(b"x", timeout=-1)),
    C(
        "pravega.Writer.write_async()",
        "budget full, block_if_queue_full=False",
        ProducerQueueFullError,
        lambda c: [c.tiny_writer.write_async(b"y" * 3000) for _ in range(20)],
    ),
    C(
        "pravega.Writer.write_many()",
        "a single bytes value",
        TYP,
        lambda c: c.writer.write_many(b"abc"),
    ),
    C(
        "pravega.Writer.write_many()",
        "a None event",
        INV,
        lambda c: c.writer.write_many([b"a", None]),
    ),
    C(
        "pravega.Writer.write_many()",
        "routing_keys of the wrong length",
        INV,
        lambda c: c.writer.write_many([b"a", b"b"], routing_keys=["k"]),
    ),
    C(
        "pravega.Writer.write_many()",
        "routing_keys not str/sequence (5)",
        TYP,
        lambda c: c.writer.write_many([b"a"], routing_keys=5),
    ),
    C(
        "pravega.Writer.write_many_async()",
        "a single bytes value",
        TYP,
        lambda c: c.writer.write_many_async(b"abc"),
    ),
    C(
        "pravega.Writer.write_many_async()",
        "a None event",
        INV,
        lambda c: c.writer.write_many_async([b"a", None]),
    ),
    C(
        "pravega.Writer.write_many_async()",
        "routing_keys of the wrong length",
        INV,
        lambda c: c.writer.write_many_async([b"a", b"b"], routing_keys=["k"]),
    ),
    C("pravega.Writer", "pickled", TYP, lambda c: pickle.dumps(c.writer)),
    C("pravega.Reader.read_many()", "max_events=0", INV, lambda c: c.reader.read_many(0)),
    C("pravega.Reader.read()", "timeout=-1", INV, lambda c: c.reader.read(timeout=-1)),
    C(
        "pravega.Reader.read_arrow()",
        "unknown column",
        ValueError,
        lambda c: c.reader.read_arrow(10, timeout=0.1, columns=["key"]),
    ),
    C("pravega.Reader", "pickled", TYP, lambda c: pickle.dumps(c.reader)),
    C("pravega.StreamCut.parse()", "not a cut", INV, lambda c: pravega.StreamCut.parse("x")),
    C(
        "pravega.Client.create_transactional_writer()",
        "lease=0",
        CFG,
        lambda c: c.client.create_transactional_writer(c.scope, c.stream, lease=0),
    ),
    C(
        "pravega.Client.create_transactional_writer()",
        "writer_id empty",
        INV,
        lambda c: c.client.create_transactional_writer(c.scope, c.stream, writer_id=""),
    ),
    C(
        "pravega.Client.create_transactional_writer()",
        "unknown stream",
        TopicNotFoundError,
        lambda c: c.client.create_transactional_writer(c.scope, "no-such-stream"),
    ),
    C(
        "pravega.Client.create_transactional_writer()",
        "sealed stream",
        ReadOnlyError,
        lambda c: c.client.create_transactional_writer(c.scope, c.sealed),
    ),
    C(
        "pravega.TransactionalWriter.begin()",
        "lease over the controller's maximum (1 h)",
        INV,
        lambda c: c.client.create_transactional_writer(c.scope, c.stream, lease=3600).begin(),
    ),
    C(
        "pravega.TransactionalWriter",
        "pickled",
        TYP,
        lambda c: pickle.dumps(c.txn_writer),
    ),
    C(
        "pravega.Transaction.write()",
        "an int event",
        TYP,
        lambda c: c.open_txn.write(5),  # type: ignore[arg-type]
    ),
    C(
        "pravega.Transaction.write()",
        "an int routing key",
        TYP,
        lambda c: c.open_txn.write(b"x", routing_key=5),  # type: ignore[arg-type]
    ),
    C(
        "pravega.Transaction.write()",
        "event over 8 MiB (a transaction takes no large events)",
        MessageTooBigError,
        lambda c: c.open_txn.write(b"x" * (8 * 1024 * 1024 + 1)),
    ),
    C(
        "pravega.Transaction.write_many()",
        "routing_keys of the wrong length",
        INV,
        lambda c: c.open_txn.write_many([b"a", b"b"], routing_keys=["k"]),
    ),
    C(
        "pravega.Transaction.flush()",
        "timeout=-1",
        INV,
        lambda c: c.open_txn.flush(timeout=-1),
    ),
    C("pravega.Transaction", "pickled", TYP, lambda c: pickle.dumps(c.open_txn)),
    C(
        "pravega.Transaction.commit()",
        "committed twice",
        InvalidTransactionStateError,
        lambda c: c.committed_txn.commit(),
    ),
    C(
        "pravega.Transaction.write()",
        "after the commit",
        InvalidTransactionStateError,
        lambda c: c.committed_txn.write(b"late"),
    ),
    C(
        "pravega.Transaction.abort()",
        "after the commit",
        InvalidTransactionStateError,
        lambda c: c.committed_txn.abort(),
    ),
    C(
        "pravega.Transaction.commit()",
        "after an abort",
        InvalidTransactionStateError,
        lambda c: c.aborted_txn.commit(),
    ),
    C(
        "pravega.Transaction.write_many()",
        "after an abort",
        InvalidTransactionStateError,
        lambda c: c.aborted_txn.write_many([b"late"]),
    ),
    C(
        "pravega.Client.transaction()",
        "txn_id not a UUID ('xyz')",
        INV,
        lambda c: c.client.transaction(c.scope, c.stream, "xyz"),
    ),
    C(
        "pravega.Client.transaction()",
        "txn_id negative (-1)",
        INV,
        lambda c: c.client.transaction(c.scope, c.stream, -1),
    ),
    C(
        "pravega.Client.transaction()",
        "txn_id a float (1.5)",
        INV,
        lambda c: c.client.transaction(c.scope, c.stream, 1.5),  # type: ignore[arg-type]
    ),
    C(
        "pravega.Client.transaction()",
        "stream name with a space",
        INV,
        lambda c: c.client.transaction(c.scope, "a b", 1),
    ),
    C(
        "pravega.TransactionHandle.commit()",
        "a transaction the controller does not know",
        InvalidTransactionStateError,
        lambda c: c.client.transaction(c.scope, c.stream, 0x5EED).commit(),
    ),
    C(
        "pravega.TransactionHandle.commit()",
        "an aborted transaction",
        TransactionTimeoutError,
        lambda c: c.client.transaction(c.scope, c.stream, c.aborted_txn.id).commit(),
    ),
    C(
        "pravega.TransactionHandle.commit()",
        "writer_id empty",
        INV,
        lambda c: c.client.transaction(c.scope, c.stream, c.open_txn.id).commit(writer_id=""),
    ),
    C(
        "pravega.TransactionHandle.abort()",
        "a committed transaction",
        InvalidTransactionStateError,
        lambda c: c.client.transaction(c.scope, c.stream, c.committed_txn.id).abort(),
    ),
    C(
        "pravega.TransactionHandle.ping()",
        "lease=0",
        CFG,
        lambda c: c.client.transaction(c.scope, c.stream, c.open_txn.id).ping(0),
    ),
    C(
        "pravega.TransactionHandle",
        "pickled",
        TYP,
        lambda c: pickle.dumps(c.client.transaction(c.scope, c.stream, c.open_txn.id)),
    ),
    # -- closed handles
    C(
        "pravega.Client.streams()",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.streams(c.scope),
        group="closed",
    ),
    C(
        "pravega.Writer.write()",
        "closed writer",
        AlreadyClosedError,
        lambda c: c.closed_writer.write(b"x"),
        group="closed",
    ),
    C(
        "pravega.Writer.write_many_async()",
        "closed writer",
        AlreadyClosedError,
        lambda c: c.closed_writer.write_many_async([b"x"]),
        group="closed",
    ),
    C(
        "pravega.Writer.flush()",
        "closed writer",
        AlreadyClosedError,
        lambda c: c.closed_writer.flush(),
        group="closed",
    ),
    C(
        "pravega.TransactionalWriter.begin()",
        "closed writer",
        AlreadyClosedError,
        lambda c: c.closed_txn_writer.begin(),
        group="closed",
    ),
    C(
        "pravega.Reader.read()",
        "closed reader",
        AlreadyClosedError,
        lambda c: c.closed_reader.read(timeout=0.1),
        group="closed",
    ),
    C(
        "pravega.Reader.position()",
        "closed reader",
        AlreadyClosedError,
        lambda c: c.closed_reader.position(),
        group="closed",
    ),
    # -- byte streams
    C(
        "pravega.Client.create_byte_stream()",
        "a stream of two segments",
        CFG,
        lambda c: c.client.create_byte_stream(c.scope, c.stream),
    ),
    C(
        "pravega.Client.create_byte_stream()",
        "a sealed stream",
        AlreadyClosedError,
        lambda c: c.client.create_byte_stream(c.scope, c.sealed),
    ),
    C(
        "pravega.Client.create_byte_stream()",
        "unknown stream",
        TopicNotFoundError,
        lambda c: c.client.create_byte_stream(c.scope, "nope"),
    ),
    C(
        "pravega.Client.create_byte_stream()",
        "stream name with a space",
        INV,
        lambda c: c.client.create_byte_stream(c.scope, "a b"),
    ),
    C(
        "pravega.ByteStream.write()",
        "a str",
        TYP,
        lambda c: c.byte_stream.write("text"),  # type: ignore[arg-type]
    ),
    C(
        "pravega.ByteStream.read()",
        "size not an int ('10')",
        TYP,
        lambda c: c.byte_stream.read("10"),  # type: ignore[arg-type]
    ),
    C(
        "pravega.ByteStream.readinto()",
        "a read-only buffer",
        TYP,
        lambda c: c.byte_stream.readinto(memoryview(b"ro")),  # type: ignore[arg-type]
    ),
    C(
        "pravega.ByteStream.seek()",
        "before the start (-1)",
        INV,
        lambda c: c.byte_stream.seek(-1),
    ),
    C("pravega.ByteStream.seek()", "whence=3", INV, lambda c: c.byte_stream.seek(0, 3)),
    C(
        "pravega.ByteStream.truncate()",
        "offset=-1",
        INV,
        lambda c: c.byte_stream.truncate(-1),
    ),
    C("pravega.ByteStream", "pickled", TYP, lambda c: pickle.dumps(c.byte_stream)),
    C(
        "pravega.ByteStream.write()",
        "closed byte stream",
        AlreadyClosedError,
        lambda c: c.closed_byte_stream.write(b"x"),
        group="closed",
    ),
    C(
        "pravega.ByteStream.read()",
        "closed byte stream",
        AlreadyClosedError,
        lambda c: c.closed_byte_stream.read(1, timeout=1),
        group="closed",
    ),
    # -- after fork (run in a forked child)
    C(
        "pravega.Client.streams()",
        "used in a forked child",
        ForkedProcessError,
        lambda c: c.client.streams(c.scope),
        group="fork",
    ),
    C(
        "pravega.Writer.write()",
        "used in a forked child",
        ForkedProcessError,
        lambda c: c.writer.write(b"x"),
        group="fork",
    ),
    C(
        "pravega.Transaction.write()",
        "used in a forked child",
        ForkedProcessError,
        lambda c: c.open_txn.write(b"x"),
        group="fork",
    ),
    C(
        "pravega.Reader.read()",
        "used in a forked child",
        ForkedProcessError,
        lambda c: c.reader.read(timeout=0.1),
        group="fork",
    ),
]
