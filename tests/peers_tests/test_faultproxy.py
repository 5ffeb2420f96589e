"""Tests of the fault proxy itself: raw sockets against a local echo server, and the official
client through the proxy to pulsar-lite."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.peers.faultproxy import TO_BROKER, TO_CLIENT, FaultProxy
from tests.peers.lite import PulsarLite
from tests.peers.protocol import (
    encode_connect,
    encode_payload_frame,
    encode_varint,
    parse_frame,
    split_frames,
    verify_checksum,
)

MakeProxy = Callable[..., FaultProxy]


class EchoServer:
    """Threaded loopback echo server; remembers how many connections it saw and which closed."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self.closed = 0
        self.received: list[bytearray] = []
        self._stop = False
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.05)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self.accepted += 1
            self._conns.append(conn)
            received = bytearray()
            self.received.append(received)
            threading.Thread(target=self._echo, args=(conn, received), daemon=True).start()

    def _echo(self, conn: socket.socket, received: bytearray) -> None:
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                received += data
                conn.sendall(data)
        except OSError:
            pass
        finally:
            self.closed += 1
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=5)
        self.sock.close()
        for c in self._conns:
            c.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def proxy(echo: EchoServer, fault_proxy: MakeProxy) -> FaultProxy:
    return fault_proxy(("127.0.0.1", echo.port), rewrite_lookup=False)


