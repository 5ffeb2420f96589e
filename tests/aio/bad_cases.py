"""Bad input to ``streamwire.aio``: each case raises its documented typed exception, and the
same client keeps working. Rendered into ``docs/bad-input.md`` with the other rows (see
``tests/test_bad_input.py``); run by ``tests/aio/test_aio_bad_input.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from streamwire import (
    AlreadyClosedError,
    MessageId,
    MessageTooBigError,
    NotSupportedError,
    aio,
)

from tests.bad_runner import CFG, INV, TYP, BadCase


@dataclass
class AioCtx:
    url: str
    topic: str
    client: aio.Client
    producer: aio.Producer
    consumer: aio.Consumer
    reader: aio.Reader
    closed_client: aio.Client
    closed_producer: aio.Producer
    closed_consumer: aio.Consumer
    closed_reader: aio.Reader


AioCase = BadCase[AioCtx, Awaitable[Any]]


async def _client(*args: Any, **kwargs: Any) -> aio.Client:
    return aio.Client(*args, **kwargs)


async def _cancelled_receive(c: AioCtx) -> None:
    task = asyncio.ensure_future(c.consumer.receive())
    await asyncio.sleep(0.01)
    task.cancel()
    await task


async def _sent(c: AioCtx, data: bytes) -> None:
    """The case's message was sent all the same (the consumer and the reader get it)."""
    assert (await c.consumer.receive(timeout=10)).data() == data
    assert (await c.reader.read_next(timeout=10)).data() == data


async def _early_result(c: AioCtx) -> Any:
    fut = c.producer.send(b"early")
    try:
        return fut.result()
    finally:
        await _sent(c, b"early")


async def _bad_callback(c: AioCtx) -> None:
    fut = c.producer.send(b"bad callback")
    try:
        fut.add_done_callback(5)  # type: ignore[arg-type]
    finally:
        await fut
        await _sent(c, b"bad callback")


async def _send_txn(c: AioCtx, txn: Any) -> Any:
    return await c.producer.send(b"x", txn=txn)


async def _cancelled_send(c: AioCtx) -> None:
    fut = c.producer.send(b"cancelled")
    fut.cancel()
    try:
        await fut
    finally:
        await _sent(c, b"cancelled")


