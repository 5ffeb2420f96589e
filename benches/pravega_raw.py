"""The segment store's own ceiling: pre-built frames on one raw socket, no client at all.

The bench's "raw" rows. Writing: one SETUP_APPEND, then APPEND_BLOCK_END blocks built before
the clock starts (the same 1 MiB of events each, only the event number and request id differ)
pipelined with at most ``window`` blocks unanswered. Reading: READ_SEGMENT requests of 1 MiB,
``window`` of them in flight, counting the events from the bytes (every event has one size).
So the figures are what the server takes and gives on these cores, the cost of Python's socket
calls aside (a few per MiB).

Run alone, it measures how long the store takes to acknowledge one append block of each size
(one block in flight at a time: the round trip a synchronous ``write_many`` waits for):

    .venv/bin/python benches/pravega_raw.py --controller tcp://HOST:PORT --segment-store HOST:PORT
                                            [--blocks 65536,262144,1048576] [--events 300000]
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import time
import uuid
from pathlib import Path

WIRE_VERSION = 16
OLDEST = 5
HELLO = -127
SETUP_APPEND = 1
APPEND_SETUP = 2
APPEND_BLOCK_END = 4
DATA_APPENDED = 7
READ_SEGMENT = 9
SEGMENT_READ = 10
EVENT = 0
BLOCK_BYTES = 1 << 20
NO_EVENT = -(1 << 63)


def _utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def _frame(kind: int, payload: bytes) -> bytes:
    return struct.pack(">ii", kind, len(payload)) + payload


class _Conn:
    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # A stalled server fails the row (socket.timeout) instead of hanging the bench.
        self.sock.settimeout(60.0)
        self.buf = bytearray()
        self.sock.sendall(_frame(HELLO, struct.pack(">ii", WIRE_VERSION, OLDEST)))
        kind, _ = self.reply()
        if kind != HELLO:
            raise RuntimeError(f"expected HELLO, got type {kind}")

    def reply(self) -> tuple[int, bytes]:
        while True:
            if len(self.buf) >= 8:
                kind, length = struct.unpack_from(">ii", self.buf)
                if len(self.buf) >= 8 + length:
                    body = bytes(self.buf[8 : 8 + length])
                    del self.buf[: 8 + length]
                    return kind, body
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("segment store closed the connection")
            self.buf += chunk

    def close(self) -> None:
        self.sock.close()


def raw_write(host: str, port: int, segment: str, size: int, events: int, window: int = 16) -> int:
    """Append ``events`` events of ``size`` bytes to ``segment``; returns the count."""
    conn = _Conn(host, port)
    try:
        writer = uuid.uuid4().bytes
        conn.sock.sendall(
            _frame(SETUP_APPEND, struct.pack(">q", 1) + writer + _utf(segment) + _utf(""))
        )
        kind, _ = conn.reply()
        if kind != APPEND_SETUP:
            raise RuntimeError(f"expected APPEND_SETUP, got type {kind}")
        per_block = max(1, BLOCK_BYTES // (size + 8))
        event = struct.pack(">ii", EVENT, size) + b"x" * size
        blocks = []
        sent = 0
        while sent < events:
            k = min(per_block, events - sent)
            data = event * k
            sent += k
            tail = struct.pack(">iqq", k, sent, len(blocks) + 2)
            body = writer + struct.pack(">i", len(data)) + struct.pack(">i", len(data)) + data
            blocks.append(_frame(APPEND_BLOCK_END, body + tail))
        unanswered = 0
        for block in blocks:
            if unanswered >= window:
                kind, body = conn.reply()
                if kind != DATA_APPENDED:
                    raise RuntimeError(f"append failed: reply type {kind}")
                unanswered -= 1
            conn.sock.sendall(block)
            unanswered += 1
        while unanswered:
            kind, body = conn.reply()
            if kind != DATA_APPENDED:
                raise RuntimeError(f"append failed: reply type {kind}")
            unanswered -= 1
        return events
    finally:
        conn.close()


def raw_read(host: str, port: int, segment: str, size: int, events: int, window: int = 8) -> int:
    """Read ``segment`` (events of ``size`` bytes) from offset 0 until ``events`` came back,
    with ``window`` READ_SEGMENT requests of 1 MiB in flight (a short answer is followed by a
    request for the rest).

    Every event has the same size, so the count is the bytes over the framed event size: no
    per-event work in Python to bias the ceiling."""
    conn = _Conn(host, port)
    try:
        want = events * (size + 8)
        asked: list[tuple[int, int]] = []  # (offset, length) in request order
        next_offset = 0
        got = 0
        req = 1

        def ask(offset: int, length: int) -> None:
            nonlocal req
            payload = (
                _utf(segment)
                + struct.pack(">qi", offset, length)
                + _utf("")
                + struct.pack(">q", req)
            )
            conn.sock.sendall(_frame(READ_SEGMENT, payload))
            asked.append((offset, length))
            req += 1

        while got < want:
            while len(asked) < window and next_offset < want:
                n = min(BLOCK_BYTES, want - next_offset)
                ask(next_offset, n)
                next_offset += n
            kind, body = conn.reply()
            if kind != SEGMENT_READ:
                raise RuntimeError(f"read failed: reply type {kind}")
            offset, length = asked.pop(0)
            name_len = struct.unpack_from(">H", body)[0]
            (data_len,) = struct.unpack_from(">i", body, 2 + name_len + 8 + 2)
            got += data_len
            if data_len < length:
                ask(offset + data_len, length - data_len)
        return got // (size + 8)
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--controller", required=True)
    ap.add_argument("--segment-store", required=True, help="host:port")
    ap.add_argument("--blocks", default="65536,262144,1048576")
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = Path(__file__).resolve().parents[1]
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from streamwire import pravega

    global BLOCK_BYTES
    host, port = args.segment_store.rsplit(":", 1)
    client = pravega.Client(args.controller)
    scope = "raw" + uuid.uuid4().hex[:6]
    client.create_scope(scope)
    for _ in range(args.rounds):
        for block in (int(b) for b in args.blocks.split(",")):
            BLOCK_BYTES = block
            stream = "s" + uuid.uuid4().hex[:8]
            client.create_stream(scope, stream)
            start = time.perf_counter()
            n = raw_write(host, int(port), f"{scope}/{stream}/0.#epoch.0", 100, args.events, 1)
            took = time.perf_counter() - start
            blocks = n * 108 / block
            print(
                f"{block // 1024:>5} KiB blocks, one in flight: {took / blocks * 1e3:6.2f} ms "
                f"per block, {n / took:,.0f} events of 100 B/s",
                flush=True,
            )
            client.seal_stream(scope, stream)
            client.delete_stream(scope, stream)


if __name__ == "__main__":
    main()
