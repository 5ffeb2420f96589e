"""Lookup redirects that never end, and an owner broker that cannot be reached.

No real broker can be made to redirect forever, so a scripted loopback peer speaks just enough
of the protocol (CONNECTED, LOOKUP_RESPONSE) to do it; the unreachable owner is a real closed
loopback port.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import streamwire
from streamwire import exceptions as exc

from tests.peers.protocol import (
    COMMAND_TYPES,
    _len_field,
    decode_uint_fields,
    encode_command,
    encode_uint_fields,
    parse_frame,
    split_frames,
)

REDIRECT, CONNECT = 0, 1


class LookupPeer:
    """Answers CONNECT, partition metadata (not partitioned), and every LOOKUP with
    ``response`` towards ``target_url``; PRODUCER requests with the broker errors of
    ``producer_errors`` (codes of the protocol's ServerError), one per request, then with
    success; CLOSE_PRODUCER with success."""

    def __init__(
        self,
        response: int,
        target_url: str | None = None,
        producer_errors: tuple[int, ...] = (),
    ) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"pulsar://127.0.0.1:{self.port}"
        self.target_url = target_url or self.url
        self.response = response
        self.lookups = 0
        self.producer_errors = list(producer_errors)
        self.producer_requests = 0
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while not self._stop:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                frames, buf = split_frames(buf + data)
                for raw in frames:
                    frame = parse_frame(raw)
                    if frame.command_type == COMMAND_TYPES["CONNECT"]:
                        body = _len_field(1, b"scripted-peer") + encode_uint_fields((2, 21))
                        conn.sendall(encode_command("CONNECTED", 3, body))
                    elif frame.command_type == COMMAND_TYPES["PARTITIONED_METADATA"]:
                        fields = decode_uint_fields(frame.command)
                        meta = decode_uint_fields(fields[21])  # type: ignore[arg-type]
                        body = encode_uint_fields((1, 0), (2, int(meta[2])), (3, 0))  # type: ignore[arg-type]
                        conn.sendall(encode_command("PARTITIONED_METADATA_RESPONSE", 22, body))
                    elif frame.command_type == COMMAND_TYPES["LOOKUP"]:
                        self.lookups += 1
                        fields = decode_uint_fields(frame.command)
                        lookup = decode_uint_fields(fields[23])  # type: ignore[arg-type]
                        body = _len_field(1, self.target_url.encode()) + encode_uint_fields(
                            (3, self.response),
                            (4, int(lookup[2])),
                            (5, 0),  # type: ignore[arg-type]
                        )
                        conn.sendall(encode_command("LOOKUP_RESPONSE", 24, body))
                    elif frame.command_type == COMMAND_TYPES["PRODUCER"]:
                        self.producer_requests += 1
                        fields = decode_uint_fields(frame.command)
                        rid = int(decode_uint_fields(fields[5])[3])  # type: ignore[arg-type]
                        if self.producer_errors:
                            code = self.producer_errors.pop(0)
                            body = encode_uint_fields((1, rid), (2, code)) + _len_field(
                                3, b"scripted failure"
                            )
                            conn.sendall(encode_command("ERROR", 14, body))
                        else:
                            body = encode_uint_fields((1, rid)) + _len_field(2, b"scripted")
                            conn.sendall(encode_command("PRODUCER_SUCCESS", 17, body))
                    elif frame.command_type == COMMAND_TYPES["CLOSE_PRODUCER"]:
                        fields = decode_uint_fields(frame.command)
                        rid = int(decode_uint_fields(fields[15])[2])  # type: ignore[arg-type]
                        conn.sendall(encode_command("SUCCESS", 13, encode_uint_fields((1, rid))))

    def close(self) -> None:
        self._stop = True
        self.sock.close()


@pytest.fixture
def redirect_loop() -> Iterator[LookupPeer]:
    peer = LookupPeer(REDIRECT)
    try:
        yield peer
    finally:
        peer.close()


def test_redirect_loop_ends_in_a_clear_error(redirect_loop: LookupPeer) -> None:
    with streamwire.Client(redirect_loop.url, operation_timeout=5) as client:
        t0 = time.monotonic()
        with pytest.raises(exc.StreamwireError, match="redirected more than 20 times"):
            client.lookup().broker_url("loops")
        assert time.monotonic() - t0 < 5
    assert redirect_loop.lookups == 21  # the first answer plus the 20 redirects followed


def test_unreachable_owner_is_a_connect_error() -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    dead = f"pulsar://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    peer = LookupPeer(CONNECT, dead)
    try:
        with streamwire.Client(peer.url, connection_timeout=1.0, operation_timeout=3.0) as client:
            assert client.lookup().broker_url("owned") == dead  # lookup itself succeeds
            t0 = time.monotonic()
            # Retried (a failover may be under way) until the operation timeout, at most a
            # second apart; then the last failure, naming the owner, is raised.
            with pytest.raises(exc.ConnectError, match=dead.split("//")[1]):
                client.create_producer("owned")
            assert 1.5 < time.monotonic() - t0 < 4
    finally:
        peer.close()


UNKNOWN_ERROR, METADATA_ERROR, PRODUCER_BUSY = 0, 1, 16


@pytest.mark.parametrize("code", [UNKNOWN_ERROR, METADATA_ERROR])
def test_producer_creation_retries_a_brokers_transient_error(code: int) -> None:
    """A broker that lost its metadata session answers PRODUCER with UnknownError (seen on the
    suite's cluster under load: ZooKeeper ConnectionLoss) or MetadataError; the Java client
    retries those within the operation timeout, and so does ours."""
    peer = LookupPeer(CONNECT, producer_errors=(code, code))
    try:
        with streamwire.Client(peer.url, operation_timeout=10.0) as client:
            producer = client.create_producer("flaky")
            assert peer.producer_requests == 3
            producer.close()
    finally:
        peer.close()


def test_producer_creation_fails_at_once_on_a_busy_name() -> None:
    peer = LookupPeer(CONNECT, producer_errors=(PRODUCER_BUSY,))
    try:
        with streamwire.Client(peer.url, operation_timeout=10.0) as client:
            t0 = time.monotonic()
            with pytest.raises(exc.ProducerBusyError):
                client.create_producer("busy", producer_name="taken")
            assert time.monotonic() - t0 < 2
            assert peer.producer_requests == 1
    finally:
        peer.close()
