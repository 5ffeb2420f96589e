"""Typed produce and consume of a 10-field protobuf message: streamwire.schema.ProtobufNative
vs the official client, in one run against one broker (the protobuf row of
``benches/schema_bench.py``, kept in its own file).

The official Python client has no PROTOBUF_NATIVE schema, so the reference is what a user
of it does by hand: ``SerializeToString()`` per message sent as bytes (send_async + flush),
and receive + ``FromString`` + acknowledge. Ours: send_async + flush, send_many in slices of
10,000, receive + Message.value, receive_many + Message.value, and receive_arrow with the
typed struct column (decoded in Rust). Rates are messages/s; the ratio is ours / official.

Usage: .venv/bin/python benches/schema_protobuf_bench.py [N] [--apache]
(starts its own pulsar-lite, or with --apache an Apache Pulsar 4.0.7 standalone)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from streamwire.schema import ProtobufNative

from benches.schema_bench import fields, ours, report, rounds, timed, topic

F = descriptor_pb2.FieldDescriptorProto
TYPES = {
    "symbol": F.TYPE_STRING,
    "venue": F.TYPE_STRING,
    "side": F.TYPE_STRING,
    "trader": F.TYPE_STRING,
    "qty": F.TYPE_INT32,
    "order_id": F.TYPE_INT64,
    "ts": F.TYPE_INT64,
    "price": F.TYPE_DOUBLE,
    "fee": F.TYPE_DOUBLE,
    "filled": F.TYPE_BOOL,
}


def trade_class() -> Any:
    fd = descriptor_pb2.FileDescriptorProto(
        name="bench/trade.proto", package="bench", syntax="proto3"
    )
    m = fd.message_type.add(name="Trade")
    for number, (name, ty) in enumerate(TYPES.items(), 1):
        m.field.add(name=name, number=number, type=ty, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Trade"))


def run(url: str, n: int) -> dict[str, float]:
    trade = trade_class()
    schema = ProtobufNative(trade)
    records = [trade(**fields(i)) for i in range(n)]
    out = ours(url, schema, records, n)

    oc = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        t = topic()
        op = oc.create_producer(t, batching_enabled=True, block_if_queue_full=True)
        ocons = oc.subscribe(t, "b", initial_position=pulsar.InitialPosition.Earliest)

        def official_send() -> None:
            for r in records:
                op.send_async(r.SerializeToString(), lambda res, mid: None)
            op.flush()

        out["official send"] = timed(official_send)

        def official_receive() -> None:
            for _ in range(n):
                m = ocons.receive(30_000)
                trade.FromString(m.data())
                ocons.acknowledge(m)

        out["official receive"] = timed(official_receive)
        op.close()
        ocons.close()
    finally:
        oc.close()
    return out


def main() -> None:
    rounds(
        lambda url, n: report(f"protobuf: {n} messages of 10 fields", n, run(url, n), "messages")
    )


if __name__ == "__main__":
    main()