def connect(proxy: FaultProxy) -> socket.socket:
    s = socket.create_connection(proxy.address, timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exactly(s: socket.socket, n: int, timeout: float = 5.0) -> bytes:
    s.settimeout(timeout)
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"EOF after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def recv_until_eof(s: socket.socket, timeout: float = 5.0) -> bytes:
    s.settimeout(timeout)
    buf = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return buf
        if not chunk:
            return buf
        buf += chunk


def send_frame(topic_seq: int, payload: bytes, *, checksum: bool = True) -> bytes:
    """A SEND frame: BaseCommand{type=SEND, send{producer_id=1, sequence_id}} + metadata."""
    send = b"\x08\x01\x10" + encode_varint(topic_seq)
    command = b"\x08\x06\x32" + encode_varint(len(send)) + send
    metadata = b"\x0a\x01p\x10" + encode_varint(topic_seq) + b"\x18\x01"
    return encode_payload_frame(command, metadata, payload, checksum=checksum)


# -- raw socket tests -------------------------------------------------------------------------
def test_passthrough_counts_bytes_and_connections(proxy: FaultProxy) -> None:
    with connect(proxy) as s:
        s.sendall(b"abc")  # not a Pulsar frame: the proxy must stay byte-transparent
        assert recv_exactly(s, 3) == b"abc"
        blob = bytes(range(256)) * 400
        s.sendall(blob)
        assert recv_exactly(s, len(blob)) == blob
    assert proxy.connection_count == 1
    assert proxy.bytes_forwarded[TO_BROKER] == 3 + len(blob)
    assert proxy.bytes_forwarded[TO_CLIENT] == 3 + len(blob)


def test_cut_all_closes_both_sides(proxy: FaultProxy, echo: EchoServer) -> None:
    a, b = connect(proxy), connect(proxy)
    with a, b:
        a.sendall(b"x")
        b.sendall(b"y")
        assert recv_exactly(a, 1) == b"x"
        assert recv_exactly(b, 1) == b"y"
        assert proxy.cut_all() == 2
        assert recv_until_eof(a, timeout=2) == b""
        assert recv_until_eof(b, timeout=2) == b""
    deadline = time.monotonic() + 5
    while echo.closed < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert echo.closed == 2  # the upstream connections were closed too
    with connect(proxy) as c:  # new connections work after a cut
        c.sendall(b"z")
        assert recv_exactly(c, 1) == b"z"
    assert proxy.connection_count == 3


def test_stall_holds_bytes_until_released(proxy: FaultProxy) -> None:
    with connect(proxy) as s:
        proxy.stall(True)
        s.sendall(b"held")
        s.settimeout(0.5)
        with pytest.raises(socket.timeout):
            s.recv(16)
        proxy.stall(False)
        assert recv_exactly(s, 4) == b"held"


def test_stall_accepts_new_connections(proxy: FaultProxy) -> None:
    proxy.stall(True)
    with connect(proxy) as s:
        s.sendall(b"q")
        assert proxy.wait_for_connections(1)
        s.settimeout(0.3)
        with pytest.raises(socket.timeout):
            s.recv(1)
        proxy.stall(False)
        assert recv_exactly(s, 1) == b"q"


def test_latency_applies_per_direction(proxy: FaultProxy) -> None:
    with connect(proxy) as s:
        s.sendall(b"warm")
        recv_exactly(s, 4)
        proxy.set_latency(0.25)
        t0 = time.monotonic()
        s.sendall(b"ping")
        assert recv_exactly(s, 4) == b"ping"
        elapsed = time.monotonic() - t0
        assert 0.5 <= elapsed < 2.0
        proxy.set_latency(0)
        t0 = time.monotonic()
        s.sendall(b"pong")
        recv_exactly(s, 4)
        assert time.monotonic() - t0 < 0.25


def test_refuse_closes_new_connections_for_a_while(proxy: FaultProxy) -> None:
    proxy.refuse(0.6)
    with connect(proxy) as s:
        s.sendall(b"x")
        assert recv_until_eof(s, timeout=2) == b""
    assert proxy.refused_count == 1
    time.sleep(0.7)
    with connect(proxy) as s:
        s.sendall(b"ok")
        assert recv_exactly(s, 2) == b"ok"


def test_truncate_next_frame_forwards_part_then_closes(proxy: FaultProxy) -> None:
    frame = send_frame(7, b"p" * 200)
    with connect(proxy) as s:
        s.sendall(encode_connect())  # an untouched frame before the fault is armed
        assert recv_exactly(s, len(encode_connect())) == encode_connect()
        proxy.truncate_next_frame(TO_CLIENT)
        s.sendall(frame)
        got = recv_until_eof(s, timeout=3)
    assert 0 < len(got) < len(frame)
    assert frame.startswith(got)
    assert proxy.pending_faults() == 0
    assert proxy.applied_faults and proxy.applied_faults[0].startswith("truncate to_client")


def test_truncate_to_broker_byte_by_byte(proxy: FaultProxy, echo: EchoServer) -> None:
    frame = send_frame(1, b"abcdef" * 10)
    proxy.truncate_next_frame(TO_BROKER)
    with connect(proxy) as s:
        for i in range(len(frame)):  # frame header split over many reads
            try:
                s.sendall(frame[i : i + 1])
            except OSError:
                break
        assert recv_until_eof(s, timeout=3) == b""  # closed before the echo could come back
    deadline = time.monotonic() + 5
    while echo.closed < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    upstream_got = bytes(echo.received[0])
    assert 0 < len(upstream_got) < len(frame)
    assert frame.startswith(upstream_got)


def test_corrupt_next_payload_flips_one_payload_byte(proxy: FaultProxy) -> None:
    payload = b"0123456789" * 20
    plain = encode_connect()
    frame = send_frame(3, payload)
    assert verify_checksum(parse_frame(frame)) is True
    proxy.corrupt_next_payload(TO_BROKER, "SEND")
    with connect(proxy) as s:
        s.sendall(plain + frame + frame)
        got = recv_exactly(s, len(plain) + 2 * len(frame))
    frames, rest = split_frames(got)
    assert rest == b""
    assert frames[0] == plain  # command-only frame is skipped, not counted as "next"
    assert frames[2] == frame  # only the next payload frame is hit
    bad = parse_frame(frames[1])
    good = parse_frame(frame)
    assert bad.command == good.command
    assert bad.raw[: good.payload_start] == frame[: good.payload_start]  # framing/metadata kept
    diff = [i for i in range(len(frame)) if frames[1][i] != frame[i]]
    assert len(diff) == 1 and diff[0] >= (good.payload_start or 0)
    assert verify_checksum(bad) is False
    assert proxy.pending_faults() == 0


def test_corrupt_respects_command_type_filter(proxy: FaultProxy) -> None:
    frame = send_frame(4, b"payload-bytes")
    proxy.corrupt_next_payload(TO_BROKER, "MESSAGE")
    with connect(proxy) as s:
        s.sendall(frame)
        assert recv_exactly(s, len(frame)) == frame
    assert proxy.pending_faults(TO_BROKER) == 1
    proxy.clear_faults()
    assert proxy.pending_faults() == 0


def test_corrupt_without_checksum_section(proxy: FaultProxy) -> None:
    frame = send_frame(5, b"zz" * 50, checksum=False)
    assert parse_frame(frame).checksum is None
    proxy.corrupt_next_payload(TO_CLIENT)
    with connect(proxy) as s:
        s.sendall(frame)
        got = recv_exactly(s, len(frame))
    assert got != frame
    assert parse_frame(got).payload_start == parse_frame(frame).payload_start


def test_record_writes_each_direction(proxy: FaultProxy, tmp_path: Path) -> None:
    proxy.record(tmp_path)
    with connect(proxy) as s:
        s.sendall(b"hello")
        recv_exactly(s, 5)
    deadline = time.monotonic() + 5
    while proxy.active_connections and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tmp_path / "conn-1-to_broker.bin").read_bytes() == b"hello"
    assert (tmp_path / "conn-1-to_client.bin").read_bytes() == b"hello"


