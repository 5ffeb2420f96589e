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

from benches.schema_bench import ROUNDS, fields, ours, timed, topic

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
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 50_000
    if "--apache" in sys.argv:
        from tests.peers.apache import ApachePulsar

        broker: Any = ApachePulsar()
        broker.start()
    else:
        from tests.peers.lite import PulsarLite

        broker = PulsarLite().start()
    try:
        # Round 1 warms the broker's JIT; the rounds after it are the figures.
        for _ in range(ROUNDS):
            r = run(broker.service_url, n)
            rate = {k: n / v for k, v in r.items()}
            print(f"protobuf: {n} messages of 10 fields")
            for k in sorted(rate):
                print(f"  {k:<20} {rate[k]:>10,.0f} messages/s")
            print(
                f"  ratios ours/official: send {rate['ours send'] / rate['official send']:.1f}x, "
                f"send_many {rate['ours send_many'] / rate['official send']:.1f}x, "
                f"receive {rate['ours receive'] / rate['official receive']:.1f}x, "
                f"receive_many {rate['ours receive_many'] / rate['official receive']:.1f}x, "
                f"receive_arrow {rate['ours receive_arrow'] / rate['official receive']:.1f}x",
                flush=True,
            )
    finally:
        if hasattr(broker, "stop"):
            broker.stop()
        else:
            broker.close()


if __name__ == "__main__":
    main()
