"""Pravega large events (over 8 MiB, written through transient segments): ours beside the
official client (PyPI ``pravega``) on one standalone in the same run, rounds alternating.

    .venv/bin/python benches/pravega_large.py [--mib 12] [--events 4] [--rounds 3]

Each round and client: a fresh one-segment stream; ``--events`` events of ``--mib`` MiB
written one after the other, each waited for (ours: ``write``; the official writer:
``write_event_bytes`` then ``flush``), the write figure in MiB/s (wall clock); then the
stream read back from the head by that client's reader until every event is in (the read
figure). Events read are checked against those written. The same figures for ours with
1 MiB events (``--events`` times ``--mib`` of them, through ordinary appends) say what the
transient segment costs. Medians of the rounds; each stream is deleted after its round so
the standalone's cache does not fill. The official Python writer (0.3.8) cannot write events
of 16 MiB or more (its serializer stops at its 16 MiB command limit), hence 12 MiB.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from streamwire import pravega

from benches._report import print_mib_rates
from tests.peers.pravega import PravegaStandalone

MiB = 1 << 20


def payloads(n: int, size: int) -> list[bytes]:
    out = []
    for i in range(n):
        block = hashlib.sha256(b"%d" % i).digest() * 128  # 4 KiB
        out.append((block * (size // len(block) + 1))[:size])
    return out


def drop(client: pravega.Client, scope: str, stream: str) -> None:
    client.seal_stream(scope, stream)
    client.delete_stream(scope, stream)


def run_ours(client: pravega.Client, scope: str, events: list[bytes]) -> tuple[float, float]:
    stream = "o" + uuid.uuid4().hex[:8]
    client.create_stream(scope, stream, segments=1)
    with client.create_writer(scope, stream) as w:
        t0 = time.perf_counter()
        for e in events:
            w.write(e)
        write_s = time.perf_counter() - t0
    got: list[bytes] = []
    with client.create_reader(scope, stream, "head") as r:
        t0 = time.perf_counter()
        while len(got) < len(events):
            got += [e.value for e in r.read_many(len(events) - len(got), timeout=30)]
        read_s = time.perf_counter() - t0
    assert got == events, "ours read back other events"
    drop(client, scope, stream)
    return write_s, read_s


def run_official(
    url: str, client: pravega.Client, scope: str, events: list[bytes]
) -> tuple[float, float]:
    import pravega_client

    manager = pravega_client.StreamManager(url)
    stream = "p" + uuid.uuid4().hex[:8]
    manager.create_stream(scope, stream, 1)
    w = manager.create_writer(scope, stream, 16)
    t0 = time.perf_counter()
    for e in events:
        w.write_event_bytes(e)
        w.flush()
    write_s = time.perf_counter() - t0
    group = manager.create_reader_group("rg" + uuid.uuid4().hex[:8], scope, stream)
    reader = group.create_reader("r1")

    async def read() -> list[bytes]:
        got: list[bytes] = []
        while len(got) < len(events):
            s = await reader.get_segment_slice_async()
            got += [bytes(e.data()) for e in s]
            reader.release_segment(s)
        return got

    t0 = time.perf_counter()
    got = asyncio.run(asyncio.wait_for(read(), 120))
    read_s = time.perf_counter() - t0
    reader.reader_offline()
    assert got == events, "the official client read back other events"
    drop(client, scope, stream)
    return write_s, read_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=12)
    ap.add_argument("--events", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    large = payloads(args.events, args.mib * MiB)
    small = payloads(args.events * args.mib, MiB)
    total = args.events * args.mib
    rows: dict[str, list[tuple[float, float]]] = {
        f"streamwire, {args.mib} MiB events": [],
        f"official, {args.mib} MiB events": [],
        "streamwire, 1 MiB events": [],
    }
    names = list(rows)
    with PravegaStandalone() as server:
        url = server.controller_url
        with pravega.Client(url, timeout=60, memory_limit=4 * args.mib * MiB) as client:
            scope = "bench" + uuid.uuid4().hex[:6]
            client.create_scope(scope)
            for _ in range(args.rounds):
                rows[names[0]].append(run_ours(client, scope, large))
                rows[names[1]].append(run_official(url, client, scope, large))
                rows[names[2]].append(run_ours(client, scope, small))
    print(f"{total} MiB per round, medians of {args.rounds} rounds")
    print_mib_rates(rows, total)


if __name__ == "__main__":
    main()
