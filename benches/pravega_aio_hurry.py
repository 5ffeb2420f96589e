"""An awaited bulk write's last block: the time of ``await writer.write_many(...)`` (asyncio)
against the blocking ``write_many``, 5.5 append blocks of 64 KiB to one segment, with 0.5 s of
latency each way between the client and the segment store (the fault proxy). One round trip
(~1 s) means the last partial block went out with the others; two (~2 s) that it waited for an
acknowledgement to free a block slot.

    .venv/bin/python benches/pravega_aio_hurry.py [--latency 0.5] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamwire import pravega  # noqa: E402
from streamwire.aio import pravega as apv  # noqa: E402

from tests.peers.pravega import PravegaStandalone  # noqa: E402

EVENTS = [b"x" * 1000] * 352  # 65 framed events fill a 64 KiB block: 5 blocks and 27 events
BLOCK = 64 * 1024


async def awaited(server: PravegaStandalone, latency: float, runs: int) -> list[float]:
    assert server.proxy is not None
    async with apv.Client(server.controller_url) as client:
        await client.create_scope("hurry")
        await client.create_stream("hurry", "aio")
        writer = await client.create_writer("hurry", "aio", max_block=BLOCK)
        await writer.write(b"warm-up")
        server.proxy.set_latency(latency)
        out = []
        for _ in range(runs):
            t0 = time.monotonic()
            await writer.write_many(EVENTS)
            out.append(time.monotonic() - t0)
        server.proxy.set_latency(0.0)
        await writer.close()
        return out


def blocking(server: PravegaStandalone, latency: float, runs: int) -> list[float]:
    assert server.proxy is not None
    with pravega.Client(server.controller_url) as client:
        client.create_stream("hurry", "blocking")
        with client.create_writer("hurry", "blocking", max_block=BLOCK) as writer:
            writer.write(b"warm-up")
            server.proxy.set_latency(latency)
            out = []
            for _ in range(runs):
                t0 = time.monotonic()
                writer.write_many(EVENTS)
                out.append(time.monotonic() - t0)
            server.proxy.set_latency(0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    server = PravegaStandalone(proxy=True).start()
    try:
        a = asyncio.run(awaited(server, args.latency, args.runs))
        b = blocking(server, args.latency, args.runs)
    finally:
        server.close()
    print(f"awaited write_many (asyncio): {', '.join(f'{x:.2f}' for x in a)} s")
    print(f"blocking write_many:          {', '.join(f'{x:.2f}' for x in b)} s")


if __name__ == "__main__":
    main()
