"""CPU cost per record of typed JSON ``receive_arrow`` (ours) and of the official client's
``receive`` + ``value()`` + ``acknowledge`` of the same records, measured as the calling
thread's CPU time (``time.thread_time``), which moves far less than wall time on a loaded
machine. 10-field records (``schema_bench.Trade``) on a pulsar-lite started here; ours is
the best of three subscriptions (the first also warms up).

Usage: .venv/bin/python benches/schema_arrow_cpu.py [N]
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pulsar
import streamwire
from pulsar import schema as ps
from schema_bench import OfficialTrade, Trade, fields
from streamwire.schema import JsonSchema

from tests.peers.lite import PulsarLite

SLICE = 10_000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    broker = PulsarLite().start()
    try:
        url = broker.service_url
        t = f"persistent://public/default/arrow-cpu-{uuid.uuid4().hex}"
        records = [Trade(**fields(i)) for i in range(n)]
        ours: list[float] = []
        with streamwire.Client(url) as client:
            p = client.create_producer(t, schema=JsonSchema(Trade))
            for i in range(0, n, SLICE):
                p.send_many(records[i : i + SLICE])
            p.flush()
            for rep in range(3):
                c = client.subscribe(
                    t,
                    f"s{rep}",
                    initial_position="earliest",
                    schema=JsonSchema(Trade),
                    receiver_queue_size=SLICE,
                )
                got, cpu = 0, 0.0
                while got < n:
                    t0 = time.thread_time()
                    batch = c.receive_arrow(SLICE, timeout=30, columns=["value"])
                    cpu += time.thread_time() - t0
                    got += batch.num_rows
                ours.append(cpu / n * 1e9)
                c.close()
        oc = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
        try:
            oc_cons = oc.subscribe(
                t,
                "official",
                schema=ps.JsonSchema(OfficialTrade),
                initial_position=pulsar.InitialPosition.Earliest,
            )
            t0 = time.thread_time()
            for _ in range(n):
                m = oc_cons.receive(30_000)
                m.value()
                oc_cons.acknowledge(m)
            official = (time.thread_time() - t0) / n * 1e9
        finally:
            oc.close()
        print(
            f"ours receive_arrow: {[round(x) for x in ours]} ns CPU/record (best {min(ours):.0f})"
        )
        print(f"official receive+value()+ack: {official:.0f} ns CPU/record")
        print(f"ratio official/ours: {official / min(ours):.1f}x")
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
