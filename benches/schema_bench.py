"""Typed produce and consume of a 10-field record: streamwire.schema vs the official client's
pulsar.schema, JSON and Avro, in one run against one broker.

Produce: n records sent (ours: send_async + flush, and send_many in slices of 10,000;
official: send_async + flush). Consume: the same n records received and decoded (ours:
receive + Message.value, receive_many + Message.value, and receive_arrow with the typed
struct column; official: receive + Message.value() + acknowledge). Rates are records/s;
the ratio is ours / official.

Usage: .venv/bin/python benches/schema_bench.py [N] [--apache]
(starts its own pulsar-lite, or with --apache an Apache Pulsar 4.0.7 standalone)
"""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulsar
import streamwire
from pulsar import schema as ps
from streamwire.schema import AvroSchema, Int32, JsonSchema


@dataclasses.dataclass
class Trade:
    symbol: Optional[str]
    venue: Optional[str]
    side: Optional[str]
    trader: Optional[str]
    qty: Optional[Int32]
    order_id: Optional[int]
    ts: Optional[int]
    price: Optional[float]
    fee: Optional[float]
    filled: Optional[bool]


class OfficialTrade(ps.Record):
    symbol = ps.String()
    venue = ps.String()
    side = ps.String()
    trader = ps.String()
    qty = ps.Integer()
    order_id = ps.Long()
    ts = ps.Long()
    price = ps.Double()
    fee = ps.Double()
    filled = ps.Boolean()


OfficialTrade.__name__ = "Trade"  # the same record name: one registry schema


SLICE = 10_000  # records per send_many / receive_arrow call
ROUNDS = 2


def fields(i: int) -> dict[str, Any]:
    return {
        "symbol": f"SYM{i % 500}",
        "venue": "XNAS",
        "side": "buy" if i % 2 else "sell",
        "trader": f"t-{i % 37}",
        "qty": i % 1000,
        "order_id": 1_000_000_000 + i,
        "ts": 1_700_000_000_000 + i,
        "price": 100.0 + (i % 100) / 8,
        "fee": 0.25,
        "filled": i % 3 == 0,
    }


def topic() -> str:
    return f"persistent://public/default/schema-bench-{uuid.uuid4().hex}"


def timed(fn: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def ours(url: str, schema: Any, records: list[Any], n: int) -> dict[str, float]:
    """Our rows (send, receive, send_many, receive_many, receive_arrow) for ``records`` of
    ``schema``, each timed on its own topic; shared with ``schema_protobuf_bench.py``."""
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
                m = c.receive(timeout=30)
                m.value  # noqa: B018  (decode)

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
        # A receive queue as large as one receive_arrow call (the default 1000 caps a call).
        c3 = client.subscribe(
            t2, "arrow", initial_position="earliest", schema=schema, receiver_queue_size=SLICE
        )

        def ours_receive_arrow() -> None:
            got = 0
            while got < n:
                batch = c3.receive_arrow(SLICE, timeout=30, columns=["value"])
                got += batch.num_rows

        out["ours receive_arrow"] = timed(ours_receive_arrow)
        for h in (p, c, p2, c2, c3):
            h.close()

    return out


def run(url: str, n: int, kind: str) -> dict[str, float]:
    ours_schema = AvroSchema(Trade) if kind == "avro" else JsonSchema(Trade)
    official_schema = (
        ps.AvroSchema(OfficialTrade) if kind == "avro" else ps.JsonSchema(OfficialTrade)
    )
    ours_records = [Trade(**fields(i)) for i in range(n)]
    official_records = [OfficialTrade(**fields(i)) for i in range(n)]
    out = ours(url, ours_schema, ours_records, n)

    oc = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        t = topic()
        op = oc.create_producer(
            t, schema=official_schema, batching_enabled=True, block_if_queue_full=True
        )
        ocons = oc.subscribe(
            t,
            "b",
            schema=official_schema,
            initial_position=pulsar.InitialPosition.Earliest,
        )

        def official_send() -> None:
            for r in official_records:
                op.send_async(r, lambda res, mid: None)
            op.flush()

        out["official send"] = timed(official_send)

        def official_receive() -> None:
            for _ in range(n):
                m = ocons.receive(30_000)
                m.value()
                ocons.acknowledge(m)

        out["official receive"] = timed(official_receive)
        op.close()
        ocons.close()
    finally:
        oc.close()
    return out


def report(title: str, n: int, seconds: dict[str, float], unit: str) -> None:
    """Print one round's rates (``unit``/s) and the ours/official ratios."""
    rate = {k: n / v for k, v in seconds.items()}
    print(title)
    for k in sorted(rate):
        print(f"  {k:<20} {rate[k]:>10,.0f} {unit}/s")
    print(
        f"  ratios ours/official: send {rate['ours send'] / rate['official send']:.1f}x, "
        f"send_many {rate['ours send_many'] / rate['official send']:.1f}x, "
        f"receive {rate['ours receive'] / rate['official receive']:.1f}x, "
        f"receive_many {rate['ours receive_many'] / rate['official receive']:.1f}x, "
        f"receive_arrow {rate['ours receive_arrow'] / rate['official receive']:.1f}x",
        flush=True,
    )


def rounds(one: Callable[[str, int], None]) -> None:
    """The command line of the schema benches (``[N] [--apache]``): start the broker, run
    ``one(url, n)`` :data:`ROUNDS` times (round 1 warms the broker's JIT; the rounds after it
    are the figures), then stop the broker."""
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
        for _ in range(ROUNDS):
            one(broker.service_url, n)
    finally:
        broker.close()


def main() -> None:
    def one(url: str, n: int) -> None:
        for kind in ("avro", "json"):
            report(f"{kind}: {n} records of 10 fields", n, run(url, n, kind), "records")

    rounds(one)


if __name__ == "__main__":
    main()
