"""TANK side by side: streamwire.tank against the broker's own ceiling, in one run.

    .venv/bin/python benches/tank_bench.py [--tank-bin PATH] [--rounds 3] [--messages 2000000]

No Python (or Rust) TANK client exists to compare with (see shared/design/TANK.md), so the
reference is the broker itself: the *ceiling* rows send pre-built bundles of 1,000 messages
raw, pipelined (64 requests in flight) from a bare socket, and read a backlog back with raw
Consume requests that only walk bundle headers. Ours runs the same message counts and sizes
against the same broker in the same process, alternating with the ceiling round by round; the
table shows medians. ``--tank-bin`` (or ``STREAMWIRE_TANK_BIN``) uses a real broker; without
it the broker double runs, and the table says so (its figures are the double's, not TANK's).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import struct
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from streamwire import tank  # noqa: E402

from tests.peers.tank import TankBroker  # noqa: E402
from tests.peers.tank_double import varint  # noqa: E402

BUNDLE = 1000


def bundle_of(size: int) -> bytes:
    """1,000 messages of ``size`` bytes, one explicit timestamp, no keys, uncompressed."""
    value = b"x" * size
    body = bytearray(b"\x00" + varint(BUNDLE))  # count > 15: flags 0, varint count
    ts = struct.pack("<Q", int(time.time() * 1000))
    body += b"\x00" + ts + varint(size) + value
    body += (b"\x02" + varint(size) + value) * (BUNDLE - 1)
    return bytes(body)


class Raw:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        greeting = b""
        while len(greeting) < 5:
            greeting += self.sock.recv(5 - len(greeting))
        assert greeting[0] == 3, greeting

    def frame(self) -> tuple[int, bytes]:
        while True:
            if len(self.buf) >= 5:
                n = struct.unpack_from("<I", self.buf, 1)[0]
                if len(self.buf) >= 5 + n:
                    msg, payload = self.buf[0], bytes(self.buf[5 : 5 + n])
                    del self.buf[: 5 + n]
                    if msg != 3:
                        return msg, payload
                    continue
            more = self.sock.recv(1 << 20)
            if not more:
                raise ConnectionError("closed")
            self.buf += more

    def close(self) -> None:
        self.sock.close()


def produce_request(req_id: int, topic: bytes, bundle: bytes) -> bytes:
    body = (
        struct.pack("<HI", 2, req_id)
        + b"\x00\x00"
        + struct.pack("<I", 0)
        + b"\x01"
        + bytes([len(topic)])
        + topic
        + b"\x01"
        + struct.pack("<H", 0)
        + varint(len(bundle))
        + bundle
    )
    return struct.pack("<BI", 1, len(body)) + body


def raw_ingest(port: int, topic: str, n: int, size: int) -> float:
    """Messages/s of pre-built bundles sent pipelined."""
    raw = Raw(port)
    # One pre-built request sent over and over: the broker only echoes the request id.
    request = produce_request(1, topic.encode(), bundle_of(size))
    requests = n // BUNDLE
    t0 = time.perf_counter()
    sent = answered = 0
    window = 64
    while answered < requests:
        while sent < requests and sent - answered < window:
            raw.sock.sendall(request)
            sent += 1
        _, payload = raw.frame()
        assert payload[4] == 0, f"produce failed: {payload.hex()}"
        answered += 1
    dt = time.perf_counter() - t0
    raw.close()
    return requests * BUNDLE / dt


def bundle_count(chunk: bytes) -> int:
    """Messages in a chunk of whole bundles (headers only)."""
    pos = total = 0
    while pos < len(chunk):
        n = shift = 0
        while True:
            b = chunk[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if pos + n > len(chunk):
            break
        flags = chunk[pos]
        count = (flags >> 2) & 0x0F
        if count == 0:
            c = shift = 0
            q = pos + 1
            while True:
                b = chunk[q]
                q += 1
                c |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            count = c
        total += count
        pos += n
    return total


def raw_fetch(port: int, topic: str, n: int) -> float:
    """Messages/s reading a backlog of ``n`` with raw Consume requests (4 MiB fetches)."""
    raw = Raw(port)
    seq, got = 1, 0
    t0 = time.perf_counter()
    req = 0
    while got < n:
        req += 1
        body = (
            struct.pack("<HI", 2, req)
            + b"\x00"
            + struct.pack("<QI", 0, 0)
            + b"\x01"
            + bytes([len(topic)])
            + topic.encode()
            + b"\x01"
            + struct.pack("<HQI", 0, seq, 4 << 20)
        )
        raw.sock.sendall(struct.pack("<BI", 2, len(body)) + body)
        _, payload = raw.frame()
        hl = struct.unpack_from("<I", payload)[0]
        count = bundle_count(payload[4 + hl :])
        got += count
        seq += count
    dt = time.perf_counter() - t0
    raw.close()
    return got / dt


def ours_send_many(url: str, topic: str, n: int, size: int) -> float:
    values = [b"x" * size] * 10_000
    with tank.Client(url) as c, c.create_producer(topic) as p:
        t0 = time.perf_counter()
        for _ in range(n // len(values)):
            p.send_many(values, partition=0)
        return n / (time.perf_counter() - t0)


def ours_send_async(url: str, topic: str, n: int, size: int) -> float:
    value = b"x" * size
    with tank.Client(url) as c, c.create_producer(topic) as p:
        send = p.send_async
        t0 = time.perf_counter()
        for _ in range(n):
            send(value, partition=0)
        p.flush()
        return n / (time.perf_counter() - t0)


def _consume_rate(url: str, topic: str, n: int, take: Callable[[tank.Consumer], int]) -> float:
    """msg/s of a consumer from the earliest message, ``take`` doing one call (its count)."""
    with tank.Client(url) as c, c.create_consumer(topic, max_wait=0.2) as consumer:
        got = 0
        t0 = time.perf_counter()
        while got < n:
            got += take(consumer)
        return got / (time.perf_counter() - t0)


def ours_receive_many(url: str, topic: str, n: int) -> float:
    return _consume_rate(url, topic, n, lambda c: len(c.receive_many(10_000, timeout=5)))


def ours_receive_arrow(url: str, topic: str, n: int) -> float:
    columns = ["value", "seq"]
    return _consume_rate(
        url, topic, n, lambda c: c.receive_arrow(10_000, timeout=5, columns=columns).num_rows
    )


def fresh_topic(url: str) -> str:
    name = "b" + uuid.uuid4().hex[:16]
    with tank.Client(url) as c:
        c.create_topic(name, 1)
    return name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tank-bin", default=os.environ.get("STREAMWIRE_TANK_BIN"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=2_000_000)
    args = ap.parse_args()
    broker = TankBroker(binary=args.tank_bin or None)
    broker.start()
    url, n = broker.url, args.messages
    rows: dict[str, list[float]] = {}

    def run(name: str, fn: Callable[..., float], *fn_args: object) -> None:
        rows.setdefault(name, []).append(fn(*fn_args))

    try:
        for _ in range(args.rounds):
            for size in (100, 1024):
                m = n if size == 100 else n // 4
                run(
                    f"ceiling: raw pipelined bundles, {size} B",
                    raw_ingest,
                    broker.port,
                    fresh_topic(url),
                    m,
                    size,
                )
                run(
                    f"ours send_many (10k lists), {size} B",
                    ours_send_many,
                    url,
                    fresh_topic(url),
                    m,
                    size,
                )
                run(
                    f"ours send_async + flush, {size} B",
                    ours_send_async,
                    url,
                    fresh_topic(url),
                    m // 4,
                    size,
                )
            backlog = fresh_topic(url)
            raw_ingest(broker.port, backlog, n, 100)
            run("ceiling: raw fetch of the backlog, 100 B", raw_fetch, broker.port, backlog, n)
            run("ours receive_many(10k), 100 B", ours_receive_many, url, backlog, n)
            run("ours receive_arrow(10k), 100 B", ours_receive_arrow, url, backlog, n)
    finally:
        broker.close()
    kind = "real TANK broker" if broker.kind == "real" else "broker DOUBLE (not TANK's figures)"
    print(
        f"\n{kind}; {args.rounds} rounds, medians, msg/s; {n:,} messages at 100 B, "
        f"{n // 4:,} at 1 KB (send_async: a quarter of that)\n"
    )
    print("| workload | msg/s |\n|---|---:|")
    for name, vals in rows.items():
        print(f"| {name} | {statistics.median(vals):,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
