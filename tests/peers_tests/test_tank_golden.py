"""The golden frames captured from a real TANK broker (shared/design/TANK.md §8), replayed
against the suite's TANK broker: the real one when ``STREAMWIRE_TANK_BIN`` is set, else the
double, which must answer byte for byte like the real one. Each test gets a fresh broker so
request ids and sequence numbers match the capture."""

from __future__ import annotations

import socket
import struct
import time

from tests.peers.tank import TankBroker

# (request, response) in capture order; requests carry their own request ids.
GOLDEN = [
    ("070a00000001000000027431010000", "07080000000100000002743100"),
    (
        "012f0000000200020000000270790000000000010274310100001908010068e5cf8b010000016b05"
        "68656c6c6f0205776f726c64",
        "01050000000200000000",
    ),
    (
        "02260000000200030000000000000000000000000000000001027431010000000000000000000000040000",
        "023e00000020000000030000000102743101000000010000000000000002000000000000001a000000"
        "1908010068e5cf8b010000016b0568656c6c6f0205776f726c64",
    ),
    (
        "02280000000200040000000000000000000000000000000001046e6f7065010000000000000000000000040000",
        "02110000000d0000000400000001046e6f706501ffff",
    ),
    ("060700000005000000027431", "061900000005000000027431010001000000000000000200000000000000"),
    ("060900000006000000046e6f7065", "060b00000006000000046e6f70650000"),
    ("070a00000007000000027431010000", "07080000000700000002743101"),
]


class Raw:
    """A bare socket speaking TANK frames."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert self.read() == bytes.fromhex("0300000000"), "no greeting ping"

    def read(self) -> bytes:
        head = self._exact(5)
        (length,) = struct.unpack_from("<I", head, 1)
        return head + self._exact(length)

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            more = self.sock.recv(n - len(data))
            assert more, "connection closed"
            data += more
        return data

    def call(self, req: bytes) -> bytes:
        self.sock.sendall(req)
        while True:
            frame = self.read()
            if frame[0] != 0x03:  # later pings are allowed
                return frame

    def close(self) -> None:
        self.sock.close()


def test_golden_requests_get_the_golden_responses(fresh_tank: TankBroker) -> None:
    raw = Raw(fresh_tank.port)
    try:
        for req, resp in GOLDEN:
            assert raw.call(bytes.fromhex(req)).hex() == resp, f"request {req[:20]}..."
    finally:
        raw.close()


def test_tail_long_poll_answers_empty_after_max_wait(fresh_tank: TankBroker) -> None:
    raw = Raw(fresh_tank.port)
    try:
        raw.call(bytes.fromhex(GOLDEN[0][0]))
        raw.call(bytes.fromhex(GOLDEN[1][0]))
        # Consume t1/0 at seq 3 (= high water + 1) with maxWait 300 ms.
        body = (
            struct.pack("<HI", 2, 9)
            + b"\x00"
            + struct.pack("<QI", 300, 0)
            + b"\x01\x02t1\x01"
            + struct.pack("<HQI", 0, 3, 1024)
        )
        t0 = time.monotonic()
        resp = raw.call(struct.pack("<BI", 2, len(body)) + body)
        elapsed = time.monotonic() - t0
        assert 0.25 < elapsed < 2.0, elapsed
        header_len = struct.unpack_from("<I", resp, 5)[0]
        header = resp[9 : 9 + header_len]
        # reqid, 1 topic "t1", 1 partition: pid 0, flags 0, base, hw 2, chunkLen 0.
        assert header[:4] == struct.pack("<I", 9)
        assert header[-12:] == struct.pack("<QI", 2, 0)
        # A boundary fault past the end: flags 0x01 and firstAvailable 1.
        body = body[:-12] + struct.pack("<HQI", 0, 100, 1024)
        body = body[:2] + struct.pack("<I", 10) + body[6:]
        resp = raw.call(struct.pack("<BI", 2, len(body)) + body)
        header = resp[9 : 9 + struct.unpack_from("<I", resp, 5)[0]]
        assert header[11] == 0x01, header.hex()
        assert header[-8:] == struct.pack("<Q", 1)
    finally:
        raw.close()


def test_whole_bundles_up_to_the_fetch_size(fresh_tank: TankBroker) -> None:
    """The real broker (probed) answers whole bundles, at least one, until the fetch size is
    reached or passed; the double must do the same."""
    raw = Raw(fresh_tank.port)
    try:
        raw.call(bytes.fromhex(GOLDEN[0][0]))
        raw.call(bytes.fromhex(GOLDEN[1][0]))
        raw.call(bytes.fromhex(GOLDEN[1][0]))  # a second bundle: seqs 3 and 4
        body = (
            struct.pack("<HI", 2, 11)
            + b"\x00"
            + struct.pack("<QI", 0, 0)
            + b"\x01\x02t1\x01"
            + struct.pack("<HQI", 0, 1, 40)
        )
        raw.call(bytes.fromhex(GOLDEN[1][0]))  # a third bundle, not in the answer
        resp = raw.call(struct.pack("<BI", 2, len(body)) + body)
        header_len = struct.unpack_from("<I", resp, 5)[0]
        chunk = resp[9 + header_len :]
        # Two whole bundles of 26 bytes: the second one passes the fetch size of 40.
        assert chunk == bytes.fromhex(GOLDEN[2][1])[-26:] * 2
    finally:
        raw.close()


def test_data_survives_a_kill_and_restart(fresh_tank: TankBroker) -> None:
    raw = Raw(fresh_tank.port)
    raw.call(bytes.fromhex(GOLDEN[0][0]))
    raw.call(bytes.fromhex(GOLDEN[1][0]))
    raw.close()
    fresh_tank.restart(hard=True)
    raw = Raw(fresh_tank.port)
    try:
        assert raw.call(bytes.fromhex(GOLDEN[4][0])).hex() == GOLDEN[4][1]
    finally:
        raw.close()