def test_invalid_direction_is_rejected(proxy: FaultProxy) -> None:
    with pytest.raises(ValueError):
        proxy.truncate_next_frame("sideways")


def test_close_is_idempotent_and_stops_listening(echo: EchoServer) -> None:
    p = FaultProxy("127.0.0.1", echo.port)
    port = p.port
    p.close()
    p.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


# -- the official client through the proxy ----------------------------------------------------
def test_official_client_reconnects_after_cut(
    lite_broker: PulsarLite,
    fault_proxy: MakeProxy,
    official_pulsar: ModuleType,
    unique_topic: str,
) -> None:
    pulsar = official_pulsar
    proxy = fault_proxy(lite_broker)
    client = pulsar.Client(proxy.url, operation_timeout_seconds=10)
    try:
        producer = client.create_producer(unique_topic, batching_enabled=False)
        producer.send(b"before")
        assert proxy.lookups_rewritten >= 1  # the client talks to the broker via the proxy only
        before = proxy.connection_count
        assert proxy.cut_all() >= 1
        producer.send(b"after")  # the client reconnects through the proxy and resends
        assert proxy.connection_count > before
        # Read back with a reader created after the cut. (A consumer subscribed before the cut
        # would have to re-subscribe, and pulsar-lite sometimes keeps the cut exclusive consumer
        # and refuses that; this test is about the proxy and the producer, not that.)
        reader = client.create_reader(unique_topic, pulsar.MessageId.earliest)
        got = [reader.read_next(timeout_millis=10000).data() for _ in range(2)]
        assert got == [b"before", b"after"]
    finally:
        client.close()


def test_official_client_send_times_out_while_stalled(
    lite_broker: PulsarLite,
    fault_proxy: MakeProxy,
    official_pulsar: ModuleType,
    unique_topic: str,
) -> None:
    pulsar = official_pulsar
    proxy = fault_proxy(lite_broker)
    client = pulsar.Client(proxy.url, operation_timeout_seconds=5)
    try:
        producer = client.create_producer(
            unique_topic, batching_enabled=False, send_timeout_millis=1000
        )
        producer.send(b"ok")
        proxy.stall(True)
        t0 = time.monotonic()
        with pytest.raises(pulsar.Timeout):
            producer.send(b"stuck")
        assert time.monotonic() - t0 < 5
    finally:
        proxy.stall(False)
        client.close()
