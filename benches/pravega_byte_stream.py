"""Pravega byte streams, ours beside the official client (PyPI ``pravega``,
``StreamManager.create_byte_stream``) on one standalone in the same run, rounds alternating.

    .venv/bin/python benches/pravega_byte_stream.py [--mib 64] [--write-size 65536] [--rounds 3]

Each round and client: a fresh one-segment stream; ``--mib`` MiB written in ``--write-size``
byte ``write`` calls, then ``flush`` (the write figure, MiB/s, wall clock); then the whole
stream read back from offset 0 with ``readinto`` into a 1 MiB buffer until every byte is in
(the read figure). The bytes read are checked against the bytes written. Medians of the rounds.
The official ``readinto`` holds the interpreter while it waits, so it is only asked for bytes
that are there.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamwire import pravega

from benches._report import print_mib_rates
from tests.peers.pravega import PravegaStandalone


def payload(total: int) -> bytes:
    block = bytes(range(256)) * 4096  # 1 MiB
    return (block * (total // len(block) + 1))[:total]


def run_ours(client: pravega.Client, scope: str, data: bytes, size: int) -> tuple[float, float]:
    stream = "o" + uuid.uuid4().hex[:8]
    client.create_stream(scope, stream, segments=1)
    bs = client.create_byte_stream(scope, stream)
    view = memoryview(data)
    t0 = time.perf_counter()
    for at in range(0, len(data), size):
        bs.write(view[at : at + size])
    bs.flush()
    write_s = time.perf_counter() - t0
    buf = bytearray(1 << 20)
    out = bytearray()
    t0 = time.perf_counter()
    while len(out) < len(data):
        n = bs.readinto(buf, timeout=30)
        out += buf[:n]
    read_s = time.perf_counter() - t0
    bs.close()
    assert out == data, "ours read back other bytes"
    return write_s, read_s


def run_official(url: str, scope: str, data: bytes, size: int) -> tuple[float, float]:
    import pravega_client

    manager = pravega_client.StreamManager(url)
    stream = "p" + uuid.uuid4().hex[:8]
    manager.create_stream(scope, stream, 1)
    bs = manager.create_byte_stream(scope, stream)
    view = memoryview(data)
    t0 = time.perf_counter()
    for at in range(0, len(data), size):
        bs.write(bytes(view[at : at + size]))
    bs.flush()
    write_s = time.perf_counter() - t0
    out = bytearray()
    t0 = time.perf_counter()
    while len(out) < len(data):
        buf = bytearray(min(1 << 20, len(data) - len(out)))
        n = bs.readinto(buf)
        out += buf[:n]
    read_s = time.perf_counter() - t0
    assert out == data, "the official client read back other bytes"
    return write_s, read_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--write-size", type=int, default=65536)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    data = payload(args.mib << 20)
    results: dict[str, list[tuple[float, float]]] = {"streamwire": [], "official": []}
    with PravegaStandalone() as server:
        url = server.controller_url
        with pravega.Client(url, timeout=60) as client:
            scope = "bench" + uuid.uuid4().hex[:6]
            client.create_scope(scope)
            for _ in range(args.rounds):
                results["streamwire"].append(run_ours(client, scope, data, args.write_size))
                results["official"].append(run_official(url, scope, data, args.write_size))
    mib = args.mib
    print(f"{mib} MiB in {args.write_size}-byte writes, medians of {args.rounds} rounds")
    print_mib_rates(results, mib)


if __name__ == "__main__":
    main()