AIO_CASES: list[AioCase] = [
    AioCase("aio.Client()", "service_url not a str (123)", TYP, lambda c: _client(123)),
    AioCase(
        "aio.Client()", "operation_timeout=-1", CFG, lambda c: _client(c.url, operation_timeout=-1)
    ),
    AioCase(
        "aio.Client.create_producer",
        "batching_max_messages=-1",
        CFG,
        lambda c: c.client.create_producer(c.topic, batching_max_messages=-1),
    ),
    AioCase(
        "aio.Client.create_producer",
        "unknown compression",
        CFG,
        lambda c: c.client.create_producer(c.topic, compression="bogus"),
    ),
    AioCase(
        "aio.Client.create_producer",
        "unknown batching_type",
        CFG,
        lambda c: c.client.create_producer(c.topic, batching_type="bogus"),
    ),
    AioCase(
        "aio.Client.create_producer",
        "message_router not callable",
        CFG,
        lambda c: c.client.create_producer(c.topic, message_router="round_robin"),
    ),
    AioCase(
        "aio.Client.create_producer",
        "topic not a str (5)",
        TYP,
        lambda c: c.client.create_producer(5),  # type: ignore[arg-type]
    ),
    AioCase(
        "aio.Client.subscribe",
        "message_listener= (asyncio: iterate in a task)",
        NotSupportedError,
        lambda c: c.client.subscribe(c.topic, "s", message_listener=lambda cons, m: None),
    ),
    AioCase(
        "aio.Client.create_reader",
        "reader_listener= (asyncio: iterate in a task)",
        NotSupportedError,
        lambda c: c.client.create_reader(c.topic, reader_listener=lambda r, m: None),
    ),
    AioCase(
        "aio.Client.subscribe",
        "unknown subscription_type",
        CFG,
        lambda c: c.client.subscribe(c.topic, "s", subscription_type="bogus"),
    ),
    AioCase(
        "aio.Client.subscribe",
        "empty subscription_name",
        CFG,
        lambda c: c.client.subscribe(c.topic, ""),
    ),
    AioCase(
        "aio.Client.create_reader",
        "start_message_id='middle'",
        CFG,
        lambda c: c.client.create_reader(c.topic, "middle"),
    ),
    AioCase(
        "aio.Client.create_table_view",
        "subscription_name=''",
        CFG,
        lambda c: c.client.create_table_view(c.topic, subscription_name=""),
    ),
    AioCase(
        "aio.Client.create_table_view",
        "auto_update_partitions_interval=-1",
        CFG,
        lambda c: c.client.create_table_view(c.topic, auto_update_partitions_interval=-1),
    ),
    AioCase(
        "aio.Client.create_producer",
        "auto_update_partitions_interval=-1",
        CFG,
        lambda c: c.client.create_producer(c.topic, auto_update_partitions_interval=-1),
    ),
    AioCase(
        "aio.Client.subscribe",
        "auto_update_partitions_interval=nan",
        CFG,
        lambda c: c.client.subscribe(c.topic, "s", auto_update_partitions_interval=float("nan")),
    ),
    AioCase("aio.Producer.send", "value is an int", TYP, lambda c: _aw(c.producer.send, 5)),
    AioCase(
        "aio.Producer.send",
        "event_time=-1",
        INV,
        lambda c: _aw(c.producer.send, b"x", event_time=-1),
    ),
    AioCase(
        "aio.AioSendFuture.result",
        "called before the send finished",
        asyncio.InvalidStateError,
        lambda c: _early_result(c),
        note="built-in; the message is still sent",
    ),
    AioCase(
        "aio.AioSendFuture.add_done_callback",
        "fn not callable (5)",
        TYP,
        lambda c: _bad_callback(c),
        note="the message is still sent",
    ),
    AioCase(
        "aio.Producer.send",
        "the awaited future is cancelled",
        asyncio.CancelledError,
        lambda c: _cancelled_send(c),
        note="built-in; only the wait is cancelled: the message is still sent",
    ),
    AioCase(
        "aio.Producer.send_many",
        "a single bytes value",
        TYP,
        lambda c: _aw(c.producer.send_many, b"abc"),
    ),
    AioCase(
        "aio.Producer.send_many",
        "keys shorter than values",
        INV,
        lambda c: _aw(c.producer.send_many, [b"a", b"b"], keys=["k"]),
    ),
    AioCase(
        "aio.Producer.send_many",
        "ids=False, element not bytes",
        TYP,
        lambda c: _aw(c.producer.send_many, [b"a", 1], ids=False),
    ),
    AioCase(
        "aio.Producer.send_many",
        "ids=False, a 6 MiB value (nothing is sent)",
        MessageTooBigError,
        lambda c: _aw(c.producer.send_many, [b"a", b"x" * (6 * 1024 * 1024)], ids=False),
    ),
    AioCase("aio.Consumer.receive", "timeout=-1", INV, lambda c: c.consumer.receive(timeout=-1)),
    AioCase(
        "aio.Consumer.receive_many",
        "max_messages=0",
        INV,
        lambda c: c.consumer.receive_many(0),
    ),
    AioCase(
        "aio.Consumer.receive_arrow",
        "unknown column",
        ValueError,
        lambda c: c.consumer.receive_arrow(10, columns=["nope"]),
        note="built-in",
    ),
    AioCase(
        "aio.Consumer.acknowledge",
        "a str",
        TYP,
        lambda c: c.consumer.acknowledge("x"),  # type: ignore[arg-type]
    ),
    AioCase(
        "aio.Consumer.acknowledge",
        "txn not a Transaction ('x')",
        TYP,
        lambda c: c.consumer.acknowledge(MessageId.earliest, txn="x"),  # type: ignore[arg-type]
    ),
    AioCase(
        "aio.Client.transaction",
        "timeout=0",
        INV,
        lambda c: c.client.transaction(timeout=0),
    ),
    AioCase(
        "aio.Client.transaction",
        "a broker without transactions (pulsar-lite)",
        NotSupportedError,
        lambda c: c.client.transaction(),
    ),
    AioCase(
        "aio.Producer.send_many",
        "schema= not a schema (3)",
        TYP,
        lambda c: c.producer.send_many([b"x"], schema=3),
        note="nothing is sent",
    ),
    AioCase(
        "aio.Producer.send_many",
        "txn not a Transaction ('x')",
        TYP,
        lambda c: c.producer.send_many([b"x"], txn="x"),
        note="nothing is sent",
    ),
    AioCase(
        "aio.Producer.send",
        "txn not a Transaction (5)",
        TYP,
        lambda c: _send_txn(c, 5),
        note="nothing is sent",
    ),
    AioCase(
        "aio.Consumer.receive",
        "the await is cancelled",
        asyncio.CancelledError,
        _cancelled_receive,
        note="built-in; no message is lost: one taken meanwhile goes to the next receive",
    ),
    AioCase("aio.Reader.read_many", "max_messages=0", INV, lambda c: c.reader.read_many(0)),
    AioCase(
        "aio.Consumer.receive_many",
        "max_bytes=0",
        INV,
        lambda c: c.consumer.receive_many(10, timeout=0.1, max_bytes=0),
    ),
    AioCase(
        "aio.Consumer.seek",
        "not a MessageId/int ('x')",
        TYP,
        lambda c: c.consumer.seek("x"),  # type: ignore[arg-type]
    ),
    AioCase("aio.Consumer.seek", "timestamp -1", INV, lambda c: c.consumer.seek(-1)),
    AioCase("aio.Consumer.seek", "a bool (True)", TYP, lambda c: c.consumer.seek(True)),
    AioCase(
        "aio.Reader.seek",
        "a float (1.5)",
        TYP,
        lambda c: c.reader.seek(1.5),  # type: ignore[arg-type]
    ),
    AioCase(
        "aio.Lookup.partitions",
        "malformed topic ('persistent://a/b')",
        INV,
        lambda c: c.client.lookup().partitions("persistent://a/b"),
    ),
    AioCase(
        "aio.Lookup.broker_url",
        "empty topic",
        INV,
        lambda c: c.client.lookup().broker_url(""),
    ),
    # -- closed handles ---------------------------------------------------------------------
    AioCase(
        "aio.Client.create_producer",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.create_producer(c.topic),
        group="closed",
    ),
    AioCase(
        "aio.Client.subscribe",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.subscribe(c.topic, "s"),
        group="closed",
    ),
    AioCase(
        "aio.Producer.send",
        "closed producer",
        AlreadyClosedError,
        lambda c: _aw(c.closed_producer.send, b"x"),
        group="closed",
    ),
    AioCase(
        "aio.Producer.flush",
        "closed producer",
        AlreadyClosedError,
        lambda c: c.closed_producer.flush(),
        group="closed",
    ),
    AioCase(
        "aio.Consumer.receive",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.receive(timeout=1),
        group="closed",
    ),
    AioCase(
        "aio.Consumer.acknowledge",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.acknowledge([]),
        group="closed",
    ),
    AioCase(
        "aio.Consumer.seek",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.seek(0),
        group="closed",
    ),
    AioCase(
        "aio.Consumer.redeliver_unacknowledged_messages",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.redeliver_unacknowledged_messages(),
        group="closed",
    ),
    AioCase(
        "aio.Consumer.get_last_message_id",
        "closed consumer",
        AlreadyClosedError,
        lambda c: c.closed_consumer.get_last_message_id(),
        group="closed",
    ),
    AioCase(
        "aio.Reader.seek",
        "closed reader",
        AlreadyClosedError,
        lambda c: c.closed_reader.seek(0),
        group="closed",
    ),
    AioCase(
        "aio.Client.lookup",
        "closed client",
        AlreadyClosedError,
        lambda c: c.closed_client.lookup().partitions(c.topic),
        group="closed",
    ),
    AioCase(
        "aio.Reader.read_next",
        "closed reader",
        AlreadyClosedError,
        lambda c: c.closed_reader.read_next(timeout=1),
        group="closed",
    ),
]


async def _aw(call: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
    return await call(*args, **kwargs)
