"""Typed produce through the PIP-64 gateway on Apache Pulsar, one run: what encoding the
values by their schema in the gateway costs against posting the same messages as bytes.

    .venv/bin/python benches/gateway_schema_bench.py [--seconds 5]

Rows (messages/s; ``wrk``, 8 keep-alive connections on 2 threads, 1,000-message JSON bodies
of the 15-field ``sw.test.Reading`` of tests/schemas/protos.py, ~80 B encoded):
- bytes: the encoded messages as base64 values, no schema (the baseline);
- PROTOBUF_NATIVE, proto3 JSON values (the gateway parses and encodes each);
- PROTOBUF_NATIVE, base64 of the encoded bytes (the gateway checks each decodes);
- KEY_VALUE<STRING, PROTOBUF_NATIVE> SEPARATED, proto3 JSON values.
Beside them, the reference a client pays to encode the same JSON itself: the ``protobuf``
library's ``json_format.ParseDict`` + ``SerializeToString`` per message, in this process. The
broker, the gateway and the load generator share the machine's 2 cores.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from google.protobuf import json_format  # noqa: E402
from streamwire.schema import ProtobufNative  # noqa: E402

from benches.gateway_bench import wrk  # noqa: E402
from tests.peers.apache import ApachePulsar  # noqa: E402
from tests.peers.gateway import Gateway  # noqa: E402
from tests.schemas import protos  # noqa: E402

N = 1000


def bodies() -> tuple[dict[str, bytes], list[Any], Any]:
    reading, point, _ = protos.reading_classes()
    msgs = [protos.sample(reading, point, i) for i in range(N)]
    as_json = [json_format.MessageToDict(m) for m in msgs]
    as_b64 = [base64.b64encode(m.SerializeToString()).decode() for m in msgs]
    d = ProtobufNative(reading).definition
    pb = {"type": "PROTOBUF_NATIVE", "schema": d.decode() if isinstance(d, bytes) else str(d)}
    out = {
        "bytes": {"messages": [{"value": v} for v in as_b64]},
        "PROTOBUF_NATIVE, proto3 JSON": {
            "value_schema": pb,
            "messages": [{"value": v} for v in as_json],
        },
        "PROTOBUF_NATIVE, base64 bytes": {
            "value_schema": pb,
            "messages": [{"value": v} for v in as_b64],
        },
        "KEY_VALUE<STRING, PROTOBUF_NATIVE> SEPARATED": {
            "schema_type": "KEY_VALUE",
            "key_schema": {"type": "STRING"},
            "value_schema": pb,
            "kv_encoding": "SEPARATED",
            "messages": [{"key": f"k{i}", "value": v} for i, v in enumerate(as_json)],
        },
    }
    return {k: json.dumps(v).encode() for k, v in out.items()}, as_json, reading


def reference(as_json: list[Any], reading: Any, seconds: float) -> float:
    """messages/s of json_format.ParseDict + SerializeToString, one core."""
    done = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for j in as_json:
            json_format.ParseDict(j, reading()).SerializeToString()
        done += len(as_json)
    return done / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=5)
    args = ap.parse_args()
    payloads, as_json, reading = bodies()
    broker = ApachePulsar()
    broker.start()
    gw = Gateway(broker.service_url, "--max-messages", "10000").start()
    try:
        print("| row | msg/s | p50 ms/request | non-2xx |\n|---|---|---|---|")
        for name, body in payloads.items():
            url = f"{gw.url}/topics/public/default/gwsb-{uuid.uuid4().hex[:8]}"
            wrk(url, body, "application/json", 1)  # warm: producer, schema registered
            rps, p50, _, errors = wrk(url, body, "application/json", args.seconds)
            print(f"| gateway: {name} | {rps * N:,.0f} | {p50:.1f} | {errors} |", flush=True)
        ref = reference(as_json, reading, args.seconds)
        print(f"| reference: protobuf json_format.ParseDict + SerializeToString | {ref:,.0f} | | |")
    finally:
        gw.close()
        broker.close()


if __name__ == "__main__":
    main()
