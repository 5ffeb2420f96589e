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
import streamwire
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from streamwire.schema import ProtobufNative

from benches.schema_bench import ROUNDS, SLICE, fields, timed, topic

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
    out: dict[str, float] = {}
    with streamwire.Client(url) as client:
        t = topic()
        p = client.create_producer(t, schema=schema)
        c = client.subscribe(t, "b", initial_position="earliest", schema=schema)

        def ours_send() -> None:
            for r in records:
                p.send_async(r)
            p.flush()

        out["ours send"] = timed(ours_send)

        def ours_receive() -> None:
            for _ in range(n):
                c.receive(timeout=30).value  # noqa: B018  (decode)

        out["ours receive"] = timed(ours_receive)
        t2 = topic()
        p2 = client.create_producer(t2, schema=schema)
        c2 = client.subscribe(t2, "b", initial_position="earliest", schema=schema)

        def ours_send_many() -> None:
            for s in range(0, n, SLICE):
                p2.send_many(records[s : s + SLICE])

        out["ours send_many"] = timed(ours_send_many)

        def ours_receive_many() -> None:
            got = 0
            while got < n:
                batch = c2.receive_many(1000, timeout=30)
                for m in batch:
                    m.value  # noqa: B018
                got += len(batch)

        out["ours receive_many"] = timed(ours_receive_many)
        c3 = client.subscribe(
            t2, "arrow", initial_position="earliest", schema=schema, receiver_queue_size=SLICE
        )

        def ours_receive_arrow() -> None:
            got = 0
            while got < n:
                got += c3.receive_arrow(SLICE, timeout=30, columns=["value"]).num_rows

        out["ours receive_arrow"] = timed(ours_receive_arrow)
        for h in (p, c, p2, c2, c3):
            h.close()

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
